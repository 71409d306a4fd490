"""The Hugging Face token-classification extractor (calibkit.extractors.hf_tokens): piece → word alignment by hand
(first piece, mean log-probability, special tokens, padding), batched == unbatched on a tiny BERT trained here, labels,
bad input, the missing extra, the registry, and a tiny model → extractor → calibration report run."""
import importlib.util, subprocess, sys
from pathlib import Path
import numpy as np, pandas as pd, pytest
import calibkit
from calibkit.extractors.hf_tokens import HFTokenExtractor, check_sentences, piece_logits, word_marginals

ROOT = Path(__file__).resolve().parents[1]
HAVE_HF = all(importlib.util.find_spec(m) for m in ('torch', 'transformers', 'tokenizers'))
needs_hf = pytest.mark.skipif(not HAVE_HF, reason='needs the hf extra (torch, transformers, tokenizers)')


def log_probs(*rows): return np.log(np.array(rows, float))


def test_first_and_mean_by_hand():
    # [CLS] the un ##believ ##able cat [SEP]: word 1 has three pieces
    lp = log_probs([.5, .5], [.7, .3], [.6, .4], [.2, .8], [.5, .5], [.1, .9], [.5, .5])
    ids = [None, 0, 1, 1, 1, 2, None]
    first = word_marginals(lp, ids)
    np.testing.assert_allclose(first, [[.7, .3], [.6, .4], [.1, .9]], atol=1e-12)
    mean = word_marginals(lp, ids, how='mean')
    g = np.array([(.6 * .2 * .5) ** (1 / 3), (.4 * .8 * .5) ** (1 / 3)])
    np.testing.assert_allclose(mean, [[.7, .3], g / g.sum(), [.1, .9]], atol=1e-12)
    # logits give the same as their log-softmax (any per-piece shift); rows sum to 1
    np.testing.assert_allclose(word_marginals(lp * 1 + np.arange(7)[:, None], ids, how='mean'), mean, atol=1e-12)
    np.testing.assert_allclose(mean.sum(1), 1, atol=1e-12)


def test_special_tokens_and_padding_in_a_batch():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(3, 6, 4))
    wids = np.array([[-1, 0, 1, 1, 2, -1], [-1, 0, -1, -1, -1, -1], [-1, 0, 0, 0, 1, -1]])
    z_pad = z.copy(); z_pad[1, 2:] = 1e3                     # values at padding must not matter
    for how in ('first', 'mean'):
        batch = word_marginals(z_pad, wids, how=how, n_words=[3, 1, 2])
        assert [m.shape for m in batch] == [(3, 4), (1, 4), (2, 4)]
        for i in range(3):
            real = wids[i] >= 0
            alone = word_marginals(z[i][real], wids[i][real], how=how)     # no special tokens at all
            np.testing.assert_allclose(batch[i], alone, atol=1e-12)
    # sequence 2's first word = its pieces 1..3
    e = np.exp(z[2, 1:4] - z[2, 1:4].max(1, keepdims=True)); p = e / e.sum(1, keepdims=True)
    gm = np.exp(np.log(p).mean(0)); np.testing.assert_allclose(word_marginals(z, wids, how='mean')[2][0], gm / gm.sum())
    np.testing.assert_allclose(word_marginals(z, wids)[2][0], p[0])


def test_bad_word_ids_and_logits():
    lp = log_probs([.5, .5], [.7, .3], [.6, .4], [.5, .5])
    with pytest.raises(ValueError, match='word 0 comes after word 1'): word_marginals(lp, [0, 1, 0, -1])
    with pytest.raises(ValueError, match=r'1 word\(s\) before word 0|have no piece'): word_marginals(lp, [1, 1, 2, -1])
    with pytest.raises(ValueError, match='one word id per piece'): word_marginals(lp, [0, 1])
    with pytest.raises(ValueError, match='not finite|NaN or infinite'): word_marginals(lp * np.inf, [0, 1, 2, -1])
    with pytest.raises(ValueError, match='how must be one of'): word_marginals(lp, [0, 1, 2, -1], how='max')
    with pytest.raises(ValueError, match='sequence 0 has pieces for 2 of its 3 words'):
        word_marginals(lp, [-1, 0, 1, -1], n_words=3)
    with pytest.raises(TypeError): word_marginals(np.array([['a', 'b']] * 4), [0, 1, 2, -1])


