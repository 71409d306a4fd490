"calibkit.comparison and `calibkit compare`: pairing, the differences' routes, Table 1's Δ%, recalibrators, the CLI."
import json
import numpy as np, pandas as pd, pytest
from calibkit.comparison import compare, pairing, recalibrations
from calibkit.render import comparison_table
from calibkit.events import events_from_scores
from clidata import calibkit_here

N_SAMPLES = 60


def _events(n=1500, seed=0, power=1.8):
    "Seeded events of an over-confident model (conf = p^(1/power) in log-odds) and the same events recalibrated."
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p).astype(np.uint8)
    lab = rng.choice(list('NVAD'), n, p=[.5, .3, .15, .05])
    over = pd.DataFrame(dict(item=np.arange(n), conf=1 / (1 + ((1 - p) / p) ** power), correct=y, label=lab))
    return over, over.assign(conf=p)


def test_identical_models_differ_by_exactly_zero():
    over, _ = _events()
    d = compare({'a': over, 'b': over.copy()}, n_samples=N_SAMPLES).differences
    assert (d.estimate == 0).all() and (d.lo == 0).all() and (d.hi == 0).all() and (d.p_value == 1).all()


def test_differences_are_the_reports_estimates_subtracted():
    over, fixed = _events()
    c = compare({'over': over, 'fixed': fixed}, n_samples=N_SAMPLES)
    m = c.metrics.set_index(['model', 'key']).estimate
    for r in c.differences.itertuples():
        assert r.estimate == pytest.approx(m['fixed', r.key] - m['over', r.key], abs=1e-12), r.key
    assert c.meta['paired'] == 'id' and c.meta['n_items'] == len(over)


def test_differences_shared_estimates_equal_bootstrap_differences():
    "compare passes its reports' metrics to bootstrap_differences: the same result as letting it measure them."
    from calibkit.paired import bootstrap_differences
    over, fixed = _events()
    d = compare({'over': over, 'fixed': fixed}, n_samples=N_SAMPLES, seed=3).differences
    alone = bootstrap_differences([over.conf.to_numpy(), fixed.conf.to_numpy()],
                                  [over.correct.to_numpy(), fixed.correct.to_numpy()],
                                  items=[over['item'].to_numpy()] * 2, names=['over', 'fixed'],
                                  n_samples=N_SAMPLES, seed=3)
    pd.testing.assert_frame_equal(d.drop(columns='metric'), alone)


def test_swapped_models_negate_the_differences():
    over, fixed = _events()
    d1 = compare({'over': over, 'fixed': fixed}, n_samples=N_SAMPLES).differences.set_index('key')
    d2 = compare({'fixed': fixed, 'over': over}, n_samples=N_SAMPLES).differences.set_index('key')
    np.testing.assert_allclose(d1.estimate, -d2.estimate, atol=1e-15)
    np.testing.assert_allclose(d1.lo, -d2.hi, atol=1e-12)


def test_position_pairing_equals_id_pairing_with_one_event_per_item():
    over, fixed = _events()
    a = compare({'over': over, 'fixed': fixed}, n_samples=N_SAMPLES).differences
    b = compare({'over': over.drop(columns='item'), 'fixed': fixed.drop(columns='item')}, paired='position',
                n_samples=N_SAMPLES).differences
    pd.testing.assert_frame_equal(a.drop(columns='method'), b.drop(columns='method'))


def test_pairing_by_id_with_different_event_sets():
    "Marginal events of two score matrices on the same tokens: a threshold keeps different cells, items still match."
    rng = np.random.default_rng(1)
    s1 = rng.dirichlet(np.ones(5) * .3, 400)
    gold = np.array([rng.choice(5, p=p) for p in s1])
    s2 = (s1 + .2) / (s1 + .2).sum(1, keepdims=True)
    e1, e2 = events_from_scores(s1, gold, threshold=.01), events_from_scores(s2, gold, threshold=.01)
    assert len(e1) != len(e2)
    how, items = pairing({'a': e1, 'b': e2})
    assert how == 'id' and [len(i) for i in items] == [len(e1), len(e2)]
    c = compare({'a': e1, 'b': e2}, n_samples=N_SAMPLES)
    assert c.meta['n_items'] == 400 and c.meta['events'] == {'a': len(e1), 'b': len(e2)}


def test_paper_table_delta_percent_and_groups():
    over, fixed = _events()
    c = compare({'as given': over, 'fixed': fixed}, grouper='tfg', n_groups=2, n_samples=N_SAMPLES)
    t = comparison_table(c)[0].set_index(['row', 'column'])
    for col in ('SMCE', 'GMCE 1', 'GMCE 2'):
        x0, x1 = t.estimate['as given', col], t.estimate['fixed', col]
        assert t.estimate['fixed', f'{col} Δ%'] == pytest.approx(100 * (x1 / x0 - 1))
        assert ('as given', f'{col} Δ%') not in t.index
    g = c.groups.set_index(['model', 'group']).gmce
    assert t.estimate['fixed', 'GMCE 1'] == g['fixed', 1]


