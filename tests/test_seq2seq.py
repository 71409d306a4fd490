"""Seq2seq confidence extractor: token / word / sequence events, the calibration_metric reader, bad input,
memory, the Hugging Face adapters and the tutorial's GRU model `calibkit.models.seq2seq` (both skipped without
torch/transformers/tokenizers)."""
import importlib.util, json, subprocess, sys, tracemalloc
from pathlib import Path
import numpy as np, pandas as pd, pytest
from hypothesis import given, settings, strategies as st
import calibkit
from calibkit.extractors.seq2seq import (exact_match, hard_split, hf_sequence_events, hf_token_events, hf_word_events,
                                         read_calibration_metric_logits, sequence_events, split_accuracy, token_events,
                                         word_events)

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT/'calibkit'/'data'/'calibration_metric'/'dev_two.logits'


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def random_batch(rng, b, t, v, pad_frac=.3):
    "Probabilities B×T×V and labels with -100 padding at the end of each row (random lengths ≥ 1)."
    p = softmax(rng.normal(size=(b, t, v)) * 3)
    y = rng.integers(0, v, size=(b, t))
    lens = rng.integers(1, t + 1, size=b)
    y[np.arange(t)[None] >= lens[:, None]] = -100
    return p, y


def loop_token_events(p, y, ignore=()):
    "Reference: one Python loop over sequences and steps."
    rows = []
    for i in range(len(y)):
        for j in range(len(y[i])):
            if y[i][j] == -100 or y[i][j] in ignore: continue
            rows.append((i, j, int(np.argmax(p[i][j])), y[i][j], float(np.max(p[i][j])), int(np.argmax(p[i][j]) == y[i][j])))
    return rows


# ---------------------------------------------------------------- token events: three routes agree with a loop

@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 5), st.integers(1, 7), st.integers(2, 9))
def test_token_events_match_a_loop_and_each_other(seed, b, t, v):
    rng = np.random.default_rng(seed)
    p, y = random_batch(rng, b, t, v)
    ev = token_events(p, y)
    got = list(zip(ev.item, ev.pos, ev.label, ev.gold, ev.conf, ev.correct))
    assert got == loop_token_events(p, y)
    # logits route: the same up to rounding
    lg = token_events(np.log(p), y, logits=True)
    np.testing.assert_allclose(lg.conf, ev.conf, rtol=1e-12)
    assert (lg.correct.values == ev.correct.values).all()
    # top-k route with k = 2, stored ascending like calibration_metric
    order = np.argsort(p, -1, kind='stable')[..., -2:]
    tk = token_events((np.take_along_axis(p, order, -1), order), y, vocab_size=v)
    np.testing.assert_array_equal(tk.conf, ev.conf)
    assert (tk.correct.values == ev.correct.values).all()
    # one sequence at a time (2-D input) = the batch
    per = pd.concat([token_events(p[i], y[i]).assign(item=i) for i in range(b) if (y[i] != -100).any()], ignore_index=True)
    pd.testing.assert_frame_equal(per, ev, check_dtype=False)


def test_padding_never_becomes_an_event_and_counts_are_kept():
    rng = np.random.default_rng(0)
    p, y = random_batch(rng, 6, 9, 5)
    p[y == -100] = np.nan                      # garbage in padding rows is never read
    ev = token_events(p, y, ignore_ids=[0])
    assert len(ev) == ((y != -100) & (y != 0)).sum()
    assert ev.attrs['n_padding'] == (y == -100).sum() and ev.attrs['n_ignored'] == ((y == 0)).sum()
    assert not ev.conf.isna().any()
    m = token_events(np.nan_to_num(p, nan=.2), np.where(y < 0, 3, y), mask=y >= 0, ignore_ids=[0])
    pd.testing.assert_frame_equal(m, ev)


def test_item_names_the_sequences():
    p, y = random_batch(np.random.default_rng(1), 3, 4, 5, )
    ev = token_events(p, y, item=['a', 'b', 'c'])
    assert set(ev.item) <= {'a', 'b', 'c'} and ev.item.iloc[0] == 'a'


