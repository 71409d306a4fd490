"""Issue 26 in the report and charts: the report's significance and selective-prediction keys equal the library's
functions on the same events (before and after recalibration); consistency bands cover a calibrated model's bin
accuracies at about their level and equal the binomial quantiles where a bin's confidences are equal; the
risk–coverage chart carries the oracle and random baselines on a bounded number of points."""
import json
import numpy as np, pandas as pd
import pytest
from scipy.stats import binom
from calibkit.binning import bin_stats
from calibkit.charts import MAX_CURVE_POINTS, reliability, risk_coverage_chart
from calibkit.plugins import make
from calibkit.render import report_html
from calibkit.report import SELECTIVE, SIGNIFICANCE, calibration_report
from calibkit.selective import selective_summary
from calibkit.significance import binomial_bands, consistency_bands, ecce_r_test, spiegelhalter_test


def over_confident(n, seed):
    rng = np.random.default_rng(seed)
    q = rng.beta(2, 2, n)
    return pd.DataFrame(dict(conf=q, correct=(rng.random(n) < q ** 1.4).astype(np.uint8)))


@pytest.fixture(scope='module')
def recal():
    ev = over_confident(6000, 3)
    fit, test = ev[:3000].reset_index(drop=True), ev[3000:].reset_index(drop=True)
    return fit, test, calibration_report(test, fit=fit, recalibrator='isotonic', n_samples=100)


def test_report_keys_equal_the_library_on_the_same_events(recal):
    fit, test, r = recal
    after = make('recalibrator', 'isotonic').fit(fit).transform(test)        # the after stage, recomputed apart
    m = json.loads(r.to_json())
    for stage, ev in (('before', test), ('after', after)):
        s = m['stages'][stage]
        assert list(s['selective']) == ['aurc', 'e_aurc', 'augrc', 'auroc', 'prr', 'risk@0.8', 'risk@0.9', 'risk@0.95']
        assert list(s['selective']) == list(SELECTIVE)
        assert s['selective'] == pytest.approx(selective_summary(ev).to_dict(), rel=1e-15)
        sig = s['significance']
        e, z = ecce_r_test(ev), spiegelhalter_test(ev)
        assert (sig['test'], sig['statistic'], sig['p_value']) == ('ecce_r', e.statistic, e.p_value)
        assert sig['tests']['spiegelhalter'] == {'statistic': z.statistic, 'p_value': z.p_value}
        assert list(sig['tests']) == list(SIGNIFICANCE)
        assert sig['significant'] == (e.p_value < 1 - 0.95) and sig['level'] == 0.95
    assert m['stages']['before']['significance']['significant'] is True      # q**1.4: over-confident everywhere


def test_report_bands_are_consistency_bands_then_binomial_beyond_the_budget(recal, monkeypatch):
    fit, test, r = recal
    b = r.bins[(r.bins.stage == 'before') & (r.bins.group == 'all')]
    ref = consistency_bands(test, n_bins=10, level=0.95, n_samples=100, seed=0)
    assert np.array_equal(b[['band_lo', 'band_hi']].to_numpy(), ref[['band_lo', 'band_hi']].to_numpy())
    import calibkit.report as report
    monkeypatch.setattr(report, 'CI_BUDGET', 100 * len(test) - 1)
    big = calibration_report(test, n_samples=100)
    assert big.stages['before']['bands'] == 'binomial'
    st = bin_stats(test.conf.to_numpy(), test.correct.to_numpy(), n_bins=10)
    want = binom.ppf([[0.025], [0.975]], st.n, st.conf) / st.n               # the quantiles, computed here directly
    assert np.array_equal(big.bins[['band_lo', 'band_hi']].to_numpy().T, want)
    assert 'binomial quantiles' in report_html(big)


def test_report_charts_carry_bands_and_a_bounded_curve(recal):
    r = recal[2]
    assert {'reliability_before', 'reliability_after', 'risk_coverage_before', 'risk_coverage_after'} <= set(r.charts)
    spec = r.charts['reliability_before'].to_dict()
    assert spec['vconcat'][0]['layer'][0]['mark']['type'] == 'rect'
    rc = r.charts['risk_coverage_after'].to_dict()
    pts = pd.DataFrame(next(iter(rc['datasets'].values())))
    assert len(pts) <= 2 * MAX_CURVE_POINTS + 2


def test_calibrated_bin_accuracies_fall_inside_their_bands_at_about_the_level():
    inside, binom_inside, total = 0, 0, 0
    for seed in range(150):
        rng = np.random.default_rng(seed)
        q = rng.beta(2, 2, 1500)
        y = (rng.random(1500) < q).astype(np.uint8)
        b = consistency_bands(q, y, n_bins=10, level=0.9, n_samples=300, seed=10**6 + seed)
        inside += int(b.eval('band_lo <= acc <= band_hi').sum())
        w = binomial_bands(bin_stats(q, y, n_bins=10), 0.9)
        binom_inside += int(w.eval('band_lo <= acc <= band_hi').sum())
        total += len(b)
    # 1,500 bins: the binomial SD of the rate is 0.008; bands include their ends (discrete accuracies): at least 0.9
    assert 0.88 <= inside / total <= 0.94
    assert 0.88 <= binom_inside / total <= 0.95 and binom_inside >= inside - 15   # binomial bands: a little wide


def test_band_equals_binomial_quantiles_where_confidences_are_equal():
    p = np.repeat([0.1, 0.5, 0.9], 200)
    y = (np.random.default_rng(2).random(600) < p).astype(np.uint8)
    got = consistency_bands(p, y, n_bins=3, level=0.95, n_samples=100_000, seed=0)
    want = binom.ppf([[0.025], [0.975]], 200, [0.1, 0.5, 0.9]) / 200
    assert np.array_equal(got[['band_lo', 'band_hi']].to_numpy().T, want)


def test_risk_coverage_chart_has_the_baselines_on_bounded_points():
    ev = over_confident(100_000, 5)
    spec = risk_coverage_chart(ev).to_dict()
    assert [l['name'] for l in spec['layer']] == ['random', 'oracle', 'model']
    pts = pd.DataFrame(next(iter(spec['datasets'].values())))
    assert pts.curve.value_counts().to_dict() == {'model': 200, 'oracle': 200, 'random': 2}
    c, y = ev.conf.to_numpy(), ev.correct.to_numpy()
    model, oracle = pts[pts.curve == 'model'], pts[pts.curve == 'oracle']
    k = np.rint(model.coverage.to_numpy() * len(c)).astype(int)          # events accepted at each point
    order = np.argsort(-c, kind='stable')
    errors = np.cumsum(1 - y[order])[k - 1]                              # no ties: continuous confidences
    assert np.allclose(model.risk, errors / k, rtol=0, atol=1e-12)
    assert np.allclose(oracle.risk, np.maximum(0, k - y.sum()) / k, rtol=0, atol=1e-12)
    assert np.allclose(pts[pts.curve == 'random'].risk, 1 - y.mean(), rtol=0, atol=1e-15)


def test_reliability_bands_are_opt_in():
    ev = over_confident(3000, 1)
    plain, banded = reliability(ev).to_dict(), reliability(ev, bands=True).to_dict()
    assert [l['mark']['type'] for l in plain['vconcat'][0]['layer']] == ['rule', 'rule', 'point']
    assert [l['mark']['type'] for l in banded['vconcat'][0]['layer']] == ['rect', 'rule', 'rule', 'point']
