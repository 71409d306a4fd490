"The report explains itself (issue 22, point 5): the verdict first, stages and groups named, stable metric keys, strict JSON."
import html, json, re, sys
from pathlib import Path
import numpy as np, pandas as pd, pytest

sys.path.insert(0, str(Path(__file__).parent))
from clidata import calibkit_here, write_events  # noqa: E402

# every report runs in this process (`calibkit_here`): its content is the point here, not the process

LABELS = {'NOUN': .5, 'VERB': .3, 'ADJ': .15, 'DET': .05}


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('explains')
    write_events(d, seed=3, n=5000, labels=LABELS, power=1.4, k=4, alpha=.5, rows=50, scores_name='scores.npz')
    return d


@pytest.fixture(scope='module')
def per_class(data, tmp_path_factory):
    out = tmp_path_factory.mktemp('pc')/'r'
    r = calibkit_here(None, 'report', data/'test.csv', '--fit', data/'dev.csv', '--recalibrator', 'isotonic', '--grouper',
                      'per_class', '--out', out, '--n-samples', 100)
    return r, out


def test_per_class_report_names_every_class_the_stage_and_the_verdict(per_class):
    r, out = per_class
    assert r.returncode == 0, r.stderr
    assert 'empty' not in r.stderr and 'group 5' not in r.stderr          # 4 labels: 4 groups, none empty by construction
    page = html.unescape((out/'report.html').read_text())
    text = re.sub(r'<[^>]+>', ' ', page[page.index('<h2>Summary'):page.index('<h2>Data')])
    assert 'after isotonic (one per per_class group, 4 groups), fitted on dev.csv (2,500 events)' in text
    assert 'Before recalibration: as given (2,500 events)' in text
    assert 'Over-confident overall' in text                               # accuracy q^1.4 < q
    assert 'the miscalibration is distinguishable from noise' in text
    assert re.search(r'Recalibration: CalibMSE [0-9.]+ → [0-9.]+ \(95% CI [0-9.]+–[0-9.]+\) after isotonic', text)
    groups = page[page.index('<h2>Per group'):page.index('<h2>Bins')]
    for label in LABELS: assert f'<td>{label}</td>' in groups
    g = pd.read_csv(out/'groups.csv')
    assert sorted(g.members.unique()) == sorted(LABELS) and len(g) == 8   # 4 classes × before/after
    m = json.loads((out/'metrics.json').read_text())
    assert sorted({x['members'] for x in m['groups']}) == sorted(LABELS)
    assert m['stages']['after']['name'] == 'after isotonic (one per per_class group, 4 groups), fitted on dev.csv (2,500 events)'


def test_metrics_json_keys_are_stable_and_plugin_names_as_typed(per_class):
    m = json.loads((per_class[1]/'metrics.json').read_text(), parse_constant=lambda c: pytest.fail(f'{c} in metrics.json'))
    keys = [x['key'] for x in m['metrics'] if x['stage'] == 'before']
    assert keys == ['calib_mse', 'calib_mse_debiased', 'noise_floor', 'ece_l1', 'ece_l2', 'ece_max', 'brier',
                    'brier_calibration', 'brier_refinement', 'brier_within_bin', 'brier_resolution', 'brier_uncertainty']
    names = {x['key']: x['metric'] for x in m['metrics']}
    assert names['calib_mse'] == 'CalibMSE' and names['ece_l1'] == 'ECE (l1)'
    assert m['meta']['recalibrator'] == 'isotonic' and m['meta']['grouper'] == 'per_class' and m['meta']['fit'] == 'dev.csv'
    est = {(x['stage'], x['key']): x for x in m['metrics']}
    b = est['before', 'calib_mse']
    assert m['summary']['change']['before'] == pytest.approx([b['estimate'], b['lo'], b['hi']], rel=1e-13)
    assert est['before', 'noise_floor']['lo'] is None                     # no interval: null, not NaN


def test_verdict_on_calibrated_data_is_not_distinguishable(tmp_path):
    rng = np.random.default_rng(7)
    q = rng.beta(2, 2, 4000)
    pd.DataFrame(dict(conf=q, correct=(rng.random(4000) < q).astype(int))).to_csv(tmp_path/'cal.csv', index=False)
    r = calibkit_here(None, 'report', tmp_path/'cal.csv', '--json', '--n-samples', 200)
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)['stages']['before']['verdict']
    assert v['distinguishable'] is False and v['direction'] == 'neither' and v['calib_mse_debiased'][1] < 0


def test_adaptive_binning_in_the_cli(data):
    r = calibkit_here(None, 'report', data/'test.csv', '--binning', 'adaptive', '--json', '--n-samples', 50)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    from calibkit.binning import adaptive_stats
    df = pd.read_csv(data/'test.csv')
    st = adaptive_stats(df.conf.to_numpy(), df.correct.to_numpy())
    assert m['meta']['binning'] == 'adaptive' and m['meta']['n_bins'] == len(st.n)
    assert m['stages']['before']['bins_note'] == f'adaptive binning (Ding et al. 2020) chose {len(st.n)} bins for 2,500 events'
    r = calibkit_here(None, 'report', data/'test.csv', '--binning', 'adaptive', '--n-bins', 5, '--json')
    assert r.returncode == 2 and 'chooses its own bins' in r.stderr


