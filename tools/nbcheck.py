"""The notebooks' staleness check (`python3 tasks.py check-notebooks`): every notebook executed in a fresh kernel and
compared with its committed outputs, exactly; `python3 tasks.py notebooks` writes them back. The kernels are forked
from one process that has imported the common libraries (tools/forkkernel.py; `CALIBKIT_KERNEL_FORKS=off`: ordinary
kernels), which saves about 2 s of processor time per notebook.

Every number a notebook commits is a function of committed files and calibkit's code: a model whose results a
notebook reports is a committed artifact (`calibkit.artifacts`, retrained by `python3 tasks.py train` and checked
apart by `python3 tasks.py check-artifacts`), never trained while the notebook runs. So there is no processor
tolerance: a stale output is a code change, and the message says when only numbers moved (the mark of a model
trained in the notebook, or of a computation whose last digits depend on the processor's kernels).
"""
import difflib, hashlib, json, os, re, subprocess, sys, time
from pathlib import Path
from tools import forkkernel   # notebook kernels forked from one process that has imported the common libraries

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT/'nbs'
NB_MAX_BYTES = 2_000_000
NB_WORKERS = 2
NB_CELL_TIMEOUT = 1200
# How long each notebook takes to execute, in seconds (measured 2026-11-26 by `python3 tasks.py check-notebooks`, which
# prints each notebook's time, on a loaded 2-core machine: the ratios are what count). The check starts the longest
# first, so that the two workers finish together: started last, the longest tutorial kept one worker busy alone for
# minutes (the classic longest-processing-time-first rule, Graham 1969). A notebook not listed counts as the longest.
NB_SECONDS = {
    '93_tutorial_seq2seq': 104, '91_tutorial_twitter_pos': 126, '95_tutorial_generation': 85, '40_charts': 64,
    '94_tutorial_sparse_tagsets': 60, '92_tutorial_coref': 57, '16_models_seq2seq': 54, '63_demos': 50,
    '68_artifacts': 48, '41_studies': 47, '14_models_coref': 47, '60_report': 41, '70_dask': 35, '80_howto': 34,
    '81_howto_pretrained_tagger': 40,
    '15_extract_seq2seq': 33, '90_tutorial_plugins': 31, '42_sparse_study': 30, '12_models_taggers': 27,
    '31_multiclass': 15,
    '62_cli': 24, '07_conformal': 22, 'index': 22, '08_stream': 15, '30_recalibrators': 14, '17_extract_llm': 13,
    '11_extract_taggers': 12, '13_extract_coref': 12, '01_events': 11, '05_significance': 10, '10_plugins': 10,
    '18_extractor_base': 10, '20_groupers': 10, '09_torchmetric': 10, '19_default_plugins': 8, '00_config': 7,
    '04_diagnostics': 7, '06_selective': 7, '53_data_ud': 7, '64_main': 7, '51_data_coref': 6, '61_inputs': 5,
    '03_metrics': 4, '65_outdir': 4, '02_binning': 3, '52_data_bundled': 3, '66_tutorial_output': 3,
    '50_data_conll': 2, '67_render': 47,
    '11b_extract_hf': 34, '11c_extract_spacy': 27, '12b_models_tiny_taggers': 52}
# what the study and tutorial notebooks write besides themselves (committed: the README and the docs show it); a
# check leaves it as it found it, so that on another processor it does not rewrite tracked files with other digits.
# The tutorials write there because the runs here name it as their output root (calibkit.tutorials.OUT_ENV).
WRITTEN = ROOT/'sample_outputs'
# an output must not load a script or a style from another host
REMOTE_ASSET = re.compile(r'<(?:script|link|img)[^>]+(?:src|href)=["\']?(?:https?:)?//|cdn\.jsdelivr|unpkg\.com|cdnjs\.|'
                          r'require\.config\(|@import\s+url\(\s*["\']?(?:https?:)?//', re.I)

def directives(cell):
    "The cell's `#| name: value` directives as a dict (lines at the top of the source)."
    out = {}
    for line in ''.join(cell['source']).splitlines():
        if not line.startswith('#|'): break
        k, _, v = line[2:].strip().partition(':')
        out[k.strip()] = v.strip()
    return out


