"""The committed seq2seq artifacts (issue 34): tutorial 93's `seq2seq_ewt` and tutorial 95's `generation_ewt` load
without torch, match their manifests, and hold what the notebooks read from them (keys, shapes, value ranges)."""
import hashlib, json
import numpy as np, pytest
from calibkit.artifacts import RECIPES, artifact_manifest, artifact_path, load_artifact
from calibkit.config import ARTIFACT_SIZES

NAMES = ('seq2seq_ewt', 'generation_ewt')
MODELS, HOWS = ('small', 'large'), ('min', 'mean', 'prod')
# the data's counts (UD EWT sentences of at most 12 words, 80/20 split, seed 0; tutorial 93 asserts them)
N_TEST, N_TOKENS, N_WORDS, N_TRAIN = 505, 9241, 6026, 2020


@pytest.mark.parametrize('name', NAMES)
@pytest.mark.parametrize('size', ARTIFACT_SIZES)
def test_artifact_matches_its_manifest_and_its_recipe(name, size):
    path, m = artifact_path(name, size), artifact_manifest(name, size)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == m['sha256'] and m['file'] == path.name
    r = RECIPES[name]
    assert (m['name'], m['size'], m['recipe'], m['seed'], m['what']) == (name, size, r.target, r.seed, r.what)
    assert m['command'] == f'python3 tasks.py train {name}' and 'torch' in m['versions'] and m['processor']['cpu']
    out = load_artifact(name, size)
    assert set(m['frames']) == {k for k, v in out.items() if hasattr(v, 'columns')}
    assert path.stat().st_size < 4e6, f'{path.name}: {path.stat().st_size / 1e6:.1f} MB'
    assert json.loads(path.with_suffix('.json').read_text()) == m


def check_events(a: dict, n_seq: int, n_tokens: int = None, n_words: int = None):
    for name in MODELS:
        tok, words = a[f'{name}_tokens'], a[f'{name}_words']
        if n_tokens: assert (len(tok), len(words)) == (n_tokens, n_words)
        seqs = {how: a[f'{name}_seq_{how}'] for how in HOWS}
        for ev in (tok, words, *seqs.values()):
            assert ((ev.conf > 0) & (ev.conf <= 1)).all() and set(ev.correct.unique()) <= {0, 1}
        assert all(len(s) == n_seq and s.item.is_monotonic_increasing for s in seqs.values())
        assert (seqs['prod'].conf <= seqs['min'].conf).all() and (seqs['min'].conf <= seqs['mean'].conf).all()
        assert seqs['min'].correct.equals(seqs['mean'].correct) and set(words.item) <= set(seqs['min'].item)
        assert int(a[f'{name}_parameters']) > 0 and np.isfinite(a[f'{name}_losses']).all()


def test_seq2seq_ewt_holds_what_tutorial_93_reads():
    a = load_artifact('seq2seq_ewt')
    check_events(a, N_TEST, N_TOKENS, N_WORDS)
    assert [int(a[f'{n}_parameters']) for n in MODELS] == [168680, 541160]       # hidden 64 and 128, tied embeddings
    assert all(len(a[f'{n}_losses']) == 8 and a[f'{n}_losses'][-1] < a[f'{n}_losses'][0] for n in MODELS)
    small = load_artifact('seq2seq_ewt', 'small')
    check_events(small, 40)
    assert sorted(small) == sorted(a)


def check_generations(a: dict, n: dict):
    assert {k: len(a[f'{k}_idx']) for k in n} == n
    assert not set(a['fit_idx']) & set(a['calib_idx']) and not set(a['test_idx']) & set(a['fit_idx'])
    for split in ('test', 'calib'):
        ids, lps, off = a[f'{split}_top_ids'], a[f'{split}_top_logprobs'], a[f'{split}_offsets']
        assert ids.shape == lps.shape and ids.shape[1] == 5 and ids.dtype.kind == 'i'
        assert off[0] == 0 and off[-1] == len(ids) and (np.diff(off) >= 0).all() and len(off) == n[split] + 1
        assert (lps <= 0).all() and (np.diff(lps, axis=1) <= 0).all()              # top-5, most likely first
        fin, stop = a[f'{split}_finish_reason'], a[f'{split}_stop_logprob']
        assert set(fin) <= {'stop', 'length'} and (np.isnan(stop) == (fin == 'length')).all()
        assert (np.diff(off)[fin == 'length'] == 40).all() and (np.diff(off) <= 40).all()
    # decode's outputs on test: the generated top-1 pieces, then the stop token when there is one
    pred, steps = (np.split(a[f'decode_{k}'], a['decode_offsets'][1:-1]) for k in ('pred', 'steps'))
    gen = np.split(a['test_top_ids'][:, 0], a['test_offsets'][1:-1])
    assert all(list(p[:len(g)]) == list(g) for p, g in zip(pred, gen)) and len(pred) == n['test']
    assert all(((s > 0) & (s <= 1)).all() for s in steps)


def test_generation_ewt_holds_what_tutorial_95_reads():
    a = load_artifact('generation_ewt')
    check_generations(a, dict(fit=N_TRAIN - N_TRAIN // 5, calib=N_TRAIN // 5, test=N_TEST))
    assert len(a['losses']) == 12 and a['losses'][-1] < a['losses'][0]
    small = load_artifact('generation_ewt', 'small')
    check_generations(small, dict(fit=160, calib=40, test=40))
    assert sorted(small) == sorted(a)


def test_the_artifacts_are_package_data():
    "The wheel carries calibkit/data/** (tests/test_wheel.py checks every file); the artifacts live there."
    for name in NAMES:
        for size in ARTIFACT_SIZES:
            assert artifact_path(name, size).parent.parts[-3:] == ('calibkit', 'data', 'artifacts')
