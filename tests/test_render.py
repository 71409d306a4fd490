"""calibkit.render: the HTML page and the report folder, apart from the analysis. The report module names no file of
the folder and imports neither render nor outdir; render takes the verdict's sentences from the report as they are and
imports no text-making function back from it."""
import ast, dataclasses, html, json, re, warnings
from pathlib import Path
import numpy as np, pandas as pd, pytest
import calibkit as ck
from calibkit.outdir import MARKER
from calibkit.render import REPORT_FILES, report_html, save_report, write_report_files
from calibkit.report import Report, calibration_report

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope='module')
def rep():
    rng = np.random.default_rng(3)
    q = rng.beta(2, 2, 3000)
    ev = pd.DataFrame(dict(conf=q, correct=(rng.random(3000) < q ** 1.3).astype(int),
                           label=rng.choice(['N', 'V', 'A'], 3000, p=[.6, .3, .1])))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return calibration_report(ev[1500:], fit=ev[:1500], grouper='tfg', n_groups=2, recalibrator='isotonic',
                                  n_samples=30)


def folder_bytes(d: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_save_report_writes_the_folder(rep, tmp_path):
    files = save_report(rep, tmp_path/'new')
    assert {p.name for p in files} == REPORT_FILES                        # grouped and recalibrated: every file
    assert (tmp_path/'new'/MARKER).exists() and MARKER not in [p.name for p in files]
    assert (tmp_path/'new'/'report.html').read_text(encoding='utf-8') == report_html(rep)
    assert ck.save_report is save_report
    assert not hasattr(rep, 'to_html') and not hasattr(rep, 'save')    # the old shims are gone: render's doors only


def test_the_page_lays_out_the_reports_verdict_sentences(rep):
    page = report_html(rep)
    assert page.startswith('<!doctype html>') and page.count('<svg') >= 6
    summary = page[page.index('<h2>Summary'):page.index('<h2>Data')]
    shown = re.findall(r'<p class="verdict">([^<]*)</p>', summary)
    assert shown == [html.escape(t) for s in rep.stages for t in rep.verdict[s]]
    other = dataclasses.replace(rep, verdict={s: [f'sentence of {s}'] for s in rep.stages})   # whatever it holds
    assert 'sentence of before' in report_html(other) and 'sentence of after' in report_html(other)


def test_render_imports_nothing_but_data_and_constants_from_report():
    tree = ast.parse((ROOT/'calibkit'/'render.py').read_text(encoding='utf-8'))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and 'report' in n.module
             for a in n.names}
    # and metrics_wide: the metrics table as both views of a report show it (the page, and the report inline);
    # number_cell: a number as every calibkit table shows it
    assert names == {'CI_BUDGET', 'METRICS', 'SELECTIVE', 'Report', 'metrics_wide', 'number_cell'}


def test_write_report_files_writes_every_report_file(rep, tmp_path):
    (tmp_path/'a').mkdir()
    write_report_files(rep, tmp_path/'a')
    assert {p.name for p in (tmp_path/'a').iterdir()} == REPORT_FILES        # grouped and recalibrated: every file
    save_report(rep, tmp_path/'b')                      # the same bytes, in a claimed folder (with its manifest)
    assert {k: v for k, v in folder_bytes(tmp_path/'b').items() if k in REPORT_FILES} == folder_bytes(tmp_path/'a')


def test_render_refuses_what_is_not_a_report(rep, tmp_path):
    for f in (report_html, lambda r: save_report(r, tmp_path/'x'), lambda r: write_report_files(r, tmp_path)):
        with pytest.raises(TypeError, match=r'r must be a calibration report \(calibkit.report.Report\), got dict'):
            f(rep.to_dict())
    assert not (tmp_path/'x').exists()


def test_report_names_no_file_and_imports_neither_render_nor_outdir():
    src = (ROOT/'calibkit'/'report.py').read_text(encoding='utf-8')
    tree = ast.parse(src)
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | \
               {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and ('render' in m or 'outdir' in m)}, imported
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not [s for s in strings if s in REPORT_FILES or s.endswith(('.csv', '.html', '.svg'))]
    assert not [s for s in strings if s.startswith('--')]


def test_labels_that_a_spreadsheet_would_evaluate_stay_exact_data_and_are_never_live(tmp_path):
    """groups.csv keeps labels exactly (they read back into pandas unchanged: `-LRB-` and `@` are real tags); the page
    escapes them and no file of the folder holds a live element made from a label (issue 38)."""
    labels = ['=HYPERLINK("http://x","y")', '-LRB-', '@', '+1', '<script>alert(1)</script>']
    rng = np.random.default_rng(5)
    q = rng.beta(2, 2, 4000)
    ev = pd.DataFrame(dict(conf=q, correct=(rng.random(4000) < q).astype(int), label=rng.choice(labels, 4000)))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        r = calibration_report(ev, grouper='per_class', n_samples=20)
    save_report(r, tmp_path/'r')
    back = pd.read_csv(tmp_path/'r'/'groups.csv', keep_default_na=False, dtype=str)
    col = next(c for c in back.columns if back[c].isin(labels).any())
    assert sorted(back[col]) == sorted(labels)
    page = (tmp_path/'r'/'report.html').read_text(encoding='utf-8')
    assert '<script>alert(1)</script>' not in page and html.escape('<script>alert(1)</script>') in page
    for f in (tmp_path/'r').iterdir():             # pages and charts: no script, handler or link a label made
        if f.suffix in ('.html', '.svg'):
            text = f.read_text(encoding='utf-8')
            assert not re.search(r'<script|javascript:|\son[a-z]+\s*=|<a\s[^>]*href', text, re.I), f.name
    m = json.loads((tmp_path/'r'/'metrics.json').read_text(encoding='utf-8'))   # data: the labels as strings, exact
    assert set(labels) == {g['members'] for g in m['groups']}, m['groups'][:2]        # per_class: one each


def test_the_page_tables_show_numbers_as_every_calibkit_table():
    "The page's tables (bins, groups, conformal) write numbers with `number_cell`: a true minus, counts whole, NaN blank."
    from calibkit.render import _table
    t = _table(pd.DataFrame({'x': [-0.0005168, 168680.0, np.nan, 2.455e-05]}))
    assert [c for c in re.findall(r'<td>([^<]*)</td>', t)] == ['−0.0005168', '168680', '', '2.455e-05']
