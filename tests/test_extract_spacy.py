"""The spaCy extractor (calibkit.extractors.spacy_pipeline): tagger and morphologizer probabilities (the softmax of
the logits spaCy's Tagger.v2 returns), column order = labels, ner refused with the reason, bad input, the missing
extra, batching, and a tiny pipeline trained here → extractor → calibration report."""
import importlib.util, sys
import numpy as np, pandas as pd, pytest
import calibkit
from calibkit.extractors.spacy_pipeline import SpacyExtractor, component_scores
from calibkit.extractors.taggers import softmax

needs_spacy = pytest.mark.skipif(not importlib.util.find_spec('spacy'), reason='needs the spacy extra')


@pytest.fixture(scope='module')
def tiny():
    "A tiny tagger + morphologizer pipeline trained here on bundled EWT sentences (a second or two)."
    from calibkit.models.tiny_taggers import ewt_tagging_data, tiny_spacy_tagger
    data = ewt_tagging_data(100, 30)
    return data, tiny_spacy_tagger(data.train_words, data.train_xpos, data.train_morph, width=16, epochs=2)


@needs_spacy
def test_probabilities_are_the_softmax_of_the_logits_in_label_order(tiny):
    from spacy.tokens import Doc
    data, nlp = tiny
    sents = data.test_words[:5]
    for component in ('tagger', 'morphologizer'):
        rows, labels = component_scores(nlp, sents, component)
        pipe = nlp.get_pipe(component)
        assert labels == list(pipe.labels) and rows[0].shape[1] == len(labels)
        docs = [Doc(nlp.vocab, words=s) for s in sents]
        assert pipe.model.get_ref('softmax').attrs['softmax_normalize'] is False      # spaCy returns logits
        logits = pipe.model.predict(docs)
        for r, z, g in zip(rows, logits, pipe.predict(docs)):
            np.testing.assert_allclose(r, softmax(z), atol=1e-6)
            assert r.argmax(1).tolist() == list(g)                      # spaCy's own choice: columns in label order
    # a temperature divides the logits
    layer = nlp.get_pipe('tagger').model.get_ref('softmax')
    layer.attrs['softmax_temperature'] = 2.0
    try:
        hot = component_scores(nlp, sents[:1])[0][0]
        z = nlp.get_pipe('tagger').model.predict([Doc(nlp.vocab, words=sents[0])])[0]
        np.testing.assert_allclose(hot, softmax(z / 2), atol=1e-6)
    finally: layer.attrs['softmax_temperature'] = 1.0


@needs_spacy
def test_batched_equals_unbatched(tiny):
    data, nlp = tiny
    a, _ = component_scores(nlp, data.test_words, 'morphologizer', batch_size=4)
    for s, r in zip(data.test_words[:6], a):
        np.testing.assert_allclose(component_scores(nlp, [s], 'morphologizer', batch_size=1)[0][0], r, atol=1e-6)


@needs_spacy
def test_ner_and_other_components_refused(tiny):
    import spacy
    _, nlp = tiny
    blank = spacy.blank('en')
    blank.add_pipe('ner'); blank.add_pipe('parser')
    with pytest.raises(ValueError, match="component 'ner' is a transition-based entity recognizer.*no per-token "
                                         "marginals"):
        component_scores(blank, [['a']], 'ner')
    with pytest.raises(ValueError, match="'parser' \\(DependencyParser\\) gives no tag distribution"):
        component_scores(blank, [['a']], 'parser')
    with pytest.raises(ValueError, match="component 'lemmatizer' is not in the pipeline"):
        component_scores(nlp, [['a']], 'lemmatizer')
    with pytest.raises(TypeError, match='nlp must be a spaCy Language'): component_scores(object(), [['a']])
    with pytest.raises(ValueError, match=r"sentences\[0\]\[0\] is ''"): component_scores(nlp, [['']])
    with pytest.raises(TypeError, match=r'sentences\[0\] is a str'): component_scores(nlp, ['a b'])


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, 'spacy', None)      # as if calibkit[spacy] were not installed
    with pytest.raises(ImportError, match=r"pip install 'calibkit\[spacy\]'"):
        component_scores(object(), [['a']])


def test_saved_scores_and_bad_input():
    rows = np.array([[.7, .3], [.2, .8], [.6, .4]])
    saved = dict(scores=rows, gold=np.array(['A', 'A', 'B']), labels=np.array(['A', 'B']), lengths=np.array([2, 1]))
    top = SpacyExtractor(events='top').extract(saved)
    assert top[['item', 'pos']].values.tolist() == [[0, 0], [0, 1], [1, 0]] and top.correct.tolist() == [1, 0, 0]
    pd.testing.assert_frame_equal(top, calibkit.extractor('softmax', events='top').extract(saved))
    with pytest.raises(ValueError, match='not among labels: C'):
        SpacyExtractor(strict_labels=True).extract({**saved, 'gold': np.array(['A', 'C', 'B'])})
    with pytest.warns(UserWarning, match='not among labels: C'):          # by default: an error of the model
        top = SpacyExtractor(events='top').extract({**saved, 'gold': np.array(['A', 'C', 'B'])})
    assert top.correct.tolist() == [1, 0, 0] and top.attrs['gold_outside'] == {'C': 1}
    with pytest.raises(ValueError, match='rows do not sum to 1'): SpacyExtractor().extract({**saved, 'scores': rows * .5})
    with pytest.raises(TypeError, match='needs nlp= to tag sentences'): SpacyExtractor().extract([['a']], [['A']])
    with pytest.raises(TypeError, match='component must be a component name'): SpacyExtractor(component=3)
    with pytest.raises(ValueError, match='batch_size'): SpacyExtractor(batch_size=0)


@needs_spacy
def test_end_to_end_report_and_saved_pipeline(tiny, tmp_path):
    from calibkit.report import calibration_report
    data, nlp = tiny
    ev = calibkit.extractor('spacy', nlp=nlp, component='morphologizer').extract(data.test_words, data.test_morph)
    assert ev.item.nunique() == len(data.test_words) and set(ev.label.astype(str)) <= set(nlp.get_pipe('morphologizer').labels)
    rep = calibration_report(ev, n_samples=50)
    assert len(rep.bins) > 0 and len(rep.metrics) > 0
    nlp.to_disk(tmp_path/'nlp')
    again = calibkit.extractor('spacy', nlp=tmp_path/'nlp', component='morphologizer').extract(data.test_words, data.test_morph)
    pd.testing.assert_frame_equal(again, ev, atol=1e-6)
    with pytest.raises(TypeError, match='labels come from the component'):
        SpacyExtractor(nlp=nlp).extract(data.test_words[:1], data.test_xpos[:1], labels=['A'])
