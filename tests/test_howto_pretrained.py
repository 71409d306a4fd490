"""Issue 35, part 5: the path of the how-to 'Measure a pretrained tagger' (nbs/81) on a seeded score matrix of logits
whose gold tags include one outside the model's labels: `calibkit report` reads it as saved (no hand-made conversion),
counts the tag as the model's errors, and refuses it only with --strict-labels."""
import json
import numpy as np, pytest
from clidata import calibkit_here

TAGS = np.array(['NOUN', 'VERB', 'ADJ', 'DET', 'ADP', 'PUNCT'])
OUTSIDE = 'INTJ'                                      # a gold tag with no column: the model cannot predict it


def split(rng, n):
    "Logits of an over-confident 6-tag model, gold tag names with some INTJ tokens, and the 6 tag names."
    logits = rng.normal(size=(n, len(TAGS))) * 3
    p = np.exp(logits / 2) / np.exp(logits / 2).sum(1, keepdims=True)       # the truth: softer than the model
    gold = TAGS[[rng.choice(len(TAGS), p=row) for row in p]].astype('<U5')
    gold[rng.random(n) < .03] = OUTSIDE
    return dict(scores=logits, gold=gold, labels=TAGS)


@pytest.fixture(scope='module')
def folder(tmp_path_factory):
    d, rng = tmp_path_factory.mktemp('tagger'), np.random.default_rng(35)
    data = {name: split(rng, n) for name, n in (('dev', 1200), ('test', 800))}
    for name, arrays in data.items(): np.savez(d/f'{name}.npz', **arrays)
    return d, data['test']


def report(capsys, d, *extra):
    return calibkit_here(capsys, 'report', d/'test.npz', '--fit', d/'dev.npz', '--extractor', 'softmax',
                         '--extractor-param', 'kind=logits', '--grouper', 'tfg', '--n-groups', 2,
                         '--recalibrator', 'isotonic', '--n-samples', 50, *extra)


def test_the_report_reads_logits_and_counts_the_tag_the_model_cannot_predict(folder, capsys):
    d, test = folder
    n_out = int((test['gold'] == OUTSIDE).sum())
    assert n_out > 0
    r = report(capsys, d, '--json')                                  # metrics.json on stdout
    assert r.returncode == 0, r.stderr
    assert (f'test.npz: gold: {n_out} of 800 values are not among labels: {OUTSIDE} ({n_out}, first at gold['
            in r.stderr)
    m = json.loads(r.stdout)
    said = f'{n_out} gold tokens have tags the model cannot predict: {OUTSIDE} ({n_out})'
    assert m['summary']['gold_outside'] == said
    assert {g['stage'] for g in m['groups']} == {'before', 'after'}      # grouped and recalibrated
    marginal_correct = m['summary']['accuracy'] * m['summary']['events']
    # marginal events: a token's gold cell is an event when it reaches the threshold; the INTJ tokens have none
    p = np.exp(test['scores']) / np.exp(test['scores']).sum(1, keepdims=True)
    inside = test['gold'] != OUTSIDE
    col = {t: i for i, t in enumerate(TAGS)}
    gold_cell = p[np.flatnonzero(inside), [col[g] for g in test['gold'][inside]]]
    assert round(marginal_correct) == int((gold_cell >= .01).sum())


def test_top_label_accuracy_counts_them_as_wrong(folder, capsys):
    d, test = folder
    r = report(capsys, d, '--extractor-param', 'events=top', '--json')
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)['summary']
    hand = TAGS[test['scores'].argmax(1)] == test['gold']            # an INTJ token: never equal, so wrong
    assert summary['events'] == 800 and summary['accuracy'] == pytest.approx(hand.mean(), abs=1e-12)
    inside = test['gold'] != OUTSIDE
    assert summary['accuracy'] < hand[inside].mean()                  # leaving them out would claim more


def test_strict_labels_refuses(folder, capsys):
    d, test = folder
    r = report(capsys, d, '--strict-labels', '--json')
    assert r.returncode == 65 and r.stdout == ''
    n_out = int((test['gold'] == OUTSIDE).sum())
    assert f'test.npz: gold: {n_out} of 800 values are not among labels: {OUTSIDE} ({n_out}, first at' in r.stderr


def test_a_score_matrix_recalibrator_on_logits(folder, tmp_path, capsys):
    """The how-to's 'Which score-matrix recalibrator?' route: `--recalibrator dirichlet --param ...` on .npz logits read
    through the softmax extractor gives the events of `DirichletCalibration` fitted on the softmax dev rows; with gold
    tags outside the labels (they have no NLL) it refuses the fit file."""
    from calibkit.multiclass import DirichletCalibration
    from calibkit.events import events_from_scores
    from calibkit.metrics import smce
    d, _ = folder
    col, rows = {t: i for i, t in enumerate(TAGS)}, {}
    for name in ('dev', 'test'):                                     # the tokens whose gold tag has a column
        a = dict(np.load(d/f'{name}.npz'))
        keep = a['gold'] != OUTSIDE
        z, gold = a['scores'][keep], a['gold'][keep]
        np.savez(tmp_path/f'{name}.npz', scores=z, gold=gold, labels=TAGS)
        p = np.exp(z - z.max(1, keepdims=True))
        rows[name] = p / p.sum(1, keepdims=True), np.array([col[g] for g in gold])
    args = ('--extractor', 'softmax', '--extractor-param', 'kind=logits', '--recalibrator', 'dirichlet',
            '--param', 'reg_lambda=0.1', '--param', 'reg_mu=0.1', '--n-samples', 20, '--json')
    r = calibkit_here(capsys, 'report', tmp_path/'test.npz', '--fit', tmp_path/'dev.npz', *args)
    assert r.returncode == 0, r.stderr
    got = {m['key']: m['estimate'] for m in json.loads(r.stdout)['metrics'] if m['stage'] == 'after'}
    (pd_, gd), (pt, gt) = rows['dev'], rows['test']
    after = events_from_scores(DirichletCalibration(reg_lambda=0.1, reg_mu=0.1).fit(pd_, gd).transform(pt), gt)
    assert got['ece_l2'] == pytest.approx(smce(after), rel=1e-9)
    refused = calibkit_here(capsys, 'report', d/'test.npz', '--fit', d/'dev.npz', *args)
    n_out = int((np.load(d/'dev.npz')['gold'] == OUTSIDE).sum())
    assert refused.returncode == 65 and n_out > 0
    assert f'error: {d/"dev.npz"}: gold: {n_out} of 1200 values are not among labels: {OUTSIDE}' in refused.stderr
