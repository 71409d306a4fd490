"""The kernel calibration error: both estimators equal a double loop over Widmann et al.'s definition, binary events
equal their two-column matrix, the median heuristic by hand, probcal's binary SKCE and tests, the blocks and the grouping
by distinct prediction change nothing, uniform p-values under calibration, power against miscalibration, bad input."""
import numpy as np, pandas as pd
import pytest
from scipy import stats
from probcal.metrics import kernel as probcal_kernel
from calibkit import kernel as ck
from calibkit.kernel import Predictions, median_bandwidth, skce, skce_test
from calibkit.significance import CALIBRATED, Significance


def h_loop(p, g, kappa):
    "The paper's definition term by term: h_ij = (e_yi − p_i)ᵀ κ(TV(p_i, p_j)) I (e_yj − p_j), as a full matrix."
    n, k = p.shape
    e = np.eye(k)
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            h[i, j] = kappa(0.5 * np.abs(p[i] - p[j]).sum()) * (e[g[i]] - p[i]) @ (e[g[j]] - p[j])
    return h


def quadratic_loop(p, g, kappa):
    n, h = len(p), h_loop(p, g, kappa)
    return sum(h[i, j] for i in range(n) for j in range(i + 1, n)) / (n * (n - 1) / 2)


def linear_loop(p, g, kappa):
    h = h_loop(p, g, kappa)
    return np.mean([h[2 * i, 2 * i + 1] for i in range(len(p) // 2)])


def matrix_sample(seed, n, k, ties=False):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), n)
    if ties: p = p[rng.integers(0, max(2, n // 3), n)]          # rows repeated: groups of equal predictions
    return p, rng.integers(0, k, n)


@pytest.mark.parametrize('seed,n,k,ties', [(0, 2, 3, False), (1, 9, 3, False), (2, 17, 4, True), (3, 24, 2, True)])
def test_estimators_equal_the_definition(seed, n, k, ties):
    p, g = matrix_sample(seed, n, k, ties)
    nu = 0.3
    laplace, gauss = (lambda d: np.exp(-d / nu)), (lambda d: np.exp(-d ** 2 / 0.08))
    assert skce(p, g, bandwidth=nu) == pytest.approx(quadratic_loop(p, g, laplace), abs=1e-12)
    assert skce(p, g, estimator='linear', bandwidth=nu) == pytest.approx(linear_loop(p, g, laplace), abs=1e-12)
    assert skce(p, g, kernel=gauss) == pytest.approx(quadratic_loop(p, g, gauss), abs=1e-12)
    med = np.median([0.5 * np.abs(p[i] - p[j]).sum() for i in range(n) for j in range(i + 1, n)])
    if med > 0:
        assert skce(p, g) == pytest.approx(quadratic_loop(p, g, lambda d: np.exp(-d / med)), abs=1e-12)


@pytest.mark.parametrize('ties', [False, True])
def test_binary_events_are_the_two_column_matrix(ties):
    "Confidences c with outcomes y: the matrix [1 − c, c] with gold y, by the loop; h = 2κ(|Δc|)(y − c)(y' − c')."
    rng = np.random.default_rng(5)
    c = rng.random(21)
    if ties: c = np.round(c, 1)
    y = (rng.random(21) < c).astype(int)
    two, kappa = np.c_[1 - c, c], (lambda d: np.exp(-d / 0.25))
    assert skce(c, y, bandwidth=0.25) == pytest.approx(quadratic_loop(two, y, kappa), abs=1e-12)
    assert skce(c, y, estimator='linear', bandwidth=0.25) == pytest.approx(linear_loop(two, y, kappa), abs=1e-12)
    scalar = sum(kappa(abs(c[i] - c[j])) * (y[i] - c[i]) * (y[j] - c[j]) for i in range(21) for j in range(i + 1, 21))
    assert skce(c, y, bandwidth=0.25) == pytest.approx(2 * scalar / 210, abs=1e-12)
    assert skce(c, y) == pytest.approx(skce(two, y), abs=1e-15)
    frame = pd.DataFrame({'conf': c, 'correct': y})
    assert skce(frame, bandwidth=0.25) == skce(c, y, bandwidth=0.25)


def test_median_heuristic_by_hand():
    assert median_bandwidth(Predictions([0.1, 0.3, 0.8], [0, 0, 1])) == 0.5                      # 0.2, 0.5, 0.7
    assert median_bandwidth(Predictions([0.1, 0.3, 0.8, 0.9], [0, 0, 1, 1])) == pytest.approx(0.55)   # .2 .5 .6 .7 ..
    p = np.array([[.5, .5, 0], [.1, .2, .7], [0, 0, 1], [1, 0, 0]])
    # TV: (0,1) .7, (0,2) 1, (0,3) .5, (1,2) .3, (1,3) .9, (2,3) 1: median of .3 .5 .7 .9 1 1 = .8
    assert median_bandwidth(Predictions(p, [0, 1, 2, 0])) == pytest.approx(0.8, abs=1e-15)


def test_median_heuristic_beyond_its_rows():
    "More rows than MEDIAN_ROWS: 2,048 evenly spaced sorted rows, close to the median over all pairs, any row order."
    rng = np.random.default_rng(0)
    c = rng.beta(2, 5, 3000)
    full = np.median(np.abs(c[:, None] - c[None, :])[np.triu_indices(3000, 1)])
    nu = median_bandwidth(Predictions(c, c > 0.5))
    assert nu == pytest.approx(full, rel=0.01)
    o = rng.permutation(3000)
    assert median_bandwidth(Predictions(c[o], c[o] > 0.5)) == nu


@pytest.mark.parametrize('n,seed', [(40, 0), (500, 1), (2000, 2)])
def test_equals_probcal(n, seed):
    "probcal (binary only): its 'uq' and 'ul' estimators and its asymptotic test, with its median heuristic."
    rng = np.random.default_rng(seed)
    c = rng.beta(2, 2, n)
    y = (rng.random(n) < c ** 1.3).astype(int)
    assert skce(c, y) == pytest.approx(probcal_kernel.skce(y, c), rel=1e-12, abs=1e-15)
    assert skce(c, y, bandwidth=0.1) == pytest.approx(probcal_kernel.skce(y, c, bandwidth=0.1), rel=1e-12, abs=1e-15)
    perm = np.random.default_rng(7).permutation(n)          # probcal pairs the rows of a seeded permutation
    ours = skce_test(c[perm], y[perm], estimator='linear', bandwidth=0.2)
    theirs = probcal_kernel.skce_test(y, c, method='asymptotic', bandwidth=0.2, random_state=7)
    assert ours.statistic == pytest.approx(theirs.statistic, rel=1e-12, abs=1e-15)
    assert ours.p_value == pytest.approx(theirs.p_value, rel=1e-9, abs=1e-15)
    assert skce(c[perm], y[perm], estimator='linear', bandwidth=0.2) == ours.statistic


def test_blocks_and_grouping_change_nothing(monkeypatch):
    "Tiny blocks of kernel rows, and ties grouped or not, give the same sums (to rounding)."
    p, g = matrix_sample(4, 300, 3, ties=True)
    assert len(Predictions(p, g).pu) < 120
    one = skce(p, g)
    jitter = p + np.random.default_rng(0).random(p.shape) * 1e-13 * np.array([1, -1, 0])    # no ties any more
    monkeypatch.setattr(ck, 'BLOCK', 7)
    assert skce(p, g) == pytest.approx(one, rel=1e-12)
    assert skce(jitter, g, bandwidth=median_bandwidth(Predictions(p, g))) == pytest.approx(one, rel=1e-9)
    assert skce_test(p, g, n_samples=30) == skce_test(p, g, n_samples=30)                   # deterministic per seed


def test_resampled_counts_follow_the_predictions():
    p, g = matrix_sample(6, 200, 3, ties=True)
    pr = Predictions(p, g)
    counts = pr.resample(4000, np.random.default_rng(0))
    np.testing.assert_allclose(counts.mean(0), pr.nu[:, None] * pr.pu, atol=0.1 * pr.nu.max())
    assert (counts.sum(2) == pr.nu).all()
    b = Predictions([0.0, 0.0, 1.0, 0.5], [0, 0, 1, 1]).resample(3, np.random.default_rng(0))   # groups 0, .5, 1
    assert b[:, [0, 2], 0].tolist() == [[0, 1]] * 3           # p = 0 never comes out 1, p = 1 always does


def calibrated(seed, n, k=None):
    "Calibrated data: binary (k None) or k classes, labels drawn from the predictions."
    rng = np.random.default_rng(seed)
    if k is None:
        c = rng.beta(2, 2, n)
        return c, (rng.random(n) < c).astype(int)
    p = rng.dirichlet(np.ones(k), n)
    return p, (rng.random(n)[:, None] > np.cumsum(p, 1)[:, :-1]).sum(1)


@pytest.mark.parametrize('estimator,n,k', [('quadratic', 40, None), ('quadratic', 40, 3), ('linear', 200, None),
                                           ('linear', 200, 3)])
def test_p_values_uniform_under_calibration(estimator, n, k):
    "Hundreds of calibrated data sets: the p-values' distribution is not distinguishable from uniform."
    # the resampling test draws with its own seed per data set (one stream shared by all would make them dependent)
    kw = (lambda s: dict(n_samples=99, seed=10 ** 6 + s)) if estimator == 'quadratic' else (lambda s: {})
    p = np.array([skce_test(*calibrated(s, n, k), estimator=estimator, **kw(s)).p_value for s in range(300)])
    assert stats.kstest(p, 'uniform').pvalue > 0.001
    assert np.mean(p <= 0.05) < 0.1


@pytest.mark.parametrize('estimator', ['quadratic', 'linear'])
def test_miscalibration_is_rejected(estimator):
    "The linear test has less power (n/2 of the n(n − 1)/2 pairs): it gets more rows."
    rng, n = np.random.default_rng(1), 1000 if estimator == 'quadratic' else 20_000
    c = rng.beta(2, 2, n)
    over = (rng.random(n) < c ** 2).astype(int)                            # P(y = 1 | c) = c²
    assert skce_test(c, over, estimator=estimator).p_value < 0.01
    p, _ = calibrated(2, n, 3)
    sharp = p ** 3 / (p ** 3).sum(1, keepdims=True)                        # the model under-confident
    g = (rng.random(n)[:, None] > np.cumsum(sharp, 1)[:, :-1]).sum(1)
    r = skce_test(p, g, estimator=estimator)
    assert r.p_value < 0.01 and r.null != CALIBRATED and isinstance(r, Significance)


@pytest.mark.parametrize('call,exc,message', [
    (lambda: skce([0.2, 0.7]), TypeError, 'gold is required'),
    (lambda: skce([0.2, np.nan], [0, 1]), ValueError, 'scores: 1 of 2 values are NaN'),
    (lambda: skce([0.2, 0.7], [0, 1, 1]), ValueError, 'gold has 3 values'),
    (lambda: skce(np.array([[0.2, 0.9], [0.5, 0.5]]), [0, 1]), ValueError, 'scores: 1 of 2 rows do not sum to 1'),
    (lambda: skce(np.array([[0.2, 0.8], [0.5, 0.5]]), [0, 5]), ValueError, 'gold: 1 of 2 ids are outside [0, 2)'),
    (lambda: skce(np.ones((2, 2, 2)) / 2, [0, 1]), ValueError, 'scores must be 2-dimensional'),
    (lambda: skce([0.2, 0.7], [0, 1], estimator='u'), ValueError, 'estimator must be one of'),
    (lambda: skce([0.2, 0.7], [0, 1], bandwidth=-1), ValueError, 'bandwidth must be a finite number > 0'),
    (lambda: skce([0.2, 0.7], [0, 1], kernel=np.exp, bandwidth=1), ValueError, 'not both'),
    (lambda: skce([0.2, 0.7], [0, 1], kernel=3), TypeError, 'kernel must be a function'),
    (lambda: skce([0.2, 0.7, 0.1], [0, 1, 0], kernel=lambda d: 1.0), ValueError, 'kernel returned shape'),
    (lambda: skce([0.5, 0.5, 0.5], [0, 1, 0]), ValueError, 'bandwidth: the median distance'),
    (lambda: skce([0.5], [1]), ValueError, 'at least 2'),
    (lambda: skce_test([0.2, 0.7, 0.1], [0, 1, 0], estimator='linear'), ValueError, 'at least 4'),
    (lambda: skce_test([0.2, 0.7, 0.1], [0, 1, 0], n_samples=1.5), ValueError, 'n_samples must be an integer'),
    (lambda: skce_test([0.2, 0.7, 0.1, .4], [0, 1, 0, 1], estimator='linear', n_samples=9), ValueError, 'n_samples'),
])
def test_bad_input_names_the_argument(call, exc, message):
    with pytest.raises(exc, match=None) as e: call()
    assert message in str(e.value)
