"""Issue 35, part 1: gold tags given as names outside the model's labels are errors of the model (top label: wrong;
marginal: no correct cell), counted in a warning, in `attrs['gold_outside']` and in the report's data section; refused
only when asked (`strict_labels=True`, `--strict-labels`). Integer ids outside 0…K−1 stay refused."""
import json, warnings
import numpy as np, pandas as pd, pytest
import calibkit
from calibkit.events import events_from_scores, top_label_events
from calibkit.inputs import read_scores
from calibkit.metrics import calib_mse
from calibkit.report import calibration_report
from clidata import calibkit as run, calibkit_here

S = np.array([[.6, .3, .1], [.2, .7, .1], [.05, .15, .8], [.5, .4, .1]])
TAGS = ['N', 'V', 'A']
GOLD = ['N', 'GW', 'A', 'V']                      # token 1's tag GW is outside the labels


def quiet(f, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return f(*a, **kw)


def test_top_label_hand_computed_and_equal_to_an_appended_zero_column():
    ev = quiet(top_label_events, S, GOLD, labels=TAGS)
    # argmax: N, V, A, N; gold: N, GW, A, V → correct 1, 0, 1, 0 (GW can never be the argmax)
    assert ev.correct.tolist() == [1, 0, 1, 0] and ev.correct.mean() == 0.5
    assert ev.attrs['gold_outside'] == {'GW': 1}
    by_hand = top_label_events(np.hstack([S, np.zeros((4, 1))]), GOLD, labels=[*TAGS, 'GW'])
    assert ev.correct.tolist() == by_hand.correct.tolist() and ev.conf.tolist() == by_hand.conf.tolist()
    assert calib_mse(ev, n_bins=2) == calib_mse(by_hand, n_bins=2)


def test_marginal_hand_computed_and_equal_to_an_appended_zero_column():
    ev = quiet(events_from_scores, S, GOLD, labels=TAGS, threshold=.1)
    row1 = ev[ev['item'] == 1]
    assert row1.correct.sum() == 0 and len(row1) == 3                  # no correct cell in the GW row
    assert ev.correct.sum() == 3                                         # rows 0, 2, 3 each have their gold cell
    by_hand = events_from_scores(np.hstack([S, np.zeros((4, 1))]), GOLD, labels=[*TAGS, 'GW'], threshold=.1)
    assert (ev.conf.tolist(), ev.correct.tolist()) == (by_hand.conf.tolist(), by_hand.correct.tolist())
    assert calib_mse(ev, n_bins=3) == calib_mse(by_hand, n_bins=3)
    every = quiet(events_from_scores, S, GOLD, labels=TAGS, threshold=0)   # the path that keeps every cell
    assert every.correct.sum() == 3 and every[every['item'] == 1].correct.sum() == 0


def test_a_warning_counts_them_and_strictness_refuses_with_the_counts():
    with pytest.warns(UserWarning, match=r'gold: 1 of 4 values are not among labels: GW \(1, first at gold\[1\]\); '
                                         r'the model cannot predict these tags'):
        events_from_scores(S, GOLD, labels=TAGS)
    for f in (events_from_scores, top_label_events):
        with pytest.raises(ValueError, match=r'gold: 1 of 4 values are not among labels: GW \(1, first at gold\[1\]\)$'):
            f(S, GOLD, labels=TAGS, strict_labels=True)
    with pytest.raises(ValueError, match=r'gold: 1 of 4 ids are outside \[0, 3\): 5 \(1, first at gold\[2\]\)'):
        events_from_scores(S, [0, 1, 5, 2])                             # ids stay refused, strict or not
    with pytest.raises(ValueError, match='not whole numbers: 1.5'):
        events_from_scores(S, [0, 1, 1.5, 2])
    with pytest.raises(TypeError, match='strict_labels must be True or False'):
        events_from_scores(S, GOLD, labels=TAGS, strict_labels='yes')


def test_the_extractor_counts_them_from_logits():
    ev = quiet(calibkit.extractor('softmax', kind='logits', events='top').extract, np.log(S), GOLD, labels=TAGS)
    assert ev.correct.tolist() == [1, 0, 1, 0] and ev.attrs['gold_outside'] == {'GW': 1}
    with pytest.raises(ValueError, match='not among labels: GW'):
        calibkit.extractor('softmax', kind='logits', strict_labels=True).extract(np.log(S), GOLD, labels=TAGS)


@pytest.fixture
def npz(tmp_path):
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(3), 400)
    gold = np.array(TAGS, dtype='<U2')[rng.integers(0, 3, 400)]
    gold[[5, 50, 77]] = 'GW'
    np.savez(tmp_path/'t.npz', scores=p, gold=gold, labels=np.array(TAGS))
    np.savez(tmp_path/'logits.npz', scores=np.log(p), gold=gold, labels=np.array(TAGS))
    return tmp_path


def test_read_scores_names_the_file_and_counts_the_tags_for_grouping(npz):
    with pytest.warns(UserWarning, match=r't.npz: gold: 3 of 400 values are not among labels: GW \(3, first at gold\[5\]\)'):
        ev = read_scores(npz/'t.npz')
    assert ev.attrs['gold_outside'] == {'GW': 3}
    gc = ev.attrs['gold_counts']
    assert list(gc)[-1] == 'GW' and gc['GW'] == 3 and sum(gc.values()) == 400        # every gold token counted
    with pytest.raises(calibkit.inputs.InputError, match=r't.npz: gold: 3 of 400 values are not among labels'):
        read_scores(npz/'t.npz', strict_labels=True)


def test_report_data_section_says_the_count(npz):
    ev = quiet(read_scores, npz/'t.npz')
    r = calibration_report(ev, n_samples=20)
    assert r.summary['gold_outside'] == '3 gold tokens have tags the model cannot predict: GW (3)'
    from calibkit.render import report_html
    assert '3 gold tokens have tags the model cannot predict: GW (3)' in report_html(r)
    assert '3 gold tokens have tags the model cannot predict: GW (3)' in r._repr_html_()
    assert 'gold_outside' not in quiet(calibration_report, events_from_scores(S, [0, 1, 2, 1]), n_samples=20).summary


def test_cli_counts_them_and_strict_labels_refuses(npz, capsys):
    r = run('report', npz/'logits.npz', '--extractor', 'softmax', '--extractor-param', 'kind=logits', '--json',
            '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)['summary']['gold_outside'] == '3 gold tokens have tags the model cannot predict: GW (3)'
    assert 'logits.npz: gold: 3 of 400 values are not among labels: GW (3, first at gold[5])' in r.stderr
    assert '(--strict-labels)' in r.stderr
    for argv in (['logits.npz', '--extractor', 'softmax', '--extractor-param', 'kind=logits'], ['t.npz']):
        r = calibkit_here(capsys, 'report', str(npz/argv[0]), *argv[1:], '--strict-labels', '--json')
        assert r.returncode == 65 and r.stderr.startswith('calibkit: error: ') and r.stderr.count('\n') == 1, r.stderr
        assert r.stderr.endswith(f'{argv[0]}: gold: 3 of 400 values are not among labels: GW (3, first at gold[5])\n')
    r = calibkit_here(capsys, 'report', str(npz/'t.npz'), '--extractor', 'coref_mc', '--strict-labels', '--json')
    assert r.returncode == 2 and "--strict-labels applies to score matrices with tag names" in r.stderr, r.stderr
