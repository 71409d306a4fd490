"""Benchmark: the sparse-tagset study's marginal path (`calibkit.sparse_study_from_scores`), without model training.

A synthetic tagger's dev and test score matrices (n tokens x K tags each, float64 softmax rows, an
over-confident model with Zipf-distributed gold tags) go through the whole evaluation: thresholded
events (t = 0.01), TFG grouping from training counts, histogram binning, isotonic regression and
scaling-binning each fitted and applied once shared (SCW) and once per group (TFG), and SMCE plus
the five GMCEs with 95% intervals before and after each of the six recalibrations.

Floor, in the same run: np.sort + searchsorted + bincount (10 equal-mass bins) on the same test
events — the least any binned metric of those events costs.

    .venv/bin/python bench/sparse_tagsets.py [--tokens 50000] [--tags 500] [--repeat 5] [--profile]
"""
import argparse, cProfile, os, pstats, time, warnings
import numpy as np
os.environ.setdefault('CALIBKIT_QUIET', '1')
from calibkit.events import events_from_scores
from calibkit.sparse import sparse_study, sparse_study_from_scores


def tagger_scores(n: int, K: int, seed: int):
    "Softmax rows of an over-confident tagger: gold tags Zipf-distributed, the gold logit raised on 80% of tokens."
    rng = np.random.default_rng(seed)
    p = 1 / (np.arange(1, K + 1) + 2.0) ** 1.5
    p /= p.sum()
    gold = rng.choice(K, size=n, p=p)
    S = rng.standard_normal((n, K)) + np.log(p)
    S[np.arange(n), gold] += 4 * (rng.random(n) < .8)
    S *= 1.6
    S -= S.max(axis=1, keepdims=True)
    np.exp(S, out=S)
    S /= S.sum(axis=1, keepdims=True)
    return S, gold, p


def floor(conf, correct, n_bins=10):
    "np.sort + searchsorted + bincount: 10 equal-mass bins' sums of the events."
    s = np.sort(conf)
    edges = s[np.arange(1, n_bins) * len(s) // n_bins]
    j = np.searchsorted(edges, conf, side='right')
    return np.bincount(j, weights=correct, minlength=n_bins)


def timed(f, repeat):
    "Best and median wall time, and best CPU time of this process (less sensitive to other load on a shared machine)."
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = f()
        wall.append(time.perf_counter() - t); cpu.append(time.process_time() - c)
    return min(wall), float(np.median(wall)), min(cpu), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tokens', type=int, default=50_000)
    ap.add_argument('--tags', type=int, default=500)
    ap.add_argument('--repeat', type=int, default=5)
    ap.add_argument('--profile', action='store_true', help='also print the 15 most expensive functions of one run')
    a = ap.parse_args()
    S_dev, g_dev, p = tagger_scores(a.tokens, a.tags, 1)
    S_test, g_test, _ = tagger_scores(a.tokens, a.tags, 2)
    train = {k: int(v) for k, v in enumerate(np.round(p * 10 ** 6))}
    warnings.simplefilter('ignore')     # the rarest synthetic group has < 100 dev events: Grouped's pooled fallback warns
    full = lambda: sparse_study_from_scores(train, S_dev, g_dev, S_test, g_test)
    full()                              # warm-up: imports, plugin registry
    dev, test = events_from_scores(S_dev, g_dev, threshold=.01), events_from_scores(S_test, g_test, threshold=.01)
    c, y = test.conf.to_numpy(), test.correct.to_numpy()
    t_full, m_full, c_full, res = timed(full, a.repeat)
    t_ev, m_ev, c_ev, _ = timed(lambda: (events_from_scores(S_dev, g_dev, threshold=.01), events_from_scores(S_test, g_test, threshold=.01)), a.repeat)
    t_study, m_study, c_study, _ = timed(lambda: sparse_study(train, dev, test), a.repeat)
    t_one, m_one, c_one, _ = timed(lambda: sparse_study(train, dev, test, recalibrators=['isotonic']), a.repeat)
    t_floor, m_floor, c_floor, _ = timed(lambda: floor(c, y), a.repeat)
    print(f'sparse study: dev and test {a.tokens:,} x {a.tags} score matrices each, {len(dev):,} dev / {len(test):,} test events >= 0.01, '
          f'{res.attrs["settings"]["n_groups"]} TFG groups (wall best / median of {a.repeat}, CPU best)')
    rows = [('whole evaluation: matrices -> table (3 recalibrators x SCW/TFG)', t_full, m_full, c_full),
            ('  of which: score matrices -> thresholded events (dev + test)', t_ev, m_ev, c_ev),
            ('  of which: events -> table (sparse_study)', t_study, m_study, c_study),
            ('events -> table, isotonic only (SCW + TFG)', t_one, m_one, c_one),
            ('numpy floor: sort + searchsorted + bincount (test events)', t_floor, m_floor, c_floor)]
    for name, best, med, cpu in rows:
        print(f'  {name:<66} {best:7.3f} s  {med:7.3f} s  cpu {cpu:7.3f} s   {best / t_floor:6.1f}x floor (wall), {cpu / c_floor:6.1f}x (cpu)')
    print(f'  target < 1 s for the whole evaluation: {"met" if t_full < 1 else "NOT met"} ({t_full:.3f} s wall, {c_full:.3f} s cpu)')
    if a.profile:
        pr = cProfile.Profile()
        pr.enable(); full(); pr.disable()
        pstats.Stats(pr).sort_stats('tottime').print_stats(15)


if __name__ == '__main__':
    main()
