"""Library results do not depend on the processor: the same digits whichever BLAS kernel or SIMD width runs.

OpenBLAS picks its kernels by processor (`OPENBLAS_CORETYPE` forces one) and numpy dispatches some loops by
SIMD width (`NPY_DISABLE_CPU_FEATURES` turns the wider ones off); a reduction routed through either can change
the last digits. Each metric below is computed under several such settings, in fresh processes, and must be
bit-for-bit the same.
"""
import json, os, subprocess, sys
import pytest

COMPUTE = r'''
import json, numpy as np, calibkit as ck
from calibkit.metrics import brier
rng = np.random.default_rng(3)
q7 = np.array([.1, .2, .3, .55, .6, .8, .9]); y7 = np.array([0, 1, 0, 1, 1, 0, 1])
q = rng.beta(2, 2, 200_000); y = (rng.random(200_000) < q ** 1.3).astype(np.uint8)     # few large bins: slice sums
out = {'calib_mse_7': ck.calib_mse(q7, y7, n_bins=3), 'brier_7': list(brier(q7, y7, n_bins=3)),
       'calib_mse': ck.calib_mse(q, y, n_bins=10), 'debiased': ck.calib_mse(q, y, n_bins=10, debias=True),
       'interval': list(ck.calib_mse_interval(q, y, n_bins=10, n_samples=200)),
       'brier': list(brier(q, y, n_bins=10)), 'smce': ck.smce(ck.make_events(q, y))}
out |= {f'ece_{norm}': list(ck.ece_interval(q, y, n_bins=15, norm=norm, n_samples=200)) for norm in ('l1', 'l2', 'max')}
out |= {f.__name__: list(f(q, y)[:2]) for f in (ck.spiegelhalter_test, ck.ecce_mad_test, ck.ecce_r_test)}
out |= {'calib_mse_test': list(ck.calib_mse_test(q, y, n_samples=50)[:2]),
        'bands': ck.consistency_bands(q, y, n_samples=50)[['band_lo', 'band_hi']].to_numpy().tolist(),
        'selective': ck.selective_summary(q, y).tolist()}
print(json.dumps({k: repr(v) for k, v in out.items()}))
'''

SETTINGS = {'default': {}, 'Prescott': {'OPENBLAS_CORETYPE': 'Prescott'}, 'Haswell': {'OPENBLAS_CORETYPE': 'Haswell'},
            'no AVX2': {'NPY_DISABLE_CPU_FEATURES': 'X86_V3'}}


def compute(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ('OPENBLAS_CORETYPE', 'NPY_DISABLE_CPU_FEATURES')}
    r = subprocess.run([sys.executable, '-c', COMPUTE], capture_output=True, text=True, env={**env, 'CALIBKIT_QUIET': '1', **extra})
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope='module')
def results():
    return {name: compute(extra) for name, extra in SETTINGS.items()}


@pytest.mark.parametrize('name', [n for n in SETTINGS if n != 'default'])
def test_metrics_are_the_same_bits_under_other_kernels(results, name):
    diff = {k: (results['default'][k], v) for k, v in results[name].items() if results['default'][k] != v}
    assert diff == {}, f'{name} changes {diff}'


def test_the_settings_do_change_a_blas_reduction():
    "The control: under these settings a BLAS dot product of the same data differs, so the test above can fail."
    code = 'import numpy as np; a = np.random.default_rng(0).random(1_000_003); print(repr(float(a @ a)))'
    env = {k: v for k, v in os.environ.items() if k != 'OPENBLAS_CORETYPE'}
    got = {ct: subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                              env={**env, 'OPENBLAS_CORETYPE': ct}).stdout for ct in ('Prescott', 'Haswell')}
    assert got['Prescott'] != got['Haswell'], got
