"""Time calibkit.selective (risk-coverage, AURC, E-AURC, AUGRC, AUROC, PRR) and calibkit.significance (the calibration
tests and consistency bands) at scale, each beside one `np.sort` of the same confidences in the same run.

    .venv/bin/python bench/selective.py [--sizes 1e6,1e7] [--repeat 3] [--resamples 20]

Data: q ~ Beta(2, 5), y ~ Bernoulli(q ** 1.3) (over-confident), float64, one seeded draw of the largest size
(smaller sizes are its prefixes); a second copy rounded to 3 decimals (at most 1001 distinct confidences) times the
tie-heavy case. Each row gives wall and CPU seconds (best of `--repeat`) and their ratios to `np.sort(q)`'s. Every calibkit
call includes its input validation and its own sort. The resampling functions (`calib_mse_test`,
`consistency_bands`) are timed with `--resamples` resamples and reported per resample as well. Before timing,
`auroc` is checked against scikit-learn's `roc_auc_score` (also timed, as an anchor) and PRR against 2·AUROC − 1.
"""
from __future__ import annotations
import argparse, gc, os, platform, time
import numpy as np, pandas as pd
from sklearn.metrics import roc_auc_score
from calibkit.selective import augrc, aurc, auroc, e_aurc, prr, ranking, risk_coverage, selective_risk, selective_summary
from calibkit.significance import (calib_mse_test, consistency_bands, ecce_mad_test, ecce_r_test, spiegelhalter_test)


def best_of(f, repeat: int) -> tuple[float, float]:
    "Best wall and CPU seconds of `repeat` calls of `f`."
    wall, cpu = [], []
    for _ in range(repeat):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        f()
        wall.append(time.perf_counter() - w0); cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


def rows_for(n: int, q, y, repeat: int, resamples: int, label: str) -> list[dict]:
    q, y = q[:n], y[:n]
    assert abs(auroc(q, y) - roc_auc_score(y, q)) < 1e-12 and abs(prr(q, y) - (2 * auroc(q, y) - 1)) < 1e-9
    ops = {'np.sort (floor)': lambda: np.sort(q), 'ranking (sort + runs)': lambda: ranking(q, y),
           'risk_coverage': lambda: risk_coverage(q, y), 'aurc': lambda: aurc(q, y), 'e_aurc': lambda: e_aurc(q, y),
           'augrc': lambda: augrc(q, y), 'auroc': lambda: auroc(q, y), 'prr': lambda: prr(q, y),
           'selective_risk (3 coverages)': lambda: selective_risk(q, y, coverage=[0.8, 0.9, 0.95]),
           'selective_summary': lambda: selective_summary(q, y),
           'sklearn roc_auc_score (anchor)': lambda: roc_auc_score(y, q),
           'spiegelhalter_test': lambda: spiegelhalter_test(q, y), 'ecce_mad_test': lambda: ecce_mad_test(q, y),
           'ecce_r_test': lambda: ecce_r_test(q, y),
           f'calib_mse_test ({resamples} resamples)': lambda: calib_mse_test(q, y, n_samples=resamples),
           f'consistency_bands ({resamples} resamples)': lambda: consistency_bands(q, y, n_samples=resamples)}
    rows = []
    for name, f in ops.items():
        wall, cpu = best_of(f, 1 if 'resamples' in name else repeat)
        rows.append(dict(data=label, size=f'{n:.0e}', op=name, wall_s=wall, cpu_s=cpu))
        if 'resamples' in name:
            rows.append(dict(data=label, size=f'{n:.0e}', op=name.split(' (')[0] + ' per resample',
                             wall_s=wall / resamples, cpu_s=cpu / resamples))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sizes', default='1e6,1e7')
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--resamples', type=int, default=20)
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args()
    sizes = [int(float(s)) for s in a.sizes.split(',') if s]
    rng = np.random.default_rng(a.seed)
    q = rng.beta(2, 5, max(sizes))
    y = (rng.random(len(q)) < q ** 1.3).astype(np.uint8)
    print(f'python {platform.python_version()}, numpy {np.__version__}, nproc {os.cpu_count()}, '
          f'load {os.getloadavg()[0]:.1f}')
    rows = [r for n in sizes for data, qq in (('continuous', q), ('3 decimals', np.round(q, 3)))
            for r in rows_for(n, qq, y, a.repeat, a.resamples, data)]
    t = pd.DataFrame(rows)
    floor = t[t.op.str.startswith('np.sort')].set_index(['data', 'size']).wall_s
    cpu_floor = t[t.op.str.startswith('np.sort')].set_index(['data', 'size']).cpu_s
    t['× np.sort'] = t.wall_s / [floor[(d, s)] for d, s in zip(t.data, t['size'])]
    t['× np.sort (cpu)'] = t.cpu_s / [cpu_floor[(d, s)] for d, s in zip(t.data, t['size'])]
    print(f'load at end {os.getloadavg()[0]:.1f}')
    print(t.to_string(index=False, float_format=lambda v: f'{v:.3f}'))


if __name__ == '__main__':
    main()
