"""Prose cannot drift from its numbers: notebooks quote measured values only through outputs.

A number in a Markdown cell is text nobody recomputes; the tutorials render such sentences from their results
(a hidden-source cell returning `IPython.display.Markdown`) or assert them in the next cell. A value with three or
more decimals, or in scientific notation (0.0037, 1.91e-4), is almost always a measurement, so it must not
appear in a Markdown cell (the settings and analytic constants that look like one are listed in SETTINGS). A
heuristic: whole percentages and counts are checked by the asserts beside them, not here."""
import json, re
from pathlib import Path
import pytest

NBS = Path(__file__).resolve().parents[1]/'nbs'
NOTEBOOKS = sorted(NBS.glob('*.ipynb'))
SETTINGS = {('04_diagnostics.ipynb', '0.001'): "relplot's bisection floor eps, a parameter",
            ('03_metrics.ipynb', '0.00972'): 'the analytic CalibMSE of k = 0.1 (asserted in 41_studies as true_k)'}
MEASURED = re.compile(r'(?<![\w.])\d*\.\d{3,}(?![\d])|(?<![\w.])\d\.\d+e-\d+')
NOT_PROSE = re.compile(r'```.*?```|\$\$.*?\$\$|\$[^$]*\$|`[^`]*`', re.S)     # code and math: not sentences


def hand_typed(markdown: str) -> list[str]:
    "The measured-looking numbers of a Markdown text, outside code and math."
    return MEASURED.findall(NOT_PROSE.sub(' ', markdown))


def test_hand_typed_finds_measurements_only():
    assert hand_typed('histogram SCW best, 0.0036; SMCE falls by 34–55%') == ['0.0036']
    assert hand_typed('1.91e-4 at $b = 1024$ against `0.2/1024`') == ['1.91e-4']
    assert hand_typed('threshold 0.01, CC BY-SA 4.0, §4.2, Python 3.10, $q = 0.125$') == []


@pytest.mark.parametrize('path', NOTEBOOKS, ids=lambda p: p.name)
def test_markdown_quotes_no_measured_value(path):
    cells = json.loads(path.read_text())['cells']
    bad = {i: [x for x in hand_typed(''.join(c['source'])) if (path.name, x) not in SETTINGS]
           for i, c in enumerate(cells) if c['cell_type'] == 'markdown'}
    bad = {i: v for i, v in bad.items() if v}
    assert not bad, (f'{path.name}: Markdown cell(s) quote measured values by hand {bad}; render the sentence from '
                     f'the results (`#| echo: false` + IPython.display.Markdown) or assert the value in the next cell')


@pytest.mark.parametrize('path', NOTEBOOKS, ids=lambda p: p.name)
def test_rendered_prose_was_executed(path):
    "Every cell that renders prose from results has its Markdown output committed (the page would be blank)."
    cells = json.loads(path.read_text())['cells']
    rendered = [i for i, c in enumerate(cells) if c['cell_type'] == 'code' and 'Markdown(' in ''.join(c['source'])
                and ''.join(c['source']).startswith('#| echo: false')]
    missing = [i for i in rendered if not any('text/markdown' in o.get('data', {}) for o in cells[i]['outputs'])]
    assert not missing, f'{path.name}: prose cell(s) {missing} have no Markdown output: re-execute the notebook'
