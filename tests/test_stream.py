"""calibkit.stream (constant-memory accumulator) and calibkit.torchmetric (its torchmetrics Metric): fixed-width bins
equal to the in-memory ones, equal-mass bounds that contain the in-memory metric on adversarial inputs, merges in any
order, state round trips, torch and CUDA batches, and the Metric's update/compute/reset and cross-process sync."""
import pickle
import numpy as np, pandas as pd
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from calibkit.binning import equal_mass_stats, fixed_width_stats
from calibkit.metrics import calib_mse, ece, gmce
from calibkit.stream import (CalibrationStream, Bounded, _CELLS, _Cuts, _Digest, _bit_length, _chunk_digest, _levels,
                             _bounds, _choose_cuts, _digest_stats, _moves, _span)
from calibkit.binning import BinStats, bin_starts, sort_pairs

SLACK = 1e-12   # float64 sums added in another order than the in-memory functions add them


def events(n, seed=0, kind='beta'):
    rng = np.random.default_rng(seed)
    q = rng.beta(5, 2, n)
    y = (rng.random(n) < q ** 1.3).astype(np.uint8)
    if kind == 'sorted': o = np.argsort(q, kind='stable'); q, y = q[o], y[o]
    if kind == 'reversed': o = np.argsort(q, kind='stable')[::-1]; q, y = q[o], y[o]
    if kind == 'ties': q = np.full(n, 0.7)
    if kind == 'two_digits': q = np.round(q, 2)
    if kind == 'ones': q = np.where(rng.random(n) < 0.4, 1.0, q)
    if kind == 'near_one': q = 1 - 10 ** -rng.uniform(3, 9, n)
    if kind == 'float32': q = q.astype(np.float32)
    return q, y


def stream(q, y, batch=997, **kw):
    acc = CalibrationStream(**kw)
    for s in range(0, len(q), batch): acc.update(q[s:s + batch], y[s:s + batch])
    return acc


def within(value, b: Bounded) -> bool:
    return b.lower - SLACK <= value <= b.upper + SLACK


KINDS = ['beta', 'sorted', 'reversed', 'ties', 'two_digits', 'ones', 'near_one', 'float32']


# ---- fixed-width: exact ---------------------------------------------------------------------------------------
@pytest.mark.parametrize('kind', KINDS)
def test_fixed_width_equals_in_memory(kind):
    q, y = events(30_000, 1, kind)
    r = stream(q, y, n_bins=15, binning='fixed_width').compute()
    ref = fixed_width_stats(q, y, n_bins=15)
    np.testing.assert_array_equal(r.stats.n, ref.n)
    np.testing.assert_array_equal(r.stats.sum_correct, ref.sum_correct)
    np.testing.assert_allclose(r.stats.sum_conf, ref.sum_conf, rtol=1e-12)
    assert r.calib_mse.value == pytest.approx(ref.sq_error(), rel=1e-9, abs=1e-15)   # Σq rounded in another order
    assert r.ece.value == pytest.approx(ece(q, y, n_bins=15, binning="fixed_width"), rel=1e-9, abs=1e-15)
    assert r.calib_mse.lower == r.calib_mse.value == r.calib_mse.upper


@pytest.mark.parametrize('kind', ['beta', 'sorted', 'reversed', 'ties'])
def test_fixed_width_merge_equals_one_accumulator(kind):
    q, y = events(20_000, 2, kind)
    one = stream(q, y, n_bins=10, binning='fixed_width')
    parts = np.array_split(np.arange(len(q)), 5)
    accs = [CalibrationStream(10, binning='fixed_width').update(q[p], y[p]) for p in parts]
    merged = accs[3].merge(accs[0]).merge(accs[4].merge(accs[2])).merge(accs[1])
    np.testing.assert_array_equal(merged._n, one._n)
    np.testing.assert_array_equal(merged._sy, one._sy)
    np.testing.assert_allclose(merged._sc, one._sc, rtol=1e-12)
    assert merged.n_events == len(q)


def test_fixed_width_hand_case():
    r = CalibrationStream(2, binning='fixed_width').update([0.2, 0.4, 0.5, 0.9], [0, 1, 1, 1]).compute()
    # bin [0, .5): q .2 .4, y 0 1 -> gap 0.3 - 0.5 = -0.2; bin [.5, 1]: q .5 .9, y 1 1 -> gap 0.7 - 1 = -0.3
    assert r.stats.n.tolist() == [2, 2]
    assert r.calib_mse.value == pytest.approx(0.5 * 0.04 + 0.5 * 0.09)
    assert r.ece.value == pytest.approx(0.5 * 0.2 + 0.5 * 0.3)


