"The plugin registry: hooks, built-ins, lookups and their errors, installed (entry-point) plugins and their isolation."
import ast, importlib, importlib.metadata, inspect, textwrap, json, os, subprocess, sys
from pathlib import Path
import numpy as np, pandas as pd
import pytest
import calibkit
import calibkit.plugins as P
from calibkit.plugins import Hookspecs, hookimpl, register_plugin, unregister_plugin

ROOT = Path(__file__).resolve().parents[1]
HOOKS = sorted(n for n, f in inspect.getmembers(Hookspecs) if hasattr(f, 'calibkit_spec'))


def registered(plugin, name='test_plugin'):
    "Context: `plugin` registered under `name`, unregistered afterwards."
    class Ctx:
        def __enter__(self): return register_plugin(plugin, name=name)
        def __exit__(self, *exc): unregister_plugin(name)
    return Ctx()


class Identity:
    name, description = 'identity', 'Leaves confidences unchanged'
    def __init__(self, scale: float = 1.0): self.scale = scale
    def fit(self, conf, correct=None): return self
    def transform(self, conf): return conf


def test_every_hook_is_documented_and_tested():
    assert HOOKS == ['register_extractors', 'register_groupers', 'register_matrix_recalibrators', 'register_recalibrators']
    tree = ast.parse(Path(__file__).read_text())
    tests = {f.name: ast.get_source_segment(Path(__file__).read_text(), f) for f in tree.body
             if isinstance(f, ast.FunctionDef) and f.name.startswith('test_') and f.name != 'test_every_hook_is_documented_and_tested'}
    for hook in HOOKS:
        doc = inspect.getdoc(getattr(Hookspecs, hook))
        assert doc and 'register(cls)' in doc, f'hook {hook} lacks a docstring saying how to register'
        assert any(hook in src for src in tests.values()), f'no test mentions hook {hook}'


def test_register_extractors_hook():
    class Toy:
        name, description = 'toy_extractor', 'Events from a list of (conf, correct) pairs'
        def extract(self, output, **kw): return calibkit.make_events(*zip(*output))
    class Plugin:
        @hookimpl
        def register_extractors(register): register(Toy)
    with registered(Plugin):
        ev = calibkit.extractor('toy_extractor').extract([(.2, 0), (.9, 1)])
        assert list(ev.conf) == [.2, .9] and list(ev.correct) == [0, 1]
    with pytest.raises(ValueError, match="unknown extractor 'toy_extractor'"): calibkit.extractor('toy_extractor')


def test_register_groupers_hook():
    from calibkit.groupers import BySubtag
    class Suffix(BySubtag):
        name, description = 'suffix', 'Groups tags by their last character'
        def __init__(self): super().__init__(key=lambda t: t[-1])
    class Plugin:
        @hookimpl
        def register_groupers(register): register(Suffix)
    with registered(Plugin):
        g = calibkit.grouper('suffix').fit({'NN': 5, 'VB': 3, 'NNS': 2, 'VBS': 1})
        assert list(g.assign(['VBS', 'NN', 'VB'])) == [3, 1, 2]      # groups 1..G; keys by frequency: N (5), then B and S (3 each, tie by key)
        assert g.table().n_tags.sum() == 4


def test_register_recalibrators_hook():
    class Plugin:
        @hookimpl
        def register_recalibrators(register): register(Identity)
    with registered(Plugin, name='identity_plugin'):
        row = calibkit.list_plugins().set_index('name').loc['identity']
        plugin = P.registry()['recalibrator']['identity'].plugin
        assert (row.kind, plugin, row.distribution, row.version, row.params) == ('recalibrator', 'identity_plugin', None, None, 'scale=1.0')
        assert calibkit.recalibrator('identity', scale=2.0).scale == 2.0
    assert 'identity' not in set(calibkit.list_plugins().name)


