"""Issue 25, "nothing to decode": `calibkit.events` is the events module and its function is `make_events`. Issue 35:
calibkit is unreleased, so the old calls (`calibkit.events(conf, correct)`, `from calibkit.events import events`)
are gone rather than deprecated, and no module swaps its class."""
import importlib, re, subprocess, sys, types, warnings
from pathlib import Path
import numpy as np, pandas as pd, pytest
import calibkit
import calibkit.events as E

ROOT = Path(__file__).resolve().parents[1]
CONF, CORRECT = [.2, .9, .6], [0, 1, 1]


def test_make_events_builds_the_frame_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        ev = calibkit.make_events(CONF, CORRECT, item=[0, 0, 1], kind='top')
    assert list(ev.columns) == ['item', 'kind', 'conf', 'correct']
    assert ev.conf.tolist() == CONF and ev.correct.tolist() == CORRECT and ev.correct.dtype == np.uint8
    assert ev.item.tolist() == [0, 0, 1] and ev.kind.tolist() == ['top'] * 3
    assert calibkit.make_events is E.make_events


def test_calibkit_events_is_the_module():
    from calibkit import events
    assert events is E is sys.modules['calibkit.events'] is calibkit.events
    assert isinstance(events, types.ModuleType) and E.as_pairs is calibkit.as_pairs
    assert 'events' not in E.__all__ and 'events' not in dir(E) and 'make_events' in dir(E)


def test_the_old_call_and_the_old_import_are_gone():
    with pytest.raises(TypeError, match="'module' object is not callable"): calibkit.events(CONF, CORRECT)
    with pytest.raises(ImportError, match="cannot import name 'events'"): from calibkit.events import events  # noqa: F401


def test_unknown_names_still_raise_attribute_error():
    with pytest.raises(AttributeError, match="module 'calibkit.events' has no attribute 'nope'"): E.nope
    with pytest.raises(AttributeError, match="module 'calibkit' has no attribute 'nope'"): calibkit.nope
    with pytest.raises(ImportError): from calibkit.events import nope  # noqa: F401


@pytest.mark.parametrize('code', [
    'import calibkit as ck, calibkit.events; f, e = ck.make_events, ck.events',
    'import calibkit as ck; e = ck.events; import calibkit.events; f = ck.make_events',
    'from calibkit.events import make_events as f; import calibkit as ck; e = ck.events',
])
def test_in_any_import_order_the_module_is_the_module_and_make_events_the_function(code):
    code += '; print(f.__module__, type(e).__name__, e is sys.modules["calibkit.events"])'
    r = subprocess.run([sys.executable, '-W', 'error::DeprecationWarning', '-c', 'import sys; ' + code],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ['calibkit.events', 'module', 'True']


def test_no_module_swaps_its_class():
    "The package is a plain module (PEP 562 `__getattr__`/`__dir__`), and so is every module of it: no shim swaps a class."
    assert type(calibkit) is types.ModuleType
    swap = re.compile(r'modules\[[^\]]*\]\.__class__\s*=|__class__\s*=\s*_Package')
    swaps = {p.relative_to(ROOT).as_posix() for p in (ROOT/'calibkit').rglob('*.py') if swap.search(p.read_text())}
    assert swaps == set()
    assert swap.search("_sys.modules[__name__].__class__ = _Package")      # the pattern finds the old swap
    for path in ('events', 'plugins'):
        assert type(importlib.import_module(f'calibkit.{path}')) is types.ModuleType
