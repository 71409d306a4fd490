#!/usr/bin/env python3
"""calibkit's task runner: needs only Python >= 3.10 and the package registries.

    python3 tasks.py demo              # set up .venv, install calibkit, run the main job (`calibkit demo`) into demo-output/
    python3 tasks.py test              # set up .venv, then every check CI runs (clean, export, notebooks, docs, pytest)
    python3 tasks.py notebooks [NB..]  # execute notebooks (default: all of nbs/) and write their outputs back
    python3 tasks.py check-notebooks [NB..]  # re-execute notebooks, fail on a stale output (a step of `test`; tools/nbcheck.py)
    python3 tasks.py docs              # build the documentation site into _docs/ (Sphinx + myst-nb, offline)
    python3 tasks.py samples           # re-render the charts and tables the notebooks write to sample_outputs/
    python3 tasks.py train [NAME..]    # retrain committed artifacts (default: all) into calibkit/data/artifacts/
    python3 tasks.py check-artifacts [NAME..]  # retrain each artifact at its small size, compare with the reference (a step of `test`)
    python3 tasks.py setup             # only create/update .venv
    python3 tasks.py readme            # regenerate README.md from nbs/index.ipynb

The environment lives in `.venv/` next to this file; it is reinstalled only when the files that
define it change (pyproject.toml, tests/plugin_pkg/, the torch pin below). The test suite's example
plugin is installed apart, into `.venv-testplugins/`, which only test runs put on PYTHONPATH: the
demo environment (`calibkit plugins` after `python3 tasks.py demo`) does not see it.
"""
import hashlib, json, os, shutil, subprocess, sys, time, venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
NBS = ROOT/'nbs'
VENV = ROOT/'.venv'
BIN = VENV/('Scripts' if os.name == 'nt' else 'bin')
STAMP = VENV/'.calibkit-install-stamp'
SETUP_LOG = VENV/'setup.log'
TESTPLUGINS = ROOT/'.venv-testplugins'
PLUGIN_PKG = ROOT/'tests'/'plugin_pkg'
# The development setup pins torch to the CPU wheel these machines carry (any other spec downloads GBs of
# CUDA); it is a constraint of this environment, not of the package (the `hf` extra states a range).
DEV_CONSTRAINTS = ['torch==2.13.0']
EXTRAS = 'dev,all,docs'
# the study/tutorial notebooks `samples` executes headless; each writes its charts and tables to sample_outputs/
# (the tutorials there because notebook runs set CALIBKIT_TUTORIAL_OUT to it: tools/nbcheck.py)
DEMO_NOTEBOOKS = ['41_studies.ipynb', '90_tutorial_plugins.ipynb', '91_tutorial_twitter_pos.ipynb', '92_tutorial_coref.ipynb',
                  '93_tutorial_seq2seq.ipynb', '94_tutorial_sparse_tagsets.ipynb', '95_tutorial_generation.ipynb']
# what must not change when notebooks are cleaned and the library is exported
GENERATED = ['nbs', 'calibkit']
ONE_THREAD = {'OMP_NUM_THREADS': '1', 'OPENBLAS_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1'}
# pytest in `test`: two processes (pytest-xdist; the machines have 2 cores), each test file on one of them so that a
# file's module-scoped fixtures (a venv, a browser, trained models) are made once, the files in the order collected
# (the slowest first: tests/conftest.py); the slowest tests are listed at the end
PYTEST_WORKERS = 2
PYTEST_ARGS = ['-n', str(PYTEST_WORKERS), '--dist', 'loadfile', '--no-loadscope-reorder', '--durations', '25']


def run(*cmd, **kw):
    print('$', ' '.join(map(str, cmd)), flush=True)
    return subprocess.run([str(c) for c in cmd], cwd=kw.pop('cwd', ROOT), **kw)


def check(*cmd, **kw):
    r = run(*cmd, **kw)
    if r.returncode: sys.exit(r.returncode)


def step(msg, t0):
    print(f'{msg} ({time.monotonic() - t0:.0f} s)', flush=True)


def logged(cmd, log, *, env=None, on_line=None):
    "Run `cmd` with its output appended to `log` (not the console); `on_line` sees each line. Returns the exit code."
    with open(log, 'a') as f:
        f.write(f'$ {" ".join(map(str, cmd))}\n'); f.flush()
        p = subprocess.Popen([str(c) for c in cmd], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors='replace')
        for line in p.stdout:
            f.write(line)
            if on_line: on_line(line.rstrip())
        return p.wait()


def fail_with_log(msg, log, n=30):
    lines = Path(log).read_text(errors='replace').splitlines()
    sys.exit('\n'.join([*lines[-n:], f'{msg}: the full log is {log}']))