def test_check_sentences():
    assert check_sentences([('a', 'b')]) == [['a', 'b']]
    for bad, err, msg in [('a b', TypeError, 'must be a list of sentences'), ([], ValueError, 'no sentences'),
                          (['a b'], TypeError, r'sentences\[0\] is a str'), ([[]], ValueError, 'at least one word'),
                          ([['a', '']], ValueError, r"sentences\[0\]\[1\] is ''"),
                          ([['a', 3]], TypeError, r'sentences\[0\]\[1\] is a int')]:
        with pytest.raises(err, match=msg): check_sentences(bad)


def saved(how_many=2):
    lp = np.log(np.array([[[.5, .5], [.9, .1], [.8, .2], [.4, .6], [.5, .5]],
                          [[.5, .5], [.2, .8], [.5, .5], [.5, .5], [.5, .5]]]))[:how_many]
    wids = np.array([[-1, 0, 1, 1, -1], [-1, 0, -1, -1, -1]])[:how_many]
    return dict(logits=lp, word_ids=wids, gold=np.array(['A', 'B', 'B'][:3 if how_many == 2 else 2]),
                labels=np.array(['A', 'B']))


def test_extractor_on_saved_outputs():
    top = calibkit.extractor('hf_token_classification', events='top').extract(saved())
    assert top[['item', 'pos']].values.tolist() == [[0, 0], [0, 1], [1, 0]]
    np.testing.assert_allclose(top.conf, [.9, .8, .8])
    assert top.correct.tolist() == [1, 0, 1] and top.label.astype(str).tolist() == ['A', 'A', 'B']
    mean = calibkit.extractor('hf_token_classification', events='top', how='mean').extract(saved())
    g = np.sqrt([.8 * .4, .2 * .6]); np.testing.assert_allclose(mean.conf, [.9, g.max() / g.sum(), .8])
    marg = calibkit.extractor('hf_token_classification', threshold=0.0).extract(saved())
    assert len(marg) == 6 and marg.correct.sum() == 3       # every (word, tag) cell, one right per word
    # the same events as SoftmaxExtractor's on the word marginals
    rows = word_marginals(saved()['logits'], saved()['word_ids'])
    soft = calibkit.extractor('softmax', threshold=0.0).extract(rows, [['A', 'B'], ['B']], labels=['A', 'B'])
    pd.testing.assert_frame_equal(marg, soft)


def test_extractor_bad_input():
    ex = HFTokenExtractor()
    with pytest.raises(ValueError, match=r'gold: 1 of 3 values are not among labels: C \(1'):
        HFTokenExtractor(strict_labels=True).extract({**saved(), 'gold': np.array(['A', 'C', 'B'])})
    with pytest.warns(UserWarning, match=r'gold: 1 of 3 values are not among labels: C \(1'):   # an error of the model
        top = HFTokenExtractor(events='top').extract({**saved(), 'gold': np.array(['A', 'C', 'B'])})
    assert top.correct.tolist()[1] == 0 and top.attrs['gold_outside'] == {'C': 1}
    with pytest.raises(ValueError, match='one gold tag per word'): ex.extract({**saved(), 'gold': np.array(['A'])})
    with pytest.raises(ValueError, match=r"output lacks key\(s\) \['word_ids'\]"):
        ex.extract({k: v for k, v in saved().items() if k != 'word_ids'})
    with pytest.raises(TypeError, match='do not also pass'): ex.extract(saved(), [['A']])
    with pytest.raises(TypeError, match='needs model= to tag sentences'): ex.extract([['a']], [['A']])
    with pytest.raises(TypeError, match='needs gold'): ex.extract([['a']])
    with pytest.raises(ValueError, match='how must be one of'): HFTokenExtractor(how='last')
    with pytest.raises(ValueError, match='batch_size'): HFTokenExtractor(batch_size=0)


def test_registered_without_importing_torch_or_transformers():
    code = ("import sys, calibkit.default_plugins, calibkit.plugins as p; p.load_plugins(); "
            "names = set(p.registry()['extractor']); assert {'hf_token_classification', 'spacy'} <= names, names; "
            "heavy = {'torch', 'transformers', 'spacy', 'thinc'} & set(sys.modules); assert not heavy, heavy")
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    from clidata import calibkit_here
    r = calibkit_here(None, 'plugins')                   # the listing, in this process (a process costs seconds)
    assert r.returncode == 0, r.stderr
    assert 'hf_token_classification' in r.stdout and 'reads: logits, word_ids, gold; optional: labels' in r.stdout


