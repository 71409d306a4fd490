"""Issue 38: messages about labels and gold say where and what: label lists that differ name the first difference,
bad gold ids are counted exactly with their values and first positions, bytes labels are decoded (undecodable ones
refused naming the file), and a pretty-printed JSON object is called what it is. Each names the file and says what
to do."""
import json, warnings
import numpy as np, pandas as pd, pytest
from calibkit.inputs import InputError, PlanError, plan, read_events, read_scores
from calibkit.report import calibration_report
from calibkit.render import report_html
from clidata import calibkit_here

P = np.random.default_rng(0).dirichlet(np.ones(4), 300)


def test_label_lists_that_differ_after_the_third_name_the_first_difference(tmp_path):
    np.savez(tmp_path/'fit.npz', scores=P, gold=P.argmax(1), labels=np.array(['A', 'B', 'C', 'D']))
    np.savez(tmp_path/'ev.npz', scores=P, gold=P.argmax(1), labels=np.array(['A', 'B', 'C', 'X']))
    with pytest.raises(PlanError) as e: plan(tmp_path/'ev.npz', tmp_path/'fit.npz', conformal=True).scores()
    assert e.value.detail == (f"{tmp_path}/fit.npz has 4 columns, {tmp_path}/ev.npz 4; the first difference is label 3: "
                              f"'D' in {tmp_path}/fit.npz, 'X' in {tmp_path}/ev.npz")
    assert str(e.value).endswith('both need the same labels in the same column order')


def test_one_non_integer_gold_id_is_counted_alone_with_its_position(tmp_path):
    g = P.argmax(1).astype(float)
    g[17] = 1.5
    for name, gold in (('ids.npz', g), ('text.npz', g.astype(str))):   # gold saved as numbers or as their text
        np.savez(tmp_path/name, scores=P, gold=gold)
        with pytest.raises(InputError) as e: read_scores(tmp_path/name)
        assert str(e.value) == (f'{tmp_path}/{name}: gold: 1 of 300 values are not whole numbers: 1.5 (1, first at '
                                'gold[17]); label ids are integers in [0, 4)')
    g = P.argmax(1)
    g[[4, 9, 30]] = [7, -1, 7]
    np.savez(tmp_path/'range.npz', scores=P, gold=g)
    with pytest.raises(InputError) as e: read_scores(tmp_path/'range.npz')
    assert str(e.value) == (f'{tmp_path}/range.npz: gold: 3 of 300 ids are outside [0, 4): 7 (2, first at gold[4]), '
                            '-1 (1, first at gold[9])')
    np.savez(tmp_path/'names.npz', scores=P, gold=np.array(['N'] * 300))
    with pytest.raises(InputError, match="names.npz: gold holds tag names \\(e.g. 'N'\\) but the file has no labels "
                                         'array naming the 4 score columns: save labels'):
        read_scores(tmp_path/'names.npz')


def test_bytes_labels_are_decoded_everywhere_a_report_shows_them(tmp_path, capsys):
    tags = ['NOUN', 'VERB', 'ADJ', 'DET']
    gold = np.array(tags)[P.argmax(1)]
    np.savez(tmp_path/'b.npz', scores=P, gold=gold.astype('S'), labels=np.array(tags, dtype='S'))
    ev = read_scores(tmp_path/'b.npz')
    assert sorted(ev.label.astype(str).unique()) == sorted(tags) and set(ev.attrs['gold_counts']) == set(tags)
    assert ev.correct.sum() == 300                                      # bytes gold matched the decoded labels
    r = calibration_report(ev, grouper='per_class', n_samples=20)
    assert "b'" not in r.to_json() and "b'" not in r.groups.to_csv() and "b'" not in report_html(r)
    assert 'NOUN' in r.groups.to_csv()
    np.savez(tmp_path/'bad.npz', scores=P, gold=gold, labels=np.array([b'NOUN', b'VERB', b'\xffADJ', b'DET']))
    with pytest.raises(InputError) as e: read_scores(tmp_path/'bad.npz')
    assert str(e.value) == (f"{tmp_path}/bad.npz: array 'labels': value 2 (b'\\xffADJ') is bytes that are not UTF-8 "
                            'text; save the names as text (str), or as UTF-8 bytes')