def install_inputs():
    "Files whose content defines the environment."
    return [ROOT/'pyproject.toml', PLUGIN_PKG/'pyproject.toml', *sorted(PLUGIN_PKG.glob('*.py'))]


def pip_install(*args) -> list:
    # --no-compile: no bytecode for the thousands of modules installed (torch, transformers) that no run imports; Python
    # writes it for those it does import, on their first import (pip's compiling was most of torch's install time)
    return [BIN/'python', '-m', 'pip', 'install', '--disable-pip-version-check', '--progress-bar', 'off', '--no-compile', *args]


def pip(*args, what):
    "pip install with one console line per package it collects and per phase (with timing); the full output goes to .venv/setup.log."
    t0, seen = time.monotonic(), [0]

    def show(line):
        if line.startswith(('Collecting ', 'Processing ')):
            seen[0] += 1
            print(f'  {line.split()[0].lower()} {line.split()[1]}', flush=True)
        elif line.startswith('Installing collected packages'):
            print(f'  installing {len(line.split(":", 1)[1].split(","))} package(s) ...', flush=True)
        elif line.startswith('ERROR'):
            print(f'  {line}', flush=True)
    print(f'{what} ...', flush=True)
    rc = logged(pip_install(*args), SETUP_LOG, on_line=show)
    if rc: fail_with_log(f'installing {what} failed', SETUP_LOG)
    step(f'  done: {what} ({seen[0]} new or updated)', t0)


