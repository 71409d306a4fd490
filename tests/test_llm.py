"""LLM generation log-probabilities in OpenAI-compatible JSON (`calibkit.extractors.llm`): both API formats,
responses without logprobs, answer spans, hand-computed min/mean/prod, token events, file:line errors, the CLI."""
import json, math, subprocess, sys
from pathlib import Path
import numpy as np, pytest
import calibkit
from calibkit.extractors.llm import (answer_span, openai_sequence_events, openai_token_events, read_openai_logprobs)


def chat_token(token, logprob, top=()):
    "One entry of `choices[i].logprobs.content` as the chat completions API writes it (with bytes)."
    return {'token': token, 'logprob': logprob, 'bytes': list(token.encode()),
            'top_logprobs': [{'token': t, 'logprob': lp, 'bytes': list(t.encode())} for t, lp in top]}


def chat(*choices, **fields):
    "A chat.completion response; each choice a list of chat tokens, or None for `logprobs: null`."
    return {'id': 'chatcmpl-1', 'object': 'chat.completion', 'created': 1700000000, 'model': 'gpt-4o-mini',
            'choices': [{'index': i, 'message': {'role': 'assistant',
                                                 'content': ''.join(t['token'] for t in c or [])},
                         'logprobs': None if c is None else {'content': c, 'refusal': None}, 'finish_reason': 'stop'}
                        for i, c in enumerate(choices)],
            'usage': {'prompt_tokens': 9, 'completion_tokens': 3, 'total_tokens': 12}, **fields}


# chat with top_logprobs: "Answer: Paris", logprobs -0.1, -0.2, -0.3
CHAT = chat([chat_token('Answer', -0.1, [('Answer', -0.1), ('The', -2.5)]), chat_token(':', -0.2, [(':', -0.2)]),
             chat_token(' Paris', -0.3, [(' Paris', -0.3), (' Lyon', -1.5)])], gold='Paris')
# chat with empty top_logprobs (top_logprobs=0 in the request): "Answer: Lyon"
EMPTY_TOP = chat([chat_token('Answer', -0.05), chat_token(':', 0.0), chat_token(' Lyon', -1.0)], gold='Paris')
# two choices (n=2), the second with logprobs null, outcomes given per choice
TWO = chat([chat_token('Answer', 0.0), chat_token(': Paris', -0.02)], None, correct=[1, 0])
# legacy completion: " Paris" in two pieces
LEGACY = {'id': 'cmpl-1', 'object': 'text_completion', 'created': 1700000000, 'model': 'gpt-3.5-turbo-instruct',
          'choices': [{'text': 'Answer: Paris', 'index': 0, 'finish_reason': 'stop',
                       'logprobs': {'tokens': ['Answer', ':', ' Par', 'is'],
                                    'token_logprobs': [-0.01, -0.02, -0.5, -0.25],
                                    'top_logprobs': [{'Answer': -0.01}, {':': -0.02}, {' Par': -0.5, ' Lon': -1.2},
                                                     {'is': -0.25}],
                                    'text_offset': [0, 6, 7, 11]}}],
          'gold': 'paris'}
RECORDS = [CHAT, EMPTY_TOP, TWO, LEGACY]


def write(tmp_path, records, name='responses.jsonl'):
    p = tmp_path/name
    p.write_text(''.join((r if isinstance(r, str) else json.dumps(r)) + '\n' for r in records))
    return p


def test_reader_both_formats(tmp_path):
    no_logprobs = r'1 of 5 choices have no logprobs or no tokens \(e.g. .*responses.jsonl:3: choices\[1\]\)'
    with pytest.warns(UserWarning, match=no_logprobs):
        tok, resp = read_openai_logprobs(write(tmp_path, RECORDS))
    assert resp[['line', 'choice']].values.tolist() == [[1, 0], [2, 0], [3, 0], [4, 0]]
    assert resp.text.tolist() == ['Answer: Paris', 'Answer: Lyon', 'Answer: Paris', 'Answer: Paris']
    assert resp.n_tokens.tolist() == [3, 3, 2, 4]
    assert resp.correct.tolist()[2] == 1 and resp.correct.isna().tolist() == [True, True, False, True]
    assert tok.logprob.tolist() == [-0.1, -0.2, -0.3, -0.05, 0.0, -1.0, 0.0, -0.02, -0.01, -0.02, -0.5, -0.25]
    assert tok.pos.tolist() == [0, 1, 2, 0, 1, 2, 0, 1, 0, 1, 2, 3]
    assert tok.line.tolist() == [1] * 3 + [2] * 3 + [3] * 2 + [4] * 4
    assert (tok.attrs['n_choices'], tok.attrs['n_no_logprobs']) == (5, 1)
    assert resp.gold.tolist() == ['Paris', 'Paris', None, 'paris']     # None, never NaN


