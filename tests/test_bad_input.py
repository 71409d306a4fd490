"""Every public function refuses bad input with the right exception and a message that names the argument
and, where values are individually bad, how many of them; and no metric returns NaN on edge data.

Each case lists message fragments that must all appear (case-sensitive). Counts are checked as
'k of n' for bad values (NaN, inf, range, 0/1, gold ids, missing values); dtype-level errors
(strings) name the argument and say it must be numeric.
"""
import math, warnings
import numpy as np, pandas as pd, pytest
from calibkit.events import events_from_scores, make_events, top_label_events
from calibkit.binning import equal_mass_bins, fixed_width_bins
from calibkit.metrics import brier, calib_mse, calib_mse_interval, ece, ece_interval, gmce, marginal_ce, smce, top_label_ce
from calibkit import selective, significance
from calibkit.conformal import ConformalSets, conformal_scores

C = [.1, .2, .3, .4, .5, .6]                      # N = 6 valid pairs
Y = [0, 1, 0, 1, 1, 0]
S = np.array([[.7, .25, .05], [.1, .85, .05], [.02, .08, .9]])   # 3 rows × K = 3 columns
G = [0, 2, 2]
LABELS = {0: 'a', 1: 'b'}

def frame(c, y):
    n = len(c)
    return pd.DataFrame({'conf': c, 'correct': y, 'label': np.arange(n) % 2})

# f(conf, correct) for every public function taking pairs (frame functions get a frame built from them)
PAIR_FNS = {
    'make_events': lambda c, y: make_events(c, y),
    'equal_mass_bins': lambda c, y: equal_mass_bins(c, y, n_bins=2),
    'fixed_width_bins': lambda c, y: fixed_width_bins(c, y, n_bins=4),
    'calib_mse': lambda c, y: calib_mse(c, y, bin_size=2),
    'calib_mse_interval-normal': lambda c, y: calib_mse_interval(c, y, n_bins=2, n_samples=10),
    'calib_mse_interval-bootstrap': lambda c, y: calib_mse_interval(c, y, n_bins=2, n_samples=10, method='bootstrap'),
    'ece': lambda c, y: ece(c, y, n_bins=2),
    'ece-fixed_width': lambda c, y: ece(c, y, n_bins=4, binning='fixed_width'),
    'brier': lambda c, y: brier(c, y, n_bins=2),
    'spiegelhalter_test': lambda c, y: significance.spiegelhalter_test(c, y),
    'ecce_mad_test': lambda c, y: significance.ecce_mad_test(c, y),
    'ecce_r_test': lambda c, y: significance.ecce_r_test(c, y),
    'cumulative_differences': lambda c, y: significance.cumulative_differences(c, y),
    'calib_mse_test': lambda c, y: significance.calib_mse_test(c, y, n_bins=2, n_samples=10),
    'consistency_bands': lambda c, y: significance.consistency_bands(c, y, n_bins=2, n_samples=10),
    **{f: (lambda f: lambda c, y: getattr(selective, f)(c, y))(f)
       for f in ('risk_coverage', 'aurc', 'e_aurc', 'augrc', 'auroc', 'prr', 'selective_risk', 'selective_summary')},
}
FRAME_FNS = {
    'smce': lambda c, y: smce(frame(c, y), n_bins=2),
    'gmce': lambda c, y: gmce(frame(c, y), LABELS, n_bins=2),
}
SCORE_FNS = {
    'events_from_scores': lambda s, g: events_from_scores(s, g),
    'top_label_events': lambda s, g: top_label_events(s, g),
    'marginal_ce': lambda s, g: marginal_ce(s, g, n_bins=1),
    'top_label_ce': lambda s, g: top_label_ce(s, g, n_bins=1),
    'conformal_scores': lambda s, g: conformal_scores(s, g),
    'ConformalSets.fit': lambda s, g: ConformalSets(0.5).fit(s, g),
}

