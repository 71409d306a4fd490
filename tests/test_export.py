"""A paper's files (issue 36, item 4): LaTeX and Markdown tables checked against hand-written text, the best marked,
names escaped; figures laid out at a column's width with calibkit's font embedded; `calibkit report --export`."""
import json, re, shutil, struct, sys, warnings
from pathlib import Path
import numpy as np, pandas as pd, pytest
import pypdf

sys.path.insert(0, str(Path(__file__).parent))
from clidata import calibkit_here, write_events  # noqa: E402
from calibkit.charts import FONT, reliability, reliability_grid  # noqa: E402
from calibkit.binning import equal_mass_bins  # noqa: E402
from calibkit.export import (FIGURE_FORMATS, MIN_FONT_PT, export_files, latex_escape, latex_table,  # noqa: E402
                             markdown_table, save_figure, write_exports)
from calibkit.outdir import MARKER, mismatch, read_manifest  # noqa: E402


def table(est, lo=None, hi=None, rows=('A', 'B'), cols=('x', 'y')) -> pd.DataFrame:
    "A long table, rows outer (A x, A y, B x, B y), estimates given in that order."
    cells = [(r, c) for r in rows for c in cols]
    nan = [np.nan] * len(cells)
    return pd.DataFrame(dict(row=[r for r, _ in cells], column=[c for _, c in cells], estimate=est,
                             lo=nan if lo is None else lo, hi=nan if hi is None else hi))


TWO = table([0.0123, 0.9, 0.0456, 0.8], lo=[0.0101, np.nan, 0.0402, np.nan], hi=[0.0145, np.nan, 0.0511, np.nan])


def test_latex_two_by_two_exact():
    got = latex_table(TWO, caption='n = 2,000; 95% intervals', label='tab:t', better={'x': 'lower', 'y': 'higher'})
    assert got == ('% needs \\usepackage{booktabs}\n\\begin{table}[tbp]\n\\centering\n'
                   '\\caption{n = 2,000; 95\\% intervals}\n\\label{tab:t}\n\\begin{tabular}{lrr}\n\\toprule\n'
                   ' & x & y \\\\\n\\midrule\n'
                   'A & \\textbf{0.0123} [0.0101, 0.0145] & \\textbf{0.900} \\\\\n'
                   'B & 0.0456 [0.0402, 0.0511] & 0.800 \\\\\n'
                   '\\bottomrule\n\\end{tabular}\n\\end{table}\n')


def test_markdown_two_by_two_exact():
    got = markdown_table(TWO, caption='n = 2,000', better={'x': 'higher'})
    assert got == ('|  | x | y |\n| :-- | --: | --: |\n'
                   '| A | 0.0123 [0.0101, 0.0145] | 0.900 |\n'
                   '| B | **0.0456** [0.0402, 0.0511] | 0.800 |\n\nTable: n = 2,000\n')
    assert markdown_table(TWO).endswith('| 0.800 |\n')                   # no caption, nothing marked


def parse_latex(tex: str) -> list[list[str]]:
    "The cells of a booktabs table's body: the lines between \\midrule and \\bottomrule, split at ' & '."
    body = tex.split('\\midrule\n')[1].split('\\bottomrule')[0]
    return [line.removesuffix(' \\\\').split(' & ') for line in body.splitlines()]


def test_structure_row_and_column_order_as_first_seen():
    t = table([1, 2, 3, 4, 5, 6], rows=('z', 'a', 'm'), cols=('q', 'b'))
    tex = latex_table(t, caption='c')
    assert [r[0] for r in parse_latex(tex)] == ['z', 'a', 'm']
    assert re.search(r'\\toprule\n & q & b \\\\\n\\midrule', tex)
    assert [tex.index(k) for k in ('\\toprule', '\\midrule', '\\bottomrule')] == sorted(
        tex.index(k) for k in ('\\toprule', '\\midrule', '\\bottomrule'))
    assert '\\begin{tabular}{lrr}' in tex and tex.count('\\\\\n') == 4


