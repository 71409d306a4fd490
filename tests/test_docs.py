"""The documentation site (`docs/build.py` -> `_docs/`): complete, offline, and working in a real browser.

The site is built once per session when `_docs/index.html` is missing or older than what it is made of
(`python3 tasks.py test` builds it before pytest; so does `python3 tasks.py docs`). The browser checks open
the pages from disk (file://) in headless Chromium and skip, saying why, only when it is not installed.
"""
import ast, json, os, re, subprocess, sys, time, warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import browser  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT/'_docs'
WARNINGS = ROOT/'build'/'docs-warnings.txt'
sys.path.insert(0, str(ROOT/'docs'))
import build as docs_build  # noqa: E402


def inputs():
    "Everything the site is made of."
    return [*(ROOT/'nbs').glob('*.ipynb'), *(ROOT/'calibkit').rglob('*.py'), *(ROOT/'docs').rglob('*.py'),
            *(ROOT/'docs'/'_static').glob('*'), ROOT/'CONTRIBUTING.md']


@pytest.fixture(scope='session')
def site():
    manifest = docs_build.MANIFEST      # written by every build (Sphinx leaves unchanged pages alone)
    if not (SITE/'index.html').exists() or not WARNINGS.exists() or not manifest.exists() or \
            manifest.stat().st_mtime < max(p.stat().st_mtime for p in inputs()):
        subprocess.run([sys.executable, str(ROOT/'docs'/'build.py'), '--out', str(SITE)], check=True,
                       env={**os.environ, 'CALIBKIT_QUIET': '1'})
    return SITE


def public_names():
    "(module, name) for every name in every documented module's `__all__` (modules that do not import are listed)."
    skipped = json.loads(docs_build.MANIFEST.read_text())['skipped']
    return [(m, n) for m, (_, names) in docs_build.modules().items() if m not in skipped for n in names]


# ---- the built files ----------------------------------------------------------------------------------
def test_build_without_warnings(site):
    "Broken references, duplicate targets and autodoc import failures are Sphinx warnings: none allowed."
    lines = [l for l in WARNINGS.read_text().splitlines() if l.strip()]
    assert lines == [], '\n'.join(lines[:20])


def test_one_page_per_notebook_and_sections(site):
    for nb in (ROOT/'nbs').glob('*.ipynb'):
        assert (site/f'{nb.stem}.html').exists(), nb.name
    nav = (site/'index.html').read_text()
    for page in ('modules.html', 'tutorials.html', 'howto.html', 'contributing.html', 'api/index.html'):
        assert f'href="{page}"' in nav, f'home page does not link to {page}'
    assert 'apt-get' not in nav and 'tasks.py test' not in nav, 'developer commands belong on the Contributing page'
    assert 'apt-get' in (site/'contributing.html').read_text()
    howto = (site/'howto.html').read_text()
    for nb in (ROOT/'nbs').glob('8[0-9]_*.ipynb'): assert f'href="{nb.stem}.html"' in howto, nb.name
    modules = (site/'modules.html').read_text()
    numbered = sorted(p.stem for p in (ROOT/'nbs').glob('[0-7]*.ipynb'))
    positions = [modules.index(f'href="{s}.html"') for s in numbered]
    assert positions == sorted(positions), 'module pages are not in notebook order'


def test_api_reference_covers_every_public_name(site):
    names = public_names()
    assert len(names) > 200
    core = {'calibkit.events', 'calibkit.binning', 'calibkit.metrics', 'calibkit.charts', 'calibkit.report',
            'calibkit.extractors.taggers', 'calibkit.models.taggers', 'calibkit.datasets.conll'}   # subpackages too
    assert core <= {m for m, _ in names}
    missing = []
    for m, n in names:
        page = site/'api'/f'{m}.html'
        if not page.exists() or f'id="{m}.{n}"' not in page.read_text(): missing.append(f'{m}.{n}')
    assert missing == [], f'no API entry for {missing}'


