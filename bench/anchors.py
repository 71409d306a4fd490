"""Anchors: calibkit against netcal, torchmetrics, scikit-learn and the numpy floor, on identical data.

    .venv/bin/pip install torch==2.13.0 && .venv/bin/pip install -e '.[bench]'   # torch first: any other spec pulls CUDA
    .venv/bin/python bench/anchors.py                   # every table (N = 1e5, 1e6, 1e7), markdown on stdout
    .venv/bin/python bench/anchors.py --sizes 1e5 1e6   # a quicker run

Timings are the best of `--repeat` runs (fewer at 10^7) within one process on a shared machine:
compare ratios within one run, not absolute times across runs. Every anchor gets the data in its
own native form, converted outside the timer (torch tensors, an events frame for SMCE). Peak
memory is measured in a fresh subprocess per function: the peak RSS (VmHWM, reset through
/proc/self/clear_refs once the inputs are loaded) minus the RSS at that moment, against the inputs'
bytes.
"""
import sys
from pathlib import Path
import argparse, gc, os, subprocess, tempfile, time, warnings
import numpy as np, pandas as pd

os.environ.setdefault('CALIBKIT_QUIET', '1')
import calibkit
from calibkit.binning import bin_starts

N_BINS, FW_BINS = 10, 15


def data(n, seed=0, dtype=np.float64):
    "Binary events q ~ Beta(2, 5), y ~ Bernoulli(σ(1.5·logit q)): P(y=1) < q below 0.5 and > q above (gaps of both signs)."
    rng = np.random.default_rng(seed)
    q = rng.beta(2, 5, n).astype(dtype)
    t = 1 / (1 + (1 / q.astype(np.float64) - 1) ** 1.5)
    return q, (rng.random(n) < t).astype(np.uint8)


def best(f, repeat):
    "Best wall time of `repeat` calls (after one untimed warm-up call) and the result."
    out, t = f(), np.inf
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter(); f(); t = min(t, time.perf_counter() - t0)
    return t, out


def interleaved(cases, repeat):
    "Best time of each `(task, impl, f)`, the cases timed in turn `repeat` times (fair under a varying load)."
    vals = [f() for _, _, f in cases]                      # warm-up, and the values
    times = np.full(len(cases), np.inf)
    for _ in range(repeat):
        for i, (_, _, f) in enumerate(cases):
            gc.collect()
            t0 = time.perf_counter(); f(); times[i] = min(times[i], time.perf_counter() - t0)
    return [(task, impl, t, v) for (task, impl, _), t, v in zip(cases, times, vals)]


# --- the numpy floor: equal-mass edges from np.sort, bins by searchsorted, sums by bincount -------------------
def floor_stats(c, y, n_bins):
    edges = np.sort(c)[bin_starts(len(c), n_bins=n_bins)[1:]]
    j = np.searchsorted(edges, c, side='right')
    return np.bincount(j, minlength=n_bins), np.bincount(j, c, n_bins), np.bincount(j, y, n_bins)

def floor_calib_mse(c, y, n_bins=N_BINS):
    n, sc, sy = floor_stats(c, y, n_bins)
    return float(((sc - sy) ** 2 / n).sum() / len(c))

def floor_ece(c, y, n_bins=N_BINS):
    n, sc, sy = floor_stats(c, y, n_bins)
    return float(np.abs(sc - sy).sum() / len(c))


# --- anchors ---------------------------------------------------------------------------------------------
def anchors():
    "name -> (setup(q, y) -> args, run(*args) -> value); missing packages are left out with a note."
    import calibkit.recalibrators  # noqa: F401  (registers the recalibrators)
    out = {}
    try:
        from netcal.metrics import ECE as NECE
        from netcal.binning import HistogramBinning as NHist, IsotonicRegression as NIso
        out['netcal'] = dict(NECE=NECE, NHist=NHist, NIso=NIso)
    except ImportError as e: print(f'> netcal not available: {e}')
    try:
        import torch
        from torchmetrics.functional.classification import binary_calibration_error
        torch.set_num_threads(1)
        out['torchmetrics'] = dict(torch=torch, bce=binary_calibration_error)
    except ImportError as e: print(f'> torchmetrics not available: {e}')
    from sklearn.calibration import calibration_curve
    from sklearn.isotonic import IsotonicRegression
    out['sklearn'] = dict(curve=calibration_curve, Iso=IsotonicRegression)
    return out


