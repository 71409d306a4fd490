#!/usr/bin/env python
"""Build calibkit's documentation site from the notebooks, offline: `python docs/build.py [--out _docs]`.

One page per notebook with its committed outputs (nothing is executed unless `--execute`), a generated
API reference for every name in every module's `__all__` (signature and docstring by autodoc, and as
example the notebook cells that follow the definition, with their outputs), section pages and a home page
from `nbs/index.ipynb`. Sources are staged in build/docs-src/ (git-ignored) and rendered by Sphinx +
myst-nb + pydata-sphinx-theme with the configuration in docs/conf.py; MathJax is served from the site.

    python docs/build.py                  # nbs/ as committed -> _docs/
    python docs/build.py --execute        # execute copies of the notebooks first (build/docs-exec/)
    python docs/build.py --src DIR        # notebooks from DIR (e.g. executed copies) instead of nbs/
"""
import argparse, ast, base64, copy, functools, gc, hashlib, json, os, re, shutil, sys, time
from html import unescape as html_unescape
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT/'docs'
NBS = ROOT/'nbs'
PKG = ROOT/'calibkit'
STAGE = ROOT/'build'/'docs-src'
DOCTREES = ROOT/'build'/'docs-doctrees'
EXECUTED = ROOT/'build'/'docs-exec'
MANIFEST = ROOT/'build'/'docs-manifest.json'   # what the last build documented (tests/test_docs.py reads it)
SEARCH_TEXT_CACHE = ROOT/'build'/'docs-search-text.json'    # {hash of a page's HTML and of this file: its text}
BUILD_CODE = Path(__file__).read_bytes()        # the code that extracts a page's text is part of each page's key
HOWTO_FROM = 80                 # notebooks numbered 80-89 are how-to guides,
TUTORIAL_FROM = 90              # 90 and up tutorials, the others document modules
README_ONLY = '<!-- readme-only'  # a home-page markdown cell that begins so is in README.md, not on the site
CONTRIBUTING = ROOT/'CONTRIBUTING.md'
# the build makes millions of small objects that live long (doctrees, the imported modules): with Python's default
# thresholds (700, 10, 10) its cyclic garbage collector scanned them over and over
GC_THRESHOLDS = (50_000, 20, 20)
MAX_EXAMPLE_CELLS = 2           # an API entry's example: at most this many usage cells after the definition (then tests, folded)

DIRECTIVE = re.compile(r'^\s*#\|\s*([\w-]+)\s*:?\s*(.*?)\s*$')
EDIT_HEADER = re.compile(r'File to edit: (?:\.\./)+nbs/(\S+\.ipynb)')
HEADING = re.compile(r'^(#{1,6})\s+(.+?)\s*$', re.M)
sys.path.insert(0, str(DOCS))
import conf as docs_conf  # noqa: E402  (docstrings are Markdown: the site's own converter to reST)


# ---- notebooks ---------------------------------------------------------------------------------------
def src_text(cell) -> str:
    s = cell.get('source', '')
    return ''.join(s) if isinstance(s, list) else s


def directives(cell) -> dict:
    "nbdev's `#| name value` lines at the top of a code cell."
    out = {}
    for line in src_text(cell).splitlines():
        m = DIRECTIVE.match(line)
        if not m:
            if line.strip(): break
            continue
        out[m.group(1)] = m.group(2)
    return out


def strip_directives(source: str) -> str:
    lines = source.splitlines()
    while lines and (DIRECTIVE.match(lines[0]) or not lines[0].strip()): lines.pop(0)
    return '\n'.join(lines)


def is_export(cell) -> bool:
    return cell['cell_type'] == 'code' and bool({'export', 'exports', 'exporti'} & directives(cell).keys())


def is_hidden(cell) -> bool:
    d = directives(cell)
    return 'hide' in d or 'default_exp' in d and not strip_directives(src_text(cell)).strip()


