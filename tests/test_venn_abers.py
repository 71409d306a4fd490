"""`VennAbers`: the inductive Venn–Abers predictor (Vovk & Petej 2014) — p0 and p1 equal to refitting scikit-learn's
isotonic regression with the test score added labelled 0 and 1, equal to the `venn-abers` package, its properties, the
plugin and the report's interval."""
import warnings
import numpy as np, pandas as pd, pytest
from sklearn.exceptions import NotFittedError
from sklearn.isotonic import IsotonicRegression
import calibkit
from calibkit.recalibrators import EXPECTED_FAILED_CHECKS, VennAbers, gcm_sweep
from calibkit.studies import synthetic


def refit(c, y, s, label):
    "The definition: isotonic regression refitted on the fit events with (s, label) added, read at s."
    ir = IsotonicRegression(y_min=0, y_max=1, out_of_bounds='clip').fit(np.r_[c, s], np.r_[y, label])
    return ir.predict([s])[0]


@pytest.mark.parametrize('seed', range(3))
def test_equals_refitting_isotonic_regression_with_the_point_added(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        n = int(rng.integers(2, 15))
        c = rng.integers(0, 6, n) / 5                           # a grid of six values: many ties
        y = rng.integers(0, 2, n)
        if y.min() == y.max(): continue
        s = np.r_[np.arange(11) / 10, rng.random(3)]            # on the fit scores, between and beyond them
        p0, p1 = VennAbers().fit(c, y).predict_interval(s)
        ref0 = [refit(c, y, v, 0) for v in s]
        ref1 = [refit(c, y, v, 1) for v in s]
        np.testing.assert_allclose(p0, ref0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(p1, ref1, rtol=0, atol=1e-12)


def test_hand_case():
    # fit .2 wrong, .6 right. p1 at .1: the outcomes in score order are 1, 0, 1: the first two pool to 1/2. p0 at .9:
    # 0, 1, 0: the last two pool to 1/2. p1 at .4 (between): 0, 1, 1 -> 1; p0 there: 0, 0, 1 -> 0.
    va = VennAbers().fit([.2, .6], [0, 1])
    p0, p1 = va.predict_interval([.1, .4, .9])
    assert p0.tolist() == [0, 0, .5] and p1.tolist() == [.5, 1, 1]
    assert va.transform([.1, .4, .9]).tolist() == pytest.approx([.5 / 1.5, 1 / 2, 1 / 1.5], abs=1e-15)
    assert gcm_sweep(np.array([1, 1]), np.array([0., 1.])).tolist() == [.5, 1, 1]


def test_equals_the_venn_abers_package():
    from venn_abers import VennAbers as Reference
    rng = np.random.default_rng(4)
    for digits in (None, 1):                                     # continuous scores, then heavy ties
        c = rng.random(400)
        if digits: c = np.round(c, digits)
        y = (rng.random(400) < c).astype(int)
        s = np.r_[rng.random(100), np.round(rng.random(30), 1)]
        ref = Reference()
        ref.fit(np.c_[1 - c, c], y)
        p, p01 = ref.predict_proba(np.c_[1 - s, s])
        mine = VennAbers().fit(c, y)
        p0, p1 = mine.predict_interval(s)
        np.testing.assert_allclose(np.c_[p0, p1], p01, rtol=0, atol=1e-12)
        np.testing.assert_allclose(mine.transform(s), p[:, 1], rtol=0, atol=1e-12)


def test_properties_and_the_interval_narrows_with_more_fit_events():
    widths = []
    for n in (100, 1000, 10_000):
        q, y = synthetic(n, seed=1)
        va = VennAbers().fit(q, y)
        t = np.linspace(0, 1, 201)
        p0, p1 = va.predict_interval(t)
        p = va.transform(t)
        assert np.all(p0 <= p1) and p0.min() >= 0 and p1.max() <= 1
        assert np.all((p0 <= p + 1e-15) & (p <= p1 + 1e-15))   # the merged probability lies in the interval
        assert np.all(np.diff(p0) >= 0) and np.all(np.diff(p1) >= 0)   # both are non-decreasing in the score
        widths.append(float(np.mean(p1 - p0)))
    assert widths[0] > widths[1] > widths[2], widths


def test_containers_plugin_and_bad_input():
    q, y = synthetic(500, seed=2)
    va = calibkit.recalibrator('venn_abers').fit(q[:, None], y)
    assert type(va) is VennAbers
    assert va.transform(q[:, None]).shape == (500, 1)
    ev = pd.DataFrame({'conf': q, 'correct': y}, index=np.arange(500)[::-1])
    out = va.transform(ev)
    assert out.index.equals(ev.index) and np.array_equal(out.conf.to_numpy(), va.transform(q))
    with pytest.raises(NotFittedError, match='not fitted yet'): VennAbers().predict_interval([.5])
    with pytest.raises(ValueError, match='correct: all 3 fit events are 1'): VennAbers().fit([.1, .5, .9], [1, 1, 1])
    with pytest.raises(ValueError, match='conf: 1 of 2 values are NaN'): va.predict_interval([.5, np.nan])
    with pytest.raises(ValueError, match='conf: 1 of 2 values are outside'): va.transform([.5, 1.5])


def test_estimator_checks_as_the_siblings():
    from sklearn.utils.estimator_checks import check_estimator
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        res = check_estimator(VennAbers(), on_fail=None)
    assert {r['check_name'] for r in res if r['status'] == 'failed'} == set(EXPECTED_FAILED_CHECKS)


def test_the_report_shows_the_interval():
    q, y = synthetic(4000, seed=3)
    ev = pd.DataFrame({'conf': q, 'correct': y})
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        r = calibkit.calibration_report(ev[2000:], fit=ev[:2000], recalibrator='venn_abers', n_samples=20)
    va = VennAbers().fit(ev[:2000])
    p0, p1 = va.predict_interval(ev[2000:])
    after = r.bins[r.bins.stage == 'after']
    assert after.n.sum() == 2000
    # each bin's p0, p1 are the means over its events (the bins: consecutive runs of the events sorted by p)
    order = np.lexsort((p0, va.transform(ev[2000:]).conf.to_numpy()))
    ends = np.cumsum(after.n.to_numpy())
    np.testing.assert_allclose(after.p0, [p0[order][e - k:e].mean() for e, k in zip(ends, after.n)], atol=1e-12)
    np.testing.assert_allclose(after.p1, [p1[order][e - k:e].mean() for e, k in zip(ends, after.n)], atol=1e-12)
    assert r.verdict['after'][-1].startswith(f'Venn–Abers interval p0–p1: mean width {np.mean(p1 - p0):#.3g}')
    assert 'p0' not in calibkit.calibration_report(ev, n_samples=20).bins.columns   # no interval without Venn–Abers
