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


# Property tests (hypothesis): the fast routes against the exact ones on generated files.
from hypothesis import HealthCheck, assume, given, settings, strategies as st
import tempfile
from pathlib import Path

DIGITS19 = re.compile(r'(?<![0-9.])[0-9]{19}')                   # what `_digits19` sends the exact route
SPACING = [(',', ':'), (', ', ': '), (' ,\t', ' :  ')]
keys_st = st.text(st.characters(exclude_categories=['Cs']), max_size=5)
scalars = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=6)
           | st.floats(allow_nan=False, allow_infinity=False))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys_st, inner, max_size=4),
                      max_leaves=16)
records = st.dictionaries(keys_st, values, max_size=5)


@st.composite
def jsonl(draw, recs=records) -> list[str]:
    "Lines of a JSON Lines batch: records written with or without ASCII escapes and spaces, and blank lines."
    write = lambda: json.dumps(draw(recs), ensure_ascii=draw(st.booleans()), separators=draw(st.sampled_from(SPACING)))
    return [write() if draw(st.integers(0, 9)) else draw(st.sampled_from(['', ' ', '\t']))
            for _ in range(draw(st.integers(1, 8)))]


@settings(max_examples=300, deadline=None)
@given(jsonl(), st.integers(1, 10**6))
def test_fast_records_equal_the_exact_route_on_generated_batches(lines, first):
    got, want = fast_records(first, lines), exact(first, lines)
    if got is not None: assert repr(got) == repr(want)                  # repr: -0.0, 1 and 1.0 told apart
    unsure = any(DIGITS19.search(line) or ESCAPED_KEY.search(line) for line in lines)
    assert got is not None or unsure                                     # only these send a valid batch back


def spell(key: str, how: int) -> str:
    "`key` as a JSON string: as json writes it (0), with ASCII escapes (1), or every character as a \\u escape (2)."
    if how < 2: return json.dumps(key, ensure_ascii=bool(how))
    return '"' + ''.join(f'\\u{u:04x}' for u in memoryview(key.encode('utf-16-le')).cast('H')) + '"'


def write_twice(value, target: int, at: int, how: int, counter: list) -> str:
    """`value` as JSON, the `target`-th of its objects (depth first) holding one of its keys a second time (the key at
    position `at` mod its size, spelled `how`, inserted at that position)."""
    if isinstance(value, list): return '[' + ', '.join(write_twice(v, target, at, how, counter) for v in value) + ']'
    if not isinstance(value, dict): return json.dumps(value)
    mine, counter[0] = counter[0], counter[0] + 1
    pairs = [f'{json.dumps(k)}: {write_twice(v, target, at, how, counter)}' for k, v in value.items()]
    if mine == target and value:
        k = list(value)[at % len(value)]
        pairs.insert(at % (len(pairs) + 1), f'{spell(k, how)}: 0')
    return '{' + ', '.join(pairs) + '}'


def n_objects(value) -> int:
    if isinstance(value, list): return sum(map(n_objects, value))
    return 1 + sum(map(n_objects, value.values())) if isinstance(value, dict) else 0


@settings(max_examples=300, deadline=None)
@given(records, st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 2))
def test_a_key_written_twice_anywhere_is_never_read_by_the_fast_route(rec, target, at, how):
    line = write_twice(rec, target % n_objects(rec), at, how, [0])      # (`records` are objects: one at least)
    assume(line != json.dumps(rec))                                      # the chosen object had a key to repeat
    with pytest.raises(ValueError, match='appears twice in one object') as caught:
        json.loads(line, object_pairs_hook=_object)
    assert fast_records(1, [line]) is None
    if how == 0: assert not _keys_unique(line.encode())                  # found by the scan itself, not by an escape
    assert 'appears twice' in str(caught.value)


def chat(draw_text=st.text(max_size=4)):
    "A chat completion with logprobs and top_logprobs, gold fields, and fields the reader skips."
    alt = st.fixed_dictionaries({'token': draw_text, 'logprob': st.floats(-30, 0) | st.integers(-30, 0)},
                                optional={'bytes': st.lists(st.integers(0, 255), max_size=3)})
    tok = st.fixed_dictionaries({'token': draw_text, 'logprob': st.floats(-30, 0)},
                                optional={'bytes': st.lists(st.integers(0, 255), max_size=3),
                                          'top_logprobs': st.lists(alt, max_size=3)})
    logprobs = st.fixed_dictionaries({'content': st.lists(tok, max_size=5)}, optional={'refusal': st.none()})
    choice = st.fixed_dictionaries({'index': st.integers(0, 3), 'logprobs': st.none() | logprobs},
                                   optional={'message': st.fixed_dictionaries({'content': st.text(max_size=5)}),
                                             'finish_reason': st.just('stop')})
    return st.fixed_dictionaries({'choices': st.lists(choice, min_size=1, max_size=2)},
                                 optional={'id': st.text(max_size=5), 'usage': values, 'gold': st.text(max_size=5),
                                           'gold_tokens': st.lists(st.text(max_size=3), max_size=3)})


def read_both(lines: list[str], monkeypatch):
    "`read_openai_logprobs` of a file of `lines` by the typed route, then by the generic route: (result or error) each."
    out = []
    with tempfile.TemporaryDirectory() as d:
        p = Path(d)/'chat.jsonl'
        p.write_text('\n'.join(lines) + '\n', encoding='utf-8')
        for typed in (llm._typed, lambda first, lines: None):
            with monkeypatch.context() as m:
                m.setattr(llm, '_typed', typed)
                try: out.append(llm.read_openai_logprobs(p))
                except ValueError as e: out.append(str(e).replace(str(p), 'FILE'))
    return out


