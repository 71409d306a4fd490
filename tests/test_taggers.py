"Tagger confidences: forward–backward against brute force and crfsuite, numerics at scale, the models, bad input."
import itertools, warnings
from pathlib import Path
import numpy as np, pytest
from hypothesis import given, settings, strategies as st
from sklearn.exceptions import ConvergenceWarning
import calibkit
from calibkit.datasets.conll import read_conll
from calibkit.extractors.taggers import crf_marginals, forward_backward, from_crfsuite, softmax, tagger_events
from calibkit.models.taggers import CRFTagger, HMMTagger, SoftmaxTagger, events_from_tagger, token_features

DATA = Path(__file__).resolve().parents[1]/'calibkit'/'data'/'twpos'


def brute_force(E, W, s, e):
    "Marginals and log Z of a linear-chain CRF by enumerating all K^T tag sequences."
    T, K = E.shape
    paths = np.array(list(itertools.product(range(K), repeat=T)))
    score = s[paths[:, 0]] + E[np.arange(T), paths].sum(1) + W[paths[:, :-1], paths[:, 1:]].sum(1) + e[paths[:, -1]]
    w = np.exp(score - score.max())
    P = np.stack([np.bincount(paths[:, t], weights=w, minlength=K) for t in range(T)]) / w.sum()
    return P, np.log(w.sum()) + score.max()


def reference_marginals(E, W):
    "Unnormalised log-space recursions (no per-step shifts, log Z from the last alpha): a second route for long sentences."
    def lse(x, axis):
        m = x.max(axis=axis, keepdims=True)
        return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)
    T, K = E.shape
    a, b = np.empty((T, K)), np.zeros((T, K))
    a[0] = E[0]
    for t in range(1, T): a[t] = lse(a[t - 1][:, None] + W, 0) + E[t]
    for t in range(T - 2, -1, -1): b[t] = lse(W + E[t + 1] + b[t + 1], 1)
    return np.exp(a + b - lse(a[-1], 0))


@pytest.fixture(scope='module')
def twpos():
    return {s: read_conll(DATA/f'oct27.{s}') for s in ('train', 'dev')}


