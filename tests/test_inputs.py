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
    ev = read_scores(_npz(tmp_path/'s.npz', np.eye(2), [0, 1]))
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
