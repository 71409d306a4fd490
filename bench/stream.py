"""calibkit.stream: memory flat in the number of streamed events, throughput beside np.sort, bounds at scale.

    .venv/bin/python bench/stream.py                      # 10^6, 10^7, 10^8 events; both binnings
    .venv/bin/python bench/stream.py --sizes 1e9          # one size (each run is a process of its own: peak RSS)
    .venv/bin/python bench/stream.py --certify 1e9 --shards 1000   # the certificate after 1000 merges, beside KLL

With --certify: N events in S shards, each streamed into its own accumulator (and its own KLL sketch, Apache
DataSketches, a bench-only dependency) and merged into one; a second pass over the same seeded events counts the
exact rank of both sketches' bin edges and computes the exact equal-mass CalibMSE and ECE (the cells that hold the
exact bin starts are collected and sorted), which the certified intervals must contain.

Prints markdown tables (pasted into bench/README.md, section "Streaming"). Events are generated lazily, one chunk
of 10^6 at a time, from a seeded generator (q = sqrt(u) * (0.4 + 0.6 u'), cheap to draw and heavier near 1;
y ~ Bernoulli(q^1.3): over-confident); nothing is held but the chunk and the
accumulator. Each (size, binning) runs in a fresh subprocess so that its peak RSS (VmHWM) is its own;
the table shows that peak, the RSS before the first update, and the accumulator's own bytes (`nbytes`).
Throughput counts update time only (generation excluded), beside `np.sort` of the same chunks (float64, one chunk at
a time). For N <= 10^7 the in-memory metrics are computed too (all events at once, in the parent process) and the
certified interval is checked to contain them.
"""
import argparse, json, os, subprocess, sys, time
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


# ---- the certificate at scale: shards merged, beside KLL at equal memory ------------------------------------------
STREAMS = {'miscalibrated': lambda q, u: u < q ** 1.3,         # over-confident, as above
           'near-calibrated': lambda q, u: u < 0.99 * q}      # one per cent over-confident


def shards(n, n_shards, seed=7):
    "Each shard's events in turn: chunks (q, u) of at most CHUNK, generated lazily from a fixed seed; y = STREAMS(q, u)."
    rng, size = np.random.default_rng(seed), n // n_shards
    for _ in range(n_shards):
        out = []
        for s in range(0, size, CHUNK):
            m = min(CHUNK, size - s)
            q = np.sqrt(rng.random(m)) * (0.4 + 0.6 * rng.random(m))
            out.append((q, rng.random(m)))
        yield out


