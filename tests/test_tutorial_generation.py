"""Tutorial 95 (generation output in the OpenAI format): the response conventions it writes (tokens with a leading
space, no stop token, `gold` and `gold_tokens` beside the response) read back through the registry and the command
line to hand-computed events and metrics; and the notebook reaches data and output only through the package."""
import ast, json, math, subprocess, sys
from pathlib import Path
import numpy as np, pytest
import calibkit as ck

NB = Path(__file__).resolve().parents[1]/'nbs'/'95_tutorial_generation.ipynb'


def response(tokens, gold, finish='stop'):
    "A chat completion as the tutorial writes it: (token, probability) pairs, top-1 alternative, gold beside it."
    content = [{'token': t, 'logprob': math.log(p), 'bytes': list(t.encode()),
                'top_logprobs': [{'token': t, 'logprob': math.log(p), 'bytes': list(t.encode())}]} for t, p in tokens]
    return {'id': 'chatcmpl-ewt-0', 'object': 'chat.completion', 'created': 0, 'model': 'calibkit-gru64-ewt',
            'choices': [{'index': 0, 'message': {'role': 'assistant', 'content': ''.join(t for t, _ in tokens)},
                         'logprobs': {'content': content, 'refusal': None}, 'finish_reason': finish}],
            'gold': gold, 'gold_tokens': [' ' + w for w in gold.split()]}


# min .3 / mean .6 / prod .27, right; min .8, wrong (NOUN for VERB); .35, stopped early, wrong; min .7, right
TEST = [response([(' a', .9), (' DET', .3)], 'a DET'), response([(' dog', .8), (' NOUN', .8)], 'dog VERB'),
        response([(' run', .35)], 'run VERB', finish='length'), response([(' x', .7), (' X', .9)], 'x X')]
# one-token responses: confidences .2 .3 .4 | .6 .7 .9, right 0 0 1 | 1 0 1 (2 equal-mass bins: accuracy 1/3, 2/3)
FIT = [response([(' w', p)], 'w' if y else 'v') for p, y in zip((.2, .3, .4, .6, .7, .9), (0, 0, 1, 1, 0, 1))]


def write(path, records):
    path.write_text(''.join(json.dumps(r) + '\n' for r in records), encoding='utf-8')
    return path


def test_sequence_events_of_the_tutorials_responses_are_hand_computed(tmp_path):
    f = write(tmp_path/'test.jsonl', TEST)
    want = {'min': [.3, .8, .35, .7], 'mean': [.6, .8, .35, .8], 'prod': [.27, .64, .35, .63]}
    for how, conf in want.items():
        ev = ck.extractor('openai_logprobs', how=how).extract(f)
        np.testing.assert_allclose(ev.conf, conf, rtol=1e-12)
        assert ev.correct.tolist() == [1, 0, 0, 1]          # the leading space is stripped before the exact match
    assert ev.answer.tolist() == [' a DET', ' dog NOUN', ' run', ' x X']


def test_token_events_against_the_gold_pieces(tmp_path):
    ev = ck.extractor('openai_logprobs', level='token').extract(write(tmp_path/'test.jsonl', TEST))
    np.testing.assert_allclose(ev.conf, [.9, .3, .8, .8, .35, .7, .9], rtol=1e-12)
    assert ev.correct.tolist() == [1, 1, 1, 0, 1, 1, 1]
    assert ev.attrs['n_gold_beyond'] == 1                   # ' VERB' of the response cut short: no event


def test_cli_recalibrated_on_held_out_responses_matches_the_hand_computation(tmp_path):
    write(tmp_path/'test.jsonl', TEST); write(tmp_path/'calib.jsonl', FIT)
    cmd = ['report', 'test.jsonl', '--extractor', 'openai_logprobs', '--extractor-param', 'how=min',
           '--fit', 'calib.jsonl', '--recalibrator', 'histogram', '--param', 'n_bins=2', '--n-bins', '2',
           '--json', '--quiet']
    run = subprocess.run([sys.executable, '-m', 'calibkit', *cmd], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    rep = json.loads(run.stdout)
    est = {(m['stage'], m['key']): m['estimate'] for m in rep['metrics']}
    # before: bins {.3, .35} (mean .325, accuracy .5) and {.7, .8} (.75, .5): ECE (.175 + .25) / 2
    assert est['before', 'ece_l1'] == pytest.approx(.2125, abs=1e-12)
    # after: .3, .35 -> 1/3 and .7, .8 -> 2/3 (the fit bins' accuracies); each bin half right: ECE 1/6
    assert est['after', 'ece_l1'] == pytest.approx(1 / 6, abs=1e-12)
    assert rep['meta']['fit_events'] == 6 and rep['summary']['events'] == 4
    # the same in Python, through the registry, as the tutorial does it
    ev = ck.extractor('openai_logprobs', how='min').extract(tmp_path/'test.jsonl')
    fit = ck.extractor('openai_logprobs', how='min').extract(tmp_path/'calib.jsonl')
    after = ck.recalibrator('histogram', n_bins=2).fit(fit).transform(ev)
    np.testing.assert_allclose(after.conf, [1 / 3, 2 / 3, 1 / 3, 2 / 3], rtol=1e-12)
    assert ck.ece(after, n_bins=2) == pytest.approx(est['after', 'ece_l1'], abs=1e-12)


def code_cells():
    return [''.join(c['source']) for c in json.loads(NB.read_text())['cells'] if c['cell_type'] == 'code']


def test_notebook_takes_data_and_output_folder_from_the_package():
    """Tutorial 95 runs from an installed wheel: data through `calibkit.datasets.bundled`, every file it writes in
    the folder `calibkit.tutorials.output_folder` made, no path into the checkout."""
    src = '\n'.join(code_cells())
    assert "bundled('ud_ewt')" in src and "output_folder('generation'" in src
    for bad in ('nbs/', '../', 'sample_outputs', '__file__', 'calibkit/data', 'os.chdir', 'Path.cwd'):
        assert bad not in src, bad
    tree = ast.parse('\n'.join(l for l in src.splitlines() if not l.startswith(('#|', '%'))))
    opens = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, 'id', None) == 'open']
    assert opens and all(ast.unparse(n.args[0]).startswith('OUT') for n in opens)     # written below OUT only
    runs = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == 'subprocess.run']
    assert runs and all(any(k.arg == 'cwd' and ast.unparse(k.value) == 'OUT' for k in n.keywords) for n in runs)
