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
"""
import argparse, json, logging, os, resource, subprocess, sys, time
from pathlib import Path
import numpy as np, dask, dask.array as da, dask.dataframe as dd
from dask.distributed import Client, LocalCluster

EXE = str(Path(sys.executable).parent/'calibkit')


def write(folder: Path, n: int, chunk: int, seed: int = 42):
    "A Parquet folder of n lazily generated events (conf float64, correct uint8), one file per chunk."
    if (folder/'done').exists(): return 0.0
    rng = da.random.default_rng(seed)
    q = rng.beta(2, 5, size=n, chunks=chunk)
    y = (rng.random(n, chunks=chunk) < q ** 1.3).astype(np.uint8)
    df = dd.concat([dd.from_dask_array(q, columns='conf'), dd.from_dask_array(y, columns='correct')], axis=1)
    t = time.perf_counter()
    df.to_parquet(folder, write_index=False, overwrite=True)
    (folder/'done').write_text('')
    return time.perf_counter() - t


def worker_peaks(client) -> dict:
    return client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10)


def report(folder: Path, out: Path, *extra) -> tuple[dict, float, float]:
    "Run `calibkit report` in a process of its own: (metrics.json, seconds, its peak RSS in MB)."
    code = (f'import resource, subprocess, sys, time; t = time.perf_counter(); '
            f'r = subprocess.run({[EXE, "report", str(folder), "--out", str(out), "--force", "--quiet", *extra]!r}, stdout=subprocess.DEVNULL); '
            f'print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**10); '
            f'sys.exit(r.returncode)')
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)
    if r.returncode: sys.exit(f'calibkit report failed: {r.stderr}')
    secs, peak = map(float, r.stdout.split())
    return json.loads((out/'metrics.json').read_text()), secs, peak


def est(m, key, stage='before'):
    return next(r['estimate'] for r in m['metrics'] if r['key'] == key and r['stage'] == stage)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--n', type=float, default=2e8)
    p.add_argument('--mem-n', type=float, default=1e7)
    p.add_argument('--chunk', type=float, default=5e6)
    p.add_argument('--data', default='/tmp/calibkit-bench')
    a = p.parse_args()
    n, mem_n, chunk, data = int(a.n), int(a.mem_n), int(a.chunk), Path(a.data)
    big, small = data/f'events-{n:.0e}', data/f'events-{mem_n:.0e}'
    cluster_kw = dict(n_workers=2, threads_per_worker=1, memory_limit='2GB', processes=True,
                      dashboard_address=':0', silence_logs=logging.ERROR)
    with LocalCluster(**cluster_kw) as cluster, Client(cluster) as client:
        wt = write(big, n, chunk), write(small, mem_n, min(chunk, mem_n // 4))
    print(f'written: {n:,} events in {wt[0]:.0f} s, {mem_n:,} in {wt[1]:.0f} s (0: already there)')
    size = lambda f: sum(p.stat().st_size for p in f.glob('*.parquet')) / 2**20
    rows = []
    for label, folder in ((f'{n:.0e}', big), (f'{mem_n:.0e}', small)):
        with LocalCluster(**cluster_kw) as cluster, Client(cluster) as client:   # fresh workers: their own peak RSS
            m, secs, peak = report(folder, data/f'out-dask-{label}', '--dask', cluster.scheduler_address)
            wp = worker_peaks(client)
        rows.append((label, folder, m, secs, peak, wp))
        print(f'| `calibkit report {folder.name} --dask ADDRESS` | {m["summary"]["events"]:,} | {size(folder):.0f} MB '
              f'| {secs:.0f} s | client {peak:.0f} MB; workers ' + ', '.join(f'{v:.0f}' for v in wp.values()) + ' MB |',
              flush=True)
    mm, msecs, mpeak = report(small, data/'out-mem', )
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
