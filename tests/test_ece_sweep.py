"""ECE-sweep (Roelofs, Cain, Shlens & Mozer 2022, §4): the chosen number of bins and the estimate equal to a direct
reading of the definition (Python loops, exact fractions) on small inputs with ties, a hand case, and the report and
command line stating the chosen number."""
import json, sys
from fractions import Fraction
from pathlib import Path
import numpy as np, pandas as pd, pytest
from calibkit.binning import sweep_n_bins, sweep_stats
from calibkit.metrics import ece, ece_sweep

sys.path.insert(0, str(Path(__file__).parent))
from clidata import calibkit_here  # noqa: E402


def bins_by_definition(c, y, b):
    """Equal-mass bins of b: sorted events cut at ranks ⌊jn/b⌋, a cut inside a run of equal confidences moved to the
    run's nearer end (its start on a half split), empty bins dropped: lists of (confidence, outcome)."""
    ev = sorted(zip(c, y), key=lambda e: e[0])
    n, cuts = len(ev), []
    for j in range(1, b):
        k = j * n // b
        a = min(i for i in range(n) if ev[i][0] == ev[k][0])
        h = max(i for i in range(n) if ev[i][0] == ev[k][0]) + 1
        cuts.append(k if a == k else (h if k - a > h - k else a))
    bounds = sorted({0, n, *(k for k in cuts if 0 < k < n)})
    return [ev[s:e] for s, e in zip(bounds, bounds[1:])]


def sweep_by_definition(c, y, p):
    "b* = the largest b with non-decreasing bin accuracies for every b' <= b; the l_p error with b* bins."
    best = 1
    for b in range(1, len(c) + 1):
        acc = [Fraction(sum(o for _, o in e), len(e)) for e in bins_by_definition(c, y, b)]
        if any(a2 < a1 for a1, a2 in zip(acc, acc[1:])): break
        best = b
    total = sum(len(e) / len(c) * abs(sum(q for q, _ in e) / len(e) - sum(o for _, o in e) / len(e)) ** p
                for e in bins_by_definition(c, y, best))
    return total ** (1 / p), best


@pytest.mark.parametrize('seed', range(3))
def test_equals_the_definition(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(1, 30))
        c = np.round(rng.random(n), int(rng.integers(1, 3)))          # one or two digits: ties
        y = (rng.random(n) < c).astype(int)
        for norm, p in (('l2', 2), ('l1', 1)):
            want, b = sweep_by_definition(c.tolist(), y.tolist(), p)
            got = ece_sweep(c, y, norm=norm)
            assert got.n_bins == b and got.estimate == pytest.approx(want, abs=1e-12), (c, y, norm)


def test_hand_case():
    # b = 2: accuracies 1/3, 1; b = 3: 1/2, 1/2, 1 (equal neighbours are monotone); b = 4 (cuts 0, 1, 3, 4): 0, 1/2, 1,
    # 1; b = 5 (cuts 0, 1, 2, 3, 4): 0, 1, 0 decreases. b* = 4, bins {.1} {.2, .3} {.4} {.5, .6}.
    c, y = [.1, .2, .3, .4, .5, .6], [0, 1, 0, 1, 1, 1]
    got = ece_sweep(c, y)
    assert got.n_bins == 4 and sweep_stats(c, y).n.tolist() == [1, 2, 1, 2]
    assert got.estimate == pytest.approx(np.sqrt((.1 ** 2 + 2 * .25 ** 2 + .6 ** 2 + 2 * .45 ** 2) / 6), abs=1e-15)
    assert sweep_n_bins([.5, .5, .5, .9], [1, 0, 1, 0]) == 1     # b = 2 keeps the run of .5 whole: 2/3, then 0
    assert sweep_n_bins([.1, .2, .3], [0, 1, 1]) == 3            # monotone down to single events: b* = n


def test_order_free_and_equal_to_ece_with_the_chosen_bins():
    rng = np.random.default_rng(7)
    q = np.round(rng.beta(2, 3, 5000), 2); y = rng.random(5000) < q
    s = ece_sweep(q, y)
    p = rng.permutation(5000)
    assert ece_sweep(q[p], y[p]) == s
    assert s.estimate == ece(q, y, n_bins=s.n_bins, norm='l2') == ece(q, y, binning='sweep', norm='l2')


def test_report_and_cli_state_the_chosen_bins(tmp_path):
    rng = np.random.default_rng(2)
    q = rng.beta(2, 2, 3000); y = (rng.random(3000) < q ** 1.3).astype(int)
    pd.DataFrame({'conf': q, 'correct': y}).to_csv(tmp_path/'t.csv', index=False)
    r = calibkit_here(None, 'report', tmp_path/'t.csv', '--binning', 'sweep', '--json', '--n-samples', 20)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    b = sweep_n_bins(q, y)
    assert m['meta']['binning'] == 'sweep' and m['meta']['n_bins'] == b
    assert m['stages']['before']['bins_note'] == (f'ECE-sweep (Roelofs et al. 2022) chose {b} equal-mass bins for 3,000 '
                                                  'events (the most with monotone accuracies)')
    ece_l1 = next(x for x in m['metrics'] if x['key'] == 'ece_l1')['estimate']
    assert ece_l1 == pytest.approx(ece(q, y, binning='sweep'), abs=1e-12)
    r = calibkit_here(None, 'report', tmp_path/'t.csv', '--binning', 'sweep', '--n-bins', 5, '--json')
    assert r.returncode == 2 and '--binning sweep chooses its own bins' in r.stderr
    r = calibkit_here(None, 'report', tmp_path/'t.csv', '--binning', 'sweep', '--dask', '--json')
    assert r.returncode == 2 and '--binning sweep searches the sorted events in memory: not with --dask' in r.stderr