def test_sequence_events_hand_computed():
    p = np.exp([-0.1, -0.2, -0.3])
    expect = {'min': p.min(), 'mean': p.mean(), 'prod': math.exp(-0.6)}
    for how, v in expect.items():
        ev = openai_sequence_events([CHAT, LEGACY], how=how)
        assert ev.conf.iloc[0] == pytest.approx(v, rel=1e-12)
        assert ev.correct.tolist() == [0, 0]                   # 'Answer: Paris' is not 'Paris' without a span
    assert openai_sequence_events([CHAT], how='min').conf.iloc[0] == pytest.approx(0.7408182206817179, rel=1e-12)
    assert openai_sequence_events([CHAT], how='mean').conf.iloc[0] == pytest.approx(0.8214621305985531, rel=1e-12)
    assert openai_sequence_events([CHAT], how='prod').conf.iloc[0] == pytest.approx(0.5488116360940264, rel=1e-12)


def test_span_and_normalize():
    with pytest.warns(UserWarning, match='1 of 5 choices have no logprobs'):
        ev = openai_sequence_events(RECORDS, how='prod', span='Answer:')
    assert ev.answer.tolist() == [' Paris', ' Lyon', ' Paris', ' Paris']
    assert ev.correct.tolist() == [1, 0, 1, 0]                  # 'paris' ≠ 'Paris' under 'strip'
    np.testing.assert_allclose(ev.conf, np.exp([-0.3, -1.0, -0.02, -0.75]), rtol=1e-12)
    assert ev.length.tolist() == [1, 1, 1, 2]                   # ': Paris' straddles the marker's end: it counts
    with pytest.warns(UserWarning):
        assert openai_sequence_events(RECORDS, span='Answer:', normalize='lower').correct.tolist() == [1, 0, 1, 1]
    upper = openai_sequence_events([LEGACY], span='Answer:', normalize=lambda s: s.strip().upper())
    assert upper.correct.tolist() == [1]
    assert openai_sequence_events([LEGACY], span='Answer:', normalize='exact').correct.tolist() == [0]


def test_span_missing_marker_warns_with_counts():
    no = chat([chat_token('Paris', -0.1)], gold='Paris')
    end = chat([chat_token('Answer', -0.1), chat_token(':', -0.1)], gold='Paris')
    message = "2 of 3 responses give no events: 1 lack marker 'Answer:', 1 have nothing after it"
    with pytest.warns(UserWarning, match=message):
        ev = openai_sequence_events([no, CHAT, end], span='Answer:')
    assert ev.line.tolist() == [2]
    with pytest.raises(ValueError, match="no response has an answer after marker 'Answer:'"):
        openai_sequence_events([no], span='Answer:')


def test_token_events_against_gold_tokens():
    a = chat([chat_token('Par', -0.1), chat_token('is', -0.2), chat_token('.', -0.3)], gold_tokens=['Par', 'is'])
    b = chat([chat_token('Lon', -0.4), chat_token('is', -0.5)], gold_tokens=['Par', 'is', '.'])
    ev = openai_token_events([a, b])
    assert ev.correct.tolist() == [1, 1, 0, 0, 1]               # position by position; past the gold's end: 0
    assert ev.gold.tolist() == ['Par', 'is', None, 'Par', 'is']
    np.testing.assert_allclose(ev.conf, np.exp([-0.1, -0.2, -0.3, -0.4, -0.5]), rtol=1e-12)
    assert ev.attrs['n_gold_beyond'] == 1
    with pytest.warns(UserWarning, match=r'1 of 3 responses have no gold_tokens \(e.g. records\[2\]: choices\[0\]\)'):
        assert len(openai_token_events([a, b, CHAT])) == 5
    with pytest.raises(ValueError, match='none of the 1 responses has gold_tokens'):
        openai_token_events([CHAT])


@pytest.mark.parametrize('line, message', [
    ('{"choices": [', 'responses.jsonl:2: invalid JSON at column 14'),
    ('[1, 2]', 'responses.jsonl:2: expected a JSON object, got list'),
    ('{"id": "x"}', "responses.jsonl:2: expected a response with a non-empty list choices, got keys ['id']"),
    ('{"choices": [{"logprobs": {"content": [{"token": "a"}]}}]}',
     "responses.jsonl:2: choices[0]: logprobs.content[0] lacks key(s) ['logprob']"),
    ('{"choices": [{"logprobs": {"content": [{"token": "a", "logprob": "-1"}]}}]}',
     "responses.jsonl:2: choices[0]: logprob of token 0 is '-1', not a number"),
    ('{"choices": [{"logprobs": {"content": [{"token": "a", "logprob": 0.5}]}}]}',
     "responses.jsonl:2: choices[0]: logprob 0.5 of token 'a' is above 0 (tolerance 0.0001)"),
    ('{"choices": [{"logprobs": {"content": [{"token": "a", "logprob": NaN}]}}]}',
     "responses.jsonl:2: choices[0]: logprob nan of token 'a' is NaN"),
    ('{"choices": [{"logprobs": {"tokens": ["a"], "token_logprobs": [null]}}]}',
     'responses.jsonl:2: choices[0]: logprob of token 0 is None, not a number (an echoed prompt token?'),
    ('{"choices": [{"logprobs": {"tokens": ["a", "b"], "token_logprobs": [-1]}}]}',
     'responses.jsonl:2: choices[0]: logprobs.tokens has 2 entries but token_logprobs has 1'),
    ('{"choices": [{"logprobs": {"text_offset": []}}]}',
     'responses.jsonl:2: choices[0]: logprobs has neither content (chat completions) nor tokens (completions)'),
    ('{"choices": [{"logprobs": {"content": [{"token": "a", "logprob": -1, "top_logprobs": {}}]}}]}',
     'responses.jsonl:2: choices[0]: logprobs.content[0].top_logprobs must be a list'),
    ('{"choices": [{"logprobs": {"content": []}}], "correct": 2}',
     'responses.jsonl:2: correct must be 0/1 (true/false) or a list of one per choice (1), got 2'),
])
def test_malformed_lines_name_file_and_line(tmp_path, line, message):
    p = write(tmp_path, [CHAT, line])
    with pytest.raises(ValueError) as e: read_openai_logprobs(p)
    assert str(e.value).startswith(str(tmp_path/message.split(':')[0]) + ':' + message.split(':', 1)[1]), str(e.value)
    assert '\n' not in str(e.value)


