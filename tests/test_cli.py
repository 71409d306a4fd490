"The `calibkit` command: formats in, files out, one-line errors, safety of inputs, and the report in a real browser."
import hashlib, json, os, re, subprocess, sys
from pathlib import Path
import numpy as np, pandas as pd, pytest

sys.path.insert(0, str(Path(__file__).parent))
import browser  # noqa: E402
from clidata import EXE, calibkit, calibkit_here, write_events  # noqa: E402


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('cli')
    df = write_events(d, seed=0, n=4000, labels={'N': .5, 'V': .3, 'A': .15, 'D': .05}, power=1.3, k=6, alpha=.4,
                      rows=500, scores_name='scores.npz')
    df[2000:].to_parquet(d/'test.parquet')
    (d/'counts.json').write_text(json.dumps(dict(N=5000, V=3000, A=1500, D=500)))
    return d


@pytest.mark.parametrize('cmd', [[], ['report'], ['demo'], ['plugins']])
def test_help_on_every_command(cmd):
    r = subprocess.run([EXE, *cmd, '--help'], capture_output=True, text=True)
    assert r.returncode == 0 and 'usage: calibkit' in r.stdout



def test_version_imports_nothing_heavy():
    """`calibkit --version` answers at once (issue 24: under 0.3 s): the entry point loads neither numpy, pandas,
    Altair, the plugin registry, nor importlib.metadata (slow to import). Import weight, not time: deterministic."""
    code = ('import sys\nfrom calibkit.cli import main\ntry: main(["--version"])\nexcept SystemExit as e: code = e.code\n'
            'heavy = ("numpy", "pandas", "altair", "calibkit.plugins", "importlib.metadata")\n'
            'print(code, [m for m in heavy if m in sys.modules])')
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    import calibkit
    assert r.stdout.splitlines() == [f'calibkit {calibkit.__version__}', '0 []'], r.stdout

# Reports and their errors run in this process (`calibkit_here`: `cli.main`, its exit status and output; a process each
# cost seconds of imports); help, version, the plugins listing, --debug and the progress bar keep real processes.
@pytest.mark.parametrize('name', ['test.csv', 'test.parquet', 'test.jsonl'])
def test_report_from_events_files_agree(data, tmp_path, name, capsys):
    r = calibkit_here(capsys, 'report', data/name, '--out', tmp_path/'r', '--n-samples', 50)
    assert r.returncode == 0, r.stderr
    assert {'report.html', 'metrics.json', 'bins.csv', 'reliability_before.svg', 'reliability_before.vl.json'} <= \
        {p.name for p in (tmp_path/'r').iterdir()}
    m = json.loads((tmp_path/'r'/'metrics.json').read_text())
    from calibkit import calib_mse
    df = pd.read_csv(data/'test.csv')
    got = {row['metric']: row['estimate'] for row in m['metrics']}
    assert got['CalibMSE'] == pytest.approx(calib_mse(df.conf, df.correct, n_bins=10), rel=1e-9)
    assert m['meta']['command'].startswith('calibkit report')
    assert m['meta']['calibkit_version']


def test_title_names_the_page_and_is_escaped(data, tmp_path, capsys):
    "Issue 35: the page title was always 'Calibration of FILE'; --title sets it (escaped in the HTML)."
    r = calibkit_here(capsys, 'report', data/'test.csv', '--out', tmp_path/'r', '--n-samples', 50,
                      '--title', 'POS tagger <b>dev</b> & test')
    assert r.returncode == 0, r.stderr
    html = (tmp_path/'r'/'report.html').read_text()
    assert '<title>POS tagger &lt;b&gt;dev&lt;/b&gt; &amp; test</title>' in html and '<b>dev</b>' not in html
    assert json.loads((tmp_path/'r'/'metrics.json').read_text())['meta']['title'] == 'POS tagger <b>dev</b> & test'
    r = calibkit_here(capsys, 'report', data/'test.csv', '--out', tmp_path/'d', '--n-samples', 50)
    assert '<title>Calibration of test.csv</title>' in (tmp_path/'d'/'report.html').read_text()


def test_score_matrix_uses_threshold_and_reports_drops(data, tmp_path, capsys):
    r = calibkit_here(capsys, 'report', data/'scores.npz', '--out', tmp_path/'r', '--threshold', .05, '--n-samples', 50)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path/'r'/'metrics.json').read_text())['summary']
    scores = np.load(data/'scores.npz')['scores']
    assert s['n_cells'] == scores.size and s['n_dropped'] == int((scores < .05).sum())
    assert s['events'] == int((scores >= .05).sum())


def test_default_out_is_named_after_input_and_never_the_input(data, tmp_path):
    r = calibkit('report', data/'test.csv', '--n-samples', 20, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path/'test-calibration'/'report.html').is_file()
    r = calibkit('report', data/'test.csv', '--out', data, '--force')
    assert r.returncode == 73 and 'would replace or contain the input' in r.stderr and (data/'test.csv').exists()


