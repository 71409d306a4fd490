"""calibkit.stream: memory flat in the number of streamed events, throughput beside np.sort, bounds at scale.

    .venv/bin/python bench/stream.py                      # 10^6, 10^7, 10^8 events; both binnings
    .venv/bin/python bench/stream.py --sizes 1e9          # one size (each run is a process of its own: peak RSS)

Prints markdown tables (pasted into bench/README.md, section "Streaming"). Events are generated lazily, one chunk
of 10^6 at a time, from a seeded generator (q = sqrt(u) * (0.4 + 0.6 u'), cheap to draw and heavier near 1;
y ~ Bernoulli(q^1.3): over-confident); nothing is held but the chunk and the
accumulator. Each (size, binning) runs in a fresh subprocess so that its peak RSS (VmHWM) is its own;
the table shows that peak, the RSS before the first update, and the accumulator's own bytes (`nbytes`).
Throughput counts update time only (generation excluded), beside `np.sort` of the same chunks (float64, one chunk at
a time). For N <= 10^7 the in-memory metrics are computed too (all events at once, in the parent process) and the
certified interval is checked to contain them.
"""
import argparse, json, subprocess, sys, time
import numpy as np

CHUNK = 10**6


def chunks(n, seed=42, chunk=CHUNK):
    "The events, chunk by chunk, generated lazily from a fixed seed: over-confident, with ties only by chance."
    rng = np.random.default_rng(seed)
    for s in range(0, n, chunk):
        m = min(chunk, n - s)
        q = np.sqrt(rng.random(m)) * (0.4 + 0.6 * rng.random(m))
        yield q, (rng.random(m) < q ** 1.3).astype(np.uint8)


def status_mb(field):
    "VmRSS or VmHWM (the peak) of this process from /proc: unlike ru_maxrss, not inherited from the parent at fork."
    with open('/proc/self/status') as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ':')) / 2**10


def one(n, binning, sketch):
    "Stream n events into one accumulator; JSON with times, memory and the result."
    from calibkit.stream import CalibrationStream
    acc = CalibrationStream(10, binning=binning, sketch=sketch)
    before, t_update, t_sort = status_mb('VmRSS'), 0.0, 0.0
    for q, y in chunks(n):
        t = time.perf_counter(); acc.update(q, y); t_update += time.perf_counter() - t
        if binning == 'equal_mass':
            t = time.perf_counter(); np.sort(q); t_sort += time.perf_counter() - t
    t = time.perf_counter(); r = acc.compute(); t_compute = time.perf_counter() - t
    return dict(n=n, binning=binning, sketch=sketch, update_s=t_update, sort_s=t_sort, compute_s=t_compute,
                rss_before_mb=before, peak_mb=status_mb('VmHWM'),
                nbytes=acc.nbytes, nodes=len(acc._digests[0].h) if binning == 'equal_mass' else 0,
                calib_mse=tuple(r.calib_mse), ece=tuple(r.ece))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sizes', default='1e6,1e7,1e8', help='numbers of events, comma-separated')
    ap.add_argument('--sketch', type=int, default=None, help='the digest k (default calibkit.stream.SKETCH)')
    ap.add_argument('--binnings', default='fixed_width,equal_mass')
    ap.add_argument('--one', nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(int(float(a.one[0])), a.one[1], a.sketch))); return
    from calibkit.stream import SKETCH
    from calibkit.metrics import calib_mse, ece
    from calibkit.binning import fixed_width_stats
    rows = []
    for n in [int(float(s)) for s in a.sizes.split(',')]:
        ref = None
        if n <= 10**7:
            q, y = map(np.concatenate, zip(*chunks(n)))
            ref = dict(equal_mass=(calib_mse(q, y, n_bins=10), ece(q, y, n_bins=10)),
                       fixed_width=(fixed_width_stats(q, y, n_bins=10).sq_error(), ece(q, y, n_bins=10, binning='fixed_width')))
            del q, y
        for b in a.binnings.split(','):
            cmd = [sys.executable, __file__, '--one', str(n), b] + (['--sketch', str(a.sketch)] if a.sketch else [])
            r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
            r['ref'] = None if ref is None else ref[b]
            rows.append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)
    k = a.sketch or SKETCH
    print(f'\n| events | binning | update (s) | events/s | np.sort of the same chunks (s) | peak RSS (MB) | RSS before (MB) '
          f'| accumulator (KB) | digest nodes | CalibMSE [lower, upper] | in-memory CalibMSE |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for r in rows:
        m = r['calib_mse']
        inside = '' if r['ref'] is None else (f"{r['ref'][0]:.6f} " + ('inside' if m[1] - 1e-12 <= r['ref'][0] <= m[2] + 1e-12 else 'OUTSIDE'))
        print(f"| {r['n']:.0e} | {r['binning']} | {r['update_s']:.1f} | {r['n'] / r['update_s'] / 1e6:.1f} M "
              f"| {r['sort_s']:.1f} | {r['peak_mb']:.0f} | {r['rss_before_mb']:.0f} | {r['nbytes'] / 1024:.1f} "
              f"| {r['nodes'] or ''} | {m[0]:.6f} [{m[1]:.6f}, {m[2]:.6f}] | {inside or 'not computed (too large)'} |")
    print(f'\nk = {k}, 10 bins, chunks of {CHUNK:,} events.')


if __name__ == '__main__':
    main()
