"""Properties of binning, metrics and event conversion (hypothesis), checked against independent references.

References are deliberately literal (Python loops on small data, `math.fsum`, exact comparisons) so
that they share no code path with calibkit's vectorised implementation. Data are drawn with heavy
ties (a few repeated values including 0, -0.0 and 1, and a grid of 41 values, so that many tie runs
straddle bin boundaries), in float32 and float64, with `correct` as bool, int or float, in
arbitrary (unsorted) order.
"""
import math, warnings
from unittest import mock
import numpy as np, pandas as pd, pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from calibkit.events import as_pairs, events_from_scores, top_label_events
from calibkit.binning import (bin_starts, equal_mass_bins, equal_mass_stats, fixed_width_bins, keep_ties, sort_pairs,
                              stats_from_sorted)
from calibkit.metrics import (_bootstrap_samples, _resample_stats, brier, calib_mse, calib_mse_interval, ece, gmce,
                              marginal_ce, smce)

def props(n: int = 60):
    "Hypothesis settings: a modest example count, no deadline (the whole file runs in well under a minute)."
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TIES = [0.0, -0.0, 0.1, 0.25, 0.5, 0.5, 0.7, 1.0]   # 0.5 twice: more ties at a likely bin boundary

@st.composite
def pairs(draw, min_n: int = 1, max_n: int = 120):
    "(conf, correct): conf float32/float64 with heavy ties; correct bool, int or float."
    n = draw(st.integers(min_n, max_n))
    value = st.one_of(st.sampled_from(TIES), st.integers(0, 40).map(lambda i: i / 40), st.floats(0, 1))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    conf = np.array(draw(st.lists(value, min_size=n, max_size=n)), dtype=np.float64).astype(dtype)
    y = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return conf, draw(st.sampled_from([y, y.astype(np.int64), y.astype(np.float64)]))

@st.composite
def grid_pairs(draw):
    "Up to 400 pairs on a grid of 51 confidences: long tie runs, and many of them straddle bin boundaries."
    n = draw(st.integers(50, 400))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    conf = (np.array(draw(st.lists(st.integers(0, 50), min_size=n, max_size=n))) / 50).astype(dtype)
    return conf, np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))

# --- independent references ---------------------------------------------------------------------

