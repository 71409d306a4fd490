"""Issue 23 at the command line: no silent misread, every failure one line with its documented exit status naming its
source (file and true line, flag, or plugin and distribution), inputs checked before the output folder, and installed
plugins that raise or print at import breaking only themselves."""
import json, os, textwrap
from pathlib import Path
import numpy as np, pandas as pd, pytest
from clidata import calibkit, calibkit_here


def here(*args):
    """`calibkit *args` in this process (`calibkit_here`): a `calibkit` process spends seconds importing numpy, pandas,
    scikit-learn and Altair; the tests where the process is the point (installed plugins, the working directory, a
    closed standard input) run the real command."""
    return calibkit_here(None, *args)


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('inputs')
    rng = np.random.default_rng(0)
    q = rng.beta(2, 2, 400)
    pd.DataFrame(dict(conf=q, correct=(rng.random(400) < q).astype(int), label=rng.choice(list('ABC'), 400))).to_csv(
        d/'test.csv', index=False)
    return d


def one_line(r, code: int) -> str:
    "The single stderr line of a failed run, after checking its exit status and that no traceback was shown."
    assert r.returncode == code, (r.returncode, r.stderr)
    assert r.stderr.count('\n') == 1 and r.stderr.startswith('calibkit: error: ') and 'Traceback' not in r.stderr, r.stderr
    return r.stderr[len('calibkit: error: '):-1]


def test_row_with_extra_fields_is_an_error_with_its_line(tmp_path):
    "S1: the columns were shifted by one and the run exited 0 with mean conf 0.667."
    p = tmp_path/'s.csv'
    p.write_text('conf,correct\n0.9,1,0\n0.3,0,1\n0.6,1,1\n')
    assert one_line(here('report', p, '--json'), 65).startswith(f'{p}: line 2: 3 fields, but the header names 2')



def test_extractor_names_a_bad_record_by_file_and_line(tmp_path):
    "An extractor over JSONL records says records[i]; the command line names file:line (blank lines counted)."
    p = tmp_path/'steps.jsonl'
    good = {'top_logits': [[2.0, 0.5]], 'top_logit_idxs': [[0, 1]], 'labels': [0]}
    no_labels = {'top_logits': [[1.0, 0.5]], 'top_logit_idxs': [[0, 1]]}
    p.write_text(json.dumps(good) + '\n\n' + json.dumps(no_labels) + '\n')
    msg = one_line(here('report', p, '--extractor', 'seq2seq', '--json'), 65)
    assert msg == f"{p}:3 lacks key(s) ['labels']", msg

@pytest.mark.parametrize('text, line', [('conf,correct\n0.5,1\n\n\nbad,0\n', 5), ('conf,correct,l\n0.5,1,"a\nb"\nbad,0,x\n', 4)])
def test_true_line_at_the_command_line(tmp_path, text, line):
    p = tmp_path/'e.csv'
    p.write_text(text)
    assert one_line(here('report', p, '--json'), 65) == f"{p}: column 'conf', line {line}: 'bad' is not a number"


@pytest.mark.parametrize('args, says', [
    (['--param', 'x=NaN'], "'x=NaN': NaN is not a value"),
    (['--param', 'x=-Infinity'], 'is not a value a plugin can use'),
    (['--param', 'n_bins=3'], '--param needs --recalibrator'),
    (['--recalibrator', 'none', '--param', 'n_bins=3'], '--param needs --recalibrator'),
    (['--counts', 'c.csv'], '--counts needs --grouper'),
    (['--n-groups', '3'], '--n-groups needs --grouper'),
    (['--all-groups'], '--all-groups needs --grouper'),
    (['--fit', 'test.csv'], '--fit needs --recalibrator, --grouper or --conformal'),
    (['--n-samples', '1000000000'], '--n-samples must be an integer in [2, 10000]'),
    (['--extractor-param', 'kind=logits'], '--extractor-param needs --extractor: kind is a parameter of softmax (--extractor softmax)'),
    (['--extractor-param', 'level=token', '--extractor-param', 'how=min'],
     '--extractor-param needs --extractor: level, how is a parameter of openai_logprobs and seq2seq (--extractor openai_logprobs)'),
    (['--extractor-param', 'zzz=1'], '--extractor-param needs --extractor: no extractor takes zzz'),
])
def test_flags_that_configure_nothing_or_too_much_are_usage_errors(data, tmp_path, args, says):
    "S2/E3/E4: before anything is read or allocated; no output folder appears."
    r = here('report', data/'test.csv', *args, '--out', tmp_path/'r')
    assert says in one_line(r, 2) and not (tmp_path/'r').exists()