def test_no_logprobs_anywhere_is_an_error():
    message = r'1 of 1 choices have no logprobs or no tokens \(e.g. records\[0\]: choices\[0\]\): nothing to read'
    with pytest.raises(ValueError, match=message + '; request logprobs=true'):
        read_openai_logprobs([chat(None, gold='Paris')])
    message = r'1 of 1 responses have neither correct nor gold \(e.g. records\[0\]: choices\[0\]\)'
    with pytest.raises(ValueError, match=message):
        openai_sequence_events([chat([chat_token('a', -1.0)])])


def test_extractor_plugin_and_records_equal_file(tmp_path):
    xt = calibkit.extractor('openai_logprobs', how='mean', span='Answer:')
    p = write(tmp_path, [CHAT, EMPTY_TOP, LEGACY])
    from_file = xt.extract(p)
    from_records = xt.extract([CHAT, EMPTY_TOP, LEGACY])
    assert from_file.equals(from_records)
    expect = [math.exp(-0.3), math.exp(-1.0), (math.exp(-.5) + math.exp(-.25)) / 2]
    assert from_file.conf.tolist() == pytest.approx(expect, rel=1e-12)
    one = [chat([chat_token('a', -0.1)], gold_tokens=['a'])]
    tok = calibkit.extractor('openai_logprobs', level='token').extract(one)
    assert tok.correct.tolist() == [1]
    with pytest.raises(ValueError, match='span applies to level sequence only'):
        calibkit.extractor('openai_logprobs', level='token', span='Answer:')
    with pytest.raises(ValueError, match="how must be one of 'min', 'mean', 'gmean', 'prod'"):
        calibkit.extractor('openai_logprobs', how='max')


def test_cli_report(tmp_path):
    recs = [chat([chat_token('Answer', -0.01), chat_token(':', -0.01), chat_token(f' {a}', lp)], gold='Paris')
            for a, lp in [('Paris', -0.05), ('Lyon', -0.7), ('Paris', -0.2), ('Nice', -1.5)] * 5]
    p = write(tmp_path, recs)
    exe = [sys.executable, '-m', 'calibkit']
    r = subprocess.run([*exe, 'report', str(p), '--extractor', 'openai_logprobs', '--extractor-param', 'span=Answer:',
                        '--extractor-param', 'how=prod', '--json', '--n-bins', '2'], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out['summary']['events'] == 20 and out['summary']['accuracy'] == 0.5
    span_only = np.exp([-0.05, -0.7, -0.2, -1.5]).mean()
    assert out['summary']['mean_conf'] == pytest.approx(span_only, rel=1e-12)
    bad = write(tmp_path, [CHAT, '', '{"choices": [{"logprobs": {"content": [{"token": "a", "logprob": 3}]}}]}'],
                'bad.jsonl')                                       # a blank line: the bad record is on line 3
    r = subprocess.run([*exe, 'report', str(bad), '--extractor', 'openai_logprobs', '--json'],
                       capture_output=True, text=True)
    assert r.returncode == 65 and r.stderr.count('\n') == 1, r.stderr
    assert f'{bad}:3: choices[0]: logprob 3.0' in r.stderr and 'records[' not in r.stderr, r.stderr


def test_blank_lines_count_in_file_line(tmp_path):
    p = tmp_path/'r.jsonl'
    bad = '{"choices": [{"logprobs": {"content": [{"token": 1, "logprob": -1}]}}]}'
    p.write_text(json.dumps(CHAT) + '\n\n' + bad + '\n')
    with pytest.raises(ValueError, match=r'r.jsonl:3: choices\[0\]: token 0 is 1, not a string'):
        read_openai_logprobs(p)
