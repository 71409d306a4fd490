"""One per-group calibration error (`calibkit.metrics.group_errors`): its rule for empty and small groups, its one
warning, its intervals, and the callers that share it (gmce, the report, the sparse study)."""
import warnings
import numpy as np, pandas as pd, pytest
from hypothesis import given, settings, strategies as st
from calibkit.binning import equal_mass_stats, group_bins
from calibkit.events import check_group_map, group_slices
from calibkit.metrics import ece, ece_interval, gmce, group_errors


def caught(fn, *args, **kw):
    "fn's result and the messages of the warnings it gave."
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter('always')
        out = fn(*args, **kw)
    return out, [str(r.message) for r in rec]


def data(n=600, seed=0, n_groups=4):
    rng = np.random.default_rng(seed)
    q = rng.random(n)
    y = (rng.random(n) < q ** 1.5).astype(np.uint8)
    gid = rng.integers(1, n_groups + 1, n)
    return q, y, gid


def test_empty_and_small_groups_one_warning_with_counts():
    q, y, gid = data()
    gid[gid == 3] = 2                                       # group 3: no events
    gid[:5] = 4; gid[5:] = np.where(gid[5:] == 4, 1, gid[5:])   # group 4: 5 events, fewer than 10 bins
    t, said = caught(group_errors, *group_bins(q, y, gid, 4, n_bins=10), [1, 2, 3, 4], n_bins=10, intervals=False,
                     who='x')
    assert said == ['x: 1 of 4 group(s) have no events, so no error: [3]; '
                    '1 of 4 group(s) have fewer than 10 events, so one event per bin: [4]']
    assert t.group.tolist() == [1, 2, 4]                    # the empty group has no row
    assert t.n_bins.tolist() == [10, 10, 5] and t.n_events.tolist() == [np.sum(gid == g) for g in (1, 2, 4)]
    _, said = caught(group_errors, *group_bins(q, y, gid, 4, bin_size=50), [1, 2, 3, 4], bin_size=50, intervals=False)
    assert said == ['1 of 4 group(s) have no events, so no error: [3]; '
                    '1 of 4 group(s) have fewer than 50 events, so a single bin: [4]']
    _, said = caught(group_errors, *group_bins(q, y, gid, 4, n_bins=10), intervals=False)
    assert said == []                                       # neither the groups nor the bins asked for: nothing to say


def test_many_names_are_cut_with_an_ellipsis():
    q, y, _ = data(n=30)
    gid = np.arange(30) % 15 + 1                            # 15 groups of 2 events
    _, said = caught(group_errors, *group_bins(q, y, gid, 40, n_bins=3), np.arange(1, 41), n_bins=3, intervals=False)
    assert said[0].startswith('25 of 40 group(s) have no events, so no error: [16, 17, 18, 19, 20, 21, 22, 23, 24, 25, …]')
    assert '15 of 40 group(s) have fewer than 3 events' in said[0]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 6), st.integers(1, 12))
def test_each_group_is_ece_interval_of_its_events_alone(seed, n_groups, n_bins):
    q, y, gid = data(n=300, seed=seed, n_groups=n_groups)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        t = group_errors(*group_bins(q, y, gid, n_groups, n_bins=n_bins), n_samples=50, seed=seed % 7)
        for g, row in t.set_index('group').iterrows():
            m = gid == g
            iv = ece_interval(q[m], y[m], n_bins=min(n_bins, int(m.sum())), norm='l2', n_samples=50, seed=seed % 7)
            np.testing.assert_allclose([row.gmce, row.lo, row.hi], iv, rtol=1e-12, atol=1e-15)
            assert row.n_bins == len(equal_mass_stats(q[m], y[m], n_bins=min(n_bins, int(m.sum()))).n)


def test_fixed_width_bins_with_empty_bins_are_skipped():
    q, y, gid = data()
    st, bg = group_bins(q, y, gid, 4, n_bins=7, binning='fixed_width')
    t = group_errors(st, bg, intervals=False)
    for g in range(1, 5):
        m = gid == g
        assert t.gmce[g - 1] == pytest.approx(ece(q[m], y[m], n_bins=7, binning='fixed_width', norm='l2'), rel=1e-12)