def metric_rows(q, y, repeat, A):
    "(task, implementation, seconds, value) for equal-mass and fixed-width metrics."
    ev = calibkit.make_events(q, y)
    rows = []
    def add(task, impl, f): rows.append((task, impl, f))
    add('CalibMSE, 10 equal-mass bins', 'calibkit calib_mse', lambda: calibkit.calib_mse(q, y, n_bins=N_BINS))
    add('CalibMSE, 10 equal-mass bins', 'numpy floor', lambda: floor_calib_mse(q, y))
    add('ECE l1, 10 equal-mass bins', 'calibkit ece', lambda: calibkit.ece(q, y, n_bins=N_BINS))
    add('ECE l1, 10 equal-mass bins', 'numpy floor', lambda: floor_ece(q, y))
    if 'netcal' in A:
        add('ECE l1, 10 equal-mass bins', 'netcal ECE(equal_intervals=False)',
            lambda: float(A['netcal']['NECE'](bins=N_BINS, equal_intervals=False).measure(q, y)))
    add('SMCE (l2), 10 equal-mass bins, events frame', 'calibkit smce', lambda: calibkit.smce(ev, n_bins=N_BINS))
    add('SMCE (l2), 10 equal-mass bins, events frame', 'numpy floor', lambda: float(np.sqrt(floor_calib_mse(ev.conf.to_numpy(), ev.correct.to_numpy()))))
    add('reliability bins, 10 equal-mass', 'calibkit equal_mass_bins', lambda: calibkit.equal_mass_bins(q, y, n_bins=N_BINS))
    add('reliability bins, 10 equal-mass', 'sklearn calibration_curve(quantile)',
        lambda: A['sklearn']['curve'](y, q, n_bins=N_BINS, strategy='quantile'))
    add('ECE l1, 15 fixed-width bins', 'calibkit ece(fixed_width)', lambda: calibkit.ece(q, y, n_bins=FW_BINS, binning='fixed_width'))
    if 'netcal' in A:
        add('ECE l1, 15 fixed-width bins', 'netcal ECE', lambda: float(A['netcal']['NECE'](bins=FW_BINS).measure(q, y)))
    if 'torchmetrics' in A:
        T = A['torchmetrics']; tq, ty = T['torch'].from_numpy(q), T['torch'].from_numpy(y.astype(np.int64))
        add('ECE l1, 15 fixed-width bins', 'torchmetrics binary_calibration_error', lambda: float(T['bce'](tq, ty, n_bins=FW_BINS)))
        add('ECE l2, 15 fixed-width bins', 'calibkit ece(fixed_width, l2)', lambda: calibkit.ece(q, y, n_bins=FW_BINS, binning='fixed_width', norm='l2'))
        add('ECE l2, 15 fixed-width bins', 'torchmetrics binary_calibration_error(l2)', lambda: float(T['bce'](tq, ty, n_bins=FW_BINS, norm='l2')))
    return interleaved(rows, repeat)


def recal_rows(q, y, repeat, A):
    "fit on the first half, transform the second half."
    h = len(q) // 2
    (qd, yd), qt = (q[:h], y[:h]), q[h:]
    rows = []
    def add(task, impl, f): rows.append((task, impl, f))
    add('histogram binning, 10 bins, fit+transform', 'calibkit histogram (equal-mass)',
        lambda: calibkit.recalibrator('histogram', n_bins=N_BINS).fit(qd, yd).transform(qt))
    if 'netcal' in A:   # netcal's transform refuses equal_intervals=False ("not implemented"): fixed-width only
        add('histogram binning, 10 bins, fit+transform', 'netcal HistogramBinning (fixed-width)',
            lambda: A['netcal']['NHist'](bins=N_BINS).fit(qd, yd).transform(qt))
    add('isotonic regression, fit+transform', 'calibkit isotonic', lambda: calibkit.recalibrator('isotonic').fit(qd, yd).transform(qt))
    add('isotonic regression, fit+transform', 'sklearn IsotonicRegression',
        lambda: A['sklearn']['Iso'](y_min=0, y_max=1, out_of_bounds='clip').fit(qd, yd).predict(qt))
    if 'netcal' in A:
        add('isotonic regression, fit+transform', 'netcal IsotonicRegression', lambda: A['netcal']['NIso']().fit(qd, yd).transform(qt))
    return interleaved(rows, repeat)


