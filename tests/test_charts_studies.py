"Charts and synthetic studies: input validation, chart orientation, saved-file determinism, the Jensen property."
import json, subprocess, sys
import numpy as np, pandas as pd, pytest
from hypothesis import given, settings as hsettings, strategies as st
from calibkit.binning import equal_mass_bins, fixed_width_bins
from calibkit.charts import CONF_TITLE, ACC_TITLE, reliability, reliability_grid, save_chart, study_curve, chart_spec
from calibkit.events import make_events
from calibkit.metrics import calib_mse, calib_mse_interval
from calibkit.studies import bin_size_study, sample_size_study, synthetic, true_accuracy


@pytest.fixture(scope='module')
def data():
    rng = np.random.default_rng(7)
    q = rng.beta(2, 2, 3000)
    return q, (rng.random(3000) < q ** 1.5).astype(np.uint8)


# --- synthetic -----------------------------------------------------------------------------------

@pytest.mark.parametrize('kw, msg', [
    (dict(n=0), 'n must be an integer >= 1'), (dict(n=-3), 'n must be an integer >= 1'),
    (dict(n=2.5), 'n must be an integer >= 1'), (dict(n='10'), 'n must be an integer >= 1'),
    (dict(n=True), 'n must be an integer >= 1'),
    (dict(n=5, alpha=0), 'alpha must be a finite number > 0'), (dict(n=5, beta=np.inf), 'beta must be a finite number > 0'),
    (dict(n=5, alpha=np.nan), 'alpha must be'), (dict(n=5, beta='2'), 'beta must be'),
    (dict(n=5, k=0.51), 'k must be a finite number in [0, 0.5]'), (dict(n=5, k=-0.01), 'k must be'),
    (dict(n=5, k=np.nan), 'k must be'), (dict(n=5, k=True), 'k must be')])
def test_synthetic_rejects_bad_input(kw, msg):
    with pytest.raises(ValueError, match=msg.replace('[', r'\[').replace(']', r'\]')): synthetic(**kw)


def test_true_accuracy_hand_values_and_validation():
    np.testing.assert_allclose(true_accuracy([.3, .05, .95, .6, .5, 0., 1.], .1), [.2, 0, 1, .7, .4, 0, 1], atol=1e-12)
    np.testing.assert_array_equal(true_accuracy([.1, .5, .9], 0), [.1, .5, .9])
    np.testing.assert_allclose(true_accuracy(.7, .25), [.95])
    with pytest.raises(ValueError, match=r'q: 1 of 2 values are outside \[0, 1\]'): true_accuracy([.2, 1.2], .1)


def test_synthetic_outcome_rate_follows_t():
    q, y = synthetic(200_000, alpha=1.0, beta=1.0, k=0.2, seed=1)   # uniform q: E[t(q)] = 0.5 by symmetry
    lo, hi = q <= .5, q > .5
    assert abs(y[lo].mean() - np.mean(np.maximum(0, q[lo] - .2))) < 0.005
    assert abs(y[hi].mean() - np.mean(np.minimum(1, q[hi] + .2))) < 0.005
    assert y[q < .2].sum() == 0 and y[q > .8].all()                    # clipped branches are deterministic


# --- studies -------------------------------------------------------------------------------------

def test_bin_size_study_table():
    t = bin_size_study([4, 2, 8, 4], n=100, ks=(0.0, 0.3), seeds=[1, 2])
    assert list(t.columns) == ['k', 'seed', 'n', 'bin_size', 'n_bins', 'calib_mse']
    assert len(t) == 2 * 2 * 3                                        # bin sizes deduplicated and sorted
    assert list(t.bin_size[:3]) == [2, 4, 8] and list(t.n_bins[:3]) == [50, 25, 12]
    q, y = synthetic(100, k=0.3, seed=2)
    row = t[(t.k == .3) & (t.seed == 2) & (t.bin_size == 8)]
    assert row.calib_mse.item() == calib_mse(q, y, bin_size=8)


