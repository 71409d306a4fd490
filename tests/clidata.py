"Synthetic input files shared by the command-line tests (test_cli.py, test_cli_scripting.py)."
from pathlib import Path
import numpy as np, pandas as pd


def write_events(d: Path, *, seed: int, n: int, labels: dict, power: float, k: int, alpha: float, rows: int,
                 scores_name: str) -> pd.DataFrame:
    """Seeded labelled events (q ~ Beta(2, 2), correct ~ Bernoulli(q**power), labels drawn with the given probabilities):
    the first half to dev.csv, the second to test.csv and test.jsonl; and a `rows` × `k` Dirichlet(alpha) score matrix
    with gold drawn from each row, to `scores_name` (.npz). Returns the events."""
    rng = np.random.default_rng(seed)
    q = rng.beta(2, 2, n)
    df = pd.DataFrame(dict(conf=q, correct=(rng.random(n) < q ** power).astype(int),
                           label=rng.choice(list(labels), n, p=list(labels.values()))))
    df[:n // 2].to_csv(d/'dev.csv', index=False)
    df[n // 2:].to_csv(d/'test.csv', index=False)
    df[n // 2:].to_json(d/'test.jsonl', orient='records', lines=True)
    s = rng.dirichlet(np.ones(k) * alpha, size=rows)
    np.savez(d/scores_name, scores=s, gold=np.array([rng.choice(k, p=p) for p in s]))
    return df