def test_existing_out_refused_unless_force_and_input_untouched(data, tmp_path, capsys):
    "(In this process, `calibkit_here`: the refusal and the folders are the point, not the process.)"
    calibkit = lambda *args: calibkit_here(capsys, *args)
    before = hashlib.sha256((data/'test.csv').read_bytes()).hexdigest()
    assert calibkit('report', data/'test.csv', '--out', tmp_path/'r', '--n-samples', 20).returncode == 0
    r = calibkit('report', data/'test.csv', '--out', tmp_path/'r', '--n-samples', 20)
    assert r.returncode == 73 and 'exists' in r.stderr and '--force' in r.stderr
    assert calibkit('report', data/'test.csv', '--out', tmp_path/'r', '--n-samples', 20, '--force').returncode == 0
    assert hashlib.sha256((data/'test.csv').read_bytes()).hexdigest() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith('.')], 'temporary folders left behind'


BAD = {
    'missing.csv': ('conf,label\n0.5,N\n', "missing column(s) ['correct']"),
    'text.csv': ('conf,correct\n0.5,1\nhigh,0\n', "column 'conf', line 3: 'high' is not a number"),
    'nan.csv': ('conf,correct\n0.5,1\n0.4,0\n,1\n', "column 'conf', line 4"),
    'range.csv': ('conf,correct\n0.5,1\n1.2,0\n', "column 'conf', line 3: 1.2 is outside [0, 1]"),
    'label.csv': ('conf,correct\n0.5,yes\n', "column 'correct', line 2: 'yes' is not 0/1"),
    'broken.jsonl': ('{"conf": 0.5, "correct": 1}\n{"conf": 0.5,\n', 'broken.jsonl: line 2, column'),
    'weird.xlsx': ('x', "unknown file type '.xlsx'"),
}


@pytest.mark.parametrize('name', sorted(BAD))
def test_bad_input_is_one_clear_line(tmp_path, name, capsys):
    text, expected = BAD[name]
    (tmp_path/name).write_text(text)
    r = calibkit_here(capsys, 'report', tmp_path/name, '--out', tmp_path/'r')
    assert r.returncode == 65
    assert r.stderr.count('\n') == 1 and r.stderr.startswith('calibkit: error: '), r.stderr
    assert expected in r.stderr and 'Traceback' not in r.stderr
    assert not (tmp_path/'r').exists()


def test_unreadable_and_missing_files(tmp_path, capsys):
    r = calibkit_here(capsys, 'report', tmp_path/'nope.csv')
    assert r.returncode == 66 and 'nope.csv: no such file' in r.stderr
    (tmp_path/'bin.parquet').write_bytes(b'not parquet at all')
    r = calibkit_here(capsys, 'report', tmp_path/'bin.parquet')
    assert r.returncode == 65 and 'cannot read as parquet' in r.stderr


def test_debug_shows_traceback(tmp_path):
    r = calibkit('report', tmp_path/'nope.csv', '--debug')
    assert r.returncode != 0 and 'Traceback' in r.stderr


def test_report_renders_in_a_real_browser(data, tmp_path):
    why = browser.missing()
    if why: pytest.skip(f'browser check skipped: {why}')
    assert calibkit('report', data/'test.csv', '--out', tmp_path/'r', '--n-samples', 50).returncode == 0
    page = browser.open_page(tmp_path/'r'/'report.html', screenshot=tmp_path/'shot.png')
    assert page['errors'] == []
    assert page['svgs'] and all(w > 100 and h > 100 and vis == 'visible' for w, h, vis in page['svgs'])
    assert (tmp_path/'shot.png').stat().st_size > 10_000
    html = (tmp_path/'r'/'report.html').read_text()
    assert '<script' not in html and 'cdn.' not in html


@pytest.mark.parametrize('flag,name,kind', [('--recalibrator', 'isotonik', 'recalibrator'), ('--grouper', 'tfgg', 'grouper')])
def test_unknown_plugin_names_list_the_known_ones(data, tmp_path, flag, name, kind, capsys):
    args = ['--fit', data/'dev.csv'] if flag == '--recalibrator' else []
    r = calibkit_here(capsys, 'report', data/'test.csv', flag, name, *args, '--out', tmp_path/'r')
    assert r.returncode == 2 and r.stderr.count('\n') == 1, r.stderr
    assert name in r.stderr and kind in r.stderr and ('isotonic' in r.stderr or 'tfg' in r.stderr)
    assert not (tmp_path/'r').exists()


def test_recal_without_fit_is_refused(data, tmp_path, capsys):
    r = calibkit_here(capsys, 'report', data/'test.csv', '--recalibrator', 'isotonic', '--out', tmp_path/'r')
    assert r.returncode == 2 and 'needs fit events (--fit)' in r.stderr


