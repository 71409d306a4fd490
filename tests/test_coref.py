"""Coreference: the CoNLL-2012 reader, Monte Carlo clusterings against exact enumeration, events, the model."""
from pathlib import Path
import numpy as np, pandas as pd, pytest
from hypothesis import given, settings, strategies as st
import calibkit
from calibkit.datasets.coref import read_conll2012_coref
from calibkit.extractors.coref import coref_mc, exact_pair_probs, antecedent_matrix, window_pairs
from calibkit.models.coref import MentionRanker, split_documents, design, _ranking_loss

DATA = Path(__file__).resolve().parent.parent/'calibkit'/'data'/'litbank'


def conll(tmp_path, body: str, name='t.conll') -> Path:
    "A CoNLL-2012 file from 'word coref' lines ('' = sentence break) inside one document."
    lines = ['#begin document (t); part 0']
    for k, l in enumerate(body.split('\n')):
        if not l.strip(): lines.append(''); continue
        w, c = l.split()
        lines.append(f't\t0\t{k}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_\t{c}')
    p = tmp_path/name
    p.write_text('\n'.join(lines + ['#end document']) + '\n')
    return p


# --- reader ---------------------------------------------------------------------------------------

def test_reader_nested_and_multiple_brackets(tmp_path):
    p = conll(tmp_path, 'the (1|(2\nking 2)\n\'s -\nson 1)\n\nhe (1)|(3\nsaw -\nthem 3)|(4)')
    doc, = read_conll2012_coref(p)
    m = doc.mentions
    assert m[['start', 'end', 'cluster']].values.tolist() == [[0, 1, 2], [0, 3, 1], [4, 4, 1], [4, 6, 3], [6, 6, 4]]
    assert m.text.tolist() == ['the king', "the king 's son", 'he', 'he saw them', 'them']
    assert m.sent.tolist() == [0, 0, 1, 1, 1]
    assert doc.sent_starts.tolist() == [0, 4, 7]
    assert doc.clusters.tolist() == [2, 1, 1, 3, 4]


def test_reader_same_cluster_nesting_closes_innermost(tmp_path):
    doc, = read_conll2012_coref(conll(tmp_path, 'Mr. (7|(7\nX 7)\nthe -\nlawyer 7)'))
    assert doc.mentions[['start', 'end']].values.tolist() == [[0, 1], [0, 3]]


def test_reader_unbalanced_close_names_file_and_line(tmp_path):
    p = conll(tmp_path, 'a (1)\nb 2)')
    with pytest.raises(ValueError, match=rf'{p}:3: unbalanced bracket: cluster 2 is closed'):
        read_conll2012_coref(p)


def test_reader_unclosed_open_names_file_and_line(tmp_path):
    p = conll(tmp_path, 'a (1)\nb (5\nc -')
    with pytest.raises(ValueError, match=rf'{p}:3: unbalanced bracket: cluster 5 is opened but never closed'):
        read_conll2012_coref(p)


def test_reader_bad_field_and_structure(tmp_path):
    with pytest.raises(ValueError, match=r':2: cannot parse coreference field'):
        read_conll2012_coref(conll(tmp_path, 'a (x)'))
    p = tmp_path/'n.conll'
    p.write_text('#begin document (a); part 0\nt 0 0 w _ -\n')
    with pytest.raises(ValueError, match='has no #end document'):
        read_conll2012_coref(p)


def test_reader_bundled_litbank():
    docs = read_conll2012_coref(DATA)
    assert len(docs) == 40
    for d in docs[:5]:
        m = d.mentions
        assert m.text.tolist() == [' '.join(d.tokens[a:b + 1]) for a, b in zip(m.start, m.end)]
        assert 100 < len(m) < 600


# --- Monte Carlo against exact enumeration -------------------------------------------------------

def random_window_matrix(rng, n, w, alpha=.5):
    P = np.zeros((n, w + 1))
    for i in range(n):
        k = min(i, w)
        P[i, :k + 1] = rng.dirichlet(np.full(k + 1, alpha))
    return P


