"""The output-folder transaction (calibkit.outdir) never loses a user's file: the data-loss cases DL1-DL6 of issue 23,
each reproduced with the user's action injected in the middle of a run, and runs interleaved at random moments with
a second run, a user file written into the folder, and a file or symlink put at the output."""
import hashlib, json, os, random, subprocess, sys, threading, time
from pathlib import Path
import numpy as np, pandas as pd, pytest
import calibkit.outdir as outdir
import calibkit.render as render
from calibkit.cli import EX_CANTCREAT, main
from calibkit.outdir import MARKER, OutputError, claim, mismatch
from calibkit.render import REPORT_FILES, report_html, save_report
from calibkit.report import calibration_report

sys.path.insert(0, str(Path(__file__).parent))
from clidata import EXE, calibkit  # noqa: E402


def tree(d: Path) -> dict:
    "Every entry under d: files with their sha256, links with their target, folders as 'dir'."
    out = {}
    for p in sorted(d.rglob('*')):
        k = str(p.relative_to(d))
        out[k] = (f'link:{os.readlink(p)}' if p.is_symlink() else 'dir' if p.is_dir()
                  else hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def own(out: Path) -> bool:
    "A complete report folder, exactly as its manifest lists (names, plain files, sha256)."
    return mismatch(out, REPORT_FILES) is None and json.loads((out/MARKER).read_text())['state'] == 'complete'


def hidden(d: Path) -> list[str]:
    "calibkit's temporary folders and lock files left in d."
    return sorted(p.name for p in d.iterdir() if '.calibkit-' in p.name)


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('outdir')
    rng = np.random.default_rng(0)
    q = rng.beta(2, 2, 400)
    pd.DataFrame(dict(conf=q, correct=(rng.random(400) < q).astype(int))).to_csv(d/'test.csv', index=False)
    return d/'test.csv'


@pytest.fixture(scope='module')
def rep(data):
    return calibration_report(pd.read_csv(data), n_samples=20)


def run(data, out, *flags, capsys):
    "`calibkit report` in this process (so a test can act in the middle of it): exit status and stderr."
    capsys.readouterr()
    code = main(['report', str(data), '--out', str(out), '--n-samples', '20', '--quiet', *flags])
    return code, capsys.readouterr().err


def during_run(monkeypatch, action):
    "Make `action()` happen in the middle of every run: after the claim, while the new report is being written."
    write = render.write_report_files
    def slow(r, folder):
        action()
        write(r, folder)
    monkeypatch.setattr(render, 'write_report_files', slow)


def refused(code, err, why):
    assert code == EX_CANTCREAT, err
    assert err.count('\n') == 1 and err.startswith('calibkit: error: ') and why in err, err


# ---- DL1-DL6 (issue 23): each lost a user's file on the old code, here each must exit 73 and keep it ----

def test_dl1_folder_made_at_out_during_a_run_is_kept(data, tmp_path, monkeypatch, capsys):
    out = tmp_path/'OUT'
    def user():
        out.mkdir()
        (out/'thesis.tex').write_text('years of work')
    during_run(monkeypatch, user)
    code, err = run(data, out, capsys=capsys)
    refused(code, err, 'appeared during the run')
    assert tree(out) == {'thesis.tex': hashlib.sha256(b'years of work').hexdigest()}
    assert hidden(tmp_path) == []


def test_dl2_file_written_into_the_folder_during_a_force_run_is_kept(data, tmp_path, monkeypatch, capsys):
    out = tmp_path/'REP'
    assert run(data, out, capsys=capsys)[0] == 0
    before = tree(out)
    during_run(monkeypatch, lambda: (out/'notes.txt').write_text('mine'))
    code, err = run(data, out, '--force', capsys=capsys)
    refused(code, err, 'holds files calibkit did not write (notes.txt)')
    assert tree(out) == before | {'notes.txt': hashlib.sha256(b'mine').hexdigest()}
    assert hidden(tmp_path) == []


@pytest.mark.parametrize('kind', ['symlink', 'file'])
def test_dl3_symlink_or_file_put_at_out_during_a_run_is_never_moved(data, tmp_path, monkeypatch, capsys, kind):
    out, important = tmp_path/'OUT', tmp_path/'important'
    important.mkdir()
    (important/'data.txt').write_text('precious')
    during_run(monkeypatch, lambda: out.symlink_to(important) if kind == 'symlink' else out.write_text('mine'))
    code, err = run(data, out, capsys=capsys)
    refused(code, err, 'appeared during the run')
    if kind == 'symlink': assert out.is_symlink() and os.readlink(out) == str(important)
    else: assert out.read_text() == 'mine'
    assert tree(important) == {'data.txt': hashlib.sha256(b'precious').hexdigest()}
    assert hidden(tmp_path) == []                      # not renamed to a hidden folder, no report written anyway


def test_dl4_folder_in_place_of_a_file_is_not_deleted(data, tmp_path, capsys):
    out = tmp_path/'R'
    assert run(data, out, capsys=capsys)[0] == 0
    (out/'bins.csv').unlink()
    (out/'bins.csv').mkdir()
    (out/'bins.csv'/'mine.txt').write_text('x')
    before = tree(out)
    refused(*run(data, out, '--force', capsys=capsys), 'bins.csv is not a plain file')
    assert tree(out) == before


def test_dl5_hand_edited_manifest_authorises_nothing(data, tmp_path, capsys):
    out = tmp_path/'R'
    assert run(data, out, capsys=capsys)[0] == 0
    (out/'notes.txt').write_text('mine')
    m = json.loads((out/MARKER).read_text())
    m['files']['notes.txt'] = hashlib.sha256(b'mine').hexdigest()
    (out/MARKER).write_text(json.dumps(m))
    before = tree(out)
    refused(*run(data, out, '--force', capsys=capsys), 'lists files calibkit does not write (notes.txt)')
    assert tree(out) == before


def test_dl5_hand_edit_inside_report_html_refuses_force(data, tmp_path, capsys):
    out = tmp_path/'R'
    assert run(data, out, capsys=capsys)[0] == 0
    with open(out/'report.html', 'a') as f: f.write('<p>my comments</p>')
    before = tree(out)
    refused(*run(data, out, '--force', capsys=capsys), 'report.html changed since calibkit wrote it')
    assert tree(out) == before


def test_dl6_stale_temp_folder_with_a_user_file_is_kept(data, tmp_path, capsys):
    out = tmp_path/'S'
    planned = dict.fromkeys(sorted(REPORT_FILES))
    mine = tmp_path/'.S.calibkit-tmp-999999999-dead'
    mine.mkdir()
    (mine/MARKER).write_text(json.dumps(dict(writer='calibkit', state='writing', files=planned)))
    (mine/'bins.csv').write_text('partial')
    (mine/'thesis.tex').write_text('years of work')
    killed = tmp_path/'.S.calibkit-tmp-999999998-beef'   # a killed run's own leftovers: removed
    killed.mkdir()
    (killed/MARKER).write_text(json.dumps(dict(writer='calibkit', state='writing', files=planned)))
    (killed/'bins.csv').write_text('partial')
    before = tree(mine)
    assert run(data, out, capsys=capsys)[0] == 0
    assert tree(mine) == before and not killed.exists() and own(out)


# ---- the window between the last check and the swap, the fallback without renameat2, the lock ----

def test_change_between_the_check_and_the_exchange_is_swapped_back(data, tmp_path, monkeypatch, capsys):
    out = tmp_path/'R'
    assert run(data, out, capsys=capsys)[0] == 0
    before = tree(out)
    exchange, calls = outdir._exchange, []
    def late(a, b, aside):                             # the user writes just after calibkit's last look
        if not calls: (b/'notes.txt').write_text('mine')
        calls.append(b)
        exchange(a, b, aside)
    monkeypatch.setattr(outdir, '_exchange', late)
    refused(*run(data, out, '--force', capsys=capsys), 'holds files calibkit did not write (notes.txt)')
    assert tree(out) == before | {'notes.txt': hashlib.sha256(b'mine').hexdigest()}
    assert calls == [out, out] and hidden(tmp_path) == []   # exchanged, and exchanged back


def test_without_renameat2_the_same_guarantees_hold(data, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(outdir, '_renameat2', lambda a, b, flags: False)
    out = tmp_path/'R'
    assert run(data, out, capsys=capsys)[0] == 0 and own(out)
    first = (out/'metrics.json').read_text()
    assert run(data, out, '--force', '--seed', '1', capsys=capsys)[0] == 0 and own(out)
    assert (out/'metrics.json').read_text() != first
    (out/'notes.txt').write_text('mine')
    refused(*run(data, out, '--force', capsys=capsys), 'notes.txt')
    assert (out/'notes.txt').read_text() == 'mine' and hidden(tmp_path) == []


def test_a_claimed_folder_turns_a_second_claim_away_and_a_foreign_lock_file_is_untouched(tmp_path):
    out = tmp_path/'R'
    with claim(out, REPORT_FILES):
        with pytest.raises(OutputError, match='is being written by another calibkit run') as e:
            with claim(out, REPORT_FILES): pass
        assert e.value.reason == 'busy'
    assert hidden(tmp_path) == []                      # the lock file goes with the claim
    (tmp_path/'.R.calibkit-lock').write_text('my own notes')
    with pytest.raises(OutputError, match='calibkit did not write'):
        with claim(out, REPORT_FILES): pass
    assert (tmp_path/'.R.calibkit-lock').read_text() == 'my own notes'


def test_library_messages_name_no_flags(rep, tmp_path):
    out = tmp_path/'R'
    save_report(rep, out)
    with pytest.raises(OutputError) as e: save_report(rep, out)
    assert (str(e.value), e.value.reason) == (f'{out} exists', 'exists')
    (out/'notes.txt').write_text('mine')
    with pytest.raises(OutputError) as e: save_report(rep, out, force=True)
    assert '--' not in str(e.value) and 'notes.txt' in str(e.value)


# ---- interleavings at random moments (20 each): no user file is ever lost, outcomes are only 0 or 73 ----

@pytest.fixture(scope='module')
def save(rep):
    "A report run through the library's transaction, its files written 20 ms apart (an injected delay: ~0.1 s a run)."
    files = {'report.html': report_html(rep), 'metrics.json': rep.to_json(), 'bins.csv': rep.bins.to_csv(index=False)}
    def write(folder):
        for name, text in files.items():
            time.sleep(0.02)
            (folder/name).write_text(text)
    def save(out, force=False):
        with claim(out, REPORT_FILES, force=force) as c: c.commit(write)
    return save


def timed_save(save, out) -> float:
    t0 = time.perf_counter()
    save(out, force=True)
    return time.perf_counter() - t0


def outcome(fn) -> str:
    try: fn()
    except OutputError as e: return e.reason
    return 'ok'


def test_two_runs_on_one_folder_one_wins_the_other_is_turned_away(save, tmp_path):
    out = tmp_path/'R'
    took, rnd, seen = timed_save(save, out), random.Random(0), set()
    for i in range(20):
        res = {}
        def second(): time.sleep(rnd.uniform(0, took)); res['b'] = outcome(lambda: save(out, force=True))
        t = threading.Thread(target=second)
        t.start()
        res['a'] = outcome(lambda: save(out, force=True))
        t.join()
        assert set(res.values()) <= {'ok', 'busy'} and 'ok' in res.values(), (i, res)
        assert own(out) and hidden(tmp_path) == [], i
        seen.add(tuple(sorted(res.values())))
    assert ('busy', 'ok') in seen, f'the runs never overlapped: {seen}'


def test_user_file_written_into_the_folder_at_random_moments_is_never_lost(save, tmp_path):
    out = tmp_path/'R'
    took, rnd, seen = timed_save(save, out), random.Random(1), set()
    for i in range(20):
        if (out/'notes.txt').exists(): (out/'notes.txt').unlink()   # the folder is calibkit's own again
        def user(): time.sleep(rnd.uniform(0, took * 1.2)); (out/'notes.txt').write_text(f'mine {i}')
        t = threading.Thread(target=user)
        t.start()
        res = outcome(lambda: save(out, force=True))
        t.join()
        assert res in ('ok', 'changed', 'refused'), (i, res)  # refused: the write came before the claim
        assert (out/'notes.txt').read_text() == f'mine {i}', i
        assert mismatch(out, REPORT_FILES).endswith('holds files calibkit did not write (notes.txt)'), i
        assert hidden(tmp_path) == [], (i, hidden(tmp_path))
        seen.add(res)
    assert {'ok', 'changed'} <= seen, f'the writes never landed both before and after the swap: {seen}'


@pytest.mark.parametrize('kind', ['file', 'symlink'])
def test_file_or_symlink_put_at_out_at_random_moments_is_never_moved(save, tmp_path, kind):
    important = tmp_path/'important'
    important.mkdir()
    (important/'data.txt').write_text('precious')
    took, rnd, seen = timed_save(save, tmp_path/'probe'), random.Random(2), set()
    for i in range(20):
        out, mine = tmp_path/f'OUT{i}', {}
        def user():
            time.sleep(rnd.uniform(0, took * 1.2))
            try:
                if kind == 'symlink': out.symlink_to(important)
                else:
                    with open(out, 'x') as f: f.write('mine')
                mine['placed'] = True
            except FileExistsError: mine['placed'] = False   # calibkit's report got there first
        t = threading.Thread(target=user)
        t.start()
        res = outcome(lambda: save(out))
        t.join()
        if mine['placed']:
            assert res in ('changed', 'exists'), (i, res)   # exists: it was there before the claim (no force)
            assert os.readlink(out) == str(important) if kind == 'symlink' else out.read_text() == 'mine'
        else: assert res == 'ok' and own(out), (i, res)
        assert (important/'data.txt').read_text() == 'precious' and sorted(p.name for p in important.iterdir()) == ['data.txt']
        assert hidden(tmp_path) == [], (i, hidden(tmp_path))
        seen.add(res)
    assert {'ok', 'changed'} <= seen, f'the {kind} never landed both before and after the swap: {seen}'


def test_two_cli_runs_on_one_out_one_wins_the_other_exits_73_with_one_line(data, tmp_path):
    out = tmp_path/'R'
    args = [EXE, 'report', str(data), '--out', str(out), '--n-samples', '20']
    env = dict(os.environ, CALIBKIT_QUIET='1')
    ps = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    res = sorted((p.wait(), p.stderr.read()) for p in ps)
    assert [code for code, _ in res] == [0, 73], res
    err = res[1][1]
    assert err.count('\n') == 1 and err.startswith('calibkit: error: '), err
    assert 'is being written by another calibkit run' in err or 'exists; choose another --out or pass --force' in err
    assert own(out) and hidden(tmp_path) == []


def test_a_run_failing_after_the_claim_leaves_nothing_behind(data, tmp_path, capsys):
    "The analysis fails (a grouper on events without labels) after --out was claimed: no folder, no lock, exit 65."
    code, err = run(data, tmp_path/'new'/'sub'/'R', '--grouper', 'tfg', capsys=capsys)
    assert code == 65 and 'needs a label column' in err and err.count('\n') == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