def test_plugins_command_lists_builtins():
    r = subprocess.run([EXE, 'plugins'], capture_output=True, text=True)
    assert r.returncode == 0
    for name in ('isotonic', 'histogram', 'scaling_binning', 'platt', 'tfg', 'shared', 'per_class', 'softmax',
                 'crf_marginals', 'seq2seq', 'coref_mc'):
        assert name in r.stdout, name


LOGITS = Path(__file__).resolve().parents[1]/'calibkit'/'data'/'calibration_metric'/'dev_two.logits'


@pytest.mark.parametrize('suffix', ['.logits', '.jsonl'])
def test_report_from_calibration_metric_logits(tmp_path, suffix, capsys):
    "The calibration_metric top-logit format: token events, the same as read_calibration_metric_logits gives."
    src = tmp_path/f'dev_two{suffix}'
    src.write_bytes(LOGITS.read_bytes())
    r = calibkit_here(capsys, 'report', src, '--out', tmp_path/'r', '--n-bins', 5, '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    from calibkit.extractors.seq2seq import read_calibration_metric_logits
    ev = read_calibration_metric_logits(LOGITS)
    s = json.loads((tmp_path/'r'/'metrics.json').read_text())['summary']
    assert s['events'] == len(ev) and s['accuracy'] == pytest.approx(ev.correct.mean())
    (tmp_path/'bad.logits').write_text('{"top_logits": [[0.5, 0.5]], "labels": [1]}\n')
    r = calibkit_here(capsys, 'report', tmp_path/'bad.logits', '--out', tmp_path/'r2')
    assert r.returncode == 65 and "lacks key(s) ['top_logit_idxs']" in r.stderr and 'Traceback' not in r.stderr


# ---- self-documentation (issue 24) ---------------------------------------------------------------------
@pytest.mark.parametrize('columns', ['60', '100', '200'])
def test_plugins_listing_wraps_never_cuts_and_names_extractor_keys(columns):
    "Every parameter of every plugin, its description and an extractor's input keys, at any width."
    import os, re
    r = subprocess.run([EXE, 'plugins'], capture_output=True, text=True, env={**os.environ, 'COLUMNS': columns})
    assert r.returncode == 0 and '…' not in r.stdout
    if int(columns) >= 100: assert max(map(len, r.stdout.splitlines())) <= int(columns)
    words = r.stdout.split()
    rows = json.loads(subprocess.run([EXE, 'plugins', '--json'], capture_output=True, text=True).stdout)
    for row in rows:
        for piece in row['params'].split() + row['description'].split():
            assert piece in words, (row['name'], piece)
    softmax = next(x for x in rows if x['name'] == 'softmax')
    assert list(softmax['reads']) == ['scores', 'gold'] and 'labels' in softmax['reads_optional']
    assert re.search(r'\n +reads: scores, gold; optional: labels', r.stdout)


def test_demo_help_lists_the_studies():
    r = subprocess.run([EXE, 'demo', '--help'], capture_output=True, text=True)
    for study in ('synthetic', 'twitter_pos', 'sparse_tagsets', 'seq2seq', 'coref'):
        assert re.search(rf'^  {study} +\S', r.stdout, re.M), study
    assert '[needs calibkit[crf]]' in r.stdout and '[needs calibkit[hf]]' in r.stdout


def test_no_progress_bar_when_stderr_is_not_a_terminal(data, tmp_path):
    "Without --quiet or $CALIBKIT_QUIET, a run whose stderr goes to a file writes no bar (no carriage return)."
    import os
    env = {k: v for k, v in os.environ.items() if k != 'CALIBKIT_QUIET'}
    r = subprocess.run([EXE, 'report', str(data/'test.csv'), '--out', str(tmp_path/'r'), '--n-samples', '20'],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert '\r' not in r.stderr and '%|' not in r.stderr, r.stderr


def test_commands_in_one_process_each_show_their_warnings_and_leave_the_handler(tmp_path, capsys, monkeypatch):
    """`cli.main` called twice in one process (a notebook, the in-process tests): the second command shows its warnings
    too (each distinct warning once per command), and the caller's `warnings.showwarning` and environment (--quiet
    sets $CALIBKIT_QUIET for the command only) are back after each."""
    import warnings
    from calibkit.cli import main
    monkeypatch.delenv('CALIBKIT_QUIET', raising=False)
    f = tmp_path/'e.csv'
    f.write_text('conf,correct\n0.9,1\n0.8,1\n0.3,0\n')
    before, errs = warnings.showwarning, []
    for _ in range(2):
        assert main(['report', str(f), '--json', '--quiet']) == 0
        errs.append(capsys.readouterr().err)
        assert warnings.showwarning is before and 'CALIBKIT_QUIET' not in os.environ
    assert errs[0] == errs[1]
    assert errs[0].startswith('calibkit: warning: n_bins 10 exceeds the 3 events: used 3 bins (one event each)\n')
    assert errs[0].count('calibkit: warning:') == 3
