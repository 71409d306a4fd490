"""calibkit.sparse: the sparse-tagset study (SMCE/GMCE before and after SCW/TFG recalibration)."""
import warnings
import numpy as np, pandas as pd, pytest
from hypothesis import given, settings, strategies as st
import calibkit
from calibkit.events import events_from_scores
from calibkit.groupers import group_map
from calibkit.metrics import gmce, smce
from calibkit.plugins import grouper, recalibrator
from calibkit.recalibrators import Grouped
from calibkit.sparse import (RECALIBRATORS, paper_findings, recalibrate, sparse_study, sparse_study_from_scores,
                             table1, group_table, arrow_chart)

COUNTS = {'a': 6, 'b': 3, 'c': 1}           # G = 2, rule '>': a alone holds 6/10 > 1/2 -> groups {a}, {b, c}


def hand_events():
    test = pd.DataFrame({'item': [0, 0, 1, 1], 'label': ['a', 'b', 'c', 'a'],
                         'conf': [.1, .2, .8, .9], 'correct': [0, 1, 1, 1]})
    rng = np.random.default_rng(0)
    n = 400
    dev = pd.DataFrame({'item': np.arange(n), 'label': rng.choice(list('abc'), n, p=[.6, .3, .1]),
                        'conf': rng.uniform(.02, 1, n)})            # all above the threshold
    dev['correct'] = (rng.random(n) < dev.conf ** 2).astype(np.uint8)
    return dev, test


def synthetic_scores(n, K=40, seed=0):
    "An over-confident softmax tagger with Zipf-distributed gold tags."
    rng = np.random.default_rng(seed)
    p = 1 / np.arange(2, K + 2) ** 1.5
    p /= p.sum()
    gold = rng.choice(K, size=n, p=p)
    logits = rng.normal(size=(n, K)) + np.log(p)
    logits[np.arange(n), gold] += 2.5 * (rng.random(n) < .8)
    S = np.exp(1.6 * logits)
    return S / S.sum(1, keepdims=True), gold, p


@pytest.fixture(scope='module')
def scores():
    S_dev, g_dev, p = synthetic_scores(3000, seed=1)
    S_test, g_test, _ = synthetic_scores(3000, seed=2)
    train = {k: int(v) for k, v in enumerate(np.round(p * 20_000))}
    return train, S_dev, g_dev, S_test, g_test


def test_hand_checkable_values():
    dev, test = hand_events()
    r = sparse_study(COUNTS, dev, test, n_groups=2, n_bins=2, min_events=10)
    assert list(r.group.unique()) == ['all', '1', '2']
    assert list(r.attrs['groups'].n_tags) == [1, 2]
    before = r.drop_duplicates('group').set_index('group').before
    # bins {.1, .2} and {.8, .9}: sqrt(1/2 (.15 - .5)^2 + 1/2 (.85 - 1)^2)
    assert before['all'] == pytest.approx(np.sqrt(.0725), abs=1e-12)
    # group 1 = the two events of 'a' (.1, wrong; .9, right): one per bin, gaps .1 each
    assert before['1'] == pytest.approx(.1, abs=1e-12)
    # group 2 = b (.2, right) and c (.8, right): gaps .8 and .2
    assert before['2'] == pytest.approx(np.sqrt(.5 * .8 ** 2 + .5 * .2 ** 2), abs=1e-12)


def test_table_equals_direct_smce_gmce_on_recalibrated_events():
    dev, test = hand_events()
    r = sparse_study(COUNTS, dev, test, n_groups=2, n_bins=2, min_events=10)
    tfg = grouper('tfg', n_groups=2).fit(COUNTS)
    gm = group_map(tfg, test.label)
    for t in RECALIBRATORS:
        for gname, g in (('SCW', grouper('shared').fit(COUNTS)), ('TFG', tfg)):
            rec = recalibrator(t) if t == 'isotonic' else recalibrator(t, n_bins=2)
            out = Grouped(g, rec, min_events=10).fit(dev).transform(test)
            row = r[(r.recalibrator == t) & (r.grouper == gname)].set_index('group')
            assert row.after['all'] == pytest.approx(smce(out, n_bins=2), abs=1e-15)
            np.testing.assert_allclose(row.after[['1', '2']].to_numpy(), gmce(out, gm, n_bins=2).gmce.to_numpy(), atol=1e-15)