def test_fewer_bins_than_requested_says_why(tmp_path):
    pd.DataFrame(dict(conf=np.repeat([.2, .5, .8], 100), correct=np.tile([0, 1], 150))).to_csv(tmp_path/'t.csv', index=False)
    r = calibkit_here(None, 'report', tmp_path/'t.csv', '--n-bins', 10, '--json', '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    note = json.loads(r.stdout)['stages']['before']['bins_note']
    assert note.startswith('3 bins instead of 10: equal confidences are never split between bins')


def test_cli_binnings_are_the_librarys():
    from calibkit import binning, cli, config
    assert cli.BINNINGS == binning.BINNINGS
    assert cli.BINNINGS is binning.BINNINGS is config.BINNINGS   # one definition (config), re-exported
    assert config.BINNINGS == ('equal_mass', 'fixed_width', 'adaptive', 'sweep')


def test_per_class_on_many_labels_names_and_counts_every_group():
    "10^5 distinct labels: one group per label, named by it, every event counted once (time: bench/report.py --labels)."
    from calibkit.report import calibration_report
    rng = np.random.default_rng(0)
    n = 3 * 10**5
    q = rng.random(n)
    ev = pd.DataFrame(dict(conf=q, correct=(rng.random(n) < q).astype(np.uint8), label=rng.integers(0, 10**5, n).astype(str)))
    with pytest.warns(UserWarning, match='groups have a degenerate'):
        rep = calibration_report(ev, grouper='per_class', n_samples=10)
    g = rep.groups
    assert len(g) == ev.label.nunique() and g.n_events.sum() == n and (g.n_labels == 1).all()
    sizes = ev.label.value_counts()
    assert (g.n_events.to_numpy() == sizes[g.members].to_numpy()).all()     # each group is its label's events
    assert rep.bins[rep.bins.group != 'all'].n.sum() == n


def test_per_class_on_a_thousand_labels_is_summarised_not_refused(tmp_path):
    "The HTML shows the most frequent groups and says where the rest are; the chart grid shows 12 panels; files hold all."
    rng = np.random.default_rng(1)
    n = 20_000
    q = rng.random(n)
    pd.DataFrame(dict(conf=q, correct=(rng.random(n) < q).astype(int), label=[f'T{v}' for v in rng.integers(0, 1000, n)])
                 ).to_csv(tmp_path/'t.csv', index=False)
    r = calibkit_here(None, 'report', tmp_path/'t.csv', '--grouper', 'per_class', '--out', tmp_path/'r',
                      '--n-samples', 50)
    assert r.returncode == 0, r.stderr
    page = html.unescape((tmp_path/'r'/'report.html').read_text())
    assert 'The 50 most frequent groups of each stage are shown; 950 more rows are in groups.csv and metrics.json.' in page
    grid = (tmp_path/'r'/'groups_before.svg').read_text()
    assert 'Per group (before): 12 of 1,000 groups, the ' in grid      # the most frequent, the rarest, the worst
    spec = json.loads((tmp_path/'r'/'groups_before.vl.json').read_text())
    assert len(spec['concat']) == 12 and all(' (' in ' '.join(p['title']['text']) for p in spec['concat'])   # why
    g = pd.read_csv(tmp_path/'r'/'groups.csv')
    assert len(g) == 1000 and set(g.members) == {f'T{v}' for v in range(1000)} and g.n_events.sum() == n


def test_warnings_name_the_file_whose_events_they_count(tmp_path):
    "Tags unseen in the training counts, in both files: each warning says which file (fit or evaluated) and 'events'."
    rng = np.random.default_rng(5)
    for name, n in (('dev.csv', 2000), ('test.csv', 1000)):
        q = rng.uniform(.05, .95, n)
        pd.DataFrame(dict(conf=q, correct=(rng.random(n) < q).astype(int),
                          label=np.where(np.arange(n) % 10 == 0, 'X', 'N'))).to_csv(tmp_path/name, index=False)
    (tmp_path/'counts.csv').write_text('label,count\nN,10\nV,5\n')
    r = calibkit_here(None, 'report', tmp_path/'test.csv', '--fit', tmp_path/'dev.csv', '--counts',
                      tmp_path/'counts.csv', '--grouper', 'tfg', '--n-groups', 2, '--recalibrator', 'histogram', '--json', '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    said = ["dev.csv (the fit events): 200 of its 2,000 events have a tag unseen in training (1 distinct, e.g. ['X']): "
            'tfg puts them in its last group (2)',
            "test.csv (the evaluated events): 100 of its 1,000 events have a tag unseen in training (1 distinct, e.g. "
            "['X']): tfg puts them in its last group (2)"]
    assert [w for w in json.loads(r.stdout)['warnings'] if 'unseen' in w] == said
    assert all(f'calibkit: warning: {w}' in r.stderr for w in said), r.stderr
