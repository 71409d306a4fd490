"""Sphinx configuration of calibkit's documentation site (built by `docs/build.py`, never edited by hand elsewhere).

The sources Sphinx reads are staged by build.py into build/docs-src/: the notebooks (with their committed
outputs: nothing is executed here), the section pages and the generated API reference.
"""
import re, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))      # this folder's extension (ck_fastbuild)

project = 'calibkit'
author = 'calibkit developers'
copyright = 'calibkit developers'

extensions = [
    'myst_nb',                     # notebooks (and MyST markdown) with their stored outputs
    'sphinx.ext.autodoc',          # API reference: signatures and docstrings
    'sphinx.ext.mathjax',
    'sphinx-mathjax-offline',      # MathJax served from _static/mathjax: no CDN
    'ck_fastbuild',                # less processor time: repeated code blocks highlighted once, stems memoised
]

root_doc = 'index'
exclude_patterns = ['_build', '**.ipynb_checkpoints']
suppress_warnings = [
    'mystnb.unknown_mime_type',    # Vega-Lite specs next to each chart's SVG: the SVG is what the page shows
    'myst.header',                 # notebooks use '##' for their first section under the '#' title
]

# notebooks: show what is committed, never execute while building the site
nb_execution_mode = 'off'
nb_output_stderr = 'show'
nb_merge_streams = True
# prose rendered from results (IPython.display.Markdown, `#| echo: false`) is parsed like the notebooks' own Markdown:
# math, tables and headings
nb_render_markdown_format = 'myst'
# a chart's static SVG first: never a Vega-Embed HTML view that would load scripts from a CDN
nb_mime_priority_overrides = [('html', 'image/svg+xml', 1), ('html', 'image/png', 2), ('html', 'text/html', 3)]
myst_enable_extensions = ['dollarmath', 'amsmath', 'colon_fence', 'deflist']
myst_heading_anchors = 3

# API reference
autodoc_member_order = 'bysource'
autodoc_typehints = 'signature'
autodoc_default_options = {'members': False}
add_module_names = False

# the site is opened from disk: everything it loads lives in _static
html_theme = 'pydata_sphinx_theme'
html_title = 'calibkit'
# calibkit's font (the one its charts are measured with) as @font-face rules: build.py writes them from
# calibkit.charts.font_css, so the inline SVG charts are drawn with it
FONT_STATIC = Path(__file__).resolve().parents[1]/'build'/'docs-font'
FONT_CSS = 'calibkit-font.css'
html_static_path = ['_static', str(FONT_STATIC)]
html_css_files = [FONT_CSS, 'calibkit.css']
html_last_updated_fmt = None
html_show_sourcelink = False
html_copy_source = False
# Sphinx's own search summaries are fetched from each page, which a browser refuses under file://: the search page
# shows them from ck-search-text.js instead (the text of every page, written by docs/build.py; ck-search.js)
html_show_search_summary = False
SEARCH_TEXT = 'ck-search-text.js'
# an explicit colour mode: without one the theme logs 'invalid theme mode' as a console error on a first visit
html_context = {'default_mode': 'light'}
html_theme_options = {
    'navigation_with_keys': False,
    'show_toc_level': 2,
    'navbar_align': 'left',
    'header_links_before_dropdown': 4,
    'icon_links': [],
    'use_edit_page_button': False,
    'secondary_sidebar_items': ['page-toc'],
    'footer_start': ['copyright'],
    'footer_end': [],
}
html_sidebars = {'index': []}


def _offline_mathjax(app, config):
    # sphinx-mathjax-offline points at its CommonHTML build, whose web fonts Chromium refuses to load from
    # file://; the SVG build draws glyphs itself and needs no font files
    config.mathjax_path = 'mathjax/tex-svg.js'


_CODE = re.compile(r'(``?|\$)(.+?)\1')


def markdown_to_rst(text: str) -> str:
    """calibkit's docstrings are written in Markdown (nbdev shows them in the notebooks): make `code` literal,
    `$maths$` typeset, and escape what reStructuredText would read as markup (`|B_i|` substitutions,
    `n_groups_` links, `*`)."""
    def esc(text):
        text = text.replace('\\', '\\\\').replace('*', r'\*').replace('|', r'\|')
        return re.sub(r'(?<=\w)_(?!\w)', r'\_', text)

    def line(text):
        out, pos = [], 0
        for m in _CODE.finditer(text):
            body = m.group(2)
            piece = m.group(0) if not body.strip() else f':math:`{body}`' if m.group(1) == '$' else f'``{body}``'
            out += [esc(text[pos:m.start()]), piece]
            pos = m.end()
        return ''.join(out + [esc(text[pos:])])

    return '\n'.join(line(l) for l in text.split('\n'))


def _parameters(obj) -> list[str]:
    "A reST field list of `obj`'s docments: the comment nbdev reads after each parameter in its signature."
    from fastcore.docments import docments
    try: docs = docments(obj, args_kwargs=True)
    except (TypeError, ValueError, OSError, SyntaxError): return []      # no Python source to read
    fields = [f':param {p}: {markdown_to_rst(d)}' for p, d in docs.items() if d and p not in ('return', 'self', 'cls')]
    if docs.get('return'): fields.append(f':returns: {markdown_to_rst(docs["return"])}')
    return ['', *fields] if fields else []


def _markdown_docstring(app, what, name, obj, options, lines):
    lines[:] = markdown_to_rst('\n'.join(lines)).split('\n')
    if what in ('function', 'class', 'method'): lines += _parameters(obj)


def _search_page_scripts(app, pagename, templatename, context, doctree):
    if pagename == 'search':
        app.add_js_file(SEARCH_TEXT)
        app.add_js_file('ck-search.js')


def setup(app):
    app.connect('autodoc-process-docstring', _markdown_docstring)
    app.connect('html-page-context', _search_page_scripts)
    app.connect('config-inited', _offline_mathjax, priority=900)
