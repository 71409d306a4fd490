"""`calibkit report DIR --dask` on a Parquet folder written lazily by dask, beside the in-memory report (issue 28).

    .venv/bin/python bench/dask_report.py --n 2e8 --mem-n 1e7 --data /tmp/calibkit-bench

1. Writes Parquet folders of `--n` and `--mem-n` events with dask (`dask.array.random.default_rng(42)`: q ~ Beta(2, 5),
   y ~ Bernoulli(q^1.3); chunks of `--chunk` events, one file each), never materialised.
2. Starts a fresh LocalCluster of 2 worker processes × 1 thread with a 2 GB memory limit each (fresh peak RSS),
   and runs `calibkit report DIR --dask ADDRESS` in a process of its own: its wall time, the peak RSS of the
   client (that process, `ru_maxrss` of the child) and of each worker (`ru_maxrss` of the worker process).
3. Runs the in-memory `calibkit report DIR` (no --dask) on the `--mem-n` folder (time, peak RSS), and the --dask report on
   the same folder, and compares their numbers against the certified bounds.

Prints markdown (pasted into bench/README.md, section "The report on a cluster").

With `--baseline DIR` (a calibkit package of another commit: `git archive REV calibkit | tar -x -C DIR`) it compares
instead: `--rounds` interleaved rounds of the `--dask` report of the `--n` folder by DIR's calibkit and by this tree's,
each on a fresh cluster started with that code (wall time, median and range; metrics.json compared byte for byte
apart from the command line), and the passes each makes over the files of the `--mem-n` folder (reads of a Parquet
partition counted by a dask callback under the threaded scheduler, divided by the partitions of their layer).
`--grouper NAME` writes a label column (`--labels` labels, Zipf-distributed) and reports with `--grouper NAME`:

    .venv/bin/python bench/dask_report.py --n 5e7 --mem-n 1e6 --grouper tfg --baseline /tmp/calibkit-base
"""
import argparse, json, logging, os, resource, subprocess, sys, time
from pathlib import Path
import numpy as np, dask, dask.array as da, dask.dataframe as dd
from dask.distributed import Client, LocalCluster

EXE = str(Path(sys.executable).parent/'calibkit')


def write(folder: Path, n: int, chunk: int, seed: int = 42, labels: int = 0):
    "A Parquet folder of n lazily generated events (conf float64, correct uint8[, label]), one file per chunk."
    if (folder/'done').exists(): return 0.0
    rng = da.random.default_rng(seed)
    q = rng.beta(2, 5, size=n, chunks=chunk)
    y = (rng.random(n, chunks=chunk) < q ** 1.3).astype(np.uint8)
    cols = [dd.from_dask_array(q, columns='conf'), dd.from_dask_array(y, columns='correct')]
    if labels:                  # label k with probability ∝ 1/(k+1)
        w = 1 / np.arange(1, labels + 1)
        label = da.searchsorted(da.from_array(np.cumsum(w) / w.sum()), rng.random(n, chunks=chunk))
        cols.append(dd.from_dask_array(label, columns='label'))
    df = dd.concat(cols, axis=1)
    t = time.perf_counter()
    df.to_parquet(folder, write_index=False, overwrite=True)
    (folder/'done').write_text('')
    return time.perf_counter() - t


def worker_peaks(client) -> dict:
    return client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10)


def report(folder: Path, out: Path, *extra, env=None) -> tuple[dict, float, float]:
    "Run `calibkit report` in a process of its own: (metrics.json, seconds, its peak RSS in MB)."
    code = (f'import resource, subprocess, sys, time; t = time.perf_counter(); '
            f'r = subprocess.run({[EXE, "report", str(folder), "--out", str(out), "--force", "--quiet", *extra]!r}, stdout=subprocess.DEVNULL); '
            f'print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**10); '
            f'sys.exit(r.returncode)')
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env, cwd='/')
    if r.returncode: sys.exit(f'calibkit report failed: {r.stderr}')
    secs, peak = map(float, r.stdout.split())
    return json.loads((out/'metrics.json').read_text()), secs, peak


