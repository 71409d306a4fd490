// calibkit's search page: under each result, the page's text around the first word of the query (from the
// result's anchor on, e.g. an API entry's docstring). Sphinx fetches each page for that summary, which a browser
// refuses for a site opened from disk (file://); here the text comes from ck-search-text.js (written by
// docs/build.py), loaded with this page only.
(() => {
  const texts = window.CK_SEARCH_TEXT || {};
  const words = () => (new URLSearchParams(window.location.search).get('q') || '')
    .toLowerCase().split(/[\s.]+/).filter((w) => w.length > 1);
  const summary = (text, from, terms) => {
    const lower = text.toLowerCase();
    const find = (start) => terms.map((t) => [lower.indexOf(t, start), t]).filter(([i]) => i > -1)
      .sort((a, b) => a[0] - b[0])[0];
    const hit = find(from) || find(0);
    if (!hit) return null;
    const [at, term] = hit;
    const begin = from <= at ? from : 0;         // the result's own text: no '…' before its start
    const start = Math.max(at - 100, begin), end = Math.min(at + 140, text.length);
    const p = document.createElement('p');
    p.className = 'context';
    p.append((start > begin ? '…' : '') + text.slice(start, at));
    const mark = document.createElement('span');
    mark.className = 'highlighted';
    mark.textContent = text.slice(at, at + term.length);
    p.append(mark, text.slice(at + term.length, end) + (end < text.length ? '…' : ''));
    return p;
  };
  const fill = () => {
    const terms = words();
    document.querySelectorAll('#search-results li:not([data-ck-summary])').forEach((li) => {
      li.dataset.ckSummary = '1';
      const a = li.querySelector('a');
      if (!a || li.querySelector('p.context')) return;
      const [path, anchor] = a.getAttribute('href').split('#');
      const entry = texts[path.replace(/\.html$/, '')];
      const p = entry && summary(entry[0], (anchor && entry[1][decodeURIComponent(anchor)]) || 0, terms);
      if (p) li.appendChild(p);
    });
  };
  new MutationObserver(fill).observe(document.documentElement, { childList: true, subtree: true });
})();
