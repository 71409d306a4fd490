"""Calibration tests and consistency bands: agreement with MAPIE, hand cases, an independent slow route, row-order
independence, uniform p-values under calibration, power against the thesis' miscalibrated forecaster, bad input."""
import numpy as np, pandas as pd
import pytest
from scipy import stats
from hypothesis import given, settings, strategies as st
from mapie.metrics import calibration as mapie
from calibkit.binning import bin_stats
from calibkit.metrics import calib_mse
from calibkit.significance import (Significance, brownian_max_abs_sf, brownian_range_sf, calib_mse_test,
                                   consistency_bands, cumulative_differences, ecce_mad_test, ecce_r_test,
                                   spiegelhalter_test)
from calibkit.studies import synthetic

# each test as f(conf, correct, s); the resampling test draws with its own seed per data set (one stream shared by
# all data sets would make their p-values dependent, and a uniformity check over them meaningless)
TESTS = [lambda c, y, s: spiegelhalter_test(c, y), lambda c, y, s: ecce_mad_test(c, y), lambda c, y, s: ecce_r_test(c, y),
         lambda c, y, s: calib_mse_test(c, y, n_samples=99, seed=10**6 + s)]


def sample(seed, n, a, b, power):
    "Continuous confidences (no ties) and outcomes y ~ Bernoulli(q**power): power 1 calibrated."
    rng = np.random.default_rng(seed)
    q = rng.beta(a, b, n)
    return q, (rng.random(n) < q ** power).astype(np.uint8)


CASES = [(0, 50, 2, 2, 1.0), (1, 300, 5, 1.2, 2.0), (2, 2000, 1, 1, 0.7), (3, 10000, 2, 5, 1.0), (4, 20, .5, .5, 1.3)]


@pytest.mark.parametrize('case', CASES)
def test_spiegelhalter_equals_mapie(case):
    q, y = sample(*case)
    r = spiegelhalter_test(q, y, alternative='greater')
    assert r.statistic == pytest.approx(mapie.spiegelhalter_statistic(y, q), rel=1e-12, abs=1e-12)
    assert r.p_value == pytest.approx(mapie.spiegelhalter_p_value(y, q), rel=1e-9, abs=1e-15)
    two = spiegelhalter_test(q, y)
    assert two.statistic == r.statistic and two.p_value == pytest.approx(2 * min(r.p_value, 1 - r.p_value), rel=1e-9)


@pytest.mark.parametrize('case', CASES)
def test_ecce_equals_mapie(case):
    q, y = sample(*case)
    # MAPIE jitters confidences by a relative 1e-8 (seeded) before sorting: equal to that precision without ties
    assert ecce_mad_test(q, y).statistic == pytest.approx(mapie.kolmogorov_smirnov_statistic(y, q), rel=1e-6)
    assert ecce_mad_test(q, y).p_value == pytest.approx(mapie.kolmogorov_smirnov_p_value(y, q), rel=1e-5, abs=1e-9)
    cd = mapie.cumulative_differences(y, q)
    if cd.min() < 0 < cd.max():    # MAPIE's range starts at C_1, ours at C_0 = 0: equal when the path crosses 0
        assert ecce_r_test(q, y).statistic == pytest.approx(mapie.kuiper_statistic(y, q), rel=1e-6)
        assert ecce_r_test(q, y).p_value == pytest.approx(mapie.kuiper_p_value(y, q), rel=1e-5, abs=1e-9)
    else:
        assert ecce_r_test(q, y).statistic >= mapie.kuiper_statistic(y, q) * (1 - 1e-6)
    np.testing.assert_allclose(cumulative_differences(q, y).cum_diff, cd, rtol=0, atol=1e-8)
    assert cumulative_differences(q, y).attrs['scale'] == pytest.approx(mapie.length_scale(q), rel=1e-12)


def test_ecce_range_includes_the_origin():
    # every C_k > 0: MAPIE's range (from C_1) is C_2 - C_1, ours (from C_0 = 0) is max C_k
    q, y = np.array([0.2, 0.4]), np.array([1, 1])
    sigma = np.sqrt(0.16 + 0.24) / 2
    assert ecce_r_test(q, y).statistic == pytest.approx((0.8 + 0.6) / 2 / sigma, rel=1e-14)
    assert mapie.kuiper_statistic(y, q) == pytest.approx(0.6 / 2 / sigma, rel=1e-6)


