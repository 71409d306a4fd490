#!/usr/bin/env python3
"""calibkit's task runner: needs only Python >= 3.10 and the package registries.

    python3 tasks.py demo    # set up .venv, install calibkit, run the main job (`calibkit demo`) on the bundled data
    python3 tasks.py test    # set up .venv, then every check CI runs (clean, export, notebooks, pytest)
    python3 tasks.py samples # re-render the charts and tables the notebooks write to sample_outputs/
    python3 tasks.py setup   # only create/update .venv
    python3 tasks.py readme  # regenerate README.md from nbs/index.ipynb

The environment lives in `.venv/` next to this file; it is reinstalled only when the files that
define it change (pyproject.toml, tests/plugin_pkg/pyproject.toml).
"""
import hashlib, json, os, shutil, subprocess, sys, venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT/'.venv'
BIN = VENV/('Scripts' if os.name == 'nt' else 'bin')
STAMP = VENV/'.calibkit-install-stamp'
# the study/tutorial notebooks `samples` executes headless; each writes its charts and tables to sample_outputs/
DEMO_NOTEBOOKS = ['41_studies.ipynb', '90_tutorial_plugins.ipynb', '91_tutorial_twitter_pos.ipynb', '92_tutorial_coref.ipynb',
                  '93_tutorial_seq2seq.ipynb', '94_tutorial_sparse_tagsets.ipynb']
# what must not change when notebooks are cleaned and the library is exported
GENERATED = ['nbs', 'calibkit']


def run(*cmd, **kw):
    print('$', ' '.join(map(str, cmd)), flush=True)
    return subprocess.run([str(c) for c in cmd], cwd=kw.pop('cwd', ROOT), **kw)


def check(*cmd, **kw):
    r = run(*cmd, **kw)
    if r.returncode: sys.exit(r.returncode)


def install_inputs():
    "Files whose content defines the environment."
    return [ROOT/'pyproject.toml', *sorted((ROOT/'tests').glob('*/pyproject.toml'))]


def setup():
    "Create `.venv` and install calibkit (editable, with dev extras) and the test plugin packages."
    if sys.version_info < (3, 10): sys.exit(f'calibkit needs Python >= 3.10, this is {sys.version.split()[0]}')
    if not (BIN/'python').exists():
        print(f'creating {VENV}', flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256(b''.join(p.read_bytes() for p in install_inputs())).hexdigest()
    if STAMP.exists() and STAMP.read_text() == digest: return
    pkgs = ['-e', f'{ROOT}[dev,dask,hf]'] + [a for p in install_inputs()[1:] for a in ('-e', str(p.parent))]
    check(BIN/'python', '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', *pkgs)
    STAMP.write_text(digest)


def snapshot(paths):
    "Content hash of every file under `paths` (tracked or not): detects what a tool rewrote."
    out = {}
    for top in paths:
        for p in sorted((ROOT/top).rglob('*')):
            if p.is_file() and '__pycache__' not in p.parts and '.ipynb_checkpoints' not in p.parts:
                out[str(p.relative_to(ROOT))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def unchanged_by(tool, *args):
    "Run an nbdev tool and fail if it changed any file: notebooks must be committed clean and exported."
    before = snapshot(GENERATED)
    check(BIN/tool, *args)
    after = snapshot(GENERATED)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        sys.exit(f'{tool} changed {len(changed)} file(s): {", ".join(changed)}\n'
                 f'run `.venv/bin/{tool}` and commit the result')
    print(f'ok: {tool} left the tree unchanged', flush=True)


def browser():
    "Install Debian's chromium and chromedriver for the report's browser test when missing and possible."
    if shutil.which('chromium') and shutil.which('chromedriver'): return
    if not (shutil.which('apt-get') and hasattr(os, 'geteuid') and os.geteuid() == 0):
        print('note: chromium/chromedriver missing and apt-get unavailable (or not root): the browser test will skip', flush=True)
        return
    env = {**os.environ, 'DEBIAN_FRONTEND': 'noninteractive'}
    ok = run('apt-get', 'update', '-qq', env=env).returncode == 0 and \
        run('apt-get', 'install', '-y', '-qq', 'chromium', 'chromium-driver', env=env).returncode == 0
    if not ok: print('note: installing chromium failed: the browser test will skip', flush=True)


def test():
    setup()
    browser()
    env = {**os.environ, 'CALIBKIT_QUIET': '1'}
    unchanged_by('nbdev-clean')
    unchanged_by('nbdev-export')
    check(BIN/'nbdev-test', '--n-workers', '2', '--timing', env=env)
    r = run(BIN/'python', '-m', 'pytest', 'tests', env=env)
    if r.returncode == 5: sys.exit('pytest collected no tests: that is a failure here')
    sys.exit(r.returncode)


def readme_text():
    "README.md as rendered from nbs/index.ipynb: markdown cells as they are, code cells as python blocks."
    cells = json.loads((ROOT/'nbs'/'index.ipynb').read_text())['cells']
    parts = []
    for c in cells:
        src = ''.join(c['source']).strip()
        if src.startswith('#|') or not src: continue
        parts.append(src if c['cell_type'] == 'markdown' else f'```python\n{src}\n```')
    parts.append('<!-- generated from nbs/index.ipynb by `python3 tasks.py readme`: edit the notebook -->')
    return '\n\n'.join(parts) + '\n'


def readme():
    (ROOT/'README.md').write_text(readme_text())


def demo():
    "The main job: every bundled study as a calibration report in sample_outputs/demo/."
    setup()
    out = ROOT/'sample_outputs'/'demo'
    check(BIN/'calibkit', 'demo', '--out', out, '--force')
    # a picture of one report, taken in a real browser when one is installed (`python3 tasks.py test` installs it)
    run(BIN/'python', ROOT/'tests'/'browser.py', out/'synthetic'/'report.html', ROOT/'sample_outputs'/'demo_report.png')
    print(f'done: open {out}/*/report.html')


def samples():
    "Re-render every chart and table the study and tutorial notebooks write to sample_outputs/."
    setup()
    for nb in DEMO_NOTEBOOKS:
        check(BIN/'nbdev-test', '--do-print', '--timing', ROOT/'nbs'/nb)
    print(f'done: charts and tables are in {ROOT/"sample_outputs"}')


if __name__ == '__main__':
    tasks = dict(setup=setup, test=test, demo=demo, samples=samples, readme=readme)
    if len(sys.argv) != 2 or sys.argv[1] not in tasks: sys.exit(__doc__)
    tasks[sys.argv[1]]()