def test_logits_with_minus_inf_entries():
    lg = np.array([[0., -np.inf, np.log(3)], [1., 1., 1.]])
    ev = token_events(lg, [2, 1], logits=True)
    np.testing.assert_allclose(ev.conf, [.75, 1/3])
    assert ev.correct.tolist() == [1, 0]            # ties: the first maximum is the prediction


# ---------------------------------------------------------------- words

def loop_words(item, wid, conf, correct, how):
    out = {}
    for i, w, c, y in zip(item, wid, conf, correct):
        if w < 0: continue
        out.setdefault((i, w), []).append((c, y))
    agg = np.min if how == 'min' else np.mean
    return [(i, w, agg([c for c, _ in v]), min(y for _, y in v), len(v)) for (i, w), v in out.items()]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(['min', 'mean']))
def test_word_events_match_a_loop(seed, how):
    rng = np.random.default_rng(seed)
    n_items = rng.integers(1, 4)
    lens = rng.integers(1, 8, size=n_items)
    item = np.repeat(np.arange(n_items), lens)
    pos = np.concatenate([np.arange(k) for k in lens])
    # contiguous word ids per sequence: nondecreasing, with some -1 (no word)
    wid = np.concatenate([np.cumsum(rng.random(k) < .5) for k in lens])
    wid[rng.random(len(wid)) < .15] = -1
    if (wid < 0).all(): wid[0] = 0
    tokens = pd.DataFrame({'item': item, 'pos': pos, 'conf': rng.random(len(item)), 'correct': rng.integers(0, 2, len(item))})
    w = word_events(tokens, wid, how=how)
    ref = loop_words(item, wid, tokens.conf, tokens.correct, how)
    assert len(w) == len(ref)
    for row, (i, k, c, y, n) in zip(w.itertuples(), ref):
        assert (row.item, row.pos, row.correct, row.n_pieces) == (i, k, y, n)
        assert abs(row.conf - c) < 1e-12
    assert w.attrs['n_no_word'] == (wid < 0).sum()


def test_marker_rule_equals_explicit_word_ids():
    vocab = ['<pad>', '</s>', '▁the', '▁un', 'believ', 'able', '▁cat', 's', '▁']
    gold = np.array([[2, 3, 4, 5, 6, 7, 1], [8, 4, 6, 1, -100, -100, -100]])
    wids = np.array([[0, 1, 1, 1, 2, 2, -1], [0, 0, 1, -1, -1, -1, -1]])
    p = softmax(np.random.default_rng(3).normal(size=(2, 7, len(vocab))) * 2)
    tok = token_events(p, gold)
    a = word_events(tok, vocab=vocab, specials=['<pad>', '</s>'])
    b = word_events(tok, wids)
    pd.testing.assert_frame_equal(a, b, check_dtype=False)
    assert a.n_pieces.tolist() == [1, 3, 2, 2, 1]


# ---------------------------------------------------------------- sequences

@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.floats(1e-6, 1), min_size=1, max_size=8), min_size=1, max_size=6))
def test_sequence_confidence_matches_definitions(steps):
    correct = [i % 2 for i in range(len(steps))]
    for how, f in (('min', min), ('mean', np.mean), ('prod', lambda s: np.exp(np.sum(np.log(s))))):
        got = sequence_events(steps, correct=correct, how=how).conf.to_numpy()
        np.testing.assert_allclose(got, [f(s) for s in steps], rtol=1e-12)
    s = sequence_events(steps, correct=correct)
    assert s.length.tolist() == [len(x) for x in steps]
    # an events frame with one run per item gives the same
    frame = pd.DataFrame({'item': np.repeat(np.arange(len(steps)) * 10, [len(x) for x in steps]), 'conf': np.concatenate(steps)})
    np.testing.assert_allclose(sequence_events(frame, correct=correct).conf, s.conf)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 3), max_size=4), st.lists(st.integers(0, 3), max_size=4)), min_size=1, max_size=8))