@settings(max_examples=60, deadline=None)
@given(T=st.integers(1, 5), K=st.integers(1, 4), scale=st.sampled_from([0.1, 1.0, 10.0, 100.0]),
       ends=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_crf_marginals_equal_brute_force(T, K, scale, ends, seed):
    rng = np.random.default_rng(seed)
    E, W = rng.normal(0, scale, (T, K)), rng.normal(0, scale, (K, K))
    s, e = (rng.normal(0, scale, K), rng.normal(0, scale, K)) if ends else (np.zeros(K), np.zeros(K))
    P, log_z = brute_force(E, W, s, e)
    ours = crf_marginals(E, W, s, e) if ends else crf_marginals(E, W)
    np.testing.assert_allclose(ours, P, rtol=0, atol=1e-9)
    np.testing.assert_allclose(ours.sum(1), 1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(forward_backward(E[None], W, s, e)[1][0], log_z, rtol=1e-12, atol=1e-9)


def test_padded_batch_equals_one_sentence_at_a_time():
    rng = np.random.default_rng(1)
    K = 5
    W, s, e = rng.normal(0, 2, (K, K)), rng.normal(0, 2, K), rng.normal(0, 2, K)
    sents = [rng.normal(0, 2, (T, K)) for T in (4, 1, 9, 2, 9, 3)]
    batch = crf_marginals(sents, W, s, e)
    for m, E in zip(batch, sents):
        np.testing.assert_allclose(m, crf_marginals(E, W, s, e), rtol=0, atol=1e-13)
    padded = np.stack([np.pad(E, ((0, 9 - len(E)), (0, 0)), constant_values=50.0) for E in sents])   # padding must not leak
    P, log_z = forward_backward(padded, W, s, e, lengths=[len(E) for E in sents])
    for i, E in enumerate(sents):
        np.testing.assert_allclose(P[i, :len(E)], batch[i], rtol=0, atol=1e-13)
        assert (P[i, len(E):] == 0).all()
        np.testing.assert_allclose(log_z[i], forward_backward(E[None], W, s, e)[1][0], rtol=1e-13)


@pytest.mark.parametrize('K, scale', [(100, 3.0), (600, 1e4)])
def test_no_underflow_at_200_tokens_and_600_tags(K, scale):
    rng = np.random.default_rng(2)
    T = 200
    E, W = rng.normal(0, scale, (T, K)), rng.normal(0, scale, (K, K))
    P = crf_marginals(E, W)
    assert np.isfinite(P).all() and (P >= 0).all() and (P <= 1).all()
    np.testing.assert_allclose(P.sum(1), 1, rtol=0, atol=1e-9)
    np.testing.assert_allclose(P, reference_marginals(E, W), rtol=0, atol=1e-7)


def test_hmm_marginals_equal_brute_force():
    "Random toy corpora: posterior from forward–backward = Σ over tag sequences of P(x, y), a product of probabilities."
    rng = np.random.default_rng(3)
    vocab, tagset = ['a', 'b', 'c', 'Dd', 'e1', '@x'], ['A', 'B', 'C']
    for trial in range(5):
        sents = [list(rng.choice(vocab, rng.integers(1, 6))) for _ in range(12)]
        tags = [list(rng.choice(tagset, len(s))) for s in sents]
        hmm = HMMTagger(k_emit=rng.uniform(.01, 1), k_trans=rng.uniform(.01, 1)).fit(sents, tags)
        e, A = np.exp(hmm.log_emit_), np.exp(hmm.log_trans_)
        pi, stop = np.exp(hmm.log_start_), np.exp(hmm.log_end_)
        for sent in (['a', 'b', 'zzz', 'c'], ['@new'], ['Dd', 'e1', 'b', 'b', 'a']):
            x = hmm.word_ids([sent])
            K, T = len(hmm.tags_), len(sent)
            P = np.zeros((T, K))
            for y in itertools.product(range(K), repeat=T):
                p = pi[y[0]] * stop[y[-1]] * np.prod(e[list(y), x]) * np.prod(A[list(y[:-1]), list(y[1:])])
                P[np.arange(T), y] += p
            np.testing.assert_allclose(hmm.marginals([sent])[0], P / P.sum(1, keepdims=True), rtol=0, atol=1e-12)


@pytest.mark.parametrize('features', ['basic', 'advanced'])
def test_crf_marginals_match_crfsuite(twpos, features):
    crf = CRFTagger(features, max_iterations=30).fit(twpos['train'].tokens[:200], twpos['train'].tags[:200])
    sents = twpos['dev'].tokens[:100]
    ours = np.concatenate(calibkit.crf_marginals(*crf.potentials(sents)))
    theirs = np.concatenate(crf.marginals(sents))
    assert np.abs(ours - theirs).max() < 1e-6
    # the crfsuite extractor and the crf_marginals extractor give the same events
    gold = twpos['dev'].tags[:100]
    a = calibkit.extractor('crfsuite').extract(crf.crf_.predict_marginals([token_features(s, features) for s in sents]), gold)
    pot = crf.potentials(sents)
    b = calibkit.extractor('crf_marginals').extract(pot.emissions, gold, labels=crf.tags_, transitions=pot.transitions)
    assert list(a.item) == list(b.item) and list(a.correct) == list(b.correct)
    np.testing.assert_allclose(a.conf, b.conf, rtol=0, atol=1e-6)


def test_models_are_deterministic_and_agree_on_tags(twpos):
    train = (twpos['train'].tokens[:150], twpos['train'].tags[:150])
    sents = twpos['dev'].tokens[:40]
    makers = [HMMTagger, lambda: CRFTagger('advanced', max_iterations=20), lambda: SoftmaxTagger(max_iter=15)]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', ConvergenceWarning)
        fitted = [(make().fit(*train), make().fit(*train)) for make in makers]
    for m1, m2 in fitted:
        assert m1.tags_ == m2.tags_ == fitted[0][0].tags_
        np.testing.assert_array_equal(np.concatenate(m1.marginals(sents)), np.concatenate(m2.marginals(sents)))
    soft = fitted[2][0]
    np.testing.assert_allclose(np.concatenate([softmax(z) for z in soft.logits(sents)]),
                               np.concatenate(soft.marginals(sents)), rtol=0, atol=1e-12)


def test_events_from_tagger_route_equals_the_models_marginals(twpos):
    "Through each model's own extractor (HMM potentials, crfsuite marginals, softmax logits): the events of its marginals."
    from calibkit.events import events_from_scores, top_label_events
    train = (twpos['train'].tokens[:150], twpos['train'].tags[:150])
    sents, tags = twpos['dev'].tokens[:40], twpos['dev'].tags[:40]
    makers = [HMMTagger, lambda: CRFTagger('basic', max_iterations=20), lambda: SoftmaxTagger(max_iter=15)]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', ConvergenceWarning)
        for make in makers:
            m = make().fit(*train)
            P, gold = np.concatenate(m.marginals(sents)), [t for s in tags for t in s]
            marg = events_from_tagger(m, sents, tags, events='marginal', threshold=.05)
            ref = events_from_scores(P, gold, threshold=.05, labels=m.tags_)
            np.testing.assert_allclose(marg.conf.to_numpy(), ref.conf.to_numpy(), atol=1e-9)
            np.testing.assert_array_equal(marg.correct.to_numpy(), ref.correct.to_numpy())
            top = events_from_tagger(m, sents, tags, events='top')
            np.testing.assert_allclose(top.conf.to_numpy(), top_label_events(P, gold, labels=m.tags_).conf.to_numpy(), atol=1e-9)
    with pytest.raises(TypeError, match='model must be an HMMTagger, CRFTagger or SoftmaxTagger'):
        events_from_tagger(object(), sents, tags)


def test_query_events_from_each_route():
    P = np.array([[.6, .3, .1], [.2, .7, .1], [.1, .1, .8]])
    gold = ['N', 'V', 'V']
    labels = ['N', 'V', 'D']
    for ev in (tagger_events(P, gold, events='query', tag='V', labels=labels),
               calibkit.extractor('softmax', kind='logits', events='query', tag='V').extract(np.log(P) - 7, gold, labels=labels),
               calibkit.extractor('crfsuite', events='query', tag='V').extract([[dict(zip(labels, r)) for r in P]], [gold])):
        np.testing.assert_allclose(ev.conf, [.3, .7, .1], rtol=0, atol=1e-12)
        assert list(ev.correct) == [0, 1, 1] and set(ev.kind) == {'query'}


bad_inputs = [
    (lambda: crf_marginals(np.zeros((0, 3)), np.zeros((3, 3))), ValueError, 'empty sentence'),
    (lambda: crf_marginals([np.zeros((2, 3)), np.zeros((0, 3))], np.zeros((3, 3))), ValueError, 'emissions[1] has no rows'),
    (lambda: crf_marginals(np.zeros((2, 3)), np.zeros((4, 4))), ValueError, 'transitions has shape (4, 4) but the emissions have K=3'),
    (lambda: crf_marginals(np.zeros((2, 3)), np.zeros((3, 3)), end=np.zeros(4)), ValueError, 'end has 4 scores'),
    (lambda: crf_marginals(np.array([[0, np.nan]]), np.zeros((2, 2))), ValueError, 'emissions: 1 of 2 values are not finite'),
    (lambda: crf_marginals(np.zeros((2, 2)), np.array([[0, np.inf], [0, 0]])), ValueError, 'transitions: 1 of 4 values are not finite'),
    (lambda: crf_marginals(np.zeros(3), np.zeros((3, 3))), ValueError, 'emissions must be 2-dimensional'),
    (lambda: forward_backward(np.zeros((2, 3, 2)), np.zeros((2, 2)), lengths=[3, 0]), ValueError, 'lengths: 1 of 2 are outside [1, 3]'),
    (lambda: calibkit.extractor('softmax').extract(np.array([[.5, .4]]), [0]), ValueError, 'rows do not sum to 1'),
    (lambda: calibkit.extractor('softmax', kind='logits').extract(np.array([[1, np.inf]]), [0]), ValueError, 'not finite'),
    (lambda: calibkit.extractor('softmax', strict_labels=True).extract(np.array([[.5, .5]]), ['X'], labels=['N', 'V']),
     ValueError, 'not among labels'),
    (lambda: from_crfsuite([[{'N': .5, 'V': .5}], [{'N': .5, 'Q': .5}]], labels=['N', 'V']), ValueError, "tag(s) ['Q'] are not among labels"),
    (lambda: from_crfsuite([[{'N': 1.2, 'V': -.2}]]), ValueError, 'outside [0, 1]'),
    (lambda: tagger_events([np.eye(2)], [['N', 'V']], events='query', tag='D', labels=['N', 'V']), ValueError, "tag 'D' is not among"),
]


@pytest.mark.parametrize('call, exc, message', bad_inputs)
def test_bad_input_is_named(call, exc, message):
    with pytest.raises(exc) as info: call()
    assert message in str(info.value)


def test_models_reject_bad_input():
    hmm = HMMTagger().fit([['a', 'dog'], ['dogs', 'run']], [['D', 'N'], ['N', 'V']])
    for call, message in [(lambda: hmm.marginals([[]]), 'sents[0] is empty'),
                          (lambda: hmm.predict(['a', 'dog']), 'sents[0] is a string'),
                          (lambda: hmm.score([['a']], [['ADJ']]), "not among the model's tags_ (['ADJ'])"),
                          (lambda: HMMTagger().fit([['a']], [['D', 'N']]), 'tags[0] has 2 tags but sents[0] has 1'),
                          (lambda: SoftmaxTagger().marginals([['a']]), 'not fitted yet')]:
        with pytest.raises((ValueError, TypeError)) as info: call()
        assert message in str(info.value)


def test_read_conll_names_file_and_line(tmp_path):
    p = tmp_path/'x.conll'
    p.write_text('a\tD\ndog\tN\n\n\nruns\n\n', encoding='utf-8')
    with pytest.raises(ValueError, match=r'x\.conll:5: expected at least 2'): read_conll(p)
    p.write_text('a\tD\ndog\tN\n\n\n', encoding='utf-8')
    assert read_conll(p) == ([['a', 'dog']], [['D', 'N']])


def test_tagger_hyperparameters_use_the_shared_validators():
    "k_emit/k_trans (> 0) and c1/c2 (>= 0) are finite numbers (check_float): inf, once let through, is refused."
    with pytest.raises(ValueError, match='k_trans must be a finite number > 0, got inf'): HMMTagger(k_trans=np.inf)
    with pytest.raises(ValueError, match='k_emit must be a finite number > 0, got 0'): HMMTagger(k_emit=0)
    with pytest.raises(ValueError, match='c2 must be a finite number >= 0, got -1'): CRFTagger(c2=-1)
    with pytest.raises(ValueError, match='c1 must be a finite number >= 0, got inf'): CRFTagger(c1=np.inf)
    h = HMMTagger(k_emit=np.float32(0.5), k_trans=1)
    assert (h.k_emit, h.k_trans) == (0.5, 1.0)
    with pytest.raises(ValueError, match="features must be one of 'basic', 'advanced'; got 'rich'"):
        token_features(['a'], 'rich')
