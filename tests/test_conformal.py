"""Conformal prediction sets: equal to MAPIE's marginal LAC, APS and randomised APS sets, finite-sample coverage over
random splits (marginal and per group for Mondrian) within binomial error of [1 − α, 1 − α + 1/(n+1)], randomised APS
smaller than deterministic APS, hand cases, bad input."""
import math, warnings
import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from calibkit.conformal import ConformalSets, conformal_quantile, conformal_scores, set_summary

K = 6


class Given(ClassifierMixin, BaseEstimator):
    "A prefit classifier whose features are the probabilities themselves (MAPIE needs an estimator)."
    def __init__(self, k=K): self.k = k
    def fit(self, X, y): self.classes_ = np.arange(self.k); return self
    def predict_proba(self, X): return np.asarray(X, dtype=float)
    def predict(self, X): return np.asarray(X).argmax(1)


class NoNoise(np.random.RandomState):
    "MAPIE's APS subtracts U·p(gold) from the calibration score, U uniform: U = 0 is calibkit's deterministic score."
    def uniform(self, low=0.0, high=1.0, size=None): return np.zeros(size)


class Recorder(np.random.RandomState):
    "MAPIE's random state, keeping every uniform draw (calibration first, then the test rows)."
    def __init__(self, seed):
        super().__init__(seed)
        self.draws = []
    def uniform(self, low=0.0, high=1.0, size=None):
        x = super().uniform(low, high, size)
        self.draws.append(np.asarray(x, dtype=float).ravel())
        return x


def dirichlet_rows(n, k=K, seed=0, conc=0.5):
    "Probability rows from a Dirichlet and gold labels drawn from them (a calibrated model)."
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, conc), n)
    return p, (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)


def mapie_sets(method, alpha, p_cal, y_cal, p_test):
    from mapie.classification import SplitConformalClassifier
    clf = SplitConformalClassifier(Given(p_cal.shape[1]).fit(p_cal, y_cal), confidence_level=1 - alpha,
                                   conformity_score=method, prefit=True, random_state=NoNoise(0))
    clf.conformalize(p_cal, y_cal)
    params = {'include_last_label': False} if method == 'aps' else None
    return clf.predict_set(p_test, conformity_score_params=params)[1][:, :, 0]


@pytest.mark.parametrize('method', ['lac', 'aps'])
@pytest.mark.parametrize('alpha', [0.05, 0.1, 0.3])
def test_marginal_sets_equal_mapie(method, alpha):
    p, y = dirichlet_rows(1200, seed=1)
    cal, test = slice(0, 401), slice(401, None)         # (402)(1 − α) is not an integer: no rounding question
    ours = ConformalSets(alpha, method).fit(p[cal], y[cal]).predict(p[test])
    theirs = mapie_sets(method, alpha, p[cal], y[cal], p[test])
    empty = ~ours.any(axis=1)
    assert (ours[~empty] == theirs[~empty]).all()
    if method == 'lac': assert (ours == theirs).all()
    else:                                               # MAPIE never gives an empty APS set: it keeps the top label
        top = np.eye(K, dtype=bool)[p[test][empty].argmax(axis=1)]
        assert (theirs[empty] == top).all()
    assert ours.sum() > len(ours) * (1 if alpha < 0.3 else 0.5)         # not trivially empty sets


def test_empty_aps_sets_occur_and_differ_from_mapie_only_there():
    "At a large α the deterministic APS set of a confident row can be empty (its top mass alone exceeds q̂)."
    p, y = dirichlet_rows(600, seed=2, conc=0.2)
    ours = ConformalSets(0.4, 'aps').fit(p[:300], y[:300]).predict(p[300:])
    theirs = mapie_sets('aps', 0.4, p[:300], y[:300], p[300:])
    empty = ~ours.any(axis=1)
    assert empty.sum() > 0
    assert (theirs.sum(axis=1)[empty] == 1).all() and (ours[~empty] == theirs[~empty]).all()


def test_quantile_equals_mapies_order_statistic():
    from mapie.utils import _compute_classification_quantile
    s = np.random.default_rng(3).random(257)
    for alpha in (0.02, 0.1, 0.25, 0.5):
        assert conformal_quantile(s, alpha) == _compute_classification_quantile(s, np.array([alpha]))[0]


