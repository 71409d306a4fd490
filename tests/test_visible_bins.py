"""No bin is ever invisible: every bin of every reliability diagram (a diagram, a grid, a report's charts) is one
visible point mark in the rendered SVG, also when its accuracy is exactly 0 or 1 (issue 34, item 2)."""
import re
import xml.etree.ElementTree as ET
import numpy as np, pandas as pd, pytest
from calibkit.binning import equal_mass_bins
from calibkit.charts import reliability, reliability_grid, to_svg
from calibkit.events import make_events

N, BINS = 1000, 10
_TRANSLATE = re.compile(r'translate\(\s*([-\d.e]+)[ ,]+([-\d.e]+)\s*\)')


def _events(edge: str, seed: int = 0) -> pd.DataFrame:
    """N events whose top bin (of BINS equal-mass bins) is all correct ('top') or whose bottom bin is all wrong
    ('bottom'); the other bins are mixed."""
    rng = np.random.default_rng(seed)
    conf = np.sort(rng.uniform(0.02, 0.98, N))
    correct = (rng.random(N) < conf).astype(np.uint8)
    k = N // BINS
    if edge == 'top': correct[-k:] = 1
    else: correct[:k] = 0
    return make_events(conf, correct)


def svg_text(svg: str) -> str:
    "The text an SVG chart shows, its lines (tspans) joined by spaces."
    texts = [el for el in ET.fromstring(svg).iter() if el.tag.endswith('}text')]
    return ' '.join(' '.join(s.strip() for s in t.itertext() if s.strip()) for t in texts)


def _number(v, default: float) -> float: return default if v is None else float(v)


def _visible(el: ET.Element) -> bool:
    "A symbol drawn with a fill of non-zero opacity, or with a stroke of non-zero opacity and width."
    a = el.attrib
    if _number(a.get('opacity'), 1) <= 0: return False
    fill = a.get('fill') not in (None, 'none', 'transparent') and _number(a.get('fill-opacity'), 1) > 0
    stroke = (a.get('stroke') not in (None, 'none', 'transparent') and _number(a.get('stroke-opacity'), 1) > 0
              and _number(a.get('stroke-width'), 1) > 0)
    return fill or stroke


def point_marks(svg: str) -> list[tuple[dict, float, float]]:
    """Each point mark (a path of a symbol-mark group) of an SVG chart: its attributes and its centre on the canvas
    (the translations of its ancestors added up); legend symbols are not marks."""
    root, out = ET.fromstring(svg), []
    def walk(el, x, y, in_symbols):
        m = _TRANSLATE.search(el.get('transform', ''))
        if m: x, y = x + float(m[1]), y + float(m[2])
        cls = el.get('class', '')
        in_symbols = in_symbols or ('mark-symbol' in cls and 'role-mark' in cls)
        if in_symbols and el.tag.endswith('path'): out.append((dict(el.attrib), x, y))
        for child in el: walk(child, x, y, in_symbols)
    walk(root, 0.0, 0.0, False)
    return out


def visible_points(svg: str) -> int:
    "How many point marks of the SVG are visible and lie on its canvas (none clipped away)."
    root = ET.fromstring(svg)
    w, h = float(root.get('width')), float(root.get('height'))
    assert 'clip-path' not in svg, 'a clipped mark group: its points may be cut away'
    return sum(_visible(ET.Element('path', a)) and 0 <= x <= w and 0 <= y <= h for a, x, y in point_marks(svg))


def test_point_counter_counts_what_a_reader_sees():
    "The counter itself: a hollow point without a stroke is not seen, an outlined one is, so is a filled one."
    pts = ('<path fill="#4c78a8" fill-opacity="0" stroke-width="1.5"/>',                   # the old hollow point
           '<path fill="#4c78a8" fill-opacity="0" stroke="#4c78a8" stroke-width="1.5"/>',  # outlined
           '<path fill="#4c78a8" fill-opacity="0.8"/>', '<path fill="#4c78a8" opacity="0"/>',
           '<path stroke="#4c78a8" stroke-width="0"/>')
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><g class="mark-symbol role-mark">'
           + ''.join(p.replace('<path', '<path transform="translate(50,50)"') for p in pts)
           + '<path transform="translate(150,50)" fill="#4c78a8"/></g></svg>')                # off the canvas
    assert len(point_marks(svg)) == 6 and visible_points(svg) == 2


def _edge_bins(t: pd.DataFrame) -> int: return int(((t.acc == 0) | (t.acc == 1)).sum())


@pytest.mark.parametrize('scale', ['linear', 'logit'])
@pytest.mark.parametrize('conf_axis', ['x', 'y'])
@pytest.mark.parametrize('edge', ['top', 'bottom'])
def test_every_bin_of_a_diagram_is_a_visible_point(edge, conf_axis, scale):
    ev = _events(edge)
    t = equal_mass_bins(ev, n_bins=BINS)
    assert len(t) == BINS and _edge_bins(t) == 1 and t.acc.iloc[-1 if edge == 'top' else 0] == (edge == 'top')
    svg = to_svg(reliability(ev, n_bins=BINS, conf_axis=conf_axis, scale=scale))
    assert len(point_marks(svg)) == BINS and visible_points(svg) == BINS
    open_ = [a for a, _, _ in point_marks(svg) if a.get('fill-opacity') == '0']      # the edge bin: an open circle
    assert len(open_) == 1 and float(open_[0]['stroke-width']) >= 1.5 and _number(open_[0].get('opacity'), 1) == 1
    assert 'open circles: accuracy 0 or 1 (drawn at the axis edge)' in svg_text(svg)


@pytest.mark.parametrize('scale', ['linear', 'logit'])
@pytest.mark.parametrize('conf_axis', ['x', 'y'])
def test_every_bin_of_a_grid_is_a_visible_point(conf_axis, scale):
    tables = {'top bin all correct': equal_mass_bins(_events('top'), n_bins=BINS),
              'bottom bin all wrong': equal_mass_bins(_events('bottom', seed=1), n_bins=6),
              'few bins': equal_mass_bins(_events('top', seed=2), n_bins=3)}
    svg = to_svg(reliability_grid(tables, conf_axis=conf_axis, scale=scale))
    assert visible_points(svg) == len(point_marks(svg)) == BINS + 6 + 3


@pytest.fixture(scope='module')
def grouped_report():
    "A report with per-class groups: the overall top bin all correct, group A's top bin too, group C's bottom bin."
    from calibkit.report import calibration_report
    ev = _events('top')
    rng = np.random.default_rng(3)
    label = np.where(ev.conf > 0.9, 'A', np.where(ev.conf < 0.3, 'C', np.where(rng.random(N) < .5, 'B', 'D')))
    ev = ev.assign(label=label, correct=np.where(label == 'C', 0, ev.correct).astype(np.uint8))
    with pytest.warns(UserWarning, match='2 of 4 groups have a degenerate'):    # A and C: only correct, only wrong
        return calibration_report(ev, grouper='per_class', n_bins=BINS, n_samples=50)


def test_every_bin_of_a_report_chart_is_a_visible_point(grouped_report):
    r = grouped_report
    b = r.bins[r.bins.stage == 'before']
    assert _edge_bins(b[b.group == 'all']) >= 1 and _edge_bins(b[b.group != 'all']) >= 2
    svg = to_svg(r.charts['reliability_before'])
    assert visible_points(svg) == len(point_marks(svg)) == int((b[b.group == 'all'].n > 0).sum())
    svg = to_svg(r.charts['groups_before'])
    assert visible_points(svg) == len(point_marks(svg)) == int((b[b.group != 'all'].n > 0).sum())
