"""Issue 25's one door: `calibkit.inputs.plan` checks a report's inputs at once, in its documented order, and the
command line enters `calibkit.inputs` once per report (the plan), never its readers; a ThresholdError on standard input
keeps its type, in the library and at the command line."""
import ast, io, sys
from pathlib import Path
import numpy as np, pandas as pd, pytest
import calibkit.cli as cli
import calibkit.inputs as inputs
from calibkit.inputs import (InputError, InputPlan, NoInputError, PlanError, ScoresNeededError, ThresholdError, plan,
                             read_inputs)


@pytest.fixture()
def files(tmp_path):
    "dev.csv (conf .1 .5 .9), a folder of two shards, counts, two score matrices of 4 and 3 labels."
    pd.DataFrame(dict(conf=[.1, .5, .9], correct=[0, 1, 1], label=list('NVN'))).to_csv(tmp_path/'dev.csv', index=False)
    (tmp_path/'runs').mkdir()
    for i in range(2):
        pd.DataFrame(dict(conf=[[.2, .3][i], .8], correct=[1, 0], label=list('NV'))).to_csv(
            tmp_path/'runs'/f'part-{i}.csv', index=False)
    (tmp_path/'c.csv').write_text('label,count\nN,90\nV,10\n')
    p = np.random.default_rng(0).dirichlet(np.ones(4), 30)
    np.savez(tmp_path/'m4.npz', scores=p, gold=p.argmax(1), labels=np.array(list('abcd')))
    np.savez(tmp_path/'m3.npz', scores=p[:, :3] / p[:, :3].sum(1, keepdims=True), gold=p[:, :3].argmax(1))
    return tmp_path


def stdin_with(monkeypatch, data: bytes):
    monkeypatch.setattr(sys, 'stdin', type('In', (), {'buffer': io.BytesIO(data)})())


def test_plan_reads_what_read_inputs_reads_and_names_its_paths(files):
    p = plan(files/'dev.csv', files/'runs', files/'c.csv', threshold=0.25)
    assert isinstance(p, InputPlan) and p.name == 'dev' and p.files is None
    assert [f.name for f in p.fit_files] == ['part-0.csv', 'part-1.csv']
    assert p.paths == (files/'dev.csv', files/'runs'/'part-0.csv', files/'runs'/'part-1.csv', files/'runs', files/'c.csv')
    ev, fit, counts = p.read()
    assert ev.conf.tolist() == [.5, .9] and ev.attrs['n_dropped'] == 1           # .1 < 0.25 <= .5
    assert fit.conf.tolist() == [.8, .3, .8] and fit.attrs['n_dropped'] == 1     # part-0's .2 dropped
    assert counts.to_dict() == {'N': 90, 'V': 10}
    ev2, fit2, _ = read_inputs(files/'dev.csv', files/'runs', threshold=0.25)    # the same door, in one call
    pd.testing.assert_frame_equal(ev, ev2)
    pd.testing.assert_frame_equal(fit, fit2)
    assert plan(f'{files}/runs/*.csv').name == 'runs-events' and plan('-', fmt='csv').paths == ()


def test_a_dask_plan_hands_its_file_lists_to_a_reader(files):
    p = plan(files/'runs', files/'dev.csv', files/'c.csv', dask=True)
    assert [f.name for f in p.files] == ['part-0.csv', 'part-1.csv'] and p.fit_files == (files/'dev.csv',)
    seen = []
    ev, fit, counts = p.read(lambda fs: seen.append([f.name for f in fs]) or len(fs))
    assert (ev, fit, counts.sum(), seen) == (2, 1, 100, [['part-0.csv', 'part-1.csv'], ['dev.csv']])
    with pytest.raises(ValueError, match='needs a reader'): p.read()
    with pytest.raises(ValueError, match='plan made with dask=True'): plan(files/'dev.csv').read(len)