def put(base, idx, vals, dtype=float):
    a = np.array(base, dtype=dtype); a[idx] = vals; return a

def nullable(base, idx, dtype):
    s = pd.Series(base, dtype=dtype); s[idx] = pd.NA; return s

def numeric_strings(base): return np.array([str(v) for v in base], dtype=object)

# name: (conf, correct, exception, fragments, applies to frames)
PAIR_CASES = {
    'conf NaN': (put(C, [1, 4], np.nan), Y, ValueError, ['conf', '2 of 6', 'NaN'], True),
    'conf +inf': (put(C, [2], np.inf), Y, ValueError, ['conf', '1 of 6', 'infinite'], True),
    'conf -inf': (put(C, [0, 1, 2], -np.inf), Y, ValueError, ['conf', '3 of 6', 'infinite'], True),
    'conf > 1': (put(C, [3, 5], [1.5, 1 + 1e-12]), Y, ValueError, ['conf', '2 of 6', 'outside [0, 1]'], True),
    'conf < 0': (put(C, [0], -1e-9), Y, ValueError, ['conf', '1 of 6', 'outside [0, 1]'], True),
    'correct = 2': (C, put(Y, [1], 2, int), ValueError, ['correct', '1 of 6', 'not 0 or 1'], True),
    'correct = 0.5': (C, put(Y, [0, 5], .5), ValueError, ['correct', '2 of 6', 'not 0 or 1'], True),
    'correct = -1': (C, put(Y, [2], -1, int), ValueError, ['correct', '1 of 6', 'not 0 or 1'], True),
    'correct NaN': (C, put(Y, [2], np.nan), ValueError, ['correct', '1 of 6'], True),
    'correct shorter': (C, Y[:5], ValueError, ['correct has 5 values', 'conf has 6'], False),
    'correct longer': (C, Y + [1], ValueError, ['correct has 7 values', 'conf has 6'], False),
    'conf 2-D': (np.reshape(C, (2, 3)), Y, ValueError, ['conf', '1-dimensional', '(2, 3)'], False),
    'empty': ([], [], ValueError, ['conf', 'empty'], True),
    'empty correct': (C, [], ValueError, ['correct', 'empty'], False),
    'conf strings': (['a', 'b', 'c', 'd', 'e', 'f'], Y, TypeError, ['conf', 'numeric'], True),
    'conf numeric strings (object)': (numeric_strings(C), Y, TypeError, ['conf', 'numeric'], True),
    'correct strings': (C, ['1', '0', '1', '0', '1', '0'], TypeError, ['correct', 'numeric'], True),
    'correct numeric strings (object)': (C, numeric_strings(Y), TypeError, ['correct', 'numeric'], True),
    'conf booleans': ([True, False] * 3, Y, TypeError, ['conf', 'boolean'], True),
    'conf Float64 with NA': (nullable(C, [1], 'Float64'), Y, ValueError, ['conf', '1 of 6'], True),
    'correct Int64 with NA': (C, nullable(Y, [0, 3], 'Int64'), ValueError, ['correct', '2 of 6'], True),
    'correct boolean with NA': (C, nullable(np.array(Y, bool), [5], 'boolean'), ValueError, ['correct', '1 of 6'], True),
}

def _check(call, exc, fragments):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', UserWarning)
        with pytest.raises(exc) as e: call()
    msg = str(e.value)
    missing = [f for f in fragments if f not in msg]
    assert not missing, f'message {msg!r} lacks {missing}'

@pytest.mark.parametrize('fn, case', [(fn, case) for fn in [*PAIR_FNS, *FRAME_FNS] for case in PAIR_CASES
                                      if fn in PAIR_FNS or PAIR_CASES[case][4]])   # frames: equal lengths, 1-D
def test_bad_pairs(fn, case):
    conf, correct, exc, fragments, _ = PAIR_CASES[case]
    _check(lambda: {**PAIR_FNS, **FRAME_FNS}[fn](conf, correct), exc, fragments)

