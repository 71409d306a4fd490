"""Shared pytest setup.

Installed calibkit plugins (entry points) are not loaded automatically in tests, as under nbdev-test:
`IN_TEST` is set for the whole run, so a plugin installed on the machine cannot change what the tests
compute. Tests that need installed plugins use the `entry_point_plugins` fixture, or a subprocess whose
environment lacks `IN_TEST`. Set `IN_TEST=0` to run the suite with installed plugins loaded.
"""
import os
import pytest

os.environ.setdefault('IN_TEST', '1')


@pytest.fixture
def entry_point_plugins():
    "Load the installed plugins (entry-point group `calibkit`) for one test; unregister them afterwards."
    from calibkit.plugins import load_entry_points, unregister_plugin
    names = load_entry_points()
    try:
        yield names
    finally:
        for name in names: unregister_plugin(name)
