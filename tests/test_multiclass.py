"Multiclass recalibration: known temperatures recovered, a brute-force reference, held-out NLL, distributions, bad input."
import warnings
import numpy as np, pandas as pd
import pytest
from scipy.special import log_softmax, softmax
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from calibkit.multiclass import PROB_ROW_TOL, TemperatureScaling, VectorScaling, as_logits, nll, nll_grad


def sample(n=20000, k=10, seed=0, scale=None):
    "True logits, labels drawn from their softmax, and a model's logits = true logits × `scale` per column."
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2, (n, k))
    y = (softmax(z, axis=1).cumsum(1) > rng.random((n, 1))).argmax(1)
    return z * (1.0 if scale is None else np.asarray(scale)), y


@pytest.mark.parametrize('T', [0.5, 2.0, 3.0])
def test_known_temperature_recovered(T):
    Z, y = sample(scale=T)
    ts = TemperatureScaling().fit(Z, y)
    assert abs(ts.temperature_ / T - 1) < 0.05


def brute_force_T(Z, y, grid):
    "The grid temperature of least NLL, by direct evaluation (no optimiser, no gradient)."
    rows = np.arange(len(y))
    return grid[np.argmin([-log_softmax(Z / t, axis=1)[rows, y].mean() for t in grid])]


def test_against_brute_force_grid():
    Z, y = sample(n=3000, k=5, seed=1, scale=1.7)
    grid = np.linspace(1.0, 3.0, 2001)
    ts = TemperatureScaling().fit(Z, y)
    assert abs(ts.temperature_ - brute_force_T(Z, y, grid)) <= 2e-3
    rows = np.arange(len(y))
    assert ts.nll_ == pytest.approx(-log_softmax(Z / ts.temperature_, axis=1)[rows, y].mean(), abs=1e-12)


def test_held_out_nll_falls_and_rows_sum_to_one():
    Z, y = sample(n=20000, seed=2, scale=2.5)
    dev, test = slice(0, 10000), slice(10000, None)
    before = nll(softmax(Z[test], axis=1), y[test])
    for m in (TemperatureScaling(), TemperatureScaling(groups=np.arange(10) % 3 + 1), VectorScaling()):
        P = m.fit(Z[dev], y[dev]).transform(Z[test])
        assert P.shape == Z[test].shape
        np.testing.assert_allclose(P.sum(axis=1), 1, atol=1e-12)
        assert (P >= 0).all()
        assert nll(P, y[test]) < before - 0.05


def test_vector_at_least_as_good_as_temperature_on_dev():
    Z, y = sample(n=5000, seed=3, scale=np.linspace(0.5, 3, 10))
    ts, vs = TemperatureScaling().fit(Z, y), VectorScaling().fit(Z, y)
    assert vs.nll_ <= ts.nll_ + 1e-9
    assert vs.nll_ < ts.nll_ - 0.01          # the columns were scaled differently: vector scaling sees it
    np.testing.assert_allclose(vs.coef_, 1 / np.linspace(0.5, 3, 10), rtol=0.15)


def test_per_group_temperatures():
    scale = np.r_[[4.0] * 5, [1.5] * 5]
    Z, y = sample(n=30000, seed=4, scale=scale)
    groups = {j: ('rare' if j < 5 else 'frequent') for j in range(10)}
    ts = TemperatureScaling(groups=groups).fit(Z, y)
    assert list(ts.temperatures_.index) == ['frequent', 'rare']
    np.testing.assert_allclose(ts.temperatures_.to_numpy(), [1.5, 4.0], rtol=0.05)
    assert not hasattr(ts, 'temperature_')
    one = TemperatureScaling(groups=[1] * 10).fit(Z, y)     # one group = plain temperature scaling
    assert one.temperatures_.iloc[0] == pytest.approx(TemperatureScaling().fit(Z, y).temperature_, rel=1e-5)


def test_gradient_matches_finite_differences():
    Z, y = sample(n=300, k=4, seed=5)
    rng = np.random.default_rng(0)
    w, b = rng.uniform(0.5, 2, 4), rng.normal(0, 1, 4)
    _, gw, gb = nll_grad(Z, y, w, b)
    h, e = 1e-6, np.eye(4)
    f = lambda w, b: nll_grad(Z, y, w, b)[0]
    np.testing.assert_allclose(gw, [(f(w + h * e[k], b) - f(w - h * e[k], b)) / (2 * h) for k in range(4)], atol=1e-6)
    np.testing.assert_allclose(gb, [(f(w, b + h * e[k]) - f(w, b - h * e[k])) / (2 * h) for k in range(4)], atol=1e-6)


def test_probability_input():
    Z, y = sample(n=5000, seed=6)
    P = softmax(Z, axis=1)                       # calibrated by construction: T close to 1
    ts = TemperatureScaling(input='probs').fit(P, y)
    assert abs(ts.temperature_ - 1) < 0.05
    np.testing.assert_allclose(TemperatureScaling(input='probs').fit(P, y).transform(P).sum(1), 1, atol=1e-12)
    np.testing.assert_allclose(ts.transform(P), softmax(Z / ts.temperature_, axis=1), atol=1e-9)
    P0 = P.copy(); P0[0, 0] = 0
    with pytest.warns(UserWarning, match='1 of 50000 probabilities are 0'): as_logits(P0, input='probs')