# ---- equal-mass: certified bounds -------------------------------------------------------------------------------
@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize('k', [16, 256])
def test_equal_mass_bound_contains_in_memory(kind, k):
    q, y = events(20_000, 3, kind)
    r = stream(q, y, n_bins=10, sketch=k).compute()
    assert r.stats.total == len(q) and r.stats.sum_correct.sum() == y.sum()
    assert within(calib_mse(q, y, n_bins=10), r.calib_mse)
    assert within(ece(q, y, n_bins=10), r.ece)


@pytest.mark.parametrize('kind', ['beta', 'sorted', 'reversed', 'ties', 'two_digits'])
def test_equal_mass_merge_orders_within_bound(kind):
    q, y = events(30_000, 4, kind)
    parts = np.array_split(np.arange(len(q)), 6)
    mk = lambda p: CalibrationStream(10, sketch=64).update(q[p], y[p])
    left = mk(parts[0])
    for p in parts[1:]: left.merge(mk(p))
    right = mk(parts[-1])
    for p in parts[-2::-1]: right = mk(p).merge(right)
    ref_m, ref_e = calib_mse(q, y, n_bins=10), ece(q, y, n_bins=10)
    for acc in (left, right, stream(q, y, n_bins=10, sketch=64)):
        r = acc.compute()
        assert acc.n_events == len(q) and r.stats.total == len(q)
        assert within(ref_m, r.calib_mse) and within(ref_e, r.ece)


@pytest.mark.parametrize('kind', ['beta', 'two_digits', 'ties', 'ones'])
def test_equal_mass_exact_when_sketch_exceeds_events(kind):
    "k > N: t = 0, every cell holds one value, so the bins are the in-memory ones (ties moved to a run's nearer end)."
    q, y = events(5_000, 5, kind)
    r = stream(q, y, n_bins=7, sketch=10_001).compute()
    ref = equal_mass_stats(q, y, n_bins=7)
    ne = r.stats.nonempty()
    np.testing.assert_array_equal(ne.n, ref.n)
    np.testing.assert_array_equal(ne.sum_correct, ref.sum_correct)
    assert r.calib_mse.value == pytest.approx(calib_mse(q, y, n_bins=7), rel=1e-12, abs=1e-15)


def test_bin_size_spec():
    q, y = events(10_000, 6)
    r = stream(q, y, bin_size=1000, sketch=64).compute()
    assert len(r.stats.n) == 10
    assert within(calib_mse(q, y, bin_size=1000), r.calib_mse)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(20, 3000), digits=st.integers(1, 6), n_bins=st.integers(1, 25), k=st.integers(1, 80),
       batch=st.integers(50, 700), seed=st.integers(0, 2**31), a=st.floats(0.2, 5), b=st.floats(0.2, 5))
def test_bound_property(n, digits, n_bins, k, batch, seed, a, b):
    rng = np.random.default_rng(seed)
    q = np.round(rng.beta(a, b, n), digits)
    y = (rng.random(n) < q).astype(np.uint8)
    n_bins = min(n_bins, n)
    r = stream(q, y, batch=batch, n_bins=n_bins, sketch=k).compute()
    assert within(calib_mse(q, y, n_bins=n_bins), r.calib_mse)
    assert within(ece(q, y, n_bins=n_bins), r.ece)