@pytest.mark.filterwarnings('ignore:.*give no')
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recs=st.lists(chat(), min_size=1, max_size=6), ascii_=st.booleans())
def test_the_typed_route_reads_what_the_generic_route_reads_on_generated_files(recs, ascii_, monkeypatch):
    typed, generic = read_both([json.dumps(r, ensure_ascii=ascii_) for r in recs], monkeypatch)
    if isinstance(generic, str): assert typed == generic                # the same error, at the same line
    else: assert all(g.equals(w) and g.attrs == w.attrs for g, w in zip(typed, generic))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recs=st.lists(chat(), min_size=2, max_size=5), data=st.data())
def test_a_key_written_twice_in_a_chat_completion_is_refused_alike_by_both_routes(recs, data, monkeypatch):
    """Anywhere: in a response, a choice, a token, a `top_logprobs` entry; as written or spelled with escapes."""
    i = data.draw(st.integers(0, len(recs) - 1))
    how = data.draw(st.integers(0, 2))
    line = write_twice(recs[i], data.draw(st.integers(0, n_objects(recs[i]) - 1)), data.draw(st.integers(0, 99)), how,
                       [0])
    assume(line != json.dumps(recs[i]))
    lines = [json.dumps(r) for r in recs]
    lines[i] = line
    typed, generic = read_both(lines, monkeypatch)
    assert isinstance(typed, str) and typed == generic
    assert re.fullmatch(rf"FILE:{i + 1}: key .* appears twice in one object", typed), typed


@pytest.mark.parametrize('key, spelled', [('a', '"\\u0061"'), ('logprob', '"\\u006cogprob"'),
                                          ('token', '"t\\u006fken"'), ('é', '"\\u00e9"'), ('😀', '"\\ud83d\\ude00"')])
def test_a_key_spelled_with_escapes_is_the_same_key(tmp_path, key, spelled):
    """"\\u0061" is "a": the scan never proves an escaped key unique, and the exact route names the key as read."""
    line = ('{"choices": [{"logprobs": {"content": [{"token": "x", "logprob": -1, '
            f'"top_logprobs": [{{"{key}": 1, {spelled}: 2, "logprob": -2}}]}}]}}}}]}}')
    assert not _keys_unique(line.encode()) and fast_records(1, [line]) is None and llm._typed(1, [line]) is None
    p = tmp_path/'esc.jsonl'
    p.write_text(json.dumps(responses(random.Random(0), 1)[0]) + '\n' + line + '\n', encoding='utf-8')
    want = f'{p}:2: key {key!r} appears twice in one object'
    for read in (llm.read_openai_logprobs, openai_token_events, lambda p: list(_top_ok(p))):
        with pytest.raises(ValueError, match=re.escape(want)): read(p)
    with pytest.raises(InputError, match=re.escape(f'esc.jsonl: line 2: key {key!r} appears twice in one object')):
        load_input(p, extractor=ck.extractor('openai_logprobs'))


def _top_ok(p):
    "Every batch of `p` by `fast_records` or else the library's exact route (`seq2seq._exact_records`)."
    for first, lines in jsonl_lines(p): yield from fast_records(first, lines) or seq2seq._exact_records(p, first, lines)


@pytest.mark.parametrize('line', [
    '{"n": 12345678901234567890}', '{"n": -100000000000000000000000, "x": 0.5}',   # integers beyond 64 bits
    '{"a": 1, "\\u0062": 2}',                                                    # an escaped key (no key twice)
    '{"x": NaN, "y": -Infinity}',                                                # read by `json`, refused by orjson
    '{"s": "12345678901234567890 in a string"}'])
def test_valid_lines_orjson_cannot_tell_go_the_exact_route_with_the_same_records(tmp_path, line):
    lines = [json.dumps({'i': 1}), line, '', json.dumps({'i': 3})]
    assert fast_records(1, lines) is None
    p = tmp_path/'unsure.jsonl'
    p.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    assert repr(list(jsonl_batches(p))) == repr([exact(1, lines)])              # the command line's route
    assert repr(list(_top_ok(p))) == repr(exact(1, lines))                      # the library's


@pytest.mark.parametrize('line, message', [
    ('{"a": 1', 'invalid JSON'), ('[1, 2]', 'expected a JSON object, got list'), ('{"a": 1} {"b": 2}', 'invalid JSON'),
    ('{"s": "\\ud800"}', 'lone UTF-16 surrogate'), ('{"a": {"b": 1, "b": 2}}', "key 'b' appears twice")])
def test_lines_the_fast_route_refuses_are_named_by_the_exact_route(tmp_path, line, message):
    lines = [json.dumps({'i': 1}), '', line]
    assert fast_records(1, lines) is None
    p = tmp_path/'bad.jsonl'
    p.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    with pytest.raises(ValueError, match=re.escape(f'{p}:3: ') + '.*' + re.escape(message)): list(_top_ok(p))
    with pytest.raises(InputError, match=r'bad\.jsonl: line 3(, column \d+)?: .*' + re.escape(message)):
        list(jsonl_batches(p))


def test_many_keys_in_one_object_high_halves_alike_whole_hashes_apart():
    """150,000 distinct random keys of 8 letters in one object: some two of their hashes share the high 32 bits (about
    2.6 such pairs expected; this seed has one at least, checked when written), so the whole hashes decide; one key
    more, written twice, is found."""
    rng = random.Random(0)
    keys = list(dict.fromkeys(''.join(rng.choices('abcdefghijklmnopqrstuvwxyz', k=8)) for _ in range(150_000)))
    line = json.dumps(dict.fromkeys(keys, 0), separators=(',', ':'))
    assert _keys_unique(line.encode())
    assert not _keys_unique((line[:-1] + f',"{keys[77]}":1}}').encode())
    assert fast_records(1, [line]) == [(1, json.loads(line))]