def test_same_significant_digits_and_interval_at_the_estimates_place():
    t = pd.DataFrame(dict(row=list('abcdef'), column='m', estimate=[0.012345, 0.5, 0.0004561, 12.34, 0.009996, 0],
                          lo=[0.0101, 0.4, 0.0003, 11.0, 0.008, -0.001], hi=[0.0145, 0.6, 0.0006, 13.9, 0.012, 0.001]))
    cells = [r[1] for r in parse_latex(latex_table(t, caption='c'))]
    assert cells == ['0.0123 [0.0101, 0.0145]', '0.500 [0.400, 0.600]', '0.000456 [0.000300, 0.000600]',
                     '12.3 [11.0, 13.9]', '0.0100 [0.0080, 0.0120]', '0.00 [0.00, 0.00]']   # never -0.00
    digits = [len(c.split()[0].replace('.', '').lstrip('0')) for c in cells[:5]]
    assert digits == [3] * 5                                            # every estimate: three significant digits
    assert [r[1].split()[0] for r in parse_latex(latex_table(t, caption='c', digits=2))][:2] == ['0.012', '0.50']


def test_best_marking_lower_higher_ties_and_unmarked():
    t = table([0.5, 3, 0.5004, 3, 0.7, 1], rows=('a', 'b', 'c'))
    tex = parse_latex(latex_table(t, caption='c', better={'x': 'lower', 'y': 'higher'}))
    bold = [[c.startswith('\\textbf') for c in r[1:]] for r in tex]
    assert bold == [[True, True], [True, True], [False, False]]      # 0.500 and 0.500 as shown: tied; 3 and 3 too
    assert '\\textbf' not in latex_table(t, caption='c', better={'y': 'lower'}).split('\\midrule')[1].split(' & ')[1]
    md = markdown_table(t, better={'x': 'higher'})
    assert md.count('**') == 2 and '**0.700**' in md


def test_missing_cell_and_nan_interval():
    t = TWO.drop(index=1)                                               # (A, y) missing
    rows = parse_latex(latex_table(t, caption='c'))
    assert rows[0] == ['A', '0.0123 [0.0101, 0.0145]', '--'] and rows[1][2] == '0.800'
    assert '| A | 0.0123 [0.0101, 0.0145] | — |' in markdown_table(t)


ESCAPES = {'a_b': r'a\_b', '50%': r'50\%', 'R&D': r'R\&D', '#1': r'\#1', '$': r'\$', '{x}': r'\{x\}',
           '~': r'\textasciitilde{}', '^': r'\textasciicircum{}', '\\': r'\textbackslash{}', 'Δ': r'\ensuremath{\Delta}',
           '−1': r'\ensuremath{-}1', 'a·b': r'a\ensuremath{\cdot}b', '≥': r'\ensuremath{\geq}', '≤': r'\ensuremath{\leq}',
           '×': r'\ensuremath{\times}', '±': r'\ensuremath{\pm}', 'α': r'\ensuremath{\alpha}', 'Ω': r'\ensuremath{\Omega}',
           '–': '--', '—': '---', 'é': r"\'{e}", 'ö': r'\"{o}', 'ç': r'\c{c}', 'ñ': r'\~{n}', '’': "'", '…': r'\ldots{}'}


@pytest.mark.parametrize('text', sorted(ESCAPES))
def test_latex_escaping(text):
    assert latex_escape(text) == ESCAPES[text]