def kind(nb_path: Path) -> str:
    m = re.match(r'(\d+)_', nb_path.name)
    if nb_path.stem == 'index': return 'home'
    n = int(m.group(1)) if m else 0
    return 'tutorial' if n >= TUTORIAL_FROM else 'howto' if n >= HOWTO_FROM else 'module'


def title_of(nb) -> tuple[str, str]:
    "The notebook's `# title` and its `> description` line."
    for c in nb['cells']:
        if c['cell_type'] != 'markdown': continue
        t = re.search(r'^#\s+(.+)$', src_text(c), re.M)
        d = re.search(r'^>\s*(.+)$', src_text(c), re.M)
        if t: return t.group(1).strip(), d.group(1).strip() if d else ''
    return '', ''


def defined_names(source: str) -> list[str]:
    "Top-level names a code cell defines (functions, classes, assignments)."
    try: tree = ast.parse(strip_directives(source))
    except SyntaxError: return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): names.append(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                names += [e.id for e in ast.walk(t) if isinstance(e, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name): names.append(node.target.id)
    return names


# ---- modules -------------------------------------------------------------------------------------------
def modules() -> dict:
    "Every generated module: dotted name -> (its notebook's file name, its `__all__`), read without importing."
    out = {}
    for py in sorted(PKG.rglob('*.py')):
        text = py.read_text(encoding='utf-8')
        m = EDIT_HEADER.search(text[:2000])
        if not m or (py.name.startswith('_') and py.name != '__init__.py'): continue   # a package's own notebook: kept
        names = []
        for node in ast.parse(text).body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == '__all__' for t in node.targets):
                names = ast.literal_eval(node.value)
        if names:
            parts = py.relative_to(ROOT).with_suffix('').parts
            out['.'.join(parts[:-1] if parts[-1] == '__init__' else parts)] = (m.group(1), names)
    return out


def inspect_modules(mods: list[str]) -> tuple[dict, dict, dict]:
    """Import every module (in this process: autodoc imports them again from `sys.modules`): returns
    ({(module, name): 'class' | 'function' | 'data'}, {module: {constant: short repr}}, {module that fails to import: why})."""
    import importlib, inspect, reprlib
    sys.path.insert(0, str(ROOT))
    os.environ['CALIBKIT_QUIET'] = '1'
    kinds, values, failed = {}, {}, {}
    r = reprlib.Repr()
    r.maxstring = r.maxother = 80
    r.maxdict = r.maxlist = r.maxtuple = 6
    for m in mods:
        try: mod = importlib.import_module(m)
        except Exception as e:
            failed[m] = f'{type(e).__name__}: {e}'.splitlines()[0]
            continue
        for n in mod.__all__:
            o = getattr(mod, n)
            kinds[m, n] = k = 'class' if inspect.isclass(o) else 'function' if callable(o) else 'data'
            if k == 'data': values.setdefault(m, {})[n] = ' '.join(r.repr(o).split())
    return kinds, values, failed


# ---- staging -----------------------------------------------------------------------------------------
def md(text: str, cid: str) -> dict:
    return dict(cell_type='markdown', id=cid, metadata={}, source=text)


def label(qualname: str) -> str:
    "The target above a definition in its notebook (labels ignore case: the capitals' positions keep `Settings` apart from `settings`)."
    name = qualname.rsplit('.', 1)[-1]
    caps = ''.join(f'-{i}' for i, ch in enumerate(name) if ch.isupper())
    return 'src-' + qualname.lower() + caps


SVG_ID = re.compile(r'\b(id="|url\(#|href="#)([^")]+)')


def inline_svg(svg: str) -> str:
    """A chart's SVG as HTML for the page itself (not an `<img>`), so the browser draws its text with the font
    the site serves (the one calibkit measured it with); its ids made unique to the chart, since a page holds many."""
    svg = svg[svg.index('<svg'):]
    key = 'ck' + hashlib.sha256(svg.encode()).hexdigest()[:8] + '-'
    return '<div class="ck-chart">' + SVG_ID.sub(lambda m: m.group(1) + key + m.group(2), svg) + '</div>'


def inline_charts(outputs: list) -> list:
    "Cell outputs with every SVG image turned into inline HTML (the Vega-Lite spec beside it dropped)."
    out = []
    for o in outputs:
        data = o.get('data', {})
        if 'image/svg+xml' in data:
            svg = data['image/svg+xml']
            o = {**o, 'data': {'text/html': inline_svg(svg if isinstance(svg, str) else ''.join(svg))}, 'metadata': {}}
        out.append(o)
    return out
TEST_LINE = re.compile(r'\s|(test_\w+|assert)\b|[)\]}]')    # an assertion, or a continuation line of one


def is_test_cell(cell) -> bool:
    "A code cell made only of assertions (fastcore `test_*` calls, `assert`): an API entry shows it after the usage, folded."
    lines = [l for l in strip_directives(src_text(cell)).splitlines() if l.strip() and not l.lstrip().startswith('#')]
    return bool(lines) and all(TEST_LINE.match(l) for l in lines)


def render_cell(cell) -> dict:
    "A notebook cell as the site shows it: nbdev directives removed; hidden cells tagged away; charts inline."
    c = copy.deepcopy(cell)
    if c['cell_type'] != 'code': return c
    c['outputs'] = inline_charts(c.get('outputs', []))
    d = directives(c)
    tags = set(c.get('metadata', {}).get('tags', []))
    if is_hidden(c): tags.add('remove-cell')
    if d.get('echo') == 'false': tags.add('remove-input')
    if d.get('output') == 'false': tags.add('remove-output')
    c['source'] = strip_directives(src_text(c))
    c.setdefault('metadata', {})['tags'] = sorted(tags)
    return c


def section_of(cells, i) -> str:
    "The last heading above cell i."
    for c in reversed(cells[:i]):
        if c['cell_type'] == 'markdown':
            hs = HEADING.findall(src_text(c))
            if hs: return hs[-1][1]
    return ''


def notebook_pages(nb_path: Path, mods: dict, available: dict) -> tuple[dict, dict]:
    """The staged notebook (with an API link under its title and a target + API link above each exported
    definition) and, for every public name it defines, its example: {qualname: (section, cells)}."""
    nb = json.loads(nb_path.read_text(encoding='utf-8'))
    cells = nb['cells']
    default_exp = next((directives(c)['default_exp'] for c in cells
                        if c['cell_type'] == 'code' and 'default_exp' in directives(c)), None)
    module = f'calibkit.{default_exp.removesuffix(".__init__")}' if default_exp else None
    public = set(mods[module][1]) if module in mods and module in available else set()
    out, examples, seen = [], {}, set()
    for i, c in enumerate(cells):
        if is_export(c) and public:
            names = [n for n in defined_names(src_text(c)) if n in public and n not in seen]
            seen |= set(names)
            if names:
                targets = ''.join(f'({label(f"{module}.{n}")})=\n' for n in names)
                links = ' · '.join(f'{{py:obj}}`{n} <{module}.{n}>`' for n in names)
                out.append(md(f'{targets}API reference: {links}', f'ckapi{i}'))
                follow = []
                for c2 in cells[i + 1:]:
                    if is_export(c2) or (c2['cell_type'] == 'markdown' and HEADING.search(src_text(c2))): break
                    if c2['cell_type'] == 'code' and not is_hidden(c2) and strip_directives(src_text(c2)).strip():
                        follow.append(render_cell(c2))
                usage = [c2 for c2 in follow if not is_test_cell(c2)][:MAX_EXAMPLE_CELLS]
                tests = [c2 for c2 in follow if is_test_cell(c2)][:MAX_EXAMPLE_CELLS - len(usage) or 1]
                for n in names: examples[f'{module}.{n}'] = (section_of(cells, i), usage, tests)
        out.append(render_cell(c))
        if i == 0 and public and c['cell_type'] == 'markdown':
            out.append(md(f'API reference: {{doc}}`{module} <api/{module}>`', 'ckapimod'))
    nb['cells'] = out
    return nb, examples


def indent(text: str, n: int = 3) -> str:
    return '\n'.join(' ' * n + l if l.strip() else '' for l in text.splitlines())


def output_rst(out: dict, files: dict) -> str:
    "One stored cell output as reStructuredText (charts inline, as on the notebook pages; PNG images become files next to the page)."
    if out['output_type'] == 'stream':
        return '.. code-block:: none\n\n' + indent(out['text'] if isinstance(out['text'], str) else ''.join(out['text']))
    data = out.get('data', {})
    text = lambda k: data[k] if isinstance(data[k], str) else ''.join(data[k])
    if 'image/png' in data:
        body = base64.b64decode(text('image/png'))
        name = f'_ex/{hashlib.sha256(body).hexdigest()[:16]}.png'
        files[name] = body
        return f'.. image:: {name}\n   :alt: chart'
    if 'text/html' in data: return '.. raw:: html\n\n' + indent(text('text/html'))
    if 'text/plain' in data: return '.. code-block:: none\n\n' + indent(text('text/plain'))
    return ''


def example_rst(cells: list, files: dict) -> list[str]:
    "Code cells with their stored outputs, as reStructuredText lines."
    parts = []
    for c in cells:
        parts += ['.. container:: ck-example-input', '', indent('.. code-block:: python\n\n' + indent(src_text(c))), '']
        outs = [o for o in (output_rst(o, files) for o in c.get('outputs', [])) if o]
        if outs: parts += ['.. container:: ck-example-output', '', *[indent(o) + '\n' for o in outs]]
    return parts


def ref_text(text: str) -> str:
    "Plain text fit for the title of a reST cross-reference."
    return re.sub(r'[`*<>]', '', text).strip()


def api_page(module: str, nb_name: str, names: list[str], kinds: dict, values: dict, examples: dict,
             docstring: str) -> tuple[str, dict]:
    """The API reference of one module as reStructuredText (autodoc, and the examples with their stored
    outputs), and the image files its examples show."""
    stem, files = Path(nb_name).stem, {}
    head = f'``{module}``'
    parts = [head, '=' * len(head), '', docs_conf.markdown_to_rst(docstring), '',
             f'Documented in the notebook :doc:`../{stem}`.', '']
    parts += [f'- :py:obj:`{n} <{module}.{n}>`' for n in names] + ['']
    for n in names:
        q = f'{module}.{n}'
        what = kinds.get((module, n), 'data')
        if what == 'data':      # a constant: its value (autodoc would show the docstring of its type)
            parts += [f'.. py:data:: {q}', f'   :value: {values[n]}', '']
        else:
            parts += [f'.. auto{what}:: {q}'] + (['   :members:'] if what == 'class' else []) + ['']
        section, usage, tests = examples.get(q, ('', [], []))
        if usage or tests:
            where = ref_text(f'{stem} › {section}' if section else stem)
            if usage: parts += [f'**Example** (from :ref:`{where} <{label(q)}>`):', '', *example_rst(usage, files)]
            if tests:       # the notebook's checks, folded under the usage
                parts += ['.. raw:: html', '', '   <details class="ck-example-tests"><summary>Tests</summary>', '',
                          *example_rst(tests, files), '.. raw:: html', '', '   </details>', '']
                if not usage: parts += [f'(from :ref:`{where} <{label(q)}>`)', '']
        elif q in examples:
            parts += [f'Defined in :ref:`{stem} <{label(q)}>`; the notebook gives no example right after it.', '']
    return '\n'.join(parts) + '\n', files


def section_page(title: str, intro: str, entries: list[tuple[str, str, str]]) -> str:
    lines = [f'# {title}', '', intro, '']
    lines += [f'- {{doc}}`{doc}`' + (f' — {desc}' if desc else '') for doc, _, desc in entries]
    lines += ['', '```{toctree}', ':hidden:', ':maxdepth: 1', '', *[f'{t} <{doc}>' for doc, t, _ in entries], '```', '']
    return '\n'.join(lines)


class Stage:
    "Writes files into STAGE only when their content changes (Sphinx then rebuilds only what changed)."
    def __init__(self, root: Path):
        self.root, self.written = root, set()

    def write(self, rel: str, text: str):
        p = self.root/rel
        self.written.add(p)
        if p.exists() and p.read_text(encoding='utf-8') == text: return
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding='utf-8')

    def write_bytes(self, rel: str, body: bytes):
        p = self.root/rel
        self.written.add(p)
        if p.exists() and p.read_bytes() == body: return
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body)

    def write_nb(self, rel: str, nb: dict):
        self.write(rel, json.dumps(nb, indent=1, ensure_ascii=False) + '\n')

    def prune(self):
        for p in sorted(self.root.rglob('*'), reverse=True):
            if p.is_file() and p not in self.written: p.unlink()
            elif p.is_dir() and not any(p.iterdir()): p.rmdir()