def test_delta_pct_and_interval_columns(scores):
    r = sparse_study_from_scores(*scores)
    np.testing.assert_allclose(r.delta_pct, 100 * (r.after - r.before) / r.before, rtol=1e-12)
    assert (r.after_lo <= r.after_hi).all() and (r.before_lo <= r.before_hi).all()
    assert len(r) == len(RECALIBRATORS) * 2 * 6
    # per (recalibrator, grouper), the groups' events add up to all events
    n = r.pivot_table(index=['recalibrator', 'grouper'], columns='group', values='n_events', aggfunc='first')
    assert (n[['1', '2', '3', '4', '5']].sum(axis=1) == n['all']).all()


def test_gmce_with_one_group_is_smce(scores):
    r = sparse_study_from_scores(*scores, n_groups=1)
    a, g = (r[r.group == s].reset_index(drop=True) for s in ('all', '1'))
    np.testing.assert_allclose(a.after, g.after, atol=1e-15)
    np.testing.assert_allclose(a.before, g.before, atol=1e-15)
    # one group: TFG recalibration is SCW recalibration
    np.testing.assert_allclose(r.after[r.grouper == 'SCW'].to_numpy(), r.after[r.grouper == 'TFG'].to_numpy(), atol=1e-15)


def test_scores_and_events_routes_give_identical_tables(scores):
    train, S_dev, g_dev, S_test, g_test = scores
    names = [f'tag{k:02d}' for k in range(S_dev.shape[1])]       # sorted in id order: TFG ties break alike
    by_index = sparse_study_from_scores(train, S_dev, g_dev, S_test, g_test)
    by_name = sparse_study({names[k]: v for k, v in train.items()},
                           events_from_scores(S_dev, g_dev, labels=names), events_from_scores(S_test, g_test, labels=names))
    pd.testing.assert_frame_equal(by_index, by_name)
    pd.testing.assert_frame_equal(table1(by_index), table1(by_name))
    pd.testing.assert_frame_equal(group_table(by_index), group_table(by_name))
    # events thresholded by the user first give the same table as well
    thr = sparse_study(train, events_from_scores(S_dev, g_dev, threshold=.01), events_from_scores(S_test, g_test, threshold=.01))
    pd.testing.assert_frame_equal(by_index, thr)
    assert calibkit.sparse_study is sparse_study and calibkit.sparse_study_from_scores is sparse_study_from_scores


def test_recalibrated_events_keep_everything_but_conf(scores):
    train, S_dev, g_dev, S_test, g_test = scores
    dev, test = events_from_scores(S_dev, g_dev, threshold=.01), events_from_scores(S_test, g_test, threshold=.01)
    test = test.assign(kind='marginal').set_axis(np.arange(len(test))[::-1] * 3)
    for t in RECALIBRATORS:
        out = recalibrate(grouper('tfg', n_groups=5).fit(train), recalibrator(t), dev, test)
        assert list(out.columns) == list(test.columns) and (out.index == test.index).all()
        pd.testing.assert_frame_equal(out.drop(columns='conf'), test.drop(columns='conf'))
        assert not np.array_equal(out.conf.to_numpy(), test.conf.to_numpy())


def test_table1_layout(scores):
    r = sparse_study_from_scores(*scores)
    t = table1(r)
    assert list(t.index[:7]) == ['uncalibrated'] + [f'{a} · {g}' for a in RECALIBRATORS for g in ('SCW', 'TFG')]
    assert list(t.columns) == [f'{s}{x}' for s in ('SMCE', 'GMCE 1', 'GMCE 5') for x in ('', ' Δ%', ' CI')]
    row = r[(r.recalibrator == 'isotonic') & (r.grouper == 'TFG') & (r.group == '5')].iloc[0]
    assert t.loc['isotonic · TFG', 'GMCE 5'] == f'{row.after:.4f}'
    assert t.loc['isotonic · TFG', 'GMCE 5 Δ%'] == f'{row.delta_pct:+.1f}%'.replace('-', '−')
    g = r.attrs['groups']
    assert t.loc['N (events ≥ threshold)', 'SMCE'] == str(r.n_events[r.group == 'all'].iloc[0])
    assert t.loc['tag types', 'GMCE 5'] == str(g.n_tags.iloc[-1])
    assert t.loc['training tokens', 'SMCE'] == str(sum(scores[0].values()))