def test_probabilities_detected_by_default():
    "A scikit-learn classifier's predict_proba (the issue's case): read as probabilities, top-label ECE falls."
    from sklearn.datasets import make_classification
    from sklearn.naive_bayes import GaussianNB
    from calibkit.metrics import top_label_ce
    X, y = make_classification(9000, 20, n_informative=6, n_redundant=6, n_classes=3, flip_y=0.05, class_sep=0.8,
                               random_state=0)
    clf = GaussianNB().fit(X[:1000], y[:1000])
    P_dev, P_test, y_dev, y_test = clf.predict_proba(X[1000:5000]), clf.predict_proba(X[5000:]), y[1000:5000], y[5000:]
    before = top_label_ce(P_test, y_test)
    for m in (TemperatureScaling(), VectorScaling()):
        m.fit(P_dev, y_dev)
        assert m.input_ == 'probs'
        explicit = type(m)(input='probs').fit(P_dev, y_dev)
        np.testing.assert_array_equal(m.transform(P_test), explicit.transform(P_test))   # 'auto' = 'probs' here
        assert top_label_ce(m.transform(P_test), y_test) < before / 2
    wrong = TemperatureScaling(input='logits').fit(P_dev, y_dev)                          # the silent mistake, forced
    right = TemperatureScaling().fit(P_dev, y_dev)
    assert top_label_ce(wrong.transform(P_test), y_test) > top_label_ce(right.transform(P_test), y_test)


def test_auto_rule_edges():
    Z, y = sample(n=200, k=4, seed=9)
    assert TemperatureScaling().fit(Z, y).input_ == 'logits'
    P = softmax(Z, axis=1)
    assert TemperatureScaling().fit(P.astype(np.float32), y).input_ == 'probs'          # float32 rows: sum within tol
    assert as_logits(P * (1 + 0.9 * PROB_ROW_TOL))[2] == 'probs'
    with pytest.raises(ValueError, match="200 of 200 rows do not sum to 1.*input='probs'"): as_logits(P * 0.9)
    assert as_logits(P * 0.9, input='probs')[2] == 'probs'                                # explicit: no check
    assert as_logits(P, input='logits')[2] == 'logits'
    assert as_logits(np.log(P))[2] == 'logits'
    ts = TemperatureScaling().fit(P, y)
    with pytest.raises(ValueError, match='reads as logits but the model was fitted on probs'): ts.transform(Z)
    with pytest.raises(ValueError, match='reads as probs but the model was fitted on logits'):
        VectorScaling().fit(Z, y).transform(P)
    np.testing.assert_allclose(TemperatureScaling(input='logits').fit(Z, y).transform(P).sum(1), 1)  # told: no refusal


def test_nll_by_hand_and_containers():
    assert nll([[0.25, 0.75], [0.5, 0.5]], [1, 0]) == pytest.approx(-(np.log(0.75) + np.log(0.5)) / 2)
    assert nll([[1.0, 0.0]], [1]) == np.inf
    Z, y = sample(n=500, k=3, seed=7)
    df = pd.DataFrame(Z, columns=['a', 'b', 'c'], index=np.arange(500) + 10)
    out = TemperatureScaling().fit(df, y).transform(df)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ['a', 'b', 'c'] and out.index[0] == 10
    c = clone(TemperatureScaling(groups=[1, 2, 2], max_iter=50))
    assert c.get_params()['groups'] == [1, 2, 2] and not hasattr(c, 'beta_')


def test_bad_input():
    Z, y = sample(n=100, k=3, seed=8)
    with pytest.raises(NotFittedError): TemperatureScaling().transform(Z)
    with pytest.raises(NotFittedError): VectorScaling().transform(Z)
    with pytest.raises(ValueError, match='input'): TemperatureScaling(input='odds').fit(Z, y)
    with pytest.raises(ValueError, match='max_iter'): VectorScaling(max_iter=-1).fit(Z, y)
    with pytest.raises(ValueError, match='NaN or infinite'): TemperatureScaling().fit(np.where(Z > 1, np.nan, Z), y)
    with pytest.raises(TypeError, match='must be numeric'): TemperatureScaling().fit(Z.astype(str), y)
    with pytest.raises(ValueError, match='K >= 2'): TemperatureScaling().fit(Z[:, :1], y)
    with pytest.raises(ValueError, match=r'outside \[0, 3\)'): TemperatureScaling().fit(Z, y + 3)
    with pytest.raises(ValueError, match='gold has 99 values'): TemperatureScaling().fit(Z, y[:-1])
    with pytest.raises(ValueError, match='outside \\[0, 1\\]'): TemperatureScaling(input='probs').fit(Z, y)
    with pytest.raises(ValueError, match='groups has 2 labels'): TemperatureScaling(groups=[1, 2]).fit(Z, y)
    with pytest.raises(ValueError, match=r'1 of 3 columns have no group, e.g. \[2\]'):
        TemperatureScaling(groups={0: 1, 1: 1}).fit(Z, y)
    with pytest.raises(ValueError, match='missing'): TemperatureScaling(groups=[1, None, 2]).fit(Z, y)
    ts = TemperatureScaling().fit(Z, y)
    with pytest.raises(ValueError, match='fitted on 3'): ts.transform(Z[:, :2])