def test_bound_formula_hand_case():
    "Two bins of 4 events (D = 1 each); at the cut, 0 or 1 event of a cell of q = 0.75 (4 events, 2 correct) may cross."
    st_ = BinStats(n=np.array([4, 4]), sum_conf=np.array([3.0, 3.0]), sum_correct=np.array([2.0, 2.0]),
                   lo=np.zeros(2), hi=np.ones(2))
    cell = _Digest(np.array([2**62]), np.array([4]), np.array([3.0]), np.array([2]), np.array([0.75]), np.array([0.75]))
    mv = _moves(cell, _Cuts(np.array([0]), np.array([0]), np.array([1]), np.array([1])))
    assert [a.tolist() for a in mv] == [[[0, 1, 1, 1]], [[0, -0.25, -0.25, -0.25]], [[0, 0.75, 0.75, 0.75]]]
    m, e = _bounds(st_, *mv)
    tol = 2 * 2.0**-53 * 4 * 6 / 8
    rest = 2 * ((2 * 0.25 * 0.75 + 0.25**2) * 1 + 0.75**2) / 3     # equal gaps: the first order is 0
    assert m.value == pytest.approx(0.0625) and m.upper == pytest.approx(0.0625 + rest / 8 + 2 * tol, abs=1e-15)
    assert e.lower == pytest.approx(0.25 - tol, abs=1e-16) and e.upper == pytest.approx(0.25 + tol, abs=1e-16)
    exact = [((1 + dy) ** 2 / (4 + mu) + (1 - dy) ** 2 / (4 - mu)) / 8 for mu, dy in [(0, 0), (1, -0.25), (1, 0.75)]]
    assert all(m.lower <= v <= m.upper for v in exact)
    # gaps that differ: the first order is 2(g0 − g1)·δ − (g0² − g1²)·μ at the extreme points
    st2 = BinStats(n=np.array([4, 4]), sum_conf=np.array([3.0, 3.0]), sum_correct=np.array([1.0, 3.0]),
                   lo=np.zeros(2), hi=np.ones(2))
    m2, e2 = _bounds(st2, *mv)
    g0, g1 = 0.5, 0.0
    first = [2 * (g0 - g1) * dl - (g0**2 - g1**2) * mu for mu, dl in [(0, 0), (1, -0.25), (1, 0.75)]]
    rest2 = ((2 * 0.5 * 0.75 + 0.25) * 1 + 0.75**2) / 3 + (0.75**2) / 3
    assert m2.upper == pytest.approx(st2.sq_error() + (max(first) + rest2) / 8 + 2 * tol, abs=1e-15)
    assert st2.sq_error() + (min(first) - rest2) / 8 < 0 and m2.lower == 0.0        # clipped at 0
    assert e2.lower == pytest.approx(2 / 8 - tol, abs=1e-16)          # at least |Σ D| / N
    # a bin that may empty is bounded crudely: D²/n in [0, n + ν]
    m3, _ = _bounds(st_, np.array([[0, 4, 4, 4]]), np.array([[0, -1, -1, -1]]), np.array([[0, 1, 1, 1]]))
    assert m3.upper == pytest.approx(min(1.0, 0.0625 + (4 + 4 + 4 + 4 - 0.5) / 8), abs=1e-12)


def test_moves_contain_the_exact_crossings():
    "At every cut, what the exact bins move across it (count, Σ(q − y)) lies in the feasible set `_moves` describes."
    for kind, k, seed in [('beta', 64, 1), ('two_digits', 64, 2), ('near_one', 32, 3), ('reversed', 16, 4), ('sorted', 8, 5)]:
        q, y = events(12_000, seed, kind)
        acc = stream(q, y, batch=1500, n_bins=10, sketch=k)
        d = acc._digests[0]
        cuts = _choose_cuts(d, bin_starts(len(q), n_bins=10))
        st_, ref = _digest_stats(d, cuts), equal_mass_stats(q, y, n_bins=10)
        assert len(ref.n) == 10                                        # no run of ties longer than a bin
        mu_true = np.cumsum(ref.n)[:-1] - np.cumsum(st_.n)[:-1]
        d_true = np.cumsum(ref.sum_conf - ref.sum_correct)[:-1] - np.cumsum(st_.sum_conf - st_.sum_correct)[:-1]
        mu, dlo, dhi = _moves(d, cuts)
        assert (np.abs(mu_true) <= cuts.moved).all() and (np.sign(mu_true) * np.sign(mu[:, 1]) >= 0).all(), kind
        for j in range(9):
            lo_at = np.interp(mu_true[j], *np.unique(np.c_[mu[j], dlo[j]], axis=0).T) if np.ptp(mu[j]) else dlo[j, 0]
            hi_at = np.interp(mu_true[j], *np.unique(np.c_[mu[j], dhi[j]], axis=0).T) if np.ptp(mu[j]) else dhi[j, 0]
            assert lo_at - 1e-9 <= d_true[j] <= hi_at + 1e-9, (kind, j)


