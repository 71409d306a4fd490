"""Readers of model outputs on disk (`calibkit.inputs`): labels kept exactly as written in every format,
one-line `InputError`s naming the file (and line) for every bad input, warnings that count what they saw.
"""
import json, warnings
import numpy as np, pandas as pd, pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from calibkit.inputs import InputError, read_counts, read_events, read_scores, read_text
from calibkit.groupers import TagFrequency


def write(path, text, encoding='utf-8'):
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def error(call) -> str:
    "The one-line message of the InputError `call` raises."
    with pytest.raises(InputError) as info: call()
    msg = str(info.value)
    assert '\n' not in msg, msg
    return msg


# ---------------------------------------------------------------- labels kept exactly as written

WORDS = ['NA', 'None', 'null', 'NaN', 'nan', '', '007', '7', '1', '01', '1.0', 'true', 'N/A', '#N/A', ' x ', 'café']

@pytest.mark.parametrize('suffix', ['.csv', '.tsv', '.jsonl', '.parquet'])
def test_words_pandas_would_change_stay_as_written(tmp_path, suffix):
    df = pd.DataFrame({'conf': np.linspace(0, 1, len(WORDS)), 'correct': np.arange(len(WORDS)) % 2,
                       'label': WORDS, 'item': WORDS[::-1]})
    p = tmp_path/f'e{suffix}'
    if suffix == '.parquet': df.to_parquet(p)
    elif suffix == '.jsonl': df.to_json(p, orient='records', lines=True, force_ascii=False, double_precision=15)
    else: df.to_csv(p, index=False, sep='\t' if suffix == '.tsv' else ',')
    ev = read_events(p)
    assert ev.label.tolist() == WORDS and ev.item.tolist() == WORDS[::-1]
    assert ev.label.nunique() == len(WORDS)                 # '1' != '01' != '1.0', '7' != '007', 'NA' != ''


def test_csv_labels_na_words_and_numbers(tmp_path):
    p = write(tmp_path/'e.csv', 'conf,correct,label\n.9,1,NA\n.8,0,None\n.7,1,null\n.6,0,1\n.5,1,01\n.4,0,007\n.3,1,7\n')
    assert read_events(p).label.tolist() == ['NA', 'None', 'null', '1', '01', '007', '7']


def test_json_number_labels_become_their_python_text(tmp_path):
    p = write(tmp_path/'e.jsonl', '{"conf": 0.9, "correct": 1, "label": "007"}\n{"conf": 0.8, "correct": 0, "label": 7}\n'
                                  '{"conf": 0.7, "correct": 0, "label": 1.5}\n{"conf": 0.6, "correct": 1, "label": true}\n')
    assert read_events(p).label.tolist() == ['007', '7', '1.5', 'true']
    p = write(tmp_path/'n.jsonl', '{"conf": 0.9, "correct": 1, "label": 1}\n{"conf": 0.8, "correct": 0, "label": 10}\n')
    assert read_events(p).label.tolist() == ['1', '10']       # an all-integer column: no float '1.0'


def test_parquet_numbers_become_text_strings_stay(tmp_path):
    p = tmp_path/'e.parquet'
    pd.DataFrame({'conf': [.9, .1], 'correct': [1, 0], 'label': [1, 10], 'item': ['007', 'NA']}).to_parquet(p)
    ev = read_events(p)
    assert ev.label.tolist() == ['1', '10'] and ev.item.tolist() == ['007', 'NA']


def test_null_label_refused(tmp_path):
    p = write(tmp_path/'e.jsonl', '{"conf": 0.9, "correct": 1, "label": "N"}\n{"conf": 0.8, "correct": 0}\n')
    assert "e.jsonl: column 'label', line 2: nan is missing (null)" in error(lambda: read_events(p))
    p = tmp_path/'e.parquet'
    pd.DataFrame({'conf': [.9, .1], 'correct': [1, 0], 'label': ['N', None]}).to_parquet(p)
    assert "column 'label', row 1:" in error(lambda: read_events(p))


