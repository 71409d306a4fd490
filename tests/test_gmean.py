"""how='gmean': a sequence's confidence as the geometric mean of its steps' probabilities (exp of the mean
log-probability, the length-normalised sequence probability of Malinin & Gales 2021, §3), for seq2seq and LLM events:
hand-computed cases, scipy.stats.gmean as an independent route, zeros, and AM–GM as a property."""
import json, math, warnings
import numpy as np, pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import gmean
import calibkit as ck
from calibkit.extractors.llm import openai_sequence_events
from calibkit.extractors.seq2seq import SEQUENCE_HOWS, sequence_events


def test_the_choice_is_offered_everywhere_sequences_are_aggregated():
    assert SEQUENCE_HOWS == ('min', 'mean', 'gmean', 'prod')
    for how in SEQUENCE_HOWS:
        assert ck.extractor('seq2seq', level='sequence', how=how).how == how
        assert ck.extractor('openai_logprobs', how=how).how == how
    with pytest.raises(ValueError, match="how must be one of 'min', 'mean'; got 'gmean'"):
        ck.extractor('seq2seq', level='word', how='gmean')      # a word's pieces: min or mean only, as before


def test_hand_computed():
    ev = sequence_events([[.5, .125], [.9], [.25, .5, 1.]], correct=[1, 0, 1], how='gmean')
    # sqrt(1/16) = 1/4; a single step is itself; cbrt(1/8) = 1/2
    np.testing.assert_allclose(ev.conf, [.25, .9, .5], rtol=1e-15)
    assert ev.attrs['how'] == 'gmean' and ev.length.tolist() == [2, 1, 3]


def test_a_zero_step_gives_zero_without_warning_or_nan():
    with warnings.catch_warnings():
        warnings.simplefilter('error')                           # no divide-by-zero RuntimeWarning leaks out
        ev = sequence_events([[0., .5], [.5, .5], [0.]], correct=[0, 1, 0], how='gmean')
    assert ev.conf.tolist() == [0., .5, 0.]


def test_equals_scipy_gmean_per_sequence():
    rng = np.random.default_rng(0)
    lens = rng.integers(1, 30, 200)
    parts = [rng.uniform(1e-6, 1, n) for n in lens]
    ev = sequence_events(parts, correct=rng.integers(0, 2, len(parts)), how='gmean')
    np.testing.assert_allclose(ev.conf, [gmean(p) for p in parts], rtol=1e-12)


def test_the_extractors_give_the_geometric_mean_of_token_probabilities(tmp_path):
    def record(logprobs, gold):
        content = [{'token': f' t{i}', 'logprob': lp, 'top_logprobs': []} for i, lp in enumerate(logprobs)]
        return {'choices': [{'index': 0, 'message': {'role': 'assistant', 'content': ''.join(c['token'] for c in content)},
                             'logprobs': {'content': content}, 'finish_reason': 'stop'}], 'gold': gold}
    f = tmp_path/'r.jsonl'
    f.write_text(json.dumps(record([-.1, -.5], 't0 t1')) + '\n' + json.dumps(record([-2.], 'x')) + '\n')
    ev = ck.extractor('openai_logprobs', how='gmean').extract(f)
    np.testing.assert_allclose(ev.conf, [math.exp(-.3), math.exp(-2.)], rtol=1e-14)     # exp of the mean logprob
    assert ev.correct.tolist() == [1, 0]
    pd_ev = openai_sequence_events(f, how='gmean')
    assert pd_ev.conf.tolist() == ev.conf.tolist()
    steps = [[.9, .4, .8], [.6]]
    s2s = ck.extractor('seq2seq', level='sequence', how='gmean').extract(steps, correct=[1, 0])
    np.testing.assert_allclose(s2s.conf, [(.9 * .4 * .8) ** (1 / 3), .6], rtol=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1), min_size=1, max_size=8), min_size=1, max_size=6))
def test_am_gm_order(seqs):
    "prod ≤ gmean and min ≤ gmean ≤ mean, per sequence (AM–GM), zeros included."
    ev = {h: sequence_events(seqs, correct=np.zeros(len(seqs), np.uint8), how=h).conf.to_numpy()
          for h in SEQUENCE_HOWS}
    tol = 1e-12
    assert np.isfinite(ev['gmean']).all()
    assert (ev['prod'] <= ev['gmean'] + tol).all()
    assert (ev['min'] <= ev['gmean'] + tol).all() and (ev['gmean'] <= ev['mean'] + tol).all()