def normalise_text(s: str) -> str:
    "What varies between runs and machines, made constant: absolute paths, kernel cell files, memory addresses."
    s = re.sub(r'(?:/[\w.+@-]+)*/site-packages/', '<site-packages>/', s)
    s = re.sub(r'/tmp/ipykernel_\d+/\d+\.py', '<cell>', s)       # where a warning raised in a cell points: per-kernel names
    s = s.replace(str(ROOT) + os.sep, '').replace(str(ROOT), '.')
    s = re.sub(r'/tmp/[\w.-]*tmp[\w.-]+', '/tmp/tmp…', s)
    return re.sub(r'\b0x[0-9a-fA-F]{6,}\b', '0x…', s)


TQDM_LINE = re.compile(r'\r|\d+%\|| \d+/\d+ \[\d|it/s\]|s/it\]')


def normalise_outputs(outputs):
    "Merge consecutive stream outputs, drop progress-bar lines from stderr, normalise every text."
    out = []
    for o in outputs:
        o = dict(o)
        if o['output_type'] == 'stream':
            text = ''.join(o['text'])
            if o['name'] == 'stderr': text = ''.join(l for l in text.splitlines(True) if not TQDM_LINE.search(l))
            if out and out[-1]['output_type'] == 'stream' and out[-1]['name'] == o['name']:
                out[-1]['text'] += text
                continue
            o['text'] = text
        elif 'data' in o:
            o['data'] = {k: normalise_text(''.join(v)) if isinstance(v, (str, list)) and (k.startswith('text/') or k.endswith('+xml')) else v
                         for k, v in o['data'].items()}
        out.append(o)
    for o in out:
        if o['output_type'] == 'stream': o['text'] = normalise_text(o['text'])
    return [o for o in out if not (o['output_type'] == 'stream' and not o['text'])]


def canonical(nb: dict) -> str:
    "The notebook's text exactly as `nbdev-clean` writes it (outputs kept, no execution counts or metadata)."
    from fastcore.nbio import nb2str
    from nbdev.clean import clean_nb
    from nbdev.config import get_config
    cfg = get_config(path=ROOT)           # the project's [tool.nbdev], whatever the working directory
    keys = lambda k: cfg.get(k) or []
    clean_nb(nb, cfg.clear_all, keys('allowed_metadata_keys'), keys('allowed_cell_metadata_keys'), cfg.clean_ids,
             keys('allowed_out_metadata_keys'))
    return nb2str(nb)


def execute(path, env=None) -> str:
    """Execute the notebook at `path` (cwd nbs/, environment `env`, default this process's, with installed plugins
    not loaded) and return its canonical text with normalised outputs. Raises RuntimeError naming the cell that failed."""
    import nbformat
    path = Path(path)
    for attempt in range(KERNEL_STARTS):
        nb = nbformat.read(path, as_version=4)
        try: return _run(path, nb, env)
        except RuntimeError as e:                      # a kernel that died starting (a port race between parallel
            if KERNEL_DIED not in str(e) or attempt == KERNEL_STARTS - 1: raise   # starts): started again, once
    raise AssertionError('unreachable')


KERNEL_STARTS = 2   # tries to start a notebook's kernel
KERNEL_DIED = 'Kernel died before replying to kernel_info'   # nbclient's message for a kernel that died starting


def _run(path: Path, nb, env) -> str:
    "Execute `nb` (read from `path`) in a new kernel; its canonical text."
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    import nbformat
    client = NotebookClient(nb, timeout=NB_CELL_TIMEOUT, kernel_name='python3', record_timing=False,
                            kernel_manager_class=forkkernel.manager_class(),
                            resources={'metadata': {'path': str(NBS)}})
    # the kernel's own stderr (its start-up warnings) stays off the console; cell errors still reach the outputs
    env = {**(os.environ if env is None else env), 'IN_TEST': '1'}
    with client.setup_kernel(env=env, cwd=str(NBS), stderr=subprocess.DEVNULL):
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != 'code': continue
            if directives(cell).get('eval', '').lower() == 'false':
                cell.outputs = []
                continue
            try: client.execute_cell(cell, i)
            except CellExecutionError as e:
                raise RuntimeError(f'{path.name}: cell {i} failed:\n{cell_head(cell)}\n{str(e).strip()[-1500:]}') from None
            cell.outputs = nbformat.from_dict(normalise_outputs(cell.outputs))
    d = json.loads(nbformat.writes(nb))
    return canonical(d)