def certify(n, n_shards, streams, kll_k):
    """Stream n events as n_shards accumulators merged into one, per stream; KLL beside them; then a second pass for
    the truth. The streams share their confidences (only the outcomes differ), so one generation, one KLL sketch and
    one second pass serve them all; each stream's update + merge is timed on its own."""
    import datasketches
    from calibkit.stream import CalibrationStream, _choose_cuts
    from calibkit.binning import bin_starts
    total = {s: CalibrationStream(10) for s in streams}
    secs, kll, t_kll, t0 = dict.fromkeys(streams, 0.0), datasketches.kll_doubles_sketch(kll_k), 0.0, time.time()
    for part in shards(n, n_shards):
        for s in streams:
            ys = [STREAMS[s](q, u).astype(np.uint8) for q, u in part]
            t = time.perf_counter()
            acc = CalibrationStream(10)
            for (q, _), y in zip(part, ys): acc.update(q, y)
            total[s].merge(acc)                            # one merge per shard
            secs[s] += time.perf_counter() - t
        t = time.perf_counter()
        sk = datasketches.kll_doubles_sketch(kll_k)
        for q, _ in part: sk.update(q)
        kll.merge(sk)
        t_kll += time.perf_counter() - t
    t1 = time.time()
    s = bin_starts(n, n_bins=10)
    kll_v = np.array([kll.get_quantile(x / n) for x in s[1:]])
    kll_bytes = len(kll.serialize())
    rows = []
    for st in streams:
        r, d = total[st].compute(), total[st]._digests[0]
        cuts = _choose_cuts(d, s)
        c = np.r_[0, np.cumsum(d.n)]
        i = np.searchsorted(c, s[1:], 'right') - 1           # the cell holding each exact start
        rows.append(dict(r=r, d=d, cuts=cuts, c=c, i=i, lo=d.lo[i], hi=d.hi[i],
                         ours_v=d.lo[np.minimum(cuts.index, len(d.n) - 1)], below_ours=np.zeros(9, np.int64),
                         seg=np.zeros((3, 19)), inside=[[] for _ in range(9)]))
    # the second pass: exact ranks of both sketches' edges, and the exact equal-mass bins (the cells holding the
    # exact starts are collected whole and sorted: continuous confidences, no ties at a start)
    below_kll = np.zeros(9, np.int64)
    for part in shards(n, n_shards):
        for q, u in part:
            qs = np.sort(q)
            below_kll += np.searchsorted(qs, kll_v, 'left')
            for st, w in zip(streams, rows):
                y = STREAMS[st](q, u)
                w['below_ours'] += np.searchsorted(qs, w['ours_v'], 'left')
                j = np.searchsorted(np.c_[w['lo'], np.nextafter(w['hi'], 2)].ravel(), q, 'right')   # odd: inside
                for f, v in enumerate((np.ones_like(q), q, y.astype(np.float64))): w['seg'][f] += np.bincount(j, v, 19)
                for jj in np.unique(j[j % 2 == 1]): w['inside'][jj // 2].append(np.c_[q[j == jj], y[j == jj]])
    out = []
    for st, w in zip(streams, rows):
        seg, D, nn = w['seg'], np.zeros(10), np.zeros(10)
        for b in range(10):                                  # bin b: segment 2b plus its start cells' parts
            nn[b], D[b] = seg[0, 2 * b], seg[1, 2 * b] - seg[2, 2 * b]
        for jj in range(9):
            e = np.concatenate(w['inside'][jj]); e = e[np.argsort(e[:, 0], kind='stable')]
            m = s[jj + 1] - w['c'][w['i'][jj]]               # of the cell's events, the lowest m are below the start
            nn[jj] += m; D[jj] += (e[:m, 0] - e[:m, 1]).sum()
            nn[jj + 1] += len(e) - m; D[jj + 1] += (e[m:, 0] - e[m:, 1]).sum()
        r, cuts = w['r'], w['cuts']
        out.append(dict(n=n, shards=n_shards, stream=st, seconds_ours=secs[st], seconds_kll=t_kll,
                        first_pass_s=t1 - t0, second_pass_s=time.time() - t1, nbytes=total[st].nbytes,
                        cells=len(w['d'].n), kll_k=kll_k, kll_bytes=kll_bytes, calib_mse=tuple(map(float, r.calib_mse)),
                        ece=tuple(map(float, r.ece)),
                        exact=dict(calib_mse=float((D * D / nn).sum() / n), ece=float(np.abs(D).sum() / n)),
                        ours_stated=cuts.moved.tolist(), ours_rank_error=(w['below_ours'] - s[1:]).tolist(),
                        ours_claimed=(cuts.below - s[1:]).tolist(),
                        kll_stated=float(kll.normalized_rank_error(False) * n),
                        kll_rank_error=(below_kll - s[1:]).tolist()))
    return out


def certify_table(rows):
    "Markdown: the certificate's width against the ±5% target, rank errors and memory beside KLL."
    print('\n| events | stream | shards merged | state (bytes) | cells | CalibMSE [lower, upper] | half-width | exact '
          '(2nd pass) | ECE [lower, upper] | half-width | exact (2nd pass) | target met |')
    print('|---|---|---:|---:|---:|---|---:|---:|---|---:|---:|---|')
    for r in rows:
        out = []
        for m in ('calib_mse', 'ece'):
            v, lo, hi = r[m]
            half = max(v - lo, hi - v)
            ok = half <= (1e-5 if v < 2e-4 else 0.05 * v) and lo <= r['exact'][m] <= hi
            rel = f'{half:.1e}' if v < 2e-4 else f'{100 * half / v:.2g}%'
            out.append((f'{v:.6g} [{lo:.6g}, {hi:.6g}]', rel, f"{r['exact'][m]:.6g}", ok))
        print(f"| {r['n']:.0e} | {r['stream']} | {r['shards']} | {r['nbytes']:,} | {r['cells']:,} | {out[0][0]} | "
              f"{out[0][1]} | {out[0][2]} | {out[1][0]} | {out[1][1]} | {out[1][2]} | "
              f"{'yes' if out[0][3] and out[1][3] else 'NO'} |")
    print('\n| events | stream | calibkit: state (bytes) | certified rank bound, max over edges | actual rank error, '
          'max | KLL k | KLL (bytes) | KLL bound (99%) | KLL actual, max | update + merge s (calibkit / KLL) |')
    print('|---|---|---:|---:|---:|---:|---:|---:|---:|---|')
    for r in rows:
        assert r['ours_rank_error'] == r['ours_claimed'], 'the digest misstated a rank'
        print(f"| {r['n']:.0e} | {r['stream']} | {r['nbytes']:,} | {max(r['ours_stated']):,} | "
              f"{max(map(abs, r['ours_rank_error'])):,} | {r['kll_k']:,} | {r['kll_bytes']:,} | {r['kll_stated']:,.0f} | "
              f"{max(map(abs, r['kll_rank_error'])):,} | {r['seconds_ours']:.0f} / {r['seconds_kll']:.0f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sizes', default='1e6,1e7,1e8', help='numbers of events, comma-separated')
    ap.add_argument('--sketch', type=int, default=None, help='the digest k (default calibkit.stream.SKETCH)')
    ap.add_argument('--binnings', default='fixed_width,equal_mass')
    ap.add_argument('--one', nargs=2, help=argparse.SUPPRESS)
    ap.add_argument('--certify', type=float, default=None, help='N: the certificate after merging shards, beside KLL')
    ap.add_argument('--shards', type=int, default=1000, help='with --certify: accumulators merged into one')
    ap.add_argument('--streams', default='miscalibrated,near-calibrated', help='with --certify: ' + ', '.join(STREAMS))
    ap.add_argument('--kll-k', type=int, default=40_000, help='with --certify: KLL k (about equal memory at 1e9)')
    a = ap.parse_args()
    if a.certify:
        load0, t0 = os.getloadavg(), time.strftime('%Y-%m-%d %H:%M', time.gmtime())
        rows = certify(int(a.certify), a.shards, a.streams.split(','), a.kll_k)
        for r in rows: print(json.dumps(r), file=sys.stderr, flush=True)
        certify_table(rows)
        r = rows[0]
        print(f"\nRun {t0}–{time.strftime('%H:%M', time.gmtime())} UTC: first pass (generation, every stream's update + merge, "
              f"KLL) {r['first_pass_s']:.0f} s, second pass (exact ranks and bins) {r['second_pass_s']:.0f} s; load average "
              f"(1, 5, 15 min) {', '.join(f'{x:.1f}' for x in load0)} at the start, "
              f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end, on {os.cpu_count()} cores.")
        print(f'\ncalibkit k = 2^14 (default), 10 bins; {a.shards} shards of {int(a.certify) // a.shards:,} events, each '
              f'streamed in chunks of at most {CHUNK:,} and merged into one accumulator; KLL k = {a.kll_k:,}.')
        return
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