@pytest.mark.parametrize('x', [0.2, 0.5, 0.9, 1.0, 1.2, 1.5, 2.0, 3.0, 4.5])
def test_brownian_tails_equal_mapie_cdfs(x):
    # MAPIE subtracts its CDF from 1, exact to ~1e-13 absolute; our tails keep relative precision (next test)
    assert brownian_max_abs_sf(x) == pytest.approx(1 - mapie.kolmogorov_smirnov_cdf(x), rel=1e-9, abs=1e-12)
    assert brownian_range_sf(x) == pytest.approx(1 - mapie.kuiper_cdf(x), rel=1e-9, abs=1e-12)


def test_brownian_tails_monotone_and_bounded():
    x = np.linspace(0, 12, 2401)
    for sf in (brownian_max_abs_sf, brownian_range_sf):
        v = np.array([sf(t) for t in x])
        assert v[0] == 1 and (np.diff(v) <= 1e-15).all() and (v > 0).all() and (v <= 1).all()
    assert brownian_max_abs_sf(10) == pytest.approx(4 * stats.norm.sf(10), rel=1e-12)   # tails: 4Φ̄, 8Φ̄
    assert brownian_range_sf(10) == pytest.approx(8 * stats.norm.sf(10), rel=1e-12)


def test_spiegelhalter_hand_case():
    r = spiegelhalter_test(pd.DataFrame({'conf': [0.2, 0.7, 0.9], 'correct': [0, 1, 1]}))
    z = -0.32 / np.sqrt(0.1488)
    assert isinstance(r, Significance) and r.statistic == pytest.approx(z, rel=1e-13)
    assert r.p_value == pytest.approx(2 * stats.norm.cdf(z), rel=1e-12) and 'calibrated' in r.null


def test_calib_mse_test_equals_a_loop_over_resamples():
    "The vectorised resampling equals a plain loop: one resample at a time, the library's CalibMSE, same draws."
    q, y = sample(7, 200, 2, 2, 1.4)
    for binning, kw in [('equal_mass', dict(n_bins=7)), ('fixed_width', dict(n_bins=15)), ('adaptive', {})]:
        r = calib_mse_test(q, y, binning=binning, n_samples=60, seed=11, **kw)
        st = bin_stats(q, y, binning=binning, **kw).nonempty()
        t = st.sq_error(debias=True)
        rng, qs = np.random.default_rng(11), np.sort(q)
        ts = [bin_stats(qs, (rng.random(len(qs)) < qs).astype(np.uint8), binning=binning, **kw).nonempty().sq_error(True)
              for _ in range(60)]
        assert r.statistic == pytest.approx(t, rel=1e-12, abs=1e-15)
        assert r.p_value == (1 + sum(v >= t - 1e-15 for v in ts)) / 61, binning
    assert calib_mse_test(q, y, n_samples=10).statistic == pytest.approx(calib_mse(q, y, debias=True), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.05, 0.3, 0.5, 0.5001, 0.8, 0.95]), st.booleans()), min_size=30, max_size=80),
       st.randoms(use_true_random=False))
def test_results_do_not_depend_on_row_order(rows, rnd):
    q, y = np.array([r[0] for r in rows]), np.array([r[1] for r in rows], dtype=np.uint8)
    o = np.arange(len(q)); rnd.shuffle(o)
    for f in TESTS:
        assert f(q, y, 0) == f(q[o], y[o], 0)
    pd.testing.assert_frame_equal(cumulative_differences(q, y), cumulative_differences(q[o], y[o]))
    pd.testing.assert_frame_equal(consistency_bands(q, y, n_bins=3, n_samples=50),
                                  consistency_bands(q[o], y[o], n_bins=3, n_samples=50))


