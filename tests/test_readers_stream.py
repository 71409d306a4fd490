"""Issue 37: the JSON Lines readers hold one batch of lines at a time — a bad line far into the file is not reached
before the first batch is handed on, the command line streams a response file to the extractor (never the list of all
its records), and the events are the same as from the records."""
import json, math, tracemalloc
import pytest
import calibkit as ck
from calibkit import inputs
from calibkit.jsonl import Records
from calibkit.inputs import InputError, jsonl_batches, load_input, read_events


def response(i: int, lp: float = -0.1) -> dict:
    content = [{'token': f' t{i}', 'logprob': lp, 'top_logprobs': [{'token': ' x', 'logprob': -3.0}]}]
    return {'choices': [{'index': 0, 'message': {'content': f' t{i}'}, 'logprobs': {'content': content}}],
            'gold': f't{i}' if i % 3 else 'other'}


def test_batches_are_read_lazily_and_name_true_lines(tmp_path):
    p = tmp_path/'r.jsonl'
    p.write_text('\n'.join(json.dumps(response(i)) for i in range(400)) + '\n\n{"bad": \n')
    stream = jsonl_batches(p, batch_bytes=2000)
    first = next(stream)                                       # the bad line (402) is not read yet
    assert 10 < len(first) < 30 and [n for n, _ in first] == list(range(1, len(first) + 1))
    assert first[0][1] == response(0)
    with pytest.raises(InputError, match=r'r\.jsonl: line 402, column 9: invalid JSON'):
        list(stream)
    lines = [n for batch in jsonl_batches(_good(tmp_path), batch_bytes=500) for n, _ in batch]
    assert lines == [1, 2, 4, 5, 6]                            # blank line 3 skipped, numbering kept across batches


def _good(tmp_path):
    p = tmp_path/'ok.jsonl'
    p.write_text('\n'.join([json.dumps(response(0)), json.dumps(response(1)), '', *map(json.dumps, map(response,
                                                                                                      range(2, 5)))]))
    return p


def test_events_files_read_in_batches_equal_one_read(tmp_path, monkeypatch):
    p = tmp_path/'e.jsonl'
    p.write_text(''.join(json.dumps({'conf': i / 1000, 'correct': i % 2, 'label': i % 7 if i > 500 else 'N'}) + '\n'
                         for i in range(1000)))
    whole = read_events(p)
    monkeypatch.setattr(inputs, '_lines', lambda path, batch_bytes=0: inputs.jsonl_lines(path, batch_bytes=3000))
    batched = read_events(p)
    assert batched.equals(whole) and len(batched) == 1000
    assert batched.label.iloc[-1] == '5' and batched.label.iloc[0] == 'N'      # numbers read as the text written


def test_the_command_line_streams_responses_to_the_extractor(tmp_path, monkeypatch):
    p = tmp_path/'gen.jsonl'
    recs = [response(i, lp=-0.1 * (1 + i % 4)) for i in range(60)]
    p.write_text(''.join(json.dumps(r) + '\n' for r in recs))
    want = ck.extractor('openai_logprobs', how='gmean').extract(recs)
    seen = []
    monkeypatch.setattr(inputs, 'raw_output', lambda *a: pytest.fail('the records were all read into a list'))
    real = ck.extractor('openai_logprobs', how='gmean')
    extract = real.extract
    monkeypatch.setattr(real, 'extract', lambda raw: seen.append(raw) or extract(raw))
    got = load_input(p, extractor=real)
    assert isinstance(seen[0], Records) and seen[0].name == str(p)
    assert got.conf.tolist() == want.conf.tolist() and got.correct.tolist() == want.correct.tolist()
    assert got.conf.tolist()[:2] == pytest.approx([math.exp(-0.1), math.exp(-0.2)], rel=1e-12)


def test_peak_memory_is_about_one_batch(tmp_path):
    """Reading 600 kB of responses in batches of 8 kB: the peak of Python allocations stays below the file's size (its
    records all at once take about ten times it)."""
    p = tmp_path/'big.jsonl'
    line = json.dumps(response(1)) + '\n'
    p.write_text(line * (600_000 // len(line)))
    tracemalloc.start()
    try:
        n = sum(len(b) for b in jsonl_batches(p, batch_bytes=1 << 13))
        _, peak = tracemalloc.get_traced_memory()
    finally: tracemalloc.stop()
    assert n == 600_000 // len(line)
    assert peak < p.stat().st_size, peak


@pytest.mark.parametrize('batch_bytes', [1, 1 << 22])
def test_a_value_split_over_lines_is_refused_even_when_the_count_adds_up(tmp_path, batch_bytes):
    """Lines 1 and 2 are halves of one object and line 3 holds two objects: joined into one array they parse as three
    objects for three lines, but no line is one JSON object on its own, so the file is refused at line 1. Brackets and
    quotes inside strings do not count."""
    bad = tmp_path/'bad.jsonl'
    bad.write_text('{"a": [{}\n{}]}\n{"c": 1}, {"d": 2}\n', encoding='utf-8')
    with pytest.raises(InputError, match=r'bad\.jsonl: line 1, column \d+: invalid JSON'):
        list(jsonl_batches(bad, batch_bytes=batch_bytes))
    good = tmp_path/'good.jsonl'
    good.write_text('{"a": "}{x\\"]", "b": [1, {"c": 2}]}\n\n  {"d": "é[{"}  \n', encoding='utf-8')
    got = [rec for batch in jsonl_batches(good, batch_bytes=batch_bytes) for rec in batch]
    assert got == [(1, {'a': '}{x"]', 'b': [1, {'c': 2}]}), (3, {'d': 'é[{'})]
