"""Retrain an artifact at its small size and print how far it is from the committed small reference, per output
(largest absolute and relative difference of floating-point values, share of discrete values that differ): the
measurement behind the tolerances of `calibkit.artifacts.RECIPES` (bench/README.md, "Trained artifacts across
processors: taggers and coreference"). Run it under each processor setting, e.g.

    OPENBLAS_CORETYPE=Prescott OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python \
        bench/artifacts_processors.py NAME [NAME ...]
"""
import sys, time
import numpy as np
from calibkit.artifacts import _flatten, load_artifact, train_artifact


def differences(name: str) -> list[str]:
    "One line per output of the small artifact `name`: how far a fresh retrain is from the committed reference."
    got, _ = _flatten(train_artifact(name, 'small'))
    ref, _ = _flatten(load_artifact(name, 'small'))
    out = []
    for k in sorted(ref):
        a, b = got[k], ref[k]
        if a.shape != b.shape: out.append(f'{k}: shape {a.shape}, the reference has {b.shape}'); continue
        if b.dtype.kind == 'f':
            d, big = np.abs(a - b), np.abs(b) > 1e-3
            rel = (d[big] / np.abs(b[big])).max() if big.any() else 0.0
            out.append(f'{k}: largest difference {d.max():.2e} absolute, {rel:.2e} relative (above 1e-3)')
        else: out.append(f'{k}: {np.mean(a != b):.2e} of the values differ')
    return out


if __name__ == '__main__':
    for name in sys.argv[1:]:
        t = time.perf_counter()
        lines = differences(name)
        print(f'{name} ({time.perf_counter() - t:.0f} s)', *lines, sep='\n  ')