def test_labels_missing_from_counts_go_to_the_last_group_with_one_warning(scores):
    train, S_dev, g_dev, S_test, g_test = scores
    dev, test = events_from_scores(S_dev, g_dev, threshold=.01), events_from_scores(S_test, g_test, threshold=.01)
    known = {k: v for k, v in train.items() if k != 39}            # tag 39 never seen in training
    n39 = int((test.label == 39).sum()) + int((dev.label == 39).sum())
    assert n39 > 0
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter('always')
        r = sparse_study(known, dev, test)
    msgs = [str(w.message) for w in rec if 'unseen in training' in str(w.message)]
    assert len(msgs) == 1 and '1 distinct' in msgs[0] and 'last group (5)' in msgs[0], msgs
    g5 = grouper('tfg', n_groups=5).fit(known)
    expected = int((g5.assign(test.label[test.label != 39]) == 5).sum()) + int((test.label == 39).sum())
    assert r.attrs['groups'].test_events.iloc[-1] == expected


@pytest.mark.parametrize('kw, msg', [
    (dict(threshold=1.0), 'threshold must be a finite number in [0, 1)'),
    (dict(threshold=-0.01), 'threshold must be a finite number in [0, 1)'),
    (dict(n_bins=0), 'n_bins must be an integer >= 1'),
    (dict(recalibrators=[]), 'recalibrators is empty'),
    (dict(recalibrators=['histogram', 'histogram']), "'histogram' appears twice"),
])
def test_bad_parameters(kw, msg):
    dev, test = hand_events()
    with pytest.raises(ValueError, match=msg.replace('[', r'\[').replace(')', r'\)').replace('(', r'\(')):
        sparse_study(COUNTS, dev, test, **kw)


def test_bad_inputs():
    dev, test = hand_events()
    with pytest.raises(ValueError, match=r"threshold must be a finite number in \[0, 1\), got str '0.01'"):   # the C1 validator (ValueError, like check_int)
        sparse_study(COUNTS, dev, test, threshold='0.01')
    with pytest.raises(ValueError, match='counts: 1 of 3 values are not finite non-negative'):
        sparse_study({**COUNTS, 'c': -1}, dev, test)
    with pytest.raises(ValueError, match='dev_events is empty'):
        sparse_study(COUNTS, dev.iloc[:0], test)
    with pytest.raises(ValueError, match='test_events: none of its 4 events'):
        sparse_study(COUNTS, dev, test.assign(conf=.001))
    with pytest.raises(ValueError, match=r"dev_events lacks column\(s\) \['label'\]"):
        sparse_study(COUNTS, dev.drop(columns='label'), test)
    with pytest.raises(TypeError, match='test_events must be an events frame'):
        sparse_study(COUNTS, dev, test.to_numpy())
    with pytest.raises(ValueError, match='test_events: conf: 1 of 4 values are NaN'):
        sparse_study(COUNTS, dev, test.assign(conf=[.1, np.nan, .8, .9]))
    with pytest.raises(ValueError, match='none of the labels of dev_events and test_events is among the training tags'):
        sparse_study({'x': 1, 'y': 2}, dev, test)
    with pytest.raises(ValueError, match='none of the labels of dev_events and test_events is among the training tags'):
        sparse_study({0: 1, 1: 2}, dev, test)                   # ids vs names


def test_refuses_events_thresholded_above_the_study_threshold(scores):
    train, S_dev, g_dev, S_test, g_test = scores
    hi = events_from_scores(S_test, g_test, threshold=.05)
    with pytest.raises(ValueError, match='test_events was thresholded at 0.05 already'):
        sparse_study(train, events_from_scores(S_dev, g_dev), hi)
    with pytest.raises(ValueError, match='dev_scores has 40 columns but test_scores has 30'):
        sparse_study_from_scores(train, S_dev, g_dev, S_test[:, :30], g_test % 30)


def test_paper_findings_on_hand_set_results():
    rows = []
    for t in ('histogram', 'isotonic'):
        for g in ('SCW', 'TFG'):
            for s, before, after in (('all', 1., .5), ('1', 1., 1.2 if (t, g) == ('histogram', 'SCW') else .9),
                                     ('2', 1., .3 if g == 'TFG' else .6)):
                rows.append(dict(recalibrator=t, grouper=g, group=s, before=before, after=after))
    r = pd.DataFrame(rows)
    r['delta_pct'] = 100 * (r.after - r.before) / r.before
    f = paper_findings(r)
    assert list(f.holds) == [True, True, True, True]
    assert 'histogram SCW +20.0%' in f.evidence[2] and 'histogram 1, isotonic 0' in f.evidence[3]
    r.loc[(r.recalibrator == 'isotonic') & (r.grouper == 'TFG') & (r.group == '2'), 'after'] = .7
    assert list(paper_findings(r).holds) == [True, False, True, True]


