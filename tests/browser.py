"""Open a page in Debian's headless Chromium (via chromedriver): console errors, chart sizes, screenshots, and
whether the text of its charts is readable (`chart_text_problems`)."""
import shutil
from pathlib import Path

FLAGS = ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--disable-dev-shm-usage', '--window-size=1200,900']

MIN_TEXT_PX = 9          # no chart text drawn smaller than this, in CSS px
TEXT_SLACK = 0.5         # px a text's box may pass its chart's edge or another title (anti-aliasing, rounding)

# Every Vega chart (an <svg class="marks">) on the page: each visible text element must lie inside its SVG's box and
# be drawn at >= MIN_TEXT_PX (its font size times the scale the page applies); chart, subtitle, axis, legend and
# header titles must not overlap one another, nor the labels of one axis; the SVG must fit the column holding it.
CHART_TEXT_JS = """
const [minPx, slack, done] = arguments, out = [];
const TITLES = ['role-title-text', 'role-title-subtitle', 'role-axis-title', 'role-legend-title', 'role-column-title',
                'role-row-title', 'role-column-header', 'role-row-header'];
const role = t => { const g = t.closest('g[class*="role-"]'); return g ? [...g.classList].find(c => c.startsWith('role-')) : ''; };
const hit = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > slack &&
                      Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > slack;
const fmt = r => `[${r.left.toFixed(1)}, ${r.right.toFixed(1)}] x [${r.top.toFixed(1)}, ${r.bottom.toFixed(1)}]`;
document.fonts.ready.then(() => { [...document.querySelectorAll('svg.marks')].forEach((svg, i) => {
  const box = svg.getBoundingClientRect();
  if (box.width === 0 || box.height === 0) return;                       // not displayed (a collapsed section)
  const name = `chart ${i + 1} (${Math.round(box.width)} px wide)`;
  const column = (svg.closest('article, main, body') || document.body).getBoundingClientRect();
  if (box.right > column.right + slack || box.left < column.left - slack)
    out.push(`${name}: wider than its column (${fmt(box)} vs ${fmt(column)})`);
  const titles = [], labels = new Map();
  for (const t of svg.querySelectorAll('text')) {
    const text = t.textContent.trim(), style = getComputedStyle(t);
    if (!text || style.visibility === 'hidden' || style.display === 'none' || parseFloat(style.opacity) === 0) continue;
    const r = t.getBoundingClientRect(), m = t.getScreenCTM(), what = `${name} "${text.slice(0, 50)}"`;
    const px = parseFloat(style.fontSize) * Math.hypot(m.a, m.b);
    if (px < minPx - 1e-6) out.push(`${what}: drawn at ${px.toFixed(1)} px`);
    if (r.left < box.left - slack || r.right > box.right + slack || r.top < box.top - slack || r.bottom > box.bottom + slack)
      out.push(`${what}: outside its SVG (${fmt(r)} vs ${fmt(box)})`);
    const k = role(t);
    if (TITLES.includes(k)) titles.push([what, r]);
    if (k === 'role-axis-label') { const g = t.closest('g.role-axis-label'); labels.set(g, [...(labels.get(g) || []), [what, r]]); }
  }
  const overlaps = (items, why) => items.forEach(([a, ra], j) => items.slice(j + 1).forEach(([b, rb]) => {
    if (hit(ra, rb)) out.push(`${a} overlaps ${b.slice(name.length + 1)} (${why})`); }));
  overlaps(titles, 'titles');
  labels.forEach(items => overlaps(items, 'labels of one axis'));
}); done(out); });
"""


def loaded(driver, timeout: float = 30) -> None:
    "Wait until the open page has loaded: chromedriver's get() can return while a big page is still being parsed."
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script('return document.readyState') == 'complete')


def chart_text_problems(driver) -> list[str]:
    "What is wrong with the chart text of the page open in `driver` (see CHART_TEXT_JS), once it and its fonts are loaded."
    loaded(driver)
    return driver.execute_async_script(CHART_TEXT_JS, MIN_TEXT_PX, TEXT_SLACK)


def missing() -> str | None:
    "Why the browser check cannot run here, or None when it can."
    try: import selenium  # noqa: F401
    except ImportError: return 'selenium is not installed (it is in the dev extra)'
    for exe in ('chromium', 'chromedriver'):
        if shutil.which(exe) is None:
            return f'{exe} is not installed (Debian packages chromium and chromium-driver; `python3 tasks.py test` installs them as root)'
    return None


def open_page(html: Path, screenshot: Path | None = None) -> dict:
    "Load `html`; return its console errors and the rendered size of every <svg>; optionally save a full-page PNG."
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    opts = Options()
    opts.binary_location = shutil.which('chromium')
    for f in FLAGS: opts.add_argument(f)
    opts.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    driver = webdriver.Chrome(service=Service(shutil.which('chromedriver')), options=opts)
    try:
        driver.get(Path(html).resolve().as_uri())
        loaded(driver)
        sizes = driver.execute_script(
            "return [...document.querySelectorAll('svg')].map(s => {const r = s.getBoundingClientRect();"
            " return [r.width, r.height, getComputedStyle(s).visibility];})")
        errors = [e['message'] for e in driver.get_log('browser') if e['level'] in ('SEVERE', 'ERROR')]
        if screenshot is not None:
            height = driver.execute_script('return document.documentElement.scrollHeight')
            driver.set_window_size(1200, min(height, 6000))
            Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(screenshot))
        return dict(errors=errors, svgs=sizes, title=driver.title)
    finally:
        driver.quit()


if __name__ == '__main__':   # python tests/browser.py PAGE.html SHOT.png: screenshot, or say why not
    import sys
    why = missing()
    if why: sys.exit(f'no screenshot: {why}')
    r = open_page(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f'{sys.argv[2]}: {len(r["svgs"])} charts, {len(r["errors"])} console errors')