def nullable_frame(s, i, j):
    d = pd.DataFrame(s).astype('Float64'); d.iloc[i, j] = pd.NA; return d

# name: (scores, gold, exception, fragments)
SCORE_CASES = {
    'scores NaN': (put(S, (0, 1), np.nan), G, ValueError, ['scores', '1 of 9', 'NaN']),
    'scores +inf': (put(S, (slice(None), 0), np.inf), G, ValueError, ['scores', '3 of 9', 'infinite']),
    'scores -inf': (put(S, (2, 2), -np.inf), G, ValueError, ['scores', '1 of 9', 'infinite']),
    'scores > 1': (put(S, (1, 1), 1.01), G, ValueError, ['scores', '1 of 9', 'outside [0, 1]']),
    'scores < 0': (put(S, (1, slice(None)), -.1), G, ValueError, ['scores', '3 of 9', 'outside [0, 1]']),
    'gold >= K': (S, [0, 3, 1], ValueError, ['gold', '1 of 3', 'outside [0, 3)']),
    'gold < 0': (S, [-1, -2, 1], ValueError, ['gold', '2 of 3', 'outside [0, 3)']),
    'gold shorter': (S, [0, 1], ValueError, ['gold has 2 values', 'scores has 3 rows']),
    'scores 1-D': (S[0], [0], ValueError, ['scores', '2-dimensional', '(3,)']),
    'gold 2-D': (S, [[0], [1], [2]], ValueError, ['gold', '1-dimensional', '(3, 1)']),
    'empty scores': (np.empty((0, 3)), [], ValueError, ['scores', 'empty']),
    'scores strings': (S.astype(str), G, TypeError, ['scores', 'numeric']),
    'scores numeric strings (object)': (S.astype(str).astype(object), G, TypeError, ['scores', 'numeric']),
    'gold names without labels': (S, ['a', 'b', 'b'], TypeError, ['gold', 'labels']),
    'scores Float64 frame with NA': (nullable_frame(S, 0, 1), G, ValueError, ['scores', '1 of 9']),
    'gold Int64 with NA': (S, nullable(G, [1], 'Int64'), ValueError, ['gold', '1 of 3']),
}

@pytest.mark.parametrize('case', SCORE_CASES)
@pytest.mark.parametrize('fn', SCORE_FNS)
def test_bad_scores(fn, case):
    scores, gold, exc, fragments = SCORE_CASES[case]
    _check(lambda: SCORE_FNS[fn](scores, gold), exc, fragments)

# --- bin specifications, options and other arguments ---------------------------------------------------

NEEDS_ONE_SPEC = {
    'equal_mass_bins': lambda **kw: equal_mass_bins(C, Y, **kw),
    'calib_mse': lambda **kw: calib_mse(C, Y, **kw),
    'calib_mse_interval-normal': lambda **kw: calib_mse_interval(C, Y, n_samples=10, **kw),
    'calib_mse_interval-bootstrap': lambda **kw: calib_mse_interval(C, Y, n_samples=10, method='bootstrap', **kw),
}
SPEC_CASES = {
    'neither': ({}, ['exactly one of bin_size and n_bins']),
    'both': (dict(bin_size=2, n_bins=2), ['exactly one of bin_size and n_bins', 'both']),
    'bin_size 0': (dict(bin_size=0), ['bin_size', '[1, 6]', 'got 0']),
    'bin_size -2': (dict(bin_size=-2), ['bin_size', '[1, 6]', 'got -2']),
    'bin_size N+1': (dict(bin_size=7), ['bin_size', '[1, 6]', 'got 7']),
    'bin_size 2.5': (dict(bin_size=2.5), ['bin_size', 'integer', 'got 2.5']),
    'bin_size NaN': (dict(bin_size=float('nan')), ['bin_size', 'got nan']),
    'bin_size inf': (dict(bin_size=float('inf')), ['bin_size', 'got inf']),
    'n_bins NaN': (dict(n_bins=float('nan')), ['n_bins', 'got nan']),
    'n_bins N+1': (dict(n_bins=7), ['n_bins', '[1, 6]', 'got 7']),
    'n_bins 0': (dict(n_bins=0), ['n_bins', '[1, 6]', 'got 0']),
}