def test_numeric_labels_match_a_counts_file(tmp_path):
    ev = read_events(write(tmp_path/'e.csv', 'conf,correct,label\n.9,1,1\n.8,0,2\n.7,1,10\n.6,1,10\n'))
    for counts in (write(tmp_path/'c.csv', 'label,count\n1,50\n2,30\n10,20\n'),
                   write(tmp_path/'c.json', '{"1": 50, "2": 30, "10": 20}')):
        c = read_counts(counts)
        assert c.to_dict() == {'1': 50, '2': 30, '10': 20}
        assert set(ev.label) == set(c.index)
        g = TagFrequency(n_groups=2).fit(c)
        with warnings.catch_warnings():
            warnings.simplefilter('error')                  # no label is "unseen in training"
            assert g.assign(ev.label).tolist() == g.assign(['1', '2', '10', '10']).tolist()
    ev = read_scores(_npz(tmp_path/'s.npz', np.eye(3), [0, 1, 2], labels=np.array([1, 2, 10])))
    assert set(ev.label) == {'1', '2', '10'}                 # the names as text, so a counts file's keys match them


def test_counts_labels_exact_and_bom(tmp_path):
    c = read_counts(write(tmp_path/'c.csv', '\ufefflabel,count\n1,5\n01,3\nNA,1\n,2\n'))
    assert c.to_dict() == {'1': 5, '01': 3, 'NA': 1, '': 2}
    c = read_counts(write(tmp_path/'c2.csv', '\ufeffN,5\nV,3\n'))
    assert c.to_dict() == {'N': 5, 'V': 3}


LABEL = st.text(st.characters(blacklist_categories=('Cs',)), max_size=12)   # any text: NUL, CR, LF, quotes, commas, tabs

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(labels=st.lists(LABEL, min_size=1, max_size=8), suffix=st.sampled_from(['.csv', '.tsv', '.jsonl', '.parquet']))
def test_labels_round_trip_exactly(tmp_path, labels, suffix):
    """Any text label written by pandas' writers (quoting commas, quotes, newlines) reads back exactly.

    CSV is written with RFC 4180's CRLF line ends, so that pandas quotes a field holding a lone CR."""
    n = len(labels)
    df = pd.DataFrame({'conf': np.arange(n) / 8, 'correct': np.arange(n) % 2, 'label': labels, 'item': labels[::-1]})
    p = tmp_path/f'rt{suffix}'
    if suffix == '.parquet': df.to_parquet(p)
    elif suffix == '.jsonl': df.to_json(p, orient='records', lines=True, force_ascii=False, double_precision=15)
    else: df.to_csv(p, index=False, sep='\t' if suffix == '.tsv' else ',', lineterminator='\r\n')
    ev = read_events(p)
    assert ev.label.tolist() == labels and ev.item.tolist() == labels[::-1]
    np.testing.assert_array_equal(ev.conf.to_numpy(), df.conf.to_numpy())


# ---------------------------------------------------------------- refused columns

def test_boolean_conf_refused(tmp_path):
    assert "b.csv: column 'conf', line 2: True is a boolean" in \
        error(lambda: read_events(write(tmp_path/'b.csv', 'conf,correct\nTrue,1\nFalse,0\n')))
    assert "b.jsonl: column 'conf', line 2: True is a boolean" in \
        error(lambda: read_events(write(tmp_path/'b.jsonl', '{"conf": 0.5, "correct": 1}\n{"conf": true, "correct": 1}\n')))
    p = tmp_path/'b.parquet'
    pd.DataFrame({'conf': [True, False], 'correct': [1, 0]}).to_parquet(p)
    assert "b.parquet: column 'conf', row 0: True is a boolean" in error(lambda: read_events(p))


@pytest.mark.parametrize('col', ['conf', 'correct'])
def test_duplicated_column_refused(tmp_path, col):
    p = write(tmp_path/'d.csv', f'conf,correct,{col}\n.9,1,0\n')
    assert error(lambda: read_events(p)) == f"{p}: line 1: column(s) ['{col}'] appear more than once; keep one of each"
    p = write(tmp_path/'d.tsv', f'conf\tcorrect\t{col}\n.9\t1\t0\n')
    assert f"['{col}'] appear more than once" in error(lambda: read_events(p))


# ---------------------------------------------------------------- JSON shapes and lines