def ref_equal_mass(conf, correct, *, bin_size=None, n_bins=None, thesis=False):
    "The thesis' procedure, literally: stable argsort, then lists of ranks per bin (then, unless `thesis`, tie runs kept whole). Rows (n, Σconf, Σcorrect, lo, hi)."
    n = len(conf)
    order = np.argsort(conf, kind='stable')
    c, y = [float(conf[i]) for i in order], [int(correct[i]) for i in order]
    if bin_size is not None:
        bins = [list(range(k, min(k + bin_size, n))) for k in range(0, n, bin_size)]
        if len(bins) > 1 and len(bins[-1]) < bin_size:
            short = bins.pop(); bins[-1] += short       # merge a short last bin into the previous one
    else:
        bins = [list(range(j * n // n_bins, (j + 1) * n // n_bins)) for j in range(n_bins)]
    if not thesis:                                      # calibkit's rule: a cut inside a tie run moves to the run's nearer end
        cuts = []
        for b in bins[1:]:
            k = b[0]; a = k; e = k
            while a > 0 and c[a - 1] == c[k]: a -= 1
            while e < n and c[e] == c[k]: e += 1
            cuts.append(k if a == k else (e if k - a > e - k else a))
        starts = sorted({0} | {k for k in cuts if 0 < k < n})
        bins = [list(range(s0, s1)) for s0, s1 in zip(starts, starts[1:] + [n])]
    return [(len(b), math.fsum(c[k] for k in b), sum(y[k] for k in b), c[b[0]], c[b[-1]]) for b in bins]

def ref_fixed_width(conf, correct, n_bins):
    "Per-bin (n, Σconf, Σcorrect) with bin j = number of (correctly rounded) inner edges j/B that are <= q."
    rows = [[0, [], 0] for _ in range(n_bins)]
    for q, y in zip(conf, correct):
        j = sum(float(q) >= i / n_bins for i in range(1, n_bins))
        rows[j][0] += 1; rows[j][1].append(float(q)); rows[j][2] += int(y)
    return [(n, math.fsum(s), k) for n, s, k in rows]

def ref_norms(rows):
    "(l1, squared l2, max) of the per-bin gaps of reference rows (empty rows carry no weight)."
    total = sum(r[0] for r in rows)
    gaps = [(r[0] / total, abs(r[1] / r[0] - r[2] / r[0])) for r in rows if r[0]]
    return sum(w * g for w, g in gaps), sum(w * g * g for w, g in gaps), max(g for _, g in gaps)

close = lambda x: pytest.approx(x, rel=1e-9, abs=1e-12)

# --- partition ------------------------------------------------------------------------------------

@props()
@given(pairs(), st.data())
def test_equal_mass_bin_size_partitions_events(p, data):
    conf, correct = p
    n = len(conf); b = data.draw(st.integers(1, n), label='bin_size')
    t = equal_mass_bins(conf, correct, bin_size=b)
    assert len(t) <= max(1, n // b)                                   # tie runs longer than a bin merge bins
    assert t.n.sum() == n and (t.n > 0).all()
    assert (t.hi.to_numpy()[:-1] < t.lo.to_numpy()[1:]).all()         # no tie run is split
    if len(np.unique(conf)) == n:                                      # no ties: the thesis' sizes exactly
        assert len(t) == max(1, n // b)
        assert (t.n.iloc[:-1] == b).all() and b <= t.n.iloc[-1] < 2 * b

@props()
@given(pairs(), st.data())
def test_equal_mass_n_bins_partitions_events(p, data):
    conf, correct = p
    n = len(conf); nb = data.draw(st.integers(1, n), label='n_bins')
    t = equal_mass_bins(conf, correct, n_bins=nb)
    assert len(t) <= nb and t.n.sum() == n and (t.n > 0).all()
    assert (t.hi.to_numpy()[:-1] < t.lo.to_numpy()[1:]).all()       # bins ordered by confidence, no tie run split
    if len(np.unique(conf)) == n:                                    # no ties: the thesis' sizes exactly
        assert len(t) == nb and t.n.max() - t.n.min() <= 1

@props()
@given(pairs(), st.integers(1, 30), st.integers(1, 3), st.integers(1, 3))
def test_conf_zero_and_one_land_in_a_bin(p, nb, zeros, ones):
    conf, correct = p
    c = np.concatenate([np.zeros(zeros, conf.dtype), conf, np.ones(ones, conf.dtype)])
    y = np.concatenate([np.ones(zeros, bool), np.asarray(correct, bool), np.zeros(ones, bool)])
    f = fixed_width_bins(c, y, n_bins=nb)
    assert f.n.sum() == len(c) and f.n.iloc[0] >= zeros and f.n.iloc[-1] >= ones
    e = equal_mass_bins(c, y, n_bins=min(nb, len(c)))
    assert e.n.sum() == len(c) and e.lo.iloc[0] == 0 and e.hi.iloc[-1] == 1

# --- equal-mass and fixed-width bins against the references ---------------------------------------

@props(100)
@given(st.sampled_from([np.float32, np.float64]).flatmap(lambda dt: st.tuples(st.just(dt), st.lists(st.one_of(
    st.floats(width=32 if dt == np.float32 else 64), st.sampled_from([0.0, -0.0, 1.0, float(np.nextafter(1.0, 2)), -5e-324])), min_size=1, max_size=20))))
def test_check_conf_accepts_exactly_the_values_in_the_unit_interval(x):
    "The one-pass bit-pattern check accepts an array iff every value is a finite number in [0, 1]; -0.0 comes back as 0.0."
    from calibkit.events import check_conf
    dt, vals = x
    a = np.array(vals, dtype=dt)
    if np.all((a >= 0) & (a <= 1)):
        out = check_conf(a)
        assert out.dtype == dt and out.tobytes() == np.abs(a).tobytes()
    else:
        with pytest.raises(ValueError, match='NaN|infinite|outside'): check_conf(a)

SPECIAL = [0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 1e-45, 1.2e-38, 0.5, np.nextafter(1.0, 0), 1.0]

@props(80)
@given(pairs(), st.lists(st.sampled_from(SPECIAL), max_size=8))
def test_sort_pairs_is_a_lexsort_by_conf_then_outcome(p, extra):
    "The packed key, sorted as a float, gives numpy's lexicographic order of (conf, correct): also for 0, subnormals and 1."
    conf, correct = p
    c = np.abs(np.concatenate([conf, np.array(extra, dtype=np.float64).astype(conf.dtype)]))   # as check_conf gives it
    y = np.concatenate([np.asarray(correct, bool), np.arange(len(extra)) % 2 == 0]).view(np.uint8)
    cs, ys = sort_pairs(c, y)
    o = np.lexsort((y, c))
    assert cs.dtype == c.dtype and ys.dtype == np.uint8
    assert cs.tobytes() == c[o].tobytes() and ys.tobytes() == y[o].tobytes()

@props(40)
@given(st.one_of(pairs(min_n=1, max_n=3000), grid_pairs()), st.data())
def test_slice_and_reduceat_sums_agree_with_the_reference(p, data):
    "Per-bin sums by slices (few large bins) and by one reduceat (many small bins) both equal the literal reference."
    conf, correct = p
    n = len(conf)
    kw = {'n_bins': data.draw(st.integers(1, min(n, 12)), label='n_bins')}
    ref = ref_equal_mass(conf, correct, **kw)
    y = np.asarray(correct, float)
    for slice_min in (1, n + 1):                        # every bin by slices / every bin by reduceat
        with mock.patch('calibkit.binning.SLICE_MIN', slice_min):
            st_ = equal_mass_stats(conf, correct, moments=True, **kw)
        assert list(st_.n) == [r[0] for r in ref] and list(st_.sum_correct) == [r[2] for r in ref]
        assert st_.sum_conf == pytest.approx([r[1] for r in ref], rel=1e-12, abs=1e-300)
        assert list(st_.lo) == [r[3] for r in ref] and list(st_.hi) == [r[4] for r in ref]
        cuts = np.cumsum(st_.n)[:-1]
        q = np.sort(conf.astype(np.float64), kind='stable')
        yq = y[np.lexsort((y, conf))]
        assert st_.sum_conf2 == pytest.approx([math.fsum(v * v for v in b) for b in np.split(q, cuts)], rel=1e-12, abs=1e-300)
        assert st_.sum_conf_correct == pytest.approx([math.fsum(b) for b in np.split(q * yq, cuts)], rel=1e-12, abs=1e-300)


@props(80)
@given(st.one_of(pairs(), grid_pairs()), st.data())
def test_equal_mass_equals_reference(p, data):
    conf, correct = p
    n = len(conf)
    kw = data.draw(st.sampled_from(['bin_size', 'n_bins']).flatmap(
        lambda k: st.integers(1, n).map(lambda v: {k: v})), label='bins')
    t = equal_mass_bins(conf, correct, **kw)
    ref = ref_equal_mass(conf, correct, **kw)
    assert list(t.n) == [r[0] for r in ref]
    assert list(t.acc) == [r[2] / r[0] for r in ref]                 # integer sums: exact
    assert list(t.conf) == close([r[1] / r[0] for r in ref])
    assert list(t.lo) == [r[3] for r in ref] and list(t.hi) == [r[4] for r in ref]
    l1, l2sq, mx = ref_norms(ref)
    assert calib_mse(conf, correct, **kw) == close(l2sq)
    if 'n_bins' in kw:
        nb = kw['n_bins']
        assert ece(conf, correct, n_bins=nb) == close(l1)
        assert ece(conf, correct, n_bins=nb, norm='l2') == close(math.sqrt(l2sq))
        assert ece(conf, correct, n_bins=nb, norm='max') == close(mx)
        assert smce(pd.DataFrame({'conf': conf, 'correct': correct}), n_bins=nb) == close(math.sqrt(l2sq))

@props()
@given(pairs(), st.integers(1, 25))
def test_fixed_width_equals_reference(p, nb):
    conf, correct = p
    edges = np.arange(nb + 1) / nb                                      # add each edge and its two neighbours
    near = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, 1)]).astype(conf.dtype)
    conf = np.concatenate([conf, np.clip(near, 0, 1)])
    correct = np.concatenate([correct, np.arange(len(near)) % 2 == 0]).astype(correct.dtype)
    t = fixed_width_bins(conf, correct, n_bins=nb)
    ref = ref_fixed_width(conf, correct, nb)
    assert list(t.n) == [r[0] for r in ref]
    full = t.n > 0
    assert list(t.conf[full]) == close([r[1] / r[0] for r in ref if r[0]])
    assert list(t.acc[full]) == [r[2] / r[0] for r in ref if r[0]]
    assert t.conf[~full].isna().all()                                    # empty bins: documented NaN statistics
    l1, l2sq, mx = ref_norms(ref)
    assert ece(conf, correct, n_bins=nb, binning='fixed_width') == close(l1)
    assert ece(conf, correct, n_bins=nb, binning='fixed_width', norm='max') == close(mx)

# --- metric properties ------------------------------------------------------------------------------

@props()
@given(pairs(), st.data())
def test_metric_inequalities_on_same_bins(p, data):
    conf, correct = p
    nb = data.draw(st.integers(1, len(conf)), label='n_bins')
    binning = data.draw(st.sampled_from(['equal_mass', 'fixed_width']), label='binning')
    l1, l2, mx = (ece(conf, correct, n_bins=nb, norm=k, binning=binning) for k in ('l1', 'l2', 'max'))
    assert 0 <= l1 <= l2 + 1e-12 and l2 <= mx + 1e-12 and mx <= 1     # power-mean inequality
    mse = calib_mse(conf, correct, n_bins=nb)
    assert 0 <= mse <= 1
    if binning == 'equal_mass': assert l2 ** 2 == close(mse)

@props(40)
@given(st.one_of(pairs(min_n=2), grid_pairs()), st.data())
def test_jensen_nested_bins(p, data):
    "With n a multiple of 2b the bins of size 2b are unions of bins of size b: the score cannot grow."
    conf, correct = p
    b = data.draw(st.integers(1, len(conf) // 2), label='b')
    m = len(conf) // (2 * b) * 2 * b
    c, y = conf[:m], correct[:m]
    assert calib_mse(c, y, bin_size=2 * b) <= calib_mse(c, y, bin_size=b) + 1e-12

@props()
@given(pairs(), st.data())
def test_brier_decomposition(p, data):
    conf, correct = p
    binning = data.draw(st.sampled_from(['equal_mass', 'fixed_width']), label='binning')
    nb = data.draw(st.integers(1, len(conf) if binning == 'equal_mass' else 25), label='n_bins')
    b = brier(conf, correct, n_bins=nb, binning=binning)
    direct = math.fsum((float(q) - int(y)) ** 2 for q, y in zip(conf, correct)) / len(conf)
    assert b.brier == close(direct)
    assert b.calibration + b.refinement + b.within_bin == close(b.brier)
    assert b.uncertainty - b.resolution == close(b.refinement)
    assert b.calibration == close(ece(conf, correct, n_bins=nb, binning=binning, norm='l2') ** 2)
    ybar = np.mean(np.asarray(correct, float))
    assert b.uncertainty == close(ybar * (1 - ybar))
    assert min(b.calibration, b.refinement, b.resolution) >= 0

# --- SMCE / GMCE / MCE --------------------------------------------------------------------------------

@st.composite
def labelled(draw, min_n: int = 1):
    "An events frame with a `label` column over K <= 6 labels (ints, or categorical names)."
    conf, correct = draw(pairs(min_n=min_n))
    k = draw(st.integers(1, 6))
    lab = np.array(draw(st.lists(st.integers(0, k - 1), min_size=len(conf), max_size=len(conf))))
    if draw(st.booleans()): lab = pd.Categorical.from_codes(lab, categories=[f'L{i}' for i in range(k)])
    return pd.DataFrame({'label': lab, 'conf': conf, 'correct': correct}), k

def _quiet_gmce(ev, groups, n_bins):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', UserWarning)      # small / empty groups warn by design
        return gmce(ev, groups, n_bins=n_bins)

def _names(ev, k):
    cats = getattr(ev['label'], 'cat', None)
    return list(cats.categories) if cats is not None else list(range(k))

@props(40)
@given(labelled(), st.data())
def test_gmce_one_group_is_smce(x, data):
    ev, k = x
    nb = data.draw(st.integers(1, len(ev)), label='n_bins')
    g = _quiet_gmce(ev, {name: 'all' for name in _names(ev, k)}, nb)
    assert list(g.group) == ['all'] and g.n_events[0] == len(ev)
    assert g.gmce[0] == close(smce(ev, n_bins=nb))

@props(40)
@given(labelled(), st.data())
def test_gmce_of_a_group_is_smce_on_its_events_and_ignores_group_names(x, data):
    ev, k = x
    names = _names(ev, k)
    n_groups = data.draw(st.integers(1, 3), label='n_groups')
    group = {name: data.draw(st.integers(0, n_groups - 1)) for name in names}
    nb = data.draw(st.integers(1, 8), label='n_bins')
    g = _quiet_gmce(ev, group, nb).set_index('group')
    assert set(g.index) == {group[name] for name in pd.unique(ev.label)}
    for gid in g.index:
        sub = ev[ev.label.isin([name for name in names if group[name] == gid])]
        assert g.n_events[gid] == len(sub) and g.n_bins[gid] == len(equal_mass_bins(sub, n_bins=min(nb, len(sub))))
        assert g.n_bins[gid] <= min(nb, len(sub))                     # fewer when tie runs merge bins
        assert g.gmce[gid] == close(smce(sub, n_bins=min(nb, len(sub))))
    perm = data.draw(st.permutations(range(n_groups)), label='perm')
    renamed = _quiet_gmce(ev, {name: f'G{perm[gi]}' for name, gi in group.items()}, nb).set_index('group')
    for gid in g.index:
        assert renamed.gmce[f'G{perm[gid]}'] == g.gmce[gid]
        assert renamed.n_events[f'G{perm[gid]}'] == g.n_events[gid]

@props(30)
@given(st.integers(2, 40), st.integers(1, 5), st.integers(1, 5), st.sampled_from([0.0, 0.1, 0.3]),
       st.integers(0, 2**32 - 1))
def test_marginal_ce_is_rms_of_per_class_errors(n, k, nb, threshold, seed):
    rng = np.random.default_rng(seed)
    s = np.round(rng.dirichlet(np.ones(k), size=n), 1)      # ties, exact zeros
    gold = rng.integers(0, k, n)
    nb = min(nb, n)
    per = []                                               # a class = its above-threshold cells, binned alone
    for j in range(k):
        keep = s[:, j] >= threshold
        if keep.sum() >= nb: per.append(ece(s[keep, j], gold[keep] == j, n_bins=nb, norm='l2'))
    if not per:
        with pytest.raises(ValueError, match='no class has min_events'):
            marginal_ce(s, gold, n_bins=nb, threshold=threshold)
        return
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter('always')
        m = marginal_ce(s, gold, n_bins=nb, threshold=threshold)
    assert m.value == close(math.sqrt(np.mean(np.square(per))))
    assert m.per_class.used.sum() == len(per)
    assert any('skipped' in str(r.message) for r in rec) == (len(per) < k)

def test_marginal_ce_accepts_gold_names_with_labels():
    "Like events_from_scores, marginal_ce takes `labels=` so gold may be label names (core bug: not passed on)."
    s = np.array([[.7, .2, .1], [.1, .8, .1], [.2, .2, .6], [.5, .3, .2]])
    by_id = marginal_ce(s, [0, 1, 2, 1], n_bins=1, labels=['N', 'V', 'A'])
    by_name = marginal_ce(s, ['N', 'V', 'A', 'V'], n_bins=1, labels=['N', 'V', 'A'])
    assert by_name.value == by_id.value
    assert list(by_name.per_class.label) == ['N', 'V', 'A']

# --- events from score matrices -------------------------------------------------------------------

@st.composite
def score_matrix(draw):
    n, k = draw(st.integers(1, 7)), draw(st.integers(1, 6))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    vals = draw(st.lists(st.one_of(st.sampled_from([0.0, 0.01, 0.2, 0.5, 1.0]), st.floats(0, 1)),
                         min_size=n * k, max_size=n * k))
    gold = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    return np.array(vals, np.float64).astype(dtype).reshape(n, k), np.array(gold)

@props(80)
@given(score_matrix(), st.data())
def test_events_from_scores_keeps_exactly_cells_at_or_above_threshold(x, data):
    s, gold = x
    n, k = s.shape
    # thresholds representable in the scores' dtype (a cell's own value, 0 or any float below 1: a threshold lies in
    # [0, 1), issue 25), so that ">=" in that dtype and ">=" on the exact values agree
    t = data.draw(st.one_of(st.sampled_from(sorted({float(v) for v in s.ravel() if v < 1} | {0.0})),
                            st.floats(0, 1, exclude_max=True).map(lambda v: float(s.dtype.type(v)))
                            .filter(lambda v: v < 1)), label='threshold')
    ev = events_from_scores(s, gold, threshold=t)
    expect = [(i, j, float(s[i, j]), int(j == gold[i])) for i in range(n) for j in range(k) if float(s[i, j]) >= t]
    got = list(zip(ev['item'].tolist(), ev['label'].tolist(), ev['conf'].astype(float).tolist(), ev['correct'].tolist()))
    assert got == expect
    assert ev.attrs['n_dropped'] == n * k - len(expect) and ev.attrs['n_cells'] == n * k
    if t == 0: assert ev['correct'].sum() == n                          # one gold cell per row

@props(40)
@given(score_matrix())
def test_events_from_scores_with_label_names_matches_ids(x):
    s, gold = x
    names = [f't{j}' for j in range(s.shape[1])]
    by_id = events_from_scores(s, gold, threshold=0.2)
    by_name = events_from_scores(s, [names[g] for g in gold], threshold=0.2, labels=names)
    assert by_name['label'].astype(str).tolist() == [names[j] for j in by_id['label']]
    assert by_name['correct'].tolist() == by_id['correct'].tolist()

@props(40)
@given(score_matrix())
def test_top_label_events_brute_force(x):
    s, gold = x
    ev = top_label_events(s, gold)
    for i, row in enumerate(s.tolist()):
        j = row.index(max(row))                                          # first maximum
        assert (ev['label'][i], float(ev['conf'][i]), ev['correct'][i]) == (j, row[j], int(j == gold[i]))

def test_events_from_scores_does_not_alias_the_score_matrix():
    "The events frame must not share memory with the caller's matrix (core bug at threshold <= min score)."
    s = np.array([[.7, .3], [.4, .6]])
    ev = events_from_scores(s, [0, 1])
    s *= 0.5                                                             # e.g. an in-place rescaling later on
    assert ev['conf'].tolist() == [.7, .3, .4, .6]

# --- CalibMSE intervals ---------------------------------------------------------------------------------

def synthetic(n, k, rng):
    "q ~ Beta(2, 2), y ~ Bernoulli(t(q)), t(p) = max(0, p - k) for p <= .5 else min(1, p + k)."
    q = rng.beta(2, 2, n)
    return q, rng.random(n) < np.where(q <= .5, np.maximum(0, q - k), np.minimum(1, q + k))

@props(25)
@given(pairs(min_n=2, max_n=200), st.data())
def test_interval_ordered_and_deterministic_given_seed(p, data):
    conf, correct = p
    kw = dict(n_bins=data.draw(st.integers(1, len(conf)), label='n_bins'),
              method=data.draw(st.sampled_from(['normal', 'bootstrap']), label='method'),
              n_samples=data.draw(st.integers(2, 60), label='n_samples'),
              level=data.draw(st.floats(.5, .99), label='level'), seed=data.draw(st.integers(0, 2**32 - 1)))
    a, b = calib_mse_interval(conf, correct, **kw), calib_mse_interval(conf, correct, **kw)
    assert a == b
    assert 0 <= a.lo <= a.hi and all(map(math.isfinite, a))
    assert a.estimate == close(calib_mse(conf, correct, n_bins=kw['n_bins']))

@pytest.mark.parametrize('method', ['normal', 'bootstrap'])
def test_interval_depends_on_seed(method):
    q, y = synthetic(2000, .1, np.random.default_rng(0))
    a, b = (calib_mse_interval(q, y, n_bins=10, method=method, n_samples=50, seed=s) for s in (1, 2))
    assert a.estimate == b.estimate and (a.lo, a.hi) != (b.lo, b.hi)

@props(20)
@given(st.integers(5000, 20000), st.floats(.1, .3), st.integers(5, 10), st.integers(0, 2**32 - 1))
def test_normal_interval_contains_estimate_on_miscalibrated_data(n, k, nb, seed):
    """On clearly miscalibrated data the interval (centred on the mean of the sampled values, which
    exceeds the estimate by about Σ|B|/N·se²) still contains the estimate. (On perfectly calibrated
    data it need not: that bias is then larger than the spread; see the report.)"""
    q, y = synthetic(n, k, np.random.default_rng(seed))
    i = calib_mse_interval(q, y, n_bins=nb, n_samples=300, seed=seed)
    assert i.lo <= i.estimate <= i.hi

class _RecordingRng:
    "A numpy Generator that records what `integers` returned (the bootstrap's resampling draws), also in spawned children."
    def __init__(self, rng): self.rng, self.draws, self.children = rng, [], []
    def integers(self, *args, **kw):
        out = self.rng.integers(*args, **kw); self.draws.append(np.array(out)); return out
    def spawn(self, k):
        self.children = [_RecordingRng(g) for g in self.rng.spawn(k)]
        return self.children
    def all_draws(self):
        "Draws in replicate order: own draws, then each spawned child's (one child per chunk of replicates)."
        return self.draws + [d for c in self.children for d in c.all_draws()]
    def __getattr__(self, name): return getattr(self.rng, name)

@props(15)
@given(st.integers(2, 300), st.sampled_from(['n_bins', 'bin_size']), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_bootstrap_equals_literal_resampling(n, spec, v, seed):
    """The vectorised bootstrap equals literally resampling the events and re-binning with `calib_mse`.

    The resamples are the ones calibkit drew (recorded): rows of `integers(0, n)` draws, read as
    positions in the stable conf order (equal confidences keep input order, as in `calib_mse`).
    If the draw mechanism changes, adapt `_RecordingRng`, not the equality."""
    rng = np.random.default_rng(seed)
    conf = np.round(rng.beta(2, 5, n), 1); correct = rng.random(n) < conf      # unsorted, heavy ties
    kw = {spec: min(v, n)}
    rec, make = [], np.random.default_rng
    with mock.patch.object(np.random, 'default_rng', lambda s=None: rec.append(_RecordingRng(make(s))) or rec[-1]):
        i = calib_mse_interval(conf, correct, method='bootstrap', n_samples=20, level=.8, seed=seed, **kw)
    draws = np.concatenate([d.reshape(-1, n) for r in rec for d in r.all_draws()])
    assert draws.shape == (20, n)
    o = np.argsort(conf, kind='stable')
    vals = [calib_mse(conf[o[np.sort(d)]], correct[o[np.sort(d)]], **kw) for d in draws]
    assert (i.lo, i.hi) == close(tuple(np.quantile(vals, [.1, .9])))


# --- the bootstrap by weights equals the bootstrap by sorted draws ---------------------------------------------------

def sorted_draws_bootstrap(conf, correct, spec, n_samples, rng, chunk=8, debias=False):
    """The bootstrap as calibkit computed it before it resampled by weights (kept here as the slow reference): each
    replicate sorts its n draws of positions in the stable conf order, gathers the resample and re-bins it."""
    c, y = as_pairs(conf, correct)
    n = len(c)
    starts = bin_starts(n, **spec)
    o = np.argsort(c, kind='stable')
    cs, ys = c[o].astype(np.float64), y[o]
    out = []
    for g in rng.spawn(-(-n_samples // chunk)):
        for d in np.sort(g.integers(0, n, size=(min(chunk, n_samples - len(out)), n), dtype=np.int32), axis=1):
            cr = cs[d]
            out.append(stats_from_sorted(cr, ys[d], keep_ties(cr, starts)).sq_error(debias))
    return np.array(out)

@props(40)
@given(st.one_of(pairs(min_n=1, max_n=200), grid_pairs()), st.data())
def test_bootstrap_by_weights_reproduces_sorted_draws(p, data):
    """Every replicate value equals the sorted-draws reference: the same multiset per replicate from the same stream,
    the same bins (ties kept together), so they differ only in the order of floating-point summation."""
    conf, correct = p
    n = len(conf)
    spec = data.draw(st.sampled_from([{'n_bins': data.draw(st.integers(1, n), label='n_bins')},
                                      {'bin_size': data.draw(st.integers(1, n), label='bin_size')}]), label='spec')
    kw = dict(n_samples=data.draw(st.integers(1, 30), label='n_samples'),
              chunk=data.draw(st.integers(1, 9), label='chunk'), debias=data.draw(st.booleans(), label='debias'))
    seed = data.draw(st.integers(0, 2**32 - 1), label='seed')
    new = _bootstrap_samples(conf, correct, spec, rng=np.random.default_rng(seed), **kw)
    ref = sorted_draws_bootstrap(conf, correct, spec, rng=np.random.default_rng(seed), **kw)
    np.testing.assert_allclose(new, ref, rtol=1e-12, atol=1e-15)   # atol: values that cancel to ~0 (debias)

@props(60)
@given(grid_pairs(), st.data())
def test_resample_stats_equal_binning_the_sorted_resample(p, data):
    "A resample binned from its weights alone (zero weights, large multiplicities) has the bins of the resample itself."
    conf, correct = p
    n = len(conf)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label='seed'))
    d = np.sort(rng.choice(n, size=n, p=rng.dirichlet(np.full(n, data.draw(st.floats(.05, 5), label='alpha')))))
    starts = bin_starts(n, n_bins=data.draw(st.integers(1, n), label='n_bins'))
    c, y = as_pairs(conf, correct)
    o = np.argsort(c, kind='stable')
    cs, ys = c[o].astype(np.float64), y[o]
    first = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1], True])
    got = _resample_stats(cs, ys + (np.int64(1) << 32), first, np.bincount(d, minlength=n), starts, np.empty(n))
    ref = stats_from_sorted(cs[d], ys[d], keep_ties(cs[d], starts))
    for f in ('n', 'sum_correct', 'lo', 'hi'):
        np.testing.assert_array_equal(getattr(got, f), getattr(ref, f), err_msg=f)
    np.testing.assert_allclose(got.sum_conf, ref.sum_conf, rtol=1e-13)


# --- equal-mass results are functions of the multiset of events (ties kept together) --------------

@st.composite
def tied_events(draw):
    "Up to 300 labelled events on 10 distinct confidences (long tie runs at most bin edges), and a permutation."
    n = draw(st.integers(2, 300))
    conf = np.array(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))) / 9
    y = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))).astype(np.uint8)
    lab = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    return pd.DataFrame({'label': lab, 'conf': conf, 'correct': y}), draw(st.permutations(range(n)))

