"""Charts are measured with the font calibkit ships, so their SVG is the same whatever fonts a machine has.

The renderer (vl-convert) reads the system's font folders; these tests render the same charts with those
folders hidden (an empty tmpfs mounted over each, in a private mount namespace) and require byte-identical
SVG. A control chart that names an installed font instead shows that the hiding takes effect.
"""
import hashlib, json, os, shutil, subprocess, sys
from pathlib import Path
import pytest

FONT_DIRS = ['/usr/share/fonts', '/usr/local/share/fonts', str(Path.home()/'.fonts'), str(Path.home()/'.local/share/fonts')]

RENDER = r'''
import hashlib, json, sys, warnings
import numpy as np, pandas as pd, altair as alt
import calibkit as ck
from calibkit import charts
warnings.simplefilter('error')                     # a character outside the font would warn: fail instead
conf, correct = ck.synthetic(4000, k=0.1, seed=0)
q = np.r_[np.full(900, 0.001), np.full(100, 0.97)]; y = np.r_[np.zeros(899), 1, np.ones(90), np.zeros(10)]
t = ck.equal_mass_bins(conf, correct, n_bins=10)
study = pd.DataFrame({'n': [10, 100, 1000] * 2, 'calib_mse': [.1, .01, .001, .2, .05, .04], 'k': [0] * 3 + [.1] * 3})
made = {
    'reliability': charts.reliability(conf, correct, n_bins=10, title='Synthetic forecaster (k = 0.1) − 10 bins'),
    'logit': charts.reliability(q, y, n_bins=5, title='Near 0 and 1: log-odds axes'),
    'grid': charts.reliability_grid({'group 1': t, 'group 2 (rare tags, ≥ 5 events)': t}),
    'study': charts.study_curve(study, 'n', 'calib_mse', color='k', log_x=True, log_y=True, title='CalibMSE vs n'),
    'control': alt.Chart(study).mark_point().encode(x='n:Q', y='calib_mse:Q').properties(title='A title in DejaVu Sans')
                  .configure(font='DejaVu Sans'),
}
print(json.dumps({k: hashlib.sha256(charts.to_svg(c).encode()).hexdigest() for k, c in made.items()}))
'''


def render(hide: bool) -> dict:
    cmd = [sys.executable, '-c', RENDER]
    if hide:
        mounts = '; '.join(f'mount -t tmpfs none {d}' for d in FONT_DIRS if os.path.isdir(d))
        script = f'{mounts}; exec "$@"'
        cmd = ['unshare', '-m', '--propagation', 'private', *([] if os.geteuid() == 0 else ['-r']), 'sh', '-c', script, 'sh', *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, 'CALIBKIT_QUIET': '1'})
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def namespaces_unavailable() -> str | None:
    if not sys.platform.startswith('linux') or shutil.which('unshare') is None: return 'needs Linux and unshare(1)'
    r = subprocess.run(['unshare', '-m', '--propagation', 'private', *([] if os.geteuid() == 0 else ['-r']), 'true'],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else f'cannot make a mount namespace here: {r.stderr.strip()}'


@pytest.mark.skipif(namespaces_unavailable() is not None, reason=str(namespaces_unavailable()))
def test_charts_are_identical_without_the_system_fonts():
    if not any(os.path.isdir(d) and any(Path(d).rglob('*.[ot]tf')) for d in FONT_DIRS):
        pytest.fail('no system font installed: install one (e.g. Debian fonts-dejavu-core) so the control can differ')
    seen, hidden = render(hide=False), render(hide=True)
    assert seen.pop('control') != hidden.pop('control'), 'hiding the font folders changed nothing: the test proves nothing'
    assert seen == hidden, {k for k in seen if seen[k] != hidden[k]}


def test_report_pages_serve_the_font_they_were_measured_with(tmp_path):
    import calibkit as ck
    conf, correct = ck.synthetic(500, k=0.1, seed=1)
    page = ck.calibration_report(ck.make_events(conf, correct)).to_html()
    assert page.count('@font-face') == 2 and 'data:font/ttf;base64,' in page and 'http' not in page.split('</style>')[0]
    svg_fonts = {f for f in __import__('re').findall(r'font-family="([^"]+)"', page)}
    assert svg_fonts == {'&quot;Calibkit Sans&quot;, &quot;DejaVu Sans&quot;, sans-serif'}, svg_fonts


def test_the_font_files_are_what_the_readme_says():
    from calibkit.config import package_dir
    d = package_dir()/'fonts'
    assert sorted(p.name for p in d.iterdir() if p.is_file()) == ['CalibkitSans-Bold.ttf', 'CalibkitSans-Regular.ttf',
                                                                  'LICENSE', 'README.md', 'ranges.txt']
    for f in ('CalibkitSans-Regular.ttf', 'CalibkitSans-Bold.ttf'):
        from fontTools.ttLib import TTFont
        font = TTFont(d/f)
        assert font['name'].getDebugName(1) == 'Calibkit Sans'
        cmap = set(font.getBestCmap())
        from calibkit.charts import font_chars
        assert {ord(c) for c in font_chars()} <= cmap, f'{f} lacks characters ranges.txt promises'
    assert 'Bitstream Vera' in (d/'LICENSE').read_text()
