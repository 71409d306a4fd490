"""Verbalized confidence and P(True) from OpenAI-compatible JSON (`calibkit.extractors.llm`): the statement forms,
the word map, rejected and unreadable responses counted with file:line, hand-computed P(True), the extractors,
the CLI."""
import json, math, subprocess, sys, warnings
import numpy as np, pytest
from hypothesis import given, settings, strategies as st
import calibkit
from calibkit.extractors.llm import (VERBAL_WORDS, p_true_events, parse_verbal_confidence, read_openai_texts, token_key,
                                     verbalized_events)


def said(text, **fields):
    "A chat.completion response whose one choice says `text`, without logprobs."
    return {'id': 'chatcmpl-1', 'object': 'chat.completion', 'model': 'gpt-4o-mini',
            'choices': [{'index': 0, 'message': {'role': 'assistant', 'content': text}, 'logprobs': None,
                         'finish_reason': 'stop'}], **fields}


def judged(top, correct, legacy=False):
    "A response to 'is the proposed answer true?' whose first generated token has the alternatives `top`."
    tok, lp = top[0] if top else ('True', -0.1)
    if legacy:
        return {'object': 'text_completion', 'correct': correct,
                'choices': [{'text': tok, 'logprobs': {'tokens': [tok], 'token_logprobs': [lp],
                                                       'top_logprobs': [dict(top)]}}]}
    entry = {'token': tok, 'logprob': lp, 'top_logprobs': [{'token': t, 'logprob': v} for t, v in top]}
    return {'object': 'chat.completion', 'correct': correct,
            'choices': [{'index': 0, 'message': {'role': 'assistant', 'content': tok},
                         'logprobs': {'content': [entry]}}]}


def write(tmp_path, records, name='r.jsonl'):
    p = tmp_path/name
    p.write_text(''.join((r if isinstance(r, str) else json.dumps(r)) + '\n' for r in records))
    return p


@pytest.mark.parametrize('text, conf', [
    ('Paris. Confidence: 80%', .8), ('Paris\nconfidence: 0.8', .8), ('Paris\nProbability: .35', .35),
    ('Confidence (0-100): 75', .75), ('Paris, confidence level is 90 percent', .9), ('Paris, 0.8', .8),
    ('Paris (80%)', .8), ('Paris 80%.', .8), ('Paris (high)', .9), ('Paris [Medium]', .5), ('Paris (low)', .2),
    ('Confidence: high', .9), ('I have low confidence in Paris.', .2),
    ('Guess: Paris\nConfidence: Almost no chance', .02),
    ('Guess: Paris\nConfidence: highly unlikely', .05), ('Guess: Paris\nConfidence: unlikely', .2),
    ('Confidence: 1', 1.0), ('Confidence: 0', 0.0), ('Confidence: 100%', 1.0),
    ('Confidence: 30%. On reflection, confidence: 60%', .6), ('Confidence: 8/10', .8),
    ('confidence: 7 out of 10', .7), ('Probability: 3 / 4', .75)])
def test_statement_forms(text, conf):
    p = parse_verbal_confidence([text])
    assert p.status.tolist() == ['ok'] and p.conf.iloc[0] == pytest.approx(conf, abs=1e-15), p


@pytest.mark.parametrize('text', ['Paris', 'The answer is 42', 'Lyon is unlikely', 'Version 2.0.8', 'It is low',
                                  'Confidence: unsure', 'Paris (maybe)', 'Confidence: 3/0'])
def test_no_statement(text):
    assert parse_verbal_confidence([text]).status.tolist() == ['none']


def test_out_of_range_rejected_and_scale():
    p = parse_verbal_confidence(['Confidence: 120%', 'Confidence: 150', 'x 1.5', 'Confidence: 0.5'])
    assert p.status.tolist() == ['range', 'range', 'range', 'ok']
    assert p.conf.tolist()[:3] == pytest.approx([1.2, 1.5, 1.5])
    assert parse_verbal_confidence(['Confidence: 1', 'Confidence: 80%'], scale='percent').conf.tolist() == [.01, .8]
    assert parse_verbal_confidence(['Confidence: 80'], scale='unit').status.tolist() == ['range']
    with pytest.raises(ValueError, match="scale must be one of 'auto', 'unit', 'percent'"):
        parse_verbal_confidence(['x'], scale='ten')


def test_word_map_is_a_parameter_and_validated():
    assert VERBAL_WORDS['almost certain'] == .95 and VERBAL_WORDS['about even'] == .5 and VERBAL_WORDS['low'] == .2
    assert parse_verbal_confidence(['Paris (Sure)'], words={'sure': 1.0}).conf.tolist() == [1.0]
    assert parse_verbal_confidence(['Paris (high)'], words={'sure': 1.0}).status.tolist() == ['none']
    with pytest.raises(ValueError, match=r"words\['x'\] must be a finite number in \[0, 1\]"):
        parse_verbal_confidence(['x'], words={'x': 1.5})
    with pytest.raises(TypeError, match='words must be a non-empty mapping'): parse_verbal_confidence(['x'], words={})


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 100), st.sampled_from(['Confidence: {}%', 'Paris ({}%)', 'probability = {} %']))
def test_any_percentage_reads_back(k, form):
    assert parse_verbal_confidence([form.format(k)]).conf.iloc[0] == pytest.approx(k / 100, abs=1e-15)