def test_logits_are_refused_with_the_flags_that_read_them(tmp_path):
    "Issue 35: a score matrix of logits was refused as 'values are outside [0, 1]', saying nothing of the way on."
    rng = np.random.default_rng(0)
    logits, tags = rng.normal(0, 3, (400, 4)), np.array(['NN', 'VB', 'JJ', 'DT'])
    p = tmp_path/'logits.npz'
    np.savez(p, scores=logits, gold=tags[rng.integers(0, 4, 400)], labels=tags)
    out = ((logits < 0) | (logits > 1)).sum()
    assert one_line(here('report', p, '--json'), 65) == (
        f'{p}: scores: {out} of 1600 values are outside [0, 1] (min {logits.min():g}, max {logits.max():g}): probabilities '
        'were expected; if they are logits, read them with --extractor softmax --extractor-param kind=logits')
    r = here('report', p, '--json', '--extractor', 'softmax', '--extractor-param', 'kind=logits')
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)['summary']['labels'] == 4


def test_tag_frequency_groups_come_from_the_fit_matrix_gold_tags(tmp_path):
    "Issue 35: without --counts, TFG was fitted on the fit file's events above the threshold, not on its gold tags."
    from calibkit.groupers import TagFrequency
    rng = np.random.default_rng(3)
    tags = np.array([f'T{i}' for i in range(8)])
    for split, n in (('dev', 3000), ('test', 1000)):
        p = rng.dirichlet(np.ones(8) * .3, size=n)
        np.savez(tmp_path/f'{split}.npz', scores=p, gold=tags[[rng.choice(8, p=r) for r in p]], labels=tags)
    r = here('report', tmp_path/'test.npz', '--fit', tmp_path/'dev.npz', '--grouper', 'tfg', '--n-groups', '3',
                 '--recalibrator', 'histogram', '--json')
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out['meta']['frequencies'] == 'the gold tags of dev.npz (the fit events): 3,000 tokens'
    gold = pd.Series(np.load(tmp_path/'dev.npz')['gold']).value_counts()
    want = TagFrequency(n_groups=3).fit(gold).table()
    got = [g for g in out['groups'] if g['stage'] == 'before']
    assert [g['members'] for g in got] == list(want.members)


def test_bad_and_unknown_plugin_parameters_share_one_exit_status(data):
    "E4: a value the recalibrator refuses and a parameter it does not take are both 65 (EX_DATAERR)."
    base = ('report', data/'test.csv', '--json', '--fit', data/'test.csv', '--recalibrator', 'histogram', '--param')
    assert 'n_bins must be an integer >= 1' in one_line(here(*base, 'n_bins=-1'), 65)
    assert "unexpected keyword argument 'nbins'" in one_line(here(*base, 'nbins=3'), 65)
    assert "unknown recalibrator 'histogramm'" in one_line(here(*base[:-2], 'histogramm'), 2)


def test_recalibrator_none_needs_no_fit(data):
    r = here('report', data/'test.csv', '--json', '--recalibrator', 'none')
    assert r.returncode == 0, r.stderr
    assert {m['stage'] for m in json.loads(r.stdout)['metrics']} == {'before'}


def test_demo_only_bogus_is_a_usage_error_listing_the_names(tmp_path):
    msg = one_line(here('demo', '--only', 'synthetic,bogus', '--out', tmp_path/'d'), 2)
    assert msg.startswith('--only: unknown demo(s) bogus; known: synthetic') and not (tmp_path/'d').exists()


def test_threshold_leaving_nothing_names_the_file(data, tmp_path):
    "E2: not 'conf is empty'."
    assert one_line(here('report', data/'test.csv', '--json', '--threshold', '0.9999'), 65) == \
        f'{data/"test.csv"}: all 400 events score below --threshold 0.9999'
    np.savez(tmp_path/'s.npz', scores=np.array([[.6, .4]]), gold=np.array([0]))
    assert 'no score of the 2 cells reaches the threshold 0.9' in one_line(
        here('report', tmp_path/'s.npz', '--json', '--threshold', '0.9'), 65)