def test_api_entries_link_to_notebooks_and_back(site):
    "Each module page links to its API page; the API entries' examples link back to the definition's place."
    for m, (nb_name, _) in docs_build.modules().items():
        page = site/'api'/f'{m}.html'
        if not page.exists(): continue
        nb_page = (site/Path(nb_name).with_suffix('.html').name).read_text()
        assert f'href="api/{m}.html"' in nb_page, f'{nb_name} does not link to its API page'
        api = page.read_text()
        backs = re.findall(r'href="\.\./' + re.escape(Path(nb_name).stem) + r'\.html#(src-[^"]+)"', api)
        assert backs, f'{m}: no API entry links back to {nb_name}'
        for anchor in set(backs): assert f'id="{anchor}"' in nb_page, f'{m}: broken link back #{anchor}'
    ece = (site/'api'/'calibkit.metrics.html').read_text()
    example = ece[ece.index('id="calibkit.metrics.ece"'):]
    example = example[:example.index('id="calibkit.metrics.', 30)]
    assert 'ck-example-output' in example, 'the ece entry shows no example output (the site shows the outputs committed in nbs/)'


def test_no_asset_from_another_host(site):
    "Scripts, styles, images, fonts and frames all come from the site itself (links to papers are fine)."
    bad = []
    tag = re.compile(r'<(script|link|img|iframe|source|embed)\b[^>]*?\b(src|href)="(https?:)?//[^"]*"', re.I)
    for p in site.rglob('*.html'):
        bad += [f'{p.relative_to(site)}: {m.group(0)[:120]}' for m in tag.finditer(p.read_text())]
    for p in site.rglob('*.css'):
        bad += [f'{p.relative_to(site)}: {m.group(0)}' for m in re.finditer(r'url\(\s*[\'"]?(https?:)?//[^)]*\)|@import\s+[\'"]?https?:[^;]*', p.read_text())]
    assert bad == [], '\n'.join(bad[:10])
    page = (site/'03_metrics.html').read_text()
    mathjax = re.search(r'<script[^>]*src="(_static/mathjax/[^"?]+)', page)
    assert mathjax and (site/mathjax.group(1)).exists(), 'MathJax is not served from the site'