@pytest.mark.parametrize('alpha', [0.05, 0.1, 0.3])
@pytest.mark.parametrize('seed', [0, 1])
def test_randomized_aps_equals_mapies_randomized_sets(alpha, seed):
    """MAPIE subtracts V·p(gold) from the mass at or above the gold label (V uniform) and, with
    include_last_label='randomized', keeps the label crossing the quantile when V_test >= (mass up to it − q)/p:
    Romano et al.'s randomised score with U = 1 − V. Given MAPIE's own draws the sets are equal."""
    from mapie.classification import SplitConformalClassifier
    p, y = dirichlet_rows(1200, seed=10 + seed)
    cal, test = slice(0, 401), slice(401, None)
    rs = Recorder(seed)
    clf = SplitConformalClassifier(Given(K).fit(p[cal], y[cal]), confidence_level=1 - alpha, conformity_score='aps',
                                   prefit=True, random_state=rs)
    clf.conformalize(p[cal], y[cal])
    theirs = clf.predict_set(p[test], conformity_score_params={'include_last_label': 'randomized'})[1][:, :, 0]
    v_cal, v_test = rs.draws
    assert len(v_cal) == 401 and len(v_test) == 799
    cs = ConformalSets(alpha, 'aps', randomized=True).fit(p[cal], y[cal], u=1 - v_cal)
    ours = cs.predict(p[test], u=1 - v_test)
    assert (ours == theirs).all(), int((ours != theirs).sum())
    assert abs(cs.quantile_['all'] - clf._mapie_classifier.conformity_score_function_.quantiles_[0]) < 1e-12
    assert (~ours.any(axis=1)).sum() > 0 if alpha == 0.3 else True     # randomised sets can be empty, MAPIE's too
    assert ours.sum() > len(ours) * 0.5


def coverage_over_splits(method, groups, n_splits=300, n_cal=300, n_test=600, alpha=0.1, randomized=False):
    "Per split: coverage overall and per group of the gold label (NaN for a group absent from a test split)."
    p, y = dirichlet_rows(n_cal + n_test, seed=4)
    gid = np.zeros(K, int) if groups is None else np.array([groups[j] for j in range(K)])
    rows = []
    for r in range(n_splits):
        perm = np.random.default_rng(100 + r).permutation(len(y))
        cal, test = perm[:n_cal], perm[n_cal:]
        with warnings.catch_warnings():
            warnings.simplefilter('error')              # every group has enough calibration rows
            sets = ConformalSets(alpha, method, groups=groups, randomized=randomized, random_state=r)
            sets = sets.fit(p[cal], y[cal]).predict(p[test])
        hit = sets[np.arange(n_test), y[test]]
        g = gid[y[test]]
        rows.append([hit.mean()] + [hit[g == k].mean() if (g == k).any() else np.nan for k in range(gid.max() + 1)])
    return np.array(rows), gid[y], alpha


def binomial_band(cover, alpha, n_cal, n_test):
    """[1 − α − 4 sd, 1 − α + 1/(n+1) + 4 sd] for the mean coverage over splits. sd of one split's coverage:
    the Beta(k, n+1−k) spread of the coverage a calibration draw gives plus the binomial spread of n_test test rows
    (both at most α(1−α)/size). The splits permute one fixed pool of rows: a random permutation is exchangeable,
    so the guarantee holds given the pool, and the R splits are independent draws given it."""
    var = alpha * (1 - alpha) * (1 / (n_cal + 2) + 1 / n_test)
    sd = math.sqrt(var / len(cover))
    return 1 - alpha - 4 * sd, 1 - alpha + 1 / (n_cal + 1) + 4 * sd


@pytest.mark.parametrize('method, randomized', [('lac', False), ('aps', False), ('aps', True)])
def test_marginal_coverage_is_at_least_one_minus_alpha_over_random_splits(method, randomized):
    cover, _, alpha = coverage_over_splits(method, None, randomized=randomized)
    lo, hi = binomial_band(cover[:, 0], alpha, 300, 600)
    assert lo <= cover[:, 0].mean() <= hi, (cover[:, 0].mean(), lo, hi)