def test_json_array_and_column_oriented_refused(tmp_path):
    hint = 'expected JSON Lines: one object per line, like {"conf": 0.9, "correct": 1, "label": "N"}'
    p = write(tmp_path/'a.json', '[{"conf": 0.9, "correct": 1}, {"conf": 0.1, "correct": 0}]')
    assert error(lambda: read_events(p)) == f'{p}: a JSON array; {hint}'
    p = write(tmp_path/'c.json', '{"conf": [0.9, 0.1], "correct": [1, 0]}')
    assert error(lambda: read_events(p)) == f"{p}: column-oriented JSON ('conf' holds a list); {hint}"
    p = write(tmp_path/'c2.json', json.dumps({'conf': [0.9, 0.1], 'correct': [1, 0]}, indent=1))
    assert error(lambda: read_events(p)) == f'{p}: column-oriented JSON (an object of lists); {hint}'
    p = write(tmp_path/'s.jsonl', '{"conf": 0.9, "correct": 1}\n7\n')
    assert error(lambda: read_events(p)) == f'{p}: line 2: expected a JSON object, got int'


def test_jsonl_broken_line_named(tmp_path):
    p = write(tmp_path/'e.jsonl', '{"conf": 0.9, "correct": 1}\n\n{"conf": 0.4, "correct": 0\n')
    assert error(lambda: read_events(p)).startswith(f'{p}: line 3, column')


# ---------------------------------------------------------------- encodings

@pytest.mark.parametrize('name,text', [('e.csv', 'conf,correct,label\n.9,1,N\n'), ('e.tsv', 'conf\tcorrect\tlabel\n.9\t1\tN\n'),
                                       ('e.jsonl', '{"conf": 0.9, "correct": 1, "label": "N"}\n')])
def test_bom_accepted(tmp_path, name, text):
    ev = read_events(write(tmp_path/name, '\ufeff' + text))
    assert ev.columns.tolist() == ['conf', 'correct', 'label'] and ev.label.tolist() == ['N']


@pytest.mark.parametrize('name,text,where', [
    ('l.csv', 'conf,correct,label\n.9,1,N\n.4,0,caf\xe9\n', 'line 3, column 9'),
    ('l.jsonl', '{"conf": 0.9, "correct": 1}\n{"conf": 0.4, "correct": 0, "label": "\xe9"}\n', 'line 2, column 39')])
def test_latin1_named_with_line(tmp_path, name, text, where):
    p = write(tmp_path/name, text, 'latin-1')
    assert error(lambda: read_events(p)) == f'{p}: {where}: byte 0xe9 is not UTF-8 (save the file as UTF-8)'
    assert error(lambda: read_text(p)) == f'{p}: {where}: byte 0xe9 is not UTF-8 (save the file as UTF-8)'


def test_counts_latin1_named(tmp_path):
    p = write(tmp_path/'c.csv', 'N,5\ncaf\xe9,3\n', 'latin-1')
    assert error(lambda: read_counts(p)).startswith(f'{p}: line 2, column 4: byte 0xe9')


# ---------------------------------------------------------------- .npz

def _npz(path, scores, gold, **more):
    np.savez(path, scores=np.asarray(scores), gold=np.asarray(gold), **more)
    return path


def test_npz_bad_files(tmp_path):
    np.save(tmp_path/'x.npy', np.eye(2)); (tmp_path/'x.npy').rename(tmp_path/'x.npz')
    assert error(lambda: read_scores(tmp_path/'x.npz')).startswith(f'{tmp_path}/x.npz: holds a single .npy array, not an .npz archive')
    p = write(tmp_path/'t.npz', 'hello world')
    assert error(lambda: read_scores(p)) == f"{p}: not an .npz archive (a zip of .npy arrays); the file starts with b'hello '"
    p = _npz(tmp_path/'o.npz', np.array([[.5, .5]], dtype=object), [0])
    assert error(lambda: read_scores(p)).startswith(f"{p}: array 'scores' holds Python objects (dtype=object)")
    p = _npz(tmp_path/'og.npz', [[.5, .5]], np.array([0], dtype=object))
    assert error(lambda: read_scores(p)).startswith(f"{p}: array 'gold' holds Python objects")
    np.savez(tmp_path/'m.npz', gold=np.array([0]))
    assert error(lambda: read_scores(tmp_path/'m.npz')) == f"{tmp_path}/m.npz: missing array(s) ['scores']; found ['gold']"
    assert error(lambda: read_scores(tmp_path/'none.npz')) == f'{tmp_path}/none.npz: no such file'
    p = write(tmp_path/'z.npz', b'PK\x03\x04broken')
    assert error(lambda: read_scores(p)).startswith(f'{p}: cannot read as .npz')


