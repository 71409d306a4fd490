"""An input file removed while `calibkit report` runs (issue 38), in memory and under `--dask`: the run either
finishes (0) or stops with one line naming the file and exit 66, the input's status — never 73, the output's, never
a traceback — and leaves no half-written report and no temporary folder behind.

The moments are 20 seeded interleavings each, and exact: an undisturbed run counts the times it touches the input
(opens, stats; through Python, as numpy, pandas, fsspec and pyarrow's Python file objects do); each seeded run removes
the file just before its k-th touch, k drawn from that count (a timer thread instead mostly fires after the input is
read, so most of its draws test nothing)."""
import builtins, io, json, logging, os, random, sys
from pathlib import Path
import numpy as np, pandas as pd, pytest

sys.path.insert(0, str(Path(__file__).parent))
from clidata import calibkit_here  # noqa: E402
from calibkit.outdir import MARKER, mismatch  # noqa: E402
from calibkit.render import REPORT_FILES  # noqa: E402

RUNS = 20


@pytest.fixture(scope='module')
def events():
    rng = np.random.default_rng(38)
    q = rng.beta(2, 2, 3000)
    return pd.DataFrame(dict(conf=q, correct=(rng.random(len(q)) < q).astype(int), label=rng.choice(list('ABC'), len(q))))


class Remover:
    "Counts the calls that touch `path` (os.stat/lstat/open, builtins/io.open); removes it before touch `at` (1-based)."
    NAMES = [(os, 'stat'), (os, 'lstat'), (os, 'open'), (builtins, 'open'), (io, 'open')]

    def __init__(self, monkeypatch, path: Path, at: int | None):
        self.path, self.at, self.touches = str(path), at, 0
        for mod, name in self.NAMES: monkeypatch.setattr(mod, name, self.wrap(getattr(mod, name)))

    def wrap(self, fn):
        def touched(file, *args, **kw):
            if isinstance(file, (str, os.PathLike)) and os.fspath(file) == self.path:
                self.touches += 1
                if self.touches == self.at: os.unlink(self.path)
            return fn(file, *args, **kw)
        return touched


def outcome(r, name: str) -> str:
    "0, or 66 with one line naming the removed file; anything else fails the test with what was printed."
    assert r.returncode in (0, 66), (r.returncode, r.stderr)
    if r.returncode == 0: return 'ok'
    assert r.stderr.count('\n') == 1 and r.stderr.startswith('calibkit: error: ') and name in r.stderr, r.stderr
    assert 'no such file' in r.stderr or 'removed during the run' in r.stderr, r.stderr
    return 'removed'


def left_clean(d: Path) -> bool:
    "The output folder is absent or a complete report; no temporary folder or lock of calibkit's is left."
    out = d/'out'
    complete = not out.exists() or (mismatch(out, REPORT_FILES) is None
                                     and json.loads((out/MARKER).read_text())['state'] == 'complete')
    return complete and not [p.name for p in d.iterdir() if '.calibkit-' in p.name]


def race(tmp_path, capsys, write, argv, seed: int) -> dict:
    "RUNS runs, each removing the input before a seeded touch; {touch: outcome}."
    def once(i: int, at: int | None):
        d = tmp_path/f'run{i}'
        d.mkdir()
        inp = write(d)
        with pytest.MonkeyPatch.context() as mp:
            rm = Remover(mp, inp, at)
            r = calibkit_here(capsys, 'report', inp, '--out', d/'out', *argv)
        assert left_clean(d), (i, at)
        return outcome(r, inp.name), rm.touches
    res, touches = once(-1, None)
    assert res == 'ok' and touches > 3, touches
    rnd = random.Random(seed)
    ats = [rnd.randint(1, touches) for _ in range(RUNS)]
    return {at: once(i, at)[0] for i, at in enumerate(ats)}


def test_input_removed_during_a_run_in_memory(events, tmp_path, capsys):
    def write(d):
        events.to_csv(d/'test.csv', index=False)
        return d/'test.csv'
    seen = race(tmp_path, capsys, write, ['--n-samples', '20', '--json'], seed=0)
    assert 'removed' in seen.values() and len(seen) > 3, seen   # removals before the read; several distinct moments


@pytest.fixture(scope='module')
def scheduler():
    "One threaded dask scheduler for the module: each `--dask ADDRESS` run connects to it (a cluster a run is slow)."
    distributed = pytest.importorskip('distributed')
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2, protocol='tcp',
                                  dashboard_address=':0', silence_logs=logging.CRITICAL) as cluster:
        yield cluster.scheduler_address


def test_input_removed_during_a_run_under_dask(events, tmp_path, capsys, scheduler):
    def write(d):
        events.to_parquet(d/'test.parquet', index=False, row_group_size=500)
        return d/'test.parquet'
    seen = race(tmp_path, capsys, write, ['--dask', scheduler, '--n-samples', '20', '--json'], seed=1)
    assert 'removed' in seen.values() and len(seen) > 3, seen
