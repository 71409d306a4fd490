"""The package a user installs: the real wheel, built and installed into a fresh virtual environment (not the
checkout), runs the demo and a tutorial on its bundled data; the install stays light; the sdist runs its own tests.

Slow-ish (a build and a venv whose dependencies come from the registry or pip's cache, and one tutorial executed
there): ~2-3 minutes.
"""
import os, subprocess, sys, tarfile, venv, zipfile
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTPLUGINS = ROOT/'.venv-testplugins'
MAX_WHEEL_MB = 25


def clean_env(**extra):
    """The user's environment: no test-only PYTHONPATH, installed plugins loaded as usual; and not the test runs' bytecode
    folder (tasks.test_env), which would keep the bytecode of every temporary venv after the venv is gone. Bytecode is
    written beside the venv's modules (it goes with the venv) even where PYTHONDONTWRITEBYTECODE is set: else each of
    the venv's processes compiles numpy, pandas, scikit-learn and Altair again (about 10 s of processor time each)."""
    drop = ('PYTHONPATH', 'IN_TEST', 'PYTHONHOME', 'PYTHONPYCACHEPREFIX', 'PYTHONDONTWRITEBYTECODE')
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return {**env, 'CALIBKIT_QUIET': '1', **extra}


def sh(*cmd, cwd=None, env=None, timeout=900):
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env or clean_env(), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f'{" ".join(map(str, cmd))} exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}'
    return r


# `dist` (tests/conftest.py): the sdist and the wheel built from it, once per run (tests/test_project.py reads it too)
@pytest.fixture(scope='module')
def wheel_venv(dist, tmp_path_factory):
    "A fresh venv with only the wheel installed (its dependencies from the registry / pip's cache); its bin folder."
    d = tmp_path_factory.mktemp('wheelvenv')/'venv'
    with pytest.MonkeyPatch.context() as m:
        m.delenv('PYTHONPYCACHEPREFIX', raising=False)      # ensurepip's bytecode goes with the venv (see clean_env)
        venv.EnvBuilder(with_pip=True).create(d)
    bindir = d/('Scripts' if os.name == 'nt' else 'bin')
    sh(bindir/'python', '-m', 'pip', 'install', '--disable-pip-version-check', '--progress-bar', 'off', '--no-compile', dist[0])
    return bindir