def test_register_matrix_recalibrators_hook():
    class Uniform:
        name, description = 'uniform', 'Every row uniform'
        def fit(self, X, y): return self
        def transform(self, X): return np.full(np.shape(X), 1 / np.shape(X)[1])
    class Flat(Uniform):
        name, description = 'flat', 'One column per row: the wrong shape'
        def transform(self, X): return np.full(len(X), 0.5)
    class Plugin:
        @hookimpl
        def register_matrix_recalibrators(register): register(Uniform); register(Flat)
    with registered(Plugin, name='uniform_plugin'):
        row = calibkit.list_plugins().query("kind == 'matrix_recalibrator'").set_index('name').loc['uniform']
        assert (row.kind, row.distribution, P.registry()['matrix_recalibrator']['uniform'].plugin) == \
            ('matrix_recalibrator', None, 'uniform_plugin')
        X = np.array([[0.2, 0.8], [0.6, 0.4]])
        assert calibkit.matrix_recalibrator('uniform').fit(X, [1, 0]).transform(X).tolist() == [[0.5, 0.5]] * 2
        P._state.distribution['uniform_plugin'] = 'uniform-dist'        # as if installed: guarded
        try:
            P._state.registry = P._state.key = None
            with pytest.raises(P.PluginError, match=r"transform\(\) returned an array of shape \(2,\), not the \(2, 2\)"):
                P.guard('matrix_recalibrator', calibkit.matrix_recalibrator('flat')).transform(X)
        finally: P._state.distribution.pop('uniform_plugin')
    assert 'uniform' not in set(calibkit.list_plugins().name)
    with pytest.raises(ValueError, match="unknown matrix_recalibrator 'isotonic'; known matrix_recalibrators: dirichlet"):
        calibkit.matrix_recalibrator('isotonic')


def test_builtins_are_listed_with_their_distribution():
    t = calibkit.list_plugins()
    assert list(t.columns) == ['kind', 'name', 'description', 'distribution', 'version', 'params', 'reads', 'reads_optional']
    assert {r.plugin for table in P.registry().values() for r in table.values()} == {'calibkit.default_plugins'}
    mine = t[t.kind.isin(['grouper', 'recalibrator'])]
    assert sorted(mine.name) == ['beta', 'by_subtag', 'histogram', 'isotonic', 'normaliser', 'per_class', 'platt',
                                 'scaling_binning', 'scaling_binning_kls', 'shared', 'tfg', 'venn_abers']
    assert set(t.distribution) == {'calibkit'}                       # installed plugins are not loaded in tests
    assert set(t.version) == {importlib.metadata.version('calibkit')}
    assert sorted(t.name[t.kind == 'extractor']) == ['coref_mc', 'crf_marginals', 'crfsuite', 'hf_token_classification',
                                                   'openai_logprobs', 'p_true', 'seq2seq', 'softmax', 'spacy',
                                                   'verbalized']
    assert sorted(t.name[t.kind == 'matrix_recalibrator']) == ['dirichlet', 'temperature', 'vector']
    assert t.description.map(lambda d: bool(d) and '\n' not in d).all()
    assert t.groupby('kind').name.apply(lambda s: s.is_unique).all()


def test_lookups_return_fresh_instances_and_unknown_names_list_the_known():
    a, b = calibkit.recalibrator('histogram', n_bins=5), calibkit.recalibrator('histogram', n_bins=5)
    assert a is not b and a.n_bins == b.n_bins == 5
    with pytest.raises(ValueError, match=r"unknown grouper 'tgf'; known groupers: by_subtag, per_class, shared, tfg"):
        calibkit.grouper('tgf')
    with pytest.raises(TypeError, match='grouper name must be a string'): calibkit.grouper(None)


def test_bad_parameters_name_the_plugin_and_the_accepted_ones():
    with pytest.raises(TypeError) as e: calibkit.recalibrator('scaling_binning', bins=5)
    msg = str(e.value)
    assert "recalibrator 'scaling_binning' from plugin 'calibkit.default_plugins' (distribution 'calibkit')" in msg
    assert "unexpected keyword argument 'bins'" in msg
    assert "accepted parameters: n_bins=None, scaler=None, split=0.5, seed=None" in msg
    with pytest.raises(ValueError, match='n_groups must be an integer >= 1'):       # the class's own validation, in fit
        calibkit.grouper('tfg', n_groups=0).fit({'N': 3, 'V': 2})


def test_make_is_the_one_door_from_a_name_or_an_instance():
    "`plugins.make`: a name is built by the registry (its errors), an instance is used as it is (params refused)."
    h = P.make('recalibrator', 'histogram', {'n_bins': 7})
    assert type(h).__name__ == 'HistogramBinning' and h.n_bins == 7
    assert P.make('recalibrator', h) is h and P.make('grouper', 'tfg', None).n_groups is None
    ident = Identity()
    assert P.make('recalibrator', ident) is ident                          # any object with fit and transform
    with pytest.raises(ValueError, match='params apply to a recalibrator given by name; set them on the instance'):
        P.make('recalibrator', ident, {'scale': 2.0})
    with pytest.raises(TypeError, match=r'groupers must be a grouper name or instance \(with fit and assign\), got int'):
        P.make('grouper', 3, arg='groupers')
    with pytest.raises(TypeError, match=r'recalibrator must be a recalibrator name or instance .* got NoneType'):
        P.make('recalibrator', None)
    with pytest.raises(ValueError, match=r"unknown grouper 'tgf'; known groupers: by_subtag, per_class, shared, tfg"):
        P.make('grouper', 'tgf')
    with pytest.raises(TypeError, match="accepted parameters: n_bins=None, scaler=None, split=0.5, seed=None"):
        P.make('recalibrator', 'scaling_binning', {'bins': 5})
    with pytest.raises(TypeError, match='params must be a dict, got list'): P.make('grouper', 'tfg', [('n_groups', 2)])
    with pytest.raises(ValueError, match="kind must be one of"): P.make('groupers', 'tfg')