def test_missing_extra_names_it(monkeypatch):
    for name in ('torch', 'transformers'):                       # as if calibkit[hf] were not installed
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"pip install 'calibkit\[hf\]'"):
        piece_logits(object(), object(), [['a']])


@pytest.fixture(scope='module')
def tiny():
    "A tiny BERT UPOS tagger trained here on bundled EWT sentences (a few seconds), and held-out data."
    from calibkit.models.tiny_taggers import ewt_tagging_data, tiny_bert_tagger
    data = ewt_tagging_data(120, 40)
    model, tok = tiny_bert_tagger(data.train_words, data.train_upos, vocab_size=300, hidden=16, layers=1, epochs=2)
    return data, model, tok


@needs_hf
def test_batched_equals_unbatched_and_labels(tiny):
    data, model, tok = tiny
    sents = data.test_words[:12]
    out = piece_logits(model, tok, sents, batch_size=5)
    assert out['labels'].tolist() == [model.config.id2label[i] for i in range(model.config.num_labels)]
    assert out['labels'].tolist() == sorted({t for s in data.train_upos for t in s})
    for how in ('first', 'mean'):
        batched = word_marginals(out['logits'], out['word_ids'], how=how, n_words=[len(s) for s in sents])
        for s, m in zip(sents, batched):
            one = piece_logits(model, tok, [s], batch_size=1)
            np.testing.assert_allclose(word_marginals(one['logits'][0], one['word_ids'][0], how=how), m, atol=1e-5)
    # word ids come from the tokenizer's word_ids(), padding and special tokens are -1
    enc = tok(sents[0], is_split_into_words=True)
    assert out['word_ids'][0][:len(enc['input_ids'])].tolist() == [-1 if w is None else w for w in enc.word_ids()]
    assert (out['word_ids'][0][len(enc['input_ids']):] == -1).all()
    assert model.training is False


@needs_hf
def test_long_sentences_refused_and_a_saved_model(tiny, tmp_path):
    data, model, tok = tiny
    with pytest.raises(ValueError, match=r"sentences\[1\] has \d+ pieces .* more than the model's 128 positions"):
        piece_logits(model, tok, [['a'], ['the'] * 200])
    with pytest.raises(TypeError, match='fast tokenizer'): piece_logits(model, object(), [['a']])
    with pytest.raises(TypeError, match='token-classification model'): piece_logits(object(), tok, [['a']])
    model.save_pretrained(tmp_path); tok.save_pretrained(tmp_path)
    a = HFTokenExtractor(model=str(tmp_path), events='top').extract(data.test_words[:3], data.test_upos[:3])
    b = HFTokenExtractor(model=model, tokenizer=tok, events='top').extract(data.test_words[:3], data.test_upos[:3])
    pd.testing.assert_frame_equal(a, b)


@needs_hf
def test_end_to_end_report(tiny):
    from calibkit.report import calibration_report
    data, model, tok = tiny
    ex = calibkit.extractor('hf_token_classification', model=model, tokenizer=tok, how='mean')
    ev = ex.extract(data.test_words, data.test_upos)
    assert ev.item.nunique() == len(data.test_words)
    top = calibkit.extractor('hf_token_classification', model=model, tokenizer=tok, events='top').extract(
        data.test_words, data.test_upos)
    assert len(top) == sum(map(len, data.test_words))
    # saved outputs give the same events as the live run
    out = piece_logits(model, tok, data.test_words)
    again = calibkit.extractor('hf_token_classification', how='mean').extract(
        {**out, 'gold': np.concatenate(data.test_upos)})
    pd.testing.assert_frame_equal(again, ev, atol=1e-6)
    rep = calibration_report(ev, n_samples=50)
    assert rep.summary['events'] == len(ev)
    with pytest.raises(ValueError, match='not among labels'):
        HFTokenExtractor(model, tok, strict_labels=True).extract(data.test_words[:1],
                                                                 [['NOT_A_TAG'] * len(data.test_words[0])])