def test_verbalized_events_count_and_name_dropped_responses(tmp_path):
    recs = [said('Paris. Confidence: 90%', gold='Paris'), said('Lyon, 0.6', gold='Paris'), said('Paris', gold='Paris'),
            said('Nice (low)', correct=0), said('Paris. Confidence: 130%', gold='Paris'), said('no idea', gold='Paris')]
    p = write(tmp_path, recs[:2] + [''] + recs[2:])                # a blank line: records after it shift by one
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        ev = verbalized_events(p)
    msgs = [str(w.message) for w in caught]
    assert msgs == [f'2 of 6 responses state no confidence calibkit can read (e.g. {p}:4: choices[0]): '
                    'they give no events',
                    f"1 of 6 responses state a confidence outside [0, 1] (e.g. {p}:6: choices[0]: 'Confidence: 130%'): "
                    'they give no events']
    assert ev.line.tolist() == [1, 2, 5] and ev.answer.tolist() == ['Paris', 'Lyon', 'Nice']
    assert ev.conf.tolist() == [.9, .6, .2] and ev.correct.tolist() == [1, 0, 0]
    assert (ev.attrs['n_unparsed'], ev.attrs['n_out_of_range']) == (2, 1)
    with pytest.raises(ValueError, match=r'none of the 1 responses states a confidence .* \(e.g. records\[0\]'):
        verbalized_events([said('Paris', gold='Paris')])
    with pytest.raises(ValueError, match=r'1 of 1 responses have neither correct nor gold'):
        verbalized_events([said('Paris (high)')])


def test_answer_span_and_normalize():
    recs = [said('Guess: Paris\nProbability: 0.7', gold='paris'),
            said('Reasoning... Guess: Lyon. Confidence: 20%', gold='Lyon')]
    ev = verbalized_events(recs, span='Guess:', normalize='lower')
    assert ev.answer.tolist() == ['Paris', 'Lyon'] and ev.correct.tolist() == [1, 1]
    assert verbalized_events(recs, span='Guess:').correct.tolist() == [0, 1]


def test_texts_both_formats_and_missing_text():
    recs = [said('A (high)', correct=1), {'object': 'text_completion', 'choices': [{'text': 'B 0.3'}, {'text': ''}],
                                          'correct': [0, 1]}]
    with pytest.warns(UserWarning, match=r'1 of 3 choices have no text .*records\[1\]: choices\[1\]'):
        t = read_openai_texts(recs)
    assert t.text.tolist() == ['A (high)', 'B 0.3'] and t.correct.tolist() == [1, 0]
    with pytest.raises(ValueError, match=r'records\[0\]: choices\[0\]: message must be an object'):
        read_openai_texts([{'choices': [{'message': 'hi'}]}])


def test_p_true_by_hand_both_formats():
    lp = math.log
    top = [('Yes', lp(.5)), (' yes', lp(.1)), ('No', lp(.3)), ('Maybe', lp(.05))]
    for legacy in (False, True):
        ev = p_true_events([judged(top, 1, legacy)])
        assert ev.conf.iloc[0] == pytest.approx(.6 / .9, rel=1e-12)
        assert (ev.yes_mass.iloc[0], ev.no_mass.iloc[0], ev.floor.iloc[0]) == pytest.approx((.6, .3, .05), rel=1e-12)
        assert p_true_events([judged(top, 1, legacy)], normalize=False).conf.iloc[0] == pytest.approx(.6, rel=1e-12)
    assert p_true_events([judged(top, 0)], yes=['Maybe'], no='No').conf.iloc[0] == pytest.approx(.05 / .35, rel=1e-12)
    assert token_key('\u0120YES ') == 'yes' and token_key('\u2581True') == 'true'


