"""calibkit.datasets.ud: the CoNLL-U reader."""
from pathlib import Path
import pytest
from calibkit.datasets.ud import read_conllu, words_frame

DATA = Path(__file__).resolve().parent.parent/'calibkit'/'data'/'ud_ewt'
ROW = '{i}\t{w}\t{w}\tX\tXX\t_\t{h}\tdep\t_\t_'


def write(tmp_path, lines, name='t.conllu'):
    p = tmp_path/name
    p.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    return p


def test_ewt_files():
    dev, test = read_conllu(DATA/'en_ewt-ud-dev.conllu'), read_conllu(DATA/'en_ewt-ud-test.conllu')
    assert (len(dev), len(test)) == (2001, 2077)
    assert (sum(map(len, dev)), sum(map(len, test))) == (25147, 25094)
    w = words_frame(test)
    assert list(w.columns) == ['sent', 'sent_id', 'doc_id', 'id', 'form', 'lemma', 'upos', 'xpos', 'feats', 'head', 'deprel']
    assert w.groupby('sent').id.apply(lambda s: list(s) == list(range(1, len(s) + 1))).all()
    assert w['head'].min() == 0 and not w['head'].isna().any()


def test_skips_ranges_and_empty_nodes_and_keeps_metadata(tmp_path):
    p = write(tmp_path, ['# newdoc id = D', '# sent_id = s1', '# text = Don\'t', "1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_",
                         ROW.format(i=1, w='Do', h=0), ROW.format(i=2, w="n't", h=1), '1.1\tx\tx\tX\tXX\t_\t_\t_\t_\t_',
                         '', '# sent_id = s2', ROW.format(i=1, w='Go', h='_')])
    s1, s2 = read_conllu(p)
    assert (s1.sent_id, s1.doc_id, s1.text, s1.form, s1.head) == ('s1', 'D', "Don't", ('Do', "n't"), (0, 1))
    assert (s2.sent_id, s2.doc_id, s2.form, s2.head) == ('s2', 'D', ('Go',), (None,))


@pytest.mark.parametrize('line, msg', [
    ('1\ta\ta\tX', 't.conllu:2: expected 10 tab-separated columns, got 4'),
    (ROW.format(i=2, w='a', h=0), "t.conllu:2: word id '2' is not 1"),
    (ROW.format(i=1, w='', h=0), 't.conllu:2: empty FORM'),
    (ROW.format(i=1, w='a', h='root'), "t.conllu:2: HEAD 'root' is not an integer or _"),
])
def test_malformed_lines_name_file_and_line(tmp_path, line, msg):
    with pytest.raises(ValueError, match=msg):
        read_conllu(write(tmp_path, ['# sent_id = s', line]))


def test_missing_and_empty(tmp_path):
    with pytest.raises(FileNotFoundError, match='is not a file'):
        read_conllu(tmp_path/'nope.conllu')
    with pytest.raises(ValueError, match='no sentences'):
        read_conllu(write(tmp_path, ['', '']))


def test_head_beyond_the_sentence_names_file_and_line(tmp_path):
    p = write(tmp_path, ['# sent_id = s1', ROW.format(i=1, w='a', h=0), ROW.format(i=2, w='b', h=1), '',
                         '# sent_id = s2', ROW.format(i=1, w='c', h=0), ROW.format(i=2, w='d', h=3)])
    with pytest.raises(ValueError) as info: read_conllu(p)
    assert str(info.value) == (f'{p}:7: HEAD 3 is beyond the sentence, which has 2 words '
                               '(heads are 0 for the root or a word id 1..2)')
    p = write(tmp_path, ['# sent_id = s', ROW.format(i=1, w='a', h=0), ROW.format(i=2, w='b', h=2)], 'ok.conllu')
    assert read_conllu(p)[0].head == (0, 2)                 # a self-loop is in range: not this reader's business


def test_bom_and_latin1(tmp_path):
    p = tmp_path/'bom.conllu'
    p.write_bytes(b'\xef\xbb\xbf# sent_id = s\n' + ROW.format(i=1, w='a', h=0).encode() + b'\n')
    assert read_conllu(p)[0].sent_id == 's'
    p = tmp_path/'latin.conllu'
    p.write_bytes(b'# sent_id = s\n' + ROW.format(i=1, w='caf\xe9', h=0).encode('latin-1') + b'\n')
    with pytest.raises(ValueError) as info: read_conllu(p)
    assert str(info.value) == f'{p}: line 2, column 6: byte 0xe9 is not UTF-8 (save the file as UTF-8)'
