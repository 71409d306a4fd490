"""A Sphinx extension that makes the site's build cheaper in processor time without changing one byte of what it writes.

The profile of a cold build (docs/build.py) showed Pygments and the search index's stemmer near the top:
- the API reference shows each definition's example cells again, and many blocks recur (the same test calls, the
  same outputs): a code block is highlighted once per source, language and options, and reused;
- Sphinx makes a new Pygments `HtmlFormatter` for every block, and each builds its whole style sheet again
  (`_create_stylesheet`): one formatter per set of options is made, then reused (it keeps no state between blocks);
- Sphinx memoises the stemmer within one page: the same English words recur over every page, so the stems are
  memoised for the whole build.
"""
import functools

from pygments import highlight
from pygments.filters import ErrorToken


def _freeze(value):
    "A hashable, order-independent key for the options Sphinx passes with a code block (dicts, lists, plain values)."
    if isinstance(value, dict): return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple, set)): return tuple(_freeze(v) for v in value)
    return value


def _cached_highlighting(bridge):
    """Wrap a `sphinx.highlighting.PygmentsBridge`'s `highlight_block`: a block already highlighted with the same
    source, language and options returns the same HTML. A block whose lexing fails goes to Sphinx's own method, which
    warns about it (with its location) and retries, and is not cached: every such block still warns."""
    original = bridge.highlight_block
    done, formatters = {}, {}

    def formatter(kwargs):
        key = _freeze(kwargs)
        if key not in formatters: formatters[key] = bridge.get_formatter(**kwargs)
        return formatters[key]

    @functools.wraps(original)
    def highlight_block(source, lang, opts=None, force=False, location=None, **kwargs):
        if not isinstance(source, str): source = source.decode()
        key = (source, lang, _freeze(opts or {}), force, _freeze(kwargs))
        if key in done: return done[key]
        lexer = bridge.get_lexer(source, lang, opts, force, location)
        try: html = highlight(source, lexer, formatter(kwargs))
        except ErrorToken: return original(source, lang, opts, force, location, **kwargs)
        done[key] = html
        return html

    bridge.highlight_block = highlight_block


def _builder_inited(app):
    if getattr(app.builder, 'highlighter', None) is not None and app.builder.highlighter.dest == 'html':
        _cached_highlighting(app.builder.highlighter)


def _memoised_stems(app, doctree, docname):
    "Once the HTML builder has made its search indexer (before it resolves the first page), memoise its stemmer."
    lang = getattr(getattr(app.builder, 'indexer', None), 'lang', None)
    if lang is not None and not hasattr(lang.stem, 'cache_info'):
        lang.stem = functools.cache(lang.stem)


def setup(app):
    app.connect('builder-inited', _builder_inited)
    app.connect('doctree-resolved', _memoised_stems)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