@pytest.mark.parametrize('n,w,seed', [(2, 1, 0), (4, 3, 1), (6, 2, 2), (7, 6, 3), (8, 7, 4), (8, 3, 5)])
def test_mc_converges_to_exact_marginals(n, w, seed):
    P = random_window_matrix(np.random.default_rng(seed), n, w)
    exact = exact_pair_probs(P)
    mc = coref_mc(P, n_samples=10_000, seed=seed)
    i, j = np.tril_indices(n, -1)
    err = np.abs(mc.pair_probs(i, j) - exact[i, j])
    assert (err <= 4 * np.maximum(mc.se(exact[i, j]), 1e-12)).all(), err.max()
    err_new = np.abs(mc.new_probs() - P[:, 0])
    assert (err_new <= 4 * np.maximum(mc.se(P[:, 0]), 1e-12)).all()


def test_exact_enumeration_hand_computed():
    # mention 2 links to 1 (0.5) or 0 (0.5); mention 1 links to 0 w.p. 0.3: P(2 ~ 0) = 0.5 + 0.5 * 0.3
    P = [np.array([1.]), np.array([.7, .3]), np.array([0., .5, .5])]
    E = exact_pair_probs(P)
    assert E[2, 0] == pytest.approx(.65) and E[1, 0] == pytest.approx(.3) and E[2, 1] == pytest.approx(.65)


def test_deterministic_links_give_exactly_one_and_impossible_exactly_zero():
    P = np.array([[1, 0, 0], [0, 1, 0], [.5, .5, 0], [0, 0, 1], [1, 0, 0]])
    mc = coref_mc(P, n_samples=2000, seed=0)
    assert mc.pair_probs([1, 3, 3], [0, 1, 0]).tolist() == [1.0, 1.0, 1.0]
    assert mc.pair_probs([4, 4], [0, 3]).tolist() == [0.0, 0.0]      # 4 is always new, nobody links to it
    assert mc.se(np.array([1.0, 0.0])).tolist() == [0.0, 0.0]


def test_ragged_and_window_forms_agree():
    ragged = [np.array([1.]), np.array([.2, .8]), np.array([.1, .6, .3])]
    P = antecedent_matrix(ragged)
    assert P.tolist() == [[1, 0, 0], [.2, .8, 0], [.1, .3, .6]]    # column k = distance k
    a, b = coref_mc(ragged, 500, seed=3), coref_mc(P, 500, seed=3)
    assert np.array_equal(a.clusters, b.clusters)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 12), st.integers(1, 5), st.integers(0, 2**31))
def test_sampled_clusters_are_closed_and_rooted(n, w, seed):
    P = random_window_matrix(np.random.default_rng(seed), n, w, alpha=.3)
    c = coref_mc(P, n_samples=64, seed=seed).clusters
    s = np.arange(c.shape[1])
    assert (c <= np.arange(n)[:, None]).all()                       # a cluster is named by its first mention
    assert (c[c, s] == c).all()                                     # ...which is its own cluster's root
    assert ((c == np.arange(n)[:, None]) <= (P[:, :1] > 0)).all()   # new only where P(new) > 0


# --- events ---------------------------------------------------------------------------------------

def test_events_gold_answers_and_counts():
    P = [np.array([1.]), np.array([.7, .3]), np.array([0., .5, .5]), np.array([.1, .1, .1, .7])]
    ev = coref_mc(P, 4000, seed=1).events(['A', 'B', 'B', 'A'])
    assert ev.attrs['n_pair'] == 6 and ev.attrs['n_new'] == 4 and ev.attrs['n_antecedent'] == 4
    pairs = ev[ev.kind == 'pair']
    assert pairs[['item', 'other', 'correct']].values.tolist() == [[1, 0, 0], [2, 0, 0], [2, 1, 1], [3, 0, 1], [3, 1, 0], [3, 2, 0]]
    assert ev[ev.kind == 'new'].correct.tolist() == [1, 1, 0, 0]
    E = exact_pair_probs(P)
    assert abs(pairs.conf.iloc[3] - E[3, 0]) <= 4 * np.sqrt(E[3, 0] * (1 - E[3, 0]) / 4000)
    assert np.allclose(ev.se, np.sqrt(ev.conf * (1 - ev.conf) / 4000))