def test_certificate_width_targets_after_merges():
    "Two streams of 2·10^5 events in 50 shards merged into one (default k): ±5% (±1e-5 below 2e-4), the truth inside."
    rng = np.random.default_rng(11)
    q = np.sqrt(rng.random(200_000)) * (0.4 + 0.6 * rng.random(200_000))
    u = rng.random(200_000)
    for y in ((u < q ** 1.3).astype(np.uint8), (u < 0.99 * q).astype(np.uint8)):
        total = CalibrationStream(10)
        for p in np.array_split(np.arange(len(q)), 50): total.merge(CalibrationStream(10).update(q[p], y[p]))
        r = total.compute()
        for b, ref in ((r.calib_mse, calib_mse(q, y, n_bins=10)), (r.ece, ece(q, y, n_bins=10))):
            assert b.lower <= ref <= b.upper
            assert max(b.upper - b.value, b.value - b.lower) <= (1e-5 if b.value < 2e-4 else 0.05 * b.value)
        assert total.nbytes <= 2 * 2**20


def test_digest_invariants_and_constant_memory():
    q, y = events(400_000, 7)
    k = 512
    sizes = []
    acc = CalibrationStream(10, sketch=k)
    for s in range(0, len(q), 20_000):
        acc.update(q[s:s + 20_000], y[s:s + 20_000])
        sizes.append(len(acc._digests[0].h))
    d = acc._digests[0]
    start, end = _span(d.h)
    assert (start[1:] >= end[:-1]).all()                              # a partition, sorted by value
    assert max(sizes) <= _CELLS * k and max(sizes[5:]) <= 1.5 * min(sizes[5:])   # bounded, flat in N
    key, lev = d.lo.view(np.int64), _levels(d.h)
    assert ((key >> lev) == d.h - (np.int64(1) << (62 - lev))).all()  # every cell's events lie in its key range
    assert ((d.hi.view(np.int64) >> lev) == (key >> lev)).all()
    cuts = _choose_cuts(d, bin_starts(len(q), n_bins=10))
    T = np.searchsorted(np.sort(q), d.lo[cuts.index], 'left')
    assert (T == cuts.below).all()                                    # the rank of a cut is exact
    held = d.n[np.where(cuts.target >= cuts.below, cuts.index, cuts.index - 1)]
    assert (2 * np.abs(cuts.below - cuts.target) <= held).all()       # within half of the cell holding the target
    drift = CalibrationStream(10, sketch=k)                           # a drifting stream: the cap holds the memory
    for s in range(0, len(q), 20_000): drift.update(np.sort(q)[::-1][s:s + 20_000], y[s:s + 20_000])
    assert len(drift._digests[0].h) <= _CELLS * k


def test_bit_length_exact():
    xs = np.r_[0, (np.int64(1) << np.arange(62)) - 1, np.int64(1) << np.arange(62),
               np.random.default_rng(0).integers(0, 2**62, 5000)]
    assert _bit_length(xs).tolist() == [int(v).bit_length() for v in xs]


def test_chunk_digest_levels_by_brute_force():
    q, y = events(2000, 8, 'two_digits')
    cs, ys = sort_pairs(q, y)
    k = 40
    t = len(q) // k
    d = _chunk_digest(cs, ys, k)
    own = np.repeat(_levels(d.h), d.n)
    key = cs.view(np.int64)
    heavy = lambda i, L: np.count_nonzero((key >> L) == (key[i] >> L)) > t
    for i in range(0, len(q), 13):
        if own[i] > 0: assert not heavy(i, own[i])
        if own[i] < 62: assert heavy(i, own[i] + 1) or own[i] == 0 and not heavy(i, 0) and heavy(i, 1)


# ---- groups -----------------------------------------------------------------------------------------------------
def test_groups_gmce_within_bounds():
    q, y = events(30_000, 9)
    lab = np.random.default_rng(9).integers(0, 4, len(q))
    lab[lab == 3] = 2                                                # group 3 has no events: left out
    acc = CalibrationStream(10, sketch=64, n_groups=4)
    for s in range(0, len(q), 4000): acc.update(q[s:s + 4000], y[s:s + 4000], lab[s:s + 4000])
    r = acc.compute()
    ref = gmce(pd.DataFrame(dict(conf=q, correct=y, label=lab)), {0: 0, 1: 1, 2: 2}, n_bins=10)
    assert r.groups.group.tolist() == [0, 1, 2]
    assert r.groups.n_events.tolist() == ref.n_events.tolist()
    assert ((r.groups.gmce_lower - SLACK <= ref.gmce) & (ref.gmce <= r.groups.gmce_upper + SLACK)).all()
    assert within(calib_mse(q, y, n_bins=10), r.calib_mse)            # pooled: the merged group digests
    fw = CalibrationStream(10, binning='fixed_width', n_groups=4).update(q, y, lab).compute()
    for g in range(3):
        assert fw.groups.calib_mse[g] == pytest.approx(fixed_width_stats(q[lab == g], y[lab == g], n_bins=10).sq_error())


