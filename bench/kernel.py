"""Time calibkit.kernel's SKCE estimators and the peak memory they allocate (tracemalloc: numpy's buffers).

    .venv/bin/python bench/kernel.py [--sizes 2e4] [--classes 1,10] [--repeat 1]

Data: continuous predictions (no ties, so every row is a distinct prediction: the quadratic estimator's worst case):
binary confidences q ~ Beta(2, 5) with y ~ Bernoulli(q), or K-class Dirichlet(1) rows with labels drawn from them.
Each row gives the wall and CPU seconds (best of `--repeat`) and the peak bytes allocated during one call, beside the
n × n kernel matrix's float64 size that the blocks avoid.
"""
from __future__ import annotations
import argparse, gc, time, tracemalloc
import numpy as np, pandas as pd
from calibkit.kernel import skce


def data(n: int, k: int, seed: int = 0):
    "Binary events (k = 1) or an n×k probability matrix with gold labels drawn from it."
    rng = np.random.default_rng(seed)
    if k == 1:
        q = rng.beta(2, 5, n)
        return q, (rng.random(n) < q).astype(np.uint8)
    p = rng.dirichlet(np.ones(k), n)
    return p, (rng.random(n)[:, None] > np.cumsum(p, 1)[:, :-1]).sum(1)


def measure(f, repeat: int) -> tuple[float, float, int]:
    "Best wall and CPU seconds of `repeat` calls, and the peak bytes traced during the last."
    wall, cpu = [], []
    for _ in range(repeat):
        gc.collect()
        tracemalloc.start()
        w0, c0 = time.perf_counter(), time.process_time()
        f()
        wall.append(time.perf_counter() - w0); cpu.append(time.process_time() - c0)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return min(wall), min(cpu), peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sizes', default='2e4', help='comma-separated row counts')
    ap.add_argument('--classes', default='1,10', help='comma-separated K (1: binary events)')
    ap.add_argument('--repeat', type=int, default=1)
    a = ap.parse_args()
    rows = []
    for n in (int(float(s)) for s in a.sizes.split(',')):
        for k in (int(s) for s in a.classes.split(',')):
            x, y = data(n, k)
            for est in ('quadratic', 'linear'):
                wall, cpu, peak = measure(lambda: skce(x, y, estimator=est), a.repeat)
                rows.append(dict(n=n, K=k if k > 1 else 'binary', estimator=est, wall_s=wall, cpu_s=cpu,
                                 peak_MB=peak / 2 ** 20, kernel_matrix_MB=8 * n * n / 2 ** 20))
    print(pd.DataFrame(rows).round(2).to_string(index=False))


if __name__ == '__main__':
    main()