@props(80)
@given(tied_events(), st.data())
def test_equal_mass_metrics_are_permutation_invariant(x, data):
    ev, perm = x
    sh = ev.iloc[list(perm)].reset_index(drop=True)
    n = len(ev)
    kw = data.draw(st.sampled_from(['bin_size', 'n_bins']).flatmap(lambda k: st.integers(1, n).map(lambda v: {k: v})), label='bins')
    pd.testing.assert_frame_equal(equal_mass_bins(ev.conf, ev.correct, **kw), equal_mass_bins(sh.conf, sh.correct, **kw))
    assert calib_mse(ev.conf, ev.correct, **kw) == calib_mse(sh.conf, sh.correct, **kw)
    assert ece(ev.conf, ev.correct, **kw) == ece(sh.conf, sh.correct, **kw)
    assert smce(ev, **kw) == smce(sh, **kw)
    nb = data.draw(st.integers(1, 6), label='gmce n_bins')
    groups = {0: 'a', 1: 'a', 2: 'b', 3: 'b'}
    pd.testing.assert_frame_equal(_quiet_gmce(ev, groups, nb), _quiet_gmce(sh, groups, nb))

@props(80)
@given(st.integers(1, 300), st.integers(0, 2**32 - 1), st.data())
def test_equal_mass_is_the_thesis_procedure_without_ties(n, seed, data):
    rng = np.random.default_rng(seed)
    conf = rng.permutation(np.linspace(0, 1, n + 2)[1:-1])           # distinct values, any order
    y = rng.random(n) < conf
    kw = data.draw(st.sampled_from(['bin_size', 'n_bins']).flatmap(lambda k: st.integers(1, n).map(lambda v: {k: v})), label='bins')
    ref = ref_equal_mass(conf, y, thesis=True, **kw)
    t = equal_mass_bins(conf, y, **kw)
    assert list(t.n) == [r[0] for r in ref] and list(t.acc) == [r[2] / r[0] for r in ref]
    assert calib_mse(conf, y, **kw) == close(ref_norms(ref)[1])

