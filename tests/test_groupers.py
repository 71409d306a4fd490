"Groupers: TFG against the sparse-tagset paper's Table 1 and its own rules, per-class, by-subtag, unseen tags, bad input."
import warnings
from collections import Counter
import numpy as np, pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
from calibkit.events import events_from_scores
from calibkit.groupers import (BySubtag, PerClass, Shared, TagFrequency, ccg_result, group_map, tag_counts, zipf_counts)
from calibkit.metrics import gmce

CCG_TOP = ['N', 'NP', 'N/N', 'NP[nb]/N', '(NP\\NP)/NP', ',', '.', 'conj', '(S\\NP)\\(S\\NP)', 'PP/NP']


def quiet(f, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return f(*a, **kw)


@pytest.fixture(scope='module')
def ccg():
    "A realistic 426-tag CCG supertag count table: Zipf–Mandelbrot, N at 22.2% of CCGbank §02–21's tokens."
    return zipf_counts(426, .222, total=929_552, names=CCG_TOP + [f'cat{i}' for i in range(426 - len(CCG_TOP))])


def test_tfg_reproduces_table_1_of_the_sparse_tagset_paper(ccg):
    g = TagFrequency(n_groups=5).fit(ccg)
    t = g.table()
    assert list(t.columns) == ['group', 'members', 'n_tags', 'share', 'min_freq', 'max_freq', 'tags']
    assert g.n_groups_ == 5 and t.n_tags[0] == 1 and t.tags[0] == 'N' and t.members[0] == 'N'
    assert t.members[1] == f'{t.n_tags[1]} tags, frequency {t.max_freq[1]:.2g}–{t.min_freq[1]:.2g}: {t.tags[1]}'
    assert round(t.max_freq[0], 3) == .222
    assert (t.max_freq.iloc[-1] < .005) and (ccg[g.groups_ == 5] / ccg.sum() < .005).all()
    assert t.n_tags.sum() == 426 and abs(t.share.sum() - 1) < 1e-12


def test_zipf_counts_holds_its_promise():
    c = zipf_counts(50, .3, total=10_000, exponent=1.5)
    assert len(c) == 50 and c.is_monotonic_decreasing and (c >= 1).all()
    assert abs(c.iloc[0] / c.sum() - .3) < 1e-3
    with pytest.raises(ValueError, match='top_share must be in'): zipf_counts(50, .01)


def test_authors_rule_can_give_fewer_groups_and_balanced_gives_exactly_g():
    counts = {'a': 900, 'b': 50, 'c': 30, 'd': 10, 'e': 10}
    with pytest.warns(UserWarning, match='gives 2 groups, fewer than n_groups=5'):
        g = TagFrequency(n_groups=5).fit(counts)
    assert g.n_groups_ == 2 < 5 and g.groups_.to_dict() == {'a': 1, 'b': 2, 'c': 2, 'd': 2, 'e': 2}
    b = TagFrequency(n_groups=5, balanced=True).fit(counts)
    assert b.n_groups_ == 5 and sorted(b.groups_) == [1, 2, 3, 4, 5]
    assert list(b.table().n_tags) == [1, 1, 1, 1, 1]


def test_paper_rule_closes_a_group_at_exactly_one_over_g():
    assert list(TagFrequency(n_groups=2, rule='>').fit({'a': 5, 'b': 3, 'c': 2}).groups_) == [1, 1, 2]
    assert list(TagFrequency(n_groups=2, rule='>=').fit({'a': 5, 'b': 3, 'c': 2}).groups_) == [1, 2, 2]
    assert Shared().fit({'b': 1, 'a': 1, 'c': 2}).groups_.index.tolist() == ['c', 'a', 'b']     # ties by tag


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=1, max_size=40), st.integers(1, 8), st.sampled_from(['>', '>=']))
def test_tfg_rules_properties(counts, G, rule):
    counts = {f't{i:02d}': c for i, c in enumerate(counts)}
    g = quiet(TagFrequency(n_groups=G, rule=rule).fit, counts)
    ids, v = g.groups_.to_numpy(), g.counts_.to_numpy()
    total = v.sum()
    assert ids[0] == 1 and (np.diff(ids) >= 0).all() and (np.diff(ids) <= 1).all()   # contiguous in frequency order
    assert g.n_groups_ == ids.max() <= G
    for k in range(1, g.n_groups_):                       # every closed group passed 1/G, and not before its last tag
        s = v[ids == k]
        assert (s.sum() * G > total) if rule == '>' else (s.sum() * G >= total)
        assert (s[:-1].sum() * G <= total) if rule == '>' else (s[:-1].sum() * G < total)
    if G <= len(counts):
        b = TagFrequency(n_groups=G, rule=rule, balanced=True).fit(counts)
        assert b.n_groups_ == G and set(b.groups_) == set(range(1, G + 1))
        assert (np.diff(b.groups_.to_numpy()) >= 0).all()
        if g.n_groups_ == G: assert b.groups_.equals(g.groups_)   # balanced only differs where the rule falls short
    else:
        with pytest.raises(ValueError, match=f'n_groups={G} but only {len(counts)} tags were seen'):
            TagFrequency(n_groups=G, rule=rule, balanced=True).fit(counts)