def test_npz_rows_not_summing_to_one_warn_once_with_counts(tmp_path):
    p = _npz(tmp_path/'s.npz', [[.9, .8], [.5, .5], [.3, .3], [.2, .8]], [0, 1, 1, 0])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        ev = read_scores(p)
    assert len(w) == 1, [(x.category.__name__, str(x.message)[:150]) for x in w]
    assert str(w[0].message) == (f'{p}: 2 of 4 score rows do not sum to 1 (largest deviation 0.7); '
                                 'softmax probabilities were expected, the scores are used as given')
    assert len(ev) == 8
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        read_scores(_npz(tmp_path/'ok.npz', np.full((3, 3), 1 / 3, np.float32), [0, 1, 2]))


def test_npz_labels_are_text(tmp_path):
    ev = read_scores(_npz(tmp_path/'s.npz', np.eye(2), [0, 1]), threshold=0)     # every cell (default: 0.01)
    assert ev.label.astype(str).tolist() == ['0', '1', '0', '1'] and isinstance(ev.label.iloc[0], str)


# ---------------------------------------------------------------- size

def test_a_large_csv_and_jsonl_read_fast_enough(tmp_path):
    "10⁵ rows (the 10⁶ measurement is in the report): vectorised, well under a second when the machine is idle."
    import time
    n = 100_000
    rng = np.random.default_rng(0)
    df = pd.DataFrame({'conf': rng.random(n), 'correct': rng.integers(0, 2, n), 'label': rng.integers(0, 50, n).astype(str)})
    df.to_csv(tmp_path/'big.csv', index=False); df.to_json(tmp_path/'big.jsonl', orient='records', lines=True)
    for name in ('big.csv', 'big.jsonl'):
        t = time.perf_counter(); ev = read_events(tmp_path/name)
        assert time.perf_counter() - t < 30                 # generous: the machine is shared; a per-row loop takes minutes
        assert ev.label.tolist() == df.label.tolist()


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    import sys
    p = tmp_path/'e.parquet'
    pd.DataFrame({'conf': [.9], 'correct': [1]}).to_parquet(p)
    monkeypatch.setitem(sys.modules, 'pyarrow.parquet', None)      # import pyarrow.parquet now fails
    with pytest.raises(ImportError) as info: read_events(p)
    assert str(info.value) == "reading Parquet files needs pyarrow: pip install 'calibkit[parquet]'"


def test_repeated_parquet_column_refused(tmp_path):
    import pyarrow as pa, pyarrow.parquet as pq
    p = tmp_path/'d.parquet'
    pq.write_table(pa.table([pa.array([.9]), pa.array([1]), pa.array([.1])], names=['conf', 'correct', 'conf']), p)
    assert error(lambda: read_events(p)) == f"{p}: column(s) ['conf'] appear more than once; keep one of each"


# ---------------------------------------------------------------- issue 23: misreads and true locations

def test_row_with_extra_fields_refused_naming_its_line(tmp_path):
    "S1: pandas would make the first column the index and shift the others (mean conf 0.667 instead of 0.6)."
    p = write(tmp_path/'s.csv', 'conf,correct\n0.9,1,0\n0.3,0,1\n0.6,1,1\n')
    assert error(lambda: read_events(p)) == (f'{p}: line 2: 3 fields, but the header names 2 (conf,correct); '
                                             'a field holding the separator must be quoted')
    p = write(tmp_path/'t.csv', 'conf,correct\n0.9,1\n\n0.3,0,1\n')
    assert error(lambda: read_events(p)).startswith(f'{p}: line 4: 3 fields')