def test_escaped_names_in_the_table_and_the_unknown_kept_with_a_warning():
    t = pd.DataFrame(dict(row=['model_1 (Δ≥0)'], column=['ECE %'], estimate=[0.1], lo=[np.nan], hi=[np.nan]))
    tex = latex_table(t, caption='α · β')
    assert '\\caption{\\ensuremath{\\alpha} \\ensuremath{\\cdot} \\ensuremath{\\beta}}' in tex
    assert parse_latex(tex)[0][0] == 'model\\_1 (\\ensuremath{\\Delta}\\ensuremath{\\geq}0)' and ' & ECE \\% \\\\' in tex
    assert tex.isascii()
    with pytest.warns(UserWarning, match=r"1 character\(s\) have no LaTeX command here .*'中'"):
        assert latex_escape('中 x') == '中 x'
    assert markdown_table(t.assign(row='a|b*c_d')).splitlines()[2].startswith(r'| a\|b\*c\_d |')


@pytest.mark.parametrize('bad, kw, msg', [
    ('frame', {}, 'table must be a DataFrame'),
    (TWO.drop(columns='hi'), {}, "lacks column(s) ['hi']"),
    (TWO.iloc[:0], {}, 'table has no rows'),
    (TWO.assign(estimate=[0.1, np.nan, 0.2, 0.3]), {}, 'estimate: 1 of 4 values are missing'),
    (TWO.assign(estimate=[0.1, np.inf, 0.2, 0.3]), {}, 'estimate: 1 of 4 values are missing or not finite'),
    (TWO.assign(estimate=['a', 0.1, 0.2, 0.3]), {}, 'estimate: 1 of 4 values are not numbers'),
    (TWO.assign(row=[None, 'A', 'B', 'B']), {}, 'row: 1 of 4 labels are missing'),
    (TWO.assign(hi=[0.0145, 1, 0.0511, np.nan]), {}, '1 cell(s) have lo or hi but not both'),
    (TWO.assign(lo=[0.02, np.nan, 0.0402, np.nan]), {}, '1 interval(s) have lo > hi'),
    (TWO.assign(hi=[np.inf, np.nan, 0.0511, np.nan]), {}, '1 interval(s) are infinite'),
    (pd.concat([TWO, TWO.iloc[:1]]), {}, "1 repeated (row, column) cell(s), e.g. ('A', 'x')"),
    (TWO, dict(better={'z': 'lower'}), "better names column(s) ['z']"),
    (TWO, dict(better={'x': 'best'}), "better['x'] must be one of 'lower', 'higher'"),
    (TWO, dict(better=['x']), 'better must be a dict'),
    (TWO, dict(digits=0), 'digits'),
    (TWO, dict(digits=2.5), 'digits'),
])
def test_bad_inputs_are_refused_naming_the_argument(bad, kw, msg):
    for f in (lambda: latex_table(bad, caption='c', **kw), lambda: markdown_table(bad, **kw)):
        with pytest.raises((ValueError, TypeError)) as e: f()
        assert msg in str(e.value)


def test_caption_and_label_are_checked():
    for caption in (None, '', '  ', 3):
        with pytest.raises(TypeError, match='caption must be a non-empty string'): latex_table(TWO, caption=caption)
    with pytest.raises(TypeError, match='caption must be a non-empty string'): markdown_table(TWO, caption='')
    with pytest.raises(ValueError, match='label must be'): latex_table(TWO, caption='c', label='tab 1')


# ---- figures --------------------------------------------------------------------------------------------------
@pytest.fixture(scope='module')
def charts():
    rng = np.random.default_rng(1)
    conf = rng.uniform(0.5, 1, 3000)
    correct = (rng.uniform(size=3000) < conf ** 1.3).astype(int)
    grid = reliability_grid({f'fold {i}: a panel title long enough to wrap': equal_mass_bins(conf[i::6], correct[i::6],
                                                                                            n_bins=5) for i in range(6)})
    return dict(reliability=reliability(conf, correct, n_bins=10, label='a tagger'), grid=grid)


def pdf_fonts(path) -> dict:
    "Each font of a one-page PDF, by name without the subset tag: whether its program is embedded (a FontFile stream)."
    out = {}
    for f in pypdf.PdfReader(path).pages[0]['/Resources']['/Font'].values():
        f = f.get_object()
        d = f['/DescendantFonts'][0].get_object() if '/DescendantFonts' in f else f
        out[str(f['/BaseFont']).split('+')[-1]] = any(k.startswith('/FontFile') for k in d['/FontDescriptor'])
    return out


