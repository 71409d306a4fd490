"""Benchmark: seq2seq token events from batch × T × V arrays (V = 32,000), 10^6 decoding steps in chunks.

Times `calibkit.extractors.seq2seq.token_events` on probabilities and on logits (`logits=True`) against naive numpy
baselines run in the same process on the same chunks:

- logits: `p = exp(l) / exp(l).sum(-1)` (a full softmax), then `p.max(-1)`, `p.argmax(-1)`, padding mask, frame;
- probabilities: `p.max(-1)`, `p.argmax(-1)`, padding mask, frame (no validation at all, which calibkit does).

Peak extra memory of one chunk call is measured with tracemalloc (numpy reports its allocations to it), apart from
the timings. The baselines are timed on a fraction of the chunks (`--baseline-fraction`) and scaled linearly.

    .venv/bin/python bench/seq2seq.py                      # 10^6 steps, V = 32,000, chunks of 8 × 64 steps
    .venv/bin/python bench/seq2seq.py --steps 100000       # quicker
"""
import argparse, platform, time, tracemalloc
import numpy as np, pandas as pd
from calibkit.extractors.seq2seq import token_events


def naive_logits(logits, labels):
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    conf, pred = p.max(-1), p.argmax(-1)
    real = labels != -100
    return pd.DataFrame({'conf': conf[real], 'correct': (pred == labels)[real].astype(np.uint8)})


def naive_probs(probs, labels):
    conf, pred = probs.max(-1), probs.argmax(-1)
    real = labels != -100
    return pd.DataFrame({'conf': conf[real], 'correct': (pred == labels)[real].astype(np.uint8)})


ROUTES = {
    'calibkit token_events(probs)': lambda x, y: token_events(x['probs'], y),
    'naive max/argmax on probs': lambda x, y: naive_probs(x['probs'], y),
    'calibkit token_events(logits, logits=True)': lambda x, y: token_events(x['logits'], y, logits=True),
    'naive softmax → max/argmax on logits': lambda x, y: naive_logits(x['logits'], y),
}


def peak_extra(f, *args) -> int:
    "Peak bytes allocated while `f(*args)` runs, above what was allocated before."
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        f(*args)
        return tracemalloc.get_traced_memory()[1] - base
    finally: tracemalloc.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--steps', type=int, default=1_000_000)
    ap.add_argument('--vocab', type=int, default=32_000)
    ap.add_argument('--batch', type=int, default=8)
    ap.add_argument('--length', type=int, default=64)
    ap.add_argument('--pad', type=float, default=0.1, help='fraction of each row that is padding (label -100)')
    ap.add_argument('--baseline-fraction', type=float, default=0.1)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    shape = (a.batch, a.length, a.vocab)
    logits = (rng.standard_normal(shape, dtype=np.float32) * 3)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    labels = rng.integers(0, a.vocab, shape[:2])
    labels[:, int(a.length * (1 - a.pad)):] = -100
    x = dict(probs=probs, logits=logits)
    per_chunk = a.batch * a.length
    n_chunks = max(1, a.steps // per_chunk)
    print(f'{n_chunks} chunks of {a.batch}×{a.length}×{a.vocab} float32 ({probs.nbytes / 2**20:.1f} MiB each) = '
          f'{n_chunks * per_chunk:,} steps; numpy {np.__version__}, {platform.machine()}')
    # the same events, whatever the route
    ref = ROUTES['calibkit token_events(probs)'](x, labels)
    for name, f in ROUTES.items():
        out = f(x, labels)
        np.testing.assert_allclose(out['conf'].to_numpy(), ref['conf'].to_numpy(), rtol=1e-5)
        assert (out['correct'].to_numpy() == ref['correct'].to_numpy()).all(), name
    rows = []
    for name, f in ROUTES.items():
        k = n_chunks if name.startswith('calibkit') else max(1, round(n_chunks * a.baseline_fraction))
        t0 = time.perf_counter()
        for _ in range(k): f(x, labels)
        sec = (time.perf_counter() - t0) * n_chunks / k
        mem = peak_extra(f, x, labels)
        rows.append(dict(route=name, chunks_timed=k, seconds=sec, steps_per_s=n_chunks * per_chunk / sec,
                         peak_extra_MiB=mem / 2**20, peak_extra_vs_chunk=mem / probs.nbytes))
    t = pd.DataFrame(rows)
    for i in (0, 2): t.loc[i, 'vs_naive'] = t.seconds[i] / t.seconds[i + 1]
    with pd.option_context('display.width', 200, 'display.max_columns', 20):
        print(t.round(3).to_string(index=False))


if __name__ == '__main__':
    main()