@pytest.mark.parametrize('text, line', [('conf,correct\n0.5,1\n\n\nbad,0\n', 5),
                                        ('conf,correct,label\n0.5,1,"a\nb"\nbad,0,x\n', 4),
                                        ('conf,correct,label\n0.5,1,"a\n\nb"\n\n0.4,0,y\nbad,0,x\n', 7),
                                        ('\ufeffconf,correct\r\n0.5,1\r\n\r\nbad,0\r\n', 4)])
def test_true_line_numbers(tmp_path, text, line):
    "E1: blank lines and quoted multi-line fields are counted as lines of the file."
    p = write(tmp_path/'e.csv', text)
    assert error(lambda: read_events(p)) == f"{p}: column 'conf', line {line}: 'bad' is not a number"


def test_jsonl_blank_lines_counted(tmp_path):
    p = write(tmp_path/'e.jsonl', '{"conf": 0.5, "correct": 1}\n\n\n{"conf": 1.5, "correct": 1}\n')
    assert error(lambda: read_events(p)) == f"{p}: column 'conf', line 4: 1.5 is outside [0, 1]"


def test_json_labels_are_the_written_text(tmp_path):
    "S3: a JSON number label keeps its JSON text; objects and arrays are refused."
    p = write(tmp_path/'e.jsonl', '{"conf": 0.9, "correct": 1, "label": 1e2, "item": "a"}\n'
                                  '{"conf": 0.8, "correct": 0, "label": 1.0, "item": 7}\n'
                                  '{"conf": 0.7, "correct": 0, "label": "x", "item": 0.10}\n')
    ev = read_events(p)
    assert ev.label.tolist() == ['1e2', '1.0', 'x'] and ev.conf.tolist() == [0.9, 0.8, 0.7]
    assert ev.item.tolist() == ['a', '7', '0.10']
    for bad in ('{"a": 1}', '[1, 2]'):
        p = write(tmp_path/'o.jsonl', '{"conf": 0.9, "correct": 1, "label": "N"}\n{"conf": 0.9, "correct": 1, "label": %s}\n' % bad)
        assert "column 'label', line 2:" in error(lambda: read_events(p)) and 'is an object or array' in error(lambda: read_events(p))


def test_duplicate_json_keys_refused(tmp_path):
    p = write(tmp_path/'e.jsonl', '{"conf": 0.9, "correct": 1}\n{"conf": 0.9, "correct": 1, "conf": 0.1}\n')
    assert error(lambda: read_events(p)) == f"{p}: line 2: key 'conf' appears twice in one object"
    p = write(tmp_path/'c.json', '{"N": 5, "V": 2, "N": 7}')
    assert "key 'N' appears twice" in error(lambda: read_counts(p))


def test_parquet_binary_labels_decoded_or_refused(tmp_path):
    p = tmp_path/'e.parquet'
    pd.DataFrame({'conf': [.9, .1], 'correct': [1, 0], 'label': [b'A', 'caf\xe9'.encode()]}).to_parquet(p)
    assert read_events(p).label.tolist() == ['A', 'café']
    pd.DataFrame({'conf': [.9, .1], 'correct': [1, 0], 'label': [b'A', b'\xff']}).to_parquet(p)
    assert error(lambda: read_events(p)) == f"{p}: column 'label', row 1: b'\\xff' is bytes that are not UTF-8 text"


@pytest.mark.parametrize('name, text, says', [('t.json', '{"N": true, "V": 2}', "count for label 'N' is 'true'"),
                                              ('n.json', '{"N": null}', "count for label 'N' is 'null'"),
                                              ('i.csv', 'N,inf\n', "count for label 'N' is 'inf'"),
                                              ('h.csv', 'N,1e400\n', "count for label 'N' is '1e400'"),
                                              ('b.csv', 'N,99999999999999999999\n', "count for label 'N' is"),
                                              ('e.csv', 'label,count\n', 'no counts (the file holds no label,count rows)'),
                                              ('e.json', '{}', 'no counts'),
                                              ('x.csv', 'N,1\n\nV,2,3\n', 'line 3: 3 fields, but the header names 2')])
def test_bad_counts_named(tmp_path, name, text, says):
    "S3/E2: true is not 1, inf and header-only files are named with the file, never a raw pandas message."
    p = write(tmp_path/name, text)
    msg = error(lambda: read_counts(p))
    assert msg.startswith(f'{p}: ') and says in msg, msg