@pytest.mark.parametrize('sizes, msg', [([0, 10], '1 of 2 values are not integers in'), ([2.5], 'not integers'),
                                        ([101], r'in \[1, 100\]'), ([], 'non-empty')])
def test_bin_size_study_rejects_bad_bin_sizes(sizes, msg):
    with pytest.raises(ValueError, match=msg): bin_size_study(sizes, n=100)


def test_studies_reject_bad_settings():
    with pytest.raises(ValueError, match='k must be'): bin_size_study([2], n=10, ks=(0.7,))
    with pytest.raises(ValueError, match='ks is empty'): bin_size_study([2], n=10, ks=())
    with pytest.raises(ValueError, match='seeds'): bin_size_study([2], n=10, seeds=[-1])
    with pytest.raises(ValueError, match='alpha must be'): sample_size_study([100], alpha=-1)
    with pytest.raises(ValueError, match='sizes'): sample_size_study([0])


def test_sample_size_study_matches_direct_calls():
    t = sample_size_study([400, 100], ks=(0.1,), seeds=[3], n_samples=50)
    assert list(t.n) == [100, 400] and list(t.bin_size) == [10, 20]
    q, y = synthetic(400, k=0.1, seed=3)
    iv = calib_mse_interval(q[:100], y[:100], bin_size=10, n_samples=50, seed=3)
    assert tuple(t.iloc[0][['calib_mse', 'lo', 'hi']]) == tuple(iv)