def test_p_true_yes_unlisted_is_zero_and_unreadable_counted(tmp_path):
    lp = math.log
    recs = [judged([('False', lp(.8)), ('The', lp(.1))], 0), judged([('The', lp(.6)), ('A', lp(.2))], 1),
            judged([], 1), said('True', correct=1), judged([('True', lp(.7)), ('False', lp(.2))], 1)]
    p = write(tmp_path, recs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        ev = p_true_events(p)
    msgs = [str(w.message) for w in caught]
    assert msgs[0] == (f'2 of 5 choices have no logprobs or an empty top_logprobs at the first token (e.g. {p}:3: '
                       'choices[0]): they give no events')
    assert msgs[1].startswith('1 of 3 responses have neither a yes') and f'{p}:2: choices[0]' in msgs[1]
    assert ev.line.tolist() == [1, 5] and ev.conf.tolist() == pytest.approx([0.0, .7 / .9], rel=1e-12)
    assert ev.attrs['n_yes_unlisted'] == 1 and ev.floor.iloc[0] == pytest.approx(.1)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        raw = p_true_events(p, normalize=False)
    assert raw.line.tolist() == [1, 2, 5] and raw.conf.tolist() == pytest.approx([0.0, 0.0, .7], rel=1e-12)


def test_p_true_bad_input():
    top = [('True', -0.1)]
    with pytest.raises(ValueError, match=r'records\[0\]: choices\[0\]: P\(True\) needs correct'):
        p_true_events([{k: v for k, v in judged(top, 1).items() if k != 'correct'}])
    with pytest.raises(ValueError, match=r"yes and no share token\(s\) \['yes'\]"):
        p_true_events([judged(top, 1)], no='YES')
    with pytest.raises(TypeError, match='yes must be a non-empty list of strings'):
        p_true_events([judged(top, 1)], yes=[])
    with pytest.raises(TypeError, match='normalize must be True or False'): p_true_events([judged(top, 1)], normalize=1)
    with pytest.raises(ValueError, match=r'records\[0\]: choices\[0\]: 1 top logprob\(s\) NaN or above 0'):
        p_true_events([judged([('True', 0.5)], 1)])
    with pytest.raises(ValueError, match='nothing to read; request logprobs=true'):
        p_true_events([said('True', correct=1)])


def test_extractors_registered_and_equal_to_the_functions(tmp_path):
    recs = [said('Paris (high)', gold='Paris'), said('Lyon, 0.4', gold='Paris')]
    assert calibkit.extractor('verbalized').extract(recs).equals(verbalized_events(recs))
    j = [judged([('Yes', -0.2), ('No', -1.8)], 1)]
    assert calibkit.extractor('p_true', yes='Yes', no='No').extract(j).equals(p_true_events(j, yes=['Yes'], no=['No']))
    t = calibkit.list_plugins()
    assert {'verbalized', 'p_true'} <= set(t.name[t.kind == 'extractor'])
    with pytest.raises(ValueError, match='span must be a non-empty marker string'):
        calibkit.extractor('verbalized', span='')


def test_cli_report_verbalized_and_p_true_warn_with_file_and_line(tmp_path):
    recs = [said(f'{a}. Confidence: {c}%', gold='Paris') for a, c in [('Paris', 90), ('Lyon', 60), ('Paris', 80),
                                                                     ('Nice', 30)] * 5]
    p = write(tmp_path, recs[:2] + ['', json.dumps(said('Paris', gold='Paris'))] + recs[2:])
    exe = [sys.executable, '-m', 'calibkit']
    r = subprocess.run([*exe, 'report', str(p), '--extractor', 'verbalized', '--json', '--n-bins', '2'],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out['summary']['events'] == 20 and out['summary']['accuracy'] == 0.5
    assert out['summary']['mean_conf'] == pytest.approx(np.mean([.9, .6, .8, .3]), rel=1e-12)
    assert (f'calibkit: warning: 1 of 21 responses state no confidence calibkit can read (e.g. {p}:4: choices[0])'
            in r.stderr and 'records[' not in r.stderr), r.stderr
    lp = math.log
    j = [judged([('Yes', lp(q)), ('No', lp(1 - q))], c) for q, c in [(.9, 1), (.8, 1), (.3, 0), (.6, 0)] * 5]
    p = write(tmp_path, j + [said('Yes', correct=1)], 'j.jsonl')
    r = subprocess.run([*exe, 'report', str(p), '--extractor', 'p_true', '--extractor-param', 'normalize=false',
                        '--json', '--n-bins', '2'], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)['summary']['mean_conf'] == pytest.approx(np.mean([.9, .8, .3, .6]), rel=1e-12)
    assert f'(e.g. {p}:21: choices[0])' in r.stderr and 'records[' not in r.stderr, r.stderr


def test_openai_logprobs_warnings_name_the_first_response(tmp_path):
    "answer_span's warning names the first response without the marker; through the CLI as file:line."
    from calibkit.extractors.llm import answer_span, read_openai_logprobs
    def tok(text, lp): return {'token': text, 'logprob': lp, 'top_logprobs': []}
    def resp(*toks, **gold): return {'choices': [{'logprobs': {'content': [tok(*t) for t in toks]}}], **gold}
    recs = [resp(('Answer:', -0.1), (' Paris', -0.2), gold='Paris'), resp(('Paris', -0.3), gold='Paris'),
            resp(('Answer:', -0.1), (' Lyon', -0.9), gold='Paris')] * 4
    with pytest.warns(UserWarning, match=r'4 of 12 responses give no events: 4 lack marker .* \(e.g. records\[1\]: '
                                         r'choices\[0\]\)'):
        answer_span(*read_openai_logprobs(recs), 'Answer:')
    p = write(tmp_path, [recs[0], ''] + recs[1:])
    r = subprocess.run([sys.executable, '-m', 'calibkit', 'report', str(p), '--extractor', 'openai_logprobs',
                        '--extractor-param', 'span=Answer:', '--json', '--n-bins', '2'], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f'(e.g. {p}:3: choices[0])' in r.stderr and 'records[' not in r.stderr, r.stderr
