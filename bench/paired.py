"""Time `bootstrap_differences` of 2 models × N events against two `calibration_report`s of the same events (issue 36).

    CALIBKIT_QUIET=1 .venv/bin/python bench/paired.py [--n 1e6] [--samples 1000] [--repeat 1]

Data: q ~ Beta(2, 5), y ~ Bernoulli(q) (model A, float64, one seeded draw) and model B = clip(q + Normal(0, 0.05))
on the same events, paired by position. Timed in turn, `--repeat` times: `calibration_report` of A and of B (no
recalibration, no groups; its default 1,000 interval samples) and `bootstrap_differences([qa, qb], [y, y])` with
`--samples` paired resamples (every binned and selective metric, equal-mass bins recomputed per resample). Prints
wall and CPU (process time of all threads) for each, the best of the rounds, and the ratio paired / (two reports),
issue 36's target being <= 2. On a shared machine wall time varies with the load; CPU time is the steadier measure.
Also timed: the same call with only the binned metrics (`keys`), and the components of one resample.
"""
from __future__ import annotations
import argparse, gc, os, platform, time, warnings
import numpy as np, pandas as pd
from calibkit.paired import BINNED, _Sorted, bootstrap_differences
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
                         binned=timed(lambda: bootstrap_differences([qa, qb], [y, y], keys=list(BINNED), **kw))))
    best = {k: (min(r[k][0] for r in rows), min(r[k][1] for r in rows)) for k in rows[0]}
    names = {'reports': 'two calibration_reports', 'paired': 'bootstrap_differences, every metric',
             'binned': 'bootstrap_differences, binned metrics only'}
    for k, (w, c) in best.items():
        print(f'{names[k]:45s} wall {w:8.2f} s  CPU {c:8.2f} s   × reports: wall {w / best["reports"][0]:6.1f}  '
              f'CPU {c / best["reports"][1]:6.1f}')
    print(f'issue 36 target: paired <= 2 × reports: {"met" if best["paired"][0] <= 2 * best["reports"][0] else "MISSED"}'
          f' (wall, best of {a.repeat})')
    # one resample's parts, CPU ms (one thread)
    md = _Sorted.of(qa, y, np.arange(n), n)
    cov = np.asarray(COVERAGES, dtype=np.float64)
    g = np.random.default_rng(1)
    parts = {'draw + bincount (once for both models)': lambda: np.bincount(g.integers(0, n, n), minlength=n)}
    cnt = parts['draw + bincount (once for both models)']()[None]
    parts |= {'one model, binned metrics': lambda: md.values(cnt, {'n_bins': 10}, None),
              'one model, binned + selective metrics': lambda: md.values(cnt, {'n_bins': 10}, cov),
              'np.sort(conf)': lambda: np.sort(qa)}
    for k, f in parts.items():
        f()
        print(f'  {k:45s} CPU {1e3 * min(timed(f)[1] for _ in range(3)):7.1f} ms')


if __name__ == '__main__':
    main()