def test_budget_leaves_intervals_out_with_a_warning():
    q, y, gid = data()
    sg = group_bins(q, y, gid, 4, n_bins=10)
    t, said = caught(group_errors, *sg, n_samples=100, seed=0, budget=100 * 40 - 1)
    assert t.lo.isna().all() and t.hi.isna().all() and not t.gmce.isna().any()
    assert said == ['per-group intervals left out: 4 groups hold 40 bins, and 100 resamples of each exceed 3,999 values; '
                    'pass fewer resamples (n_samples=...) for them']
    t2, said = caught(group_errors, *sg, n_samples=100, seed=0, budget=100 * 40)
    assert said == [] and not t2.lo.isna().any()


def test_degenerate_intervals_are_counted_once():
    q = np.array([.2, .4, .6, .8, .3, .7]); y = np.array([0, 1, 1, 1, 1, 0]); gid = np.array([1, 1, 2, 2, 3, 3])
    t, said = caught(group_errors, *group_bins(q, y, gid, 3, n_bins=2), n_samples=50, seed=0, who='w')
    assert said == ['w: 3 of 3 groups have a degenerate (zero-width) interval: their bins hold one event or only correct '
                    'or only wrong events, so resampling has no spread']
    np.testing.assert_allclose(t.lo, t.gmce, rtol=1e-12)    # no spread: the interval is the point


def test_bad_input():
    q, y, gid = data()
    st_, bg = group_bins(q, y, gid, 4, n_bins=3)
    with pytest.raises(TypeError, match='st must be a BinStats, got tuple'): group_errors((st_, bg), bg)
    with pytest.raises(ValueError, match='bg must give each of the 12 bins its group'): group_errors(st_, bg[:3])
    with pytest.raises(ValueError, match="each group's bins must be together"): group_errors(st_, np.tile([1, 2, 3, 4], 3))
    with pytest.raises(ValueError, match='n_samples must be'): group_errors(st_, bg, n_samples=1)
    with pytest.raises(TypeError, match='intervals'): group_errors(st_, bg, intervals='yes')


def test_gmce_uses_the_rule():
    ev = pd.DataFrame({'label': list('aabbbc'), 'conf': [.1, .9, .2, .5, .8, .6], 'correct': [0, 1, 0, 1, 1, 1]})
    t, said = caught(gmce, ev, {'a': 'A', 'b': 'B', 'c': 'C', 'd': 'D'}, n_bins=3)
    assert said == ['gmce: 1 of 4 group(s) have no events, so no error: [\'D\']; '
                    "2 of 4 group(s) have fewer than 3 events, so one event per bin: ['A', 'C']"]
    assert t.group.tolist() == ['A', 'B', 'C'] and t.n_labels.tolist() == [1, 1, 1] and t.n_bins.tolist() == [2, 3, 1]
    assert list(t.columns) == ['group', 'gmce', 'n_events', 'n_labels', 'n_bins']
    assert t.gmce[1] == pytest.approx(ece([.2, .5, .8], [0, 1, 1], n_bins=3, norm='l2'), rel=1e-15)


def test_sparse_study_group_without_test_events_is_nan_and_said():
    from calibkit.sparse import sparse_study
    rng = np.random.default_rng(0)
    n = 400
    dev = pd.DataFrame({'label': rng.choice(list('abc'), n, p=[.6, .3, .1]), 'conf': rng.random(n)})
    dev['correct'] = (rng.random(n) < dev.conf ** 2).astype(np.uint8)
    test = dev[dev.label != 'c'].reset_index(drop=True)     # group 2 ({c}) has no test events
    r, said = caught(sparse_study, {'a': 60, 'b': 39, 'c': 1}, dev, test, n_groups=3, recalibrators='histogram',
                     rule='>=', min_events=10)
    g = r.attrs['groups']
    empty = g.group[g.test_events == 0].tolist()
    assert empty and r[r.group.isin(empty)].before.isna().all()
    assert any(m.startswith(f'sparse_study: {len(empty)} of {len(g)} group(s) have no events, so no error: ') for m in said)


def test_group_slices_lives_in_events_and_check_group_map_is_the_validator():
    order, bounds = group_slices(np.array([3, 1, 3, 2]), 3)
    assert order.tolist() == [1, 3, 0, 2] and bounds.tolist() == [0, 1, 2, 4]
    import sys, calibkit.recalibrators as R
    E = sys.modules['calibkit.events']                       # calibkit.events is also the function `events`
    assert 'group_slices' in E.__all__ and 'group_slices' not in R.__all__ and 'group_map' not in E.__all__
    with pytest.raises(TypeError, match='groups must map label -> group'): check_group_map(['a'])