def test_validation_messages():
    with pytest.raises(ValueError, match='conf: 1 of 2 values are NaN'): CalibrationStream().update([0.1, np.nan], [0, 1])
    with pytest.raises(ValueError, match='correct: 1 of 2 values are not 0 or 1'): CalibrationStream().update([0.1, 0.2], [0, 3])
    with pytest.raises(ValueError, match='label is required'): CalibrationStream(n_groups=2).update([0.1], [1])
    with pytest.raises(ValueError, match='label: 1 of 2 values are not group ids 0..1'):
        CalibrationStream(n_groups=2).update([0.1, 0.2], [1, 0], [0, 2])
    with pytest.raises(ValueError, match='different settings'):
        CalibrationStream(10).merge(CalibrationStream(10, sketch=8))
    with pytest.raises(ValueError, match='no events'): CalibrationStream().compute()
    with pytest.raises(ValueError, match='n_bins must be an integer in \\[1, 3\\]'):
        CalibrationStream(10).update([0.1, 0.2, 0.3], [0, 1, 1]).compute()


def test_state_round_trips():
    q, y = events(20_000, 10)
    for kw in (dict(binning='fixed_width'), dict(sketch=128), dict(sketch=128, n_groups=2)):
        acc = CalibrationStream(10, **kw)
        acc.update(q, y, *( [np.arange(len(q)) % 2] if 'n_groups' in kw else []))
        for back in (pickle.loads(pickle.dumps(acc)), CalibrationStream.from_state_dict(acc.state_dict()),
                     CalibrationStream.from_state_dict(pickle.loads(pickle.dumps(acc.state_dict())))):
            a, b = back.compute(), acc.compute()
            assert (a.calib_mse, a.ece) == (b.calib_mse, b.ece) and back.n_events == acc.n_events


# ---- torch ------------------------------------------------------------------------------------------------------
torch = pytest.importorskip('torch')


@pytest.mark.parametrize('binning', ['fixed_width', 'equal_mass'])
def test_torch_cpu_equals_numpy(binning):
    q, y = events(20_000, 11)
    a = CalibrationStream(10, binning=binning, sketch=64)
    b = CalibrationStream(10, binning=binning, sketch=64)
    for s in range(0, len(q), 3000):
        a.update(torch.tensor(q[s:s + 3000]), torch.tensor(y[s:s + 3000]))
        b.update(q[s:s + 3000], y[s:s + 3000])
    ra, rb = a.compute(), b.compute()
    np.testing.assert_array_equal(ra.stats.n, rb.stats.n)
    assert ra.calib_mse.value == pytest.approx(rb.calib_mse.value, rel=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='no CUDA device on this machine (the CUDA path runs where one exists)')
@pytest.mark.parametrize('binning', ['fixed_width', 'equal_mass'])
def test_cuda_batches(binning):
    q, y = events(50_000, 12)
    tq, ty = torch.tensor(q, device='cuda'), torch.tensor(y, device='cuda')
    r = CalibrationStream(10, binning=binning, sketch=64).update(tq, ty).compute()
    r0 = CalibrationStream(10, binning=binning, sketch=64).update(q, y).compute()
    np.testing.assert_array_equal(r.stats.n, r0.stats.n)
    assert r.calib_mse.value == pytest.approx(r0.calib_mse.value, rel=1e-9)
    with pytest.raises(ValueError, match='outside \\[0, 1\\]'):
        CalibrationStream(binning=binning).update(tq * 2, ty)


torchmetrics = pytest.importorskip('torchmetrics')
from calibkit.torchmetric import StreamMetric   # noqa: E402