def test_arrow_chart_colours_follow_the_change(scores):
    r = sparse_study_from_scores(*scores)
    spec = arrow_chart(r, scopes=['all', 5]).to_dict()
    data = pd.DataFrame(spec['datasets'][spec['data']['name']])
    assert set(data.group) == {'all', '5'}
    assert ((data.after > data.before) == (data.change == 'worse')).all()
    with pytest.raises(ValueError, match=r"scopes \['7'\] are not in results"):
        arrow_chart(r, scopes=[7])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n_groups=st.integers(1, 4))
def test_property_uncalibrated_column_is_gmce_of_the_test_events(seed, n_groups):
    S, gold, p = synthetic_scores(600, K=12, seed=seed)
    train = {k: int(v) + 1 for k, v in enumerate(np.round(p * 5000))}
    dev, test = events_from_scores(S[:300], gold[:300], threshold=.01), events_from_scores(S[300:], gold[300:], threshold=.01)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')                    # small groups: pooled models, one event per bin
        r = sparse_study(train, dev, test, recalibrators=['isotonic'], n_groups=n_groups)
        tfg = grouper('tfg', n_groups=n_groups).fit(train)
        g = gmce(test, group_map(tfg, test.label))
    first = r[r.grouper == 'SCW'].set_index('group')
    assert first.before['all'] == pytest.approx(smce(test), abs=1e-15)
    for grp, value in zip(g.group, g.gmce):
        assert first.before[str(grp)] == pytest.approx(value, abs=1e-15)          # group ids 1..G in both


def two_tag_events(n, seed):
    "Tag a over-confident, tag b under-confident; 4 tokens per sentence (item)."
    r = np.random.default_rng(seed)
    lab = np.where(r.random(n) < .6, 'a', 'b')
    q = r.uniform(.05, .95, n)
    y = (r.random(n) < np.where(lab == 'a', q ** 2, np.sqrt(q))).astype(np.uint8)
    return pd.DataFrame({'item': np.arange(n) // 4, 'label': lab, 'conf': q, 'correct': y})


def test_choose_n_groups_finds_the_known_answer_and_is_deterministic():
    from calibkit.sparse import choose_n_groups
    dev = two_tag_events(8000, 1)
    ch = choose_n_groups({'a': 60, 'b': 40}, dev, candidates=[1, 2, 3], seed=0)
    assert ch.n_groups == 2 and ch.table.chosen.tolist() == [False, True, False]
    assert ch.table.n_groups_fitted.tolist() == [1, 2, 2] and ch.table.smce[1] == ch.table.smce[2]   # G = 3 ties with 2
    assert ch.table.gmce_eval[1] < ch.table.gmce_eval[0] / 2 and ch.table.gmce_eval[1] == ch.table.gmce_eval[2]
    assert (ch.table.gmce_eval < ch.table.attrs['gmce_eval_before']).all()
    assert ch.table.gmce_mean[0] == ch.table.smce[0]                 # G = 1: its one group's GMCE is SMCE
    pd.testing.assert_frame_equal(choose_n_groups({'a': 60, 'b': 40}, dev, candidates=[3, 2, 1], seed=0).table, ch.table)
    with pytest.raises(ValueError, match='candidates must be an integer >= 1'): choose_n_groups({'a': 1}, dev, candidates=[0])


def test_fold_ids_keep_items_together():
    from calibkit.sparse import fold_ids
    ev = two_tag_events(400, 2)
    f = fold_ids(ev, 5, seed=3)
    assert ev.assign(f=f).groupby('item').f.nunique().max() == 1 and set(f) == set(range(5))
    assert np.array_equal(f, fold_ids(ev, 5, seed=3)) and not np.array_equal(f, fold_ids(ev, 5, seed=4))
    g = fold_ids(ev.drop(columns='item'), 5, seed=3)                 # no items: single events, balanced folds
    assert np.bincount(g).tolist() == [80] * 5