def test_window_pairs_count():
    i, j = window_pairs(300, 50)
    assert len(i) == sum(min(k, 50) for k in range(300))
    assert ((i - j >= 1) & (i - j <= 50)).all()
    assert len(np.unique(np.stack([i, j]), axis=1).T) == len(i)


# --- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize('probs,message', [
    ([np.array([1.]), np.array([.5, .4])], 'rows do not sum to 1'),
    ([np.array([1.]), np.array([.5, .5]), np.array([-.5, .5, 1.])], 'values are outside [0, 1]'),
    ([np.array([1.]), np.array([.3, .3, .4])], 'arrays have the wrong length'),
    ([np.array([.5, .5])], 'arrays have the wrong length'),
    (np.array([[.5, .5], [.5, .5]]), 'before the document start'),
    (np.array([[1., 0], [np.nan, 1]]), 'NaN'),
    ([], 'antecedent_probs is empty'),
])
def test_bad_probabilities(probs, message):
    with pytest.raises(ValueError, match=message.replace('[', r'\[').replace(']', r'\]')):
        coref_mc(probs, 10)


@pytest.mark.parametrize('n', [0, -3, 1.5, True])
def test_bad_n_samples(n):
    with pytest.raises(ValueError, match='n_samples must be an integer >= 1'):
        coref_mc([np.array([1.])], n)


def test_integral_float_counts_as_check_int_takes_them():
    "n_samples, window and every go through the shared check_int: an integral float (1e2, 2.0) is that integer."
    from calibkit.extractors.coref import check_window
    P = [np.array([1.]), np.array([.3, .7]), np.array([.2, .5, .3])]
    a, b = coref_mc(P, 1e2, seed=4), coref_mc(P, 100, seed=4)
    np.testing.assert_array_equal(a.clusters, b.clusters)
    assert a.clusters.shape == (3, 100)
    np.testing.assert_array_equal(np.stack(window_pairs(4, 2.0)), np.stack(window_pairs(4, 2)))
    assert check_window(np.int64(7)) == 7 and MentionRanker(window=3.0).window == 3
    for bad in (0, 1.5, True, float('nan')):
        with pytest.raises(ValueError, match='window must be an integer >= 1'): MentionRanker(window=bad)
        with pytest.raises(ValueError, match='window must be an integer >= 1'): window_pairs(4, bad)
    with pytest.raises(ValueError, match='every must be an integer >= 3'): split_documents([1, 2, 3], every=3.5)
    assert split_documents(list(range(6)), every=3.0) == split_documents(list(range(6)), every=3)


# --- plugin and model -----------------------------------------------------------------------------

def test_plugin_registered():
    t = calibkit.list_plugins()
    assert 'coref_mc' in set(t[t.kind == 'extractor'].name)
    ex = calibkit.extractor('coref_mc', n_samples=300, seed=5)
    P = [np.array([1.]), np.array([.4, .6])]
    assert ex.extract(P, gold=[0, 0]).equals(coref_mc(P, 300, seed=5).events([0, 0]))


def test_model_on_three_documents():
    docs = read_conll2012_coref(DATA)[:4]
    m = MentionRanker(window=10).fit(docs[:3])
    P = m.antecedent_probs(docs[3])
    assert P.shape == (len(docs[3].mentions), 11)
    assert np.allclose(P.sum(1), 1) and P[0, 0] == 1
    assert (P[np.arange(11)[None, :] > np.arange(len(P))[:, None]] == 0).all()
    d, _ = design(docs[3], 10)
    assert _ranking_loss(m.coef_, d, 1.0)[0] < _ranking_loss(np.zeros_like(m.coef_), d, 1.0)[0]
    assert [len(v) for v in split_documents(list(range(40))).values()] == [24, 8, 8]