@pytest.mark.parametrize('binning', ['fixed_width', 'equal_mass'])
def test_metric_update_compute_reset(binning):
    q, y = events(30_000, 13)
    m = StreamMetric(10, binning=binning, sketch=64)
    for s in range(0, len(q), 5000): m.update(torch.tensor(q[s:s + 5000]), torch.tensor(y[s:s + 5000]))
    out = m.compute()
    ref = stream(q, y, batch=5000, n_bins=10, binning=binning, sketch=64).compute()
    assert float(out['calib_mse']) == pytest.approx(ref.calib_mse.value, rel=1e-12)
    assert (float(out['calib_mse_lower']), float(out['calib_mse_upper'])) == pytest.approx(ref.calib_mse[1:], rel=1e-12)
    if binning == 'fixed_width':
        assert float(out['calib_mse']) == pytest.approx(fixed_width_stats(q, y, n_bins=10).sq_error(), rel=1e-12)
    else:
        assert float(out['calib_mse_lower']) - SLACK <= calib_mse(q, y, n_bins=10) <= float(out['calib_mse_upper']) + SLACK
    m.reset()
    m.update(torch.tensor(q[:100]), torch.tensor(y[:100]))
    assert m.stream().n_events == 100


@pytest.mark.parametrize('binning', ['fixed_width', 'equal_mass'])
def test_metric_merge_state(binning):
    q, y = events(30_000, 14)
    a, b = StreamMetric(10, binning=binning, sketch=64), StreamMetric(10, binning=binning, sketch=64)
    a.update(torch.tensor(q[:11_000]), torch.tensor(y[:11_000])); b.update(torch.tensor(q[11_000:]), torch.tensor(y[11_000:]))
    a.merge_state(b)
    out = a.compute()
    assert a.stream().n_events == len(q)
    assert float(out['calib_mse_lower']) - SLACK <= (calib_mse(q, y, n_bins=10) if binning == 'equal_mass' else
                                                     fixed_width_stats(q, y, n_bins=10).sq_error()) <= float(out['calib_mse_upper']) + SLACK


def _ddp_worker(rank, world, port, out):
    import torch.distributed as dist
    dist.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{port}', rank=rank, world_size=world)
    try:
        q, y = events(20_000, 15)
        part = np.array_split(np.arange(len(q)), world)[rank]
        res = {}
        for binning in ('fixed_width', 'equal_mass'):
            m = StreamMetric(10, binning=binning, sketch=64)
            for s in range(0, len(part), 3000):
                ix = part[s:s + 3000]
                m.update(torch.tensor(q[ix]), torch.tensor(y[ix]))
            res[binning] = {k: float(v) for k, v in m.compute().items()}   # compute syncs both processes' states
        out.put((rank, res))
    finally:
        dist.destroy_process_group()


def test_metric_syncs_across_two_processes():
    "Two processes (gloo on 127.0.0.1), each with half the events: after the sync both see all of them."
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]
    ctx = mp.get_context('spawn')
    out = ctx.Queue()
    procs = [ctx.Process(target=_ddp_worker, args=(r, 2, port, out)) for r in range(2)]
    for p in procs: p.start()
    res = dict(out.get(timeout=300) for _ in procs)
    for p in procs: p.join(60)
    q, y = events(20_000, 15)
    refs = dict(equal_mass=calib_mse(q, y, n_bins=10), fixed_width=fixed_width_stats(q, y, n_bins=10).sq_error())
    one = {b: stream(q, y, batch=3000, n_bins=10, binning=b, sketch=64).compute() for b in refs}
    for binning, ref in refs.items():
        for r in res.values():
            assert r[binning]['calib_mse_lower'] - SLACK <= ref <= r[binning]['calib_mse_upper'] + SLACK
            assert r[binning]['calib_mse'] == pytest.approx(one[binning].calib_mse.value, rel=0.2)
            if binning == 'fixed_width': assert r[binning]['calib_mse'] == pytest.approx(ref, rel=1e-12)
        assert res[0][binning] == res[1][binning]                   # both processes see the merged state


@pytest.mark.parametrize('digits,k', [(None, 64), (2, 16), (None, 5000), (1, 3000)])
def test_device_digest_equals_host_digest(digits, k):
    from calibkit.stream import _chunk_digest_torch, _combine
    rng = np.random.default_rng(16)
    q = rng.beta(5, 2, 20_000)
    q = np.round(q, digits) if digits else q
    y = (rng.random(len(q)) < q).astype(np.uint8)
    a = _combine(_chunk_digest(*sort_pairs(q, y), k))
    b = _combine(_chunk_digest_torch(torch.tensor(q), torch.tensor(y), k))
    for f in ('h', 'n', 'sum_correct', 'lo', 'hi'): np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    np.testing.assert_allclose(a.sum_conf, b.sum_conf, rtol=1e-12)
