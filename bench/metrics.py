"""Time calibkit's equal-mass binning and metrics against a numpy floor and scikit-learn, on identical data.

    .venv/bin/python bench/metrics.py [--sizes 1e5,1e6,1e7] [--repeat 3] [--scores 50000x500]

Data: q ~ Beta(2, 5), y ~ Bernoulli(q), float64 (one seeded draw of the largest size; smaller sizes
are its prefixes), plus a float32 copy at the largest size. Times are the best of `--repeat` wall
times, in rounds that run every operation in turn (interleaved, so a burst of load on a shared machine
hits all of them). Ratios compare timings within this one run. Before timing, the script checks that calibkit's
per-bin statistics and metrics agree with the floor's (and reports how far scikit-learn's differ;
its quantile bins are defined differently).
"""
from __future__ import annotations
import argparse, gc, os, platform, sys, time
import numpy as np, pandas as pd, sklearn
from sklearn.calibration import calibration_curve
import calibkit
from calibkit.binning import equal_mass_bins
from calibkit.events import events_from_scores
from calibkit.metrics import calib_mse, calib_mse_interval, ece, smce

N_BINS = 10
EQUAL_MASS = ['calib_mse', 'ece', 'smce', 'equal_mass_bins', 'interval normal']   # held to the targets

def best_of(f, repeat: int) -> float:
    "Best wall time of `repeat` calls of `f` (garbage collected before each)."
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter(); f(); times.append(time.perf_counter() - t0)
    return min(times)

# --- the numpy floor ----------------------------------------------------------------------------------

