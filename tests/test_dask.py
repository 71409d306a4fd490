"""calibkit.dask against the in-memory functions, on a LocalCluster of 2 worker processes (1 thread each)."""
import logging, subprocess, sys, warnings
import numpy as np, pandas as pd, pytest
from hypothesis import given, settings, strategies as st

dask = pytest.importorskip('dask')
distributed = pytest.importorskip('dask.distributed')
import dask.array as da, dask.dataframe as dd
import calibkit
from calibkit import binning as B, metrics as M, dask as ckd

N, CHUNK = 120_000, 13_000      # 10 partitions, the last one short; bins never align with partitions


@pytest.fixture(scope='module')
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope='module')
def data():
    rng = np.random.default_rng(3)
    q = rng.beta(2, 5, N)
    y = (rng.random(N) < q ** 1.3).astype(np.uint8)
    return q, y, da.from_array(q, chunks=CHUNK), da.from_array(y, chunks=CHUNK)


def test_fixed_width_is_exact(client, data):
    q, y, dq, dy = data
    got, ref = ckd.fixed_width_stats(dq, dy, n_bins=12, moments=True), B.fixed_width_stats(q, y, n_bins=12, moments=True)
    np.testing.assert_array_equal(got.n, ref.n)
    np.testing.assert_array_equal(got.sum_correct, ref.sum_correct)
    np.testing.assert_array_equal(got.lo, ref.lo)
    for f in ('sum_conf', 'sum_conf2', 'sum_conf_correct'):
        np.testing.assert_allclose(getattr(got, f), getattr(ref, f), rtol=1e-12)
    pd.testing.assert_frame_equal(B.bin_table(ckd.fixed_width_stats(dq, dy, n_bins=7)), B.fixed_width_bins(q, y, n_bins=7), rtol=1e-12)
    for norm in ('l1', 'l2', 'max'):
        assert M.ece(ckd.fixed_width_stats(dq, dy, n_bins=9), norm=norm) == pytest.approx(
            M.ece(q, y, n_bins=9, norm=norm, binning='fixed_width'), rel=1e-12)


def inside(b, exact):
    "The certified interval `b` (a calibkit.stream.Bounded) contains the in-memory value."
    return b.lower <= exact <= b.upper


def test_equal_mass_within_certified_bound(client, data):
    q, y, dq, dy = data
    for spec in (dict(n_bins=10), dict(n_bins=7), dict(bin_size=3000)):
        em = ckd.equal_mass(dq, dy, **spec, sketch=256)      # far smaller than the default: approximate bins
        assert em.stats.total == N and em.calib_mse.value == em.stats.sq_error()
        assert inside(em.calib_mse, M.calib_mse(q, y, **spec)) and inside(em.ece, M.ece(q, y, **spec))
        assert 0 < em.calib_mse.half_width < (0.05 if spec == dict(n_bins=10) else 1) * em.calib_mse.value
        # the rank of each start is exact: the in-memory count below each cut
        starts = B.bin_starts(N, **spec)[1:]
        np.testing.assert_array_equal(np.cumsum(em.stats.n)[:-1] - starts, em.rank_error)
        # within half a cell (a cell holds about N/k events; merges may add absorbed cells), the stated bound 2R
        assert 0 < np.abs(em.rank_error).max() <= N / 256
        np.testing.assert_array_equal(em.rank_bound, 2 * np.abs(em.rank_error))      # no ties here
    # the default k (2^14) is below N: not exact, but within its certificate
    em = ckd.equal_mass(dq, dy, n_bins=10)
    # a cell holds about N/k events (a merge may add the cells it absorbs): the error is about N/2k
    assert inside(em.ece, M.ece(q, y, n_bins=10)) and np.abs(em.rank_error).max() <= 2 * N / ckd.SKETCH


def test_sketch_above_the_events_is_exact(client, data):
    q, y, dq, dy = data
    em, ref = ckd.equal_mass(dq, dy, n_bins=10, sketch=N + 1, moments=True), B.equal_mass_stats(q, y, n_bins=10, moments=True)
    got = em.stats
    for f in ('n', 'sum_correct', 'lo', 'hi'): np.testing.assert_array_equal(getattr(got, f), getattr(ref, f))
    for f in ('sum_conf', 'sum_conf2', 'sum_conf_correct'):
        np.testing.assert_allclose(getattr(got, f), getattr(ref, f), rtol=1e-12)
    assert not em.rank_error.any() and not em.rank_bound.any()
    assert em.calib_mse.half_width < 1e-11 and inside(em.calib_mse, M.calib_mse(q, y, n_bins=10))