def table(rows, n):
    "Markdown: per task, each implementation's best time and its ratio to calibkit's (first row of the task)."
    print(f'\n| N = {n:.0e} | implementation | best time (ms) | × calibkit |\n|---|---|---|---|')
    base = {}
    for task, impl, t, _ in rows:
        base.setdefault(task, t)
        print(f'| {task} | {impl} | {t * 1e3:.1f} | {t / base[task]:.2f} |')


def agreement(q, y, A):
    "Where definitions agree, the values must too; every difference is a documented convention."
    out = []
    def chk(what, a, b, tol, note):
        d = float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float))))
        out.append((what, d, tol, d <= tol, note))
    chk('CalibMSE: calibkit vs numpy floor', calibkit.calib_mse(q, y, n_bins=N_BINS), floor_calib_mse(q, y), 1e-12,
        'same bins when no two events tie (floor puts ties in one bin; calibkit splits them in input order)')
    t = calibkit.equal_mass_bins(q, y, n_bins=N_BINS)
    pt, pp = A['sklearn']['curve'](y, q, n_bins=N_BINS, strategy='quantile')
    chk('bin acc: calibkit vs sklearn calibration_curve(quantile)', t.acc, pt, 5 * N_BINS / len(q),
        'sklearn edges are interpolated percentiles, ties go to the lower bin: each edge may differ by one event')
    chk('bin conf: calibkit vs sklearn calibration_curve(quantile)', t.conf, pp, 5 * N_BINS / len(q), 'idem (means, not midpoints, on both sides)')
    if 'netcal' in A:
        chk('ECE l1 15 fixed-width: calibkit vs netcal', calibkit.ece(q, y, n_bins=FW_BINS, binning='fixed_width'),
            A['netcal']['NECE'](bins=FW_BINS).measure(q, y), 1e-9, 'netcal clips q to [eps, 1-eps]: a score of exactly 1.0 lands in the last bin in both')
        chk('ECE l1 10 equal-mass: calibkit vs netcal', calibkit.ece(q, y, n_bins=N_BINS),
            A['netcal']['NECE'](bins=N_BINS, equal_intervals=False).measure(q, y), 1e-3,
            'netcal\'s adaptive edges are its own quantile rule (bins differ by a few events), computed on q clipped to [eps, 1-eps]')
    if 'torchmetrics' in A:
        T = A['torchmetrics']; tq, ty = T['torch'].from_numpy(q), T['torch'].from_numpy(y.astype(np.int64))
        for norm in ('l1', 'l2', 'max'):
            chk(f'ECE {norm} 15 fixed-width: calibkit vs torchmetrics', calibkit.ece(q, y, n_bins=FW_BINS, binning='fixed_width', norm=norm),
                float(T['bce'](tq, ty, n_bins=FW_BINS, norm=norm)), 1e-6,
                'torchmetrics bins with float32 linspace edges (calibkit: exact j/B): events within 1e-7 of an edge may switch bins')
    h = len(q) // 2
    ours = calibkit.recalibrator('isotonic').fit(q[:h], y[:h]).transform(q[h:])
    theirs = A['sklearn']['Iso'](y_min=0, y_max=1, out_of_bounds='clip').fit(q[:h], y[:h]).predict(q[h:])
    chk('isotonic outputs: calibkit vs sklearn', ours, theirs, 1e-9, 'same PAV fit; both interpolate linearly and clip outside the fit range')
    print(f'\n### Agreement at N = {len(q):.0e}\n\n| check | max abs difference | tolerance | ok | convention |\n|---|---|---|---|---|')
    for what, d, tol, ok, note in out: print(f'| {what} | {d:.1e} | {tol:.0e} | {"yes" if ok else "**NO**"} | {note} |')