def test_exact_match_is_list_equality(pairs):
    pred, ref = [p for p, _ in pairs], [r for _, r in pairs]
    assert exact_match(pred, ref).tolist() == [int(p == r) for p, r in pairs]


def test_min_is_below_mean_and_prod_below_min():
    rng = np.random.default_rng(5)
    steps = [rng.uniform(.5, 1, rng.integers(1, 20)) for _ in range(50)]
    c = {h: sequence_events(steps, correct=np.zeros(50), how=h).conf for h in ('min', 'mean', 'prod')}
    assert (c['prod'] <= c['min'] + 1e-15).all() and (c['min'] <= c['mean'] + 1e-15).all()


def test_hard_split_is_the_union_below_the_pooled_quantile():
    rng = np.random.default_rng(2)
    models = {m: pd.DataFrame({'item': rng.permutation(100), 'conf': rng.random(100), 'correct': rng.integers(0, 2, 100)})
              for m in 'abc'}
    thr = np.quantile(np.concatenate([f.conf for f in models.values()]), .25)
    expect = sorted(set().union(*(set(f.item[f.conf < thr]) for f in models.values())))
    assert hard_split(models).tolist() == expect
    one = hard_split({'a': models['a']}, quantile=.5)
    assert len(one) == 50
    t = split_accuracy(models, expect)
    for m, f in models.items():
        h = f.item.isin(expect)
        row = t.set_index('model').loc[m]
        assert row.n_hard == h.sum() and abs(row.acc_hard - f.correct[h].mean()) < 1e-12
        assert abs(row.acc_easy - f.correct[~h].mean()) < 1e-12


# ---------------------------------------------------------------- calibration_metric format

def package_reader(path):
    "calibration_metric's TopLogitFormatSequenceReader.read, restated (argmax of the stored top-k, vs label)."
    top_preds, is_correct = [], []
    for line in open(path):
        line = json.loads(line)
        top = np.array(line['top_logits']); idx = np.array(line['top_logit_idxs'])
        j = np.argmax(top, axis=-1).reshape(-1, 1)
        tl = np.take_along_axis(top, j, axis=1).reshape(-1)
        ti = np.take_along_axis(idx, j, axis=1).reshape(-1)
        ok = ti == np.array(line['labels'])
        for t in range(tl.shape[0]):
            top_preds.append(tl[t]); is_correct.append(ok[t])
    return np.array(top_preds), np.array(is_correct)


def test_calibration_metric_fixture_matches_the_package_reader():
    ev = read_calibration_metric_logits(FIXTURE)
    c, y = package_reader(FIXTURE)
    assert len(ev) == 214                                  # the package's own test expects 214 steps
    np.testing.assert_array_equal(ev.conf.to_numpy(), c)
    np.testing.assert_array_equal(ev.correct.to_numpy().astype(bool), y)
    lines = [json.loads(l) for l in open(FIXTURE)]
    assert all((np.diff(l['top_logits'], axis=1) >= 0).all() for l in lines)      # stored ascending: top-1 is last
    np.testing.assert_array_equal(ev.label, np.concatenate([np.array(l['top_logit_idxs'])[:, -1] for l in lines]))
    # the second example's labels end with T5's pad id 0, which the package counts; ignore_ids drops them
    n0 = sum((np.array(l['labels']) == 0).sum() for l in lines)
    assert n0 > 0 and len(read_calibration_metric_logits(FIXTURE, ignore_ids=[0])) == 214 - n0