@pytest.mark.parametrize('method, randomized', [('lac', False), ('aps', False), ('aps', True)])
def test_mondrian_coverage_holds_in_every_group_over_random_splits(method, randomized):
    groups = {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 2}
    cover, gold_group, alpha = coverage_over_splits(method, groups, randomized=randomized)
    share = np.bincount(gold_group) / len(gold_group)
    for k in range(3):
        c = cover[:, 1 + k]
        c = c[~np.isnan(c)]
        lo, hi = binomial_band(c, alpha, 300 * share[k], 600 * share[k])
        assert lo <= c.mean() <= hi, (k, c.mean(), lo, hi)


@pytest.mark.parametrize('alpha', [0.05, 0.1, 0.2])
def test_randomized_aps_sets_are_smaller_on_average_than_deterministic_ones(alpha):
    "Over 100 random splits, the mean set size of randomised APS is smaller by more than 4 standard errors."
    p, y = dirichlet_rows(900, seed=8)
    rand, det = [], []
    for r in range(100):
        perm = np.random.default_rng(200 + r).permutation(len(y))
        cal, test = perm[:300], perm[300:]
        rand.append(ConformalSets(alpha, 'aps', randomized=True, random_state=r).fit(p[cal], y[cal])
                    .predict(p[test]).sum(axis=1).mean())
        det.append(ConformalSets(alpha, 'aps').fit(p[cal], y[cal]).predict(p[test]).sum(axis=1).mean())
    rand, det = np.array(rand), np.array(det)
    diff = det - rand
    assert diff.mean() > 4 * diff.std(ddof=1) / np.sqrt(len(diff)), (det.mean(), rand.mean())


def test_randomized_draws_are_seeded_and_independent_between_fit_and_predict():
    p, y = dirichlet_rows(400, seed=9)
    a = ConformalSets(0.1, 'aps', randomized=True, random_state=3).fit(p[:200], y[:200])
    b = ConformalSets(0.1, 'aps', randomized=True, random_state=3).fit(p[:200], y[:200])
    assert a.quantile_.equals(b.quantile_) and (a.predict(p[200:]) == b.predict(p[200:])).all()
    u_fit, u_predict = (np.random.default_rng([3, k]).random(200) for k in (0, 1))
    assert not np.allclose(u_fit, u_predict)
    c = ConformalSets(0.1, 'aps', randomized=True).fit(p[:200], y[:200], u=u_fit)
    assert c.quantile_.equals(a.quantile_) and (c.predict(p[200:], u=u_predict) == a.predict(p[200:])).all()
    # the draw decides only the label that crosses the quantile: with the deterministic quantile (calibration u = 1), a
    # randomised set holds the deterministic set and at most one more label, the next one by probability
    det = ConformalSets(0.1, 'aps').fit(p[:200], y[:200])
    at_one = ConformalSets(0.1, 'aps', randomized=True).fit(p[:200], y[:200], u=np.ones(200))
    assert at_one.quantile_.equals(det.quantile_)
    d, r = det.predict(p[200:]), at_one.predict(p[200:], u=u_predict)
    assert (r >= d).all() and set(np.unique(r.sum(1) - d.sum(1))) == {0, 1}
    extra = r & ~d
    rank = np.argsort(np.argsort(-p[200:], axis=1), axis=1)         # 0 = the most probable label
    assert (rank[extra] == d.sum(1)[extra.any(1)]).all()


def test_mondrian_repairs_an_under_covered_group_that_marginal_misses():
    "A model blind to the rare labels (flat scores there): marginal sets under-cover them, Mondrian sets do not."
    rng = np.random.default_rng(5)
    n = 6000
    y = rng.choice(K, n, p=[0.3, 0.3, 0.3, 0.04, 0.03, 0.03])
    z = 3.0 * np.eye(K)[y] * (y < 3)[:, None] + rng.normal(0, 1, (n, K))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    groups = {j: 'rare' if j >= 3 else 'frequent' for j in range(K)}
    half = n // 2
    marginal = set_summary(ConformalSets(0.1).fit(p[:half], y[:half]).predict(p[half:]), y[half:], groups)
    mondrian = ConformalSets(0.1, groups=groups).fit(p[:half], y[:half]).predict(p[half:])
    mondrian = set_summary(mondrian, y[half:], groups)
    rare = lambda t: t.set_index('group').loc['rare', 'coverage']
    assert rare(marginal) < 0.6 and rare(mondrian) >= 0.86