def test_counts_with_inf_or_no_rows_name_the_file(data, tmp_path):
    for text, says in (('label,count\nA,inf\nB,3\nC,2\n', "count for label 'A' is 'inf'"), ('label,count\n', 'no counts')):
        (tmp_path/'c.csv').write_text(text)
        msg = one_line(here('report', data/'test.csv', '--json', '--grouper', 'tfg', '--counts', tmp_path/'c.csv'), 65)
        assert msg.startswith(f'{tmp_path/"c.csv"}: ') and says in msg


def test_deep_json_and_closed_stdin_are_not_exit_1(tmp_path):
    "E3: RecursionError and a closed standard input had exit status 1 and no file named."
    p = tmp_path/'d.jsonl'
    p.write_text('{"conf": ' + '[' * 100_000 + '\n')
    assert one_line(here('report', p, '--json'), 65) == f'{p}: line 1: JSON nested too deeply for Python to parse'
    import subprocess
    from clidata import ENV, EXE
    r = subprocess.run(f'{EXE} report - --format csv --json <&-', shell=True, capture_output=True, text=True, env=ENV)
    assert one_line(r, 66) == 'standard input is closed: nothing to read for -'


def test_fifo_dev_null_and_newline_names(data, tmp_path):
    "E5: not 'no such file'; a newline in a file name is quoted, so the message stays one line."
    os.mkfifo(tmp_path/'p.csv')
    assert 'p.csv: is a FIFO (named pipe), not a regular file' in one_line(here('report', tmp_path/'p.csv', '--json'), 66)
    assert one_line(here('report', '/dev/null', '--json'), 66).startswith('/dev/null: is a device, not a regular file')
    p = tmp_path/'a\nb.csv'
    p.write_text('conf,correct\nx,1\n')
    assert one_line(here('report', p, '--json'), 65) == f"{str(p)!r}: column 'conf', line 2: 'x' is not a number"


def test_input_is_checked_before_the_output_folder(tmp_path):
    "E5: a missing input was reported as 'test-calibration exists' (73)."
    (tmp_path/'test-calibration').mkdir()
    assert one_line(calibkit('report', 'test.csv', cwd=tmp_path), 66) == 'test.csv: no such file'
    (tmp_path/'test.csv').write_text('conf,correct\n0.5,x\n')
    assert "column 'correct', line 2" in one_line(calibkit('report', 'test.csv', cwd=tmp_path), 65)


# --- installed plugins: a dist-info with an entry point on PYTHONPATH, loaded (IN_TEST=0) by a real `calibkit` ---

def plugin_dist(d: Path, body: str) -> dict:
    "Environment for a run that sees distribution `odd-plugin` 1.0, entry point `odd` = module `calibkit_odd_mod` (`body`)."
    info = d/'odd_plugin-1.0.dist-info'
    info.mkdir()
    (info/'METADATA').write_text('Metadata-Version: 2.1\nName: odd-plugin\nVersion: 1.0\n')
    (info/'entry_points.txt').write_text('[calibkit]\nodd = calibkit_odd_mod\n')
    (d/'calibkit_odd_mod.py').write_text(textwrap.dedent(body))
    return dict(IN_TEST='0', PYTHONPATH=os.pathsep.join([str(d), os.environ.get('PYTHONPATH', '')]))


@pytest.mark.parametrize('body', ['import sys; sys.exit(3)', 'raise KeyboardInterrupt', 'raise SystemExit("bye")'])
def test_plugin_exiting_at_import_breaks_only_itself(data, tmp_path, body):
    "P1: sys.exit(3) at import made every command exit 3 silently; KeyboardInterrupt exited 130."
    env = plugin_dist(tmp_path, body)
    r = calibkit('plugins', '--json', env=env)
    assert r.returncode == 0 and {'isotonic', 'tfg'} <= {p['name'] for p in json.loads(r.stdout)}, r.stderr
    assert "calibkit plugin 'odd' (distribution 'odd-plugin') failed to load" in r.stderr
    r = calibkit('report', data/'test.csv', '--json', '--fit', data/'test.csv', '--recalibrator', 'isotonic', env=env)
    assert r.returncode == 0 and json.loads(r.stdout)['metrics'], r.stderr


