"""How far trained-model numbers move between processors: the notebooks executed under other BLAS kernels and
SIMD widths, compared with their committed outputs (made on the default code paths of the machine that ran them).

    .venv/bin/python bench/processors.py run --out /tmp/procs 12_models_taggers.ipynb ...   # execute under each setting
    .venv/bin/python bench/processors.py compare --out /tmp/procs [--against committed]     # the table in bench/README.md
    .venv/bin/python bench/processors.py mark --out /tmp/procs                              # the `#| tolerance:` lines

`run` executes each notebook once per setting (fresh kernels, the test environment) and saves it as
OUT/SETTING/NB.ipynb. `compare` reads them and, per notebook cell whose outputs differ from the run with the
`default` setting (or from the committed notebook), prints the largest relative difference of its numbers beyond
one unit of their last displayed digit (what `#| tolerance:` must allow, tools/nbcheck.py) or says that the cell's
text differs apart from its numbers. `mark` gives each such cell the tolerance it needs, with a margin.
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
    "(setting, notebook, cell, needed tolerance or None, example) for each cell whose outputs differ from `against`."
    for d in sorted(p for p in out.iterdir() if p.is_dir() and p.name != against):
        for fresh in sorted(d.glob('*.ipynb')):
            ref = ROOT/'nbs'/fresh.name if against == 'committed' else out/against/fresh.name
            if not ref.exists(): continue
            for i, (a, b) in enumerate(zip(json.loads(ref.read_text())['cells'], json.loads(fresh.read_text())['cells'])):
                if a.get('outputs') == b.get('outputs'): continue
                found = nbcheck.needed_tolerance(a.get('outputs', []), b.get('outputs', []))
                yield d.name, fresh.name, i, *(found or (None, ''))


def compare(out: Path, against: str):
    "Each setting's notebooks against the committed ones or against the run with the `default` setting."
    print(f'| setting | notebook | cell | what differs from {against} | largest relative difference |\n|---|---|---:|---|---:|')
    for setting, name, i, need, pair in differences(out, against):
        what = 'text (not only numbers)' if need is None else f'numbers ({pair})'
        print(f'| {setting} | {name} | {i} | {what} | {"" if need is None else f"{need:.1e}"} |')


# the tolerances a cell can be given: the first at least twice the largest difference measured (other machines may
# differ a little more than the code paths this one can take); 1 checks only a cell's text
LADDER = (1e-9, 1e-6, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0)


def mark(out: Path):
    "Give each cell whose numbers moved (against the committed notebooks or the default run) a `#| tolerance:` line."
    need = {}
    for against in ('committed', 'default'):
        for setting, name, i, r, pair in differences(out, against):
            if r is None: print(f'{name} cell {i} ({setting} vs {against}): text differs, no tolerance can cover it')
            else: need[name, i] = max(need.get((name, i), 0.0), r)
    for (name, i), r in sorted(need.items()):
        tol = next((t for t in LADDER if t >= 2 * r), LADDER[-1] if LADDER[-1] >= r else None)
        if tol is None:
            print(f'{name} cell {i}: {r:.1e} is beyond every tolerance; not marked')
            continue
        if tol < 2 * r: print(f'{name} cell {i}: {r:.1e} gets the largest tolerance, {tol:g}, with less than a 2× margin')
        path = ROOT/'nbs'/name
        nb = json.loads(path.read_text())
        cell = nb['cells'][i]
        src = ''.join(cell['source'])
        old = nbcheck.directives(cell).get('tolerance')
        if old is not None and float(old) >= tol: continue
        lines = [l for l in src.splitlines(True) if not l.startswith('#| tolerance:')]
        cell['source'] = [f'#| tolerance: {tol:g}\n'] + lines
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + '\n')
        print(f'{name} cell {i}: largest difference {r:.1e}, marked #| tolerance: {tol:g}')


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('cmd', choices=['run', 'compare', 'mark'])
    ap.add_argument('--out', type=Path, default=Path('/tmp/calibkit-processors'))
    ap.add_argument('--against', default='default', help="compare with the run of this setting, or 'committed'")
    ap.add_argument('--settings', default=','.join(SETTINGS), help=f'comma-separated, of {", ".join(SETTINGS)}')
    ap.add_argument('notebooks', nargs='*')
    a = ap.parse_intermixed_args()
    if a.cmd == 'run': run(a.out, a.notebooks, a.settings.split(','))
    elif a.cmd == 'compare': compare(a.out, a.against)
    else: mark(a.out)
