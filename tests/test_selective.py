"""Selective prediction: hand cases, the tie convention against exhaustive tie-breaking, AUROC against scikit-learn,
PRR = 2·AUROC − 1, row-order independence (hypothesis), invariance to monotone recalibration, bad input."""
import itertools, warnings
import numpy as np, pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import roc_auc_score
from calibkit.selective import (augrc, aurc, auroc, e_aurc, prr, ranking, risk_coverage, selective_risk,
                                selective_summary)

ALL = [aurc, e_aurc, augrc, auroc, prr]


def untied_metrics(wrong_in_order: np.ndarray) -> dict:
    "The textbook formulas for one strict order (most confident first), given each position's error indicator."
    n = len(wrong_in_order)
    i = np.arange(1, n + 1)
    errs = np.cumsum(wrong_in_order)
    e = errs[-1]
    oracle = np.maximum(0, i - (n - e)) / i
    return dict(aurc=np.mean(errs / i), e_aurc=np.mean(errs / i - oracle), augrc=np.mean(errs / n), risk2=errs[1] / 2)


@pytest.mark.parametrize('conf, correct', [
    ([0.9, 0.8, 0.8, 0.6, 0.3], [1, 1, 0, 1, 0]),
    ([0.5, 0.5, 0.5, 0.5, 0.2, 0.9], [1, 0, 0, 1, 1, 0]),
    ([0.7, 0.7, 0.7], [1, 0, 1]),
    ([0.1, 0.2, 0.2, 0.2, 0.9, 0.9], [0, 1, 0, 0, 1, 1]),
])
def test_ties_count_at_their_expectation_over_all_orders(conf, correct):
    "Each metric equals the average of its tie-free formula over every order of the tied events (n! orders)."
    conf, correct = np.array(conf), np.array(correct)
    vals = []
    for perm in itertools.permutations(range(len(conf))):
        o = np.lexsort((np.array(perm), -conf))           # descending confidence, ties broken by `perm`
        w = 1 - correct[o]
        pairs = [(a, b) for a in range(len(o)) for b in range(len(o)) if w[a] == 0 and w[b] == 1]
        strict = np.mean([a < b for a, b in pairs])       # correct ranked above wrong in this strict order
        vals.append(untied_metrics(w) | dict(auroc=strict))
    mean = pd.DataFrame(vals).mean()
    assert aurc(conf, correct) == pytest.approx(mean.aurc, rel=1e-12)
    assert e_aurc(conf, correct) == pytest.approx(mean.e_aurc, rel=1e-12, abs=1e-15)
    assert augrc(conf, correct) == pytest.approx(mean.augrc, rel=1e-12)
    assert auroc(conf, correct) == pytest.approx(mean.auroc, rel=1e-12)
    assert selective_risk(conf, correct, coverage=2 / len(conf)) == pytest.approx(mean.risk2, rel=1e-12, abs=1e-15)


def test_hand_case():
    conf, correct = [0.9, 0.8, 0.8, 0.6, 0.3], [1, 1, 0, 1, 0]
    assert aurc(conf, correct) == pytest.approx((0 + 0.5 / 2 + 1 / 3 + 1 / 4 + 2 / 5) / 5, rel=1e-14)
    assert augrc(conf, correct) == pytest.approx(4.5 / 25, rel=1e-14)
    assert auroc(conf, correct) == pytest.approx(4.5 / 6, rel=1e-14)
    assert prr(conf, correct) == pytest.approx(0.5, rel=1e-13)
    rc = risk_coverage(pd.DataFrame({'conf': conf, 'correct': correct}))
    assert rc.conf.tolist() == [0.9, 0.8, 0.6, 0.3] and rc.gen_risk.tolist() == [0, 0.2, 0.2, 0.4]


def test_without_ties_aurc_is_the_mean_selective_risk():
    rng = np.random.default_rng(3)
    q = rng.random(20000)
    y = (rng.random(20000) < q).astype(np.uint8)
    w = 1 - y[np.argsort(-q)]
    ref = untied_metrics(w)
    assert aurc(q, y) == pytest.approx(ref['aurc'], rel=1e-12)
    assert e_aurc(q, y) == pytest.approx(ref['e_aurc'], rel=1e-10)
    assert augrc(q, y) == pytest.approx(ref['augrc'], rel=1e-12)
    assert selective_risk(q, y, coverage=0.9) == pytest.approx(np.cumsum(w)[17999] / 18000, rel=1e-14)


def test_oracle_and_reversed_rankings():
    q = np.linspace(0.01, 0.99, 101)
    y = (q > 0.4).astype(np.uint8)
    assert e_aurc(q, y) == pytest.approx(0, abs=1e-15) and auroc(q, y) == 1 and prr(q, y) == pytest.approx(1, rel=1e-13)
    assert auroc(q, 1 - y) == 0 and prr(q, 1 - y) == pytest.approx(-1, rel=1e-13)
    const = np.full(101, 0.5)         # one tie: every metric at the random ranking's value
    assert auroc(const, y) == 0.5 and prr(const, y) == pytest.approx(0, abs=1e-13)
    e, n = 101 - int(y.sum()), 101
    assert augrc(const, y) == pytest.approx(e * (n + 1) / (2 * n * n), rel=1e-14)
    assert aurc(const, y) == pytest.approx(e / n, rel=1e-13)


tied = st.lists(st.tuples(st.sampled_from([0.0, 0.1, 0.35, 0.5, 0.5 + 1e-12, 0.9, 1.0]), st.booleans()),
                min_size=2, max_size=120)


