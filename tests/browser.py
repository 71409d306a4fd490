"Open a page in Debian's headless Chromium (via chromedriver): console errors, chart sizes, screenshots."
import shutil
from pathlib import Path

FLAGS = ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--disable-dev-shm-usage', '--window-size=1200,900']


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
