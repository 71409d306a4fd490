"""`calibkit report --conformal ALPHA`: the conformal section of metrics.json and report.html equals the library's sets
(marginal, Mondrian by TFG group, randomised APS; .npz score matrices and a tagger extractor's raw output), Mondrian
repairs the rare group the marginal sets under-cover, and the usage errors are one line with exit status 2."""
import json, sys
from pathlib import Path
import numpy as np, pandas as pd, pytest

sys.path.insert(0, str(Path(__file__).parent))
from clidata import calibkit, calibkit_here  # noqa: E402
from calibkit.conformal import ConformalSets, set_summary  # noqa: E402
from calibkit.groupers import TagFrequency  # noqa: E402

K = 12
TAGS = [f't{j:02d}' for j in range(K)]


def tagger(rng, n):
    "A tagger pulled towards the frequent tags (their log prior in the logits): the rare tags get low probabilities."
    freq = 1 / np.arange(1, K + 1) ** 1.5
    freq /= freq.sum()
    gold = rng.choice(K, n, p=freq)
    z = np.log(freq) + 2.5 * np.eye(K)[gold] + rng.normal(0, 1, (n, K))
    return z, gold


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('conformal')
    rng = np.random.default_rng(7)
    out = {}
    for name, n in (('cal', 4000), ('eval', 6000)):
        z, gold = tagger(rng, n)
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        np.savez(d/f'{name}.npz', scores=p, gold=gold, labels=np.array(TAGS))
        np.savez(d/f'{name}_raw.npz', scores=z, gold=np.array(TAGS)[gold], labels=np.array(TAGS),
                 lengths=np.full(n // 20, 20))                      # sentences of 20 tokens
        out[name] = (p, gold)
    counts = pd.Series(np.bincount(tagger(rng, 20000)[1], minlength=K), index=TAGS)
    (d/'counts.json').write_text(json.dumps({t: int(c) for t, c in counts.items()}))
    pd.DataFrame(dict(conf=[.9, .2], correct=[1, 0])).to_csv(d/'events.csv', index=False)
    return d, out, counts


def conformal_json(*args):
    "The conformal part of `calibkit report ARGS --json`, run in this process (its numbers are the point here)."
    r = calibkit_here(None, 'report', *args, '--json', '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)['conformal']


def test_marginal_lac_equals_the_library(data):
    d, (cal, ev), _ = data[0], (data[1]['cal'], data[1]['eval']), data[2]
    c = conformal_json(d/'eval.npz', '--fit', d/'cal.npz', '--conformal', 0.1)
    cs = ConformalSets(0.1, 'lac').fit(*cal)
    sets = cs.predict(ev[0])
    assert (c['alpha'], c['method'], c['randomized'], c['sets'], c['groups']) == (0.1, 'lac', False, 'marginal', None)
    assert (c['n'], c['n_calibration']) == (6000, 4000)
    assert c['quantile'] == cs.quantile_['all']
    assert c['coverage'] == sets[np.arange(6000), ev[1]].mean() and c['mean_size'] == sets.sum(1).mean()
    assert 0.89 <= c['coverage'] <= 0.92                               # 1 − α, within sampling error of 6,000 rows


def test_mondrian_by_tfg_equals_the_library_and_repairs_the_rare_group(data):
    d, out, counts = data
    (pc, gc), (pe, ge) = out['cal'], out['eval']
    c = conformal_json(d/'eval.npz', '--fit', d/'cal.npz', '--conformal', 0.1, '--grouper', 'tfg', '--n-groups', 3,
                       '--counts', d/'counts.json')
    tfg = TagFrequency(n_groups=3).fit(counts)
    groups = pd.Series(tfg.assign(np.array(TAGS, dtype=object)), index=TAGS)
    mondrian = ConformalSets(0.1, 'lac', groups=groups, labels=TAGS).fit(pc, gc)
    want = set_summary(mondrian.predict(pe), ge, groups, labels=TAGS).set_index('group')
    got = pd.DataFrame(c['groups']).set_index('group')
    assert c['sets'] == 'mondrian' and list(got.index) == [1, 2, 3]
    assert got['quantile'].tolist() == mondrian.quantile_.tolist()
    assert got.n_calibration.tolist() == mondrian.n_.tolist()
    assert np.allclose(got.coverage, want.coverage[[1, 2, 3]], rtol=0, atol=1e-15)
    assert np.allclose(got.mean_size, want.mean_size[[1, 2, 3]], rtol=0, atol=1e-12)
    assert c['coverage'] == pytest.approx(want.coverage['overall'], abs=1e-15)
    # the marginal sets of the same data under-cover the rarest group; the Mondrian sets do not, with larger sets there
    marginal = set_summary(ConformalSets(0.1).fit(pc, gc).predict(pe), ge, groups, labels=TAGS).set_index('group')
    assert marginal.coverage[3] < 0.75 and got.coverage[3] >= 0.87 and (got.coverage >= 0.87).all()
    assert got.mean_size[3] > marginal.mean_size[3]


def test_randomized_aps_uses_the_seed_and_the_html_has_the_section(data, tmp_path):
    d, out, _ = data
    r = calibkit('report', d/'eval.npz', '--fit', d/'cal.npz', '--conformal', 0.05, '--conformal-method',
                 'aps-randomized', '--seed', 3, '--out', tmp_path/'r', '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    c = json.loads((tmp_path/'r'/'metrics.json').read_text())['conformal']
    cs = ConformalSets(0.05, 'aps', randomized=True, random_state=3).fit(*out['cal'])
    sets = cs.predict(out['eval'][0])
    assert (c['method'], c['randomized'], c['alpha']) == ('aps', True, 0.05)
    assert c['quantile'] == cs.quantile_['all'] and c['mean_size'] == sets.sum(1).mean()
    assert c['empty'] == (~sets.any(1)).mean() and c['empty'] > 0          # randomised APS sets can be empty
    det = conformal_json(d/'eval.npz', '--fit', d/'cal.npz', '--conformal', 0.05, '--conformal-method', 'aps')
    assert c['mean_size'] < det['mean_size']
    page = (tmp_path/'r'/'report.html').read_text()
    assert '<h2>Conformal prediction sets</h2>' in page and 'randomised APS' in page and 'α = 0.05' in page


def test_a_tagger_extractors_raw_output_gives_the_same_sets(data):
    d = data[0]
    raw = conformal_json(d/'eval_raw.npz', '--fit', d/'cal_raw.npz', '--extractor', 'softmax', '--extractor-param',
                         'kind=logits', '--conformal', 0.1)
    npz = conformal_json(d/'eval.npz', '--fit', d/'cal.npz', '--conformal', 0.1)
    assert raw['quantile'] == pytest.approx(npz['quantile'], abs=1e-12)
    assert raw['coverage'] == npz['coverage'] and raw['mean_size'] == npz['mean_size']


@pytest.mark.parametrize('args, code, says', [
    (['eval.npz', '--conformal', 0.1], 2, '--conformal needs --fit: conformal sets are calibrated on held-out'),
    (['events.csv', '--fit', 'events.csv', '--grouper', 'tfg', '--conformal', 0.1], 2,
     '--conformal needs score matrices (INPUT and --fit as .npz with scores and gold'),
    (['eval.npz', '--fit', 'events.csv', '--grouper', 'tfg', '--conformal', 0.1], 2, 'events.csv is not one'),
    (['eval_raw.npz', '--fit', 'cal_raw.npz', '--extractor', 'coref_mc', '--conformal', 0.1], None,
     "extractor 'coref_mc'"),
    (['eval.npz', '--conformal-method', 'aps'], 2, '--conformal-method needs --conformal'),
    (['eval.npz', '--fit', 'cal.npz', '--conformal', 1], 2, '--conformal'),
    (['eval.npz', '--fit', 'cal.npz', '--conformal', 0], 2, '--conformal'),
    (['eval.npz', '--fit', 'cal.npz', '--conformal', 0.1, '--conformal-method', 'raps'], 2, "invalid choice: 'raps'"),
])
def test_usage_errors_are_one_line(data, args, code, says, capsys):
    "(In this process: the status and the line are the point; the process boundary is tested on stdin below.)"
    d = data[0]
    r = calibkit_here(capsys, 'report', *[d/a if str(a).endswith(('.npz', '.csv')) else a for a in args], '--json')
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('calibkit: error:') and says in lines[0], r.stderr
    assert r.returncode == (code if code is not None else r.returncode) and r.returncode in (2, 65), r.returncode
    assert r.stdout == ''


def test_stdin_and_different_labels_are_refused(data, tmp_path):
    d, out, _ = data
    r = calibkit('report', '-', '--format', 'csv', '--fit', d/'cal.npz', '--conformal', 0.1, '--json',
                 stdin='conf,correct\n0.9,1\n0.2,0\n')
    assert r.returncode == 2 and 'standard input (-) holds events' in r.stderr, r.stderr
    p, g = out['cal']
    np.savez(tmp_path/'other.npz', scores=p[:, :6] / p[:, :6].sum(1, keepdims=True), gold=np.minimum(g, 5))
    r = calibkit('report', d/'eval.npz', '--fit', tmp_path/'other.npz', '--conformal', 0.1, '--json', '--n-samples', 20)
    assert r.returncode == 65 and 'other.npz has 6 columns, ' in r.stderr and 'eval.npz 12' in r.stderr, r.stderr