def test_plugin_printing_at_import_keeps_stdout_json(data, tmp_path):
    "P2: the plugin's text was the first line of --json output."
    env = plugin_dist(tmp_path, '''
        import os, sys
        print("hello from odd"); os.write(1, b"raw hello\\n"); sys.stdout.write("more\\n")
        from calibkit.plugins import hookimpl
        @hookimpl
        def register_groupers(register): print("registering")
    ''')
    r = calibkit('report', data/'test.csv', '--json', '--grouper', 'shared', env=env)     # a plugin lookup loads them
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)                                              # nothing but the JSON
    assert 'hello from odd' in r.stderr and 'raw hello' in r.stderr and 'registering' in r.stderr


RECAL = '''
    import sys
    import numpy as np
    from calibkit.plugins import hookimpl
    class Odd:
        name, description = 'odd', 'fails on purpose'
        def __init__(self, how='raise'): self.how = how
        def fit(self, X, y=None):
            if self.how == 'raise': raise RuntimeError('fit exploded')
            if self.how == 'key': raise KeyError('nope')
            if self.how == 'exit': sys.exit(0)
            if self.how == 'print': print('fitting odd')
            return self
        def transform(self, X):
            return X.assign(conf=2 * X.conf) if self.how == 'double' else X if self.how == 'print' else X.assign(conf=np.nan)
    @hookimpl
    def register_recalibrators(register): register(Odd)
'''


@pytest.mark.parametrize('how, says', [('raise', 'fit() raised RuntimeError: fit exploded'),
                                       ('key', "fit() raised KeyError: 'nope'"),
                                       ('nan', 'transform() returned 400 NaN values of 400'),
                                       ('exit', 'fit() called sys.exit(0)')])
def test_plugin_failures_name_the_plugin_and_its_distribution(data, tmp_path, how, says):
    """E3: exit 1 with 'fit exploded' or "'nope'", or 'conf: 5000 of 5000 values are NaN', none naming the plugin;
    issue 38: sys.exit(0) in fit exited 0 with no report, 2 × conf exited 65 blaming the data."""
    r = calibkit('report', data/'test.csv', '--json', '--fit', data/'test.csv', '--recalibrator', 'odd', '--param', f'how="{how}"',
                 env=plugin_dist(tmp_path, RECAL))
    assert one_line(r, 70) == f"recalibrator 'odd' from calibkit plugin 'odd' (distribution 'odd-plugin'): {says}"


def test_a_plugin_returning_probabilities_outside_0_1_is_named_not_the_data(data, tmp_path):
    "Issue 38: a recalibrator returning 2 × conf exited 65, blaming the user's data."
    import pandas as pd
    conf = pd.read_csv(data/'test.csv').conf
    r = calibkit('report', data/'test.csv', '--json', '--fit', data/'test.csv', '--recalibrator', 'odd', '--param', 'how="double"',
                 env=plugin_dist(tmp_path, RECAL))
    over = 2 * conf[conf > .5]
    assert one_line(r, 70) == (f"recalibrator 'odd' from calibkit plugin 'odd' (distribution 'odd-plugin'): transform() returned "
                               f"{len(over)} of {len(conf)} values outside [0, 1] (min {2 * conf.min():g}, max {over.max():g})")


def test_a_plugin_printing_inside_its_methods_keeps_stdout_json(data, tmp_path):
    "Issue 38: a print inside fit came before the JSON of --json."
    r = calibkit('report', data/'test.csv', '--json', '--fit', data/'test.csv', '--recalibrator', 'odd', '--param', 'how="print"',
                 env=plugin_dist(tmp_path, RECAL))
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)
    assert 'fitting odd' in r.stderr


def test_huge_fixed_width_n_bins_allocates_nothing_big(data):
    "Resources: peak RSS of the whole command stays far below the 1.7 GB it reached."
    import subprocess, sys
    from clidata import ENV, EXE
    probe = (f'import resource, subprocess, sys; r = subprocess.run([{EXE!r}, "report", {str(data/"test.csv")!r}, "--json", '
             f'"--binning", "fixed_width", "--n-bins", "10000000"], capture_output=True, text=True); '
             f'print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.stderr.strip())')
    code, kb, err = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True, env=ENV).stdout.split(' ', 2)
    assert code == '65' and 'n_bins must be an integer in [1, 10000]' in err
    assert int(kb) < 400_000, kb                                           # KiB: below 400 MB
