"""A verdict names only what the evidence shows (issue 34, item 3). For every report made here (an all-correct top
bin, an all-wrong bottom bin, the binned estimate and the test disagreeing each way, the synthetic demo written to
disk), every report folder in sample_outputs/ and demo-output/, and every notebook's outputs (the documentation's
rendered reports):

- significance is worded with α ("at the 5% level"), never "at level 0.95" or "at the 95% level";
- every bin the verdict calls over- or under-confident has a Wilson interval (scipy's, computed here) that excludes
  the bin's mean confidence, and so has the overall direction;
- where the binned estimate and the test disagree, exactly one sentence says so (naming CalibMSE and the test) and
  what to conclude; where they agree, none does."""
import html, json, re, warnings
from pathlib import Path
import numpy as np, pandas as pd, pytest
from scipy.stats import binomtest
from calibkit.report import calibration_report

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = re.compile(r'\bat level 0?\.9|\bat the 9\d(?:\.\d+)?% level|\bsignificant at level')


def wilson(k: int, n: int, level: float):
    ci = binomtest(k, n).proportion_ci(level, method='wilson')
    return ci.low, ci.high


def check_wording(text: str, where: str):
    bad = FORBIDDEN.search(text)
    assert bad is None, f'{where}: {text[max(0, bad.start() - 80):bad.end() + 20]!r}'


def check_report(m: dict, bins: pd.DataFrame, page: str | None = None, where: str = 'report'):
    "The rules on one report: its metrics.json content `m`, its bins table, and its page when there is one."
    level = m['meta']['level']
    alpha = f'{100 * (1 - level):.3g}%'
    assert list(m['verdict']) == list(m['stages']), where
    for s, info in m['stages'].items():
        said, v, sig = m['verdict'][s], info['verdict'], info['significance']
        for t in said: check_wording(t, f'{where} ({s})')
        if sig['significant'] is not None:
            assert [t for t in said if t.startswith('Significance')][0].endswith(f'at the {alpha} level.'), said
        b = bins[(bins.stage == s) & (bins.group.astype(str) == 'all') & (bins.n > 0)].reset_index(drop=True)
        n = int(b.n.sum())
        lo, hi = wilson(min(n, round(v['accuracy'] * n)), n, level)
        direction = 'over-confident' if v['mean_conf'] > hi else 'under-confident' if v['mean_conf'] < lo else 'neither'
        assert v['direction'] == direction, (where, s, v['direction'], lo, hi, v['mean_conf'])
        for kind in ('over', 'under'):
            for r in v[kind]:
                first = int(np.argmin(np.abs(b.lo.to_numpy() - r['lo'])))
                run = b.iloc[first:first + r['bins']]
                assert len(run) == r['bins'] and run.hi.iloc[-1] == pytest.approx(r['hi'], rel=1e-5), (where, r)
                for row in run.itertuples():
                    lo, hi = wilson(int(round(row.acc * row.n)), int(row.n), level)
                    assert (hi < row.conf) if kind == 'over' else (lo > row.conf), (where, s, kind, row, lo, hi)
        told = [t for t in said if 'disagree' in t]
        if sig['significant'] is not None and sig['significant'] != v['distinguishable']:
            assert len(told) == 1 and 'CalibMSE' in told[0] and sig['name'] in told[0] and 'conclude' in told[0], said
        else: assert told == [], (where, s, told)
        if page is not None:
            for t in said: assert html.escape(t) in page, (where, t)
    if page is not None: check_wording(page, where)


def check(rep, where):
    check_report(rep.to_dict(), rep.bins, where=where)
    from calibkit.render import report_html        # the page shows the same sentences
    check_report(rep.to_dict(), rep.bins, report_html(rep), where)


