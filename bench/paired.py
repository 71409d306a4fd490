"""Time `bootstrap_differences` of 2 models × N events against two `calibration_report`s of the same events (issue 36).

    CALIBKIT_QUIET=1 .venv/bin/python bench/paired.py [--n 1e6] [--samples 1000] [--repeat 1]

Data: q ~ Beta(2, 5), y ~ Bernoulli(q) (model A, float64, one seeded draw) and model B = clip(q + Normal(0, 0.05))
on the same events, paired by position. Timed in turn, `--repeat` times: `calibration_report` of A and of B (no
recalibration, no groups; its default 1,000 interval samples) and `bootstrap_differences([qa, qb], [y, y])` with
`--samples` paired resamples (every binned and selective metric, equal-mass bins recomputed per resample). Prints
wall and CPU (process time of all threads) for each, the best of the rounds, and the ratio paired / (two reports),
issue 36's target being <= 2. On a shared machine wall time varies with the load; CPU time is the steadier measure.
At 10⁶ events × 1,000 resamples (over `CI_BUDGET`) the call takes the bag of little bootstraps; `--exact` times the
exact paired bootstrap as well (about a hundred reports). Also timed: the same call with only the binned metrics
(`keys`), and the parts of one subset of the bag of little bootstraps.
"""
from __future__ import annotations
import argparse, gc, os, platform, time, warnings
import numpy as np, pandas as pd
from calibkit.paired import (BINNED, _blb_shape, _blb_units, _point, _uniform_multinomial, _Units,
                             bootstrap_differences)
from calibkit.report import calibration_report
from calibkit.selective import COVERAGES


def timed(f) -> tuple[float, float]:
    "(wall, CPU) seconds of one call."
    gc.collect()
    w, c = time.perf_counter(), time.process_time()
    f()
    return time.perf_counter() - w, time.process_time() - c


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n', type=float, default=1e6)
    ap.add_argument('--samples', type=int, default=1000)
    ap.add_argument('--repeat', type=int, default=1)
    ap.add_argument('--exact', action='store_true', help='also time the exact paired bootstrap (slow)')
    a = ap.parse_args()
    n = int(a.n)
    rng = np.random.default_rng(0)
    qa = rng.beta(2, 5, n)
    y = (rng.random(n) < qa).astype(np.uint8)
    qb = np.clip(qa + 0.05 * rng.standard_normal(n), 0, 1)
    print(f'python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, {os.cpu_count()} '
          f'cpus, load average {os.getloadavg()[0]:.1f}, n = {n:,}, {a.samples:,} paired resamples')
    evs = [pd.DataFrame(dict(conf=q, correct=y)) for q in (qa, qb)]
    kw = dict(n_samples=a.samples, seed=0)
    rows = []
    for _ in range(a.repeat):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            reps = [timed(lambda: calibration_report(ev)) for ev in evs]
        rows.append(dict(reports=tuple(map(sum, zip(*reps))),
                         paired=timed(lambda: bootstrap_differences([qa, qb], [y, y], **kw)),
                         binned=timed(lambda: bootstrap_differences([qa, qb], [y, y], keys=list(BINNED), **kw)))
                    | ({'exact': timed(lambda: bootstrap_differences([qa, qb], [y, y], blb=False, **kw))} if a.exact
                       else {}))
    best = {k: (min(r[k][0] for r in rows), min(r[k][1] for r in rows)) for k in rows[0]}
    names = {'reports': 'two calibration_reports', 'paired': 'bootstrap_differences, every metric',
             'binned': 'bootstrap_differences, binned metrics only', 'exact': 'the same, exact bootstrap (blb=False)'}
    print('method:', bootstrap_differences([qa, qb], [y, y], keys='brier', **kw).method[0])
    for k, (w, c) in best.items():
        print(f'{names[k]:45s} wall {w:8.2f} s  CPU {c:8.2f} s   × reports: wall {w / best["reports"][0]:6.1f}  '
              f'CPU {c / best["reports"][1]:6.1f}')
    print(f'issue 36 target: paired <= 2 × reports: {"met" if best["paired"][0] <= 2 * best["reports"][0] else "MISSED"}'
          f' (wall, best of {a.repeat})')
    # one subset's parts, CPU ms (one thread)
    s, r = _blb_shape(a.samples)
    b = _blb_units(n, {'n_bins': 10}, n)
    md = _Units.of(qa, y, np.arange(n), n)
    cov = np.asarray(COVERAGES, dtype=np.float64)
    g = np.random.default_rng(1)
    sel = g.choice(n, b, replace=False)
    cnt = _uniform_multinomial(g, n, b, r + 1)
    sub = md.subset(sel)
    rows = max(1, 2 * (1 << 16) // len(sub.cs))          # as `_blb` weighs them: chunks of 2^17 events
    chunked = lambda c: [sub.values(cnt[k:k + rows], {'n_bins': 10}, c) for k in range(0, r + 1, rows)]
    parts = {'one model: every metric on the data (as a report)': lambda: _point(qa, y, {'n_bins': 10}, 'A'),
             f'draw {b:,} of {n:,} units': lambda: g.choice(n, b, replace=False),
             f'{r + 1} multinomial rows (Poissonization)': lambda: _uniform_multinomial(g, n, b, r + 1),
             f'{r + 1} multinomial rows (numpy, for reference)': lambda: g.multinomial(n, np.full(b, 1 / b), r + 1),
             'one model: its subset\'s events, sorted': lambda: md.subset(sel),
             f'one model, {r + 1} rows, binned metrics': lambda: chunked(None),
             f'one model, {r + 1} rows, binned + selective': lambda: chunked(cov)}
    print(f'one subset of {s} ({b:,} units, {r} resamples + its own estimate); each of 2 models:')
    for k, f in parts.items():
        f()
        print(f'  {k:45s} CPU {1e3 * min(timed(f)[1] for _ in range(3)):7.1f} ms')

if __name__ == '__main__':
    main()
