"Diagnostics: smooth ECE and its curve against relplot, CORP against model_diagnostics, hand cases, properties, bad input."
import numpy as np, pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
import relplot
from relplot.kernels import ReflectedGaussianKernel
from model_diagnostics.scoring import SquaredError, decompose
from calibkit.diagnostics import CORP, corp, corp_curve, smooth_bandwidth, smooth_curve, smooth_ece

# (seed, n, beta a, beta b, power p): y ~ Bernoulli(q**p); p = 1 calibrated, p > 1 over-, p < 1 under-confident
CASES = [(0, 5000, 2, 2, 1.0), (1, 20000, 5, 1.2, 2.0), (2, 300, 1, 1, 0.5), (3, 40, 2, 5, 1.0),
         (4, 100000, .5, .5, 1.3), (5, 3000, 3, 3, 1.0), (6, 8, 1, 1, 1.0)]


def sample(seed, n, a, b, p):
    rng = np.random.default_rng(seed)
    q = rng.beta(a, b, n)
    if seed == 5: q = np.round(q, 1)          # heavy ties
    return q, (rng.random(n) < q ** p).astype(np.uint8)


@pytest.mark.parametrize('case', CASES)
def test_smooth_ece_equals_relplot(case):
    q, y = sample(*case)
    assert abs(smooth_ece(q, y) - relplot.smECE(q, y.astype(float))) < 1e-3
    assert abs(smooth_ece(q, y, sigma=0.05) - relplot.smECE_sigma(q, y.astype(float), 0.05)) < 1e-3
    assert abs(smooth_bandwidth(q, y) - relplot.smECE(q, y.astype(float), return_width=True)[1]) < 1e-12


@pytest.mark.parametrize('case', CASES)
def test_smooth_curve_equals_relplot(case):
    q, y = sample(*case)
    curve = smooth_curve(q, y)
    k, mesh = ReflectedGaussianKernel(curve.attrs['sigma']), np.linspace(0, 1, 200)
    np.testing.assert_allclose(curve.conf, mesh)
    np.testing.assert_allclose(curve.acc, k.smooth(q, y.astype(float), mesh)[0], atol=1e-3)
    np.testing.assert_allclose(curve.density, k.kde(q, mesh), atol=1e-3)
    assert abs(curve.attrs['smece'] - smooth_ece(q, y)) < 1e-12


@pytest.mark.parametrize('case', CASES)
def test_corp_equals_model_diagnostics(case):
    q, y = sample(*case)
    ref = decompose(y.astype(float), q, scoring_function=SquaredError()).row(0, named=True)
    got = corp(q, y)
    for k in CORP._fields: assert abs(getattr(got, k) - ref[k]) < 1e-9, k


def test_corp_by_hand():
    # a perfectly calibrated step: at 0.25 one of four is right, at 0.75 three of four -> MCB = 0
    q = np.repeat([0.25, 0.75], 4)
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    d = corp(q, y)
    assert d.miscalibration == pytest.approx(0, abs=1e-15)
    assert d.score == pytest.approx(0.1875)                       # mean q(1-q)
    assert d.uncertainty == pytest.approx(0.25)
    assert d.discrimination == pytest.approx(0.0625)
    # one violation pooled: (0.2 -> 1, 0.4 -> 0) become 0.5, 0.5
    d = corp([0.2, 0.4], [1, 0])
    assert d == pytest.approx(CORP((0.64 + 0.16) / 2, 0.4 - 0.25, 0.0, 0.25))
    steps = corp_curve([0.2, 0.4, 0.9], [1, 0, 1])
    assert steps.conf.tolist() == [0.2, 0.4, 0.9, 0.9] and steps.acc.tolist() == [0.5, 0.5, 1, 1]
    assert steps.n.tolist() == [2, 2, 1, 1]


def test_smooth_ece_by_hand():
    # forecasts 0 and 1 that are always right: the residual is 0 everywhere
    assert smooth_ece([0.0, 0.0, 1.0, 1.0], [0, 0, 1, 1]) == pytest.approx(0, abs=1e-9)
    # constant forecast 0.5, all wrong-way outcomes y=1: the residual is -0.5 everywhere the mass is
    assert smooth_ece(np.full(100, 0.5), np.ones(100), sigma=0.1) == pytest.approx(0.5, abs=1e-3)


pairs = st.integers(2, 200).flatmap(lambda n: st.tuples(
    st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.5, 1.0])), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n)))


@settings(max_examples=40, deadline=None)
@given(pairs)
def test_properties(pair):
    q, y = np.array(pair[0]), np.array(pair[1])
    d = corp(q, y)
    assert d.miscalibration >= -1e-12 and d.discrimination >= -1e-12 and 0 <= d.uncertainty <= 0.25 + 1e-12
    assert d.score == pytest.approx(d.miscalibration - d.discrimination + d.uncertainty, abs=1e-12)
    s = smooth_ece(q, y)
    assert 0 <= s <= 1
    steps = corp_curve(q, y)
    assert (np.diff(steps.acc) >= -1e-12).all() and steps.n.iloc[::2].sum() == len(q)
    # a function of the multiset: row order does not matter
    perm = np.random.default_rng(0).permutation(len(q))
    assert corp(q[perm], y[perm]) == pytest.approx(d, abs=1e-12)
    assert smooth_ece(q[perm], y[perm]) == pytest.approx(s, abs=1e-12)


def test_calibrated_large_sample_is_small():
    rng = np.random.default_rng(7)
    q = rng.beta(2, 2, 200_000)
    y = rng.random(q.size) < q
    assert smooth_ece(q, y) < 0.01
    assert corp(q, y).miscalibration < 1e-3
    over = rng.random(q.size) < q ** 2
    assert smooth_ece(q, over) > 0.05


def test_events_frame_and_bad_input():
    q, y = sample(*CASES[0])
    ev = pd.DataFrame({'conf': q, 'correct': y})
    assert smooth_ece(ev) == smooth_ece(q, y) and corp(ev) == corp(q, y)
    with pytest.raises(ValueError, match='outside'): smooth_ece([0.5, 1.2], [0, 1])
    with pytest.raises(ValueError, match='not 0 or 1'): corp([0.5, 0.2], [0, 2])
    with pytest.raises(ValueError, match='lengths must match'): corp_curve([0.5, 0.2], [0])
    with pytest.raises(TypeError, match='correct is required'): smooth_curve([0.5])
    with pytest.raises(ValueError, match='NaN'): smooth_ece([np.nan, 0.5], [0, 1])
    with pytest.raises(ValueError, match='sigma'): smooth_ece(q, y, sigma=-1)
    with pytest.raises(ValueError, match='n_points'): smooth_curve(q, y, n_points=0)
    with pytest.raises(ValueError, match='level'): smooth_curve(q, y, n_boot=3, level=1)
    with pytest.raises(ValueError, match='empty'): corp([], [])


def test_bootstrap_band_deterministic():
    q, y = sample(*CASES[2])
    a, b = smooth_curve(q, y, n_boot=20, seed=3), smooth_curve(q, y, n_boot=20, seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert (a.lo <= a.hi).all() and (a.hi - a.lo).max() > 0
