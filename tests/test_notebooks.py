"""The notebooks as readers see them: committed executed, deterministic, self-contained, in fastcore's rhythm.

The staleness check itself (every notebook re-executed and compared with its committed outputs, tools/nbcheck.py)
is a step of `python3 nbcheck.py test`; here are its building blocks, tested, and the properties of the committed files.
"""
import json, os, re, sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tools import nbcheck  # noqa: E402  (the runner `python3 nbcheck.py check-notebooks` calls)

NOTEBOOKS = sorted((ROOT/'nbs').glob('*.ipynb'))
FAST = ['01_events.ipynb']        # executed twice at once: outputs are deterministic (a sample; check-notebooks does all)


def cells(path):
    return json.loads(path.read_text())['cells']


def is_export(cell):
    return cell['cell_type'] == 'code' and re.match(r'#\|\s*export', ''.join(cell['source']).lstrip()) is not None


def imports_only(cell):
    "An export cell with nothing to show in an example: imports, and the module's `__dir__` (config.public_dir)."
    lines = [l for l in ''.join(cell['source']).splitlines() if l.strip() and not l.lstrip().startswith('#')]
    return bool(lines) and all(re.match(r'\s*((import|from)\s|__dir__ = |def __dir__\()', l) for l in lines)


def test_export_cells_are_followed_by_their_example():
    "fastcore's rhythm: >= 80% of exported definitions are followed at once by a (non-exported) example or test cell."
    followed, lonely = 0, []
    for path in NOTEBOOKS:
        cs = cells(path)
        for i, c in enumerate(cs):
            if not is_export(c) or imports_only(c): continue
            nxt = cs[i + 1] if i + 1 < len(cs) else None
            if nxt is not None and nxt['cell_type'] == 'code' and not is_export(nxt): followed += 1
            else: lonely.append(f'{path.name} cell {i}')
    total = followed + len(lonely)
    assert total > 0
    assert followed / total >= 0.8, f'{followed}/{total} export cells followed by an example; without: {lonely[:20]}'


@pytest.mark.parametrize('path', NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_cites_no_file_outside_the_repository(path):
    text = path.read_text()
    for bad in ('METHODS.md', '/work/shared'):
        assert bad not in text, f'{path.name} mentions {bad}: cite the paper (authors, year, section)'


def test_every_chart_telling_models_apart_by_colour_has_a_legend():
    """A chart drawing two or more of the models' colours names them in a legend (the overlaid reliability diagrams of
    the comparison and of the Twitter POS tutorial had none): every SVG in the notebooks and in sample_outputs/."""
    from calibkit.charts import MODEL_COLORS
    svgs = {f'{p.name} cell {i}': ''.join(o['data']['image/svg+xml']) for p in NOTEBOOKS
            for i, c in enumerate(cells(p)) for o in c.get('outputs', []) if 'image/svg+xml' in o.get('data', {})}
    svgs |= {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT/'sample_outputs').rglob('*.svg'))}
    several = {k for k, svg in svgs.items() if sum(c in svg for c in MODEL_COLORS) >= 2}
    assert len(several) >= 10, sorted(several)                       # the check sees the overlaid charts
    assert [k for k in sorted(several) if 'role-legend' not in svgs[k]] == []


def test_tables_show_numbers_as_calibkit_tables_do():
    """Every notebook but the README's (index) shows its tables' numbers as calibkit's tables do: `number_cell` as
    pandas' display.float_format, 4 significant digits. Rounded by hand, the demo's CalibMSE 2.455e-05 read 0.0000 and
    an interval's end 0.0003 kept one digit: a displayed table is `.round()`ed only where its line says why (a comment),
    and no cell reads 0.0…"""
    shown = [p for p in NOTEBOOKS if p.name != 'index.ipynb']
    unset, rounded, zeros, with_tables = [], [], [], 0
    for p in shown:
        tables = [(i, c) for i, c in enumerate(cells(p)) if c['cell_type'] == 'code' and any(
            '<table' in ''.join(o.get('data', {}).get('text/html', '')) for o in c.get('outputs', []))]
        with_tables += bool(tables)
        if tables and "pd.set_option('display.float_format', number_cell)" not in p.read_text(): unset.append(p.name)
        for i, c in tables:
            last = ''.join(c['source']).rstrip().split('\n')[-1]
            if '.round(' in last and '#' not in last: rounded.append(f'{p.name} cell {i}')
            html = ''.join(''.join(o.get('data', {}).get('text/html', '')) for o in c['outputs'])
            if re.search(r'<td>[−-]?0\.0+</td>', html): zeros.append(f'{p.name} cell {i}')
    assert with_tables >= 40                                          # the check sees the notebooks' tables
    assert (unset, rounded, zeros) == ([], [], [])