def test_fit_accepts_counts_or_labels_alike():
    labels = ['N', 'V', 'N', 'D', 'N', 'V']
    ref = TagFrequency(n_groups=2).fit(labels).groups_
    for form in (Counter(labels), dict(Counter(labels)), pd.Series(labels).value_counts(), pd.Series(Counter(labels)),
                 np.array(labels), pd.Categorical(labels), pd.Series(labels, dtype='category'), iter(labels)):
        assert TagFrequency(n_groups=2).fit(form).groups_.equals(ref), type(form)
    ids = pd.Series([3, 3, 1])                       # integer label ids in a Series: labels, not counts
    assert tag_counts(ids).to_dict() == {3: 2, 1: 1}


def test_unseen_tags_go_to_the_last_group_with_a_warning():
    g = TagFrequency(n_groups=3, balanced=True).fit({'N': 10, 'V': 5, 'A': 2, 'X': 0})
    assert g.groups_['X'] == 3                                           # a zero count is an unseen tag
    with pytest.warns(UserWarning, match=r'tfg: 3 of 5 labels \(2 distinct tags unseen in training, .*\) go to the last group \(3\)'):
        out = g.assign(pd.Series(['N', 'Q', 'Q', 'V', 'Z']))
    assert out.tolist() == [1, 3, 3, 2, 3] and out.dtype == np.intp
    with pytest.raises(ValueError, match='none of the 2 distinct labels was seen in training and they are of another kind'):
        g.assign([0, 1])
    with pytest.warns(UserWarning, match='1 of 1 labels'): assert g.assign(['Q']).tolist() == [3]   # one unseen name: fine
    with pytest.raises(ValueError, match='labels: 1 of 2 values are missing'): g.assign(['N', None])
    with pytest.raises(ValueError, match='labels is empty'): g.assign([])


def test_assign_agrees_with_the_fitted_table(ccg):
    g = TagFrequency(n_groups=5).fit(ccg)
    rng = np.random.default_rng(0)
    labels = rng.choice(ccg.index.to_numpy(), 10_000)
    assert (g.assign(labels) == g.groups_[labels].to_numpy()).all()
    assert (g.assign(pd.Categorical(labels)) == g.assign(labels)).all()


def test_bad_parameters_and_counts():
    with pytest.raises(ValueError, match='n_groups must be an integer >= 1, got 0'): TagFrequency(n_groups=0).fit(['a'])
    with pytest.raises(ValueError, match='n_groups must be an integer >= 1'): TagFrequency(n_groups=2.5).fit(['a'])
    with pytest.raises(ValueError, match='n_groups=3 but only 2 tags were seen'): TagFrequency(n_groups=3, balanced=True).fit(['a', 'b'])
    with pytest.raises(ValueError, match='not fitted'): TagFrequency().table()
    with pytest.raises(ValueError, match='not fitted'): Shared().assign(['a'])
    with pytest.raises(ValueError, match='counts: 1 of 2 values are not finite non-negative'): tag_counts({'a': np.nan, 'b': 1})
    with pytest.raises(ValueError, match='counts is empty'): tag_counts({})
    with pytest.raises(ValueError, match='the total is 0'): tag_counts({'a': 0, 'b': 0})
    with pytest.raises(TypeError, match='counts must be numbers'): tag_counts({'a': 'many'})
    with pytest.raises(ValueError, match='appear more than once'): tag_counts(pd.Series([1, 2], index=['a', 'a']))
    with pytest.raises(ValueError, match='must be 1-dimensional'): tag_counts(np.array([['a', 'b']]))
    with pytest.raises(ValueError, match='exactly one of pattern'): BySubtag().fit(['a'])
    with pytest.raises(ValueError, match='min_count must be an integer >= 1'): PerClass(min_count=0).fit(['a'])