@pytest.mark.parametrize('case', SPEC_CASES)
@pytest.mark.parametrize('fn', NEEDS_ONE_SPEC)
def test_bad_bin_spec(fn, case):
    kw, fragments = SPEC_CASES[case]
    if case == 'neither' and fn != 'equal_mass_bins':      # metrics (contract C3): neither -> the settings' n_bins (10 > 6 events)
        fragments = ['n_bins', '[1, 6]', 'got 10']
    _check(lambda: NEEDS_ONE_SPEC[fn](**kw), ValueError, fragments)

N_BINS_ABOVE_N = {     # equal-mass functions: more bins than events would leave bins empty
    'ece': lambda: ece(C, Y, n_bins=7),
    'ece-l2': lambda: ece(C, Y, n_bins=7, norm='l2'),
    'smce': lambda: smce(frame(C, Y), n_bins=7),
    'brier': lambda: brier(C, Y, n_bins=7),
    'top_label_ce': lambda: top_label_ce(S, G, n_bins=4),
}

@pytest.mark.parametrize('fn', N_BINS_ABOVE_N)
def test_n_bins_above_number_of_events(fn):
    n = 3 if fn == 'top_label_ce' else 6
    _check(N_BINS_ABOVE_N[fn], ValueError, ['n_bins', f'[1, {n}]', f'got {n + 1}'])

OTHER_CASES = {
    'ece norm': (lambda: ece(C, Y, n_bins=2, norm='l3'), ValueError, ['norm', "'l3'"]),
    'top_label_ce norm': (lambda: top_label_ce(S, G, n_bins=1, norm='L1'), ValueError, ['norm', "'L1'"]),
    'ece binning': (lambda: ece(C, Y, n_bins=2, binning='quantile'), ValueError, ['binning', "'quantile'"]),
    'top_label_ce binning': (lambda: top_label_ce(S, G, n_bins=1, binning='uniform'), ValueError, ['binning', "'uniform'"]),
    'brier binning': (lambda: brier(C, Y, n_bins=2, binning='adaptive'), ValueError, ['binning', "'adaptive'"]),
    'calib_mse_interval method': (lambda: calib_mse_interval(C, Y, n_bins=2, method='jackknife'), ValueError,
                                  ['method', "'jackknife'"]),
    'fixed_width_bins n_bins 0': (lambda: fixed_width_bins(C, Y, n_bins=0), ValueError, ['n_bins', 'got 0']),
    'ece fixed_width n_bins -1': (lambda: ece(C, Y, n_bins=-1, binning='fixed_width'), ValueError, ['n_bins', 'got -1']),
    'gmce labels without group': (lambda: gmce(frame(C, Y), {0: 'a'}), ValueError,
                                  ['groups', '1 label(s)', 'no group', '3 events']),
    'gmce categorical labels without group': (
        lambda: gmce(events_from_scores(S, G, labels=['N', 'V', 'A']), {'N': 1, 'V': 1}), ValueError,
        ['groups', '1 label(s)', 'no group', "'A'", '3 events']),
    'gmce groups not a mapping': (lambda: gmce(frame(C, Y), ['a', 'b']), TypeError, ['groups', 'list']),
    'gmce no label column': (lambda: gmce(frame(C, Y).drop(columns='label'), LABELS), ValueError, ['label']),
    'smce missing column': (lambda: smce(frame(C, Y).drop(columns='correct')), ValueError, ['correct']),
    'events context length': (lambda: make_events(C, Y, item=[0, 1]), ValueError, ['item has 2 values', 'conf has 6']),
    'events_from_scores threshold > 1': (lambda: events_from_scores(S, G, threshold=1.5), ValueError, ['threshold', '1.5']),
    'events_from_scores threshold < 0': (lambda: events_from_scores(S, G, threshold=-.01), ValueError, ['threshold', '-0.01']),
    'events_from_scores labels length': (lambda: events_from_scores(S, G, labels=['N', 'V']), ValueError,
                                         ['labels has 2', 'scores has 3 columns']),
    'events_from_scores unknown gold name': (lambda: events_from_scores(S, ['N', 'X', 'Y'], labels=['N', 'V', 'A'],
                                                                         strict_labels=True),
                                             ValueError, ['gold', '2 of 3', 'not among labels']),
    'marginal_ce labels length': (lambda: marginal_ce(S, G, n_bins=1, labels=['N', 'V']), ValueError,
                                  ['labels has 2', 'scores has 3 columns']),
    'marginal_ce min_events 0': (lambda: marginal_ce(S, G, min_events=0), ValueError, ['min_events', 'got 0']),
    'marginal_ce threshold > 1': (lambda: marginal_ce(S, G, n_bins=1, threshold=2), ValueError, ['threshold', '2']),
}

