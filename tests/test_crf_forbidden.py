"""CRF/HMM marginals with forbidden (-inf) transition, start and end scores: exact, no NaN, clear errors."""
import itertools
import numpy as np, pytest
from calibkit.extractors.taggers import crf_marginals, forward_backward


def brute_force(E, W, s, e):
    "Marginals and log Z by enumerating every tag sequence (forbidden ones weigh exp(-inf) = 0)."
    T, K = E.shape
    paths = np.array(list(itertools.product(range(K), repeat=T)))
    score = s[paths[:, 0]] + E[np.arange(T), paths].sum(1) + W[paths[:, :-1], paths[:, 1:]].sum(1) + e[paths[:, -1]]
    top = score[np.isfinite(score)].max()
    w = np.exp(score - top)
    return np.stack([np.bincount(paths[:, t], weights=w, minlength=K) for t in range(T)]) / w.sum(), np.log(w.sum()) + top


def test_forbidden_transitions_match_brute_force():
    rng = np.random.default_rng(7)
    checked = impossible = 0
    for trial in range(200):
        T, K = int(rng.integers(1, 6)), int(rng.integers(2, 5))
        E, W = rng.normal(0, 2, (T, K)), rng.normal(0, 2, (K, K))
        W[rng.random((K, K)) < .4] = -np.inf
        s, e = rng.normal(0, 1, K), rng.normal(0, 1, K)
        s[rng.random(K) < .2] = -np.inf; e[rng.random(K) < .2] = -np.inf
        try: P = crf_marginals(E, W, s, e)
        except ValueError as err:
            assert 'sentence 0 has no possible tag sequence' in str(err)
            paths = np.array(list(itertools.product(range(K), repeat=T)))
            score = s[paths[:, 0]] + W[paths[:, :-1], paths[:, 1:]].sum(1) + e[paths[:, -1]]
            assert np.isneginf(score).all()                     # brute force agrees: no allowed sequence
            impossible += 1
            continue
        P_ref, lz_ref = brute_force(E, W, s, e)
        np.testing.assert_allclose(P, P_ref, atol=1e-10)
        np.testing.assert_allclose(P.sum(1), 1, atol=1e-12)
        assert not np.isnan(P).any()
        _, lz = forward_backward(E[None], W, s, e)
        np.testing.assert_allclose(lz[0], lz_ref, atol=1e-9)
        checked += 1
    assert checked > 100 and impossible > 0


def test_forbidden_cells_are_exactly_zero_in_a_batch():
    "BIO: O -> I forbidden and no sentence starts with I; batched sentences of mixed lengths."
    W = np.zeros((3, 3)); W[2, 1] = -np.inf
    start = np.array([0., -np.inf, 0.])
    rng = np.random.default_rng(0)
    sents = [rng.normal(0, 1, (T, 3)) for T in (4, 1, 6, 2)]
    out = crf_marginals(sents, W, start)
    for E, P in zip(sents, out):
        assert P[0, 1] == 0.0
        np.testing.assert_allclose(P, brute_force(E, W, start, np.zeros(3))[0], atol=1e-10)


def test_impossible_sentences_raise_naming_the_sentence():
    W = np.full((2, 2), -np.inf)
    with pytest.raises(ValueError, match='sentence 0 has no possible tag sequence'):
        crf_marginals(np.zeros((2, 2)), W)
    # one-token sentences use no transition; the sorted batch still names the caller's index
    with pytest.raises(ValueError, match='sentence 2 has no possible tag sequence'):
        crf_marginals([np.zeros((1, 2)), np.zeros((1, 2)), np.zeros((3, 2))], W)
    with pytest.raises(ValueError, match='sentence 0 has no possible tag sequence'):
        crf_marginals(np.zeros((1, 2)), np.zeros((2, 2)), start=np.array([0, -np.inf]), end=np.array([-np.inf, 0]))
    np.testing.assert_array_equal(crf_marginals(np.zeros((1, 2)), W), [[.5, .5]])


@pytest.mark.parametrize('bad', [np.nan, np.inf])
def test_nan_and_plus_inf_still_refused(bad):
    for kw in ('transitions', 'start', 'end'):
        args = dict(transitions=np.zeros((2, 2)), start=np.zeros(2), end=np.zeros(2))
        args[kw] = np.where(np.eye(2, dtype=bool)[0] if kw != 'transitions' else np.eye(2, dtype=bool), bad, args[kw])
        with pytest.raises(ValueError, match=f'{kw}: .* values are not finite'):
            crf_marginals(np.zeros((2, 2)), **args)