def test_calibration_metric_bad_files(tmp_path):
    good = json.loads(FIXTURE.read_text().splitlines()[0])
    f = tmp_path/'x.logits'
    f.write_text(json.dumps({**good, 'labels': good['labels'][:-1]}) + '\n')
    with pytest.raises(ValueError, match='example 0: top_logits .* must be N×k'): read_calibration_metric_logits(f)
    f.write_text(json.dumps({k: v for k, v in good.items() if k != 'labels'}) + '\n')
    with pytest.raises(ValueError, match=r"lacks key\(s\) \['labels'\]"): read_calibration_metric_logits(f)
    f.write_text('\n')
    with pytest.raises(ValueError, match='holds no examples'): read_calibration_metric_logits(f)
    bad = np.array(good["top_logits"]); bad[3] = [.3, .3, .3, .3, .35]
    f.write_text(json.dumps({**good, 'top_logits': bad.tolist()}) + '\n')
    with pytest.raises(ValueError, match='1 of 107 steps have top-k probabilities summing to more than 1'):
        read_calibration_metric_logits(f)


# ---------------------------------------------------------------- bad input

P = softmax(np.random.default_rng(0).normal(size=(2, 3, 5)))
Y = np.array([[0, 1, 2], [3, -100, -100]])

@pytest.mark.parametrize('call, exc, msg', [
    (lambda: token_events([P[0], P[1, :2]], Y), ValueError, 'probs is ragged (sequences of lengths [2, 3])'),
    (lambda: token_events(P, [[0, 1, 2], [3]]), ValueError, 'labels is ragged'),
    (lambda: token_events(P * 1.1, Y), ValueError, 'probs: 4 of 4 steps do not sum to 1'),
    (lambda: token_events(P.astype(int), Y), TypeError, 'probs must hold floats'),
    (lambda: token_events(P, Y.astype(float)), TypeError, 'labels must hold integer ids'),
    (lambda: token_events(P, Y[:, :2]), ValueError, 'labels has shape (2, 2) but probs has steps of shape (2, 3)'),
    (lambda: token_events(P[0], Y[0, :2]), ValueError, 'labels has shape (2,) but probs has steps of shape (3,)'),
    (lambda: token_events(P, Y, mask=np.ones((2, 2))), ValueError, 'mask has shape (2, 2)'),
    (lambda: token_events(P, Y, mask=np.full((2, 3), 2)), ValueError, 'mask: 6 of 6 values are not 0 or 1'),
    (lambda: token_events(P, np.where(Y == 3, 7, Y)), ValueError, 'labels: 1 of 4 real steps have ids outside [0, 5)'),
    (lambda: token_events(P, np.where(Y == 3, -5, Y)), ValueError, 'labels: 1 of 4 real steps have ids outside [0, 5)'),
    (lambda: token_events((P[..., :2], np.full((2, 3, 2), 9)), Y, vocab_size=5), ValueError,
     '8 of 8 top-k ids are outside the vocabulary [0, 5)'),
    (lambda: token_events((P[..., :2], np.full((2, 3, 2), -1)), Y), ValueError, 'top-k ids are outside the vocabulary'),
    (lambda: token_events((P[..., :2], np.zeros((2, 3, 3), int)), Y), ValueError, 'ids has shape (2, 3, 3) but probs has (2, 3, 2)'),
    (lambda: token_events((P, P, P), Y), ValueError, 'a top-k input is a pair'),
    (lambda: token_events((P[..., :2], np.zeros((2, 3, 2), int)), Y, logits=True), ValueError, 'logits=True needs full'),
    (lambda: token_events(P[:, :0], Y[:, :0]), ValueError, 'probs is empty'),
    (lambda: token_events(P[0, 0], Y[0, :1]), ValueError, 'probs must be T×V or B×T×V'),
    (lambda: token_events(P, np.full_like(Y, -100)), ValueError, 'no events: all 6 steps are padding (6)'),
    (lambda: token_events(P, Y, ignore_ids=[0, 1, 2, 3]), ValueError, 'are padding (2) or ignored (4)'),
    (lambda: token_events(np.where(P > .3, np.inf, P), Y, logits=True), ValueError, 'logits: '),
    (lambda: token_events(-P, Y), ValueError, 'probs: 4 of 4 steps have values outside [0, 1]'),
    (lambda: token_events(P, Y, item=[1, 2, 3]), ValueError, 'item has 3 ids but there are 2 sequences'),
    (lambda: sequence_events([[.9, .8], []], correct=[1, 1]), ValueError, 'conf: 1 of 2 sequences are empty (e.g. sequence 1)'),
    (lambda: sequence_events([], correct=[]), ValueError, 'conf is empty'),
    (lambda: sequence_events([[.9, 1.2]], correct=[1]), ValueError, 'conf: 1 of 2 values are outside [0, 1]'),
    (lambda: sequence_events([[.9]], correct=[1], pred=[[1]], ref=[[1]]), ValueError, 'either correct or pred and ref'),
    (lambda: sequence_events([[.9]]), ValueError, 'give pred and ref'),
    (lambda: sequence_events(pd.DataFrame({'item': [0, 1, 0], 'conf': [.5] * 3}), correct=[1, 1]), ValueError,
     'rows of a sequence (same item) must be contiguous'),
    (lambda: exact_match([[1]], [[1], [2]]), ValueError, 'pred has 1 sequences but ref has 2'),
    (lambda: exact_match([[1.5]], [[1]]), TypeError, 'pred must hold id sequences'),
    (lambda: word_events(pd.DataFrame({'item': [0, 0], 'pos': [1, 0], 'conf': [.5, .5], 'correct': [1, 1]}), [0, 1]),
     ValueError, 'sequence order'),
    (lambda: word_events(pd.DataFrame({'conf': [.5], 'correct': [1]}), [0]), ValueError, "lacks column(s) ['item', 'pos']"),
    (lambda: word_events(token_events(P, Y), [[0, 1], [0, 1, 2]]), ValueError, 'word_ids is ragged'),
    (lambda: word_events(token_events(P, Y), [0, 1]), ValueError, 'give one id per row of tokens (4)'),
    (lambda: word_events(token_events(P, Y), [-1, -1, -1, -1]), ValueError, 'no words: all 4 pieces belong to no word'),
    (lambda: word_events(token_events(P, Y), vocab=['▁a', 'b']), ValueError, 'tokens.gold: 2 ids are outside the vocab [0, 2)'),
    (lambda: word_events(token_events(P, Y), [0, 1, 2, 3], vocab=['a'] * 5), ValueError, 'exactly one of word_ids and vocab'),
    (lambda: hard_split({'a': pd.DataFrame({'item': [0, 0], 'conf': [.1, .2], 'correct': [1, 1]})}), ValueError, '1 duplicate items'),
    (lambda: hard_split({'a': pd.DataFrame({'item': [0], 'conf': [.1], 'correct': [1]})}, quantile=1), ValueError, 'quantile must be in (0, 1)'),
    (lambda: calibkit.extractor('seq2seq', level='phrase'), ValueError, "level must be 'token', 'word' or 'sequence'"),
    (lambda: calibkit.extractor('seq2seq').extract(P), ValueError, "level 'token' needs labels"),
])
def test_bad_input(call, exc, msg):
    with pytest.raises(exc) as e: call()
    assert msg in str(e.value), str(e.value)


