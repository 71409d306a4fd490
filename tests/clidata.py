"What the command-line tests share (test_cli*.py): the installed `calibkit` command, a quiet runner, seeded input files."
import os, subprocess, sys
from pathlib import Path
import numpy as np, pandas as pd

EXE = str(Path(sys.executable).parent/'calibkit')
ENV = dict(os.environ, CALIBKIT_QUIET='1')


def calibkit(*args, cwd=None, env=None, stdin=None) -> subprocess.CompletedProcess:
    "Run the installed `calibkit` with `args` (quiet, umask 022 so file modes are predictable), capturing text output."
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, cwd=cwd, env={**ENV, **(env or {})},
                          input=stdin, preexec_fn=lambda: os.umask(0o022))


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


def calibkit_here(capsys, *args) -> subprocess.CompletedProcess:
    """`calibkit *args` in this process: `calibkit.cli.main`, which the console script calls, with quiet output; its
    exit status (argparse's usage errors included) and what it wrote, as `calibkit` gives them (caught by pytest's
    `capsys` fixture, or by redirecting sys.stdout and sys.stderr when `capsys` is None). A `calibkit` process spends
    seconds importing numpy, pandas, scikit-learn and Altair: the tests whose point is not the process boundary (exit
    statuses seen by a shell, signals, umask, standard input) call this."""
    import contextlib, io
    from calibkit.cli import main
    if capsys is not None: capsys.readouterr()              # what the test printed before is not the command's
    quiet = os.environ.get('CALIBKIT_QUIET')
    os.environ['CALIBKIT_QUIET'] = '1'
    out, err = io.StringIO(), io.StringIO()
    try:
        with (contextlib.nullcontext() if capsys is not None else contextlib.redirect_stdout(out)), \
             (contextlib.nullcontext() if capsys is not None else contextlib.redirect_stderr(err)):
            try: code = main([str(a) for a in args])
            except SystemExit as e: code = e.code
    finally:
        if quiet is None: del os.environ['CALIBKIT_QUIET']
        else: os.environ['CALIBKIT_QUIET'] = quiet
    stdout, stderr = capsys.readouterr() if capsys is not None else (out.getvalue(), err.getvalue())
    return subprocess.CompletedProcess(['calibkit', *map(str, args)], code, stdout, stderr)
