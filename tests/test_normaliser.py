"""`UncertaintyNormaliser`: an unbounded uncertainty score to a confidence by a non-increasing fit — equal to
scikit-learn's decreasing isotonic regression and logistic regression, hand cases, monotone on any data, bad input."""
import warnings
import numpy as np, pandas as pd, pytest
from hypothesis import assume, given, settings, strategies as st
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
import calibkit
from calibkit.recalibrators import NORMALISER_EXPECTED_FAILED_CHECKS, UncertaintyNormaliser, as_uncertainty


def entropy_data(n=3000, seed=0):
    "Entropy-like scores (gamma) and outcomes more often right at low scores."
    rng = np.random.default_rng(seed)
    s = rng.gamma(2.0, 1.0, n)
    return s, (rng.random(n) < 1 / (1 + np.exp(1.5 * (s - 2)))).astype(np.uint8)


def test_hand_case():
    s = np.array([0.1, 0.3, 0.3, 0.8, 1.5, 2.0, 3.0, 4.0])
    y = np.array([1, 1, 0, 1, 0, 1, 0, 0])
    f = UncertaintyNormaliser().fit(s, y)
    # pooled: {0.1} = 1; {0.3, 0.3, 0.8} = 2/3; {1.5, 2.0} = 1/2; {3, 4} = 0; linear between, clipped outside
    assert f.transform(s).tolist() == pytest.approx([1, 2/3, 2/3, 2/3, .5, .5, 0, 0], abs=1e-15)
    expect = [1, 1 - (1/3) / 2, (2/3 + .5) / 2, 0]
    assert f.transform([-100.0, 0.2, 1.15, 1e9]).tolist() == pytest.approx(expect, abs=1e-15)


@pytest.mark.parametrize('seed', range(4))
def test_isotonic_equals_scikit_learn_decreasing(seed):
    s, y = entropy_data(2000, seed)
    s = np.round(s * 20) / 20 - 1.0                               # on a grid (ties), some scores negative
    sk = IsotonicRegression(increasing=False, out_of_bounds='clip', y_min=0, y_max=1).fit(s, y)
    t = np.linspace(s.min() - 2, s.max() + 2, 401)
    np.testing.assert_allclose(UncertaintyNormaliser().fit(s, y).transform(t), sk.predict(t), atol=1e-12)


@pytest.mark.parametrize('shift, scale', [(0, 1), (50, 1), (0, 100), (-3, .01)])
def test_platt_equals_logistic_regression_on_the_score(shift, scale):
    "Unpenalised logistic regression on the (affinely moved) score, against Platt's smoothed targets."
    s, y = entropy_data(3000, 7)
    s = s * scale + shift
    f = UncertaintyNormaliser(method='platt').fit(s, y)
    n1, n0 = y.sum(), len(y) - y.sum()
    t = np.where(y == 1, (n1 + 1) / (n1 + 2), 1 / (n0 + 2))
    lr = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(
        np.r_[s, s][:, None], np.r_[np.ones(len(s)), np.zeros(len(s))], sample_weight=np.r_[t, 1 - t])
    np.testing.assert_allclose(f.transform(s), lr.predict_proba(s[:, None])[:, 1], atol=1e-6)
    assert f.a_ == pytest.approx(lr.coef_[0, 0], rel=1e-4) and f.a_ < 0


def test_platt_wrong_direction_gives_the_constant_map():
    s, y = entropy_data(3000, 2)
    f = UncertaintyNormaliser(method='platt').fit(s, 1 - y)
    m1 = len(y) - y.sum(); m0 = y.sum()
    base = (m1 * (m1 + 1) / (m1 + 2) + m0 / (m0 + 2)) / len(y)
    assert f.a_ == 0.0 and np.allclose(f.transform([-5.0, 0.0, 50.0]), base, atol=1e-12)


scores = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=80, deadline=None)
@given(st.integers(5, 200).flatmap(lambda n: st.tuples(st.lists(scores, min_size=n, max_size=n),
                                                        st.lists(st.booleans(), min_size=n, max_size=n))),
       st.lists(scores, min_size=2, max_size=60), st.sampled_from(['isotonic', 'platt']))
def test_monotone_decreasing_and_in_unit_interval(data, test, method):
    s, y = np.array(data[0]), np.array(data[1])
    assume(0 < y.sum() < len(y))
    f = UncertaintyNormaliser(method=method).fit(s, y)
    t = np.sort(np.r_[test, s.min() - 1, s.max() + 1])
    out = f.transform(t)
    assert np.isfinite(out).all() and (out >= 0).all() and (out <= 1).all()
    assert (np.diff(out) <= 1e-12).all()                          # non-increasing in the score
    assert (f.transform(t[::-1]) == out[::-1]).all()              # each score on its own


def test_bad_input_and_containers():
    s, y = entropy_data(500, 3)
    f = UncertaintyNormaliser()
    with pytest.raises(ValueError, match='X: 1 of 3 values are NaN and 0 infinite; uncertainty scores must be finite'):
        f.fit([0.1, np.nan, 2.0], [0, 1, 1])
    with pytest.raises(ValueError, match='X: 0 of 2 values are NaN and 1 infinite'): f.fit([0.1, -np.inf], [0, 1])
    with pytest.raises(ValueError, match='correct: all 3 fit events are 1'): f.fit([0.1, 5.0, 9.0], [1, 1, 1])
    with pytest.raises(ValueError, match="method must be one of 'isotonic', 'platt'"):
        UncertaintyNormaliser(method='beta').fit(s, y)
    with pytest.raises(ValueError, match=r'X must have shape \(n,\) or \(n, 1\)'): f.fit(np.c_[s, s], y)
    with pytest.raises(TypeError, match='X must be uncertainty scores'): f.fit(np.array([True, False]), [0, 1])
    with pytest.raises(TypeError, match='y \\(correct\\) is required'): f.fit(s)
    f.fit(s, y)
    with pytest.raises(ValueError, match='X: 1 of 2 values are NaN'): f.transform([1.0, np.nan])
    out = f.transform(s)
    assert np.array_equal(f.transform(s[:, None])[:, 0], out) and np.array_equal(f.predict(s[:, None]), out)
    ser = pd.Series(s, index=np.arange(len(s))[::-1])
    assert f.transform(ser).index.equals(ser.index)
    frame = pd.DataFrame({'score': s, 'correct': y})
    g = UncertaintyNormaliser().fit(frame)
    assert np.array_equal(g.transform(frame)['conf'].to_numpy(), out)
    assert list(g.transform(frame).columns) == ['score', 'correct', 'conf']
    with pytest.raises(ValueError, match='frame lacks a score column'): as_uncertainty(pd.DataFrame({'conf': [.5]}))
    assert as_uncertainty([-3, 1e300]).tolist() == [-3.0, 1e300]


def test_registered_and_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator
    assert type(calibkit.recalibrator('normaliser', method='platt')) is UncertaintyNormaliser
    for m in ('isotonic', 'platt'):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            res = check_estimator(UncertaintyNormaliser(method=m), on_fail=None)
        failed = {r['check_name'] for r in res if r['status'] == 'failed'}
        passed = {r['check_name'] for r in res if r['status'] == 'passed'}
        assert failed == set(NORMALISER_EXPECTED_FAILED_CHECKS)
        assert {'check_estimator_cloneable', 'check_no_attributes_set_in_init', 'check_set_params',
                'check_estimators_unfitted', 'check_fit1d', 'check_get_params_invariance'} <= passed
