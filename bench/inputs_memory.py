"""Peak memory of reading an events CSV: calibkit's `read_events` against pandas' `read_csv` of the same file.

    .venv/bin/python bench/inputs_memory.py              # 10^7 rows (about 150 MB), the run recorded in bench/README.md
    .venv/bin/python bench/inputs_memory.py --rows 1e6   # a quick look

Each reader runs in a fresh subprocess that reports its own peak RSS (`resource.getrusage(...).ru_maxrss`), after a
warm-up read of the page cache. The target (issue 23): calibkit at most 1.3x pandas' peak. Exit status 1 if missed.
"""
import argparse, json, resource, subprocess, sys, tempfile
from pathlib import Path
import numpy as np

READERS = {
    'pandas.read_csv': "import pandas as pd; df = pd.read_csv(PATH)",
    'calibkit read_events': "from calibkit.inputs import read_events; df = read_events(PATH)",
}
PROBE = "import resource, sys; PATH = sys.argv[1]; {read}; print(len(df), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
TARGET = 1.3


def write_csv(path: Path, rows: int, seed: int = 0) -> None:
    "conf (6 decimals), correct (0/1), label (one of 45 tags), written in chunks of 10^6 rows."
    rng = np.random.default_rng(seed)
    tags = np.array([f'T{i}' for i in range(45)])
    with open(path, 'w') as f:
        f.write('conf,correct,label\n')
        for s in range(0, rows, 10**6):
            m = min(10**6, rows - s)
            q = rng.beta(2, 5, m)
            y = (rng.random(m) < q).astype(int)
            lab = tags[rng.integers(0, 45, m)]
            f.write(''.join(f'{a:.6f},{b},{c}\n' for a, b, c in zip(q, y, lab)))


def peak_kib(read: str, path: Path) -> tuple[int, int]:
    """Rows read and peak RSS (KiB) of a fresh interpreter running `read`, in the file's folder: the current folder
    cannot shadow the calibkit on PYTHONPATH (`python -c` puts it first on sys.path)."""
    r = subprocess.run([sys.executable, '-c', PROBE.format(read=read), str(path)], capture_output=True, text=True, check=True,
                       cwd=path.parent)
    n, kib = map(int, r.stdout.split())
    return n, kib


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rows', type=float, default=1e7)
    args = ap.parse_args()
    rows = int(args.rows)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d)/'events.csv'
        write_csv(path, rows)
        path.read_bytes()                                   # page cache warm for both readers
        got = {name: peak_kib(read, path) for name, read in READERS.items()}
        size = path.stat().st_size
    base = got['pandas.read_csv'][1]
    out = {name: dict(rows=n, peak_rss_mb=round(kib / 1024), ratio=round(kib / base, 2)) for name, (n, kib) in got.items()}
    import calibkit
    print(json.dumps(dict(calibkit=str(Path(calibkit.__file__).parent), file_mb=round(size / 2**20), readers=out), indent=1))
    assert all(v['rows'] == rows for v in out.values())
    return 0 if out['calibkit read_events']['ratio'] <= TARGET else 1


if __name__ == '__main__':
    sys.exit(main())