def test_shared_is_one_group_for_everything():
    g = Shared().fit(['N', 'V'])
    assert g.assign(['N', 'never-seen', 'V']).tolist() == [1, 1, 1] and g.n_groups_ == 1
    assert g.table().n_tags.tolist() == [2]


def test_per_class_pools_rare_and_unseen_tags_in_the_last_group():
    g = PerClass(min_count=3).fit({'N': 9, 'V': 4, 'A': 2, 'B': 1})
    assert g.n_groups_ == 3 and g.groups_.to_dict() == {'N': 1, 'V': 2, 'A': 3, 'B': 3}
    with pytest.warns(UserWarning, match='go to the last group'): assert g.assign(['Q']).tolist() == [3]
    g = PerClass().fit({'N': 9, 'V': 4})                                # every tag has its own group: no empty last one
    assert g.n_groups_ == 2 and g.table().members.tolist() == ['N', 'V']
    with pytest.raises(ValueError, match=r"per_class: 1 label\(s\) unseen in training have no group, e.g. \['Q'\]"):
        g.assign(['N', 'Q'])


def test_by_subtag_pattern_and_key():
    tags = {'B-V-v.motion': 40, 'I-V-v.motion': 5, 'B-N-n.act': 30, 'B-N-n.person': 25, 'O': 100}
    g = BySubtag(pattern=r'^[BI]-([^-]+)').fit(tags)
    assert g.table().key.tolist() == ['O', 'N', 'V'] and g.table().n_tags.tolist() == [1, 2, 2]
    assert g.assign(['B-N-n.time', 'I-V-v.motion']).tolist() == [2, 3]        # unseen, known key: no warning
    with pytest.warns(UserWarning, match='1 of 1 labels'): assert g.assign(['B-P-p.loc']).tolist() == [3]
    whole = BySubtag(pattern=r'^[A-Z]{2}').fit({'NN': 3, 'NNS': 1, 'VB': 2, 'VBZ': 1, ',': 5})   # no capture group: the match
    assert whole.groups_.to_dict() == {',': 1, 'NN': 2, 'NNS': 2, 'VB': 3, 'VBZ': 3}              # ',' unmatched: its own key


def test_ccg_result_category():
    cases = {'N': 'N', 'NP[nb]/N': 'NP[nb]', '(S[dcl]\\NP)/NP': 'S[dcl]', '((S\\NP)\\(S\\NP))/NP': 'S',
             '(N/N)/(N/N)': 'N', '(S[to]\\NP)/(S[b]\\NP)': 'S[to]', ',': ',', 'conj': 'conj', '(NP)': 'NP'}
    assert {c: ccg_result(c) for c in cases} == cases
    assert ccg_result('(S[dcl]\\NP)/NP', features=False) == 'S'
    g = BySubtag(key=ccg_result).fit({'(S[dcl]\\NP)/NP': 5, 'S[dcl]\\NP': 3, 'N/N': 4, 'N': 10})
    assert g.table().key.tolist() == ['N', 'S[dcl]']


def test_group_map_feeds_gmce(ccg):
    g = TagFrequency(n_groups=5).fit(ccg)
    rng = np.random.default_rng(1)
    names = ccg.index[:30].tolist() + ['unseen-tag']
    S = rng.dirichlet(np.full(31, .2), size=2000)
    gold = np.array([rng.choice(31, p=p) for p in S])
    ev = events_from_scores(S, gold, threshold=.01, labels=names)
    with pytest.warns(UserWarning, match='unseen-tag'): m = group_map(g, ev.label)
    assert m['unseen-tag'] == 5 and m['N'] == 1 and len(m) == 427
    with pytest.warns(UserWarning): gid = g.assign(ev.label)
    direct = quiet(gmce, ev.assign(label=gid), {k: k for k in range(1, 6)})
    via_map = quiet(gmce, ev, m)
    assert np.allclose(via_map.gmce, direct.gmce) and (via_map.n_events == direct.n_events).all()


def test_groups_are_numbered_1_to_g_and_groupers_are_scikit_learn_estimators(ccg):
    from sklearn.base import clone
    g = TagFrequency(n_groups=5).fit(ccg)
    assert g.table().group.tolist() == [1, 2, 3, 4, 5] and g.groups_['N'] == 1 and g.groups_.max() == 5
    c = clone(g)
    assert c.get_params() == g.get_params() and not hasattr(c, 'groups_')
    assert repr(TagFrequency(n_groups=3)) == 'TagFrequency(n_groups=3)'