def test_label_is_tested_against_its_own_groups_quantile():
    "Hand case: two groups with quantiles 0.5 and 0.9; a label is in the set iff 1 − p <= its group's quantile."
    p = np.array([[0.5, 0.3, 0.2], [0.3, 0.5, 0.2], [0.2, 0.5, 0.3], [0.6, 0.3, 0.1],
                  [0.5, 0.4, 0.1], [0.3, 0.3, 0.4], [0.4, 0.2, 0.4], [0.1, 0.1, 0.8]])
    y = np.array([0, 1, 1, 0, 2, 2, 2, 0])
    # group A = labels {0, 1}: rows 0,1,2,3,7, LAC scores 0.5, 0.5, 0.5, 0.4, 0.9; alpha = 0.2:
    # k = ceil(6 * 0.8) = 5 -> q_A = 0.9 (the largest). Group B = label {2}: rows 4,5,6, scores 0.9, 0.6, 0.6:
    # k = ceil(4 * 0.8) = 4 > 3 -> q_B = inf (with a warning): label 2 is in every set.
    with pytest.warns(UserWarning, match=r"1 of 2 group\(s\) have fewer than 4 calibration rows.*\{'B': 3\}"):
        cs = ConformalSets(0.2, groups={0: 'A', 1: 'A', 2: 'B'}).fit(p, y)
    assert cs.quantile_.to_dict() == {'A': 0.9, 'B': math.inf}
    assert cs.n_.to_dict() == {'A': 5, 'B': 3}
    new = np.array([[0.05, 0.05, 0.9], [0.7, 0.2, 0.1]])
    assert cs.predict(new).tolist() == [[False, False, True], [True, True, True]]   # 1 − 0.05 = 0.95 > 0.9


def test_set_summary_by_hand():
    sets = np.array([[1, 1, 0], [0, 1, 0], [1, 1, 1], [0, 0, 1]], dtype=bool)
    gold = np.array([0, 0, 2, 1])
    t = set_summary(sets, gold, {0: 'x', 1: 'y', 2: 'y'})
    assert t.group.tolist() == ['x', 'y', 'overall']
    assert t.n.tolist() == [2, 2, 4]
    assert t.coverage.tolist() == [0.5, 0.5, 0.5]
    assert t.mean_size.tolist() == [1.5, 2.0, 1.75]


def test_set_summary_warns_about_a_group_without_rows():
    sets = np.array([[1, 0, 0], [1, 1, 0]], dtype=bool)
    with pytest.warns(UserWarning, match=r"1 group\(s\) have no rows and are left out: \['z'\]"):
        t = set_summary(sets, [0, 1], {0: 'x', 1: 'x', 2: 'z'})
    assert t.group.tolist() == ['x', 'overall']


def test_a_group_without_calibration_rows_gives_the_full_set_for_its_labels():
    p, y = dirichlet_rows(400, seed=6)
    keep = y != 5
    with pytest.warns(UserWarning, match=r"\{'rare': 0\}"):
        cs = ConformalSets(0.1, groups={j: 'rare' if j == 5 else 'rest' for j in range(K)}).fit(p[keep], y[keep])
    assert cs.predict(p)[:, 5].all()


