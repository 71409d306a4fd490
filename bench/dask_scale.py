"""calibkit.dask at scale, on a LocalCluster of 2 worker processes (1 thread each).

    .venv/bin/python bench/dask_scale.py --big 0        # 10^7: agreement with the in-memory functions, rank errors
    .venv/bin/python bench/dask_scale.py --ranks 0      # 2x10^8 in bounded memory (a process of its own: peak RSS)

Prints markdown tables (pasted into bench/README.md, section "Dask"). Events are generated lazily,
per chunk, from fixed seeds (`dask.array.random.default_rng`): every pass regenerates the same
values, nothing is ever held whole. Peak memory: each worker's `ru_maxrss` (getrusage) minus its
RSS before the run; the client's likewise. Times: best of 2.
"""
import sys
from pathlib import Path
import argparse, logging, os, resource, time
import numpy as np, dask, dask.array as da
from dask.distributed import Client, LocalCluster
import calibkit.dask as ckd
from calibkit import binning as B, metrics as M
from calibkit.binning import bin_starts


def events(n, chunk, seed=42):
    "Lazily generated over-confident events: q ~ Beta(2, 5), y ~ Bernoulli(q^1.3)."
    rng = da.random.default_rng(seed)
    q = rng.beta(2, 5, size=n, chunks=chunk)
    return q, (rng.random(n, chunks=chunk) < q ** 1.3).astype(np.uint8)


def rss_mb(): return __import__('psutil').Process().memory_info().rss / 2**20
def peak_mb(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def timed(f, repeat=1):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter(); out = f(); best = min(best, time.perf_counter() - t)
    return out, best


def rank_errors(client, n=10**7, chunk=1_250_000, n_bins=10):
    "Realised rank error of the edges: calibkit's sketch vs dask.array.percentile at the target quantiles."
    rows = []
    q, y = events(n, chunk, seed=7)
    qn, yn = dask.compute(q, y)
    o = np.argsort(qn, kind='stable')
    starts = bin_starts(n, n_bins=n_bins)
    for order, (c, yy) in {'random': (qn, yn), 'sorted by conf': (qn[o], yn[o]),
                           'copies': (np.tile(qn[:chunk], n // chunk), np.tile(yn[:chunk], n // chunk))}.items():
        cs = np.sort(c)
        dc, dy = da.from_array(c, chunks=chunk), da.from_array(yy, chunks=chunk)
        edges = da.percentile(dc, 100 * starts[1:] / n, method='lower').compute()
        dask_err = np.abs(np.searchsorted(cs, edges, 'left') - starts[1:]).max()
        small = ckd.equal_mass_error(ckd.equal_mass_stats(dc, dy, n_bins=n_bins, sketch=1024), n_bins=n_bins)
        st, t = timed(lambda: ckd.equal_mass_stats(dc, dy, n_bins=n_bins))
        err = ckd.equal_mass_error(st, n_bins=n_bins)
        exact = M.calib_mse(c, yy, n_bins=n_bins)
        rows.append((order, int(dask_err), int(small.rank_error.max()), int(err.rank_error.max()), st.sq_error(), exact,
                     err.calib_mse, t))
        del cs, dc, dy
    print(f'\n### Max rank error of equal-mass edges (events), N = {n:.0e}, {n // chunk} partitions, {n_bins} bins of {n // n_bins} events\n')
    k = ckd.sketch_size(n // chunk)
    print(f'| partitions | da.percentile at the 9 targets | sketch k = 1024 (N/2k = {n / 2048:.0f}) | default sketch k = {k} (N/2k = {n / 2 / k:.0f}) '
          '| CalibMSE, default sketch | CalibMSE in memory | certified bound | time, default (s) |')
    print('|---|---|---|---|---|---|---|---|')
    for r in rows: print(f'| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.6f} | {r[5]:.6f} | ±{r[6]:.1e} | {r[7]:.1f} |')
    fw = ckd.fixed_width_stats(da.from_array(qn, chunks=chunk), da.from_array(yn, chunks=chunk), n_bins=15)
    ref = B.fixed_width_stats(qn, yn, n_bins=15)
    print(f'\nfixed-width (15 bins) at N = {n:.0e}: counts identical: {bool((fw.n == ref.n).all())}; '
          f'Σcorrect identical: {bool((fw.sum_correct == ref.sum_correct).all())}; '
          f'max relative difference of Σconf: {np.max(np.abs(fw.sum_conf / ref.sum_conf - 1)):.1e}')


def big(client, n, chunk):
    q, y = events(n, chunk)
    base = client.run(rss_mb)
    client_base = rss_mb()
    _, t_gen = timed(lambda: dask.compute(q.sum(), y.sum()), repeat=2)
    bins, t_em = timed(lambda: B.equal_mass_bins(q, y, n_bins=10), repeat=2)
    _, t_fw = timed(lambda: M.ece(q, y, n_bins=15, binning='fixed_width'), repeat=2)
    peaks = client.run(peak_mb)
    st_err = ckd.equal_mass_error(B.BinStats(bins.n.to_numpy(), (bins.conf * bins.n).to_numpy(), (bins.acc * bins.n).to_numpy(),
                                             bins.lo.to_numpy(), bins.hi.to_numpy()), n_bins=10)
    print(f'\n### {n:.0e} events, lazily generated in {n // chunk} chunks of {chunk:.0e}, LocalCluster: 2 worker processes x 1 thread\n')
    print('| what | value |\n|---|---|')
    print(f'| generating the events only (1 pass: their sums) | {t_gen:.1f} s |')
    print(f'| equal-mass bins table (2 passes) | {t_em:.1f} s ({n / t_em / 1e6:.1f} M events/s) |')
    print(f'| fixed-width ECE (1 pass) | {t_fw:.1f} s ({n / t_fw / 1e6:.1f} M events/s) |')
    print(f'| CalibMSE | {float(((bins.conf - bins.acc) ** 2 * bins.n).sum() / n):.6f} |')
    print(f'| max rank error of the edges | {int(st_err.rank_error.max())} of {n // 10} events per bin (k = {ckd.sketch_size(n // chunk)}: N/2k = {n / 2 / ckd.sketch_size(n // chunk):.0f}) |')
    for w, p in peaks.items():
        print(f'| worker {w.split(":")[-1]} peak RSS − start RSS | {p - base[w]:.0f} MB (peak {p:.0f} MB) |')
    print(f'| client peak RSS − start RSS | {peak_mb() - client_base:.0f} MB |')
    print(f'| input if materialised (float64 conf + uint8 correct) | {n * 9 / 2**20:.0f} MB |')
    print('\n```\n' + bins.round(4).to_string() + '\n```')


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--big', type=float, default=2e8)
    ap.add_argument('--chunk', type=float, default=5e6)
    ap.add_argument('--ranks', type=int, default=1)
    a = ap.parse_args()
    os.environ.setdefault('CALIBKIT_QUIET', '1')
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit='6GB',
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        print(f'# calibkit.dask bench: dask {dask.__version__}, numpy {np.__version__}, {os.cpu_count()} cores (shared), '
              f'load average {os.getloadavg()[0]:.1f}')
        if a.ranks: rank_errors(client)
        if a.big: big(client, int(a.big), int(a.chunk))