def test_one_pass_and_the_moments_pass_give_the_same_bins(client, data):
    "With moments a second pass sums the bins the digest cut: the same counts, Σy, ranges, and Σq to rounding."
    q, y, dq, dy = data
    one, two = ckd.equal_mass(dq, dy, n_bins=10, sketch=512), ckd.equal_mass(dq, dy, n_bins=10, sketch=512, moments=True)
    assert one.stats.sum_conf2 is None and two.stats.sum_conf2 is not None
    for f in ('n', 'sum_correct', 'lo', 'hi'): np.testing.assert_array_equal(getattr(one.stats, f), getattr(two.stats, f))
    np.testing.assert_allclose(one.stats.sum_conf, two.stats.sum_conf, rtol=1e-12)
    assert one.calib_mse == two.calib_mse and (one.rank_error == two.rank_error).all()


def test_frame_series_and_array_inputs_agree(client, data):
    q, y, dq, dy = data
    frame = dd.from_pandas(pd.DataFrame({'conf': q, 'correct': y}), chunksize=CHUNK)
    bins = lambda *x: B.bin_table(ckd.equal_mass_stats(*x, n_bins=10))
    a = bins(dq, dy)
    pd.testing.assert_frame_equal(bins(frame), a)
    pd.testing.assert_frame_equal(bins(frame['conf'], frame['correct']), a)
    pd.testing.assert_frame_equal(bins(dq, y), a)          # numpy outcomes, rechunked
    assert M.smce(ckd.equal_mass_stats(frame, n_bins=10)) == pytest.approx(np.sqrt(M.calib_mse(ckd.equal_mass_stats(dq, dy, n_bins=10))), rel=1e-14)


def test_float32_stays_float32_and_ties_stay_within_bound(client, data):
    q, y, _, dy = data
    c32 = np.round(q, 3).astype(np.float32)
    c, _, bad = ckd._clean(c32, y)
    assert c.dtype == np.float32 and not bad[2:].any()
    em = ckd.equal_mass(da.from_array(c32, chunks=CHUNK), dy, bin_size=1000)
    assert np.abs(em.rank_error).max() > 0                     # ties at edges are not split...
    assert inside(em.calib_mse, M.calib_mse(c32, y, bin_size=1000))   # ...and the certificate covers it
    assert inside(em.ece, M.ece(c32, y, bin_size=1000))


def test_validation_counts_all_partitions(client, data):
    q, y, dq, dy = data
    bad = q.copy(); bad[[0, 40_000, N - 1]] = np.nan                       # three partitions
    with pytest.raises(ValueError, match=f'conf: 3 of {N} values are NaN'):
        ckd.equal_mass_stats(da.from_array(bad, chunks=CHUNK), dy, n_bins=10)
    yb = y.astype(float); yb[[1, 70_000]] = .5
    with pytest.raises(ValueError, match=f'correct: 2 of {N} values are not 0 or 1'):
        ckd.fixed_width_stats(dq, da.from_array(yb, chunks=CHUNK))
    with pytest.raises(TypeError, match='in-memory data'):
        ckd.equal_mass_stats(q, y, n_bins=10)
    conf = dd.from_pandas(pd.Series(q), npartitions=4)
    correct = dd.from_pandas(pd.Series(y), npartitions=4).repartition(divisions=[0, 10, 50_000, 90_000, N - 1])
    with pytest.raises(ValueError, match='partitioned differently: 3 partition'):
        ckd.equal_mass_stats(conf, correct, n_bins=10)
    with pytest.raises(TypeError, match='use calibkit.dask'):
        M.ece(conf, correct)                                   # the core never dispatches to dask


def test_gmce_two_routes_and_bound(client, data):
    q, y, _, _ = data
    lab = np.random.default_rng(1).integers(0, 9, N)
    frame = pd.DataFrame({'label': lab, 'conf': q, 'correct': y})
    ev = dd.from_pandas(frame, chunksize=CHUNK)
    groups = {k: ('a', 'b', 'c')[k % 3] for k in range(9)}
    got, ref = ckd.gmce(ev, groups), M.gmce(frame, groups)
    pd.testing.assert_frame_equal(got.drop(columns='gmce'), ref.drop(columns='gmce'))
    for i, g in enumerate('abc'):
        sub = ev[ev.label % 3 == i]
        em = ckd.equal_mass(sub, n_bins=10)
        assert got.gmce[i] == pytest.approx(M.smce(em.stats), rel=1e-14)
        assert abs(got.gmce[i] - ref.gmce[i]) <= np.sqrt(em.calib_mse.half_width)     # |√a − √b| ≤ √|a − b|


