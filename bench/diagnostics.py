"""Time calibkit.diagnostics (smooth ECE, smoothed curve, CORP) and calibkit.multiclass (temperature scaling) at scale.

    .venv/bin/python bench/diagnostics.py [--sizes 1e6,1e7] [--matrices 1e5x50,1e6x50] [--repeat 3]

Data: q ~ Beta(2, 5), y ~ Bernoulli(q ** 1.3) (over-confident), float64, one seeded draw of the largest
size (smaller sizes are its prefixes). Logit matrices: N(0, 2) logits, labels drawn from their softmax,
the model's logits = 2 × those (temperature 2). Each row gives wall and CPU seconds (best of `--repeat`)
beside one `np.sort` of the same confidences (for matrices: of all n·K softmax scores) in the same run.
The reference packages (relplot.smECE, model_diagnostics' decompose with SquaredError) are timed at
10⁶ only, after checking that they agree with calibkit (1e-3 and 1e-9).
"""
from __future__ import annotations
import argparse, gc, os, platform, time
import numpy as np, pandas as pd
from scipy.special import softmax
from calibkit.diagnostics import corp, smooth_curve, smooth_ece
from calibkit.multiclass import TemperatureScaling


def best_of(f, repeat: int) -> tuple[float, float]:
    "Best wall and CPU seconds of `repeat` calls of `f`."
    wall, cpu = [], []
    for _ in range(repeat):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        f()
        wall.append(time.perf_counter() - w0); cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


def binary_rows(n: int, q, y, repeat: int) -> list[dict]:
    q, y = q[:n], y[:n]
    ops = {'np.sort (floor)': lambda: np.sort(q), 'smooth_ece': lambda: smooth_ece(q, y),
           'smooth_curve': lambda: smooth_curve(q, y), 'corp': lambda: corp(q, y)}
    if n == 10**6:
        import relplot
        from model_diagnostics.scoring import SquaredError, decompose
        yf = y.astype(float)
        assert abs(relplot.smECE(q, yf) - smooth_ece(q, y)) < 1e-3
        ref = decompose(yf, q, scoring_function=SquaredError()).row(0, named=True)
        assert all(abs(ref[k] - v) < 1e-9 for k, v in corp(q, y)._asdict().items())
        ops |= {'relplot.smECE (anchor)': lambda: relplot.smECE(q, yf),
                'model_diagnostics decompose (anchor)': lambda: decompose(yf, q, scoring_function=SquaredError())}
    rows = []
    for name, f in ops.items():
        wall, cpu = best_of(f, repeat)
        rows.append(dict(size=f'{n:.0e}', op=name, wall_s=wall, cpu_s=cpu))
    return rows


def matrix_rows(n: int, k: int, repeat: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2, (n, k))
    y = (softmax(z, axis=1).cumsum(1) > rng.random((n, 1))).argmax(1)
    z *= 2.0
    scores = softmax(z, axis=1).ravel()
    rows, fitted = [], {}
    for name, f in {'np.sort (floor, n·K scores)': lambda: np.sort(scores),
                    'TemperatureScaling.fit': lambda: fitted.update(ts=TemperatureScaling().fit(z, y))}.items():
        wall, cpu = best_of(f, repeat)
        rows.append(dict(size=f'{n:.0e}x{k}', op=name, wall_s=wall, cpu_s=cpu))
    assert abs(fitted['ts'].temperature_ / 2 - 1) < 0.05
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sizes', default='1e6,1e7')
    ap.add_argument('--matrices', default='1e5x50,1e6x50')
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args()
    sizes = [int(float(s)) for s in a.sizes.split(',') if s]
    rng = np.random.default_rng(a.seed)
    q = rng.beta(2, 5, max(sizes)) if sizes else None
    y = (rng.random(len(q)) < q ** 1.3).astype(np.uint8) if sizes else None
    print(f'python {platform.python_version()}, numpy {np.__version__}, nproc {os.cpu_count()}, '
          f'load {os.getloadavg()[0]:.1f}')
    rows = [r for n in sizes for r in binary_rows(n, q, y, a.repeat)]
    for m in filter(None, a.matrices.split(',')):
        n, k = m.split('x')
        rows += matrix_rows(int(float(n)), int(k), a.repeat, a.seed)
    t = pd.DataFrame(rows)
    floor = t[t.op.str.startswith('np.sort')].set_index('size').wall_s
    t['× np.sort'] = t.wall_s / t['size'].map(floor)
    print(f'load at end {os.getloadavg()[0]:.1f}')
    print(t.to_string(index=False, float_format=lambda v: f'{v:.3f}'))


if __name__ == '__main__':
    main()