def test_duplicate_names_are_refused_naming_both_sources():
    class Plugin:
        @hookimpl
        def register_groupers(register): register(type('Tfg2', (calibkit.groupers.Shared,), dict(name='tfg')))
    with registered(Plugin, name='dup_plugin'):
        with pytest.raises(ValueError) as e: calibkit.grouper('shared')
    msg = str(e.value)
    assert "grouper name 'tfg' is registered twice" in msg
    assert "calibkit.groupers.TagFrequency from plugin 'calibkit.default_plugins' (distribution 'calibkit')" in msg
    assert "Tfg2 from plugin 'dup_plugin'" in msg
    assert isinstance(calibkit.grouper('tfg'), calibkit.groupers.TagFrequency)      # healthy again once it is gone


def test_exceptions_inside_plugins_carry_a_note_naming_the_plugin():
    class RaisingHook:
        @hookimpl
        def register_recalibrators(register): raise KeyError('oops')
    with registered(RaisingHook, name='raising'):
        with pytest.raises(KeyError) as e: calibkit.recalibrator('isotonic')
    assert e.value.__notes__ == ["raised by calibkit plugin 'raising' in hook register_recalibrators"]

    class Broken(Identity):
        name = 'broken'
        def __init__(self, scale=1.0): raise RuntimeError('bad state')
    class Plugin:
        @hookimpl
        def register_recalibrators(register): register(Broken)
    with registered(Plugin, name='broken_plugin'):
        with pytest.raises(RuntimeError, match='bad state') as e: calibkit.recalibrator('broken')
    assert e.value.__notes__ == ["raised by recalibrator 'broken' (test_exceptions_inside_plugins_carry_a_note_naming_the_plugin"
                                 ".<locals>.Broken) from calibkit plugin 'broken_plugin'"]


@pytest.mark.parametrize('cls, match', [
    (type('R', (Identity,), dict(name='Bad Name')), 'snake_case'),
    (type('R', (Identity,), dict(name='ok', description='two\nlines')), 'one non-empty line'),
    (type('R', (), dict(name='ok', description='fine', fit=lambda s: s)), r"lacks method\(s\) \['transform'\]"),
    (Identity(), 'takes a recalibrator class, got Identity'),
])
def test_register_validates_the_class(cls, match):
    class Plugin:
        @hookimpl
        def register_recalibrators(register): register(cls)
    with registered(Plugin, name='invalid'):
        with pytest.raises((ValueError, TypeError), match=match) as e: calibkit.list_plugins()
    assert "plugin 'invalid'" in e.value.__notes__[0]


def test_a_misspelled_hook_is_refused_at_registration():
    class Plugin:
        @hookimpl
        def register_grouper(register): pass
    with pytest.raises(Exception, match='unknown hook'): register_plugin(Plugin, name='misspelled')
    assert not P.pm.has_plugin('misspelled')


def test_default_plugins_is_a_plain_list_of_importable_modules():
    tree = ast.parse((ROOT/'calibkit'/'plugins.py').read_text())
    (node,) = [n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], 'id', '') == 'DEFAULT_PLUGINS']
    assert isinstance(node.value, ast.List) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts)
    mods = [e.value for e in node.value.elts]
    assert len({e.lineno for e in node.value.elts}) == len(mods), 'one module per line'
    assert len(set(mods)) == len(mods) and mods == P.DEFAULT_PLUGINS
    for m in mods: assert P.pm.has_plugin(m) and importlib.import_module(m)


