"The command line composes with others: stdin, --json, plugins table, closed pipes, exit codes, flag values, plugin parameters."
import json, subprocess, sys
from pathlib import Path
import numpy as np, pandas as pd, pytest

sys.path.insert(0, str(Path(__file__).parent))
from clidata import ENV, EXE, calibkit, calibkit_here, write_events  # noqa: E402


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('script')
    df = write_events(d, seed=1, n=3000, labels={'N': .6, 'V': .3, 'A': .1}, power=1.2, k=5, alpha=.5,
                      rows=400, scores_name='raw.npz')
    df.assign(label=df.label.map({'N': '1', 'V': '2', 'A': '3'}))[1500:].to_csv(d/'numeric.csv', index=False)
    (d/'counts.json').write_text(json.dumps({'N': 600, 'V': 300, 'A': 100}))
    (d/'numeric_counts.json').write_text(json.dumps({'1': 600, '2': 300, '3': 100}))
    return d


def here(*args):
    "`calibkit *args` in this process (`calibkit_here`); standard input, the working directory and pipes keep processes."
    return calibkit_here(None, *args)


def estimates(m) -> dict:
    return {(r['stage'], r['metric']): r['estimate'] for r in m['metrics']}


def test_json_on_stdout_is_metrics_json_and_writes_no_folder_without_out(data, tmp_path):
    r = calibkit('report', data/'test.csv', '--json', '--n-samples', 30, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert list(tmp_path.iterdir()) == []
    r2 = here('report', data/'test.csv', '--json', '--n-samples', 30, '--out', tmp_path/'r')
    assert json.loads(r2.stdout) == json.loads((tmp_path/'r'/'metrics.json').read_text())
    assert estimates(json.loads(r2.stdout)) == estimates(m)


@pytest.mark.parametrize('fmt,name', [('csv', 'test.csv'), ('jsonl', 'test.jsonl')])
def test_standard_input_gives_the_same_report_as_the_file(data, fmt, name):
    r = calibkit('report', '-', '--format', fmt, '--json', '--n-samples', 30, stdin=(data/name).read_text())
    assert r.returncode == 0, r.stderr
    f = json.loads(here('report', data/name, '--json', '--n-samples', 30).stdout)
    assert estimates(json.loads(r.stdout)) == estimates(f)
    assert calibkit('report', '-', '--json', stdin='').returncode == 2


def test_stdin_errors_name_stdin(data):
    r = calibkit('report', '-', '--format', 'csv', '--json', stdin='conf,correct\n0.5,1\nhigh,0\n')
    assert r.returncode == 65 and r.stderr.count('\n') == 1 and '<stdin>' in r.stderr and 'line 3' in r.stderr, r.stderr
    assert r.stdout == ''


def test_plugins_table_fits_100_columns_and_json():
    r = here('plugins')
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == ['name', 'kind', 'distribution', 'version', 'params']
    assert max(map(len, lines)) <= 100
    assert any(l.split()[:2] == ['histogram', 'recalibrator'] and 'n_bins=' in l for l in lines)
    rows = json.loads(here('plugins', '--json').stdout)
    assert {'kind', 'name', 'distribution', 'version', 'params'} <= set(rows[0])
    assert {r['name'] for r in rows} >= {'isotonic', 'tfg', 'softmax'}


@pytest.mark.parametrize('args', [['plugins'], ['plugins', '--json'], ['report', 'TEST', '--json', '--n-samples', '20']])
def test_closed_pipe_ends_quietly(data, args):
    p = subprocess.Popen([EXE, *[str(data/'test.csv') if a == 'TEST' else a for a in args]], env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()                                      # the reader is gone before anything is written
    err = p.stderr.read().decode()
    p.wait()
    assert 'Traceback' not in err and 'Exception ignored' not in err and 'BrokenPipe' not in err, err
    assert p.returncode in (0, 141)
    r = subprocess.run(f'{EXE} plugins | head -1', shell=True, capture_output=True, text=True, env=ENV)
    assert r.stdout.split() == ['name', 'kind', 'distribution', 'version', 'params'] and 'Traceback' not in r.stderr


def test_python_m_and_quiet_anywhere(data, tmp_path):
    r = subprocess.run([sys.executable, '-m', 'calibkit', '--help'], capture_output=True, text=True)
    assert r.returncode == 0 and 'usage: calibkit' in r.stdout and '65 bad data' in r.stdout
    for argv in (['--quiet', 'report', data/'test.csv'], ['report', '--quiet', data/'test.csv'],
                 ['report', data/'test.csv', '--quiet']):
        r = subprocess.run([EXE, *map(str, argv), '--json', '--n-samples', '20'], capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == '', r.stderr


@pytest.mark.parametrize('flag,value,expected', [
    ('--threshold', '2', '--threshold must be a finite number in [0, 1)'),
    ('--threshold', 'nan', '--threshold must be a finite number in [0, 1)'),
    ('--threshold', '-1', '--threshold must be a finite number in [0, 1)'),
    ('--seed', '-1', '--seed must be an integer >= 0'),
    ('--n-bins', '0', '--n-bins must be an integer >= 1'),
    ('--n-bins', 'ten', "'ten' is not an integer"),
    ('--level', '1', '--level must be a finite number in (0, 1)'),
    ('--n-samples', '1', '--n-samples must be an integer in [2, 10000]'),
    ('--param', 'n_bins', 'expected NAME=VALUE'),
])
def test_bad_flag_values_are_one_usage_line(data, tmp_path, flag, value, expected):
    r = here('report', data/'test.csv', flag, value, '--out', tmp_path/'r')
    assert r.returncode == 2 and r.stderr.count('\n') == 1 and r.stderr.startswith('calibkit: error: '), r.stderr
    assert expected in r.stderr and not (tmp_path/'r').exists()


def test_huge_n_bins_records_what_was_used(data):
    r = here('report', data/'test.csv', '--n-bins', 10**12, '--json', '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m['meta']['n_bins'] == 1500 and m['meta']['n_bins_requested'] == 10**12
    assert 'calibkit: warning: n_bins 1000000000000 exceeds the 1500 events: used 1500 bins' in r.stderr
    assert m['warnings'][0] == 'n_bins 1000000000000 exceeds the 1500 events: used 1500 bins (one event each)'


@pytest.mark.parametrize('same', ['path', 'copy'])
def test_fit_on_the_evaluated_events_warns_not_held_out(data, tmp_path, same):
    fit = data/'test.csv' if same == 'path' else tmp_path/'copy.csv'
    if same == 'copy': fit.write_bytes((data/'test.csv').read_bytes())
    r = here('report', data/'test.csv', '--fit', fit, '--recalibrator', 'isotonic', '--json', '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    assert r.stderr == 'calibkit: warning: the fit events are the evaluated events: the result is not held-out\n'


def test_numeric_labels_with_a_counts_file(data):
    "Labels are the exact strings in the file, so '1' matches the counts file's '1'."
    r = here('report', data/'numeric.csv', '--counts', data/'numeric_counts.json', '--grouper', 'tfg', '--n-groups', 2,
                 '--json', '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    g = pd.DataFrame(json.loads(r.stdout)['groups'])
    assert sorted(g.group) == [1, 2] and g.n_events.sum() == 1500


@pytest.mark.parametrize('rows', ['conf,correct\n0.7,1\n', 'conf,correct\n0.7,1\n0.6,1\n0.9,1\n'])
def test_degenerate_interval_is_said(tmp_path, rows):
    (tmp_path/'e.csv').write_text(rows)
    r = here('report', tmp_path/'e.csv', '--json', '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    assert 'calibkit: warning:' in r.stderr and 'degenerate' in r.stderr
    assert any('degenerate' in w for w in json.loads(r.stdout)['warnings'])


def test_recalibrator_and_grouper_params_reach_the_plugins(data):
    from calibkit.report import calibration_report
    r = here('report', data/'test.csv', '--fit', data/'dev.csv', '--recalibrator', 'histogram', '--param', 'n_bins=5',
                 '--grouper', 'tfg', '--grouper-param', 'n_groups=2', '--counts', data/'counts.json', '--json',
                 '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    test, dev = (pd.read_csv(data/f'{s}.csv') for s in ('test', 'dev'))
    from calibkit.inputs import read_counts
    from calibkit.plugins import grouper
    lib = calibration_report(test, fit=dev, counts=read_counts(data/'counts.json'), grouper=grouper('tfg', n_groups=2),
                             recalibrator='histogram', params=dict(n_bins=5), n_samples=20)
    assert estimates(m) == pytest.approx(estimates(dict(metrics=lib.to_dict()['metrics'])), rel=1e-12)
    assert m['meta']['recalibrator_params'] == {'n_bins': 5} and m['meta']['grouper_params'] == {'n_groups': 2}
    # a parameter the plugin does not take exits 65, as a value it refuses does (EX_DATAERR)
    r = here('report', data/'test.csv', '--fit', data/'dev.csv', '--recalibrator', 'histogram', '--param', 'bins=5')
    assert r.returncode == 65 and 'bins' in r.stderr and r.stderr.count('\n') == 1, r.stderr


def test_bins_flags_and_binning_are_recorded(data):
    m = json.loads(here('report', data/'test.csv', '--bin-size', 100, '--json', '--n-samples', 20).stdout)
    assert m['meta']['bin_size'] == 100 and m['meta']['n_bins'] == 15
    m = json.loads(here('report', data/'test.csv', '--binning', 'fixed_width', '--json', '--n-samples', 20).stdout)
    assert m['meta']['binning'] == 'fixed_width'
    assert here('report', data/'test.csv', '--bin-size', 100, '--n-bins', 5).returncode == 2


def test_extractor_over_a_raw_output(data, capsys):
    "An extractor and its parameters through the command's flags (in this process: the flags are the point here)."
    from calibkit.plugins import extractor
    raw = dict(np.load(data/'raw.npz'))
    for params, events in (([], extractor('softmax').extract(raw)), (['--extractor-param', 'events=top'],
                                                                        extractor('softmax', events='top').extract(raw))):
        r = calibkit_here(capsys, 'report', data/'raw.npz', '--extractor', 'softmax', *params, '--json',
                          '--n-samples', 20)
        assert r.returncode == 0, r.stderr
        s = json.loads(r.stdout)['summary']
        assert s['events'] == len(events) and s['accuracy'] == pytest.approx(events.correct.mean())
    assert json.loads(calibkit_here(capsys, 'report', data/'raw.npz', '--extractor', 'softmax', '--extractor-param',
                                    'events=top', '--json').stdout)['summary']['events'] == 400
    r = calibkit_here(capsys, 'report', data/'raw.npz', '--extractor', 'softmaxx')
    assert r.returncode == 2 and "unknown extractor 'softmaxx'" in r.stderr


def test_all_groups_flag_is_the_reports_all_groups(data, tmp_path, capsys):
    "--all-groups is calibration_report's all_groups: recorded in metrics.json, every group charted."
    for flag in ([], ['--all-groups']):
        r = calibkit_here(capsys, 'report', data/'test.csv', '--grouper', 'per_class', *flag, '--n-samples', 30,
                          '--out', tmp_path/f'r{len(flag)}')
        assert r.returncode == 0, r.stderr
        assert json.loads((tmp_path/f'r{len(flag)}'/'metrics.json').read_text())['meta']['all_groups'] is bool(flag)