def test_wheel_carries_the_data_and_the_licences_and_is_small(dist):
    wheel = dist[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {str(p.relative_to(ROOT)) for p in (ROOT/'calibkit'/'data').rglob('*') if p.is_file() and '__pycache__' not in p.parts}
    assert data and data <= names, f'bundled data missing from the wheel: {sorted(data - names)[:10]}'
    assert {f'calibkit/data/artifacts/{n}.npz' for n in ('seq2seq_ewt', 'generation_ewt')} <= names   # trained outputs
    lic = {n.split('/licenses/', 1)[1] for n in names if '.dist-info/licenses/' in n}
    assert {'LICENSE', 'calibkit/data/litbank/LICENSE', 'calibkit/data/ud_ewt/LICENSE.txt',
            'calibkit/data/calibration_metric/LICENSE.txt', 'calibkit/data/twpos/README.txt', 'calibkit/fonts/LICENSE'} <= lic
    assert {'calibkit/fonts/CalibkitSans-Regular.ttf', 'calibkit/fonts/CalibkitSans-Bold.ttf', 'calibkit/fonts/ranges.txt'} <= names
    assert not any(n.startswith('tests/') for n in names)
    assert wheel.stat().st_size < MAX_WHEEL_MB * 1e6, f'{wheel.stat().st_size / 1e6:.1f} MB'


def test_license_is_the_complete_apache_2_text():
    text = (ROOT/'LICENSE').read_text()
    assert text.strip().startswith('Apache License\n                           Version 2.0, January 2004')
    for section in ('1. Definitions.', '4. Redistribution.', '9. Accepting Warranty or Additional Liability.',
                    'END OF TERMS AND CONDITIONS', 'APPENDIX: How to apply the Apache License to your work.'):
        assert section in text
    assert len(text.splitlines()) == 202


def test_metadata_says_what_the_package_is(dist):
    zf = zipfile.ZipFile(dist[0])
    meta = zf.read(next(n for n in zf.namelist() if n.endswith('.dist-info/METADATA'))).decode()
    head = meta.split('\n\n', 1)[0].splitlines()
    assert 'License-Expression: Apache-2.0' in head
    for v in ('3.10', '3.11', '3.12', '3.13'): assert f'Classifier: Programming Language :: Python :: {v}' in head
    urls = {l.split(': ', 1)[1].split(',')[0] for l in head if l.startswith('Project-URL: ')}
    assert {'Docs', 'Issues', 'Repository'} <= urls     # Docs: PEP 753's alias of Documentation
    reqs = [l.split(': ', 1)[1] for l in head if l.startswith('Requires-Dist: ')]
    core = [r for r in reqs if 'extra ==' not in r]
    for heavy in ('pyarrow', 'sklearn-crfsuite', 'torch', 'dask', 'transformers'):
        assert not any(r.startswith(heavy) for r in core), f'{heavy} must be an extra, not a core dependency'
    assert not any('==' in r.split(';')[0] for r in reqs), f'exact pins belong to the development setup (tasks.py): {reqs}'
    extras = {l.split(': ', 1)[1] for l in head if l.startswith('Provides-Extra: ')}
    assert {'parquet', 'crf', 'dask', 'hf', 'studies', 'all', 'dev'} <= extras
    assert 'Requires-Dist: pyarrow>=14; extra == "parquet"' in head
    assert any(l.startswith('Requires-Dist: torch<3,>=2.1; extra == "hf"') for l in head)


def test_installed_wheel_runs_the_demo_without_the_checkout(wheel_venv, tmp_path):
    py = wheel_venv/'python'
    where = sh(py, '-c', 'import calibkit; print(calibkit.__file__)', cwd=tmp_path).stdout.strip()
    assert str(ROOT) not in where and 'site-packages' in where, where
    assert 'usage: calibkit' in sh(wheel_venv/'calibkit', '--help', cwd=tmp_path).stdout
    sh(wheel_venv/'calibkit', 'demo', '--only', 'synthetic', '--out', tmp_path/'out', cwd=tmp_path)
    report = tmp_path/'out'/'synthetic'/'report.html'
    assert report.is_file() and '<svg' in report.read_text()
    assert "@font-face{font-family:'Calibkit Sans'" in report.read_text()     # the installed package serves its font


def test_python_m_calibkit_version(wheel_venv, tmp_path):
    import calibkit
    out = sh(wheel_venv/'python', '-m', 'calibkit', '--version', cwd=tmp_path).stdout
    assert calibkit.__version__ in out


def test_core_install_is_light(wheel_venv, tmp_path):
    "`pip install calibkit` brings the core only: the study and out-of-core dependencies are extras."
    code = 'import importlib.metadata as m; print("\\n".join(sorted(d.metadata["Name"].lower() for d in m.distributions())))'
    installed = set(sh(wheel_venv/'python', '-c', code, cwd=tmp_path).stdout.split())
    assert {'calibkit', 'numpy', 'pandas', 'scikit-learn', 'altair'} <= installed
    assert not installed & {'sklearn-crfsuite', 'python-crfsuite', 'torch', 'transformers', 'dask', 'distributed'}


def test_example_plugin_is_listed_only_in_the_test_environment(wheel_venv, tmp_path):
    "The demo environment does not see tests/plugin_pkg; the test runs (PYTHONPATH=.venv-testplugins) do."
    assert 'first_char' not in sh(wheel_venv/'calibkit', 'plugins', cwd=tmp_path).stdout
    assert (TESTPLUGINS/'calibkit_example_plugin.py').exists(), f'{TESTPLUGINS} is missing: `python3 tasks.py setup` installs the example plugin there'
    listed = sh(wheel_venv/'calibkit', 'plugins', cwd=tmp_path, env=clean_env(PYTHONPATH=str(TESTPLUGINS))).stdout
    assert 'first_char' in listed and 'temperature' in listed
    import importlib.util
    spec = importlib.util.spec_from_file_location('tasks', ROOT/'tasks.py')
    tasks = importlib.util.module_from_spec(spec); spec.loader.exec_module(tasks)
    assert str(TESTPLUGINS) in tasks.test_env()['PYTHONPATH'].split(os.pathsep)
    assert not list((ROOT/'.venv').glob('lib*/*/site-packages/calibkit_example_plugin-*.dist-info')), \
        'the example plugin is installed into .venv: run `python3 tasks.py setup`'


def test_sdist_runs_its_own_tests(dist, tmp_path):
    with tarfile.open(dist[1]) as t: t.extractall(tmp_path, filter='data')
    (src,) = tmp_path.glob('calibkit-*')
    for need in ('LICENSE', 'tasks.py', 'settings.ini', '.ci/run', 'nbs/index.ipynb', 'tests/conftest.py',
                 'tests/test_project.py', 'tests/plugin_pkg/calibkit_example_plugin.py', 'calibkit/data/README.md'):
        assert (src/need).is_file(), f'{need} missing from the sdist'
    where = sh(sys.executable, '-c', 'import calibkit; print(calibkit.__file__)', cwd=src).stdout.strip()
    assert where.startswith(str(src)), f'the sdist\'s tests must import the sdist\'s calibkit, not {where}'
    r = sh(sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests/test_project.py',
           '-k', 'readme_is_generated or two_commands or settings_file', cwd=src)
    assert '3 passed' in r.stdout, r.stdout[-1000:]


RUN_NOTEBOOK = '''import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=600, kernel_name='python3', resources={'metadata': {'path': '.'}}).execute()
'''


def tree(top: Path) -> dict:
    "Every file under `top` (relative path -> bytes)."
    return {str(p.relative_to(top)): p.read_bytes() for p in sorted(top.rglob('*')) if p.is_file()}


def test_a_tutorial_runs_from_the_installed_wheel_outside_the_checkout(wheel_venv, tmp_path):
    """Tutorial 90 (the fastest, ~40 s), executed by the wheel's venv in a folder holding only the notebook, writes its
    files to the output folder the reader names and nowhere else; the bundled data resolve inside the package."""
    py = wheel_venv/'python'
    sh(py, '-m', 'pip', 'install', '--disable-pip-version-check', '--progress-bar', 'off', '--no-compile',
       'nbclient', 'ipykernel', cwd=tmp_path)
    work, chosen, home = tmp_path/'work', tmp_path/'chosen', tmp_path/'home'
    for d in (work, home): d.mkdir()
    nb = ROOT/'nbs'/'90_tutorial_plugins.ipynb'
    (work/nb.name).write_bytes(nb.read_bytes())
    samples = tree(ROOT/'sample_outputs')
    # HOME apart: what Jupyter and IPython keep there (runtime files, profiles) is not the tutorial's
    env = clean_env(HOME=str(home), CALIBKIT_TUTORIAL_OUT=str(chosen))
    sh(py, '-c', RUN_NOTEBOOK, nb.name, cwd=work, env=env)
    assert sorted(tree(work)) == [nb.name] and sorted(p.name for p in tmp_path.iterdir()) == ['chosen', 'home', 'work']
    written = tree(chosen)
    assert sorted(written) == ['plugins/.calibkit-report.json', 'plugins/plugin_reliability.svg',
                               'plugins/plugin_reliability.vl.json', 'plugins/tutorial_results.csv']
    assert tree(ROOT/'sample_outputs') == samples and not (ROOT/'nbs'/'calibkit-tutorial-output').exists()
    import io, pandas as pd
    got = pd.read_csv(io.BytesIO(written['plugins/tutorial_results.csv']))
    pd.testing.assert_frame_equal(got, pd.read_csv(ROOT/'sample_outputs'/'plugins'/'tutorial_results.csv'), rtol=1e-4)
    # the data accessor and the default output root, in the same install
    code = ('from calibkit.datasets import bundled; from calibkit.datasets.conll import read_conll\n'
            'from calibkit.tutorials import output_folder\n'
            "p = bundled('twpos/oct27.dev'); print(p, len(read_conll(p).tokens), output_folder('x', ['a.csv']))")
    where, n, out = sh(py, '-c', code, cwd=work, env=clean_env(HOME=str(home))).stdout.split()
    assert 'site-packages' in where and str(ROOT) not in where and int(n) == 327
    assert out == 'calibkit-tutorial-output/x' and (work/out/'.calibkit-report.json').is_file()