@pytest.mark.parametrize('call, kind, reason', [
    (lambda f: plan('-', fmt='csv', dask=True), PlanError, 'stdin_files'),
    (lambda f: plan('-', f/'runs', fmt='csv'), PlanError, 'stdin_files'),
    (lambda f: plan(f/'runs', extractor=object()), PlanError, 'extractor_files'),
    (lambda f: plan(f/'dev.csv', extractor=object(), dask=True), PlanError, 'extractor_files'),
    (lambda f: plan(f/'runs', threshold=0.5, dask=True), PlanError, 'threshold_dask'),
    # changed by the merge (documented in nbs/61): standard input without fmt before a missing fit is looked for
    (lambda f: plan('-', f/'nope.csv'), PlanError, 'stdin_format'),
    (lambda f: plan('-', f/'m4.npz', fmt='csv', conformal=True), PlanError, 'stdin_scores'),
    # usage faults before missing files, whatever the order of the arguments
    (lambda f: plan(f/'nope.csv', threshold=0.5, dask=True), PlanError, 'threshold_dask'),
    (lambda f: plan(f/'dev.csv', f/'nope.csv', f/'nope.json'), NoInputError, 'nope.csv: no such file'),
    (lambda f: plan(f/'dev.csv', counts=f/'nope.json'), NoInputError, 'nope.json: no such file'),
    (lambda f: plan(f'{f}/runs/*.parquet'), NoInputError, 'no file matches this pattern'),
    # missing files before a file that is no score matrix
    (lambda f: plan(f/'dev.csv', f/'nope.npz', conformal=True), NoInputError, 'nope.npz: no such file'),
    (lambda f: plan(f/'m4.npz', f/'dev.csv', conformal=True), ScoresNeededError, 'dev.csv is not one'),
    (lambda f: plan(f/'runs', f/'m4.npz', conformal=True), ScoresNeededError, 'runs names several events files'),
])
def test_the_first_fault_in_plans_order(files, call, kind, reason):
    with pytest.raises(kind) as e: call(files)
    assert type(e.value) is kind
    assert (e.value.reason == reason) if kind is PlanError else (reason in str(e.value)), str(e.value)
    assert '--' not in str(e.value)                         # a library message names no flag


def test_columns_of_several_files_are_checked_before_a_row_is_read(files, monkeypatch):
    pd.DataFrame(dict(conf=[.5], correct=[1])).to_csv(files/'runs'/'part-2.csv', index=False)   # no label
    monkeypatch.setattr(inputs, 'read_events', lambda p: pytest.fail(f'{p} read before its columns were checked'))
    with pytest.raises(InputError, match="part-2.csv: columns .* differ from part-0.csv's"): plan(files/'runs')


def test_the_columns_are_checked_once_per_file(files, monkeypatch):
    seen = []
    real = inputs.file_columns
    monkeypatch.setattr(inputs, 'file_columns', lambda p: seen.append(Path(p).name) or real(p))
    plan(files/'runs').read()
    assert seen == ['part-0.csv', 'part-1.csv']


def test_arguments_are_validated_naming_them(files):
    for call, kind, says in ((lambda: plan(files/'dev.csv', fmt='csv'), ValueError, 'fmt is the format of standard'),
                             (lambda: plan('-', fmt='xml'), ValueError, "fmt must be one of 'csv'"),
                             (lambda: plan(files/'dev.csv', threshold=1), ValueError, 'threshold'),
                             (lambda: plan(files/'dev.csv', dask='yes'), TypeError, 'dask must be True or False'),
                             (lambda: plan(files/'m4.npz', conformal=True), ValueError, 'conformal needs fit'),
                             (lambda: plan(files/'dev.csv').scores(), ValueError, 'conformal=True')):
        with pytest.raises(kind, match=says): call()


def test_scores_share_labels_or_say_which_differ(files):
    (pf, gf), (pe, ge), labels = plan(files/'m4.npz', files/'m4.npz', conformal=True).scores()
    assert pf.shape == pe.shape == (30, 4) and labels == list('abcd') and (gf == ge).all()
    with pytest.raises(PlanError) as e: plan(files/'m4.npz', files/'m3.npz', conformal=True).scores()
    detail = f"{files}/m3.npz has 3 columns, {files}/m4.npz 4; the first difference is label 0: '0' in {files}/m3.npz, 'a' in {files}/m4.npz"
    assert e.value.reason == 'labels' and e.value.detail == detail
    assert str(e.value) == (f'the fit and evaluated score matrices score different labels: {detail}; both need the same '
                            'labels in the same column order')