def test_a_default_plugin_that_fails_to_import_fails_loudly(monkeypatch):
    monkeypatch.setattr(P, 'DEFAULT_PLUGINS', P.DEFAULT_PLUGINS + ['calibkit.no_such_module'])
    monkeypatch.setattr(P._state, 'defaults', False)
    with pytest.raises(ImportError, match=r"built-in plugin module 'calibkit.no_such_module' \(listed in calibkit.plugins.DEFAULT_PLUGINS\) failed to import"):
        calibkit.grouper('tfg')
    with pytest.raises(ImportError): calibkit.list_plugins()      # every lookup, not only the first


def test_list_plugins_is_the_listing_and_the_module_stays_a_module():
    assert isinstance(calibkit.list_plugins(), pd.DataFrame)
    assert calibkit.plugins is P and P.register_plugin is register_plugin
    from calibkit.plugins import plugins
    assert calibkit.list_plugins is plugins and plugins().equals(calibkit.list_plugins())


def test_calling_the_module_is_gone():
    "Up to 0.1 `calibkit.plugins()` (the module called) listed the plugins; calibkit is unreleased: the call is gone."
    with pytest.raises(TypeError, match="'module' object is not callable"): calibkit.plugins()


# --- installed plugins: tests/plugin_pkg, distribution calibkit-example-plugin, entry point `example` ---

def test_installed_plugins_are_not_loaded_under_tests():
    assert P.in_test() and 'first_char' not in set(calibkit.list_plugins().name)


def test_fixture_loads_the_installed_plugin(entry_point_plugins):
    assert entry_point_plugins == ['example']
    t = calibkit.list_plugins().query("kind != 'matrix_recalibrator'").set_index('name')   # its temperature: calibkit's
    assert t.loc[['first_char', 'temperature'], 'distribution'].tolist() == ['calibkit-example-plugin'] * 2
    assert t.loc['first_char', 'kind'] == 'grouper' and P.registry()['recalibrator']['temperature'].plugin == 'example'
    assert t.loc['temperature', 'version'] == '0.1.0' and t.loc['temperature', 'params'] == 'eps=1e-06'
    g = calibkit.grouper('first_char').fit({'NN': 5, 'NNS': 2, 'VB': 4})
    assert list(g.assign(['VBD', 'NNP'])) == [2, 1]
    rng = np.random.default_rng(0)
    q = rng.beta(2, 2, 5000); y = (rng.random(5000) < q).astype(np.uint8)
    over = calibkit.recalibrator('temperature').fit(1 / (1 + ((1 - q) / q) ** 2), y)   # conf = σ(2 logit q)
    assert abs(over.temperature_ - 2) < 0.2
    ev = calibkit.extractor('conf_correct').extract({'conf': np.array([.9, .2]), 'correct': np.array([1, 0])})
    assert ev.conf.tolist() == [.9, .2] and ev.correct.tolist() == [1, 0]
    assert t.loc['conf_correct', 'kind'] == 'extractor' and t.loc['conf_correct', 'distribution'] == 'calibkit-example-plugin'


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    "Run `code` in a fresh interpreter without IN_TEST (as a user would), plus `env`."
    e = {k: v for k, v in os.environ.items() if k not in ('IN_TEST', 'CALIBKIT_DISABLE_PLUGINS')}
    return subprocess.run([sys.executable, '-c', code], env={**e, **env}, capture_output=True, text=True, cwd=ROOT)


LIST = 'import calibkit, json; t = calibkit.list_plugins(); print(json.dumps(dict(zip(t.name, t.distribution))))'


@pytest.mark.parametrize('env, present', [
    ({}, True),
    ({'CALIBKIT_DISABLE_PLUGINS': 'calibkit-example-plugin'}, False),
    ({'CALIBKIT_DISABLE_PLUGINS': 'other, Calibkit_Example_Plugin'}, False),
    ({'CALIBKIT_DISABLE_PLUGINS': 'example'}, False),
    ({'CALIBKIT_DISABLE_PLUGINS': '*'}, False),
    ({'CALIBKIT_DISABLE_PLUGINS': 'some-other-plugin'}, True),
    ({'IN_TEST': '1'}, False),
])
def test_installed_plugin_is_discovered_unless_disabled(env, present):
    r = run_python(LIST, **env)
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    assert (listed.get('first_char') == listed.get('temperature') == 'calibkit-example-plugin') is present
    assert listed['tfg'] == 'calibkit'


def test_installed_plugin_is_usable_by_name_in_a_user_process():
    r = run_python('import calibkit; g = calibkit.grouper("first_char").fit(["NN", "VB", "NNS"]); '
                   'print(g.assign(["NNP", "VBZ"]).tolist())')
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == '[1, 2]'