def cell_head(cell, n=3):
    return '\n'.join('    ' + l for l in ''.join(cell['source']).splitlines()[:n])


def output_text(outputs):
    "A readable rendering of a cell's outputs, for diffs."
    lines = []
    for o in outputs:
        if o['output_type'] == 'stream': lines += [f'[{o["name"]}] ' + l for l in ''.join(o['text']).splitlines()]
        elif o['output_type'] == 'error': lines.append(f'[error] {o["ename"]}: {o["evalue"]}')
        else:
            data = o.get('data', {})
            key = 'text/plain' if 'text/plain' in data else next(iter(data), '')
            for k in data:
                if k != key: lines.append(f'[{k}] sha256 {hashlib.sha256(json.dumps(data[k]).encode()).hexdigest()[:12]}')
            lines += [f'[{key}] ' + l for l in ''.join(data.get(key, '')).splitlines()]
    return lines


# a number as outputs print it: sign (also U+2212, as charts print it), digits, decimals, exponent
NUMBER = re.compile(r'([-+−]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)')
SVG_SIZE = re.compile(r'<svg\b[^>]*?\bwidth="([\d.]+)"[^>]*?\bheight="([\d.]+)"')


def pieces(outputs) -> list[tuple[str, str, float]]:
    """A cell's outputs as (kind, text, scale): the scale a number's difference is taken relative to, besides the
    number itself (an SVG's width or height, whichever is larger, for its pixel coordinates; otherwise 0)."""
    out = []
    for o in outputs:
        kind = o['output_type']
        if kind == 'stream': out.append((f'stream {o["name"]}', ''.join(o['text']), 0.0))
        elif kind == 'error': out.append(('error', json.dumps(o, sort_keys=True), 0.0))
        else:
            out.append((f'{kind} metadata', json.dumps(o.get('metadata', {}), sort_keys=True), 0.0))
            for k, v in sorted(o.get('data', {}).items()):
                text = ''.join(v) if isinstance(v, (str, list)) else json.dumps(v, sort_keys=True)
                size = SVG_SIZE.search(text) if k == 'image/svg+xml' else None
                out.append((k, text, max(map(float, size.groups())) if size else 0.0))
    return out


def unit(number: str) -> float:
    "One unit of the last digit `number` shows: '0.0922' → 1e-4, '3.1e-05' → 1e-6, '1e3' → 1e3, '12' → 0 (integers are exact)."
    mant, _, exp = number.lower().partition('e')
    if '.' not in mant and not exp: return 0.0
    return 10.0 ** (int(exp or 0) - len(mant.partition('.')[2]))


def numbers_moved(committed, fresh) -> tuple[float, str] | None:
    """How far only the numbers of the outputs `fresh` moved from `committed` (a cell's output lists), relative, with
    the pair of numbers that moved most; None when they differ in more than numbers (other text, other outputs).
    A pair a, b needs max(0, |a - b| - u) / max(|a|, |b|, scale), u one unit of the last digit either shows.
    Runs of white space count as one (a table's columns realign when a number's width changes)."""
    a, b = pieces(committed), pieces(fresh)
    text = lambda ps: [(k, [re.sub(r'\s+', ' ', w) for w in NUMBER.split(t)[0::2]]) for k, t, _ in ps]
    if text(a) != text(b): return None
    worst = (0.0, '')
    for (_, ta, scale), (_, tb, _) in zip(a, b):
        for x, y in zip(NUMBER.findall(ta), NUMBER.findall(tb)):
            if x == y: continue
            fx, fy = (float(v.replace('−', '-')) for v in (x, y))
            slack = max(unit(x), unit(y)) * (1 + 1e-9)        # (1e-9: the unit's own rounding in binary)
            den = max(abs(fx), abs(fy), scale)               # 0 only for two zeros written apart ('0.0000', '0')
            need = max(0.0, abs(fx - fy) - slack) / den if den else 0.0
            if need > worst[0] or not worst[1]: worst = (need, f'{x} → {y}')
    return worst