def floor_bins(q, y, n_bins=N_BINS):
    "Per-bin count, Σq, Σy: rank-based equal-mass edges from np.sort, bin by searchsorted, sums by bincount."
    edges = np.sort(q)[np.arange(n_bins) * len(q) // n_bins]          # smallest q of each bin
    idx = np.searchsorted(edges, q, side='right') - 1
    return (np.bincount(idx, minlength=n_bins), np.bincount(idx, weights=q, minlength=n_bins),
            np.bincount(idx, weights=y, minlength=n_bins))

def floor_metrics(q, y):
    "CalibMSE, ECE (l1) and SMCE (l2) from the floor's bins."
    n, sq, sy = floor_bins(q, y)
    w, gap = n / n.sum(), np.abs(sq - sy) / n
    return float(w @ gap ** 2), float(w @ gap), float(np.sqrt(w @ gap ** 2))

def floor_events(s, gold, threshold):
    "Cells >= threshold of a score matrix as (row, col, conf, correct) with np.nonzero and gathers."
    r, c = np.nonzero(s >= threshold)
    return r, c, s[r, c], c == gold[r]

# --- checks before timing -----------------------------------------------------------------------------

def check_agreement(q, y) -> list[str]:
    "calibkit vs the floor (must agree) and vs scikit-learn (reported; different bin convention)."
    t = equal_mass_bins(q, y, n_bins=N_BINS)
    n, sq, sy = floor_bins(q, y)
    moved = int(np.abs(t.n.to_numpy() - n).sum() // 2)           # events the two put in different bins
    notes = []
    if moved == 0:
        # same events in every bin (no run of tied confidences straddles an edge): everything must agree
        np.testing.assert_allclose(t.conf, sq / n, rtol=1e-12)
        np.testing.assert_allclose(t.acc, sy / n, rtol=1e-12)
        mse, l1, l2 = floor_metrics(q, y)
        np.testing.assert_allclose([calib_mse(q, y, n_bins=N_BINS), ece(q, y, n_bins=N_BINS),
                                    smce(pd.DataFrame({'conf': q, 'correct': y}), n_bins=N_BINS)],
                                   [mse, l1, l2], rtol=1e-9)
        notes.append('floor: identical bins; per-bin means agree to 1e-12, CalibMSE/ECE/SMCE to 1e-9')
    else:
        # a tie run straddles an edge: the floor puts the whole run in the upper bin, calibkit moves it to the nearer side
        diff = max(np.abs(t.conf - sq / n).max(), np.abs(t.acc - sy / n).max())
        assert diff <= 2 * moved / n.min() + 1e-12, (diff, moved)
        notes.append(f'floor: {moved} events in other bins (tied confidences at an edge); max |Δ mean| {diff:.1e}')
    acc, conf = calibration_curve(y, q, n_bins=N_BINS, strategy='quantile')
    if len(acc) == N_BINS:
        diff = max(np.abs(t.conf - conf).max(), np.abs(t.acc - acc).max())
        assert diff < 20 / n.min(), diff                              # a few events per edge, nothing more
        notes.append(f'sklearn: max |Δ per-bin mean| {diff:.1e} (interpolated quantile edges, right-closed bins)')
    return notes

# --- the benchmark ------------------------------------------------------------------------------------

def time_metrics(q, y, repeat: int, boot_samples: int) -> dict[str, float]:
    "Best wall time of each operation over `repeat` rounds; every round runs all operations in turn (interleaved), so a burst of load hits them all."
    ev = pd.DataFrame({'conf': q, 'correct': y.astype(np.uint8)})
    tied = (np.round(q * 9) / 9).astype(q.dtype)                     # heavily tied: 10 distinct confidences
    ui = np.uint64 if q.dtype == np.float64 else np.uint32
    key = (q.view(ui) << ui(1)) | y.astype(ui)                       # sort_pairs' packed key: outcome in the lowest bit
    ops = {
        'calib_mse': lambda: calib_mse(q, y, n_bins=N_BINS),
        'ece': lambda: ece(q, y, n_bins=N_BINS),
        'smce': lambda: smce(ev, n_bins=N_BINS),
        'equal_mass_bins': lambda: equal_mass_bins(q, y, n_bins=N_BINS),
        'interval normal': lambda: calib_mse_interval(q, y, n_bins=N_BINS, method='normal', n_samples=1000),
        'bootstrap / sample': lambda: calib_mse_interval(q, y, n_bins=N_BINS, method='bootstrap', n_samples=boot_samples),
        'numpy floor': lambda: floor_metrics(q, y),
        'np.sort(conf)': lambda: np.sort(q),
        'packed key, sorted as unsigned int': lambda: np.sort(key),
        'packed key, sorted as float': lambda: np.sort(key.view(q.dtype)),
        'calib_mse, 10 tied values': lambda: calib_mse(tied, y, n_bins=N_BINS),
        'ece adaptive (Ding)': lambda: ece(q, y, binning='adaptive'),
        'sklearn calibration_curve': lambda: calibration_curve(y, q, n_bins=N_BINS, strategy='quantile'),
    }
    best = {k: min(t) for k, t in zip(ops, zip(*[[best_of(f, 1) for f in ops.values()] for _ in range(repeat)]))}
    best['bootstrap / sample'] /= boot_samples
    return best

def peaked_softmax(n, k, seed=0):
    "An n×k float32 softmax with one dominant logit per row; gold is that label 80% of the time."
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((n, k), dtype=np.float32) * 2
    top = rng.integers(0, k, n)
    logits[np.arange(n), top] += 10
    e = np.exp(logits - logits.max(1, keepdims=True)); s = e / e.sum(1, keepdims=True)
    gold = np.where(rng.random(n) < .8, top, rng.integers(0, k, n))
    return s.astype(np.float32), gold

def time_scores(n, k, repeat) -> list[tuple]:
    s, gold = peaked_softmax(n, k)
    rows = []
    for t in (0.0, 0.01):
        ev = events_from_scores(s, gold, threshold=t)
        r, c, conf, correct = floor_events(s, gold, t)
        assert len(ev) == len(r) and np.array_equal(ev['conf'].to_numpy(), conf) and ev['correct'].sum() == correct.sum()
        tc = best_of(lambda: events_from_scores(s, gold, threshold=t), repeat)
        tf = best_of(lambda: floor_events(s, gold, t), repeat)
        rows.append((f'{n}×{k}', 'float32', f'events_from_scores t={t:g} ({len(ev):,} events)', tc, tc / tf, None, None))
        rows.append((f'{n}×{k}', 'float32', f'  floor: np.nonzero(s >= t) + gathers', tf, 1.0, None, None))
    return rows

def machine() -> list[str]:
    cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')
    return [f'nproc: {len(os.sched_getaffinity(0))} ({os.cpu_count()} CPUs); CPU: {cpu}',
            f'Python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, '
            f'scikit-learn {sklearn.__version__}, calibkit {calibkit.__version__}',
            f'load average at start: {" ".join(f"{x:.2f}" for x in os.getloadavg())}']

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sizes', default='1e5,1e6,1e7', help='comma-separated event counts (default 1e5,1e6,1e7)')
    ap.add_argument('--repeat', type=int, default=3, help='best of this many runs (default 3)')
    ap.add_argument('--bootstrap-samples', type=int, default=100, help='bootstrap resamples per call (default 100)')
    ap.add_argument('--scores', default='50000x500', help='score matrix for events_from_scores, NxK ("" to skip)')
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args(argv)
    sizes = sorted(int(float(x)) for x in a.sizes.split(','))
    print('\n'.join(machine()), flush=True)

    rng = np.random.default_rng(a.seed)
    q_all = rng.beta(2, 5, sizes[-1]); y_all = rng.random(sizes[-1]) < q_all
    datasets = [(n, 'float64', q_all[:n], y_all[:n]) for n in sizes]
    datasets.append((sizes[-1], 'float32', q_all.astype(np.float32), y_all))

    rows, verdicts = [], []
    for n, dt, q, y in datasets:
        for note in check_agreement(q, y): print(f'check N={n:.0e} {dt}: {note}', flush=True)
        r = time_metrics(q, y, a.repeat, a.bootstrap_samples)
        fl, sk = r['numpy floor'], r['sklearn calibration_curve']
        for op, sec in r.items():
            rows.append((f'{n:.0e}', dt, op, sec, sec / fl, sec / sk, sec / r['np.sort(conf)']))
        for op in ('calib_mse', 'calib_mse, 10 tied values'):
            if n == sizes[-1] and r[op] > 1.5 * r['np.sort(conf)']:
                verdicts.append(f'FAIL {op} N={n:.0e} {dt}: {r[op] / r["np.sort(conf)"]:.2f}× np.sort > 1.5×')
        for op in EQUAL_MASS:
            if n == sizes[-1] and r[op] > 2 * fl: verdicts.append(f'FAIL {op} N={n:.0e} {dt}: {r[op] / fl:.2f}× floor > 2×')
            if r[op] >= sk: verdicts.append(f'FAIL {op} N={n:.0e} {dt}: {r[op] / sk:.2f}× sklearn, not faster')
        print(f'timed N={n:.0e} {dt}', flush=True)
    if a.scores:
        rows += time_scores(*map(int, a.scores.lower().split('x')), a.repeat)

    fmt = lambda x, d: '' if x is None else f'{x:.{d}f}'
    print(f'\nbest of {a.repeat} wall times; ratios within this run ("bootstrap / sample" = one resample of '
          f'{a.bootstrap_samples}; its ratio is per resample)\n')
    print('| N | dtype | operation | seconds | × floor | × sklearn | × np.sort |\n|---|---|---|---:|---:|---:|---:|')
    for n, dt, op, sec, rf, rs, rn in rows:
        print(f'| {n} | {dt} | {op} | {sec:.4f} | {fmt(rf, 2)} | {fmt(rs, 2)} | {fmt(rn, 2)} |')
    print(f'\nload average at end: {" ".join(f"{x:.2f}" for x in os.getloadavg())}')
    print('targets (equal-mass metrics: ' + ', '.join(EQUAL_MASS) + '): ≤ 2× floor at the largest N, faster than sklearn at every N;'
          ' calib_mse (random and 10 tied values, ties kept together) ≤ 1.5× np.sort(conf) at the largest N')
    print('\n'.join(verdicts) if verdicts else 'PASS: all targets met')
    return 1 if verdicts else 0

if __name__ == '__main__':
    sys.exit(main())