def test_a_threshold_error_on_stdin_keeps_its_type_and_attributes(monkeypatch):
    stdin_with(monkeypatch, b'conf,correct\n0.5,1\n0.9,0\n0.2,1\n')
    with pytest.raises(ThresholdError) as e: read_inputs('-', fmt='csv', threshold=0.95)
    assert type(e.value) is ThresholdError and (str(e.value.source), e.value.n_events, e.value.threshold) == (
        '<stdin>', 3, 0.95)
    assert str(e.value) == '<stdin>: all 3 events score below the threshold 0.95'
    stdin_with(monkeypatch, b'conf,correct\n0.5,1\n1.5,0\n')
    with pytest.raises(InputError) as e: read_inputs('-', fmt='csv')
    assert type(e.value) is InputError and str(e.value) == "<stdin>: column 'conf', line 3: 1.5 is outside [0, 1]"


def test_cli_names_stdin_and_its_flag_for_a_threshold_error(monkeypatch, capsys):
    stdin_with(monkeypatch, b'conf,correct\n0.5,1\n0.9,0\n0.2,1\n')
    assert cli.main(['report', '-', '--format', 'csv', '--threshold', '0.95', '--json', '--quiet']) == 65
    assert capsys.readouterr().err == 'calibkit: error: <stdin>: all 3 events score below --threshold 0.95\n'


@pytest.mark.parametrize('argv, code, line', [
    (['-', '--fit', 'nope.csv', '--recalibrator', 'isotonic'], 2,
     'reading standard input (-) needs --format csv, jsonl or parquet'),
    (['-', '--format', 'csv', '--fit', 'runs', '--recalibrator', 'isotonic'], 2,
     'a folder, a glob or --dask reads files, not standard input'),
    (['runs', '--extractor', 'softmax', '--extractor-param', 'kind=logits'], 2,
     '--extractor reads one raw output file: not with a folder, a glob or --dask'),
    (['m4.npz', '--fit', 'm3.npz', '--conformal', '0.1'], 65,
     "--fit and INPUT score different labels: m3.npz has 3 columns, m4.npz 4; the first difference is label 0: '0' in "
     "m3.npz, 'a' in m4.npz; save both with the same labels in the same column order"),
])
def test_cli_words_each_plan_error_with_its_flags(files, monkeypatch, capsys, argv, code, line):
    monkeypatch.chdir(files)
    stdin_with(monkeypatch, b'')                              # standard input is never read for these
    assert cli.main(['report', *argv, '--json', '--quiet']) == code
    assert capsys.readouterr().err == f'calibkit: error: {line}\n'


def test_cli_enters_inputs_once_per_report(files, monkeypatch, capsys):
    "One call of `plan`; everything else the report reads goes through the plan it returned."
    calls = []
    real = inputs.plan
    monkeypatch.setattr(inputs, 'plan', lambda *a, **kw: calls.append(a) or real(*a, **kw))
    monkeypatch.chdir(files)
    assert cli.main(['report', 'dev.csv', '--fit', 'runs', '--grouper', 'tfg', '--counts', 'c.csv', '--n-samples', '20',
                     '--quiet']) == 0
    assert calls == [('dev.csv', 'runs', 'c.csv')] and (files/'dev-calibration'/'report.html').exists()
    assert capsys.readouterr().out.strip().endswith('dev-calibration/report.html')


def test_cli_imports_from_inputs_only_the_plan_and_its_errors():
    tree = ast.parse(Path(cli.__file__).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and (n.module or '').endswith('inputs')
             for a in n.names}
    assert names == {'plan', 'LogitsError', 'NoInputError', 'PlanError', 'ScoresNeededError', 'ThresholdError',
                     'show_path', 'unreadable'}, names                  # unreadable: the error of a file read late