@pytest.mark.parametrize('case', OTHER_CASES)
def test_bad_options(case):
    _check(*OTHER_CASES[case])

LEVEL_FNS = {
    'equal_mass_bins': lambda level: equal_mass_bins(C, Y, n_bins=2, level=level),
    'fixed_width_bins': lambda level: fixed_width_bins(C, Y, n_bins=2, level=level),
    'calib_mse_interval-normal': lambda level: calib_mse_interval(C, Y, n_bins=2, n_samples=10, level=level),
    'calib_mse_interval-bootstrap': lambda level: calib_mse_interval(C, Y, n_bins=2, n_samples=10, level=level,
                                                                     method='bootstrap'),
}

@pytest.mark.parametrize('level', [0, 1, 1.5, -0.5, 95, float('nan')])
@pytest.mark.parametrize('fn', LEVEL_FNS)
def test_level_outside_unit_interval(fn, level):
    _check(lambda: LEVEL_FNS[fn](level), ValueError, ['level', '(0, 1)', f'got {level}'])

@pytest.mark.parametrize('n_samples', [1, 0, -3, 2.5, float('nan')])
@pytest.mark.parametrize('method', ['normal', 'bootstrap'])
def test_n_samples_below_two(method, n_samples):
    _check(lambda: calib_mse_interval(C, Y, n_bins=2, method=method, n_samples=n_samples), ValueError,
           ['n_samples', '>= 2', f'got {n_samples}'])

# --- no NaN on edge data -------------------------------------------------------------------------------

from edge import EDGE  # noqa: E402

def edge_metrics(c, y):
    "Every metric on (c, y), with bin counts that are valid for any N >= 1."
    n, nb = len(c), min(10, len(c))
    ev = pd.DataFrame({'conf': c, 'correct': y, 'label': np.arange(n) % 2})
    s = np.column_stack([c, 1 - c])                     # a two-class score matrix, gold = class 0 when correct
    gold = np.where(np.asarray(y, bool), 0, 1)
    out = {'calib_mse b=1': calib_mse(c, y, bin_size=1), 'calib_mse': calib_mse(c, y, n_bins=nb)}
    for m in ('normal', 'bootstrap'):
        out.update({f'interval {m} {k}': v for k, v in
                    calib_mse_interval(c, y, n_bins=nb, method=m, n_samples=20)._asdict().items()})
    for binning in ('equal_mass', 'fixed_width'):
        for norm in ('l1', 'l2', 'max'):
            out[f'ece {binning} {norm}'] = ece(c, y, n_bins=nb, norm=norm, binning=binning)
            out[f'top_label_ce {binning} {norm}'] = top_label_ce(s, gold, n_bins=nb, norm=norm, binning=binning)
        out.update({f'brier {binning} {k}': v for k, v in brier(c, y, n_bins=nb, binning=binning)._asdict().items()})
    out['smce'] = smce(ev, n_bins=nb)
    out.update({f'gmce {g}': v for g, v in zip(gmce(ev, LABELS, n_bins=nb).group, gmce(ev, LABELS, n_bins=nb).gmce)})
    out['marginal_ce'] = marginal_ce(s, gold, n_bins=nb, min_events=1, threshold=0).value
    out['equal_mass_bins'] = equal_mass_bins(c, y, n_bins=nb).to_numpy().sum()
    return out

