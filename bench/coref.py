"""Benchmark: Monte Carlo coreference sampling (`calibkit.extractors.coref.coref_mc`).

Samples 1,000 clusterings of a 300-mention document (a window of 50 antecedent candidates, the
LitBank tutorial's setting) and estimates every within-window pair probability (~14,000 pairs).
Baseline, in the same run: a naive per-sample Python loop (draw each antecedent with
`rng.choice`, union-find, count pairs), timed on fewer samples and scaled linearly.

    .venv/bin/python bench/coref.py [--mentions 300] [--window 50] [--samples 1000] [--baseline-samples 20]
"""
import argparse, os, time
import numpy as np
os.environ.setdefault('CALIBKIT_QUIET', '1')
from calibkit.extractors.coref import coref_mc, window_pairs


def window_matrix(n: int, w: int, seed: int = 0) -> np.ndarray:
    "A mention-ranking-like window matrix: P(new) ~ 0.3, mass concentrated on a few close candidates."
    rng = np.random.default_rng(seed)
    P = np.zeros((n, w + 1))
    for i in range(n):
        k = min(i, w)
        P[i, :k + 1] = rng.dirichlet(np.r_[1.0, np.full(k, 0.05)])
    return P


def vectorised(P, n_samples, w):
    ms = coref_mc(P, n_samples, seed=0, quiet=True)
    i, j = window_pairs(len(P), w)
    return ms.pair_probs(i, j)


def naive(P, n_samples, w):
    "Per sample: draw antecedents one by one, union-find the links, count co-clustered pairs."
    rng = np.random.default_rng(0)
    n = len(P)
    pairs = [(i, j) for i in range(n) for j in range(max(0, i - w), i)]
    counts = dict.fromkeys(pairs, 0)
    for _ in range(n_samples):
        parent = list(range(n))
        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x
        for i in range(n):
            k = rng.choice(P.shape[1], p=P[i])
            if k: parent[find(i)] = find(i - k)
        root = [find(x) for x in range(n)]
        for i, j in pairs:
            if root[i] == root[j]: counts[(i, j)] += 1
    return np.array([counts[p] for p in pairs]) / n_samples


def best_of(f, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter(); out = f(); times.append(time.perf_counter() - t)
    return min(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--mentions', type=int, default=300)
    ap.add_argument('--window', type=int, default=50)
    ap.add_argument('--samples', type=int, default=1000)
    ap.add_argument('--baseline-samples', type=int, default=20)
    ap.add_argument('--repeat', type=int, default=3)
    a = ap.parse_args()
    P = window_matrix(a.mentions, a.window)
    n_pairs = len(window_pairs(a.mentions, a.window)[0])
    t_vec, p_vec = best_of(lambda: vectorised(P, a.samples, a.window), a.repeat)
    t_base, p_base = best_of(lambda: naive(P, a.baseline_samples, a.window), 1)
    t_base_scaled = t_base * a.samples / a.baseline_samples
    print(f'coref_mc: {a.samples} clusterings of {a.mentions} mentions (window {a.window}), {n_pairs:,} pair estimates')
    print(f'  vectorised     {t_vec:8.3f} s   (best of {a.repeat})')
    print(f'  naive baseline {t_base_scaled:8.3f} s   ({t_base:.3f} s for {a.baseline_samples} samples, scaled x{a.samples / a.baseline_samples:g})')
    print(f'  speed-up       {t_base_scaled / t_vec:8.1f} x')
    print(f'  mean pair estimate {p_vec.mean():.4f} vs baseline {p_base.mean():.4f} (same model, independent draws)')
    print(f'  target < 2 s: {"met" if t_vec < 2 else "NOT met"}')


if __name__ == '__main__':
    main()