# --- Ding et al.'s adaptive ECE against a literal restatement of calibration_metric's loop --------

def ref_ding_ece(conf, correct):
    "calibration_metric's adaptive binning (ECEMetric(binning_strategy='adaptive'), weighted), restated event by event."
    z = 1.645
    pairs_ = sorted(zip(map(float, conf), map(int, correct)), key=lambda t: t[0], reverse=True)
    n = len(pairs_)
    num, cmin, cmax, ind, target = [0] * n, [1.0] * n, [0.0] * n, 0, math.inf
    for i, (p, _) in enumerate(pairs_):
        if num[ind] > target and n - i > 40 and cmin[ind] - pairs_[-1][0] > 0.05:
            ind += 1; target = math.inf
        num[ind] += 1; cmin[ind] = min(cmin[ind], p); cmax[ind] = max(cmax[ind], p)
        d = cmax[ind] - cmin[ind]
        target = math.inf if d == 0 else (np.float64(z) / np.float64(d)) ** 2 * 0.25
    nb = ind + 1
    final = num[:nb]
    if target - num[ind] > 0 and nb > 1 and math.isfinite(target):
        needed = target - num[ind]
        e = min(int(needed * num[ind] / n), min(final[:-1]) - 1)     # calibkit's cap (the library has none)
        final = [f - e for f in final[:-1]] + [final[-1] + e * (nb - 1)]
    out, k = 0.0, 0
    for f in final:
        chunk = pairs_[k:k + f]; k += f
        out += f / n * abs(sum(p for p, _ in chunk) / f - sum(y for _, y in chunk) / f)
    return out, nb