def interval_rows(n):
    q, y = data(n, seed=1)
    print(f'\n### calib_mse_interval, N = {n:.0e}, 10 equal-mass bins, 1,000 samples\n\n| method | time (s) | interval |\n|---|---|---|')
    for method, rep in (('normal', 3), ('bootstrap', 1)):
        t, iv = best(lambda: calibkit.calib_mse_interval(q, y, n_bins=N_BINS, n_samples=1000, method=method), rep)
        print(f'| {method} | {t:.2f} | {iv.estimate:.6f} [{iv.lo:.6f}, {iv.hi:.6f}] |')


def marginal(repeat, n=50_000, k=500, n_groups=5):
    "The sparse-tagset case: 50,000 peaked softmax rows over 500 tags, threshold .01, SMCE and GMCE."
    rng = np.random.default_rng(2)
    freq = 1 / np.arange(1, k + 1); freq /= freq.sum()                     # Zipfian tags
    logits = (rng.standard_normal((n, k)) * 4 + np.log(freq)).astype(np.float32)
    s = np.exp(logits - logits.max(1, keepdims=True)); s /= s.sum(1, keepdims=True)
    gold = np.argmax(np.log(s) + rng.gumbel(size=(n, k)), axis=1)           # gold ~ the row's distribution
    s = s ** 1.2; s /= s.sum(1, keepdims=True)                               # over-confident
    rank = np.argsort(np.argsort(-np.bincount(gold, minlength=k)))
    groups = {j: int(rank[j] * n_groups // k) for j in range(k)}             # 5 groups of 100 tags by gold frequency rank
    def ours():
        ev = calibkit.events_from_scores(s, gold, threshold=.01)
        return len(ev), calibkit.smce(ev, n_bins=N_BINS), calibkit.gmce(ev, groups, n_bins=N_BINS)
    def floor():
        keep = np.flatnonzero(s.reshape(-1) >= .01)
        item, lab = np.divmod(keep, k)
        c, y = s.reshape(-1)[keep], (lab == gold[item]).astype(np.uint8)
        g = np.array([groups[j] for j in range(k)])[lab]
        return len(c), np.sqrt(floor_calib_mse(c, y)), [np.sqrt(floor_calib_mse(c[g == i], y[g == i])) for i in range(n_groups)]
    t1, (m, v1, g1) = best(ours, repeat)
    t2, (m2, v2, g2) = best(floor, repeat)
    print(f'\n### Marginal events: {n:,} × {k} float32 scores, threshold .01 → {m:,} events; SMCE + GMCE (5 groups)\n')
    print(f'| implementation | best time (ms) | SMCE | GMCE per group |\n|---|---|---|---|')
    print(f'| calibkit events_from_scores + smce + gmce | {t1 * 1e3:.0f} | {v1:.5f} | {", ".join(f"{x:.4f}" for x in g1.gmce)} |')
    print(f'| numpy floor (mask + nonzero + sort/searchsorted/bincount) | {t2 * 1e3:.0f} | {v2:.5f} | {", ".join(f"{x:.4f}" for x in g2)} |')
    assert m == m2 and abs(v1 - v2) < 1e-9, (m, m2, v1, v2)


# --- memory, in a subprocess per function ------------------------------------------------------------------
MEMORY = {
    'calib_mse': lambda q, y: calibkit.calib_mse(q, y, n_bins=N_BINS),
    'ece (equal-mass)': lambda q, y: calibkit.ece(q, y, n_bins=N_BINS),
    'ece (fixed-width)': lambda q, y: calibkit.ece(q, y, n_bins=FW_BINS, binning='fixed_width'),
    'equal_mass_bins': lambda q, y: calibkit.equal_mass_bins(q, y, n_bins=N_BINS),
    'calib_mse_interval (normal)': lambda q, y: calibkit.calib_mse_interval(q, y, n_bins=N_BINS),
    'numpy floor CalibMSE': floor_calib_mse,
}

def status(field):
    "A field of /proc/self/status in bytes: VmRSS (now) or VmHWM (peak since the last reset)."
    return next(int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith(field + ':'))

def memory_child(name, path):
    q, y = np.load(f'{path}/q.npy'), np.load(f'{path}/y.npy')
    MEMORY[name](q[:1000], y[:1000])                   # imports and caches warmed up on a small input
    gc.collect()
    with open('/proc/self/clear_refs', 'w') as f: f.write('5')   # reset the peak (VmHWM) to the current RSS
    base = status('VmRSS')
    MEMORY[name](q, y)
    print(status('VmHWM') - base, q.nbytes + y.nbytes)

def memory(n, dtype):
    with tempfile.TemporaryDirectory() as d:
        q, y = data(n, seed=3, dtype=dtype)
        np.save(f'{d}/q.npy', q); np.save(f'{d}/y.npy', y)
        del q, y
        print(f'\n### Peak memory, N = {n:.0e}, conf {np.dtype(dtype).name} + correct uint8\n')
        print('| function | peak RSS − RSS with inputs loaded (MB) | inputs (MB) | × inputs |\n|---|---|---|---|')
        for name in MEMORY:
            r = subprocess.run([sys.executable, __file__, '--memory-child', name, d], capture_output=True, text=True, check=True)
            extra, inputs = map(int, r.stdout.split())
            print(f'| {name} | {extra / 2**20:.0f} | {inputs / 2**20:.0f} | {extra / inputs:.2f} |')


def float32_check(n):
    q64, y = data(n, seed=4)
    q32 = q64.astype(np.float32)
    c, _ = calibkit.as_pairs(q32, y)
    st = calibkit.binning.equal_mass_stats(q32, y, n_bins=N_BINS)
    t32, v32 = best(lambda: calibkit.calib_mse(q32, y, n_bins=N_BINS), 3)
    t64, v64 = best(lambda: calibkit.calib_mse(q64, y, n_bins=N_BINS), 3)
    print(f'\n### float32, N = {n:.0e}\n\nvalidated conf dtype: {c.dtype}; BinStats sums dtype: {st.sum_conf.dtype}; '
          f'CalibMSE float32 {v32:.8f} vs float64 {v64:.8f} (|Δ| = {abs(v32 - v64):.1e}); '
          f'time float32 {t32 * 1e3:.0f} ms vs float64 {t64 * 1e3:.0f} ms')


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == '--memory-child':
        memory_child(sys.argv[2], sys.argv[3]); sys.exit()
    ap = argparse.ArgumentParser()
    ap.add_argument('--sizes', nargs='+', type=float, default=[1e5, 1e6, 1e7])
    ap.add_argument('--repeat', type=int, default=5)
    ap.add_argument('--skip', nargs='*', default=[], help='any of: metrics recal agreement interval marginal memory float32')
    a = ap.parse_args()
    warnings.simplefilter('ignore')
    A = anchors()
    vers = [f'{m} {sys.modules[m].__version__}' for m in ('numpy', 'sklearn', 'netcal', 'torchmetrics', 'torch') if m in sys.modules]
    print(f'# anchors: calibkit {calibkit.__version__}; ' + ', '.join(vers) +
          f'; {os.cpu_count()} cores (shared), load average {os.getloadavg()[0]:.1f}; best of {a.repeat} (3 at 10^7), interleaved')
    for n in map(int, a.sizes):
        q, y = data(n)
        rep = a.repeat if n < 10**7 else 3
        if 'metrics' not in a.skip: table(metric_rows(q, y, rep, A), n)
        if 'recal' not in a.skip: table(recal_rows(q, y, rep if n < 10**7 else 1, A), n)
        if 'agreement' not in a.skip and n == 10**6: agreement(q, y, A)
    if 'interval' not in a.skip: interval_rows(10**6)
    if 'marginal' not in a.skip: marginal(a.repeat)
    if 'float32' not in a.skip: float32_check(10**7)
    if 'memory' not in a.skip:
        memory(10**7, np.float64); memory(10**7, np.float32)
