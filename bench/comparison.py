"""Time `compare` of two models against the two models' `calibration_report`s (issue 36, item 6).

    CALIBKIT_QUIET=1 .venv/bin/python bench/comparison.py [--n 1e6] [--n-samples 1000] [--repeat 3]

Data: p ~ Beta(2, 5), y ~ Bernoulli(p), one seeded draw; model A reports p over-confidently (log-odds × 1.8), model
B reports p; both on the same items (paired by position). `compare({'A': a, 'B': b}, paired='position')` — both
reports, the paired bootstrap of every metric's difference with `--n-samples` resamples, the verdict — is timed
against `calibration_report(a)` + `calibration_report(b)` in the same run, interleaved `--repeat` times; the ratio of
the best wall times is held to <= 2 (issue 36; CPU times, steadier on a shared machine, are printed too). Exit status
1 if it is missed.
"""
from __future__ import annotations
import argparse, gc, os, platform, statistics, sys, time, warnings
import numpy as np, pandas as pd
from calibkit.comparison import compare
from calibkit.report import calibration_report


def wall(f) -> tuple[float, float]:
    "(wall, CPU) seconds of one call; CPU is the process time of all threads, steadier on a shared machine."
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time(); f()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n', type=float, default=1e6)
    ap.add_argument('--n-samples', type=int, default=1000)
    ap.add_argument('--repeat', type=int, default=3)
    a = ap.parse_args()
    n = int(a.n)
    rng = np.random.default_rng(0)
    p = rng.beta(2, 5, n)
    y = (rng.random(n) < p).astype(np.uint8)
    ma = pd.DataFrame(dict(conf=1 / (1 + ((1 - p) / p) ** 1.8), correct=y))
    mb = pd.DataFrame(dict(conf=p, correct=y))
    print(f'python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} cpus, n = {n:,} events per '
          f'model, {a.n_samples:,} paired resamples, load average {os.getloadavg()[0]:.1f}')
    warnings.simplefilter('ignore')
    two = lambda: (calibration_report(ma, n_samples=a.n_samples), calibration_report(mb, n_samples=a.n_samples))
    cmp = lambda: compare({'A': ma, 'B': mb}, paired='position', n_samples=a.n_samples)
    rounds = [(wall(two), wall(cmp)) for _ in range(a.repeat)]
    (t2, c2), (tc, cc) = [(min(r[i][0] for r in rounds), min(r[i][1] for r in rounds)) for i in (0, 1)]
    ratio = tc / t2
    print(f'two calibration_reports {t2:8.3f} s wall {c2:8.3f} s CPU   (best of {a.repeat}, interleaved)')
    print(f'compare                 {tc:8.3f} s wall {cc:8.3f} s CPU   = {ratio:.2f} x the two reports in wall time '
          f'(target <= 2; median of the per-round ratios {statistics.median(c[0] / r[0] for r, c in rounds):.2f}), '
          f'{cc / c2:.2f} x in CPU time')
    print(f'load average {os.getloadavg()[0]:.1f} at the end')
    return 0 if ratio <= 2 else 1


if __name__ == '__main__':
    sys.exit(main())
