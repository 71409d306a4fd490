"""What a compiled pass would give issue 37's items 1 and 2: times against one `np.sort`, in one run.

    python -m venv /tmp/nbvenv && /tmp/nbvenv/bin/pip install -e '.[bench]'   # numba: in the bench extra only
    NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL" CALIBKIT_QUIET=1 /tmp/nbvenv/bin/python bench/compiled_floor.py

Data as `bench/report.py`'s: q ~ Beta(2, 5), y ~ Bernoulli(q), float64 + uint8, one seeded draw of `--n` events
(default 10^7), 10 equal-mass bins. Timed in turn, `--repeat` rounds, best of each:
- `np.sort(q)`, the floor both items are measured against;
- the cheapest pure-numpy packing of (confidence, outcome) into one sortable key (`key = bits << 1; key |= y`, what
  `calibkit.binning.sort_pairs` does) and a plain copy of q: what any numpy route pays before its sort;
- a compiled route (numba, `@njit`, no fastmath, so sums run in a fixed order): one loop that validates and packs,
  numpy's sort of the keys, then one loop that unpacks and sums the 10 bins' moments (item 2's equal-mass metrics)
  or one loop that also runs the report's O(n) statistics (item 1: the bins, ECCE-R's path extremes and σ,
  Spiegelhalter's sums, AUROC's rank sum, AURC and AUGRC).
Its statistics are checked against calibkit's (`calib_mse`, `spiegelhalter_test`, `ecce_r_test`, `selective_summary`)
to 1e-9 relative. Not part of calibkit or its tests: a measurement of the route issue 37 did not take
(bench/README.md, "A compiled pass").
"""
from __future__ import annotations
import argparse, time
import numpy as np
from report import events      # bench/report.py's data (run as `python bench/compiled_floor.py`)

try:
    import numba
except ImportError as e:
    raise SystemExit('bench/compiled_floor.py needs numba (not a calibkit dependency): see its docstring') from e

ONE = np.uint64(0x3FF0000000000000)   # the bit pattern of 1.0: q is in [+0, 1] iff its pattern is at most this


@numba.njit(nogil=True)
def pack(q, y, key):
    "Validate q (count the patterns above 1.0's: NaN, inf, negatives, > 1) and write key = bits << 1 | y."
    qb = q.view(np.uint64)
    bad = 0
    for i in range(q.size):
        b = qb[i]
        bad += b > ONE
        key[i] = (b << np.uint64(1)) | np.uint64(y[i])
    return bad


@numba.njit(nogil=True)
def passes(key, cuts, full):
    """Unpack the sorted keys in place (key >> 1: the confidences' bits) and sum each bin's n, Σq, Σq², Σqy, Σy; with
    `full`, in the same loop the report's O(n) statistics over distinct confidences in ascending order: the path
    C_k = Σ (y − q) and its extremes, Σ q(1 − q), Spiegelhalter's Σ (y − q)(1 − 2q) and Σ (1 − 2q)² q(1 − q), the
    correct events' rank sum (AUROC), and the selective risks: with A_i the errors below rank i, the top n − i events
    hold E − A_i of the E errors, so AURC = (E·Σ 1/(n − i) − Σ A_i/(n − i))/n and AUGRC = Σ e_i (i + 1)/n²."""
    n = key.size
    out = np.zeros((cuts.size - 1, 5))
    qv = key.view(np.float64)
    path = hi = lo = spread = num = var = ranks = below = harmonic = weighted = augrc = 0.0
    for b in range(cuts.size - 1):
        s1 = s2 = s3 = s4 = 0.0
        for i in range(cuts[b], cuts[b + 1]):
            k = key[i]
            key[i] = k >> np.uint64(1)
            q, y = qv[i], np.float64(k & np.uint64(1))
            s1 += q; s2 += q * q; s3 += q * y; s4 += y
            if not full: continue
            d = y - q
            path += d
            hi = max(hi, path); lo = min(lo, path)
            v = q * (1.0 - q); w = 1.0 - 2.0 * q
            spread += v; num += d * w; var += w * w * v
            ranks += y * (i + 1)
            top = 1.0 / (n - i)
            harmonic += top; weighted += below * top
            e = 1.0 - y
            below += e; augrc += e * (i + 1)
        out[b, 0], out[b, 1], out[b, 2], out[b, 3], out[b, 4] = cuts[b + 1] - cuts[b], s1, s2, s3, s4
    return out, hi, lo, spread, num, var, ranks, (below * harmonic - weighted) / n, augrc / n / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n', type=float, default=1e7)
    ap.add_argument('--repeat', type=int, default=7)
    a = ap.parse_args()
    n = int(a.n)
    ev = events(n)
    q, y = ev.conf.to_numpy(), ev.correct.to_numpy()
    cuts = np.round(np.linspace(0, n, 11)).astype(np.int64)
    key = np.empty(n, np.uint64)

    def numpy_pack():
        k = q.view(np.uint64) << np.uint64(1)
        k |= y
        return k

    def compiled(full):
        if pack(q, y, key): raise ValueError('q: values outside [0, 1]')
        key.view(np.float64).sort()
        return passes(key, cuts, full)

    compiled(False)                                  # compile outside the timer
    parts = dict(sort=lambda: np.sort(q), numpy_pack=numpy_pack, copy=q.copy,
                 metrics=lambda: compiled(False), report=lambda: compiled(True))
    best = {k: np.inf for k in parts}
    for _ in range(a.repeat):
        for k, f in parts.items():
            t0 = time.perf_counter(); f(); best[k] = min(best[k], time.perf_counter() - t0)
    s = best['sort']
    print(f'n = {n:.0e}, best of {a.repeat}; numpy {np.__version__}, numba {numba.__version__}')
    for k, t in best.items(): print(f'  {k:<11} {t:8.4f} s  {t / s:5.2f} x np.sort')

    out, hi, lo, spread, num, var, ranks, aurc, augrc = compiled(True)
    import calibkit as ck                                       # the check: the same statistics as calibkit's
    from calibkit.significance import ecce_r_test, spiegelhalter_test
    from calibkit.selective import selective_summary
    cnt, sq, _, _, sy = out.T
    mse = float(np.sum(cnt / n * (sq / cnt - sy / cnt) ** 2))
    n1 = sy.sum()
    got = dict(calib_mse=mse, spiegelhalter=num / np.sqrt(var), ecce_r=(hi - lo) / np.sqrt(spread),
               auroc=(ranks - n1 * (n1 + 1) / 2) / (n1 * (n - n1)), aurc=aurc, augrc=augrc)
    want = dict(calib_mse=ck.calib_mse(q, y, n_bins=10), spiegelhalter=spiegelhalter_test(q, y).statistic,
                ecce_r=ecce_r_test(q, y).statistic, **selective_summary(q, y)[['auroc', 'aurc', 'augrc']])
    for k in got:
        print(f'  {k:<13} compiled {got[k]:.12g}  calibkit {want[k]:.12g}')
        assert abs(got[k] - want[k]) <= 1e-9 * abs(want[k]), k


if __name__ == '__main__':
    main()
