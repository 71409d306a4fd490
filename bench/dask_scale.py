"""calibkit.dask at scale, on a LocalCluster of 2 worker processes (1 thread each).

    .venv/bin/python bench/dask_scale.py --big 0        # 10^7: certificates against the in-memory functions, rank errors
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
    "Realised rank error of the edges: the stream's digest (k = 1024 and the default) vs dask.array.percentile."
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
        small = ckd.equal_mass(dc, dy, n_bins=n_bins, sketch=1024)
        em, t = timed(lambda: ckd.equal_mass(dc, dy, n_bins=n_bins))
        exact = M.calib_mse(c, yy, n_bins=n_bins)
        assert em.calib_mse.lower <= exact <= em.calib_mse.upper and small.calib_mse.lower <= exact <= small.calib_mse.upper
        rows.append((order, int(dask_err), int(np.abs(small.rank_error).max()), int(small.rank_bound.max()),
                     int(np.abs(em.rank_error).max()), int(em.rank_bound.max()), em.calib_mse, exact, t))
        del cs, dc, dy
    print(f'\n### Max rank error of equal-mass edges (events), N = {n:.0e}, {n // chunk} partitions, {n_bins} bins of {n // n_bins} events\n')
    k = ckd.SKETCH
    print(f'| partitions | da.percentile at the 9 targets | digest k = 1024 (N/2k = {n / 2048:.0f}): error / bound '
          f'| default digest k = {k} (N/2k = {n / 2 / k:.0f}): error / bound '
          '| CalibMSE, default digest [certified interval] | CalibMSE in memory | half-width | time, default (s) |')
    print('|---|---|---|---|---|---|---|---|')
    for r in rows:
        print(f'| {r[0]} | {r[1]} | {r[2]} / {r[3]} | {r[4]} / {r[5]} | {r[6].value:.6f} [{r[6].lower:.6f}, {r[6].upper:.6f}] '
              f'| {r[7]:.6f} | {100 * r[6].half_width / r[6].value:.2g}% | {r[8]:.1f} |')
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
    em, t_em = timed(lambda: ckd.equal_mass(q, y, n_bins=10), repeat=2)
    emm, t_emm = timed(lambda: ckd.equal_mass(q, y, n_bins=10, moments=True), repeat=2)
    _, t_fw = timed(lambda: M.ece(ckd.fixed_width_stats(q, y, n_bins=15)), repeat=2)
    peaks = client.run(peak_mb)
    assert (emm.stats.n == em.stats.n).all()
    bins = B.bin_table(em.stats)
    print(f'\n### {n:.0e} events, lazily generated in {n // chunk} chunks of {chunk:.0e}, LocalCluster: 2 worker processes x 1 thread\n')
    print('| what | value |\n|---|---|')
    print(f'| generating the events only (1 pass: their sums) | {t_gen:.1f} s |')
    print(f'| equal-mass bins and certificate (1 pass: digests) | {t_em:.1f} s ({n / t_em / 1e6:.1f} M events/s) |')
    print(f'| the same with moments (2 passes) | {t_emm:.1f} s ({n / t_emm / 1e6:.1f} M events/s) |')
    print(f'| fixed-width ECE (1 pass) | {t_fw:.1f} s ({n / t_fw / 1e6:.1f} M events/s) |')
    c, e = em.calib_mse, em.ece
    print(f'| CalibMSE [certified interval] | {c.value:.6f} [{c.lower:.6f}, {c.upper:.6f}] (±{100 * c.half_width / c.value:.2g}%) |')
    print(f'| ECE [certified interval] | {e.value:.6f} [{e.lower:.6f}, {e.upper:.6f}] |')
    print(f'| max rank error of the edges / stated bound | {int(np.abs(em.rank_error).max())} / {int(em.rank_bound.max())} '
          f'of {n // 10} events per bin (k = {ckd.SKETCH}: N/2k = {n / 2 / ckd.SKETCH:.0f}) |')
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