def png_size(path) -> tuple:
    data = Path(path).read_bytes()
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    return struct.unpack('>II', data[16:24])


@pytest.mark.parametrize('name', ['reliability', 'grid'])
@pytest.mark.parametrize('width, inches', [('single', 3.25), ('double', 6.75)])
def test_figures_fonts_embedded_and_sized(charts, tmp_path, name, width, inches):
    paths = {f: save_figure(charts[name], tmp_path/f'{name}.{f}', width=width) for f in FIGURE_FORMATS}
    assert pdf_fonts(paths['pdf']) == {'CalibkitSans-Regular': True, 'CalibkitSans-Bold': True}
    page = pypdf.PdfReader(paths['pdf']).pages[0].mediabox
    assert float(page.width) == inches * 72                             # 1 px = 1 pt: the page is the column
    assert png_size(paths['png'])[0] == round(inches * 300)
    svg = paths['svg'].read_text()
    assert f"font-family:'{FONT}'" in svg and svg.count('src:url(data:font/ttf;base64,') == 2
    assert re.search(r'<svg[^>]*\bwidth="' + f'{inches * 72:g}"', svg)
    sizes = [float(s) for s in re.findall(r'font-size="([\d.]+)px"', svg)]
    assert sizes and min(sizes) >= MIN_FONT_PT                          # no text below 9 pt at the printed size
    assert 'CalibMSE' in svg                                            # the titles are there, re-wrapped


def test_grid_loses_columns_at_a_single_column(charts, tmp_path):
    single = png_size(save_figure(charts['grid'], tmp_path/'s.png', width='single', dpi=72))
    double = png_size(save_figure(charts['grid'], tmp_path/'d.png', width='double', dpi=72))
    assert (single[0], double[0]) == (234, 486)
    assert single[1] > 1.5 * double[1]                                  # six panels one per row, against three rows


def test_save_figure_refusals(charts, tmp_path):
    ch = charts['reliability']
    for args, kw, msg in [((ch, tmp_path/'x.jpg'), {}, 'suffix must name one of .pdf, .svg, .png'),
                          ((ch, tmp_path/'x'), {}, 'suffix must name one of'),
                          ((ch.to_dict(), tmp_path/'x.pdf'), {}, 'chart must be an Altair chart'),
                          ((ch, None), {}, 'path must be a path'),
                          ((ch, tmp_path/'x.pdf'), dict(width='triple'), "width must be one of 'single', 'double'"),
                          ((ch, tmp_path/'x.pdf'), dict(width=0.5), "inches in [1, 20], got 0.5"),
                          ((ch, tmp_path/'x.png'), dict(dpi=0), 'dpi')]:
        with pytest.raises((ValueError, TypeError)) as e: save_figure(*args, **kw)
        assert msg in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_write_exports_writes_what_export_files_names(charts, tmp_path):
    tables = {'main': (TWO, 'caption', {'x': 'lower'}), 'other': (TWO, 'c2', None)}
    written = write_exports(tmp_path, tables, {'rel': charts['reliability']}, 'markdown,png,latex', 'single')
    names = {str(p.relative_to(tmp_path)) for p in written}
    assert names == export_files(tables, ['rel'], ('markdown', 'png', 'latex')) == {
        'main.md', 'main.tex', 'other.md', 'other.tex', 'figures/rel.png'}
    assert (tmp_path/'main.md').read_text() == markdown_table(TWO, caption='caption', better={'x': 'lower'})
    assert not [p for p in tmp_path.rglob('.*')]                        # no temporary file left
    for args, msg in [((tmp_path, {}, {}, 'latex,word'), 'formats must be distinct values'),
                      ((tmp_path, {}, {'a/b': charts['reliability']}, 'pdf'), 'names must be letters'),
                      ((tmp_path, [], {}, 'pdf'), 'tables must be a dict'),
                      ((tmp_path, {'t': TWO}, {}, 'latex'), "tables['t'] must be a tuple"),
                      ((tmp_path/'none', {}, {}, 'pdf'), 'is not an existing folder')]:
        with pytest.raises((ValueError, TypeError)) as e: write_exports(*args)
        assert msg in str(e.value)


