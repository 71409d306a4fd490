"""Issue 25: a score threshold has one meaning and one default everywhere. Events with conf >= threshold are kept; a
threshold lies in [0, 1) (0 keeps everything, 1 is refused); left at None it is the settings' threshold (0.01), and
`calibkit.config.check_threshold` is the one check, used by the settings, events_from_scores, the sparse study, the
input readers and the command line."""
import numpy as np, pandas as pd, pytest
from calibkit.config import Settings, check_threshold, settings
from calibkit.events import events_from_scores
from calibkit.inputs import ThresholdError, load_input, read_inputs, read_scores, threshold_events
from calibkit.sparse import sparse_study_from_scores
from clidata import calibkit

S = np.array([[.7, .25, .05], [.1, .85, .05], [.02, .08, .9]])
G = [0, 2, 2]
REFUSED = 'threshold must be a finite number in [0, 1)'


def test_the_default_is_the_settings_threshold():
    assert settings().threshold == 0.01
    assert check_threshold() == check_threshold(None) == 0.01
    assert events_from_scores(S, G).attrs['threshold'] == 0.01


@pytest.mark.parametrize('t, kept', [(0, 9), (0.0, 9), (0.08, 6), (0.899, 1), (0.999, 0)])
def test_accepted_thresholds_keep_cells_at_or_above(t, kept):
    assert check_threshold(t) == t and isinstance(check_threshold(t), float)
    ev = events_from_scores(S, G, threshold=t)
    assert len(ev) == kept == int((S >= t).sum())                       # >=: a cell equal to the threshold is kept
    assert ev.attrs['threshold'] == t and ev.attrs['n_dropped'] == 9 - kept


@pytest.mark.parametrize('t', [1, 1.0, -0.1, 1.5, float('nan'), float('inf'), -float('inf')])
def test_refused_thresholds_name_the_argument(t):
    for call in (lambda: check_threshold(t), lambda: events_from_scores(S, G, threshold=t),
                 lambda: Settings(threshold=t), lambda: sparse_study_from_scores({'a': 1}, S, G, S, G, threshold=t)):
        with pytest.raises(ValueError, match=r'threshold must be a finite number in \[0, 1\), got '):
            call()


@pytest.mark.parametrize('t, kind', [(True, 'bool'), ('0.1', 'str'), (None, None)])
def test_non_numbers_refused(t, kind):
    if t is None:
        with pytest.raises(ValueError, match='got NoneType None'):
            Settings(threshold=None)                                  # the settings themselves hold a number
        return
    with pytest.raises(ValueError, match=f'got {kind} '):
        check_threshold(t)


def test_numpy_numbers_accepted():
    assert check_threshold(np.float32(0.5)) == 0.5 and check_threshold(np.int64(0)) == 0.0
    with pytest.raises(ValueError, match='got bool np.False_'):
        check_threshold(np.bool_(False))


def test_name_in_the_message():
    with pytest.raises(ValueError, match=r'^--threshold must be a finite number in \[0, 1\), got 1.0$'):
        check_threshold(1.0, '--threshold')


def test_read_scores_defaults_to_the_settings_threshold(tmp_path):
    np.savez(tmp_path/'s.npz', scores=S, gold=np.array(G))
    assert len(read_scores(tmp_path/'s.npz')) == int((S >= 0.01).sum()) == 9
    np.savez(tmp_path/'eye.npz', scores=np.eye(3), gold=np.arange(3))
    ev = read_scores(tmp_path/'eye.npz')                               # the zeros are below 0.01: three events
    assert len(ev) == 3 and ev.attrs['threshold'] == 0.01 and ev.attrs['n_dropped'] == 6
    assert len(read_scores(tmp_path/'eye.npz', threshold=0)) == 9
    with pytest.raises(ValueError, match=REFUSED.replace('[', r'\[').replace(')', r'\)')):
        read_scores(tmp_path/'eye.npz', threshold=1)


def test_events_files_whole_unless_asked(tmp_path):
    pd.DataFrame(dict(conf=[0.005, 0.5, 0.9], correct=[0, 1, 1])).to_csv(tmp_path/'e.csv', index=False)
    assert len(load_input(tmp_path/'e.csv')) == 3 and 'threshold' not in load_input(tmp_path/'e.csv').attrs
    ev = load_input(tmp_path/'e.csv', 0.5)
    assert ev.conf.tolist() == [0.5, 0.9] and ev.attrs == dict(n_cells=3, n_dropped=1, threshold=0.5)
    ev, fit, _ = read_inputs(tmp_path/'e.csv', tmp_path/'e.csv', threshold=0)
    assert len(ev) == len(fit) == 3 and ev.attrs['n_dropped'] == 0
    with pytest.raises(ThresholdError, match=r'e.csv: all 3 events score below the threshold 0.999$'):
        load_input(tmp_path/'e.csv', 0.999)
    with pytest.raises(ValueError, match=r'got -0.1$'):
        threshold_events(ev, -0.1, 'e.csv')


def test_command_line_threshold_boundaries(tmp_path):
    pd.DataFrame(dict(conf=[0.0, 0.3, 0.6, 0.9] * 5, correct=[0, 0, 1, 1] * 5)).to_csv(tmp_path/'e.csv', index=False)
    for t in ('1', '-0.1'):
        r = calibkit('report', tmp_path/'e.csv', '--json', '--threshold', t)
        assert r.returncode == 2 and f'--threshold must be a finite number in [0, 1), got {float(t)}' in r.stderr
    import json
    got = {}
    for t in ('0', '0.6'):
        r = calibkit('report', tmp_path/'e.csv', '--json', '--threshold', t, '--n-samples', 20, '--n-bins', 2)
        assert r.returncode == 0, r.stderr
        got[t] = json.loads(r.stdout)['summary']
    assert got['0']['events'] == 20 and got['0.6']['events'] == 10