@pytest.mark.parametrize('case', EDGE)
def test_no_metric_returns_nan_on_edge_data(case):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', UserWarning)        # gmce warns about groups smaller than n_bins
        vals = edge_metrics(*EDGE[case])
    bad = {k: v for k, v in vals.items() if not math.isfinite(v)}
    assert not bad, f'non-finite results: {bad}'
    assert len(vals) == 37 - (case == 'single event')   # every metric ran (a single event has one gmce group)


# ---------------------------------------------------------------- file readers: one line naming file:line
# (events/scores/counts files are covered in test_inputs.py; these are the dataset and model-output readers)

from pathlib import Path
from calibkit.datasets.conll import read_conll, text_lines
from calibkit.datasets.coref import read_conll2012_coref
from calibkit.datasets.ud import read_conllu
from calibkit.extractors.seq2seq import read_calibration_metric_logits

LOGITS = Path(__file__).resolve().parent.parent/'calibkit'/'data'/'calibration_metric'/'dev_two.logits'
UD_ROW = '1\tcaf\xe9\tx\tX\tXX\t_\t0\troot\t_\t_\n'
COREF = '#begin document (d); part 0\nd 0 0 caf\xe9 (1)\n#end document\n'

LATIN1 = {   # reader, file name, text written as Latin-1, expected message after the path
    'conll': (read_conll, 'x.conll', 'a\tD\ncaf\xe9\tN\n',
              ': line 2, column 4: byte 0xe9 is not UTF-8 (save the file as UTF-8)'),
    'conllu': (read_conllu, 'x.conllu', '# sent_id = s\n' + UD_ROW, ': line 2, column 6: byte 0xe9 is not UTF-8'),
    'conll2012': (read_conll2012_coref, 'x.conll', COREF, ': line 2, column 10: byte 0xe9 is not UTF-8'),
    'logits': (read_calibration_metric_logits, 'x.logits', '{"labels": "caf\xe9"}\n',
               ': line 1, column 16: byte 0xe9 is not UTF-8'),
}

@pytest.mark.parametrize('case', LATIN1)
def test_readers_name_file_and_line_of_non_utf8_bytes(tmp_path, case):
    read, name, text, msg = LATIN1[case]
    p = tmp_path/name
    p.write_bytes(text.encode('latin-1'))
    with pytest.raises(ValueError) as info: read(p)
    assert str(info.value).startswith(f'{p}{msg}') and '\n' not in str(info.value)


BOM = {
    'conll': (read_conll, 'x.conll', 'a\tD\n', lambda r: r.tokens == [['a']]),
    'conllu': (read_conllu, 'x.conllu', '# sent_id = s\n' + UD_ROW.replace('\xe9', 'e'), lambda r: r[0].sent_id == 's'),
    'conll2012': (read_conll2012_coref, 'x.conll', COREF.replace('\xe9', 'e'), lambda r: r[0].name == 'd'),
    'logits': (read_calibration_metric_logits, 'x.logits', LOGITS.read_text(encoding='utf-8'), lambda r: len(r) == 214),
}

@pytest.mark.parametrize('case', BOM)
def test_readers_accept_a_byte_order_mark(tmp_path, case):
    read, name, text, ok = BOM[case]
    p = tmp_path/name
    p.write_bytes(b'\xef\xbb\xbf' + text.encode('utf-8'))
    assert ok(read(p))