# ---- the command ----------------------------------------------------------------------------------------------
@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('export')
    write_events(d, seed=3, n=3000, labels={'N': .6, 'V': .4}, power=1.3, k=4, alpha=.5, rows=50,
                 scores_name='scores.npz')
    return d


def test_cli_export_files_are_in_the_manifest_and_replaced_safely(data, tmp_path, capsys):
    out = tmp_path/'r'
    r = calibkit_here(capsys, 'report', data/'test.csv', '--fit', data/'dev.csv', '--recalibrator', 'platt', '--out',
                      out, '--n-samples', 50, '--export', 'latex,markdown,pdf,png', '--figure-width', 'double')
    assert r.returncode == 0, r.stderr
    m = read_manifest(out)
    on_disk = {str(p.relative_to(out)) for p in out.rglob('*') if p.is_file()} - {MARKER}
    assert set(m['files']) == on_disk
    assert {n for n in on_disk if '/' in n or n.startswith('table')} == {
        'table.tex', 'table.md', *(f'figures/{c}_{s}.{f}' for c in ('reliability', 'risk_coverage')
                                   for s in ('before', 'after') for f in ('pdf', 'png'))}
    tex = (out/'table.tex').read_text()
    assert [row[0] for row in parse_latex(tex)] == ['as given', 'after platt']
    assert '3,000 events' not in tex and '1,500 events' in tex and '50 draws' in tex      # the caption: n, draws
    assert png_size(out/'figures'/'reliability_after.png')[0] == 2025
    assert pdf_fonts(out/'figures'/'reliability_before.pdf') == {'CalibkitSans-Regular': True,
                                                                 'CalibkitSans-Bold': True}
    (out/'figures'/'notes.txt').write_text('mine')                      # a user's file among the figures
    r = calibkit_here(capsys, 'report', data/'test.csv', '--out', out, '--n-samples', 50, '--force')
    assert r.returncode == 73 and 'figures/notes.txt' in r.stderr and (out/'figures'/'notes.txt').exists()
    (out/'figures'/'notes.txt').unlink()
    r = calibkit_here(capsys, 'report', data/'test.csv', '--out', out, '--n-samples', 50, '--force')
    assert r.returncode == 0 and not (out/'figures').exists() and not (out/'table.tex').exists()


@pytest.mark.parametrize('args, says', [
    (['--export', 'latex,word'], "argument --export: formats must be distinct values of latex, markdown, pdf, svg, png"),
    (['--export', 'pdf,pdf'], 'argument --export: formats must be distinct'),
    (['--export', ''], 'argument --export: formats must be distinct'),
    (['--export', 'pdf', '--figure-width', 'wide'], "argument --figure-width: 'wide' is not a number"),
    (['--export', 'pdf', '--figure-width', '0'], 'argument --figure-width: width must be'),
    (['--export', 'latex', '--figure-width', 'double'], '--figure-width needs --export with pdf, svg, png'),
    (['--figure-width', 'single'], '--figure-width needs --export'),
    (['--export', 'latex', '--json'], '--export writes into the output folder: with --json, give --out'),
])
def test_cli_refused_export_flags_exit_2_in_one_line(data, tmp_path, capsys, args, says):
    r = calibkit_here(capsys, 'report', data/'test.csv', '--out', tmp_path/'r', *args) if '--json' not in args else \
        calibkit_here(capsys, 'report', data/'test.csv', *args)
    assert r.returncode == 2 and r.stderr.count('\n') == 1 and says in r.stderr, r.stderr
    assert not (tmp_path/'r').exists()