def test_recalibrations_per_group_and_of_score_matrices():
    rng = np.random.default_rng(2)
    s = rng.dirichlet(np.ones(4) * .5, 1200) ** 1.5
    s /= s.sum(1, keepdims=True)
    gold = np.array([rng.choice(4, p=p / p.sum()) for p in rng.dirichlet(np.ones(4) * .5, 1200)])
    gold[:900] = s[:900].argmax(1)
    fit, ev = events_from_scores(s[:600], gold[:600]), events_from_scores(s[600:], gold[600:])
    scores = {'fit': (s[:600], gold[:600]), 'events': (s[600:], gold[600:])}
    models = recalibrations(ev, fit, ['isotonic', 'temperature'], grouper='per_class', scores=scores)
    assert list(models) == ['as given', 'isotonic · per_class', 'temperature']
    pd.testing.assert_frame_equal(models['as given'], ev)
    assert (models['isotonic · per_class'].conf != ev.conf).any()
    with pytest.raises(ValueError, match="recalibrator 'temperature' recalibrates score matrices: it needs scores"):
        recalibrations(ev, fit, ['temperature'])


def test_recalibrations_of_one_event_set_are_paired_by_position(tmp_path, capsys):
    "The same events recalibrated: paired by position under 'auto' (no id column), from Python and the command line."
    over, _ = _events()
    bare = over.drop(columns='item')
    models = recalibrations(bare[750:], bare[:750], ['histogram', 'platt'])
    assert pairing(models)[0] == 'position' and pairing({'a': bare, 'b': bare.copy()})[0] == 'none'
    assert pairing(dict(models, platt=models['platt'].sort_values('conf')))[0] == 'none'   # reordered: not the same
    assert pairing(models, id='label')[0] == 'id'                       # an id column every model has comes first
    bare[:750].to_csv(tmp_path/'dev.csv', index=False); bare[750:].to_csv(tmp_path/'test.csv', index=False)
    r = calibkit_here(capsys, 'compare', tmp_path/'test.csv', '--fit', tmp_path/'dev.csv', '--recalibrator',
                      'histogram,platt', '--n-samples', N_SAMPLES, '--json')
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)['meta']['paired'] == 'position'


@pytest.mark.parametrize('models, match', [
    ([1, 2], 'models must be a mapping'), ({'a': 1, 'b': 2}, r"models\['a'\] must be an events frame"),
])
def test_bad_models(models, match):
    with pytest.raises(TypeError, match=match): compare(models)


def test_bad_pairing_and_bins():
    over, fixed = _events()
    with pytest.raises(ValueError, match="paired must be one of"): compare({'a': over, 'b': fixed}, paired='yes')
    with pytest.raises(ValueError, match='at most one of n_bins and bin_size'):
        compare({'a': over, 'b': fixed}, n_bins=5, bin_size=100)
    with pytest.raises(ValueError, match='1 events have no item'):
        compare({'a': over.astype({'item': float}).assign(item=lambda t: t.item.where(t.index > 0)), 'b': fixed})


def _files(d, over, fixed):
    over.to_csv(d/'over.csv', index=False); fixed.to_csv(d/'fixed.csv', index=False)
    over[:750].to_csv(d/'dev.csv', index=False); over[750:].to_csv(d/'test.csv', index=False)


def test_cli_models_and_recalibrators(tmp_path, capsys):
    over, fixed = _events()
    _files(tmp_path, over, fixed)
    r = calibkit_here(capsys, 'compare', tmp_path/'over.csv', tmp_path/'fixed.csv', '--n-samples', N_SAMPLES,
                      '--out', tmp_path/'c', '--grouper', 'tfg', '--n-groups', 2)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path/'c'/'comparison.html')
    got = json.loads((tmp_path/'c'/'comparison.json').read_text())
    assert got['names'] == ['over', 'fixed'] and list(got['verdict']) == ['fixed vs over']
    assert (tmp_path/'c'/'groups.csv').exists()
    r = calibkit_here(capsys, 'compare', tmp_path/'test.csv', '--fit', tmp_path/'dev.csv', '--recalibrator',
                      'histogram,isotonic', '--param', 'histogram.n_bins=5', '--grouper', 'per_class',
                      '--evaluate-by', 'tfg', '--n-groups', 2, '--n-samples', N_SAMPLES, '--json')
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got['names'] == ['as given', 'histogram · per_class', 'isotonic · per_class']
    assert got['meta']['grouper'] == 'tfg' and got['meta']['recalibrator_params'] == {'histogram': {'n_bins': 5}}
    assert len(got['verdict']) == 3


