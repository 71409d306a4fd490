"""The committed artifacts of the taggers and the coreference model load, match their manifests and hold what notebooks
31, 92 and 94 need."""
import numpy as np
import pytest
from calibkit.artifacts import RECIPES, artifact_manifest, artifact_path, load_artifact
from calibkit.config import ARTIFACT_SIZES
from calibkit.datasets import bundled
from calibkit.datasets.coref import read_conll2012_coref
from calibkit.models.coref import split_documents, window_matrices
from calibkit.sparse import SCALINGS, ewt_events, ewt_scaled_events

NAMES = ('litbank_ranker', 'ewt_xpos_deprel', 'ewt_upos_feats')


@pytest.mark.parametrize('size', ARTIFACT_SIZES)
@pytest.mark.parametrize('name', NAMES)
def test_artifact_loads_and_matches_its_manifest(name, size):
    m = artifact_manifest(name, size)
    r = RECIPES[name]
    assert (m['name'], m['size'], m['recipe'], m['seed']) == (name, size, r.target, r.seed)
    assert m['command'] == f'python3 tasks.py train {name}' and m['file'] == artifact_path(name, size).name
    assert {'calibkit', 'numpy'} <= m['versions'].keys() and m['processor']['machine']
    out = load_artifact(name, size)                      # checks the sha256 of the manifest
    assert set(m['frames']) <= set(out)


def test_artifacts_stay_within_their_budget():
    total = sum(artifact_path(n, s).stat().st_size for n in NAMES for s in ARTIFACT_SIZES)
    assert total < 10e6, f'{total / 1e6:.1f} MB'


def test_litbank_ranker_holds_the_window_matrices_of_tutorial_92():
    split = split_documents(read_conll2012_coref(bundled('litbank')))
    out = load_artifact('litbank_ranker')
    assert out['n_train_mentions'].tolist() == [6740]
    for part in ('dev', 'test'):
        P = window_matrices(out, part)
        assert list(P) == [d.name for d in split[part]]
        assert [len(x) for x in P.values()] == [len(d.mentions) for d in split[part]]
    assert out['probs'].shape[1] == 51
    np.testing.assert_allclose(out['probs'].sum(1), 1, atol=1e-12)


def test_ewt_xpos_deprel_holds_what_notebooks_31_and_94_report():
    out = load_artifact('ewt_xpos_deprel')
    dev, test, counts = ewt_events(out)
    assert (dev.attrs['n_tokens'], test.attrs['n_tokens'], len(counts)) == (10699, 10056, 424)
    assert (len(dev), len(test)) == (58225, 55362)
    scaled = ewt_scaled_events(out)
    assert list(scaled) == list(SCALINGS) and len(scaled['unscaled']) == len(test)
    assert list(out['scaled_nll'].scaling) == list(SCALINGS)
    assert list(out['temperatures'].group) == ['all', '1', '2', '3', '4', '5']
    cp = out['conformal']
    assert len(cp.groupby(['alpha', 'score', 'sets'])) == 12 and set(cp.group) == {'1', '2', '3', '4', '5', 'overall'}
    assert len(out['conformal_tags']) == 486


def test_ewt_upos_feats_holds_the_second_study():
    dev, test, counts = ewt_events(load_artifact('ewt_upos_feats'))
    assert len(counts) == 216 and len(test) == 26154 and dev.attrs['tagset'] == 'upos|feats'