def write_font_css():
    "calibkit's `@font-face` rules (`charts.font_css`) as a style sheet of the site: the charts' font, served from `_static`."
    sys.path.insert(0, str(ROOT))
    from calibkit.charts import font_css
    docs_conf.FONT_STATIC.mkdir(parents=True, exist_ok=True)
    target = docs_conf.FONT_STATIC/docs_conf.FONT_CSS
    if not target.exists() or target.read_text() != font_css(): target.write_text(font_css())


@functools.cache         # each module's page and its entry in the API index read it
def module_docstring(module: str) -> str:
    path = ROOT/Path(*module.split('.'))
    text = (path/'__init__.py' if path.is_dir() else path.with_suffix('.py')).read_text(encoding='utf-8')
    return ast.get_docstring(ast.parse(text)) or ''


def stage(src: Path) -> dict:
    "Write every source page into STAGE; returns counts."
    mods = modules()
    kinds, values, skipped = inspect_modules(list(mods))
    available = {m: True for m in mods if m not in skipped}
    st = Stage(STAGE)
    nbs = sorted(src.glob('*.ipynb'))
    if not any(p.stem == 'index' for p in nbs): sys.exit(f'no index.ipynb in {src}')
    entries = {'module': [], 'howto': [], 'tutorial': []}
    examples = {}
    for p in nbs:
        nb, ex = notebook_pages(p, mods, available)
        examples.update(ex)
        k = kind(p)
        if k == 'home':
            nb['cells'] = [c for c in nb['cells']
                           if not (c['cell_type'] == 'markdown' and src_text(c).lstrip().startswith(README_ONLY))]
            nb['cells'].append(md('```{toctree}\n:hidden:\n\nTutorials <tutorials>\nHow-to guides <howto>\n'
                                  'Modules <modules>\nAPI reference <api/index>\nContributing <contributing>\n```',
                                  'cktoc'))
        else:
            entries[k].append((p.stem, *title_of(nb)))
        st.write_nb(f'{p.stem}.ipynb', nb)
    st.write('modules.md', section_page('Modules', 'One notebook per module, in dependency order: each defines '
                                        'its functions with the equations they compute, then shows them at work.',
                                        entries['module']))
    st.write('tutorials.md', section_page('Tutorials', 'End-to-end studies on real, bundled data.', entries['tutorial']))
    st.write('howto.md', section_page('How-to guides', 'Short recipes for one task each, executed like every notebook.',
                                      entries['howto']))
    st.write('contributing.md', CONTRIBUTING.read_text(encoding='utf-8'))
    api_entries = []
    for m in sorted(available):
        nb_name, names = mods[m]
        page, files = api_page(m, nb_name, names, kinds, values.get(m, {}), examples, module_docstring(m))
        st.write(f'api/{m}.rst', page)
        for name, body in files.items(): st.write_bytes(f'api/{name}', body)
        api_entries.append((m, f'{m}', module_docstring(m).split('\n')[0]))
    intro = ('Every public name of every module (its `__all__`): signature, docstring, and the example that '
             'follows its definition in the notebook.')
    if skipped:
        intro += '\n\nNot documented here because they do not import in this environment: ' + \
                 ', '.join(f'`{m}` ({why})' for m, why in sorted(skipped.items())) + '.'
    st.write('api/index.md', section_page('API reference', intro, api_entries))
    st.prune()
    write_font_css()
    return dict(notebooks=len(nbs), modules=len(available), names=sum(len(mods[m][1]) for m in available),
                skipped=sorted(skipped))


