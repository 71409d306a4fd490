"""Shared pytest setup.

Installed calibkit plugins (entry points) are not loaded automatically in tests, as under nbdev-test:
`IN_TEST` is set for the whole run, so a plugin installed on the machine cannot change what the tests
compute. Tests that need installed plugins use the `entry_point_plugins` fixture, or a subprocess whose
environment lacks `IN_TEST`. Set `IN_TEST=0` to run the suite with installed plugins loaded.
"""
import os, sys
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


@pytest.fixture
def entry_point_plugins():
    "Load the installed plugins (entry-point group `calibkit`) for one test; unregister them afterwards."
    from calibkit.plugins import load_entry_points, unregister_plugin
    names = load_entry_points()
    try:
        yield names
    finally:
        for name in names: unregister_plugin(name)
