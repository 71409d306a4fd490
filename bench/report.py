"""Time `calibration_report` against one `np.sort` of the same confidences, and `calibkit --help` wall time.

    CALIBKIT_QUIET=1 .venv/bin/python bench/report.py [--n 1e7] [--repeat 3] [--help-runs 10] [--mem-n N]

Data: q ~ Beta(2, 5), y ~ Bernoulli(q), float64, one seeded draw. `calibration_report(events)` with
no recalibration and no groups (the default 1,000 interval samples) is timed against `np.sort(q)` in
the same run: the two are timed in turn, `--repeat` times (interleaved, so a burst of load on the shared
machine hits both), and the ratio of the best times is held to report / sort <= 1.5 (issue 37; 2.5 before); the
median of the per-round ratios is printed beside it. Exit status 1 if a target is missed.
Peak memory (issue 37: <= 5x the events' arrays): a fresh process (`--peak N`, N = `--mem-n`, default `--n`) builds
the same events (the outcomes drawn in pieces, so building them peaks at what they hold), imports what the report
imports lazily (a report of 1,000 events, `scipy.stats`), reads its resident size, runs the report once and reads its peak resident size (`ru_maxrss`); the increase is divided by the nbytes of the
frame's two columns.
Charts are not part of the report's computation (they are drawn when saved or shown), so they are
not timed here. With `--labels L` (default 10^6), `calibration_report(events, grouper='per_class')` on `--labels-n` events
(default 3·10^6) with L distinct labels (10 interval samples) is timed against `np.sort` of those confidences:
groups are binned and measured all at once, so the ratio must stay <= 300 (issue 23: "seconds, not minutes"; the per-group loop took minutes).
Then `calibkit --help` is run `--help-runs` times as a fresh process (the installed
console script beside this Python) and the median and best wall times are printed; target 0.5 s.
"""
from __future__ import annotations
import argparse, gc, os, platform, statistics, subprocess, sys, time
from pathlib import Path
import numpy as np, pandas as pd
from calibkit.report import calibration_report


def wall(f) -> float:
    gc.collect()
    t0 = time.perf_counter(); f()
    return time.perf_counter() - t0


def events(n: int) -> pd.DataFrame:
    "q ~ Beta(2, 5), y ~ Bernoulli(q) (uint8), one seeded draw; the outcomes' uniforms drawn in pieces (same stream)."
    rng = np.random.default_rng(0)
    q = rng.beta(2, 5, n)
    y = np.empty(n, np.uint8)
    for a in range(0, n, 1 << 20): y[a:a + (1 << 20)] = rng.random(len(y[a:a + (1 << 20)])) < q[a:a + (1 << 20)]
    return pd.DataFrame(dict(conf=q, correct=y))


def peak(n: int) -> None:
    "In a fresh process: the report's peak resident memory beyond the process holding the events, over their nbytes."
    import resource
    ev = events(n)
    import scipy.stats                               # noqa: F401  (imported by the report's binomial bands: not data)
    calibration_report(ev.head(1000))                # the report's other lazy imports, likewise
    gc.collect()
    base = int(Path('/proc/self/statm').read_text().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    calibration_report(ev)
    top = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    size = ev.conf.to_numpy().nbytes + ev.correct.to_numpy().nbytes
    print(f'{(top - base) / size:.3f} {top - base} {size}')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n', type=float, default=1e7)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--help-runs', type=int, default=10)
    ap.add_argument('--labels', type=float, default=1e6)
    ap.add_argument('--labels-n', type=float, default=3e6)
    ap.add_argument('--mem-n', type=float, default=None)
    ap.add_argument('--peak', type=float, default=None, help=argparse.SUPPRESS)   # the child process of the memory run
    a = ap.parse_args()
    if a.peak is not None: return peak(int(a.peak))
    n = int(a.n)
    ev = events(n)
    q = ev.conf.to_numpy()
    rng = np.random.default_rng(1)
    print(f'python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, {os.cpu_count()} cpus, n = {n:,}')
    rounds = [(wall(lambda: np.sort(q)), wall(lambda: calibration_report(ev))) for _ in range(a.repeat)]
    t_sort, t_rep = min(r[0] for r in rounds), min(r[1] for r in rounds)
    median = statistics.median(r / s for s, r in rounds)
    print(f'np.sort(conf)          {t_sort:8.3f} s   (best of {a.repeat}, interleaved with the report)')
    print(f'calibration_report     {t_rep:8.3f} s   = {t_rep / t_sort:.2f} x np.sort (target <= 1.5; '
          f'median of the {a.repeat} per-round ratios {median:.2f})')
    m = int(a.mem_n or n)
    got = subprocess.run([sys.executable, __file__, '--peak', str(m)], check=True, capture_output=True, text=True)
    mem, extra, size = got.stdout.split()
    print(f'peak memory, n = {m:,}: +{int(extra) / 2**20:.0f} MiB = {float(mem):.2f} x the events\' arrays '
          f'({int(size) / 2**20:.0f} MiB; fresh process; target <= 5)')
    import warnings
    k = min(int(a.labels_n), n)
    lab = pd.DataFrame(dict(conf=q[:k], correct=ev.correct[:k], label=rng.integers(0, int(a.labels), k)))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')                # degenerate intervals of one-event groups
        t_pc, t_sort_pc = wall(lambda: calibration_report(lab, grouper='per_class', n_samples=10)), wall(lambda: np.sort(lab.conf.to_numpy()))
    print(f'per_class, {lab.label.nunique():,} labels, {k:,} events: {t_pc:.2f} s = {t_pc / t_sort_pc:.0f} x np.sort '
          f'({t_sort_pc:.3f} s; target <= 300)')
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
    print(f'load average at end: {" ".join(f"{x:.2f}" for x in os.getloadavg())}')
    missed = [m for m, bad in [('report', t_rep > 1.5 * t_sort), ('memory', float(mem) > 5),
                               ('per_class', t_pc > 300 * t_sort_pc),
                               ('--help', statistics.median(walls) > 0.5)] if bad]
    print(f'FAIL: {", ".join(missed)}' if missed else 'PASS: all targets met')
    return 1 if missed else 0


if __name__ == '__main__':
    sys.exit(main())