@pytest.mark.parametrize('path', NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_executed_small_and_offline(path):
    assert nbcheck.static_problems(path) == []


@pytest.mark.parametrize('path', NOTEBOOKS, ids=lambda p: p.name)
def test_no_warning_from_another_package_in_the_outputs(path):
    "A reader sees calibkit's warnings, each explained where it appears, never another package's (an environment's noise)."
    for i, c in enumerate(cells(path)):
        for o in c.get('outputs', []):
            text = ''.join(o.get('text', '')) if o.get('name') == 'stderr' else ''
            assert '<site-packages>' not in text and 'site-packages/' not in text, f'{path.name} cell {i}: {text[:200]}'


def nb(*code_cells):
    return {'cells': [{'cell_type': 'code', 'id': f'c{i}', 'metadata': {}, 'source': src, 'outputs': outs, 'execution_count': None}
                      for i, (src, outs) in enumerate(code_cells)], 'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}


def test_static_problems_catch_size_remote_assets_and_no_outputs(tmp_path):
    p = tmp_path/'x.ipynb'
    p.write_text(json.dumps(nb(('1', []))))
    assert nbcheck.static_problems(p) == ['x.ipynb: has no outputs at all (run `python3 tasks.py notebooks x.ipynb` and commit it)']
    html = {'output_type': 'display_data', 'metadata': {}, 'data': {'text/html': '<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>'}}
    p.write_text(json.dumps(nb(('1', []), ('chart', [html]))))
    (problem,) = nbcheck.static_problems(p)
    assert problem.startswith('x.ipynb: cell 1 output loads from another host')
    svg = {'output_type': 'display_data', 'metadata': {}, 'data': {'image/svg+xml': '<svg>' + 'x' * nbcheck.NB_MAX_BYTES + '</svg>'}}
    p.write_text(json.dumps(nb(('chart', [svg]))))
    (problem,) = nbcheck.static_problems(p)
    assert problem.startswith('x.ipynb: 2.0 MB, over the 2 MB limit')


def test_outputs_are_normalised():
    root = str(nbcheck.ROOT)
    outs = [{'output_type': 'stream', 'name': 'stderr', 'text': 'bins: 100%|██████████| 10/10 [00:00<00:00, 99.1it/s]\n'},
            {'output_type': 'stream', 'name': 'stdout', 'text': f'wrote {root}/sample_outputs/x.svg\n'},
            {'output_type': 'stream', 'name': 'stdout', 'text': 'at <object at 0x7f3a2b1c0d90>\n'},
            {'output_type': 'execute_result', 'execution_count': 3, 'metadata': {},
             'data': {'text/plain': '/usr/lib/python3/site-packages/x.py:3: UserWarning'}}]
    got = nbcheck.normalise_outputs(outs)
    assert got == [{'output_type': 'stream', 'name': 'stdout', 'text': 'wrote sample_outputs/x.svg\nat <object at 0x…>\n'},
                   {'output_type': 'execute_result', 'execution_count': 3, 'metadata': {},
                    'data': {'text/plain': '<site-packages>/x.py:3: UserWarning'}}]


def out(t, mime='text/plain'):
    return [{'output_type': 'execute_result', 'execution_count': None, 'metadata': {}, 'data': {mime: t}}]


def test_stale_output_names_the_notebook_and_first_differing_cell():
    committed = json.dumps(nb(('a = 1\na', out('1')), ('b = 2\nb', out('2')), ('c', out('3'))))
    fresh = json.dumps(nb(('a = 1\na', out('1')), ('b = 2\nb', out('20')), ('c', out('30'))))
    msg = nbcheck.stale('x.ipynb', committed, fresh)
    assert msg.splitlines()[0].startswith('x.ipynb: cell 1 has stale outputs, compared exactly: a code change')
    assert '    b = 2' in msg and '-[text/plain] 2' in msg and '+[text/plain] 20' in msg and '30' not in msg
    assert msg.splitlines()[-1] == '    (and 1 more stale cell(s))'
    assert nbcheck.stale('x.ipynb', committed, committed) is None


def test_unit_of_the_last_displayed_digit():
    assert [nbcheck.unit(x) for x in ('0.0922', '3.1e-05', '12', '-2.50', '1E+3')] == [1e-4, 1e-6, 0.0, 1e-2, 1000.0]


def test_numbers_moved_by_hand():
    "|a - b| beyond one unit of the last digit, relative to the larger number (or to the SVG's size)."
    need, pair = nbcheck.numbers_moved(out('ECE 0.0922 (n = 12)'), out('ECE 0.0918 (n = 12)'))
    assert pair == '0.0922 → 0.0918' and need == pytest.approx((0.0004 - 0.0001) / 0.0922)
    assert nbcheck.numbers_moved(out('x 0.14100'), out('x 0.14101')) == (0.0, '0.14100 → 0.14101')   # one last-digit unit
    assert nbcheck.numbers_moved(out('−27.7%'), out('−27.9%'))[0] == pytest.approx(0.1 / 27.9)      # U+2212 is a minus sign
    assert nbcheck.numbers_moved(out('p 0.0000'), out('p 0')) == (0.0, '0.0000 → 0')     # two zeros: no division by 0
    assert nbcheck.numbers_moved(out('n = 12'), out('n = 13'))[0] == pytest.approx(1 / 13)         # integers: no unit
    table = lambda a, b: f'   kind  mean_conf\n0  pair  {a:>9}\n1   new  {b:>9}'                    # pandas realigns columns
    assert nbcheck.numbers_moved(out(table('0.14100', '0.31150')), out(table('0.1410', '0.3115'))) == (0.0, '0.14100 → 0.1410')
    svg = '<svg width="300" height="200"><path d="M10.5,150L290,20"/></svg>'
    need, pair = nbcheck.numbers_moved(out(svg, 'image/svg+xml'), out(svg.replace('150L', '151.5L'), 'image/svg+xml'))
    assert pair == '150 → 151.5' and need == pytest.approx((1.5 - 0.1) / 300)      # pixels, relative to the chart's size
    for other in ('ECE 0.0922 (n = 12)!', 'ECE 0.0922', 'ece 0.0922 (n = 12)'):       # other text, or a number more or less
        assert nbcheck.numbers_moved(out('ECE 0.0922 (n = 12)'), out(other)) is None
    assert nbcheck.numbers_moved(out('0.5'), out('0.5', 'text/html')) is None          # another kind of output


def test_every_difference_is_a_code_change_and_moved_numbers_are_named():
    "Issue 34: outputs are compared exactly; when only numbers moved, the message says how far and what to do."
    model = 'print(ece(model))'
    committed = json.dumps(nb(('1 + 1', out('2')), (model, out('ECE 0.0922'))))
    fresh = lambda exact, shown: json.dumps(nb(('1 + 1', out(exact)), (model, out(shown))))
    msg = nbcheck.stale('x.ipynb', committed, fresh('2', 'ECE 0.0918'))
    assert msg.splitlines()[0] == ('x.ipynb: cell 1 has stale outputs, compared exactly: a code change (only numbers '
                                   'differ, by up to 3.3e-03 relative (0.0922 → 0.0918): if they come from a model trained '
                                   'while the notebook runs, make it a committed artifact, calibkit.artifacts):')
    msg = nbcheck.stale('x.ipynb', committed, fresh('2', 'MCE 0.0922'))
    assert msg.splitlines()[0] == 'x.ipynb: cell 1 has stale outputs, compared exactly: a code change:'
    assert nbcheck.stale('x.ipynb', committed, fresh('2', 'ECE 0.0922')) is None


def test_a_tolerance_directive_is_refused(tmp_path):
    p = tmp_path/'x.ipynb'
    p.write_text(json.dumps(nb(('#| tolerance: 1e-3\nx', out('1')))))
    assert nbcheck.static_problems(p) == [f'x.ipynb: cell 0: {nbcheck.TOLERANCE_GONE}']
    p.write_text(json.dumps(nb(('x', out('1')))))
    assert nbcheck.static_problems(p) == []


def test_no_committed_notebook_carries_a_tolerance():
    "Every notebook is compared exactly (issue 34): none is marked with a processor tolerance."
    marked = [(p.name, i) for p in sorted((ROOT/'nbs').glob('*.ipynb'))
              for i, c in enumerate(json.loads(p.read_text())['cells']) if 'tolerance' in nbcheck.directives(c)]
    assert marked == []


def test_writing_back_rewrites_a_notebook_whose_numbers_moved(tmp_path, monkeypatch):
    "`tasks.py notebooks` keeps a notebook that matches and rewrites one whose numbers moved, however little."
    p = tmp_path/'x.ipynb'
    committed = json.dumps(nb(('print(ece(model))', out('ECE 0.0922'))))
    for shown, kept in (('ECE 0.0922', True), ('ECE 0.0921', False)):
        fresh = json.dumps(nb(('print(ece(model))', out(shown))))
        p.write_text(committed)
        monkeypatch.setattr(nbcheck, 'execute', lambda path, env: fresh)
        name, problem, _, wrote = nbcheck.nb_job((p, True, None))
        assert (name, problem, wrote) == ('x.ipynb', None, not kept)
        assert p.read_text() == (committed if kept else fresh)


def test_executing_twice_gives_identical_notebooks():
    """Outputs are deterministic: two executions of a fast notebook give byte-identical files, in nbdev-clean's form,
    one in an ordinary kernel and one in a kernel forked by tools/forkkernel.py (as check-notebooks runs them: a forked
    kernel computes what an ordinary one does); the kernel server and its socket are gone after."""
    from tools import forkkernel
    paths = [ROOT/'nbs'/n for n in FAST]
    env = dict(os.environ)
    with forkkernel.serving(env) as forked, ProcessPoolExecutor(2) as pool:   # both at once (check-notebooks compares
        assert os.path.exists(forked[forkkernel.SOCKET_ENV])    # each notebook with its committed outputs: this samples)
        done = list(pool.map(nbcheck.execute, paths * 2, [env] * len(paths) + [forked] * len(paths)))
    assert not os.path.exists(forked[forkkernel.SOCKET_ENV])
    first, second = done[:len(paths)], done[len(paths):]
    for path, a, b in zip(paths, first, second):
        assert a == b, nbcheck.first_difference(path.name, a, b)
        assert any(c.get('outputs') for c in json.loads(a)['cells']), path.name
        assert re.search(r'"execution_count": [0-9]', a) is None and str(ROOT) not in a


def test_warnings_raised_in_a_cell_do_not_carry_the_kernel_file():
    "A warning's location in a cell is a per-kernel temp file (/tmp/ipykernel_PID/HASH.py): normalised to <cell>."
    outs = [{'output_type': 'stream', 'name': 'stderr', 'text': '/tmp/ipykernel_24792/3442984280.py:25: UserWarning: gmce: 1 group(s)\n'}]
    assert nbcheck.normalise_outputs(outs)[0]['text'] == '<cell>:25: UserWarning: gmce: 1 group(s)\n'


def test_a_check_puts_back_the_files_the_notebooks_rewrote(tmp_path):
    "What a check run's notebooks rewrite (sample_outputs/) is put back byte for byte; files they create are left."
    (tmp_path/'a').mkdir()
    (tmp_path/'a'/'x.csv').write_text('p\n0.0922\n')
    (tmp_path/'y.svg').write_text('<svg/>')
    before = nbcheck.contents(tmp_path)
    (tmp_path/'a'/'x.csv').write_text('p\n0.0918\n')          # another processor's digits
    (tmp_path/'y.svg').unlink()
    (tmp_path/'new.txt').write_text('new')
    assert nbcheck.restore(before) == [tmp_path/'a'/'x.csv', tmp_path/'y.svg']
    assert nbcheck.contents(tmp_path) == {**before, tmp_path/'new.txt': b'new'}
    assert nbcheck.restore(before) == []


def test_a_kernel_that_dies_starting_is_started_again_once(tmp_path, monkeypatch):
    "A kernel that dies before answering (a port race between parallel starts) is no notebook's fault: one retry."
    p = tmp_path/'x.ipynb'
    p.write_text(json.dumps(nb(('1', out('1')))))
    tries = []
    def failing(*messages):                              # `_run` raising these, in turn, then returning 'ok'
        def run(*args):
            tries.append(args[0])
            if len(tries) <= len(messages): raise RuntimeError(messages[len(tries) - 1])
            return 'ok'
        tries.clear()
        return run
    monkeypatch.setattr(nbcheck, '_run', failing(nbcheck.KERNEL_DIED))
    assert nbcheck.execute(p) == 'ok' and tries == [p, p]
    monkeypatch.setattr(nbcheck, '_run', failing('x.ipynb: cell 0 failed'))
    with pytest.raises(RuntimeError, match='cell 0 failed'): nbcheck.execute(p)
    assert tries == [p]                                  # a notebook's own failure is never retried
    monkeypatch.setattr(nbcheck, '_run', failing(nbcheck.KERNEL_DIED, nbcheck.KERNEL_DIED))
    with pytest.raises(RuntimeError, match=nbcheck.KERNEL_DIED): nbcheck.execute(p)   # twice: the error stands
    assert len(tries) == 2
