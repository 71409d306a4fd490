"""Speed and peak memory of calibkit's JSON Lines readers on a large file of OpenAI-format responses (issue 37).

    .venv/bin/python bench/readers.py              # a 200 MB file, the run recorded in bench/README.md
    .venv/bin/python bench/readers.py --mb 20      # a quick look

The file: chat completions as an API returns them with `logprobs=true, top_logprobs=5` (each token with its
log-probability, UTF-8 bytes and 5 alternatives), `gold` and `gold_tokens` beside each response, written into a temporary folder.
Each reader runs in a fresh interpreter, after a warm-up read of the page cache, and reports its wall time and its
peak RSS above the RSS it had once its imports were done (`ru_maxrss` minus the resident size after the imports).
Targets (issue 37): at least 40 MB/s and a peak at most 2x the file. Exit status 1 if a target is missed.
"""
import argparse, json, subprocess, sys, tempfile
from pathlib import Path
import numpy as np

READERS = {
    'report --extractor openai_logprobs (load_input)':
        ("import calibkit; from calibkit.inputs import load_input; x = calibkit.extractor('openai_logprobs')",
         "ev = load_input(PATH, extractor=x); n = len(ev)"),
    'openai_sequence_events(path)':
        ("from calibkit.extractors.llm import openai_sequence_events",
         "ev = openai_sequence_events(PATH); n = len(ev)"),
    'openai_token_events(path)':
        ("from calibkit.extractors.llm import openai_token_events",
         "ev = openai_token_events(PATH); n = len(ev)"),
}
PROBE = """import resource, sys, time
PATH = sys.argv[1]
{imports}
with open('/proc/self/statm') as f: base = int(f.read().split()[1]) * resource.getpagesize() // 1024
t = time.perf_counter()
{read}
dt = time.perf_counter() - t
print(n, dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base)"""
TARGET_MB_S, TARGET_RATIO = 40, 2.0


def write_responses(path: Path, mb: float, seed: int = 0) -> int:
    "OpenAI chat completions with top-5 logprobs, one per line, until the file holds `mb` MB; returns the count."
    rng = np.random.default_rng(seed)
    vocab = [' the', ' a', ' NOUN', ' VERB', ' DET', ' ADJ', ' run', ' dog', ' go', ' PROPN', ' be', '.', ',', ' of']
    entry = lambda t, lp: {'token': t, 'logprob': round(lp, 6), 'bytes': list(t.encode())}
    n, size = 0, 0
    with open(path, 'w', encoding='utf-8') as f:
        while size < mb * 1e6:
            m = int(rng.integers(4, 30))
            ids = rng.integers(0, len(vocab), (m, 5))
            lps = np.sort(-rng.exponential(1.0, (m, 5)), 1)[:, ::-1]
            content = [entry(vocab[i[0]], float(l[0])) | {'top_logprobs': [entry(vocab[a], float(b))
                                                                              for a, b in zip(i, l)]}
                       for i, l in zip(ids, lps)]
            text = ''.join(c['token'] for c in content)
            rec = {'id': f'chatcmpl-{n}', 'object': 'chat.completion', 'created': 0, 'model': 'bench',
                   'choices': [{'index': 0, 'message': {'role': 'assistant', 'content': text},
                                'logprobs': {'content': content, 'refusal': None}, 'finish_reason': 'stop'}],
                   'gold': text.strip() if rng.random() < .5 else 'other', 'gold_tokens': [c['token'] for c in content]}
            line = json.dumps(rec, separators=(',', ':')) + '\n'
            f.write(line)
            size += len(line)
            n += 1
    return n


def measure(imports: str, read: str, path: Path) -> tuple[int, float, int]:
    """(events, seconds, peak KiB above the post-import RSS) of a fresh interpreter, in the file's folder: the current
    folder cannot shadow the calibkit on PYTHONPATH (`python -c` puts it first on sys.path)."""
    r = subprocess.run([sys.executable, '-c', PROBE.format(imports=imports, read=read), str(path)],
                       capture_output=True, text=True, check=True, cwd=path.parent)
    n, dt, kib = r.stdout.split()
    return int(n), float(dt), int(kib)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--mb', type=float, default=200)
    ap.add_argument('--readers', default=','.join(map(str, range(len(READERS)))), help='indices into READERS')
    args = ap.parse_args()
    chosen = [list(READERS)[int(i)] for i in args.readers.split(',')]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d)/'responses.jsonl'
        n = write_responses(path, args.mb)
        size = path.stat().st_size
        path.read_bytes()                                   # page cache warm
        rows = []
        for name in chosen:
            events, dt, kib = measure(*READERS[name], path)
            rows.append((name, events, dt, size / 1e6 / dt, kib * 1024 / 1e6, kib * 1024 / size))
    import calibkit
    print(f'calibkit {Path(calibkit.__file__).parent}; file {size / 1e6:.0f} MB, {n:,} responses')
    print('| reader | events | seconds | MB/s | peak above imports (MB) | × file |')
    print('|---|---:|---:|---:|---:|---:|')
    for name, events, dt, speed, mb, ratio in rows:
        print(f'| {name} | {events:,} | {dt:.1f} | {speed:.0f} | {mb:,.0f} | {ratio:.2f} |')
    ok = all(speed >= TARGET_MB_S and ratio <= TARGET_RATIO for *_, speed, _, ratio in rows)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
