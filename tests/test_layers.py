"""The layers of issue 14, enforced: the import-linter contract in pyproject.toml, no import cycle among calibkit's
modules (every import statement counted, those inside functions included), nobody imports the package root."""
import subprocess, sys, textwrap
from pathlib import Path
import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope='module')
def graph():
    return grimp.build_graph('calibkit', cache_dir=None)


def sccs(graph) -> list[set[str]]:
    "Strongly connected components with more than one module, or a module importing itself (Tarjan, iterative)."
    mods = sorted(graph.modules)
    succ = {m: sorted(graph.find_modules_directly_imported_by(m) & set(mods)) for m in mods}
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in mods:
        if root in index: continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = counter[0]; counter[0] += 1; stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1; stack.append(w); on.add(w)
                    work.append((w, iter(succ[w]))); break
                if w in on: low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work: low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop(); on.discard(w); comp.add(w)
                        if w == v: break
                    if len(comp) > 1 or v in succ[v]: out.append(comp)
    return out


def test_lint_imports_keeps_the_layers_contract():
    exe = Path(sys.executable).with_name('lint-imports')
    r = subprocess.run([str(exe), '--no-cache'], cwd=ROOT, capture_output=True, text=True)
    assert 'Contracts: 1 kept, 0 broken.' in r.stdout and r.returncode == 0, r.stdout[-3000:] + r.stderr


def test_grimp_counts_imports_inside_functions(tmp_path, monkeypatch):
    pkg = tmp_path/'layerprobe'
    pkg.mkdir()
    (pkg/'__init__.py').write_text('')
    (pkg/'low.py').write_text('X = 1\n')
    (pkg/'high.py').write_text(textwrap.dedent('''
        def f():
            from layerprobe.low import X
            return X
        class C:
            def g(self):
                import layerprobe.low
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    g = grimp.build_graph('layerprobe', cache_dir=None)
    assert g.find_modules_directly_imported_by('layerprobe.high') == {'layerprobe.low'}
    assert {d['line_number'] for d in g.get_import_details(importer='layerprobe.high', imported='layerprobe.low')} == {3, 7}


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    pkg = tmp_path/'cycleprobe'
    pkg.mkdir()
    (pkg/'__init__.py').write_text('')
    (pkg/'a.py').write_text('def f():\n    from cycleprobe import b\n')
    (pkg/'b.py').write_text('from cycleprobe import c\n')
    (pkg/'c.py').write_text('import cycleprobe.a\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert sccs(grimp.build_graph('cycleprobe', cache_dir=None)) == [{'cycleprobe.a', 'cycleprobe.b', 'cycleprobe.c'}]


def test_no_import_cycle_among_calibkit_modules(graph):
    assert sccs(graph) == []


def test_nothing_inside_the_package_imports_its_root(graph):
    importers = sorted(graph.find_modules_that_directly_import('calibkit'))
    assert importers == [], f'these modules import the calibkit root; use `from .x import y` / calibkit.x: {importers}'


def test_the_registry_imports_no_calibkit_module(graph):
    assert graph.find_modules_directly_imported_by('calibkit.plugins') == set()
