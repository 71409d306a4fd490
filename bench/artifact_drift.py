"""How far a retrained small artifact moves from its committed reference: the measurement behind a Recipe's tolerances.

    .venv/bin/python bench/artifact_drift.py seq2seq_ewt generation_ewt
    OPENBLAS_CORETYPE=Prescott .venv/bin/python bench/artifact_drift.py seq2seq_ewt generation_ewt
    ATEN_CPU_CAPABILITY=default .venv/bin/python bench/artifact_drift.py --full generation_ewt   # the committed size

Retrains each named artifact at its small size (as `python3 tasks.py check-artifacts` does; `--full`: at the size
the notebooks load) and prints, over its
floating-point outputs, the largest absolute difference, the largest relative difference (|a − b| / |b| where
|b| ≥ 1e-3) and the largest absolute difference where |b| < 1e-3; over its discrete outputs (ints, bools, str), the
largest share of values that differ; and the recipe's tolerances beside them.
"""
import sys, time
import numpy as np
from calibkit.artifacts import RECIPES, _flatten, load_artifact, train_artifact


def drift(got: dict, ref: dict) -> dict:
    "The largest differences of `got` from `ref` (same keys and shapes), by kind."
    (g, _), (r, _) = _flatten(got), _flatten(ref)
    out = dict(abs=0.0, rel=0.0, abs_small=0.0, mismatch=0.0, shapes=[])
    for k in sorted(g.keys() & r.keys()):
        a, b = g[k], r[k]
        if a.shape != b.shape: out['shapes'].append(f'{k}: {a.shape} vs {b.shape}'); continue
        if b.dtype.kind == 'f':
            a, b = np.nan_to_num(a.astype(float)), np.nan_to_num(b.astype(float))
            d, big = np.abs(a - b), np.abs(b) >= 1e-3
            out['abs'] = max(out['abs'], float(d.max(initial=0)))
            out['rel'] = max(out['rel'], float((d[big] / np.abs(b[big])).max(initial=0)))
            out['abs_small'] = max(out['abs_small'], float(d[~big].max(initial=0)))
        elif b.size: out['mismatch'] = max(out['mismatch'], float(np.mean(a != b)))
    return out


if __name__ == '__main__':
    args = sys.argv[1:]
    size = 'full' if '--full' in args else 'small'
    for name in [a for a in args if a != '--full'] or RECIPES:
        t0 = time.monotonic()
        d, r = drift(train_artifact(name, size), load_artifact(name, size)), RECIPES[name]
        print(f"{name} ({size}): abs {d['abs']:.3g}, rel {d['rel']:.3g} (|ref| ≥ 1e-3), "
              f"abs {d['abs_small']:.3g} (|ref| < 1e-3), "
              f"discrete mismatch {d['mismatch']:.3%}, shape differences {d['shapes'] or 'none'}; "
              f"recipe: rtol {r.rtol:g}, atol {r.atol:g}, mismatch {r.mismatch:g} ({time.monotonic() - t0:.1f} s)")