# ---------------------------------------------------------------- memory: no full copy of a B×T×V array

@pytest.mark.parametrize('logits', [False, True])
def test_token_events_do_not_copy_the_scores(logits):
    rng = np.random.default_rng(0)
    b, t, v = 4, 64, 32_000
    x = rng.random((b, t, v), dtype=np.float32)
    if not logits: x /= x.sum(-1, keepdims=True)
    y = rng.integers(0, v, (b, t)); y[:, 50:] = -100
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        ev = token_events(x, y, logits=logits)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally: tracemalloc.stop()
    assert len(ev) == 4 * 50
    assert peak < x.nbytes / 4, f'extra memory {peak / 2**20:.1f} MiB for a {x.nbytes / 2**20:.1f} MiB input'


# ---------------------------------------------------------------- the plugin

def test_plugin_levels_agree_with_functions():
    p, y = random_batch(np.random.default_rng(4), 3, 5, 6)
    pd.testing.assert_frame_equal(calibkit.extractor('seq2seq').extract(p, y), token_events(p, y))
    wid = np.tile([0, 0, 1, 1, 2], (3, 1))
    pd.testing.assert_frame_equal(calibkit.extractor('seq2seq', level='word', how='mean').extract(p, y, word_ids=wid),
                                  word_events(token_events(p, y), wid, how='mean'))
    lg = calibkit.extractor('seq2seq', logits=True).extract(np.log(p), y)
    np.testing.assert_allclose(lg.conf, token_events(p, y).conf)
    assert 'seq2seq' in set(calibkit.list_plugins().name)


