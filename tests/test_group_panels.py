"""The grouped views show what the analysis is about (issue 34, item 4): every panel's full title (never cut), grids as
wide as their page, and by default the most frequent, the rarest and the worst-calibrated groups, each labelled; an
option shows every group."""
import re
import numpy as np, pandas as pd, pytest
from calibkit.binning import equal_mass_bins
from calibkit.charts import PAGE_PX, reliability_grid, to_svg
from calibkit.events import make_events
from calibkit.report import MAX_PANELS, REPORT_PX, calibration_report, panel_groups
from test_visible_bins import svg_text

N_TAGS = 20


@pytest.fixture(scope='module')
def tagged():
    """Events of N_TAGS tags: tag t00 the most frequent, t19 the rarest (counts falling by rank); t06 to t09 badly
    over-confident (wrong half the time at confidence 0.95), every other tag calibrated."""
    rng = np.random.default_rng(5)
    counts = np.linspace(1500, 60, N_TAGS).astype(int)
    label = np.repeat([f't{i:02d}' for i in range(N_TAGS)], counts)
    conf = rng.uniform(0.3, 1.0, len(label))
    bad = np.isin(label, ['t06', 't07', 't08', 't09'])
    conf[bad] = 0.95
    correct = (rng.random(len(label)) < np.where(bad, 0.5, conf)).astype(np.uint8)
    return make_events(conf, correct).assign(label=label)


def _names(panels: list[str]) -> list[str]: return [p.split(':')[1].split()[0] for p in panels]


def _titles(chart) -> list[str]:
    "Each panel's title as one line (its wrapped lines joined)."
    return [' '.join(p['title']['text']) if isinstance(p['title']['text'], list) else p['title']['text']
            for p in chart.to_dict()['concat']]


def test_default_panels_are_the_most_frequent_the_rarest_and_the_worst(tagged):
    r = calibration_report(tagged, grouper='per_class', n_samples=50)
    g = r.groups[r.groups.stage == 'before']
    assert list(g.sort_values('n_events', ascending=False).members[:4]) == ['t00', 't01', 't02', 't03']
    assert set(g.sort_values('gmce', ascending=False).members[:4]) == {'t06', 't07', 't08', 't09'}
    chart = r.charts['groups_before']
    titles = _titles(chart)
    assert len(titles) == MAX_PANELS
    why = {name: t for name, t in zip(_names(titles), titles)}
    assert [n for n, t in why.items() if '(most frequent' in t] == ['t00', 't01', 't02', 't03']
    assert [n for n, t in why.items() if 'rarest' in t] == ['t16', 't17', 't18', 't19']
    assert [n for n, t in why.items() if 'worst calibrated' in t] == ['t06', 't07', 't08', 't09']
    head = ' '.join(chart.to_dict()['title']['text'])
    assert head == (f'Per group (before): {MAX_PANELS} of {N_TAGS} groups, the 4 most frequent, the 4 rarest and the '
                    '4 worst calibrated (highest GMCE)')


def test_all_groups_shows_every_group_and_is_recorded(tagged):
    r = calibration_report(tagged, grouper='per_class', n_samples=50, all_groups=True)
    titles = _titles(r.charts['groups_before'])
    assert len(titles) == N_TAGS and _names(titles) == [f't{i:02d}' for i in range(N_TAGS)]
    assert all('(' not in t.split(':')[1] for t in titles)            # no reason given: every group is there
    assert ' '.join(r.charts['groups_before'].to_dict()['title']['text']) == 'Per group (before)'
    assert r.meta['all_groups'] is True and r.to_dict()['meta']['all_groups'] is True
    with pytest.raises(TypeError, match='all_groups must be True or False'):
        calibration_report(tagged, grouper='per_class', all_groups='yes')


def test_report_grid_fills_the_report_page_and_titles_are_whole(tagged):
    "TFG groups have long names (tag count, frequency band, tags): each title is in the SVG whole, on wrapped lines."
    from calibkit.plugins import make
    tfg = make('grouper', 'tfg', dict(n_groups=8, balanced=True))
    r = calibration_report(tagged, grouper=tfg, n_samples=50, all_groups=True)
    chart = r.charts['groups_before']
    spec = chart.to_dict()
    assert spec['columns'] == 4                                        # not 2: the report page is ~1,100 px wide
    svg = to_svg(chart)
    assert int(re.search(r'<svg[^>]* width="(\d+)"', svg)[1]) <= REPORT_PX
    text = svg_text(svg)
    members = r.groups[r.groups.stage == 'before'].set_index('group').members
    assert max(len(m) for m in members) > 28                            # what the old titles cut at 28 characters
    for k, m in members.items():
        assert f'{k}: {m}' in text, f'the title of group {k} is not whole in the SVG'


@pytest.mark.parametrize('conf_axis, width', [('x', PAGE_PX), ('y', REPORT_PX)])   # each axis and each page, sampled
def test_grid_is_as_wide_as_it_may_be_and_no_wider(conf_axis, width):
    rng = np.random.default_rng(1)
    q = rng.beta(.3, 6, 2000)                       # log-odds axes, whose tick labels are the widest
    t = equal_mass_bins(q, rng.random(2000) < q, n_bins=10)
    title = 'a panel title long enough to need more than one line in a panel of a grid'
    chart = reliability_grid({f'{title} {i}': t for i in range(12)}, conf_axis=conf_axis, width=width)
    svg = to_svg(chart)
    columns = chart.to_dict()['columns']
    assert int(re.search(r'<svg[^>]* width="(\d+)"', svg)[1]) <= width
    wider = to_svg(reliability_grid({f'{title} {i}': t for i in range(columns + 1)}, conf_axis=conf_axis, width=10**4,
                                    columns=columns + 1))                          # one row of one more column
    assert int(re.search(r'<svg[^>]* width="(\d+)"', wider)[1]) > width     # one more column would not fit
    text = svg_text(svg)
    assert all(f'{title} {i}' in text for i in range(12))


def test_panel_groups_validates():
    g = pd.DataFrame({'group': [1, 2], 'n_events': [5, 3], 'gmce': [0.1, 0.2]})
    assert panel_groups(g, 1) == {1: ['most frequent']} and panel_groups(g, 2) == {1: [], 2: []}   # all: no reason
    with pytest.raises(ValueError, match='max_panels must be an integer >= 1'): panel_groups(g, 0)