def test_not_regular_files_named_as_what_they_are(tmp_path):
    "E5: a FIFO or /dev/null is not 'no such file'; a newline in a name is quoted."
    import os
    from calibkit.inputs import NoInputError
    os.mkfifo(tmp_path/'p.csv')
    with pytest.raises(NoInputError, match='is a FIFO'): read_events(tmp_path/'p.csv')
    with pytest.raises(NoInputError, match='^/dev/null: is a device'): read_counts('/dev/null')
    p = write(tmp_path/'a\nb.csv', 'conf,correct\nx,1\n')
    assert error(lambda: read_events(p)) == f"{str(p)!r}: column 'conf', line 2: 'x' is not a number"


def test_deep_json_nesting_named(tmp_path):
    "E3: 100k nested brackets: one line naming the file and line, not a RecursionError."
    p = write(tmp_path/'d.jsonl', '{"conf": 0.5, "correct": 1}\n{"conf": ' + '[' * 100_000 + '\n')
    assert error(lambda: read_events(p)) == f'{p}: line 2: JSON nested too deeply for Python to parse'


def test_scores_below_threshold_named(tmp_path):
    p = _npz(tmp_path/'s.npz', np.array([[.6, .4]]), [0])
    assert error(lambda: read_scores(p, threshold=.9)) == f'{p}: no score of the 2 cells reaches the threshold 0.9'


# ---------------------------------------------------------------- one door in (issue 25)

def test_read_inputs_reads_one_file_many_files_and_stdin(tmp_path, monkeypatch):
    import io, sys
    from calibkit.inputs import read_inputs
    write(tmp_path/'e.csv', 'conf,correct,label\n0.9,1,N\n0.2,0,V\n')
    (tmp_path/'runs').mkdir()
    for i in range(2): write(tmp_path/'runs'/f'p{i}.csv', f'conf,correct,label\n0.{i + 4},1,N\n')
    write(tmp_path/'c.csv', 'label,count\nN,3\nV,1\n')
    ev, fit, counts = read_inputs(tmp_path/'e.csv', tmp_path/'runs', tmp_path/'c.csv')
    assert ev.conf.tolist() == [0.9, 0.2] and fit.conf.tolist() == [0.4, 0.5] and counts.to_dict() == {'N': 3, 'V': 1}
    assert [f['events'] for f in fit.attrs['files']] == [1, 1]
    ev, fit, counts = read_inputs(tmp_path/'e.csv', f'{tmp_path}/runs/*.csv', threshold=0.45)
    assert ev.conf.tolist() == [0.9] and fit.conf.tolist() == [0.5] and counts is None
    assert (fit.attrs['n_dropped'], fit.attrs['threshold'], len(fit.attrs['files'])) == (1, 0.45, 2)
    monkeypatch.setattr(sys, 'stdin', type('In', (), {'buffer': io.BytesIO(b'conf,correct\n0.7,1\nx,0\n')})())
    assert error(lambda: read_inputs('-', fmt='csv')) == "<stdin>: column 'conf', line 3: 'x' is not a number"
    monkeypatch.setattr(sys, 'stdin', None)
    from calibkit.inputs import NoInputError
    with pytest.raises(NoInputError, match='standard input is closed'):
        read_inputs('-', fmt='csv')


def test_input_errors_have_their_kinds(tmp_path):
    from calibkit.inputs import NoInputError, ScoresNeededError, ThresholdError, dataset_files, load_scores, plan
    write(tmp_path/'e.csv', 'conf,correct\n0.9,1\n')
    with pytest.raises(NoInputError, match='nope.csv: no such file'):
        plan(tmp_path/'e.csv', tmp_path/'nope.csv')
    with pytest.raises(NoInputError, match='no file matches this pattern'):
        dataset_files(f'{tmp_path}/*.parquet')
    with pytest.raises(ScoresNeededError) as e:
        load_scores(tmp_path/'e.csv')
    assert e.value.detail == f'{tmp_path}/e.csv is not one' and isinstance(e.value, InputError)
    e = ThresholdError(tmp_path/'e.csv', 1, 0.95)
    assert (str(e), e.n_events, e.threshold) == (f'{tmp_path}/e.csv: all 1 events score below the threshold 0.95', 1, 0.95)