# ---------------------------------------------------------------- Hugging Face adapters (tiny random T5)

HAS_HF = all(importlib.util.find_spec(m) for m in ('torch', 'transformers', 'tokenizers'))
needs_hf = pytest.mark.skipif(not HAS_HF, reason='torch/transformers/tokenizers not installed: pip install "calibkit[hf]"')
if HAS_HF:
    import torch, transformers

SENTENCES = ['the cat sat on the mat', 'unbelievable things happen', 'a dog chased the cats',
             'cats and dogs', 'the mat was unbelievably flat']


@pytest.fixture(scope='module')
def tokenizer():
    "A tiny SentencePiece-style (▁) BPE tokenizer trained here on five sentences, wrapped for transformers."
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE(unk_token='<unk>'))
    tok.pre_tokenizer, tok.decoder = pre_tokenizers.Metaspace(), decoders.Metaspace()
    tok.train_from_iterator(SENTENCES, trainers.BpeTrainer(vocab_size=60, special_tokens=['<pad>', '</s>', '<unk>'],
                                                             show_progress=False))
    tok.post_processor = processors.TemplateProcessing(single='$A </s>', special_tokens=[('</s>', 1)])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token='<pad>', eos_token='</s>', unk_token='<unk>')


@pytest.fixture(scope='module')
def t5(tokenizer):
    torch.manual_seed(0)
    cfg = transformers.T5Config(vocab_size=len(tokenizer), d_model=16, d_ff=32, d_kv=8, num_layers=1, num_heads=2,
                                decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    return transformers.T5ForConditionalGeneration(cfg).eval()


def make_batch(tokenizer, src, tgt):
    batch = tokenizer(src, text_target=tgt, padding=True, return_tensors='pt')
    batch['labels'] = batch['labels'].masked_fill(batch['labels'] == tokenizer.pad_token_id, -100)
    return batch


@needs_hf
def test_hf_token_events_equal_a_softmax_of_the_forward_pass(t5, tokenizer):
    batch = make_batch(tokenizer, SENTENCES[:3], SENTENCES[2:5])
    ev = hf_token_events(t5, batch)
    with torch.no_grad(): p = torch.softmax(t5(**batch).logits, -1).numpy()
    y = batch['labels'].numpy()
    real = y != -100
    assert len(ev) == real.sum() < y.size
    np.testing.assert_allclose(ev.conf, p.max(-1)[real], rtol=1e-5)
    assert (ev.correct.to_numpy() == (p.argmax(-1) == y)[real]).all()
    assert len(hf_token_events(t5, batch, ignore_ids=[tokenizer.eos_token_id])) == real.sum() - 3


@needs_hf
def test_hf_word_events_follow_the_tokenizers_word_ids(t5, tokenizer):
    tgt = SENTENCES[2:5]
    batch = make_batch(tokenizer, SENTENCES[:3], tgt)
    enc = tokenizer(text_target=tgt, padding=True)
    wids = [[-1 if w is None else w for w in enc.word_ids(i)] for i in range(len(tgt))]
    assert any(np.bincount([w for w in row if w >= 0]).max() > 1 for row in wids)   # some word spans several pieces
    for how in ('min', 'mean'):
        a = hf_word_events(t5, batch, tokenizer, how=how)
        b = word_events(hf_token_events(t5, batch), wids, how=how)
        pd.testing.assert_frame_equal(a, b, check_dtype=False)
    assert len(a) == sum(len(s.split()) for s in tgt)


@needs_hf
def test_hf_sequence_events_stop_at_eos_and_match_transition_scores(t5, tokenizer):
    batch = make_batch(tokenizer, SENTENCES[:4], SENTENCES[:4])
    kw = dict(max_new_tokens=6, do_sample=False)
    with torch.no_grad():
        free = t5.generate(input_ids=batch['input_ids'], attention_mask=batch['attention_mask'], eos_token_id=None,
                           output_scores=True, return_dict_in_generate=True, **kw)
    gen = free.sequences[:, 1:].numpy()
    stop = int(gen[0, 2])                                # pretend the token decoded at step 2 of example 0 is EOS
    first = [list(r).index(stop) + 1 if stop in r else len(r) for r in gen]
    probs = torch.stack(free.scores, 1).softmax(-1).max(-1).values.numpy()
    s = hf_sequence_events(t5, batch, correct=np.zeros(4), how='prod', eos_token_id=stop, **kw)
    assert s.length.tolist() == first and first[0] <= 3
    np.testing.assert_allclose(s.conf, [np.prod(probs[i, :k]) for i, k in enumerate(first)], rtol=1e-5)
    # HF's own route to the chosen tokens' log-probabilities, for greedy decoding the max probabilities
    ts = t5.compute_transition_scores(free.sequences, free.scores, normalize_logits=True).exp().numpy()
    m = hf_sequence_events(t5, batch, correct=np.zeros(4), how='min', eos_token_id=stop, **kw)
    np.testing.assert_allclose(m.conf, [ts[i, :k].min() for i, k in enumerate(first)], rtol=1e-5)


@needs_hf
def test_hf_sequence_correctness_against_ids_and_strings(t5, tokenizer):
    batch = make_batch(tokenizer, SENTENCES[:3], SENTENCES[:3])
    inputs = dict(input_ids=batch['input_ids'], attention_mask=batch['attention_mask'])
    with torch.no_grad(): stop = int(t5.generate(**inputs, max_new_tokens=3, eos_token_id=None)[0, 2])
    kw = dict(max_new_tokens=8, eos_token_id=stop)          # example 0 finishes by step 2
    with torch.no_grad(): out = t5.generate(**inputs, **kw)
    gen = out[:, 1:].numpy()
    finished = (gen == stop).any(1)
    assert finished[0]
    decoded = tokenizer.batch_decode(out, skip_special_tokens=True)
    refs = [decoded[0], 'something else', decoded[2]]
    s = hf_sequence_events(t5, batch, refs=refs, tokenizer=tokenizer, **kw)
    assert s.correct.tolist() == [1, 0, int(finished[2])]
    # label-id references: the generated ids themselves (after EOS: -100) are correct exactly when decoding finished
    after = np.cumsum(gen == stop, 1) - (gen == stop) > 0
    lab = np.where(after, -100, gen)
    s2 = hf_sequence_events(t5, batch, refs=lab, **kw)
    assert s2.correct.tolist() == finished.astype(int).tolist()
    lab[0, 0] = (lab[0, 0] + 1) % len(tokenizer) or 3
    assert hf_sequence_events(t5, batch, refs=lab, **kw).correct.tolist()[0] == 0
    with pytest.raises(ValueError, match='num_beams=1'): hf_sequence_events(t5, batch, num_beams=2)
    with pytest.raises(ValueError, match='string refs need the tokenizer'): hf_sequence_events(t5, batch, refs=refs)


# ---------------------------------------------------------------- the tutorial's model (calibkit.models.seq2seq)


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT)