# ---- in a browser ----------------------------------------------------------------------------------------
@pytest.fixture(scope='module')
def chrome(tmp_path_factory):
    why = browser.missing()
    if why: pytest.skip(f'no browser check: {why}')
    import shutil
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    opts = Options()
    opts.binary_location = shutil.which('chromium')
    for f in browser.FLAGS: opts.add_argument(f)
    opts.add_argument(f'--user-data-dir={tmp_path_factory.mktemp("chromium-profile")}')
    opts.set_capability('goog:loggingPrefs', {'browser': 'ALL', 'performance': 'ALL'})
    driver = webdriver.Chrome(service=Service(shutil.which('chromedriver')), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def visit(driver, url: str, ready: str, timeout: float = 30):
    """Open `url`, wait until the JS expression `ready` is truthy; return (its value, console errors,
    URLs of every request the page made)."""
    driver.get_log('browser'); driver.get_log('performance')       # forget the previous page's
    driver.get(url)
    end, value = time.time() + timeout, None
    while time.time() < end:
        value = driver.execute_script(f'return {ready}')
        if value: break
        time.sleep(0.25)
    errors = [e['message'] for e in driver.get_log('browser') if e['level'] in ('SEVERE', 'ERROR')]
    requests = []
    for e in driver.get_log('performance'):
        msg = json.loads(e['message'])['message']
        if msg['method'] == 'Network.requestWillBeSent':
            requests.append((msg['params'].get('documentURL', ''), msg['params']['request']['url']))
    return value, errors, requests


def offsite(requests):
    """Requests to the network, or made by the site to anything but its own files and inline data (the
    browser's own chrome:// pages, e.g. its start page, are not the site's)."""
    return [u for doc, u in requests if u.startswith(('http:', 'https:', 'ws:', 'wss:', 'ftp:'))
            or doc.startswith('file:') and not u.startswith(('file://', 'data:', 'blob:'))]


PAGES = ['index', 'modules', '03_metrics', '40_charts', '91_tutorial_twitter_pos', 'api/calibkit.metrics', 'api/index']


@pytest.mark.parametrize('page', PAGES)
def test_page_renders_offline(site, chrome, page):
    html = site/f'{page}.html'
    title, errors, requests = visit(chrome, html.as_uri(), "document.querySelector('h1') && document.title")
    assert title and 'calibkit' in title, f'{page}: no title'
    assert errors == [], f'{page}: console errors {errors}'
    assert any(doc.startswith('file:') and '.js' in u for doc, u in requests), 'no request seen: is the performance log on?'
    assert offsite(requests) == [], f'{page}: requests to other hosts {offsite(requests)}'


def test_chart_is_visible(site, chrome):
    "An Altair chart (SVG output of a notebook cell) is drawn with a real size."
    sizes, errors, _ = visit(chrome, (site/'40_charts.html').as_uri(), """(() => {
        const els = [...document.querySelectorAll('.cell_output svg, .cell_output img')].filter(e =>
            e.tagName.toLowerCase() === 'svg' || (e.complete && e.naturalWidth > 0 && /\\.svg$/.test(e.src)));
        const s = els.map(e => e.getBoundingClientRect()).filter(r => r.width > 50 && r.height > 50);
        return s.length ? s.map(r => [r.width, r.height]) : null; })()""")
    assert sizes, 'no chart with a nonzero size in a notebook output of 40_charts (the site shows the outputs committed in nbs/)'
    assert errors == []


def test_equation_is_typeset(site, chrome):
    n, errors, requests = visit(chrome, (site/'03_metrics.html').as_uri(),
                                "document.querySelectorAll('mjx-container svg').length")
    assert n and n > 0, 'MathJax typeset no equation on the metrics page'
    assert errors == [] and offsite(requests) == []


def test_search_finds_offline(site, chrome):
    hits, errors, requests = visit(chrome, (site/'search.html').as_uri() + '?q=calibration',
                                   "(() => { const done = document.querySelector('#search-results .search-summary');"
                                   "  return done && /\\d/.test(done.textContent) &&"
                                   "    [...document.querySelectorAll('#search-results li a')].map(a => a.href); })()")
    assert hits and len(hits) >= 5, f'search for "calibration" found {hits}'
    assert any(h.startswith('file://') and 'metrics' in h for h in hits)
    assert errors == [] and offsite(requests) == []


# ---- chart text, in the browser, at the site's width -------------------------------------------------------
def svg_outputs(nb: Path) -> int:
    "How many charts a notebook's committed cells show: SVG outputs, and charts inside HTML ones (a report shown inline)."
    data = [o.get('data', {}) for c in json.loads(nb.read_text())['cells'] for o in c.get('outputs', [])]
    return sum(('image/svg+xml' in d) + ''.join(d.get('text/html', '')).count('class="marks"') for d in data)


def checked(driver, timeout: float = 30) -> tuple[int, list[str]]:
    "How many charts the open page shows inline, and what is wrong with their text (browser.chart_text_problems)."
    driver.set_script_timeout(timeout)
    browser.loaded(driver, timeout)
    return driver.execute_script("return document.querySelectorAll('svg.marks').length"), browser.chart_text_problems(driver)


def test_chart_text_is_whole_and_readable_on_every_page(site, chrome):
    """Every page of a notebook that shows charts, in a window as wide as browser.FLAGS says: each chart is inline
    SVG (the page shows as many as its notebook has), drawn with calibkit's font, narrower than its column; its text lies inside
    it, is drawn at >= 9 CSS px, and no two titles (nor two labels of an axis) overlap."""
    problems, shown = [], 0
    for html in sorted(site.glob('*.html')):    # the pages of notebooks with charts (the others and the API draw none)
        nb = ROOT/'nbs'/html.with_suffix('.ipynb').name
        if not nb.exists() or not svg_outputs(nb): continue
        page = html.relative_to(site).as_posix()
        chrome.get(html.as_uri())
        n, found = checked(chrome)
        shown += n
        problems += [f'{page}: {p}' for p in found]
        if n != svg_outputs(nb):
            problems.append(f'{page}: {n} inline charts, but {nb.name} shows {svg_outputs(nb)}')
        # a big page may still be loading the face when the check runs: wait for that load (it fails without @font-face)
        if n and not chrome.execute_async_script(
                "const done = arguments[arguments.length - 1]; document.fonts.load('10px \"Calibkit Sans\"').then("
                "() => done([...document.fonts].some(f => f.family.replace(/\"/g, '') === 'Calibkit Sans' && "
                "f.status === 'loaded')), () => done(false));"):
            problems.append(f'{page}: calibkit\'s font is not loaded')
    assert shown > 20, f'only {shown} charts on the whole site'
    per_chart = {}                                  # one line per chart: its first problem and how many more
    for p in problems: per_chart.setdefault(p.split(' px wide)')[0], []).append(p)
    assert problems == [], f'{len(problems)} problems in {len(per_chart)} charts:\n' + '\n'.join(
        v[0] + (f' (and {len(v) - 1} more)' if len(v) > 1 else '') for v in per_chart.values())


def test_report_chart_text_is_whole_and_readable(chrome, tmp_path):
    """A report with a recalibrator and per-class groups (so grids of diagrams) at its own page's width (its grids use
    it: `calibkit.report.REPORT_PX`), in the window every page is checked in."""
    import numpy as np
    import calibkit as ck
    from calibkit.render import report_html
    conf, correct = ck.synthetic(4000, k=0.1, seed=1)
    tags = np.array(['NN', 'VB', 'JJ', 'RB', 'DT', 'IN', 'PRP', 'CC', 'CD', 'MD', 'TO', 'WDT', 'EX', 'FW', 'LS', 'UH'])
    ev = ck.make_events(conf, correct).assign(label=tags[np.arange(4000) % 16])   # 16 groups: 12 panels, 4 a row
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')          # the per-class fit's notes: not what this test is about
        report = ck.calibration_report(ev.iloc[2000:], fit=ev.iloc[:2000], grouper='per_class', recalibrator='isotonic')
    page = tmp_path/'report.html'
    page.write_text(report_html(report), encoding='utf-8')
    chrome.get(page.as_uri())
    n, problems = checked(chrome)
    assert n == len(report.charts) >= 4
    assert problems == [], '\n'.join(problems[:40])
# ---- the namespace -------------------------------------------------------------------------------------------
def test_top_level_namespace_is_calibkit_public_api():
    "`dir(calibkit)` lists calibkit's names only: no helper module it imported (sys, types, ...), no private name."
    import subprocess
    code = ('import calibkit as ck, json, types; names = dir(ck); '
            'print(json.dumps([names, [n for n in ("sys", "types", "os", "np", "pd", "importlib") if hasattr(ck, n)]]))')
    names, leaked = json.loads(subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout)
    assert leaked == [], f'calibkit.{leaked[0]} leaks into the package namespace'
    import calibkit
    public = set(calibkit._LAZY) | calibkit._SUBMODULES | {'settings', '__version__'}
    assert set(names) == public, sorted(set(names) ^ public)
    assert {'calib_mse', 'ece', 'calibration_report', 'multiclass', 'diagnostics', 'TemperatureScaling'} <= set(names)



def package_modules() -> list[str]:
    "Every module of the package (`calibkit._modidx`, nbdev's index, is not one of calibkit's)."
    import calibkit, pkgutil
    return sorted(m.name for m in pkgutil.walk_packages(calibkit.__path__, 'calibkit.') if m.name != 'calibkit._modidx')


@pytest.mark.parametrize('module', package_modules())
def test_module_namespace_is_its_public_api(module):
    "`dir(calibkit.<module>)` lists its `__all__` (a package also its submodules): not np, pd, os, Path, ..."
    import importlib
    if module == 'calibkit.dask': pytest.importorskip('dask')
    mod = importlib.import_module(module)
    public = set(getattr(mod, '__all__', ()))
    submodules = {n for n in vars(mod) if f'{module}.{n}' in sys.modules} if hasattr(mod, '__path__') else set()
    names = dir(mod)       # a package may list its submodules, imported or not yet: neither is a leak
    leaked = [n for n in names if n not in public | submodules and not (n.startswith('__') and n.endswith('__'))]
    assert public <= set(names), sorted(public - set(names))
    assert leaked == [], f'{module}.{leaked[0]} leaks into dir({module})'

# ---- search -------------------------------------------------------------------------------------------------
def search_text(site) -> dict:
    "page -> [its text, {anchor: offset}], as the search page reads it."
    body = (site/'_static'/'ck-search-text.js').read_text(encoding='utf-8')
    return json.loads(body.removeprefix('window.CK_SEARCH_TEXT = ').rstrip().removesuffix(';'))


def test_search_text_covers_every_page_and_api_entry(site):
    "The search page's summaries come from a text index of every page (no fetch: the site works from file://)."
    texts = search_text(site)
    pages = {p.relative_to(site).with_suffix('').as_posix() for p in site.rglob('*.html')
             if not p.relative_to(site).as_posix().startswith('_')} - {'search', 'genindex', 'py-modindex'}
    assert set(texts) == pages
    text, anchors = texts['api/calibkit.metrics']
    assert text[anchors['calibkit.metrics.ece']:].startswith('ece (')
    assert 'Expected calibration error' in text[anchors['calibkit.metrics.ece']:][:400]
    assert len(texts['40_charts'][0]) < len((site/'40_charts.html').read_text()) / 4, 'chart markup in the text index'
    search = (site/'search.html').read_text()
    assert 'ck-search-text.js' in search and 'ck-search.js' in search
    assert 'ck-search-text.js' not in (site/'index.html').read_text(), 'the text index loads with the search page only'


def search(chrome, site, query):
    "[(href, text of the result)] in the order the site's search ranks them, once every summary is in."
    hits, errors, requests = visit(chrome, (site/'search.html').as_uri() + '?q=' + query,
                                   "(() => { const done = document.querySelector('#search-results .search-summary');"
                                   "  const li = [...document.querySelectorAll('#search-results li')];"
                                   "  return done && /\\d/.test(done.textContent) && li.length && li.every(l => l.dataset.ckSummary) &&"
                                   "    li.map(l => [l.querySelector('a').getAttribute('href'), l.innerText]); })()")
    assert errors == [] and offsite(requests) == []
    return hits


@pytest.mark.parametrize('query, first', [('ece', 'api/calibkit.metrics.html#calibkit.metrics.ece'),
                                          ('calib_mse', 'api/calibkit.metrics.html#calibkit.metrics.calib_mse'),
                                          ('TemperatureScaling', 'api/calibkit.multiclass.html#calibkit.multiclass.TemperatureScaling')])
def test_search_finds_a_function_by_its_name_first_with_matching_text(site, chrome, query, first):
    hits = search(chrome, site, query)
    assert hits and hits[0][0] == first, [h for h, _ in hits[:5]]
    summaries = [t.split('\n', 1)[1] if '\n' in t else '' for _, t in hits]
    assert all(query.lower() in s.lower() for s in summaries[:5]), summaries[:5]


# ---- docments --------------------------------------------------------------------------------------------
# every module's public parameters are documented nbdev's way (a comment after each in the signature)


def undocumented(module: str) -> list[str]:
    """`name(param, ...)` for every public function or class of `module` with a parameter (or field) lacking a docment.
    A package without `__all__` (calibkit.extractors, calibkit.models) has no public names of its own: as on the site
    (docs/build.py documents the modules that have an `__all__`), its modules are documented each on its own."""
    import importlib, inspect
    from fastcore.docments import docments
    mod = importlib.import_module(module)
    if not hasattr(mod, '__all__'):
        if hasattr(mod, '__path__'): return []
        raise ValueError(f'{module} has no __all__: its public names are unknown')
    out = []
    for name in mod.__all__:
        obj = getattr(mod, name)
        if not callable(obj) or getattr(obj, '__module__', None) != module: continue
        if inspect.isclass(obj) and hasattr(obj, '_fields'):         # a NamedTuple: a comment after each field
            said = set(re.findall(r'^\s+(\w+)\s*:[^#\n]*#\s*\S', inspect.getsource(obj), re.M))
            missing = [f for f in obj._fields if f not in said]
        else:
            if inspect.isclass(obj) and '__init__' not in vars(obj): continue      # parameters of a base class
            params = [p for p in inspect.signature(obj).parameters if p not in ('self', 'cls')]
            docs = docments(obj, args_kwargs=True)
            missing = [p for p in params if not docs.get(p)]
        if missing: out.append(f'{name}({", ".join(missing)})')
    return out


@pytest.mark.parametrize('module', package_modules())
def test_every_public_parameter_is_documented(module):
    if module == 'calibkit.dask': pytest.importorskip('dask')
    if module == 'calibkit.models.seq2seq':
        for pkg in ('torch', 'tokenizers'): pytest.importorskip(pkg)
    assert undocumented(module) == [], f'{module}: parameters without a docment'


def test_undocumented_finds_a_parameter_without_a_comment(tmp_path, monkeypatch):
    (tmp_path/'ck_docments_probe.py').write_text(
        "from typing import NamedTuple\n__all__ = ['f', 'P']\n"
        "def f(a,  # the first\n      b=1):\n    return a\n"
        "class P(NamedTuple):\n    x: float  # said\n    y: float\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert undocumented('ck_docments_probe') == ['f(b)', 'P(y)']


def test_undocumented_package_without_all_has_no_names_but_a_module_needs_all(tmp_path, monkeypatch):
    (tmp_path/'ck_docments_pkg').mkdir()
    (tmp_path/'ck_docments_pkg'/'__init__.py').write_text('')
    (tmp_path/'ck_docments_pkg'/'mod.py').write_text("__all__ = ['f']\ndef f(a):\n    return a\n")
    (tmp_path/'ck_docments_bare.py').write_text("def f(a):\n    return a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert undocumented('ck_docments_pkg') == []
    assert undocumented('ck_docments_pkg.mod') == ['f(a)']
    with pytest.raises(ValueError, match='ck_docments_bare has no __all__'): undocumented('ck_docments_bare')


def test_api_entries_list_their_parameters(site):
    "The API reference renders each parameter's docment (the comment after it in the signature)."
    page = (site/'api'/'calibkit.metrics.html').read_text()
    entry = page[page.index('id="calibkit.metrics.ece"'):]
    entry = re.sub(r'<[^>]+>', '', entry[:entry.index('id="calibkit.metrics.', 30)])
    assert 'Parameters' in entry and 'number of equal-mass bins' in entry and "'l1' (mean)" in entry.replace('&#39;', "'").replace('‘', "'").replace('’', "'")


def test_api_examples_show_usage_first_and_fold_the_tests(site):
    code = lambda text: {'cell_type': 'code', 'source': text}
    assert docs_build.is_test_cell(code("test_eq(f(1),\n        2)\nassert g()  # fine\n"))
    assert not docs_build.is_test_cell(code("test_eq(f(1), 2)\nf(3)"))
    assert not docs_build.is_test_cell(code("#| hide\nx = f(1)"))
    page = (site/'api'/'calibkit.metrics.html').read_text()
    entry = page[page.index('id="calibkit.metrics.ece"'):]
    entry = entry[:entry.index('id="calibkit.metrics.', 30)]
    example = entry[entry.index('<strong>Example</strong>'):]
    first = re.sub(r'<[^>]+>', '', example[example.index('<pre>'):example.index('</pre>')]).strip()
    assert not first.startswith(('test_', 'assert')), first[:80]
    assert '<details class="ck-example-tests"><summary>Tests</summary>' in entry
    assert entry.index('<strong>Example</strong>') < entry.index('ck-example-tests')
