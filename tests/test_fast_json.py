"""Issue 37: the JSON Lines readers parse with orjson (`fast_records`) and fall back to `json` only where orjson cannot
tell: the objects are those of `json` with the duplicate-key hook on random files (unicode, escapes, nested objects,
numbers), a key written twice is still refused with file:line on the command line's route and the library's, and the
extractors' events are the same with the fast routes as without."""
import json, random, re
import pytest
import calibkit as ck
from calibkit.extractors import llm, seq2seq
import calibkit.jsonl
from calibkit.jsonl import _keys_unique, _object, fast_records, jsonl_lines
from calibkit.extractors.llm import openai_sequence_events, openai_token_events
from calibkit.inputs import InputError, jsonl_batches, load_input

CHARS = 'abé字😀 :"\\/\n\t\u2028\x01{}[],'
ESCAPED_KEY = re.compile(r'"(?:[^"\\]|\\.)*\\.(?:[^"\\]|\\.)*"\s*:')   # a key written with an escape


def text(rng) -> str: return ''.join(rng.choice(CHARS) for _ in range(rng.randrange(6)))


def value(rng, depth: int = 0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0: return rng.choice([None, True, False])
    if kind == 1: return rng.randrange(-10**18, 10**18)                  # within orjson's integers
    if kind == 2: return rng.choice([10**19 + 7, -10**25])                # beyond: the exact route keeps them
    if kind == 3: return rng.uniform(-1, 1) * 10.0 ** rng.randrange(-320, 300)
    if kind in (4, 5): return text(rng)
    if kind == 6: return [value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {text(rng): value(rng, depth + 1) for _ in range(rng.randrange(4))}


def lines_of(rng, n: int) -> list[str]:
    out = []
    for _ in range(n):
        rec = {text(rng): value(rng) for _ in range(rng.randrange(5))}
        out.append(json.dumps(rec, ensure_ascii=rng.random() < .5, separators=rng.choice([(',', ':'), (', ', ': ')]))
                   if rng.random() < .9 else rng.choice(['', '  ']))
    return out


def exact(first: int, lines: list[str]) -> list:
    return [(i, json.loads(line, object_pairs_hook=_object)) for i, line in enumerate(lines, first) if line.strip()]


@pytest.mark.parametrize('seed', range(6))
def test_fast_records_are_the_exact_routes_objects(seed):
    rng = random.Random(seed)
    lines = lines_of(rng, 300)
    want, got = exact(5, lines), fast_records(5, lines)
    orjson_cannot = any(re.search(r'\d{19}', line) or ESCAPED_KEY.search(line) for line in lines)
    assert (got is None) == orjson_cannot
    if got is not None: assert repr(got) == repr(want)                    # repr: -0.0 and int/float told apart
    few = [line for line in lines if not (re.search(r'\d{19}', line) or ESCAPED_KEY.search(line))]
    fast = fast_records(1, few)
    assert fast is not None and repr(fast) == repr(exact(1, few))


def test_a_key_written_twice_anywhere_goes_the_exact_route():
    rng, checked = random.Random(9), 0
    for _ in range(400):
        rec = {''.join(rng.choice('abé字😀 :/{}[],') for _ in range(rng.randrange(6))) + 'k': value(rng)
               for _ in range(3)}                                          # keys written without escapes
        line = json.dumps({'a': [rec, 1]}, ensure_ascii=False)
        key = json.dumps(next(iter(rec)), ensure_ascii=False)
        twice = line.replace(key + ': ', f'{key}: 0, {key}: ', 1)         # the first key written twice, nested
        assert fast_records(1, [twice]) is None
        with pytest.raises(ValueError, match='appears twice'): json.loads(twice, object_pairs_hook=_object)
        if not (re.search(r'\d{19}', line) or ESCAPED_KEY.search(line)):   # else the exact route anyway
            assert fast_records(1, [line]) is not None
            checked += 1
    assert checked > 100


def test_batches_equal_with_and_without_the_fast_route(tmp_path, monkeypatch):
    p = tmp_path/'r.jsonl'
    p.write_text('\n'.join(lines_of(random.Random(3), 400)), encoding='utf-8')   # some batches go the exact route
    fast = [b for b in jsonl_batches(p, batch_bytes=2000)]
    monkeypatch.setattr('calibkit.inputs.fast_records', lambda first, lines: None)
    slow = [b for b in jsonl_batches(p, batch_bytes=2000)]
    assert len(fast) > 3 and repr(fast) == repr(slow)


def responses(rng, n: int) -> list[dict]:
    vocab = [' the', ' é', '字', ' 😀', '"', '\\', ':', ' a\nb', 'True']
    out = []
    for i in range(n):
        m = rng.randrange(0, 6)
        content = [{'token': rng.choice(vocab), 'logprob': -rng.expovariate(1.0) if rng.random() < .9 else 0,
                    'bytes': [1, 2], 'top_logprobs': [{'token': rng.choice(vocab), 'logprob': -rng.expovariate(.5)}
                                                      for _ in range(rng.randrange(3))]} for _ in range(m)]
        text_ = ''.join(t['token'] for t in content)
        out.append({'id': i, 'choices': [{'index': 0, 'message': {'content': text_},
                                          'logprobs': {'content': content, 'refusal': None}}],
                    'gold': text_.strip() if rng.random() < .5 else 'x',
                    'gold_tokens': [t['token'] for t in content][:rng.randrange(7)]})
    return out


@pytest.mark.filterwarnings('ignore:.*give no')
@pytest.mark.parametrize('seed', range(3))
def test_events_equal_on_every_route(tmp_path, monkeypatch, seed):
    recs = responses(random.Random(seed), 300)
    p = tmp_path/'gen.jsonl'
    p.write_text(''.join(json.dumps(r, ensure_ascii=bool(seed % 2)) + '\n' for r in recs), encoding='utf-8')
    x = ck.extractor('openai_logprobs', how='gmean')
    got = [openai_sequence_events(p), openai_token_events(p), load_input(p, extractor=x)]
    monkeypatch.setattr(seq2seq, 'fast_records', lambda first, lines: None)        # the exact routes only
    monkeypatch.setattr('calibkit.inputs.fast_records', lambda first, lines: None)
    monkeypatch.setattr(llm, '_chat_fast', lambda content: None)
    monkeypatch.setattr(llm, '_typed', lambda first, lines: None)
    want = [openai_sequence_events(recs), openai_token_events(recs), x.extract(recs)]
    for g, w in zip(got, want):
        assert len(g) > 100
        assert g.equals(w)                                # records[i] is line i + 1 of the file


def test_a_key_written_twice_is_refused_with_its_line_on_both_routes(tmp_path):
    recs = responses(random.Random(1), 3000)
    lines = [json.dumps(r) for r in recs]
    lines[2500] = lines[2500].replace('"logprob": ', '"logprob": -1.0, "logprob": ', 1)
    assert '"logprob": -1.0, "logprob"' in lines[2500]
    p = tmp_path/'dup.jsonl'
    p.write_text('\n'.join(lines) + '\n')
    with pytest.raises(InputError, match=r'dup\.jsonl: line 2501: key .logprob. appears twice in one object'):
        load_input(p, extractor=ck.extractor('openai_logprobs'))
    with pytest.raises(ValueError, match=r'dup\.jsonl:2501: key .logprob. appears twice in one object'):
        openai_sequence_events(p)
    with pytest.raises(ValueError, match=r'dup\.jsonl:2501: key .logprob. appears twice'):
        openai_token_events(str(p))


def test_the_collector_is_enabled_after_a_read_even_one_that_failed(tmp_path):
    import gc
    p = tmp_path/'bad.jsonl'
    p.write_text(json.dumps(responses(random.Random(0), 1)[0]) + '\n{"choices": 3}\n')
    with pytest.raises(ValueError, match=r'bad\.jsonl:2: expected a response') as caught:
        openai_sequence_events(p)
    assert caught.value is not None and gc.isenabled()            # the traceback (and the reader's frames) kept
    with pytest.raises(InputError, match=r'bad\.jsonl:2: expected a response'):
        load_input(p, extractor=ck.extractor('openai_logprobs'))
    assert gc.isenabled()


def twice(rng) -> tuple[str, bool]:
    "A random JSON line and whether one of its objects has a key written twice (written with or without escapes)."
    keys = ['a', 'b', 'ab', 'é', '"', 'k' * 20 + 'x', 'k' * 20 + 'y', 'k' * 30]
    def obj(depth):
        pair = lambda k: (json.dumps(k, ensure_ascii=rng.random() < .5) + rng.choice([':', ': ', ' : '])
                          + (obj(depth + 1) if depth < 3 and rng.random() < .4
                             else json.dumps(rng.choice([1, 'x:"}', [{}]]))))
        return '{' + ', '.join(pair(rng.choice(keys)) for _ in range(rng.randrange(4))) + '}'
    line = obj(0)
    try: json.loads(line, object_pairs_hook=_object); return line, False
    except ValueError: return line, True


@pytest.mark.parametrize('seed', range(3))
def test_the_key_scan_never_misses_a_key_written_twice(seed, monkeypatch):
    """Sound: whenever the scan says "no key twice", `json` with the duplicate-key hook agrees; complete for keys
    written without escapes (up to 24 bytes its windows cover every byte); the same answer whatever the pieces."""
    rng = random.Random(seed)
    for _ in range(400):
        lines = [twice(rng) for _ in range(rng.randrange(1, 4))]
        data = '\n'.join(line for line, _ in lines).encode()
        dup = any(d for _, d in lines)
        got = _keys_unique(data)
        assert not (got and dup)
        if not any(ESCAPED_KEY.search(line) for line, _ in lines): assert got == (not dup), data
        monkeypatch.setattr(calibkit.jsonl, 'KEY_PIECE', 16)                 # a piece per line, or less
        assert _keys_unique(data) == got
        monkeypatch.undo()


@pytest.mark.filterwarnings('ignore:.*give no')
@pytest.mark.parametrize('seed', range(2))
def test_the_typed_route_reads_what_the_generic_route_reads(tmp_path, monkeypatch, seed):
    recs = responses(random.Random(seed), 400)
    recs[5]['choices'].append({'index': 1, 'logprobs': None})                            # no logprobs: counted
    recs[7]['correct'] = [1, 0][:len(recs[7]['choices'])]
    p = tmp_path/'gen.jsonl'
    p.write_text(''.join(json.dumps(r, ensure_ascii=bool(seed)) + '\n' for r in recs), encoding='utf-8')
    calls = []
    typed = llm._typed
    monkeypatch.setattr(llm, '_typed', lambda first, lines: calls.append(r := typed(first, lines)) or r)
    got = llm.read_openai_logprobs(p)
    assert calls and all(c is not None for c in calls)                   # every batch went the typed route
    monkeypatch.setattr(llm, '_typed', lambda first, lines: None)
    want = llm.read_openai_logprobs(p)
    for g, w in zip(got, want): assert g.equals(w) and g.attrs == w.attrs


@pytest.mark.parametrize('bad, message', [
    ('{"choices": []}', 'expected a response with a non-empty list choices'),
    ('{"choices": [{"logprobs": {"content": [{"token": "a", "logprob": null}]}}]}', 'logprob of token 0 is None'),
    ('{"choices": [{"logprobs": {"content": [{"token": 1, "logprob": -1}]}}]}', 'token 0 is 1, not a string'),
    ('{"choices": [{"logprobs": {"content": [{"token": "a", "logprob": -1, "top_logprobs": [{"token": "b"}]}]}}]}',
     'top_logprobs must be a list of objects with token and logprob'),
    ('{"choices": [{"logprobs": {"content": [{"token": "a", "logprob": -1, "bytes": [97], "bytes": [97]}]}}]}',
     "key 'bytes' appears twice"),
    ('{"choices": [{"logprobs": {"content": [{"token": "\\ud800", "logprob": -1}]}}]}', 'surrogate'),
    ('{"choices": [{"logprobs": {"content": []}}], "gold": 3}', 'gold must be a string'),   # the typed route's own check
])
def test_what_the_typed_route_refuses_the_generic_route_names(tmp_path, bad, message):
    p = tmp_path/'bad.jsonl'
    p.write_text(json.dumps(responses(random.Random(0), 1)[0]) + '\n' + bad + '\n')
    assert (llm._typed(1, p.read_text().split('\n')[:2]) is None) == ('gold' not in message)
    with pytest.raises(ValueError, match=re.escape(message)) as caught: llm.read_openai_logprobs(p)
    assert str(caught.value).startswith(f'{p}:2')
