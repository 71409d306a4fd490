"""Shared pytest setup.

Installed calibkit plugins (entry points) are not loaded automatically in tests, as under nbdev-test:
`IN_TEST` is set for the whole run, so a plugin installed on the machine cannot change what the tests
compute. Tests that need installed plugins use the `entry_point_plugins` fixture, or a subprocess whose
environment lacks `IN_TEST`. Set `IN_TEST=0` to run the suite with installed plugins loaded.
"""
import contextlib, os, subprocess, sys
from pathlib import Path
import pytest

os.environ.setdefault('IN_TEST', '1')

# The example plugin (tests/plugin_pkg) is installed apart, into .venv-testplugins/ (`python3 tasks.py setup`), so
# that only test runs see it: put it on the path of this run and of the subprocesses it starts, however pytest was
# launched (`tasks.py test` already does; `.venv/bin/python -m pytest tests/x.py` works the same way).
TESTPLUGINS = Path(__file__).resolve().parents[1]/'.venv-testplugins'
if TESTPLUGINS.is_dir() and str(TESTPLUGINS) not in sys.path:
    sys.path.insert(0, str(TESTPLUGINS))
    os.environ['PYTHONPATH'] = os.pathsep.join([str(TESTPLUGINS), *filter(None, [os.environ.get('PYTHONPATH')])])


# The slowest test files, slowest first (measured with `pytest --durations=0 -p no:randomly`, file by file, on a shared
# 2-core machine: in s, docs 137, cli_safety 119, wheel 104, cli_inputs 80, cli_scripting 77, cli 67, cli_conformal 35,
# project 28, stream 28, notebooks 26, cli_report_explains 25, dask_report 24; the files of issue 34, from the durations
# of a test run: group_panels ~70, visible_bins and verdict_rules ~40; others not measured again): collected
# first, so that under `python3 tasks.py test` (pytest-xdist, each file on one worker) no long file starts last and
# keeps one worker busy alone. The order of tests inside a file, and of the files not listed, is unchanged.
SLOW_FILES = ['test_docs.py', 'test_cli_safety.py', 'test_wheel.py', 'test_cli_inputs.py', 'test_cli_scripting.py',
              'test_cli.py', 'test_group_panels.py', 'test_cli_conformal.py', 'test_visible_bins.py',
              'test_verdict_rules.py', 'test_project.py', 'test_stream.py', 'test_notebooks.py',
              'test_cli_report_explains.py', 'test_dask_report.py']


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))      # a stable sort


@pytest.fixture
def entry_point_plugins():
    "Load the installed plugins (entry-point group `calibkit`) for one test; unregister them afterwards."
    from calibkit.plugins import load_entry_points, unregister_plugin
    names = load_entry_points()
    try:
        yield names
    finally:
        for name in names: unregister_plugin(name)


@contextlib.contextmanager
def run_lock(path: Path):
    "An exclusive lock on `path` between the processes of one run (pytest-xdist workers); none where fcntl is missing."
    try: import fcntl
    except ImportError: yield; return
    with open(path, 'w') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try: yield
        finally: fcntl.flock(f, fcntl.LOCK_UN)


def run_dir(tmp_path_factory) -> Path:
    "A folder shared by every process of this test run (under pytest-xdist each worker has its own base folder in it)."
    base, worker = tmp_path_factory.getbasetemp(), os.environ.get('PYTEST_XDIST_WORKER')
    return base.parent if worker and base.name == f'popen-{worker}' else base     # (a pytest a worker starts: its own)


@pytest.fixture(scope='session')
def dist(tmp_path_factory):
    """The sdist and the wheel built from it (`python -m build`, no isolation: offline-friendly), built once per test
    run whichever test file and worker asks first (the build writes build/ and calibkit.egg-info/ in the checkout)."""
    out = run_dir(tmp_path_factory)/'dist'
    with run_lock(run_dir(tmp_path_factory)/'dist.lock'):
        if not list(out.glob('calibkit-*.whl')):
            env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'IN_TEST', 'PYTHONHOME')}
            root = Path(__file__).resolve().parents[1]
            r = subprocess.run([sys.executable, '-m', 'build', '--no-isolation', '--outdir', str(out), str(root)], cwd=root,
                               env={**env, 'CALIBKIT_QUIET': '1'}, capture_output=True, text=True, timeout=900)
            assert r.returncode == 0, f'python -m build exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}'
    (wheel,), (sdist,) = out.glob('calibkit-*.whl'), out.glob('calibkit-*.tar.gz')
    return wheel, sdist
