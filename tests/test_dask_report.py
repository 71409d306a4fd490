"""Issue 28, the report on a cluster: `calibkit report FOLDER|GLOB [--dask [ADDRESS]]` and `calibration_report` of a dask
events frame give the in-memory report's numbers (fixed-width bins exactly, sketched equal-mass bins within their
certified bound), and every failure is one line with its documented exit status."""
import json, logging, sys
from pathlib import Path
import numpy as np, pandas as pd, pytest
from clidata import calibkit, calibkit_here

dask = pytest.importorskip('dask')
distributed = pytest.importorskip('distributed')
import dask.dataframe as dd
from dask.callbacks import Callback
from calibkit import cli
from calibkit.inputs import InputError, NoInputError, event_files, read_event_files
from calibkit.outdir import MARKER
from calibkit.render import REPORT_FILES, bands_note
import calibkit.dask as cd
from calibkit.report import calibration_report, dask_report
from calibkit.stream import SKETCH

N, SHARDS = 100_000, 5


def draw(rng, n):
    q = rng.uniform(.3, 1, n)
    return pd.DataFrame(dict(conf=q, correct=(rng.random(n) < q ** 1.4).astype(np.uint8),
                             label=rng.choice(list('ABCDE'), n, p=[.4, .3, .15, .1, .05])))


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    "N events in SHARDS Parquet files (and the same as CSV), held-out fit events in 2 Parquet files."
    d = tmp_path_factory.mktemp('shards')
    rng = np.random.default_rng(11)
    ev, fit = draw(rng, N), draw(rng, N // 4)
    for name, df, k in (('test', ev, SHARDS), ('fit', fit, 2)):
        (d/name).mkdir()
        for i, part in enumerate(np.array_split(np.arange(len(df)), k)):
            df.iloc[part].to_parquet(d/name/f'part-{i}.parquet', index=False)
    (d/'csv').mkdir()
    for i, part in enumerate(np.array_split(np.arange(N), SHARDS)): ev.iloc[part].to_csv(d/'csv'/f'p{i}.csv', index=False)
    return d, ev, fit


@pytest.fixture
def local(monkeypatch):
    "`--dask` starts a threaded LocalCluster in this process (fast to start)."
    monkeypatch.setattr(cli, 'DASK_LOCAL', {**cli.DASK_LOCAL, **dict(processes=False, n_workers=1, threads_per_worker=2)})


def run(*argv, capsys) -> dict:
    "`calibkit report ... --json --quiet` in this process: metrics.json as a dict."
    assert cli.main(['report', *map(str, argv), '--json', '--quiet']) == 0
    return json.loads(capsys.readouterr().out)


def metric(m: dict, key: str, stage='before') -> float:
    return next(r['estimate'] for r in m['metrics'] if r['key'] == key and r['stage'] == stage)


def test_event_files_and_provenance(data):
    d, ev, _ = data
    files = event_files(d/'test')
    assert [p.name for p in files] == [f'part-{i}.parquet' for i in range(SHARDS)]
    assert [p.name for p in event_files(f'{d}/test/part-[13].parquet')] == ['part-1.parquet', 'part-3.parquet']
    got = read_event_files(files)
    np.testing.assert_array_equal(got.conf, ev.conf)
    assert [f['events'] for f in got.attrs['files']] == [N // SHARDS] * SHARDS
    assert got.file.cat.codes.to_numpy()[N // SHARDS] == 1          # the first event of the second file
    with pytest.raises(NoInputError, match='no file matches'): event_files(f'{d}/test/*.csv')


def test_folder_in_memory_equals_one_file(data, tmp_path, capsys):
    "Without --dask a folder is read in memory: the same numbers as the concatenated events in one file."
    d, ev, _ = data
    ev.to_parquet(tmp_path/'all.parquet', index=False)
    one, many = run(tmp_path/'all.parquet', '--n-samples', 100, capsys=capsys), run(d/'test', '--n-samples', 100, capsys=capsys)
    assert one['metrics'] == many['metrics'] and one['stages'] == many['stages']
    assert many['summary']['files'] == SHARDS and 'files' not in one['summary']
    glob = run(f'{d}/csv/p*.csv', '--n-samples', 100, capsys=capsys)     # CSV: the same numbers (float text round trip)
    assert abs(metric(glob, 'calib_mse') - metric(one, 'calib_mse')) < 1e-12


def test_cli_dask_equals_in_memory_within_bounds(data, local, tmp_path, capsys):
    "The headline test: --dask on a Parquet folder agrees with the in-memory report within the certified bounds."
    d, ev, _ = data
    mem = run(d/'test', '--n-samples', 100, '--grouper', 'per_class', capsys=capsys)
    dk = run(d/'test', '--dask', '--n-samples', 100, '--grouper', 'per_class', capsys=capsys)
    b = dk['stages']['before']['equal_mass_bound']
    # N events are more than the digest's default k (2^14): each bin start is within about half a cell (~N/2k events)
    # of its exact rank, and the certificate is narrow; test_api_... gives k > N for the exact bins
    assert 0 < b['max_rank_error'] <= 2 * N / SKETCH and 0 < b['calib_mse'] < 0.05 * metric(mem, 'calib_mse')
    assert abs(metric(dk, 'calib_mse') - metric(mem, 'calib_mse')) <= b['calib_mse'] + 1e-15
    assert abs(metric(dk, 'ece_l1') - metric(mem, 'ece_l1')) <= b['ece_l1'] + 1e-15
    assert metric(dk, 'brier') == pytest.approx(metric(mem, 'brier'), rel=1e-12)        # a sum over events: exact
    ms = {k: v for k, v in mem['summary'].items() if k != 'files'}
    assert dk['summary'] == pytest.approx(ms, rel=1e-12)                 # sums in another order
    # the sample holds all N events (N < DASK_SAMPLE): the significance test is the in-memory one
    assert dk['stages']['before']['significance'] == mem['stages']['before']['significance']
    gd, gm = (pd.DataFrame(m['groups']).set_index('group') for m in (dk, mem))
    assert (abs(gd.gmce - gm.gmce) <= gd.gmce_bound + 1e-12).all() and (gd.n_events == gm.n_events).all()
    assert 'sketched edges (out of core)' in dk['stages']['before']['bins_note']
    out = tmp_path/'rep'                                       # the written report, through the safe output protocol
    assert cli.main(['report', str(d/'test'), '--dask', '--n-samples', '100', '--out', str(out), '--quiet']) == 0
    page = (out/'report.html').read_text()
    assert 'certified' in page and 'sketched edges (out of core)' in page
    assert (out/MARKER).exists() and {p.name for p in out.iterdir()} - {MARKER} <= REPORT_FILES


def test_cli_dask_fixed_width_is_exact_and_histogram_fit(data, local, capsys):
    d, ev, _ = data
    args = ('--binning', 'fixed_width', '--n-bins', 15, '--n-samples', 100)
    mem, dk = run(d/'test', *args, capsys=capsys), run(d/'test', *args, '--dask', capsys=capsys)
    for a, b in zip(mem['metrics'], dk['metrics']):
        assert a['key'] == b['key'] and a['estimate'] == pytest.approx(b['estimate'], rel=1e-9, abs=1e-15)
    rec = ('--fit', d/'fit', '--recalibrator', 'histogram', '--n-samples', 100)
    mem, dk = run(d/'test', *rec, capsys=capsys), run(d/'test', *rec, '--dask', capsys=capsys)
    # nearly the same recalibrator (the digest's bins of the fit events, within half a cell of the exact ones): nearly
    # the same Brier score (a sum over events); their bins differ (10 distinct values: tie runs are binned differently)
    assert metric(dk, "brier", "after") == pytest.approx(metric(mem, "brier", "after"), rel=1e-3)
    assert metric(dk, 'calib_mse', 'after') < metric(dk, 'calib_mse', 'before') / 5
    iso = run(d/'test', '--fit', d/'fit', '--recalibrator', 'isotonic', '--n-samples', 100, '--dask', capsys=capsys)
    assert list(iso['stages']) == ['before']
    assert any(w.startswith('recalibration not computed out of core: isotonic') for w in iso['warnings'])


def test_cli_dask_address(data, capsys):
    "--dask ADDRESS connects to a running scheduler."
    d, _, _ = data
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2, protocol='tcp',
                                  dashboard_address=':0', silence_logs=logging.ERROR) as cluster:
        dk = run(d/'test', '--dask', cluster.scheduler_address, '--n-samples', 100, capsys=capsys)
    assert dk['summary']['events'] == N and dk['meta']['out_of_core']['partitions'] == SHARDS


def test_api_dask_frame_is_the_same_entry(data):
    "calibration_report takes a dask frame; with a small sketch the bound is non-trivial and holds."
    d, ev, _ = data
    with pytest.warns(UserWarning, match='uniform random sample of 50,000 of the 100,000 events'):
        dk = dask_report(dd.from_pandas(ev, npartitions=7), n_samples=100, sample_size=50_000, sketch=500)   # of 14,286
    mem = calibration_report(ev, n_samples=100)
    b = dk.stages['before']['equal_mass_bound']
    assert 0 < b['max_rank_error'] <= N // 100 and 0 < b['calib_mse'] < 2e-3
    e = lambda r: r.metrics.set_index('key').estimate
    assert abs(e(dk)['calib_mse'] - e(mem)['calib_mse']) <= b['calib_mse']
    assert abs(e(dk)['ece_l1'] - e(mem)['ece_l1']) <= b['ece_l1']
    assert e(dk)['calib_mse'] != e(mem)['calib_mse']          # the bins differ: the bound is doing the work
    assert dk.stages['before']['sample'] == 50_000
    exact = dask_report(dd.from_pandas(ev, npartitions=7), n_samples=100, sketch=N + 1)   # k > N: every cell one value
    b = exact.stages['before']['equal_mass_bound']
    assert b['max_rank_error'] == 0 and b['calib_mse'] < 1e-10 and b['ece_l1'] < 1e-10   # float64 rounding only
    for key in ('calib_mse', 'ece_l1', 'ece_l2', 'brier'): assert e(exact)[key] == pytest.approx(e(mem)[key], rel=1e-12)
    assert any('uniform random sample of 50,000 of the 100,000 events' in w for w in dk.warnings)
    assert dk.stages['before']['bands'] == 'out_of_core' and 'the events are out of core' in bands_note(dk)
    assert 'budget' not in bands_note(dk)            # the in-memory reason (too many draws) is not the reason here
    with pytest.raises(ValueError, match='needs the events in memory'):
        calibration_report(dd.from_pandas(ev, npartitions=2), binning='adaptive')


class Reads(Callback):
    "Counts the Parquet reads dask executes: one task per partition and pass over the files."
    def __init__(self): super().__init__(); self.n = 0
    def _posttask(self, key, result, dsk, state, worker_id):
        self.n += (key[0] if isinstance(key, tuple) else key).startswith('read_parquet')


@pytest.mark.parametrize('binning, ungrouped', [('equal_mass', 2), ('fixed_width', 1)])
def test_grouped_report_reads_the_files_once_more_at_most(data, binning, ungrouped):
    """Issue 37: the passes over the files are only those that depend on each other. Equal-mass: the digest, the
    sample and (grouped) the label counts in one pass; the bins' moment sums and the groups' digests in a second.
    Fixed-width: bins, sample (and label counts) in one pass; the groups' bins (needing the grouper) in a second."""
    d, _, _ = data
    ev = cd.read_events(d/'test')
    passes = {}
    for grouper in (None, 'tfg'):
        with dask.config.set(scheduler='sync'), Reads() as reads:
            dask_report(ev, grouper=grouper, binning=binning, n_samples=20)
        assert reads.n % SHARDS == 0 and ev.npartitions == SHARDS
        passes[grouper] = reads.n // SHARDS
    assert passes == {None: ungrouped, 'tfg': 2}
    assert max(passes.values()) <= passes[None] + 1


def test_histogram_stages_share_their_steps(data):
    "With histogram recalibration the after stage's passes run beside the before stage's: 2 steps over the events."
    d, _, fit = data
    with dask.config.set(scheduler='sync'), Reads() as reads:      # fit in memory: its partitions are not read
        r = dask_report(cd.read_events(d/'test'), fit=fit, recalibrator='histogram', n_samples=20)
    assert list(r.stages) == ['before', 'after'] and reads.n == 2 * 2 * SHARDS     # 2 stages × 2 passes


def one_line(r, code: int) -> str:
    assert r.returncode == code, (r.returncode, r.stderr)
    assert r.stderr.count('\n') == 1 and r.stderr.startswith('calibkit: error: ') and 'Traceback' not in r.stderr, r.stderr
    return r.stderr[len('calibkit: error: '):-1]


def test_errors_are_one_line_with_their_exit_status(data, tmp_path, local, capsys):
    """Each failure's one line and exit status. Two cases run as real `calibkit` processes (the status the shell sees,
    standard input); the others run in this process (`calibkit_here`: a process each cost ~8 s of imports)."""
    d, _, _ = data
    here = lambda *argv: calibkit_here(capsys, 'report', *argv)
    assert 'no file matches this pattern' in one_line(calibkit('report', f'{d}/test/*.csv', '--json'), 66)
    assert 'no file matches this pattern' in one_line(here(f'{d}/test/*.csv', '--dask', '--json'), 66)
    (tmp_path/'empty').mkdir()
    assert 'holds no events files' in one_line(here(tmp_path/'empty', '--json'), 66)
    mixed = tmp_path/'mixed'; mixed.mkdir()
    pd.DataFrame(dict(conf=[.5, .7], correct=[1, 0])).to_parquet(mixed/'a.parquet')
    pd.DataFrame(dict(conf=[.5, .7], correct=[1, 0], label=['A', 'B'])).to_parquet(mixed/'b.parquet')
    assert "differ from a.parquet's" in one_line(here(mixed, '--json'), 65)
    assert "differ from a.parquet's" in one_line(here(mixed, '--dask', '--json'), 65)
    (mixed/'b.parquet').unlink(); (mixed/'c.csv').write_text('conf,correct\n0.5,1\n')
    assert 'mixes file types' in one_line(here(mixed, '--json'), 65)
    assert '--threshold applies' in one_line(here(d/'test', '--dask', '--threshold', .5, '--json'), 2)
    assert '--binning adaptive searches' in one_line(here(d/'test', '--dask', '--binning', 'adaptive'), 2)
    assert 'reads files, not standard input' in one_line(calibkit('report', '-', '--format', 'csv', '--dask', '--json', stdin=''), 2)


def test_dask_extra_missing_exits_69(data, monkeypatch, capsys):
    d, _, _ = data
    monkeypatch.setitem(sys.modules, 'distributed', None)       # as if calibkit[dask] were not installed
    assert cli.main(['report', str(d/'test'), '--dask', '--json', '--quiet']) == cli.EX_UNAVAILABLE
    assert capsys.readouterr().err == "calibkit: error: --dask needs the dask extra: pip install 'calibkit[dask]'\n"


def test_unreachable_scheduler_exits_69(data, monkeypatch, capsys):
    d, _, _ = data
    monkeypatch.setattr(cli, 'DASK_TIMEOUT', '1s')
    assert cli.main(['report', str(d/'test'), '--dask', 'tcp://127.0.0.1:9', '--json', '--quiet']) == cli.EX_UNAVAILABLE
    err = capsys.readouterr().err
    assert err.startswith('calibkit: error: --dask tcp://127.0.0.1:9: no dask scheduler answers') and err.count('\n') == 1


def test_input_faults_found_while_computing_are_the_inputs(tmp_path, local, capsys):
    """Under --dask the files are read while the report is computed: a corrupt Parquet page exits 65 naming the file
    (not 73, the output's status; the reader's control characters escaped), a repeated column name 65 naming it."""
    rng = np.random.default_rng(3)
    q = rng.uniform(size=2000)
    df = pd.DataFrame(dict(conf=q, correct=(rng.random(2000) < q).astype(int)))
    df.to_parquet(tmp_path/'ok.parquet', index=False)
    raw = bytearray((tmp_path/'ok.parquet').read_bytes())
    raw[4:30] = b'\xff' * 26                              # the first page header: unreadable, the footer intact
    (tmp_path/'corrupt.parquet').write_bytes(bytes(raw))
    here = lambda name: calibkit_here(capsys, 'report', tmp_path/name, '--dask', '--json', '--out', tmp_path/'out')
    line = one_line(here('corrupt.parquet'), 65)
    assert line.startswith(f'{tmp_path/"corrupt.parquet"}: cannot read its events: Couldn\'t deserialize'), line
    assert not any(ord(ch) < 32 for ch in line), repr(line)
    import pyarrow as pa, pyarrow.parquet as pq
    pq.write_table(pa.table([pa.array(q), df.correct.to_numpy(), pa.array(q)], names=['conf', 'correct', 'conf']),
                   tmp_path/'dup.parquet')
    assert one_line(here('dup.parquet'), 65) == \
        f"{tmp_path/'dup.parquet'}: column(s) ['conf'] appear more than once; keep one of each"
    assert not (tmp_path/'out').exists()