def test_recalibration_is_lazy_and_sample_reproducible(client, data):
    q, y, dq, dy = data
    from calibkit.recalibrators import HistogramBinning
    h = ckd.histogram_binning(dq, dy, n_bins=10)
    st = ckd.equal_mass_stats(dq, dy, n_bins=10)
    np.testing.assert_array_equal(h.values_, st.acc)
    np.testing.assert_array_equal(h.table().n, st.n)
    out = ckd.transform(h, dq)
    assert isinstance(out, da.Array)
    np.testing.assert_array_equal(out.compute(), h.transform(q))
    # each fit event gets its own bin's accuracy, so the mean output is the accuracy
    assert out.mean().compute() == pytest.approx(y.mean(), rel=1e-12)
    exact, ref = ckd.histogram_binning(dq, dy, n_bins=10, sketch=N + 1), HistogramBinning(10).fit(q, y)
    for f in ('edges_', 'counts_', 'values_'): np.testing.assert_array_equal(getattr(exact, f), getattr(ref, f))
    c1, y1 = ckd.sample(dq, dy, size=7000, seed=5)
    with dask.config.set(scheduler='sync'):
        c2, y2 = ckd.sample(dq, dy, size=7000, seed=5)
    np.testing.assert_array_equal(c1, c2); np.testing.assert_array_equal(y1, y2)
    assert len(c1) == 7000 and len(np.unique(c1)) == 7000 and np.isin(c1, q).all()
    idx = pd.Index(q).get_indexer(c1)
    np.testing.assert_array_equal(y[idx], y1)                   # outcomes travel with their confidences


def test_interval_normal_only(client, data):
    q, y, dq, dy = data
    iv, ref = M.calib_mse_interval(ckd.equal_mass_stats(dq, dy, n_bins=10, sketch=N + 1)), M.calib_mse_interval(q, y, n_bins=10)
    assert iv.estimate == pytest.approx(ref.estimate, rel=1e-12)
    assert iv.hi - iv.lo == pytest.approx(ref.hi - ref.lo, rel=.05)
    with pytest.raises(TypeError, match="use method='normal'"):
        M.calib_mse_interval(ckd.equal_mass_stats(dq, dy, n_bins=10), method='bootstrap')
    with pytest.raises(TypeError, match='use calibkit.dask'):
        M.calib_mse_interval(dq, dy, n_bins=10, method='bootstrap')


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.integers(1, 60), st.integers(1, 12), st.integers(1, 600), st.integers(0, 2**32 - 1),
       st.sampled_from([2, 3, None]))
def test_bound_holds_on_random_data(n, chunk, n_bins, sketch, seed, digits):
    "Ties (rounded confidences), tiny partitions and sketches: the certified bound always holds."
    rng = np.random.default_rng(seed)
    q = rng.random(n)
    if digits: q = np.round(q, digits)
    y = (rng.random(n) < q).astype(np.uint8)
    n_bins = min(n_bins, n)
    with dask.config.set(scheduler='sync'), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        em = ckd.equal_mass(da.from_array(q, chunks=chunk), da.from_array(y, chunks=chunk), n_bins=n_bins, sketch=sketch)
    st_ = em.stats
    assert st_.total == n and st_.sum_correct.sum() == y.sum()
    assert inside(em.calib_mse, M.calib_mse(q, y, n_bins=n_bins)) and inside(em.ece, M.ece(q, y, n_bins=n_bins))
    assert (em.rank_bound <= 2 * np.abs(em.rank_error)).all()
    if sketch > n and digits is None:                           # every cell one value, no ties: the in-memory bins
        np.testing.assert_array_equal(st_.n, B.equal_mass_stats(q, y, n_bins=n_bins).n)
        assert not em.rank_bound.any() and not em.rank_error.any()


def test_importing_calibkit_does_not_import_dask():
    code = 'import sys, calibkit, calibkit.metrics, calibkit.binning; print("dask" in sys.modules)'
    assert subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip() == 'False'


def test_public_functions_take_dask_binstats(client, data):
    "The top-level metrics take the BinStats calibkit.dask builds: same values as in memory; dask collections themselves are refused."
    q, y, dq, dy = data
    fw = ckd.fixed_width_stats(dq, dy, n_bins=10)
    pd.testing.assert_frame_equal(calibkit.binning.bin_table(fw), calibkit.fixed_width_bins(q, y), rtol=1e-12)
    for norm in ('l1', 'l2', 'max'):
        got, ref = calibkit.ece_interval(fw, norm=norm), calibkit.ece_interval(q, y, norm=norm, binning='fixed_width')
        assert got == pytest.approx(ref, rel=1e-9)
    em = ckd.equal_mass(dq, dy, n_bins=10)
    st, bound = em.stats, em.calib_mse.half_width
    assert abs(calibkit.calib_mse(st) - calibkit.calib_mse(q, y, n_bins=10)) <= bound + 1e-15   # + summation order
    iv, ref = calibkit.calib_mse_interval(st, debias=True), calibkit.calib_mse_interval(q, y, n_bins=10, debias=True)
    assert iv.estimate == pytest.approx(ref.estimate, abs=bound + 1e-15) and iv.hi - iv.lo == pytest.approx(ref.hi - ref.lo, rel=0.2)
    b = calibkit.brier(ckd.equal_mass_stats(dq, dy, n_bins=10, moments=True))
    assert b.brier == pytest.approx(calibkit.brier(q, y).brier, rel=1e-12)
    for f in (calibkit.fixed_width_bins, calibkit.calib_mse, calibkit.brier):
        with pytest.raises(TypeError, match='use calibkit.dask'):
            f(dq, dy)