# ---- search text -------------------------------------------------------------------------------------------
_TOKENS = re.compile(r'<!--.*?-->|<(script|style)\b.*?</\1\s*>|<[!?][^>]*>'     # comments, raw text, declarations
                     r'|<(/?)([a-zA-Z][^\s/>]*)((?:[^>"\']|"[^"]*"|\'[^\']*\')*?)(/?)>|[^<]+|<', re.S | re.I)
_ATTR = re.compile(r'([^\s=/>]+)(?:\s*=\s*("[^"]*"|\'[^\']*\'|[^\s>]+))?')
SKIP = {'svg', 'math', 'mjx-container'}   # and script, style: their raw text is never the page's
ANCHORED = {'dt', 'section'}


def _attrs(raw: str) -> dict:
    return {a.lower(): html_unescape(v.strip('"\'')) if v else None for a, v in _ATTR.findall(raw)}


def page_text(page: str) -> tuple[str, dict]:
    """The readable text of a built page's article (no scripts, styles, charts or header-link symbols), and where in
    it each API entry (`dt`) and section starts (its `id` -> offset). One regular expression splits the page into
    tags and text (a Python call per tag of an HTML parser was most of the time: the highlighted code is a span per
    token); a self-closing tag opens nothing."""
    depth = skip = size = 0
    parts, anchors = [], {}
    for m in _TOKENS.finditer(page):
        tok = m.group(0)
        if tok[0] != '<' or tok == '<':
            words = ' '.join((html_unescape(tok) if '&' in tok else tok).split())
            if depth and not skip and words:
                parts.append(words + ' ')
                size += len(words) + 1
            continue
        tag = m.group(3)
        if tag is None or m.group(5): continue              # comment, script/style, declaration; self-closing
        tag = tag.lower()
        if m.group(2):                                      # an end tag
            if tag == 'article': depth -= 1
            elif skip: skip -= 1
            continue
        raw = m.group(4)
        if tag == 'article': depth += 1
        elif depth and (tag in SKIP or skip or ('headerlink' in raw and _attrs(raw).get('class') == 'headerlink')):
            skip += 1
        elif depth and tag in ANCHORED and (i := _attrs(raw).get('id')): anchors[i] = size
    return ''.join(parts), anchors