@settings(max_examples=150, deadline=None)
@given(tied, st.randoms(use_true_random=False))
def test_row_order_does_not_matter_and_auroc_is_sklearns(rows, rnd):
    q, y = np.array([r[0] for r in rows]), np.array([r[1] for r in rows], dtype=np.uint8)
    o = list(range(len(q))); rnd.shuffle(o)
    pd.testing.assert_frame_equal(risk_coverage(q, y), risk_coverage(q[o], y[o]))
    for f in (aurc, e_aurc, augrc):
        assert f(q, y) == f(q[o], y[o])
    assert (selective_risk(q, y, coverage=[0.5, 0.9, 1.0]) == selective_risk(q[o], y[o], coverage=[0.5, 0.9, 1.0])).all()
    if 0 < y.sum() < len(y):
        assert auroc(q, y) == auroc(q[o], y[o]) and prr(q, y) == prr(q[o], y[o])
        assert auroc(q, y) == pytest.approx(roc_auc_score(y, q), rel=1e-12, abs=1e-15)
        assert prr(q, y) == pytest.approx(2 * auroc(q, y) - 1, rel=1e-9, abs=1e-12)
    assert 0 <= augrc(q, y) <= aurc(q, y) + 1e-15 <= 1 + 1e-15 and e_aurc(q, y) >= -1e-12


def test_monotone_recalibration_changes_nothing_merging_ties_does():
    rng = np.random.default_rng(1)
    q = rng.beta(4, 2, 5000)
    y = (rng.random(5000) < q).astype(np.uint8)
    for f in ALL:
        assert f(q ** 3, y) == pytest.approx(f(q, y), rel=1e-12), f.__name__
    assert auroc(np.round(q, 1), y) < auroc(q, y)         # merging confidences into ties loses ranking


def test_summary_is_the_single_metrics():
    rng = np.random.default_rng(2)
    q = np.round(rng.beta(4, 2, 3000), 2)
    y = (rng.random(3000) < q).astype(np.uint8)
    s = selective_summary(q, y, coverages=[0.5, 0.99])
    assert list(s.index) == ['aurc', 'e_aurc', 'augrc', 'auroc', 'prr', 'risk@0.5', 'risk@0.99']
    want = [f(q, y) for f in ALL] + list(selective_risk(q, y, coverage=[0.5, 0.99]))
    np.testing.assert_allclose(s.to_numpy(), want, rtol=1e-10)
    with pytest.warns(UserWarning, match='all 3 events are wrong'):
        s = selective_summary([0.2, 0.4, 0.4], [0, 0, 0])
    assert np.isnan(s[['auroc', 'prr']]).all() and s.aurc == 1.0


def test_ranking_counts():
    r = ranking([0.3, 0.3, 1.0, 0.0], [1, 0, 1, 0])
    assert r.conf.tolist() == [1.0, 0.3, 0.0] and r.m.tolist() == [1, 2, 1] and r.e.tolist() == [0, 1, 1]
    assert r.n == 4 and r.errors == 2


@pytest.mark.parametrize('call, exc, match', [
    (lambda: auroc([0.2, 0.4], [1, 1]), ValueError, 'all 2 events are correct'),
    (lambda: prr([0.2, 0.4], [0, 0]), ValueError, 'all 2 events are wrong'),
    (lambda: aurc([0.2, 0.4], [1]), ValueError, 'lengths must match'),
    (lambda: augrc([0.2, np.inf], [1, 0]), ValueError, 'infinite'),
    (lambda: e_aurc([], []), ValueError, 'empty'),
    (lambda: risk_coverage(['a', 'b'], [1, 0]), TypeError, 'numeric'),
    (lambda: selective_risk([0.2, 0.4], [1, 0], coverage=1.5), ValueError, r'coverage must be in \(0, 1\]'),
    (lambda: selective_risk([0.2, 0.4], [1, 0], coverage=[0.5, np.nan]), ValueError, 'coverage must be in'),
    (lambda: selective_summary([0.2, 0.4], [1, 0], coverages=[0]), ValueError, 'coverages must be in'),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


from edge import EDGE  # noqa: E402


@pytest.mark.parametrize('case', EDGE)
def test_edge_data_gives_finite_values_or_says_why_not(case):
    c, y = EDGE[case]
    one_class = y.all() or not y.any()
    vals = [aurc(c, y), e_aurc(c, y), augrc(c, y), *risk_coverage(c, y).to_numpy().ravel(), selective_risk(c, y)]
    assert np.isfinite(vals).all()
    if one_class:
        for f in (auroc, prr):
            with pytest.raises(ValueError, match='need both correct and wrong events'):
                f(c, y)
        with pytest.warns(UserWarning, match='reported as NaN'):
            assert np.isnan(selective_summary(c, y)[['auroc', 'prr']]).all()
    else:
        assert np.isfinite(selective_summary(c, y)).all()


@settings(max_examples=60, deadline=None)
@given(tied, st.integers(2, 40))
def test_thinned_curve_keeps_exact_points_evenly_in_coverage(rows, k):
    q, y = np.array([r[0] for r in rows]), np.array([r[1] for r in rows], dtype=np.uint8)
    full, thin = risk_coverage(q, y), risk_coverage(q, y, max_points=k)
    assert len(thin) <= k and thin.coverage.iloc[-1] == 1.0 and thin.coverage.is_monotonic_increasing
    pd.testing.assert_frame_equal(thin, full[full.conf.isin(thin.conf)].reset_index(drop=True))
    for i in range(1, k + 1):          # every level i/k is reached by a kept point no later than by the full curve
        first = full.coverage[full.coverage >= np.ceil(i * len(q) / k) / len(q) - 1e-12].iloc[0]
        assert first in set(thin.coverage)


def test_max_points_is_validated():
    with pytest.raises(ValueError, match='max_points must be an integer'):
        risk_coverage([0.2, 0.4], [1, 0], max_points=1)