def report(c, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return calibration_report(pd.DataFrame(dict(conf=c, correct=y)), n_samples=500, **kw)


def test_an_all_correct_top_bin_is_not_under_confident():
    "3,210 of 3,210 correct at mean confidence 0.99999, below them a calibrated tagger-like spread (issue 34)."
    r = np.random.default_rng(3)
    c = np.r_[r.uniform(.2, .9, 3210 * 9), np.full(3210, .99999)]
    y = np.r_[r.random(3210 * 9) < c[:3210 * 9], np.ones(3210, bool)].astype(int)
    rep = report(c, y)
    top = rep.bins.iloc[-1]
    assert (top.n, top.acc, round(top.conf, 9)) == (3210, 1.0, .99999) and top.ci_lo < .99999 < top.ci_hi
    assert not [u for u in rep.stages['before']['verdict']['under'] if u['hi'] > .999]
    assert not any('1.00 (1 bin)' in t for t in rep.verdict['before'])
    check(rep, 'all-correct top bin')


def test_an_all_wrong_bottom_bin_is_not_over_confident():
    r = np.random.default_rng(4)
    c = np.r_[np.full(3000, 1e-5), r.uniform(.2, .9, 27000)]
    y = np.r_[np.zeros(3000, bool), r.random(27000) < c[3000:]].astype(int)
    rep = report(c, y)
    bottom = rep.bins.iloc[0]
    assert (bottom.n, bottom.acc) == (3000, 0.0) and bottom.ci_lo == 0 < 1e-5 < bottom.ci_hi
    assert not [o for o in rep.stages['before']['verdict']['over'] if o['lo'] < .001]
    check(rep, 'all-wrong bottom bin')


def test_the_binned_estimate_and_the_test_disagreeing_each_way_are_reconciled():
    r = np.random.default_rng(0)                      # a small over-confidence of one sign: the test sees it
    c = r.uniform(.3, .9, 4000)
    quiet = report(c, (r.random(4000) < c - .03).astype(int))
    v, s = quiet.stages['before']['verdict'], quiet.stages['before']['significance']
    assert (v['distinguishable'], s['significant']) == (False, True)
    assert 'a small miscalibration is present' in quiet.verdict['before'][-1]
    check(quiet, 'binned: noise, test: significant')
    r = np.random.default_rng(0)                      # gaps that change sign from bin to bin: the bins see them
    c = np.sort(r.uniform(.2, .8, 4000))
    y = (r.random(4000) < c + np.where((np.arange(4000) * 10 // 4000) % 2 == 0, .08, -.08)).astype(int)
    loud = report(c, y)
    v, s = loud.stages['before']['verdict'], loud.stages['before']['significance']
    assert (v['distinguishable'], s['significant']) == (True, False)
    assert 'changes sign along the confidences' in loud.verdict['before'][-1]
    check(loud, 'binned: distinguishable, test: not significant')


def test_a_recalibrated_grouped_report_follows_the_rules():
    r = np.random.default_rng(5)
    c = r.beta(2, 2, 6000)
    ev = pd.DataFrame(dict(conf=c, correct=(r.random(6000) < c ** 1.4).astype(int),
                           label=r.choice(['N', 'V', 'A'], 6000, p=[.6, .3, .1])))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        rep = calibration_report(ev[3000:], fit=ev[:3000], grouper='tfg', n_groups=2, recalibrator='isotonic',
                                 n_samples=200, level=.9)          # another level: α = 10%
    assert any('at the 10% level' in t for t in rep.verdict['after'])
    check(rep, 'recalibrated, level 0.9')


def folders():
    "Every report folder on disk: sample_outputs/ and the demo's output (when it has been run here)."
    return sorted(p.parent for d in ('sample_outputs', 'demo-output') for p in (ROOT/d).rglob('metrics.json'))


@pytest.mark.parametrize('folder', folders() or [None], ids=lambda p: str(p and p.relative_to(ROOT)))
def test_every_report_folder_on_disk_follows_the_rules(folder):
    if folder is None: pytest.skip('no report folder in sample_outputs/ or demo-output/')
    page = (folder/'report.html').read_text(encoding='utf-8')
    check_report(json.loads((folder/'metrics.json').read_text()), pd.read_csv(folder/'bins.csv'), page, str(folder))


def test_the_synthetic_demo_report_follows_the_rules(tmp_path):
    from calibkit.demos import demo_synthetic
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        [folder] = demo_synthetic(tmp_path)
    check_report(json.loads((folder/'metrics.json').read_text()), pd.read_csv(folder/'bins.csv'),
                 (folder/'report.html').read_text(encoding='utf-8'), 'demo synthetic')


def output_text(cell) -> str:
    out = []
    for o in cell.get('outputs', []):
        out += o.get('text', []) if 'text' in o else [''.join(o.get('data', {}).get(k, ''))
                                                        for k in ('text/plain', 'text/html', 'text/markdown')]
    return ''.join(''.join(x) for x in out)


@pytest.mark.parametrize('nb', sorted((ROOT/'nbs').glob('*.ipynb')), ids=lambda p: p.name)
def test_the_documentations_rendered_reports_word_significance_with_alpha(nb):
    for i, cell in enumerate(json.loads(nb.read_text(encoding='utf-8'))['cells']):
        check_wording(output_text(cell), f'{nb.name}: cell {i}')