def _read_json(path: Path) -> dict:
    try: return json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError): return {}


def write_search_text(out: Path) -> int:
    """`_static/ck-search-text.js`: every page's text and its anchors' offsets, for the summaries under search results
    (docs/_static/ck-search.js); returns the number of pages. A page whose HTML (and this file) is unchanged since the
    last build is not read again: its text is in SEARCH_TEXT_CACHE (Sphinx leaves an unchanged page alone)."""
    texts, cache, seen = {}, _read_json(SEARCH_TEXT_CACHE), {}
    for page in sorted(out.rglob('*.html')):
        rel = page.relative_to(out).with_suffix('').as_posix()
        if rel in ('search', 'genindex', 'py-modindex') or rel.startswith('_'): continue
        html = page.read_bytes()
        key = hashlib.sha256(BUILD_CODE + html).hexdigest()
        texts[rel] = seen[key] = cache.get(key) or list(page_text(html.decode('utf-8')))
    SEARCH_TEXT_CACHE.write_text(json.dumps(seen, ensure_ascii=False), encoding='utf-8')
    body = 'window.CK_SEARCH_TEXT = ' + json.dumps(texts, ensure_ascii=False, sort_keys=True) + ';\n'
    (out/'_static'/docs_conf.SEARCH_TEXT).write_text(body, encoding='utf-8')
    return len(texts)


