"""The documentation build's processor time (user + system, `/usr/bin/time -v`): a baseline checkout against this one.

    git worktree add --detach ../calibkit-main main && ln -s $PWD/.venv ../calibkit-main/.venv
    .venv/bin/python bench/docs_build.py ../calibkit-main                    # 3 interleaved rounds, warm and cold
    .venv/bin/python bench/docs_build.py ../calibkit-main --rounds 5

Each build is `docs/build.py` of its own checkout, run by this .venv's Python in the test command's environment
(`tasks.test_env`: one BLAS thread, quiet, bytecode cached): **cold** with `--fresh` (no staged sources, no doctrees,
no site: a fresh clone's build), **warm** right after it (the doctrees of the previous build present and nothing
changed: a repeated test run's build). The two checkouts alternate within each round (baseline first in odd rounds,
this one first in even rounds) so that a change in the machine's load falls on both. Prints a markdown table: the
median processor time of each (and its range), their ratio, the median wall time, and the load average before and
after. That the two sites are the same is checked apart, by bench/docs_same.py (two builds from one checkout path).
"""
import argparse, os, re, statistics, subprocess, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
from tasks import test_env  # noqa: E402


def build(checkout: Path, fresh: bool) -> tuple[float, float]:
    "One build of `checkout`'s docs: (user + system seconds, wall seconds), from /usr/bin/time -v."
    cmd = ['/usr/bin/time', '-v', str(HERE/'.venv'/'bin'/'python'), str(checkout/'docs'/'build.py')] + \
          (['--fresh'] if fresh else [])
    r = subprocess.run(cmd, cwd=checkout, env=test_env(), capture_output=True, text=True)
    if r.returncode: sys.exit(f'the build of {checkout} failed:\n{r.stdout[-2000:]}{r.stderr[-3000:]}')
    field = lambda name: re.search(rf'{name}: (\S+)', r.stderr).group(1)
    wall = field(r'Elapsed \(wall clock\) time \(h:mm:ss or m:ss\)').split(':')
    return float(field('User time \\(seconds\\)')) + float(field('System time \\(seconds\\)')), \
        sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))


def load() -> str:
    return ', '.join(f'{x:.2f}' for x in os.getloadavg())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('base', type=Path, help='the baseline checkout (e.g. a worktree of main) with .venv beside it')
    ap.add_argument('--rounds', type=int, default=3)
    a = ap.parse_args(argv)
    base, head = a.base.resolve(), HERE
    times = {(who, kind): [] for who in ('base', 'head') for kind in ('cold', 'warm')}
    before = load()
    for r in range(a.rounds):
        order = [('base', base), ('head', head)] if r % 2 == 0 else [('head', head), ('base', base)]
        for who, checkout in order:
            for kind in ('cold', 'warm'):
                times[who, kind].append(build(checkout, fresh=kind == 'cold'))
                cpu, wall = times[who, kind][-1]
                print(f'round {r + 1} {who} {kind}: {cpu:.1f} s processor, {wall:.1f} s wall', file=sys.stderr,
                      flush=True)
    after = load()
    print(f'{a.rounds} interleaved rounds; load average (1, 5, 15 min) {before} before, {after} after\n')
    print('| build | baseline processor s (range) | this branch processor s (range) | ratio | baseline wall s '
          '| this wall s |')
    print('|---|---|---|---|---|---|')
    for kind in ('warm', 'cold'):
        b, h = ([c for c, _ in times[who, kind]] for who in ('base', 'head'))
        bw, hw = (statistics.median(w for _, w in times[who, kind]) for who in ('base', 'head'))
        mb, mh = statistics.median(b), statistics.median(h)
        print(f'| {kind} | {mb:.1f} ({min(b):.1f}–{max(b):.1f}) | {mh:.1f} ({min(h):.1f}–{max(h):.1f}) | '
              f'{mh / mb:.2f}x | {bw:.0f} | {hw:.0f} |')


if __name__ == '__main__':
    main()