def test_empty_conll2012_file_raises_like_the_other_readers(tmp_path):
    for read, name in ((read_conll2012_coref, 'e.conll'), (read_conll, 'e.txt'), (read_conllu, 'e.conllu')):
        p = tmp_path/name
        p.write_text('')
        with pytest.raises(ValueError, match='no (documents|sentences)'): read(p)
    p = tmp_path/'e.conll'
    with pytest.raises(ValueError) as info: read_conll2012_coref(p)
    assert str(info.value) == f'{p}: no documents (the file has no #begin document line)'


def test_truncated_logits_file_names_the_broken_line(tmp_path):
    first, second = LOGITS.read_bytes().split(b'\n')[:2]
    p = tmp_path/'t.logits'
    p.write_bytes(first + b'\n\n' + second[:100])           # a blank line, then a break on line 3
    with pytest.raises(ValueError) as info: read_calibration_metric_logits(p)
    assert str(info.value).startswith(f'{p}:3: invalid JSON at column ')
    p.write_bytes(first + b'\n[1, 2]\n')
    with pytest.raises(ValueError, match=r't\.logits:2: expected a JSON object, got list'): read_calibration_metric_logits(p)
    p.write_bytes(first + b'\n' + first.replace(b'"top_logits"', b'"probs"'))
    with pytest.raises(ValueError, match=r"t\.logits:2: example 1 lacks key\(s\) \['top_logits'\]"):
        read_calibration_metric_logits(p)


