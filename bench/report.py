"""Time `calibration_report` against one `np.sort` of the same confidences, and `calibkit --help` wall time.

    CALIBKIT_QUIET=1 .venv/bin/python bench/report.py [--n 1e7] [--repeat 3] [--help-runs 10]

Data: q ~ Beta(2, 5), y ~ Bernoulli(q), float64, one seeded draw. `calibration_report(events)` with
no recalibration and no groups (the default 1,000 interval samples) is timed against `np.sort(q)` in
the same run (best of `--repeat` wall times each); the target is report / sort <= 2.5 (issue 14).
Charts are not part of the report's computation (they are drawn when saved or shown), so they are
not timed here. Then `calibkit --help` is run `--help-runs` times as a fresh process (the installed
console script beside this Python) and the median and best wall times are printed; target 0.5 s.
"""
from __future__ import annotations
import argparse, gc, os, platform, statistics, subprocess, sys, time
from pathlib import Path
import numpy as np, pandas as pd
from calibkit.report import calibration_report


def best_of(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter(); f(); times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n', type=float, default=1e7)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--help-runs', type=int, default=10)
    a = ap.parse_args()
    n = int(a.n)
    rng = np.random.default_rng(0)
    q = rng.beta(2, 5, n)
    ev = pd.DataFrame(dict(conf=q, correct=(rng.random(n) < q).astype(np.uint8)))
    print(f'python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, {os.cpu_count()} cpus, n = {n:,}')
    t_sort = best_of(lambda: np.sort(q), a.repeat)
    t_rep = best_of(lambda: calibration_report(ev), a.repeat)
    print(f'np.sort(conf)          {t_sort:8.3f} s')
    print(f'calibration_report     {t_rep:8.3f} s   = {t_rep / t_sort:.2f} x np.sort (target <= 2.5)')
    exe = Path(sys.executable).parent/'calibkit'
    walls = []
    for _ in range(a.help_runs):
        t0 = time.perf_counter()
        subprocess.run([str(exe), '--help'], check=True, capture_output=True)
        walls.append(time.perf_counter() - t0)
    print(f'calibkit --help        median {statistics.median(walls):.3f} s, best {min(walls):.3f} s over {a.help_runs} runs (target 0.5 s)')
    t0 = time.perf_counter()
    subprocess.run([sys.executable, '-c', 'import numpy, pandas'], check=True)
    print(f'  of which python -c "import numpy, pandas": {time.perf_counter() - t0:.3f} s (one run)')


if __name__ == '__main__':
    main()