def setup():
    "Create `.venv`, install calibkit (editable, with dev and all extras) and, into .venv-testplugins, the test plugin."
    if sys.version_info < (3, 10): sys.exit(f'calibkit needs Python >= 3.10, this is {sys.version.split()[0]}')
    if not (BIN/'python').exists():
        print(f'creating {VENV}', flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256(b''.join([p.read_bytes() for p in install_inputs()] + [' '.join(DEV_CONSTRAINTS).encode()])).hexdigest()
    if STAMP.exists() and STAMP.read_text() == digest: return
    t0 = time.monotonic()
    print(f'setting up {VENV} (the first time takes a few minutes; full log: {SETUP_LOG})', flush=True)
    constraints = VENV/'constraints.txt'
    constraints.write_text('\n'.join(DEV_CONSTRAINTS) + '\n')
    pip('--upgrade', 'pip', what='pip')
    # the test suite's example plugin is built (pip's isolated build: seconds, mostly waiting) while the rest installs
    shutil.rmtree(TESTPLUGINS, ignore_errors=True)
    plugin_log = VENV/'setup-plugin.log'
    with open(plugin_log, 'w') as f:
        plugin = subprocess.Popen([str(c) for c in pip_install('--no-deps', '--target', TESTPLUGINS, PLUGIN_PKG)], cwd=ROOT,
                                  stdout=f, stderr=subprocess.STDOUT)
    pip('-c', constraints, *DEV_CONSTRAINTS, what='the development torch wheel (CPU)')
    pip('-c', constraints, '-e', f'{ROOT}[{EXTRAS}]', what=f'calibkit (editable) with extras {EXTRAS}')
    # an older setup installed the example plugin into .venv: remove it, it belongs to the test runs only
    if list(VENV.glob('lib*/*/site-packages/calibkit_example_plugin-*.dist-info')):
        logged([BIN/'python', '-m', 'pip', 'uninstall', '-y', 'calibkit-example-plugin'], SETUP_LOG)
    if plugin.wait(): fail_with_log('installing the test suite\'s example plugin failed', plugin_log)
    shutil.rmtree(PLUGIN_PKG/'build', ignore_errors=True)
    print(f'  done: the test suite\'s example plugin into {TESTPLUGINS.name}/ (built beside the installs above)', flush=True)
    STAMP.write_text(digest)
    step('setup done', t0)


def test_env(**extra):
    """The environment of every test run (pytest, notebook execution): quiet, deterministic (one BLAS/OpenMP thread:
    a parallel sum's digits depend on the thread count), the example plugin importable."""
    env = {**os.environ, 'CALIBKIT_QUIET': '1', 'PYTHONHASHSEED': '0', 'TZ': 'UTC', **ONE_THREAD, **extra}
    # PYTHONDONTWRITEBYTECODE (set by some shells and CI images) stops Python caching the bytecode of what it imports,
    # and setup installs with --no-compile: then every process of a run (notebook kernels, the CLI tests' hundreds of
    # `calibkit` commands) compiles numpy, pandas, scipy, scikit-learn, Altair and torch from source again, ~9 s of
    # processor time each. A test run caches it, in .venv/pycache only (never beside the sources).
    if env.pop('PYTHONDONTWRITEBYTECODE', None): env.setdefault('PYTHONPYCACHEPREFIX', str(VENV/'pycache'))
    env['PYTHONPATH'] = os.pathsep.join([str(TESTPLUGINS), *filter(None, [os.environ.get('PYTHONPATH')])])
    return env


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
    "Install Debian's chromium and chromedriver for the browser checks when missing and possible (as root, with apt-get)."
    if shutil.which('chromium') and shutil.which('chromedriver'): return
    if not (shutil.which('apt-get') and hasattr(os, 'geteuid') and os.geteuid() == 0):
        print('note: chromium/chromedriver missing and apt-get unavailable (or not root): the browser checks will skip', flush=True)
        return
    log = VENV/'apt.log'
    log.write_text('')
    env = {**os.environ, 'DEBIAN_FRONTEND': 'noninteractive'}
    for what, cmd in [('apt-get update', ['apt-get', 'update']),
                      ("installing Debian's chromium and chromium-driver",
                       ['apt-get', 'install', '-y', '--no-install-recommends', 'chromium', 'chromium-driver'])]:
        t0 = time.monotonic()
        print(f'{what} ... (log: {log})', flush=True)
        if logged(cmd, log, env=env):
            print('\n'.join(log.read_text(errors='replace').splitlines()[-20:]))
            print(f'note: {what} failed (log: {log}): the browser checks will skip', flush=True)
            return
        step(f'  done: {what}', t0)


def in_venv(task, *args):
    "Run a task of this file with the venv's python (it needs nbclient and nbdev) in the test environment."
    setup()
    check(BIN/'python', __file__, task, *args, env=test_env())


def _notebooks(mode, *names):
    "Internal: what `notebooks` and `check-notebooks` run inside .venv (tools/nbcheck.py), in the test environment."
    from tools.nbcheck import run_notebooks
    run_notebooks(mode == 'write', names, test_env())


def notebooks(*names):
    "Execute notebooks (default all) and write them back with normalised outputs in nbdev-clean's canonical form."
    in_venv('_notebooks', 'write', *names)


def check_notebooks(*names):
    "Re-execute notebooks (default all) and fail, naming the notebook and its first stale cell, when an output changed."
    in_venv('_notebooks', 'check', *names)


def _train(*names):
    "Internal: what `train` runs inside .venv: each recipe at every size, written with its manifest."
    from calibkit.artifacts import RECIPES, train_artifact, write_artifact
    from calibkit.config import ARTIFACT_SIZES
    for name in names or RECIPES:
        for size in ARTIFACT_SIZES:
            t0 = time.monotonic()
            path = write_artifact(name, train_artifact(name, size), size)
            step(f'trained {name} ({size}): {path.relative_to(ROOT)}, {path.stat().st_size / 1e6:.2f} MB', t0)


def train(*names):
    "Retrain the committed artifacts `names` (default: all of calibkit.artifacts.RECIPES) at every size; commit them."
    in_venv('_train', *names)


def _check_artifacts(*names):
    "Internal: what `check-artifacts` runs inside .venv."
    from calibkit.artifacts import RECIPES, compare_outputs, load_artifact, train_artifact
    failed = []
    for name in names or RECIPES:
        t0 = time.monotonic()
        load_artifact(name)                       # the full artifact is intact (its sha256)
        problems = compare_outputs(train_artifact(name, 'small'), load_artifact(name, 'small'), RECIPES[name])
        step(f"  {'ok  ' if not problems else 'FAIL'} {name}: retrained small, compared with the reference", t0)
        failed += [f'{name}: {p}' for p in problems]
    if failed:
        sys.exit('\n'.join(failed + ['the training code changed what a model computes beyond its stated tolerance: '
                                      'retrain with `python3 tasks.py train NAME` and commit, or find the change']))


def check_artifacts(*names):
    "Retrain each committed artifact at its small size and compare with its committed small reference (tolerances)."
    in_venv('_check_artifacts', *names)


def docs():
    "Build the documentation site into _docs/ (docs/build.py: Sphinx + myst-nb, no network)."
    setup()
    if not (ROOT/'docs'/'build.py').exists(): sys.exit('docs/build.py is missing: no documentation site to build')
    t0 = time.monotonic()
    check(BIN/'python', ROOT/'docs'/'build.py', env=test_env())
    step(f'site built into {ROOT/"_docs"}', t0)


def notebooks_docs_and_artifacts():
    """check-notebooks with the site built and the artifacts retrained beside it, each of those two in a process of its
    own: the site reads only the committed notebooks and the retrain check none, and the check's two notebook workers
    leave a core idle at times, as the site's one process did (one after the other the three took ~306 s + ~98 s, the
    artifacts hidden under the site). Their output is shown when all three are done; any failure fails the step."""
    logs = {name: VENV/f'{name}.log' for name in ('docs', 'check-artifacts')}
    side = {}
    for name, args in (('docs', [ROOT/'docs'/'build.py']), ('check-artifacts', [__file__, '_check_artifacts'])):
        with open(logs[name], 'w') as f:
            side[name] = subprocess.Popen([str(BIN/'python'), *map(str, args)], cwd=ROOT, env=test_env(), stdout=f,
                                          stderr=subprocess.STDOUT)
    t0 = time.monotonic()
    try: check_notebooks()
    finally:
        codes = {name: p.wait() for name, p in side.items()}
        for name in side: print(logs[name].read_text(), end='', flush=True)
    step(f'site built into {ROOT/"_docs"}, artifacts checked', t0)
    failed = [name for name, code in codes.items() if code]
    if failed: sys.exit(f'{" and ".join(failed)} failed (output above)')


class Steps:
    "The steps of `test`, each timed as it ends: wall clock, and the processor time of this process and its children."
    def __init__(self): self.done = []

    def __call__(self, name, fn, *args):
        t0, c0 = time.monotonic(), os.times()
        fn(*args)
        c1 = os.times()
        cpu = sum(c1[:4]) - sum(c0[:4])           # user and system, own and waited-for children's
        self.done.append((name, time.monotonic() - t0, cpu))
        print(f'step {name}: {self.done[-1][1]:.0f} s ({cpu:.0f} s of processor time)', flush=True)

    def summary(self):
        return 'steps so far: ' + ', '.join(f'{n} {w:.0f} s' for n, w, _ in self.done) + \
            f'; {sum(w for _, w, _ in self.done):.0f} s in all (pytest reports its own time last)'


def test():
    "Every check CI runs, in this order; pytest with PYTEST_WORKERS processes, each test file on one of them."
    steps = Steps()
    steps('setup', setup)
    steps('browser', browser)
    steps('nbdev-clean', unchanged_by, 'nbdev-clean')
    steps('nbdev-export', unchanged_by, 'nbdev-export')
    steps('check-notebooks, with docs and check-artifacts beside it', notebooks_docs_and_artifacts)
    print(steps.summary(), flush=True)
    r = run(BIN/'python', '-m', 'pytest', 'tests', *PYTEST_ARGS, env=test_env())
    if r.returncode == 5: sys.exit('pytest collected no tests: that is a failure here')
    sys.exit(r.returncode)


def readme_text():
    "README.md as rendered from nbs/index.ipynb: markdown cells as they are, code cells as python blocks (outputs omitted)."
    cells = json.loads((NBS/'index.ipynb').read_text())['cells']
    parts = []
    for c in cells:
        src = ''.join(c['source']).strip()
        if src.startswith('#|') or not src: continue
        parts.append(src if c['cell_type'] == 'markdown' else f'```python\n{src}\n```')
    parts.append('<!-- generated from nbs/index.ipynb by `python3 tasks.py readme`: edit the notebook -->')
    return '\n\n'.join(parts) + '\n'


def readme():
    (ROOT/'README.md').write_text(readme_text())


DEMO_OUT = ROOT/'demo-output'      # untracked (.gitignore): the demo's results depend on the machine's processor


def demo():
    "The main job: every bundled study as a calibration report in demo-output/ (not tracked by git)."
    setup()
    check(BIN/'calibkit', 'demo', '--out', DEMO_OUT, '--force')
    # a picture of one report, taken in a real browser when one is installed (`python3 tasks.py test` installs it)
    run(BIN/'python', ROOT/'tests'/'browser.py', DEMO_OUT/'synthetic'/'report.html', DEMO_OUT/'report.png')
    print(f'done: open {DEMO_OUT}/index.html')


def samples():
    "Re-render every chart and table the study and tutorial notebooks write to sample_outputs/."
    notebooks(*DEMO_NOTEBOOKS)
    print(f'done: charts and tables are in {ROOT/"sample_outputs"}')


TASKS = {'setup': setup, 'test': test, 'demo': demo, 'samples': samples, 'readme': readme, 'docs': docs,
         'notebooks': notebooks, 'check-notebooks': check_notebooks, 'train': train, 'check-artifacts': check_artifacts,
         '_notebooks': _notebooks, '_train': _train, '_check_artifacts': _check_artifacts}

NAMED = {'notebooks', 'check-notebooks', '_notebooks', 'train', '_train', 'check-artifacts', '_check_artifacts'}   # tasks taking names

if __name__ == '__main__':
    if len(sys.argv) < 2 or sys.argv[1] not in TASKS or (sys.argv[2:] and sys.argv[1] not in NAMED): sys.exit(__doc__)
    TASKS[sys.argv[1]](*sys.argv[2:])