def test_a_pretty_printed_json_object_is_called_what_it_is(tmp_path, capsys):
    p = tmp_path/'response.json'
    p.write_text(json.dumps({'id': 'r1', 'choices': [{'logprobs': None}], 'model': 'm'}, indent=2))
    with pytest.raises(InputError) as e: read_events(p)
    assert str(e.value) == (f"{p}: one pretty-printed JSON object over 9 lines (keys ['id', 'choices', 'model']), not "
                            'JSON Lines: write one object per line (json.dumps without indent), events like '
                            '{"conf": 0.9, "correct": 1}, or a model\'s responses one per line for its extractor')
    assert 'column-oriented' not in str(e.value)
    cols = tmp_path/'cols.json'                                       # a true object of lists is still named so
    cols.write_text(json.dumps({'conf': [0.9, 0.2], 'correct': [1, 0]}, indent=1))
    with pytest.raises(InputError, match='column-oriented JSON'): read_events(cols)
    r = calibkit_here(capsys, 'report', str(p), '--json')
    assert r.returncode == 65 and 'response.json: one pretty-printed JSON object over 9 lines' in r.stderr


def one_error(r, code: int = 65) -> str:
    assert r.returncode == code and r.stderr.count('\n') == 1 and r.stderr.startswith('calibkit: error: '), r.stderr
    return r.stderr[len('calibkit: error: '):-1]


def test_an_empty_jsonl_for_an_extractor_names_the_file(tmp_path, capsys):
    (tmp_path/'empty.jsonl').write_text('\n\n')
    assert one_error(calibkit_here(capsys, 'report', tmp_path/'empty.jsonl', '--extractor', 'openai_logprobs',
                                   '--json')) == (f"{tmp_path}/empty.jsonl: holds no records (no line with a JSON "
                                                  "object): nothing for the extractor 'openai_logprobs' to read")


def test_a_lone_surrogate_is_refused_with_its_line_before_anything_is_computed(tmp_path, capsys):
    "A JSON escape of half a UTF-16 pair is no text: it failed only when the report was written, naming no file."
    resp = lambda tok: json.dumps(dict(choices=[dict(message=dict(content='ab'), logprobs=dict(content=[
        dict(token=tok, logprob=-0.1), dict(token='b', logprob=-0.5)]))], gold='ab'))
    (tmp_path/'gen.jsonl').write_text(resp('a') + '\n' + resp('\ud800') + '\n')     # json.dumps escapes it: \ud800
    (tmp_path/'pair.jsonl').write_text(resp('\U0001F600') + '\n')                   # a whole pair: an emoji, fine
    out = tmp_path/'out'
    msg = one_error(calibkit_here(capsys, 'report', tmp_path/'gen.jsonl', '--extractor', 'openai_logprobs',
                                  '--extractor-param', 'level=token', '--out', out))
    assert msg == (f"{tmp_path}/gen.jsonl: line 2: a string holds a lone UTF-16 surrogate ('\\ud800'), which is not "
                   "text: fix or drop the string that holds it") and not out.exists()
    (tmp_path/'ev.jsonl').write_text('{"conf": 0.9, "correct": 1, "label": "\\udc00x"}\n')
    assert 'ev.jsonl: line 1: a string holds a lone UTF-16 surrogate' in one_error(
        calibkit_here(capsys, 'report', tmp_path/'ev.jsonl', '--json'))
    r = calibkit_here(capsys, 'report', tmp_path/'pair.jsonl', '--extractor', 'openai_logprobs', '--json',
                      '--n-samples', '20')
    assert r.returncode == 0, r.stderr


def test_float16_softmax_rows_are_probabilities_with_and_without_conformal(tmp_path, capsys):
    """Rounded to float16, softmax rows sum to 1 only within float16's precision (here off by up to ~3e-4): the
    row-sum tolerance follows the dtype (`sum_tolerance`), so they are read alike with and without --conformal; the
    same rows as float64 are off by far more than float64 rounding: warned of, and refused for conformal sets."""
    rng = np.random.default_rng(0)
    for name in ('fit', 'test'):
        p = rng.dirichlet(np.ones(17) * .3, 2000).astype(np.float16)
        g = np.array([rng.choice(17, p=q / q.sum()) for q in p.astype(float)])
        np.savez(tmp_path/f'{name}16.npz', scores=p, gold=g)
        np.savez(tmp_path/f'{name}64.npz', scores=p.astype(np.float64), gold=g)
    assert np.abs(p.astype(float).sum(1) - 1).max() > 1e-4
    for conformal in ([], ['--fit', tmp_path/'fit16.npz', '--conformal', '0.1']):
        r = calibkit_here(capsys, 'report', tmp_path/'test16.npz', '--json', '--n-samples', '20', *conformal)
        assert r.returncode == 0 and r.stderr == '', r.stderr
    r = calibkit_here(capsys, 'report', tmp_path/'test64.npz', '--json', '--n-samples', '20')
    assert r.returncode == 0 and 'score rows do not sum to 1' in r.stderr
    r = calibkit_here(capsys, 'report', tmp_path/'test64.npz', '--json', '--fit', tmp_path/'fit64.npz', '--conformal', '0.1')
    last = r.stderr.splitlines()[-1]
    assert r.returncode == 65 and last.startswith('calibkit: error: ') and 'rows do not sum to 1' in last, r.stderr