@props(60)
@given(st.integers(1, 400), st.integers(0, 2**32 - 1), st.sampled_from([None, 2, 3]), st.floats(.3, 3))
def test_adaptive_ece_equals_calibration_metric_restatement(n, seed, digits, power):
    rng = np.random.default_rng(seed)
    q = rng.beta(rng.uniform(.5, 5), rng.uniform(.5, 5), n)
    if digits: q = np.round(q, digits)
    y = rng.random(n) < q ** power
    ref, nb = ref_ding_ece(q, y)
    assert ece(q, y, binning='adaptive') == pytest.approx(ref, abs=1e-9)
    assert len(equal_mass_bins_adaptive(q, y)) == nb

def equal_mass_bins_adaptive(q, y):
    from calibkit.binning import adaptive_stats, bin_table
    return bin_table(adaptive_stats(q, y))

@pytest.mark.parametrize('case, ref, nb', [((0, 5000, 2, 2, 1.5), 0.11486270269083211, 19),
                                           ((1, 20000, 5, 1.2, 0.7), 0.05192071388585735, 23)])
def test_adaptive_ece_reference_values(case, ref, nb):
    "The numbers calibration_metric's ECEMetric(binning_strategy='adaptive') gives on these synthetic sets."
    seed, n, a, b, p = case
    rng = np.random.default_rng(seed); q = rng.beta(a, b, n); y = rng.random(n) < q ** p
    assert ece(q, y, binning='adaptive') == pytest.approx(ref, abs=1e-9)
    assert len(equal_mass_bins_adaptive(q, y)) == nb
    assert ref_ding_ece(q, y) == (pytest.approx(ref, abs=1e-9), nb)