def test_calibkit_and_its_plugins_never_import_the_model_module():
    r = python("import sys, calibkit; calibkit.list_plugins(); calibkit.extractor('seq2seq')\n"
               "print(sorted(m for m in ('torch', 'calibkit.models.seq2seq') if m in sys.modules))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == '[]'


def test_the_model_module_without_torch_is_a_clear_error():
    # scikit-learn/scipy (imported by the extractors below the model) crash on a None torch module: import them first
    r = python("import sys, calibkit.extractors.seq2seq; sys.modules['torch'] = None\n"
               "try: import calibkit.models.seq2seq\nexcept ImportError as e: print(e)")
    assert "calibkit.models.seq2seq needs torch: pip install 'calibkit[hf]'" in r.stdout, r.stdout + r.stderr


if HAS_HF:
    from calibkit.models import seq2seq as s2s


@pytest.fixture(scope='module')
def ewt():
    return s2s.ewt_seq2seq_data(ROOT/'calibkit'/'data'/'ud_ewt')


@needs_hf
def test_decoder_distribution_depends_on_the_previous_output():
    torch.manual_seed(1)
    net = s2s.Seq2Seq(30, 6, 0.0).eval()
    x, y_in = s2s.pad([[4, 5, 6]]), s2s.pad([[7, 8, 9]], pre=(s2s.BOS,))
    with torch.no_grad():
        a = net(x, y_in)[0].softmax(-1)
        y_in[0, 2] = 20                                  # another previous output before step 2
        b = net(x, y_in)[0].softmax(-1)
    np.testing.assert_array_equal(a[:2].numpy(), b[:2].numpy())     # steps 0 and 1 have not seen it
    assert (a[2:] - b[2:]).abs().sum(-1).min() > 1e-4


@needs_hf
def test_training_is_deterministic_and_events_follow_the_model(ewt):
    kw = dict(hidden=8, epochs=1, idx=ewt.train_idx[:60], seed=5)
    (m, losses), (m2, losses2) = s2s.train(ewt, **kw), s2s.train(ewt, **kw)
    assert losses == losses2 and all(torch.equal(p, q) for p, q in zip(m.parameters(), m2.parameters()))
    sub = ewt.test_idx[:12]
    ev = s2s.model_events(m, ewt, sub)
    # tokens: the softmax maximum of one direct forward pass, at the real label positions
    x, y_in, labels = s2s.batch_tensors(ewt, sub)
    with torch.no_grad(): p = m(x, y_in).softmax(-1)
    real = (labels != -100).numpy()
    np.testing.assert_allclose(ev.tokens.conf, p.max(-1).values.numpy()[real], rtol=1e-5)
    assert ev.tokens.correct.tolist() == (p.argmax(-1) == labels).numpy()[real].astype(int).tolist()
    # sequences: exact match of the decoded ids with target + EOS, by plain list equality
    pred, steps = s2s.decode(m, [ewt.src_ids[i] for i in sub], max_len=labels.shape[1] + 10)
    expect = [int(list(q) == ewt.tgt_ids[i] + [s2s.EOS]) for q, i in zip(pred, sub)]
    assert ev.sequences['prod'].correct.tolist() == expect
    np.testing.assert_allclose(ev.sequences['prod'].conf, [np.prod(s.astype(float)) for s in steps], rtol=1e-9)
    assert ev.exact_match == np.mean(expect) and ev.words.n_pieces.sum() == real.sum() - len(sub)   # EOS: no word


@needs_hf
@pytest.mark.parametrize('call, exc, msg', [
    (lambda d: s2s.train(d, batch_size=0), ValueError, 'batch_size must be an integer >= 1, got 0'),
    (lambda d: s2s.train(d, dropout=-.1), ValueError, 'dropout must be a finite number in [0, 1)'),
    (lambda d: s2s.train(d, seed=-1), ValueError, 'seed must be an integer >= 0, got -1'),
    (lambda d: s2s.batch_tensors(d, [0.5]), TypeError, 'idx must hold integer indices'),
    (lambda d: s2s.model_events(d, d), TypeError, 'model must be a Seq2Seq'),
])
def test_model_bad_input(ewt, call, exc, msg):
    with pytest.raises(exc) as e: call(ewt)
    assert msg in str(e.value), str(e.value)
