"""Whether notebook outputs move between processors: the notebooks executed under other BLAS kernels and SIMD
widths, compared with their committed outputs. Since issue 34 every committed output must be the same under every
setting (trained models are committed artifacts, calibkit.artifacts): `compare` must print an empty table.

    .venv/bin/python bench/processors.py run --out /tmp/procs 12_models_taggers.ipynb ...   # execute under each setting
    .venv/bin/python bench/processors.py compare --out /tmp/procs [--against committed]     # the table in bench/README.md

`run` executes each notebook once per setting (fresh kernels, the test environment) and saves it as
OUT/SETTING/NB.ipynb. `compare` reads them and, per notebook cell whose outputs differ from the run with the
`default` setting (or from the committed notebook), prints the largest relative difference of its numbers beyond
one unit of their last displayed digit (tools/nbcheck.py's `numbers_moved`) or says that the cell's text differs
apart from its numbers.
"""
import argparse, json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import tasks  # noqa: E402
from tools import nbcheck  # noqa: E402

# 'default': this machine's own code paths (the control: it must match the committed outputs made on the same kind of
# processor). A machine without AVX-512 can still take the other code paths: OpenBLAS' kernels by name, torch's and
# numpy's SIMD dispatch turned down to their baselines.
SETTINGS = {'default': {}, 'Prescott': {'OPENBLAS_CORETYPE': 'Prescott'}, 'Haswell': {'OPENBLAS_CORETYPE': 'Haswell'},
            'baseline': {'OPENBLAS_CORETYPE': 'Prescott', 'ATEN_CPU_CAPABILITY': 'default',
                         'NPY_DISABLE_CPU_FEATURES': 'X86_V3,X86_V4,AVX512_ICL,AVX512_SPR'},
            # not a processor: what the one-thread test environment (tasks.test_env) removes
            '2 threads': {'OMP_NUM_THREADS': '2', 'OPENBLAS_NUM_THREADS': '2', 'MKL_NUM_THREADS': '2'}}


def run(out: Path, names, settings):
    "Execute the notebooks `names` under each of `settings` into OUT/SETTING/; what they write to sample_outputs/ is put back."
    before = nbcheck.contents(nbcheck.WRITTEN)
    for setting in settings:
        extra = SETTINGS[setting]
        (out/setting).mkdir(parents=True, exist_ok=True)
        for path in nbcheck.notebook_paths(names):
            print(f'{setting}: {path.name}', flush=True)
            (out/setting/path.name).write_text(nbcheck.execute(path, {**tasks.test_env(), **extra}))
    nbcheck.restore(before)


def differences(out: Path, against: str):
    "(setting, notebook, cell, relative move of its numbers or None, example) for each cell whose outputs differ from `against`."
    for d in sorted(p for p in out.iterdir() if p.is_dir() and p.name != against):
        for fresh in sorted(d.glob('*.ipynb')):
            ref = ROOT/'nbs'/fresh.name if against == 'committed' else out/against/fresh.name
            if not ref.exists(): continue
            for i, (a, b) in enumerate(zip(json.loads(ref.read_text())['cells'], json.loads(fresh.read_text())['cells'])):
                if a.get('outputs') == b.get('outputs'): continue
                found = nbcheck.numbers_moved(a.get('outputs', []), b.get('outputs', []))
                yield d.name, fresh.name, i, *(found or (None, ''))


def compare(out: Path, against: str):
    "Each setting's notebooks against the committed ones or against the run with the `default` setting."
    print(f'| setting | notebook | cell | what differs from {against} | largest relative difference |\n|---|---|---:|---|---:|')
    for setting, name, i, need, pair in differences(out, against):
        what = 'text (not only numbers)' if need is None else f'numbers ({pair})'
        print(f'| {setting} | {name} | {i} | {what} | {"" if need is None else f"{need:.1e}"} |')


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('cmd', choices=['run', 'compare'])
    ap.add_argument('--out', type=Path, default=Path('/tmp/calibkit-processors'))
    ap.add_argument('--against', default='default', help="compare with the run of this setting, or 'committed'")
    ap.add_argument('--settings', default=','.join(SETTINGS), help=f'comma-separated, of {", ".join(SETTINGS)}')
    ap.add_argument('notebooks', nargs='*')
    a = ap.parse_intermixed_args()
    if a.cmd == 'run': run(a.out, a.notebooks, a.settings.split(','))
    else: compare(a.out, a.against)