# ---- executing copies ----------------------------------------------------------------------------------
def execute(dest: Path, timeout: int = 1200) -> Path:
    "Execute every notebook of nbs/ (cwd nbs/) into `dest`; a notebook whose source is unchanged is not re-run."
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    dest.mkdir(parents=True, exist_ok=True)
    os.environ['CALIBKIT_QUIET'] = '1'
    os.environ['IN_TEST'] = '1'     # as under nbdev-test: installed third-party plugins are not auto-loaded
    code = hashlib.sha256(b''.join(p.read_bytes() for p in sorted(PKG.rglob('*.py')))).hexdigest()
    for p in sorted(NBS.glob('*.ipynb')):
        key = hashlib.sha256(p.read_bytes() + code.encode()).hexdigest()
        stamp = dest/(p.name + '.sha256')
        if (dest/p.name).exists() and stamp.exists() and stamp.read_text() == key: continue
        t = time.time()
        nb = nbformat.read(p, as_version=4)
        try: NotebookClient(nb, timeout=timeout, kernel_name='python3', resources={'metadata': {'path': str(NBS)}}).execute()
        except CellExecutionError as e:
            sys.exit(f'{p.name} fails to execute: ' + (str(e).strip().splitlines() or ['?'])[-1])
        nbformat.write(nb, dest/p.name)
        stamp.write_text(key)
        print(f'executed {p.name} in {time.time() - t:.0f}s', flush=True)
    return dest


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', default=str(ROOT/'_docs'), help='where the site goes (default: _docs/)')
    ap.add_argument('--src', default=str(NBS), help='folder of notebooks to render (default: nbs/)')
    ap.add_argument('--execute', action='store_true', help=f'execute copies of nbs/ into {EXECUTED.relative_to(ROOT)}/ and render those')
    ap.add_argument('--fresh', action='store_true', help='ignore the cache of a previous build')
    a = ap.parse_args(argv)
    t0 = time.time()
    gc.set_threshold(*GC_THRESHOLDS)
    src = execute(EXECUTED) if a.execute else Path(a.src).resolve()
    out = Path(a.out).resolve()
    if a.fresh:
        for d in (STAGE, DOCTREES, out):
            shutil.rmtree(d, ignore_errors=True)
        SEARCH_TEXT_CACHE.unlink(missing_ok=True)
    counts = stage(src)
    warnings = ROOT/'build'/'docs-warnings.txt'
    from sphinx.cmd.build import build_main
    gc.freeze()         # the modules imported (calibkit's, torch, Sphinx): never garbage, never scanned again
    os.environ['CALIBKIT_QUIET'] = '1'
    scratch = out.parent/'jupyter_execute'           # myst-nb's copies of the notebooks, next to the site
    had_scratch = scratch.exists()
    rc = build_main(['-b', 'html', '-q', '-c', str(DOCS), '-d', str(DOCTREES), '-w', str(warnings),
                     str(STAGE), str(out)])
    if not had_scratch: shutil.rmtree(scratch, ignore_errors=True)
    if rc: sys.exit(f'sphinx failed (exit {rc})')
    write_search_text(out)
    pages = len(list(out.rglob('*.html')))
    MANIFEST.write_text(json.dumps(dict(counts, pages=pages), indent=1) + '\n')
    n_warn = len([l for l in warnings.read_text().splitlines() if 'WARNING' in l or 'ERROR' in l])
    print(f'built {out}/index.html: {pages} pages from {counts["notebooks"]} notebooks, API of {counts["names"]} names '
          f'in {counts["modules"]} modules' + (f' (not importable: {", ".join(counts["skipped"])})' if counts['skipped'] else '') +
          f'; {n_warn} warnings (build/docs-warnings.txt); {time.time() - t0:.0f}s', flush=True)


if __name__ == '__main__':
    main()