def output_diff(ca, cb) -> str:
    "The first lines of a diff between two cells' outputs, indented under the cell's first lines."
    diff = list(difflib.unified_diff(output_text(ca.get('outputs', [])), output_text(cb.get('outputs', [])),
                                     'committed', 'now', n=1, lineterm=''))
    more = f'\n    ... ({len(diff) - 16} more diff lines)' if len(diff) > 16 else ''
    body = '\n'.join('    ' + l[:160] for l in diff[:16]) if diff else '    (same text, other metadata or formatting)'
    return f'{cell_head(ca)}\n{body}{more}'


TOLERANCE_GONE = ('`#| tolerance:` is no longer read: outputs are compared exactly; a model whose numbers a notebook '
                  'shows is a committed artifact (calibkit.artifacts)')


def cell_problem(name, i, ca, cb) -> str | None:
    "Why cell `i` is stale (its committed form `ca`, its fresh execution `cb`), saying which kind of change; None if it is not."
    if ca == cb: return None
    rest = lambda c: {k: v for k, v in c.items() if k != 'outputs'}
    found = numbers_moved(ca.get('outputs', []), cb.get('outputs', [])) if rest(ca) == rest(cb) else None
    hint = (f' (only numbers differ, by up to {found[0]:.1e} relative ({found[1]}): if they come from a model trained '
            'while the notebook runs, make it a committed artifact, calibkit.artifacts)') if found else ''
    return f'{name}: cell {i} has stale outputs, compared exactly: a code change{hint}:\n{output_diff(ca, cb)}'


def stale(name, committed: str, fresh: str) -> str | None:
    """What makes the committed notebook text stale against a fresh execution: the first stale cell and how many
    others there are; None when every output matches exactly."""
    if committed == fresh: return None
    a, b = json.loads(committed), json.loads(fresh)
    if len(a['cells']) != len(b['cells']) or {**a, 'cells': None} != {**b, 'cells': None}:
        return f'{name}: stale (cells added or removed, or notebook formatting differs)'
    problems = [p for i, (ca, cb) in enumerate(zip(a['cells'], b['cells'])) if (p := cell_problem(name, i, ca, cb))]
    if not problems: return None
    return problems[0] + (f'\n    (and {len(problems) - 1} more stale cell(s))' if len(problems) > 1 else '')


def static_problems(path) -> list[str]:
    "What is wrong with a committed notebook without running it: size, remote assets, no outputs at all."
    path, problems = Path(path), []
    size = path.stat().st_size
    if size > NB_MAX_BYTES: problems.append(f'{path.name}: {size / 1e6:.1f} MB, over the {NB_MAX_BYTES / 1e6:.0f} MB limit (chart bins, not events)')
    cells = json.loads(path.read_text())['cells']
    for i, c in enumerate(cells):
        for o in c.get('outputs', []):
            m = REMOTE_ASSET.search(json.dumps(o.get('data', {})))
            if m:
                problems.append(f'{path.name}: cell {i} output loads from another host ({m.group(0)!r}); charts must be inline SVG')
                break
    problems += [f'{path.name}: cell {i}: {TOLERANCE_GONE}' for i, c in enumerate(cells) if 'tolerance' in directives(c)]
    if not any(c.get('outputs') for c in cells):
        problems.append(f'{path.name}: has no outputs at all (run `python3 tasks.py notebooks {path.name}` and commit it)')
    return problems


