"`calibkit report/demo --force` never loses a user's file: refusals in one line, atomic replacement under kill -9."
import hashlib, json, os, random, signal, subprocess, sys, time
from pathlib import Path
import numpy as np, pandas as pd, pytest

sys.path.insert(0, str(Path(__file__).parent))
from clidata import EXE, calibkit, calibkit_here  # noqa: E402

MARKER = '.calibkit-report.json'


def tree(d: Path) -> dict:
    "Every file under d with its content hash (to show nothing changed)."
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob('*')) if p.is_file()}


def complete(out: Path) -> bool:
    "A report folder whose manifest lists exactly its files with their sha256, with a readable metrics.json."
    m = json.loads((out/MARKER).read_text())
    files = sorted(p.name for p in out.iterdir() if p.name != MARKER)
    json.loads((out/'metrics.json').read_text())
    return (m['writer'] == 'calibkit' and m['state'] == 'complete' and sorted(m['files']) == files
            and 'report.html' in files and all(hashlib.sha256((out/n).read_bytes()).hexdigest() == h
                                               for n, h in m['files'].items()))


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('safety')
    rng = np.random.default_rng(0)
    q = rng.beta(2, 2, 3000)
    pd.DataFrame(dict(conf=q, correct=(rng.random(3000) < q).astype(int))).to_csv(d/'test.csv', index=False)
    return d/'test.csv'


def refused(r, why):
    assert r.returncode == 73, (r.returncode, r.stderr)
    assert r.stderr.count('\n') == 1 and r.stderr.startswith('calibkit: error: ') and why in r.stderr, r.stderr


# The refusals below run in this process (`calibkit_here`: `cli.main`, its exit status and its one line), a `calibkit`
# process each cost seconds of imports; the process boundary is kept where it is the point (umask, SIGKILL).
def test_user_folder_is_never_replaced(data, tmp_path, capsys):
    calibkit = lambda *args: calibkit_here(capsys, *args)
    mine = tmp_path/'mine'
    mine.mkdir()
    (mine/'thesis.tex').write_text('years of work')
    before = tree(tmp_path)
    refused(calibkit('report', data, '--out', mine, '--force'), 'is not a report folder calibkit wrote')
    assert tree(tmp_path) == before


def test_report_folder_with_a_user_file_is_not_replaced(data, tmp_path, capsys):
    calibkit = lambda *args: calibkit_here(capsys, *args)
    out = tmp_path/'r'
    assert calibkit('report', data, '--out', out, '--n-samples', 20).returncode == 0
    (out/'notes.txt').write_text('mine')
    refused(calibkit('report', data, '--out', out, '--force'), 'holds files calibkit did not write')
    assert (out/'notes.txt').read_text() == 'mine'


@pytest.mark.parametrize('where,why', [('.', 'the working directory'), ('..', 'a folder above the working directory'),
                                       ('/', 'the filesystem root'), ('~', 'your home folder')])
def test_dangerous_places_are_refused(data, tmp_path, where, why, capsys, monkeypatch):
    home, work = tmp_path/'home', tmp_path/'home'/'a'/'work'
    work.mkdir(parents=True)
    (home/'keep.txt').write_text('x')
    (work/'keep.txt').write_text('y')
    before = tree(tmp_path)
    out = str(home) if where == '~' else where
    monkeypatch.chdir(work)
    monkeypatch.setenv('HOME', str(home))
    refused(calibkit_here(capsys, 'report', data, '--out', out, '--force'), why)
    assert tree(tmp_path) == before


def test_plain_file_symlink_and_path_under_a_file_are_refused(data, tmp_path, capsys):
    f = tmp_path/'file.txt'
    f.write_text('mine')
    refused(calibkit_here(capsys, 'report', data, '--out', f, '--force'), 'is a file, not a folder')
    refused(calibkit_here(capsys, 'report', data, '--out', f/'sub', '--force'), 'which is a plain file')
    assert calibkit_here(capsys, 'report', data, '--out', tmp_path/'real', '--n-samples', 20).returncode == 0
    (tmp_path/'link').symlink_to(tmp_path/'real')
    refused(calibkit_here(capsys, 'report', data, '--out', tmp_path/'link', '--force'), 'is a symbolic link')
    assert f.read_text() == 'mine' and (tmp_path/'link').is_symlink() and complete(tmp_path/'real')


def test_folder_holding_the_input_is_refused(data, capsys):
    before = tree(data.parent)
    refused(calibkit_here(capsys, 'report', data, '--out', data.parent, '--force'), 'would replace or contain the input')
    assert tree(data.parent) == before


def test_permissions_follow_the_umask_and_input_is_untouched(data, tmp_path):
    before = hashlib.sha256(data.read_bytes()).hexdigest()
    out = tmp_path/'r'
    for force in ([], ['--force']):
        assert calibkit('report', data, '--out', out, '--n-samples', 20, *force).returncode == 0
        assert out.stat().st_mode & 0o777 == 0o755
        assert all(p.stat().st_mode & 0o777 == 0o644 for p in out.iterdir())
    assert hashlib.sha256(data.read_bytes()).hexdigest() == before
    assert complete(out)