def test_params_column_lists_constructor_parameters_with_defaults():
    t = calibkit.list_plugins().set_index('name')
    assert t.loc['scaling_binning', 'params'] == "n_bins=None, scaler=None, split=0.5, seed=None"
    assert t.loc['shared', 'params'] == ''
    assert t.loc['tfg', 'params'] == 'n_groups=None, rule=None, balanced=False'


# --- one broken plugin breaks only itself: a real entry point on sys.path whose module raises on import ---

def broken_dist(tmp_path, error='raise ImportError("no module named torchy")'):
    "A distribution `broken-plugin` 0.2 whose entry point `brk` imports a module that raises."
    info = tmp_path/'broken_plugin-0.2.dist-info'
    info.mkdir()
    (info/'METADATA').write_text('Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.2\n')
    (info/'entry_points.txt').write_text('[calibkit]\nbrk = calibkit_broken_mod\n')
    (tmp_path/'calibkit_broken_mod.py').write_text(error + '\n')
    return str(tmp_path)


BROKEN = textwrap.dedent("""
    import warnings, json
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        import calibkit
        t = calibkit.list_plugins()
        g = type(calibkit.grouper('tfg')).__name__
        b = calibkit.plugins.broken_plugins()
        try: calibkit.recalibrator('torchy'); miss = None
        except ValueError as e: miss = str(e)
    print(json.dumps(dict(warnings=[str(x.message) for x in w], n=len(t), g=g, broken=b.to_dict('records'), miss=miss)))
""")


@pytest.mark.parametrize('error, shown', [
    ('raise ImportError("no module named torchy")', 'ImportError: no module named torchy'),
    ('1 / 0', 'ZeroDivisionError: division by zero'),
    ('from calibkit.plugins import hookimpl\n@hookimpl\ndef register_grouper(register): pass', 'PluginValidationError'),
])
def test_a_broken_installed_plugin_is_skipped_with_one_warning(tmp_path, error, shown):
    r = run_python(BROKEN, PYTHONPATH=broken_dist(tmp_path, error))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    mine = [m for m in out['warnings'] if 'brk' in m]
    assert len(mine) == 1, out['warnings']
    assert "calibkit plugin 'brk' (distribution 'broken-plugin') failed to load" in mine[0]
    assert 'CALIBKIT_DISABLE_PLUGINS=brk' in mine[0] and shown in mine[0]
    assert out['g'] == 'TagFrequency' and out['n'] >= 13               # the built-ins keep working
    (row,) = [b for b in out['broken'] if b['plugin'] == 'brk']
    assert row['distribution'] == 'broken-plugin' and row['error'].startswith(shown)
    assert '\n' not in out['miss'] and out['miss'].startswith("unknown recalibrator 'torchy'; known recalibrators: beta, histogram")
    assert f"; note: plugin 'brk' (distribution 'broken-plugin') failed to load: {shown}" in out['miss']


def test_a_broken_installed_plugin_can_be_disabled_silently(tmp_path):
    r = run_python(BROKEN, PYTHONPATH=broken_dist(tmp_path), CALIBKIT_DISABLE_PLUGINS='brk')
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert not [m for m in out['warnings'] if 'brk' in m] and not [b for b in out['broken'] if b['plugin'] == 'brk']
    assert "note: plugin 'brk'" not in out['miss']


def test_calibkit_plugins_command_survives_a_broken_plugin(tmp_path):
    r = run_python('import sys; from calibkit.cli import main; sys.argv = ["calibkit", "plugins"]; sys.exit(main())',
                   PYTHONPATH=broken_dist(tmp_path))
    assert r.returncode == 0, r.stderr
    assert 'tfg' in r.stdout and r.stderr.count("calibkit plugin 'brk'") == 1


# --- the registry stands apart (issue 14) ---

def test_the_registry_holds_no_base_class():
    "(That it imports no calibkit module is checked on the import graph: tests/test_layers.py.)"
    assert not hasattr(P, 'Params')
    for name, obj in vars(P).items():
        if inspect.isclass(obj) and obj.__module__ == 'calibkit.plugins':
            assert name in {'Hookspecs', 'Registered', '_State', '_DeprecatedCall', 'PluginError'}, name


def test_hooks_are_implemented_only_in_plugin_modules():
    for f in sorted((ROOT/'calibkit').rglob('*.py')):
        if f.name in ('plugins.py', 'default_plugins.py', '_modidx.py'): continue
        assert '@hookimpl' not in f.read_text(), f'{f.relative_to(ROOT)} implements a hook: register it from calibkit.default_plugins'