def test_every_chart_names_the_models_in_its_legend(tmp_path, capsys):
    "The overlaid reliability diagram lost its legend (the stroke's `legend=None` took the merged one away)."
    import re
    over, fixed = _events(n=400)
    _files(tmp_path, over, fixed)
    r = calibkit_here(capsys, 'compare', tmp_path/'over.csv', tmp_path/'fixed.csv', '--n-samples', N_SAMPLES,
                      '--names', 'crf,hmm', '--out', tmp_path/'c')
    assert r.returncode == 0, r.stderr
    for chart in ('reliability', 'risk_coverage'):
        svg = (tmp_path/'c'/f'{chart}.svg').read_text()
        legend = svg[svg.index('role-legend'):]
        assert re.findall(r'<text[^>]*>([^<]*)</text>', legend)[:2] == ['crf', 'hmm'], chart


@pytest.mark.parametrize('args, says', [
    (['over.csv'], 'compare needs two or more INPUTs'),
    (['test.csv', '--recalibrator', 'isotonic'], 'needs fit events (--fit)'),
    (['test.csv', '--fit', 'dev.csv', '--recalibrator', 'isotonic,bogus'], "unknown recalibrator 'bogus'"),
    (['test.csv', '--fit', 'dev.csv', '--recalibrator', 'isotonic,platt', '--param', 'n_bins=3'],
     '--param NAME.n_bins=V'),
    (['over.csv', 'fixed.csv', '--names', 'one'], '--names needs 2 distinct non-empty names'),
    (['over.csv', 'fixed.csv', '--fit', 'dev.csv'], '--fit needs --recalibrator'),
    (['over.csv', 'fixed.csv', '--n-groups', '2'], '--n-groups needs --grouper'),
])
def test_cli_usage_errors(tmp_path, capsys, args, says):
    over, fixed = _events(n=200)
    _files(tmp_path, over, fixed)
    r = calibkit_here(capsys, 'compare', *[tmp_path/a if a.endswith('.csv') else a for a in args])
    assert r.returncode == 2 and says in r.stderr and r.stderr.count('\n') == 1, r.stderr


def test_cli_report_refuses_several_recalibrators(tmp_path, capsys):
    over, fixed = _events(n=200)
    _files(tmp_path, over, fixed)
    r = calibkit_here(capsys, 'report', tmp_path/'test.csv', '--fit', tmp_path/'dev.csv', '--recalibrator',
                      'isotonic,platt')
    assert r.returncode == 2 and 'calibkit compare INPUT --fit FIT --recalibrator isotonic,platt' in r.stderr


def test_cli_exports_a_papers_files(tmp_path, capsys):
    over, fixed = _events(n=600)
    _files(tmp_path, over, fixed)
    r = calibkit_here(capsys, 'compare', tmp_path/'over.csv', tmp_path/'fixed.csv', '--n-samples', N_SAMPLES,
                      '--out', tmp_path/'c', '--export', 'latex,markdown,svg', '--figure-width', 'double')
    assert r.returncode == 0, r.stderr
    got = sorted(str(p.relative_to(tmp_path/'c')) for p in (tmp_path/'c').rglob('*') if p.is_file())
    assert {'table.tex', 'table.md', 'figures/reliability.svg', 'figures/risk_coverage.svg'} <= set(got)
    tex = (tmp_path/'c'/'table.tex').read_text()
    assert '\\toprule' in tex and 'SMCE' in tex and '\\textbf{' in tex and 'fixed' in tex
    r = calibkit_here(capsys, 'compare', tmp_path/'over.csv', tmp_path/'fixed.csv', '--figure-width', 'double')
    assert r.returncode == 2 and '--figure-width needs --export' in r.stderr


def test_comparison_to_latex_marks_the_lower_smce():
    over, fixed = _events()
    c = compare({'over': over, 'fixed': fixed}, n_samples=N_SAMPLES)
    t, caption, better = comparison_table(c)
    assert list(t.row) == ['over', 'fixed', 'fixed'] and list(t.column) == ['SMCE', 'SMCE', 'SMCE Δ%']
    assert better == {'SMCE': 'lower'} and 'events per model over 1,500, fixed 1,500' in caption
    bold = [line for line in c.to_latex().splitlines() if '\\textbf' in line]
    assert len(bold) == 1 and bold[0].lstrip().startswith('fixed')


@pytest.mark.parametrize('paired', ['id', 'position', 'none'])
def test_the_page_says_how_the_events_were_paired(paired):
    from calibkit.render import comparison_html, pairing_note
    over, fixed = _events(n=400)
    c = compare({'over': over, 'fixed': fixed}, paired=paired, n_samples=N_SAMPLES)
    note = pairing_note(c)
    assert {'id': 'paired by item: the 400 items', 'position': 'paired by position',
            'none': 'unpaired'}[paired] in note and f'{N_SAMPLES:,} resamples' in note
    import html
    assert html.escape(note) in comparison_html(c)