def test_stale_temp_folders_of_calibkit_are_cleaned_and_others_kept(data, tmp_path, capsys):
    calibkit = lambda *args: calibkit_here(capsys, *args)
    out = tmp_path/'r'
    assert calibkit('report', data, '--out', out, '--n-samples', 20).returncode == 0
    planned = dict.fromkeys(['bins.csv', 'metrics.json', 'report.html'])
    stale = tmp_path/'.r.calibkit-tmp-999999999-dead'          # a killed run's folder: pattern + manifest
    stale.mkdir()
    (stale/MARKER).write_text(json.dumps(dict(writer='calibkit', state='writing', files=planned)))
    (stale/'bins.csv').write_text('partial')
    lookalike = tmp_path/'.r.calibkit-tmp-999999998-beef'      # same pattern, no manifest, user content: kept
    lookalike.mkdir()
    (lookalike/'mine.txt').write_text('keep')
    dl6 = tmp_path/'.r.calibkit-tmp-999999997-cafe'            # pattern + manifest, but a user file in it: kept
    dl6.mkdir()
    (dl6/MARKER).write_text(json.dumps(dict(writer='calibkit', state='writing', files=planned)))
    (dl6/'notes.txt').write_text('keep too')
    assert calibkit('report', data, '--out', out, '--n-samples', 20, '--force').returncode == 0
    assert not stale.exists() and (lookalike/'mine.txt').read_text() == 'keep'
    assert (dl6/'notes.txt').read_text() == 'keep too'
    assert sorted(p.name for p in tmp_path.iterdir()) == [dl6.name, lookalike.name, 'r']


def test_demo_force_replaces_only_what_calibkit_wrote(tmp_path, capsys):
    calibkit = lambda *args: calibkit_here(capsys, *args)
    d = tmp_path/'demo'
    (d/'synthetic').mkdir(parents=True)
    (d/'synthetic'/'thesis.tex').write_text('mine')
    refused(calibkit('demo', '--out', d, '--only', 'synthetic', '--force'), 'holds files calibkit did not write')
    (d/'synthetic'/'thesis.tex').unlink()
    (d/'synthetic').rmdir()
    (d/'index.html').write_text('my page')
    refused(calibkit('demo', '--out', d, '--only', 'synthetic', '--force'), 'was not written by calibkit demo')
    assert (d/'index.html').read_text() == 'my page'
    (d/'index.html').unlink()
    (d/'notes.txt').write_text('kept')
    refused(calibkit('demo', '--out', d, '--only', 'synthetic'), 'exists; choose another --out or pass --force')
    for _ in range(2):                                     # writes, then replaces its own report and index
        r = calibkit('demo', '--out', d, '--only', 'synthetic', '--force')
        assert r.returncode == 0, r.stderr
    assert (d/'notes.txt').read_text() == 'kept' and complete(d/'synthetic') and (d/'index.html').is_file()


def test_kill_at_random_moments_leaves_old_or_new_report_complete(data, tmp_path):
    """SIGKILL `report --force` at 4 random moments (seeded), one in each quarter of 1.2 times a run's time (stratified:
    the whole run, its start, its writing and its swap, is covered by a few kills, and the last kill lands after the
    swap): --out always holds a complete report, the old or the new one, and the kills land both before and after the
    swap. (6 or 10 kills cost runs more and sampled the same span no differently: a sample, not a repetition.)"""
    out = tmp_path/'r'
    args = lambda seed: [EXE, 'report', str(data), '--out', str(out), '--n-samples', '20', '--seed', str(seed), '--force']
    env = dict(os.environ, CALIBKIT_QUIET='1')
    texts = {}
    for seed in (1, 0):                                   # both complete reports, ending with the old one (seed 0)
        t0 = time.perf_counter()
        subprocess.run(args(seed), check=True, env=env, capture_output=True)
        texts[seed], took = (out/'metrics.json').read_text(), time.perf_counter() - t0
    assert texts[0] != texts[1]
    rnd = random.Random(0)
    outcomes = set()
    n = 4
    for i in range(n):
        p = subprocess.Popen(args(1 - i % 2), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.1 + (took * 1.2 - 0.1) * (i + rnd.random()) / n)
        p.send_signal(signal.SIGKILL)
        p.wait()
        assert complete(out), f'run {i}: incomplete report at --out'
        text = (out/'metrics.json').read_text()
        assert text in (texts[0], texts[1]), f'run {i}: neither the old nor the new report'
        outcomes.add(text == texts[1 - i % 2])
    assert outcomes == {True, False}, 'the kills never landed both before and after the swap: widen the sleep range'
    r = calibkit('report', data, '--out', out, '--n-samples', 20, '--force')   # the next run cleans what kills left
    assert r.returncode == 0 and complete(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['r']