@pytest.mark.parametrize('call, err, msg', [
    (lambda: ConformalSets(alpha=0), ValueError, 'alpha must be a finite number in (0, 1)'),
    (lambda: ConformalSets(alpha=1.5), ValueError, 'alpha must be a finite number in (0, 1)'),
    (lambda: ConformalSets(alpha='0.1'), ValueError, 'alpha must be'),
    (lambda: ConformalSets(method='raps'), ValueError, "method must be one of 'lac', 'aps'"),
    (lambda: conformal_scores([[0.5, 0.6]], [0]), ValueError, 'scores: 1 of 1 rows do not sum to 1'),
    (lambda: conformal_scores([[1.5, -0.5]], [0]), ValueError, 'outside [0, 1]'),
    (lambda: conformal_scores([[0.5, 0.5]], [2]), ValueError, 'gold: 1 of 1 ids are outside [0, 2)'),
    (lambda: conformal_scores([[0.5, 0.5]], [0, 1]), ValueError, 'gold has 2 values but scores has 1 rows'),
    (lambda: conformal_scores([0.5, 0.5], [0]), ValueError, 'scores must be 2-dimensional'),
    (lambda: ConformalSets(groups={}).fit([[0.5, 0.5]], [0]), ValueError, 'groups is empty'),
    (lambda: ConformalSets(groups={0: 'a'}).fit([[0.5, 0.5]], [0]), ValueError, 'have no group'),
    (lambda: ConformalSets(groups='ab').fit([[0.5, 0.5]], [0]), TypeError, 'groups must map label -> group'),
    (lambda: ConformalSets().predict([[0.5, 0.5]]), ValueError, 'not fitted'),
    (lambda: set_summary([[1, 0]], [0]), TypeError, 'sets must be a boolean'),
    (lambda: conformal_quantile([[0.1]], 0.1), ValueError, 's must be 1-dimensional'),
    (lambda: ConformalSets(method='lac', randomized=True), ValueError, "randomized=True applies to method='aps' only"),
    (lambda: ConformalSets(randomized='yes'), TypeError, 'randomized must be True or False'),
    (lambda: ConformalSets(random_state=1.5), ValueError, 'random_state must be an integer >= 0'),
    (lambda: ConformalSets(method='aps', randomized=True).fit([[0.5, 0.5]], [0], u=[2.0]), ValueError,
     'u: 1 of 1 values are outside [0, 1]'),
    (lambda: ConformalSets(method='aps').fit([[0.5, 0.5]], [0], u=[0.5]), ValueError,
     'applies to randomized=True only'),
    (lambda: conformal_scores([[0.5, 0.5]], [0], 'aps', u=[0.1, 0.2]), ValueError, 'u has 2 values but scores has 1'),
])
def test_bad_input_names_the_argument(call, err, msg):
    with pytest.raises(err) as e: call()
    assert msg in str(e.value), str(e.value)


def test_label_names_work_like_ids_and_must_match_the_columns():
    p, y = dirichlet_rows(300, seed=7)
    names = list('abcdef')
    by_id = ConformalSets(0.1, 'aps', groups={0: 1, 1: 1, 2: 1, 3: 2, 4: 2, 5: 2}).fit(p, y)
    by_name = ConformalSets(0.1, 'aps', groups=dict(zip(names, [1, 1, 1, 2, 2, 2])), labels=names)
    by_name.fit(p, np.array(names)[y])
    assert by_id.quantile_.equals(by_name.quantile_) and (by_id.predict(p) == by_name.predict(p)).all()
    with pytest.raises(ValueError, match='labels has 2 names but scores has 6 columns'):
        ConformalSets(labels=['a', 'b']).fit(p, y)
    with pytest.raises(ValueError, match='labels has 2 names but there are 6 columns'):
        set_summary(by_id.predict(p), y, labels=['a', 'b'])


def test_lac_sets_equal_mapies_only_up_to_its_1e8_tolerance():
    "A label scoring 5e-9 above the quantile: in MAPIE's set (it compares with a 1e-8 tolerance), not in calibkit's."
    p, y = dirichlet_rows(401, seed=1)
    cs = ConformalSets(0.1, 'lac').fit(p, y)
    q = cs.quantile_['all']
    row = np.zeros((1, K))
    row[0, :2] = 1 - (q + 5e-9), q + 5e-9                 # label 0's LAC score 1 − p is 5e-9 above q
    assert (1 - row[0, 0]) - q == pytest.approx(5e-9, rel=1e-6)
    assert cs.predict(row)[0].tolist() == [False, True] + [False] * (K - 2)
    assert mapie_sets('lac', 0.1, p, y, row)[0].tolist() == [True, True] + [False] * (K - 2)