def test_text_lines_splits_every_line_end(tmp_path):
    p = tmp_path/'x.txt'
    p.write_bytes(b'\xef\xbb\xbfa\r\nb\rc\nd')
    assert list(text_lines(p)) == [(1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')]


# --- degenerate intervals, impossible sizes, data containers (issues 16, 17) -----------------------

@pytest.mark.parametrize('name, c, y', [('single event', [.7], [1]), ('all correct', [.2, .4, .6, .8], [1, 1, 1, 1]),
                                         ('pure bins', [.1, .2, .8, .9], [0, 0, 1, 1])])
def test_degenerate_interval_warns_with_counts(name, c, y):
    "A zero-width interval comes from no spread in the data, not certainty: one warning says so, with counts."
    nb = 1 if len(c) == 1 else 2
    fns = [lambda: calib_mse_interval(c, y, n_bins=nb, n_samples=20), lambda: ece_interval(c, y, n_bins=nb, n_samples=20)]
    if len(c) == 1: fns.append(lambda: calib_mse_interval(c, y, n_bins=nb, n_samples=20, method='bootstrap'))
    for f in fns:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter('always')
            iv = f()
        assert iv.hi - iv.lo <= 1e-12                       # zero width, to rounding
        msgs = [str(r.message) for r in rec if 'degenerate' in str(r.message)]
        assert len(msgs) == 1 and f'{len(c)} event(s) in {nb} bin(s)' in msgs[0] and 'does not mean certainty' in msgs[0]
    with warnings.catch_warnings():
        warnings.simplefilter('error')                       # a real interval: no warning
        calib_mse_interval(np.linspace(.05, .95, 40), np.arange(40) % 3 == 0, n_bins=2, n_samples=20)

def test_fixed_width_refuses_sizes_that_cannot_fit_in_memory():
    from calibkit.binning import MAX_FIXED_BINS
    with pytest.raises(ValueError, match=r'n_bins must be an integer in \[1, 10000000\] \(fixed-width bins: more cannot fit in memory\), got 1000000000'):
        fixed_width_bins([.1, .2], [0, 1], n_bins=10**9)
    assert MAX_FIXED_BINS == 10**7
    assert fixed_width_bins([.1, .2], [0, 1], n_bins=1000).n.sum() == 2

def test_every_common_container_gives_the_same_metric():
    torch, pl, pa = pytest.importorskip('torch'), pytest.importorskip('polars'), pytest.importorskip('pyarrow')
    c = np.random.default_rng(0).random(200); y = (np.random.default_rng(1).random(200) < c).astype(np.uint8)
    ref = calib_mse(c, y, n_bins=5)
    frame = pd.DataFrame({'conf': c, 'correct': y, 'label': np.arange(200) % 3})
    assert calib_mse(pl.from_pandas(frame), n_bins=5) == ref
    assert calib_mse(pa.Table.from_pandas(frame), n_bins=5) == ref
    assert smce(pl.from_pandas(frame), n_bins=5) == smce(frame, n_bins=5)
    pd.testing.assert_frame_equal(gmce(pa.Table.from_pandas(frame), {0: 'a', 1: 'a', 2: 'b'}, n_bins=5),
                                  gmce(frame, {0: 'a', 1: 'a', 2: 'b'}, n_bins=5))
    arrays = [(list(c), list(y)), (pd.Series(c), pd.Series(y)), (pa.array(c), pa.array(y)),
              (pa.chunked_array([c[:50], c[50:]]), pa.chunked_array([y[:70], y[70:]])), (pl.Series(c), pl.Series(y)),
              (torch.tensor(c, requires_grad=True) * 1, torch.tensor(y))]     # a tensor in an autograd graph: detached
    for cc, yy in arrays:
        assert calib_mse(cc, yy, n_bins=5) == ref, type(cc)
    class FakeCudaTensor:                                 # what a CUDA tensor offers: .numpy() only after .cpu()
        def __init__(self, a, dev='cuda'): self.a, self.dev = a, dev
        def detach(self): return self
        def cpu(self): return FakeCudaTensor(self.a, 'cpu')
        def numpy(self):
            if self.dev != 'cpu': raise TypeError("can't convert cuda:0 device type tensor to numpy")
            return self.a
    assert calib_mse(FakeCudaTensor(c), FakeCudaTensor(y), n_bins=5) == ref

def test_frames_from_other_libraries_name_missing_columns():
    pl = pytest.importorskip('polars')
    with pytest.raises(ValueError, match=r"events frame lacks column\(s\) \['correct'\]"):
        calib_mse(pl.DataFrame({'conf': [.1, .2]}), n_bins=1)

def test_bootstrap_shows_progress_unless_quiet(monkeypatch, capsys):
    import sys
    monkeypatch.setenv('CALIBKIT_QUIET', '0')
    calib_mse_interval(np.linspace(.05, .95, 40), np.arange(40) % 3 == 0, n_bins=2, n_samples=20, method='bootstrap')
    assert capsys.readouterr().err == '', 'a progress bar on a stderr that is not a terminal'
    monkeypatch.setattr(sys.stderr, 'isatty', lambda: True)        # a terminal
    calib_mse_interval(np.linspace(.05, .95, 40), np.arange(40) % 3 == 0, n_bins=2, n_samples=20, method='bootstrap')
    assert 'bootstrap' in capsys.readouterr().err
    monkeypatch.setenv('CALIBKIT_QUIET', '1')
    calib_mse_interval(np.linspace(.05, .95, 40), np.arange(40) % 3 == 0, n_bins=2, n_samples=20, method='bootstrap')
    assert 'bootstrap' not in capsys.readouterr().err


def test_fixed_width_bins_are_bounded_by_the_number_of_events():
    "Issue 23: `--binning fixed_width --n-bins 10000000` on 5,000 events peaked at 1.7 GB; now refused before allocating."
    from calibkit.binning import FREE_FIXED_BINS, fixed_width_stats
    q = np.linspace(0, 1, 5000); y = np.arange(5000) % 2
    with pytest.raises(ValueError, match=r'n_bins must be an integer in \[1, 10000\] \(fixed-width bins for 5000 events'):
        fixed_width_stats(q, y, n_bins=10**7)
    assert fixed_width_stats(q, y, n_bins=FREE_FIXED_BINS).total == 5000
    assert len(fixed_width_stats(np.linspace(0, 1, 20_000), np.arange(20_000) % 2, n_bins=20_000).n) == 20_000