@hsettings(max_examples=150, deadline=None)
@given(n=st.integers(2, 300), seed=st.integers(0, 10**6), digits=st.sampled_from([1, 2, 6]), data=st.data())
def test_doubling_bin_size_never_increases_calib_mse(n, seed, digits, data):
    "Jensen: with the merge-the-short-last-bin rule, bins of 2b are unions of bins of b for any n >= 2b."
    b = data.draw(st.integers(1, n // 2))
    rng = np.random.default_rng(seed)
    q = np.round(rng.random(n), digits)                               # rounding makes ties across boundaries
    y = rng.random(n) < q
    assert calib_mse(q, y, bin_size=2 * b) <= calib_mse(q, y, bin_size=b) + 1e-12


# --- reliability ---------------------------------------------------------------------------------

def _diagram(spec): return (spec['vconcat'] if 'vconcat' in spec else spec['hconcat'])[0]
def _points(chart): return _diagram(chart.to_dict())['layer'][2]['encoding']
def _rules(chart): return _diagram(chart.to_dict())['layer'][1]['encoding']
def _text(title): return title if isinstance(title, str) else ' '.join(title)


def test_reliability_conf_axis_y_swaps_encodings(data):
    x, y = reliability(*data), reliability(*data, conf_axis='y')
    px, py = _points(x), _points(y)
    assert (px['x']['field'], px['y']['field']) == ('conf', 'acc') == (py['y']['field'], py['x']['field'])
    assert (px['x']['title'], px['y']['title']) == (CONF_TITLE, ACC_TITLE) == (py['y']['title'], py['x']['title'])
    rx, ry = _rules(x), _rules(y)
    assert (rx['x']['field'], rx['y']['field'], rx['y2']['field']) == ('conf', 'ci_lo', 'ci_hi')
    assert (ry['y']['field'], ry['x']['field'], ry['x2']['field']) == ('conf', 'ci_lo', 'ci_hi')
    assert 'above the diagonal' in _text(x.to_dict()['title']['subtitle'])
    assert 'below the diagonal' in _text(y.to_dict()['title']['subtitle'])
    hx, hy = x.to_dict()['vconcat'][1]['encoding'], y.to_dict()['hconcat'][1]['encoding']   # histogram beneath / beside
    assert (hx['x']['field'], hx['x2']['field'], hx['y']['field']) == ('lo', 'hi', 'n') == (hy['y']['field'], hy['y2']['field'], hy['x']['field'])


def test_reliability_routes_agree_and_title_holds_score(data):
    q, y = data
    a, b = reliability(q, y, bin_size=300), reliability(make_events(q, y), bin_size=300)
    assert a.to_dict() == b.to_dict()
    iv = calib_mse_interval(q, y, bin_size=300, level=.9)
    title = _text(reliability(q, y, bin_size=300, level=.9, title='M').to_dict()['title']['text'])
    assert title == f'M: CalibMSE {calib_mse(q, y, bin_size=300):.3g} (90% CI {iv.lo:.3g}–{iv.hi:.3g})'
    table_title = _text(reliability(equal_mass_bins(q, y, bin_size=300)).to_dict()['title']['text'])
    assert table_title == f'Reliability diagram: CalibMSE {calib_mse(q, y, bin_size=300):.3g}'   # no CI from a table


def test_reliability_label_colours_and_empty_bins_dropped(data):
    q, y = data
    assert 'color' not in _points(reliability(q, y))
    lab = reliability(q, y, label='crf')
    assert _points(lab)['color']['field'] == 'label' and _text(lab.to_dict()['title']['text']).startswith('crf: ')
    fw = fixed_width_bins(q * .5, y, n_bins=10)                       # confidences only in [0, .5]: 5 empty bins
    spec = reliability(fw).to_dict()
    rows = spec['datasets'][spec['data']['name']]
    assert len(rows) == 5 and all(r['n'] > 0 for r in rows)


@pytest.mark.parametrize('make, err, msg', [
    (lambda t: t.drop(columns=['hi', 'n']), ValueError, r"lacks column\(s\) \['hi', 'n'\]"),
    (lambda t: t.assign(n=0), ValueError, 'no non-empty bin'),
    (lambda t: t.assign(n=-1), ValueError, 'non-negative integer counts'),
    (lambda t: t.assign(n=np.r_[1, 2, 2.5, 3]), ValueError, 'non-negative integer counts; 1 of 4 are not'),
    (lambda t: t.assign(n='a'), ValueError, 'column n must hold counts, got dtype'),
    (lambda t: t.assign(acc=np.where(t.index == 0, np.nan, t.acc)), ValueError, 'column acc: 1 of 4 values are NaN'),
    (lambda t: t.assign(conf=t.conf + 1), ValueError, r'column conf: 4 of 4 values are outside \[0, 1\]'),
])
def test_reliability_rejects_bad_tables(make, err, msg):
    t = equal_mass_bins(np.linspace(0, 1, 40), np.arange(40) % 2, n_bins=4)
    with pytest.raises(err, match=msg): reliability(make(t))


def test_reliability_rejects_bad_arguments(data):
    q, y = data
    t = equal_mass_bins(q, y, n_bins=5)
    with pytest.raises(ValueError, match="conf_axis must be 'x'"): reliability(q, y, conf_axis='z')
    with pytest.raises(ValueError, match=r"\['bin_size', 'level'\] apply only to events"): reliability(t, bin_size=3, level=.9)
    with pytest.raises(ValueError, match='6000 non-empty bins, too many'): reliability(np.r_[q, q / 2], np.r_[y, y], bin_size=1)   # 6000 distinct scores (tied ones share a bin)
    with pytest.raises(ValueError, match='correct has 2 values but conf has 3000'): reliability(q, [0, 1])
    with pytest.raises(TypeError, match='correct is required'): reliability(q)
    with pytest.raises(ValueError, match='n_bins must be an integer in'): reliability(q, y, n_bins=0)


def test_reliability_grid_validation(data):
    t = equal_mass_bins(*data, n_bins=5)
    with pytest.raises(TypeError, match='tables must be a dict'): reliability_grid([t])
    with pytest.raises(ValueError, match='columns must be an integer >= 1, got 0'): reliability_grid({'a': t}, columns=0)
    with pytest.raises(ValueError, match='columns must be an integer >= 1, got nan'): reliability_grid({'a': t}, columns=float('nan'))
    with pytest.raises(ValueError, match=r"tables\['b'\] lacks column"): reliability_grid({'a': t, 'b': t.drop(columns='acc')})
    g = reliability_grid({'a': t, 'b': t}, columns=1, conf_axis='y').to_dict()
    assert g['columns'] == 1 and _diagram(g['concat'][0])['layer'][2]['encoding']['x']['field'] == 'acc'
    assert reliability_grid({k: t for k in 'abcde'}, columns=4).to_dict()['columns'] == 2     # what fits a page


def test_study_curve_validation():
    df = pd.DataFrame(dict(x=[1, 2, 3], y=[.1, np.nan, .3], z=[0., .1, .2]))
    with pytest.raises(ValueError, match='df column y: 1 of 3 values are missing'): study_curve(df, 'x', 'y')
    with pytest.raises(ValueError, match='log scale on z: 1 of 3 values are <= 0'): study_curve(df, 'x', 'z', log_y=True)
    with pytest.raises(ValueError, match='6000 rows'): study_curve(pd.DataFrame(dict(x=range(6000), y=1.)), 'x', 'y')
    with pytest.raises(TypeError, match='df must be a DataFrame'): study_curve({'x': [1]}, 'x', 'y')


# --- save_chart ----------------------------------------------------------------------------------

def test_save_chart_rejects_bad_input(tmp_path, data):
    ch = reliability(*data)
    with pytest.raises(TypeError, match='chart must be an Altair chart'): save_chart(ch.to_dict(), tmp_path/'x')
    for bad, formats in (('x.svg', 'png'), ('x.vl.json', ('svg', 'vl.json')), ('x.png', ['pdf'])):
        with pytest.raises(ValueError, match=r'names the format .*, formats asks for'): save_chart(ch, tmp_path/bad, formats)
    for bad in ('x.json', 'x.jpeg'):
        with pytest.raises(ValueError, match='its extension names no format calibkit writes'): save_chart(ch, tmp_path/bad)
    assert list(tmp_path.iterdir()) == []


def test_save_chart_takes_the_format_from_the_extension_as_altair_does(tmp_path, data):
    "Issue 35: save_chart(chart, 'fig.png') was refused; Altair and matplotlib pick the format from the extension."
    ch = reliability(*data)
    for name in ('fig.svg', 'fig.png', 'fig.pdf', 'fig.html', 'fig.vl.json', 'FIG.SVG'):
        (path,) = save_chart(ch, tmp_path/name)
        assert path == tmp_path/name and path.exists()
    assert save_chart(ch, tmp_path/'both.svg', 'svg') == [tmp_path/'both.svg']
    assert (tmp_path/'fig.svg').read_bytes() == save_chart(ch, tmp_path/'again')[0].read_bytes()


def test_save_chart_writes_both_files_and_overwrites(tmp_path, data):
    ch = reliability(*data)
    svg, spec = save_chart(ch, tmp_path/'a'/'b'/'rel')
    assert (svg.name, spec.name) == ('rel.svg', 'rel.vl.json')
    assert svg.read_text().startswith('<svg') and json.loads(spec.read_text()) == chart_spec(ch)
    save_chart(reliability(*data, conf_axis='y'), tmp_path/'a'/'b'/'rel')   # replaces in place, no leftovers
    assert sorted(p.name for p in (tmp_path/'a'/'b').iterdir()) == ['rel.svg', 'rel.vl.json']
    assert 'below the diagonal' in spec.read_text()


def test_save_chart_png_is_the_svg_at_twice_its_size_and_html_opens_offline(tmp_path, data):
    import re, struct
    svg, png, html = save_chart(reliability(*data), tmp_path/'rel', formats=['svg', 'png', 'html'])
    w, h = (float(re.search(rf'<svg[^>]*\b{k}="([\d.]+)"', svg.read_text()).group(1)) for k in ('width', 'height'))
    assert struct.unpack('>II', png.read_bytes()[16:24]) == (round(2 * w), round(2 * h))
    page = html.read_text()
    assert svg.read_text() in page and '@font-face' in page and 'http' not in page.replace('http://www.w3.org', '')


SCRIPT = """
import numpy as np
from calibkit.charts import reliability, reliability_grid, save_chart
from calibkit.binning import equal_mass_bins
rng = np.random.default_rng(0); q = rng.beta(2, 2, 5000); y = rng.random(5000) < q ** 2
save_chart(reliability(q, y, label='m'), OUT + '/r')
save_chart(reliability_grid({'a': equal_mass_bins(q, y, n_bins=8), 'b': equal_mass_bins(q, y, n_bins=4)}), OUT + '/g')
"""


def test_save_chart_is_byte_identical_across_processes(tmp_path):
    "Once in a fresh interpreter (its own hash seed, fresh vl-convert), once here: same bytes."
    one, two = tmp_path/'one', tmp_path/'two'
    one.mkdir(); two.mkdir()
    subprocess.run([sys.executable, '-c', f'OUT = {str(one)!r}' + SCRIPT], check=True)
    exec(SCRIPT, {'OUT': str(two)})
    files = [{p.name: p.read_bytes() for p in sorted(d.iterdir())} for d in (one, two)]
    assert sorted(files[0]) == ['g.svg', 'g.vl.json', 'r.svg', 'r.vl.json']
    assert files[0] == files[1]


# --- inline SVG display, log-odds view, smooth curves -----------------------------------------------

def _over(n=3000, seed=7):
    rng = np.random.default_rng(seed)
    q = rng.beta(2, 2, n)
    return q, (rng.random(n) < q ** 1.5).astype(np.uint8)


def _marginal(n=40_000, seed=3):
    rng = np.random.default_rng(seed)
    q = rng.beta(.3, 6, n)
    return q, (rng.random(n) < q).astype(np.uint8)


def test_charts_display_as_svg_whatever_the_active_renderer():
    import altair as alt
    from calibkit.charts import reliability, SVGDisplay, svg_display
    q, y = _over()
    before = alt.renderers.active
    try:
        alt.renderers.enable('default')                     # the CDN-loading HTML renderer
        bundle, meta = reliability(q, y)._repr_mimebundle_()
    finally:
        alt.renderers.enable(before)
    assert set(bundle) == {'image/svg+xml', 'text/plain'} and bundle['image/svg+xml'].startswith('<svg')
    assert 'http' not in bundle['image/svg+xml'].split('xmlns', 1)[0]
    assert isinstance(reliability(q, y).properties(width=50), SVGDisplay)
    composed = reliability(q, y) | reliability(q, y, conf_axis='y')
    assert not isinstance(composed, SVGDisplay) and isinstance(svg_display(composed), SVGDisplay)
    assert svg_display(composed).to_dict() == composed.to_dict()


def test_scale_auto_rule_and_log_odds_coordinates():
    from calibkit.charts import choose_scale, reliability, reliability_grid
    mq, my = _marginal()
    mb = equal_mass_bins(mq, my, n_bins=10)
    assert choose_scale(mb) == 'logit' and choose_scale(equal_mass_bins(*_over(), n_bins=10)) == 'linear'
    # the rule: at least half of the events in bins with mean conf < 0.1 or > 0.9
    t = pd.DataFrame(dict(lo=[.01, .5], hi=[.05, .6], n=[50, 50], conf=[.03, .55], acc=[.02, .5], ci_lo=[0, .4], ci_hi=[.1, .6]))
    assert choose_scale(t) == 'logit' and choose_scale(t.assign(n=[49, 51])) == 'linear'
    spec = reliability(mb).to_dict()
    rows = pd.DataFrame(spec['datasets'][spec['data']['name']])
    np.testing.assert_allclose(rows.x_conf, np.log(rows.conf / (1 - rows.conf)), rtol=0, atol=5e-10)   # rounded to 1e-9
    half = 0.5 / rows.n
    shown = np.clip(rows.acc, half, 1 - half)
    np.testing.assert_allclose(rows.x_acc, np.log(shown / (1 - shown)), rtol=0, atol=5e-10)
    assert np.isfinite(rows[['x_acc', 'x_lo', 'x_hi']].to_numpy()).all()
    assert _diagram(spec)['layer'][2]['encoding']['x']['field'] == 'x_conf'
    lin = _diagram(reliability(mb, scale='linear').to_dict())
    assert lin['layer'][2]['encoding']['x']['field'] == 'conf' and lin['layer'][2]['encoding']['x']['scale']['domain'] == [0, 1]
    grid = reliability_grid({'marginal': mb, 'middle': equal_mass_bins(*_over(), n_bins=10)}).to_dict()
    assert [_diagram(p)['layer'][2]['encoding']['x']['field'] for p in grid['concat']] == ['x_conf'] * 2   # one scale for all panels


def test_smooth_reliability_draws_a_curve_and_validates():
    from calibkit.charts import smooth_reliability
    grid = np.linspace(0, 1, 51)
    spec = smooth_reliability(pd.DataFrame({'conf': grid, 'acc': grid ** 2})).to_dict()
    assert [l['mark']['type'] for l in spec['layer']] == ['rule', 'line']
    rows = pd.DataFrame(spec['datasets'][spec['data']['name']])
    np.testing.assert_allclose(rows.acc, grid ** 2)
    with pytest.raises(ValueError, match='curve has 1 rows'): smooth_reliability(pd.DataFrame({'conf': [.5], 'acc': [.5]}))
    with pytest.raises(ValueError, match='curve column conf'): smooth_reliability(pd.DataFrame({'conf': [.5, np.nan], 'acc': [.5, .5]}))
    with pytest.raises(TypeError, match='curve must be a DataFrame'): smooth_reliability([(0, 0), (1, 1)])


def test_log_odds_ticks_never_pile_and_points_at_the_edge_are_open_circles_and_explained():
    from calibkit.charts import reliability, to_svg, AT_EDGE, AT_ACCURACY, _TICK_PX
    t = pd.DataFrame(dict(lo=[.0005, .02, .2, .97], hi=[.0015, .1, .3, .97], n=[900, 100, 100, 100], conf=[.001, .05, .25, .97],
                          acc=[0, .06, .2, 1], ci_lo=[0, .01, .12, 1], ci_hi=[0, .11, .28, 1]))   # accuracy exactly 0 and 1
    ch = reliability(t)
    spec = ch.to_dict()
    rows = pd.DataFrame(spec['datasets'][spec['data']['name']])
    edge = (rows.acc == 0) | (rows.acc == 1)
    assert edge.sum() == 2 and list(rows.drawn) == [AT_EDGE if e else AT_ACCURACY for e in edge]
    pts = _diagram(spec)['layer'][2]['encoding']
    assert pts['fillOpacity']['scale'] == {'domain': [AT_ACCURACY, AT_EDGE], 'range': [0.8, 0]}
    assert f'open circles: {AT_EDGE}' in ' '.join(spec['title']['subtitle'])
    assert to_svg(ch).count('fill-opacity="0" stroke="#4c78a8" stroke-width="1.5"') == 2    # outlined, both
    lo, hi = pts['x']['scale']['domain']
    ticks = pts['x']['axis']['values']
    assert len(ticks) >= 3 and np.diff(ticks).min() * 300 / (hi - lo) >= _TICK_PX   # px between neighbouring labels
    plain = _diagram(reliability(*_over(), n_bins=10).to_dict())['layer'][2]['encoding']
    assert 'fillOpacity' not in plain                                     # nothing drawn at an edge: no marker


def test_log_odds_chart_is_the_same_when_the_logs_differ_by_an_ulp():
    "numpy's `log` differs by an ulp between processors (AVX-512 vs AVX2 kernels): a log-odds chart must not show it."
    rng = np.random.default_rng(0)
    conf = 1 - rng.beta(1, 60, 400)
    bins = equal_mass_bins(conf, rng.random(400) < conf, n_bins=8)
    nudged = bins.assign(conf=np.nextafter(bins.conf.to_numpy(), 2.0), lo=np.nextafter(bins.lo.to_numpy(), -1.0))
    from calibkit.charts import to_svg
    a, b = (to_svg(reliability(t, scale='logit')) for t in (bins, nudged))
    assert a == b and a.startswith('<svg')