@pytest.mark.parametrize('i', range(len(TESTS)))
def test_p_values_uniform_under_calibration(i):
    "Hundreds of calibrated data sets: the p-values' distribution is not distinguishable from uniform."
    p = np.array([TESTS[i](*synthetic(400, seed=s), s).p_value for s in range(300)])
    assert stats.kstest(p, 'uniform').pvalue > 0.001
    assert np.mean(p <= 0.05) < 0.1


@pytest.mark.parametrize('i', range(len(TESTS)))
def test_power_grows_to_one_under_the_thesis_forecaster(i):
    "The thesis' miscalibrated forecaster (k = 0.1): the rejection rate at 5% grows with N and reaches 1."
    rate = [np.mean([TESTS[i](*synthetic(n, k=0.1, seed=s), s).p_value <= 0.05 for s in range(40)]) for n in (100, 400, 3000)]
    assert rate[0] < rate[2] and rate[1] <= rate[2] and rate[2] == 1.0, rate


def test_consistency_bands_cover_calibrated_bins():
    inside = []
    for s in range(40):
        b = consistency_bands(*synthetic(1000, seed=s), level=0.9, n_samples=400, seed=s)
        inside.append(b.acc.between(b.band_lo, b.band_hi).mean())
    assert 0.85 <= np.mean(inside) <= 0.97


def test_consistency_band_of_equal_confidences_is_a_binomial_range():
    q = np.r_[np.full(100, 0.3), np.full(100, 0.7)]
    b = consistency_bands(q, np.zeros(200), n_bins=2, n_samples=20000, level=0.9)
    for row, p in zip(b.itertuples(), (0.3, 0.7)):
        assert row.band_lo == pytest.approx(stats.binom.ppf(0.05, 100, p) / 100, abs=0.011)
        assert row.band_hi == pytest.approx(stats.binom.ppf(0.95, 100, p) / 100, abs=0.011)


def test_consistency_bands_leave_empty_bins_without_band():
    b = consistency_bands([0.05, 0.06, 0.9, 0.95], [0, 1, 1, 1], binning='fixed_width', n_bins=4, n_samples=50)
    assert b.n.tolist() == [2, 0, 0, 2]
    assert b.band_lo.isna().tolist() == [False, True, True, False]


@pytest.mark.parametrize('call, match', [
    (lambda: spiegelhalter_test([0.5, 1.0, 0.0], [1, 1, 0]), 'zero variance'),
    (lambda: spiegelhalter_test([0.5], [1], alternative='less'), 'alternative must be one of'),
    (lambda: ecce_r_test([0.0, 1.0], [0, 0]), 'no spread'),
    (lambda: ecce_mad_test([0.2, 0.3], [0, 1, 1]), 'lengths must match'),
    (lambda: calib_mse_test([0.2, 0.3], [0, 2]), 'not 0 or 1'),
    (lambda: calib_mse_test([0.2, 0.3], [0, 1], n_samples=0), 'n_samples must be an integer'),
    (lambda: calib_mse_test([0.2, 0.3], [0, 1], binning='quantile'), 'binning must be one of'),
    (lambda: consistency_bands([0.2, np.nan], [0, 1]), 'NaN'),
    (lambda: consistency_bands([0.2, 0.3], [0, 1], n_bins=1, level=1.0), 'level must be'),
    (lambda: cumulative_differences([0.2, 1.3], [0, 1]), 'outside'),
    (lambda: brownian_range_sf(float('nan')), 'x must be'),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


from edge import EDGE  # noqa: E402


@pytest.mark.parametrize('case', EDGE)
def test_edge_data_gives_finite_values_or_says_why_not(case):
    c, y = EDGE[case]
    nb = min(10, len(c))
    r = calib_mse_test(c, y, n_bins=nb, n_samples=20)
    b = consistency_bands(c, y, n_bins=nb, n_samples=20)
    assert np.isfinite([*r[:2], *b.band_lo, *b.band_hi]).all() and 0 < r.p_value <= 1
    degenerate = case in ('all correct at 1', 'all wrong at 0')      # every confidence 0 or 1: no null variance
    for f in (spiegelhalter_test, ecce_mad_test, ecce_r_test):
        if degenerate:
            with pytest.raises(ValueError, match='undefined'):
                f(c, y)
        else:
            assert np.isfinite(f(c, y)[:2]).all()
