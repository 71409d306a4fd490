"""Time the event bootstrap (`calib_mse_interval(method='bootstrap')`) against its floor and `np.sort`, in one run.

    .venv/bin/python bench/bootstrap.py [--n 1e6] [--samples 1000] [--repeat 3]

Data: q ~ Beta(2, 5), y ~ Bernoulli(q), float64, 10 equal-mass bins. The floor is the least any bootstrap by weights
does per resample: draw the n positions and count them (`np.bincount`), take their cumulative sum, find the bins'
first positions in it and sum w·q and w·y per bin (`np.add.reduceat`), with no tie handling and no metric; it runs in
the same thread pool and chunks of 8 replicates as calibkit. Times are per resample, best of `--repeat` rounds that
run every operation in turn (interleaved, so a burst of load hits all of them): wall time, and CPU time of the
process (all threads). Ratios are to one `np.sort` of the n confidences and to the floor, within this run. Before
timing, one resample's per-bin sums from calibkit and from the floor must agree (up to the copies of one event at
each edge, which calibkit keeps together). Exit status 1 if calibkit takes more
than 1.2× the floor (wall).
"""
from __future__ import annotations
import argparse, os, sys, time
from concurrent.futures import ThreadPoolExecutor
import numpy as np
from calibkit.binning import bin_starts
from calibkit.metrics import _resample_stats, calib_mse_interval

N_BINS, CHUNK, TARGET = 10, 8, 1.2

def floor_sums(qs, ys, w, starts):
    "Per-bin Σ w·q and Σ w·y of a resample with weights `w` over sorted `qs`: cumsum, searchsorted, reduceat."
    first = np.searchsorted(np.cumsum(w), starts, 'right')
    return np.add.reduceat(w * qs, first), np.add.reduceat(w * ys, first)

def floor(qs, ys, samples, seed):
    "`samples` floor resamples in chunks of CHUNK replicates on a thread pool, one spawned generator per chunk."
    n, starts = len(qs), bin_starts(len(qs), n_bins=N_BINS)
    gens = np.random.default_rng(seed).spawn(-(-samples // CHUNK))
    def chunk(i):
        for _ in range(min(CHUNK, samples - i * CHUNK)):
            floor_sums(qs, ys, np.bincount(gens[i].integers(0, n, n), minlength=n), starts)
    with ThreadPoolExecutor(min(len(gens), os.cpu_count() or 1)) as pool: list(pool.map(chunk, range(len(gens))))

def check(qs, ys, seed):
    """One resample binned by calibkit and by the floor. Where a cut falls among the copies of one event the floor puts
    them all in the upper bin and calibkit in the nearer one, so per-bin sums may differ by the copies of one event at
    each edge (at most 2·max w per bin); totals agree (Σy exactly)."""
    n, starts = len(qs), bin_starts(len(qs), n_bins=N_BINS)
    w = np.bincount(np.random.default_rng(seed).integers(0, n, n), minlength=n)
    sq, sy = floor_sums(qs, ys, w, starts)
    st = _resample_stats(qs, ys + (np.int64(1) << 32), np.arange(n + 1), w.copy(), starts, np.empty(n))
    assert st.sum_correct.sum() == sy.sum() == (w * ys).sum() and len(st.n) == N_BINS
    np.testing.assert_allclose(st.sum_conf.sum(), sq.sum(), rtol=1e-12)
    assert max(np.abs(st.sum_correct - sy).max(), np.abs(st.sum_conf - sq).max()) <= 2 * w.max()

def timed(f) -> tuple[float, float]:
    "(wall, CPU) seconds of one call of `f`."
    w0, c0 = time.perf_counter(), time.process_time()
    f()
    return time.perf_counter() - w0, time.process_time() - c0

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n', default='1e6', help='events (default 1e6)')
    ap.add_argument('--samples', type=int, default=1000, help='bootstrap resamples per call (default 1000)')
    ap.add_argument('--repeat', type=int, default=3, help='rounds; the best of each operation is kept (default 3)')
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args(argv)
    n = int(float(a.n))
    rng = np.random.default_rng(a.seed)
    q = rng.beta(2, 5, n); y = rng.random(n) < q
    qs = np.sort(q); ys = (rng.random(n) < qs).astype(np.uint8)
    check(qs, ys, a.seed)
    print(f'nproc {len(os.sched_getaffinity(0))}, numpy {np.__version__}, load average at start '
          f'{" ".join(f"{x:.2f}" for x in os.getloadavg())}', flush=True)
    print('check: calibkit and floor per-bin sums agree (up to the copies of one event at each edge)', flush=True)
    ops = {'np.sort(conf)': (lambda: np.sort(q), 1),
           'floor: bincount + cumsum + per-bin sums': (lambda: floor(qs, ys, a.samples, a.seed), a.samples),
           'calibkit bootstrap': (lambda: calib_mse_interval(q, y, n_bins=N_BINS, method='bootstrap',
                                                             n_samples=a.samples, seed=a.seed), a.samples)}
    best = {k: (np.inf, np.inf) for k in ops}
    for r in range(a.repeat):
        for k, (f, per) in ops.items():
            for _ in range(5 if per == 1 else 1):                 # the sort is short: best of 5 within the round
                best[k] = tuple(min(b, t / per) for b, t in zip(best[k], timed(f)))
        print(f'round {r + 1} of {a.repeat} done', flush=True)
    sort, fl = best['np.sort(conf)'], best['floor: bincount + cumsum + per-bin sums']
    print(f'\nN = {n:.0e}, {a.samples} resamples per call, {N_BINS} bins; per resample, best of {a.repeat} rounds\n')
    print('| operation | wall ms | × np.sort | × floor | CPU ms | × np.sort | × floor |')
    print('|---|---:|---:|---:|---:|---:|---:|')
    for k, (w, c) in best.items():
        cells = [w * 1e3, w / sort[0], w / fl[0], c * 1e3, c / sort[1], c / fl[1]]
        print(f'| {k} | ' + ' | '.join(f'{x:.2f}' for x in cells) + ' |')
    print(f'\nload average at end: {" ".join(f"{x:.2f}" for x in os.getloadavg())}')
    ratio = best['calibkit bootstrap'][0] / fl[0]
    print(f'{"PASS" if ratio <= TARGET else "FAIL"}: calibkit bootstrap {ratio:.2f}× the floor (target ≤ {TARGET}×)')
    return 0 if ratio <= TARGET else 1

if __name__ == '__main__':
    sys.exit(main())