def est(m, key, stage='before'):
    return next(r['estimate'] for r in m['metrics'] if r['key'] == key and r['stage'] == stage)


PASSES = """
import sys, warnings, dask
from dask.callbacks import Callback
import calibkit.dask as cd
from calibkit.report import dask_report
class Reads(Callback):      # per read layer: its tasks run / its partitions (a layer may group files)
    def __init__(self): super().__init__(); self.runs, self.parts = {}, {}
    def _posttask(self, key, result, dsk, state, worker_id):
        name, i = (key[0], key[1:]) if isinstance(key, tuple) else (key, ())
        if name.startswith('read_parquet'):
            self.runs[name] = self.runs.get(name, 0) + 1; self.parts.setdefault(name, set()).add(i)
with warnings.catch_warnings(), Reads() as r:
    warnings.simplefilter('ignore')
    dask_report(cd.read_events(sys.argv[1]), grouper=sys.argv[2] or None, binning=sys.argv[3], n_samples=20)
print(f'{sum(n / len(r.parts[k]) for k, n in r.runs.items()):g}')
"""


def compare(folder: Path, small: Path, out: Path, baseline: Path, rounds: int, extra: tuple, cluster_kw: dict):
    "Interleaved rounds of the --dask report by the baseline's calibkit and this tree's; their passes over the files."
    codes = {'baseline': dict(os.environ, PYTHONPATH=str(baseline)), 'this tree': dict(os.environ)}
    codes['this tree'].pop('PYTHONPATH', None)
    secs, metrics = {k: [] for k in codes}, {}
    for r in range(rounds):
        for name in (list(codes) if r % 2 == 0 else list(codes)[::-1]):
            if name == 'baseline': sys.path.insert(0, str(baseline))   # the workers (spawned) import the same code
            try:
                with LocalCluster(**cluster_kw) as cluster, Client(cluster) as client:
                    m, t, _ = report(folder, out/name.replace(' ', '-'), '--dask', cluster.scheduler_address, *extra,
                                     env=codes[name])
                    used = set(client.run(lambda: __import__('calibkit').__file__).values())
            finally:     # the scheduler (this process) imported one calibkit to read the tasks: forget it
                if name == 'baseline': sys.path.remove(str(baseline))
                for mod in [m for m in sys.modules if m.split('.')[0] == 'calibkit']: del sys.modules[mod]
            assert all(f.startswith(str(baseline)) == (name == 'baseline') for f in used), (name, used)
            secs[name].append(t)
            metrics[name] = json.dumps({k: v for k, v in m.items() if k != 'meta'} | {'meta': {
                k: v for k, v in m['meta'].items() if k != 'command'}}, sort_keys=True)
    print(f'metrics.json of the two, byte for byte (apart from the command line): '
          f'{"identical" if metrics["baseline"] == metrics["this tree"] else "DIFFERENT"}')
    grouper = extra[1] if extra else ''
    print(f'| code | wall time {" ".join(extra)}, median (range) | ratio | passes: equal_mass with '
          f'{grouper or "none"}, without; fixed_width with, without |\n|---|---|---|---|')
    base = np.median(secs['baseline'])
    for name, env in codes.items():
        passes = [subprocess.run([sys.executable, '-c', PASSES, str(small), g, b], env=env, cwd='/',
                                 capture_output=True, text=True, check=True).stdout.split()[-1]
                  for b in ('equal_mass', 'fixed_width') for g in (grouper, '')]
        t = secs[name]
        print(f'| {name} | {np.median(t):.1f} s ({min(t):.1f}–{max(t):.1f}) | {np.median(t) / base:.2f} | '
              f'{passes[0]}, {passes[1]}; {passes[2]}, {passes[3]} |', flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--n', type=float, default=2e8)
    p.add_argument('--mem-n', type=float, default=1e7)
    p.add_argument('--chunk', type=float, default=5e6)
    p.add_argument('--data', default='/tmp/calibkit-bench')
    p.add_argument('--grouper', help='write a label column and report with --grouper GROUPER')
    p.add_argument('--labels', type=int, default=50)
    p.add_argument('--baseline', type=Path, help="another commit's calibkit package: compare against it")
    p.add_argument('--rounds', type=int, default=3)
    a = p.parse_args()
    n, mem_n, chunk, data = int(a.n), int(a.mem_n), int(a.chunk), Path(a.data)
    k = a.labels if a.grouper else 0
    big, small = (data/(f'events-{x:.0e}' + (f'-{k}labels' if k else '')) for x in (n, mem_n))
    cluster_kw = dict(n_workers=2, threads_per_worker=1, memory_limit='2GB', processes=True,
                      dashboard_address=':0', silence_logs=logging.ERROR)
    with LocalCluster(**cluster_kw) as cluster, Client(cluster) as client:
        wt = write(big, n, chunk, labels=k), write(small, mem_n, min(chunk, mem_n // 4), labels=k)
    print(f'written: {n:,} events in {wt[0]:.0f} s, {mem_n:,} in {wt[1]:.0f} s (0: already there)')
    extra = ('--grouper', a.grouper) if a.grouper else ()
    if a.baseline: return compare(big, small, data/'out-compare', a.baseline, a.rounds, extra, cluster_kw)
    size = lambda f: sum(p.stat().st_size for p in f.glob('*.parquet')) / 2**20
    rows = []
    for label, folder in ((f'{n:.0e}', big), (f'{mem_n:.0e}', small)):
        with LocalCluster(**cluster_kw) as cluster, Client(cluster) as client:   # fresh workers: their own peak RSS
            m, secs, peak = report(folder, data/f'out-dask-{label}', '--dask', cluster.scheduler_address, *extra)
            wp = worker_peaks(client)
        rows.append((label, folder, m, secs, peak, wp))
        print(f'| `calibkit report {folder.name} --dask ADDRESS` | {m["summary"]["events"]:,} | {size(folder):.0f} MB '
              f'| {secs:.0f} s | client {peak:.0f} MB; workers ' + ', '.join(f'{v:.0f}' for v in wp.values()) + ' MB |',
              flush=True)
    mm, msecs, mpeak = report(small, data/'out-mem', *extra)
    print(f'| `calibkit report {small.name}` (in memory) | {mm["summary"]["events"]:,} | {size(small):.0f} MB | {msecs:.0f} s '
          f'| {mpeak:.0f} MB |')
    dk = rows[1][2]
    b = dk['stages']['before']['equal_mass_bound']
    print(f'\n{mem_n:,} events, --dask vs in memory:')
    print('| quantity | --dask | in memory | |difference| | certified bound |\n|---|---|---|---|---|')
    for key, bound in (('calib_mse', b['calib_mse']), ('ece_l1', b['ece_l1']), ('ece_l2', np.sqrt(b['calib_mse'])),
                       ('brier', 0.0), ('noise_floor', None)):
        x, y = est(dk, key), est(mm, key)
        ok = '' if bound is None else (' ✓' if abs(x - y) <= bound + 1e-15 * max(1, abs(y)) else ' ✗')
        print(f'| {key} | {x:.8g} | {y:.8g} | {abs(x - y):.2g} | {"—" if bound is None else f"{bound:.2g}{ok}"} |')
    print(f'max rank error of the {mem_n:,}-event bins: {b["max_rank_error"]}; {n:,}-event bins: '
          f'{rows[0][2]["stages"]["before"]["equal_mass_bound"]}')
    for w in rows[0][2]['warnings']: print('warning:', w)
    print('bins_note:', rows[0][2]['stages']['before']['bins_note'])


if __name__ == '__main__':
    main()