def nb_job(args):
    """One notebook for the pool: (name, problem or None, seconds, whether it was written back). Writing back keeps
    the committed notebook when it matches."""
    path, write, env = args
    t0 = time.monotonic()
    try: fresh = execute(path, env)
    except RuntimeError as e: return path.name, str(e), time.monotonic() - t0, False
    try: problem = stale(path.name, path.read_text(), fresh)
    except ValueError as e: return path.name, f'{path.name}: {e}', time.monotonic() - t0, False
    if write:
        if problem: path.write_text(fresh)
        return path.name, None, time.monotonic() - t0, bool(problem)
    return path.name, problem, time.monotonic() - t0, False


def notebook_paths(names):
    # a notebook is named with or without its suffix (`tasks.py notebooks 17_extract_llm`)
    paths = [NBS/Path(n).with_suffix('.ipynb').name for n in names] if names else sorted(NBS.glob('*.ipynb'))
    missing = [p.name for p in paths if not p.exists()]
    if missing: sys.exit(f'no such notebook in nbs/: {", ".join(missing)}')
    return paths


def contents(top: Path) -> dict[Path, bytes]:
    "Every file under `top` with its bytes."
    return {p: p.read_bytes() for p in sorted(top.rglob('*')) if p.is_file()} if top.exists() else {}


def restore(before: dict[Path, bytes]) -> list[Path]:
    "Put back (atomically) the files of `before` that were changed or removed since; return them. New files are left."
    changed = [p for p, b in before.items() if not p.is_file() or p.read_bytes() != b]
    for p in changed:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f'.{p.name}.calibkit-restore')
        tmp.write_bytes(before[p])
        os.replace(tmp, p)
    return changed


def longest_first(paths: list[Path]) -> list[Path]:
    "`paths` in the order the check starts them: by NB_SECONDS, longest first; notebooks not listed before all, by name."
    return sorted(paths, key=lambda p: (-NB_SECONDS.get(p.stem, float('inf')), p.name))


def run_notebooks(write: bool, names=(), env=None):
    """Execute notebooks with NB_WORKERS processes in environment `env`; write them back (`write`) or fail on any stale
    output. The files under `WRITTEN` are left as they were found by a check, and by a write that kept every notebook."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    paths = notebook_paths(names)
    env = {**(os.environ if env is None else env), 'CALIBKIT_TUTORIAL_OUT': str(WRITTEN)}
    before, written = contents(WRITTEN), []
    problems = [] if write else [p for path in paths for p in static_problems(path)]
    t0 = time.monotonic()
    print(f'executing {len(paths)} notebook(s) with {NB_WORKERS} workers, the longest first', flush=True)
    spent = {}
    with forkkernel.serving(env) as env, ProcessPoolExecutor(NB_WORKERS) as pool:
        futures = [pool.submit(nb_job, (p, write, env)) for p in longest_first(paths)]
        for f in as_completed(futures):
            name, problem, secs, wrote = f.result()
            print(f'  {"FAIL" if problem else "ok  "} {name} ({secs:.0f} s){" written" if wrote else ""}', flush=True)
            spent[name] = secs
            if problem: problems.append(problem)
            if wrote: written.append(name)
    slowest = ', '.join(f'{n} {s:.0f}' for n, s in sorted(spent.items(), key=lambda kv: -kv[1])[:5])
    print(f'{len(paths)} notebook(s) executed ({time.monotonic() - t0:.0f} s; {sum(spent.values()):.0f} s of execution '
          f'on {NB_WORKERS} workers; slowest, in s: {slowest})', flush=True)
    if not written and (restored := restore(before)):
        print(f'note: put back {len(restored)} file(s) under {WRITTEN.name}/ that the notebooks rewrote (every notebook '
              'matched its committed outputs: the files stay as committed with them)', flush=True)
    if problems:
        sys.exit('\n\n'.join(problems) + f'\n\n{len(problems)} notebook problem(s); '
                 '`python3 tasks.py notebooks NB` re-executes a notebook and writes its outputs back')
    print('ok: every notebook\'s committed outputs match a fresh execution' if not write else
          f'done: {len(written)} notebook(s) written back, {len(paths) - len(written)} kept (they matched)', flush=True)


