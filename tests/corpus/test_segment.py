"""Sentence splitting: blank spaCy pipelines, line breaks, chunking of very long text."""

from __future__ import annotations

import pytest

from corpus_audit.corpus.segment import Segmenter, SegmenterError, chunks


@pytest.fixture(scope="module")
def english() -> Segmenter:
    return Segmenter("en")


def test_splits_sentences_and_lines(english: Segmenter) -> None:
    text = "I have anxiety. It is hard!\nTitle without a stop\n\n  Another line?  "
    assert list(english.sentences(text)) == ["I have anxiety.", "It is hard!", "Title without a stop", "Another line?"]


def test_spanish_pipeline() -> None:
    sentences = list(Segmenter("es").sentences("¿Tiene depresión? Sí. Desde hace años."))
    assert sentences == ["¿Tiene depresión?", "Sí.", "Desde hace años."]


def test_chunks_are_bounded_and_lose_no_text() -> None:
    text = ("word " * 50 + "end. ") * 200 + "x" * 5000  # one 55k-character line, with a long unbroken tail
    pieces = list(chunks(text, 2000))
    assert max(len(p) for p in pieces) <= 2000
    assert "".join(pieces).replace(" ", "") == text.replace(" ", "")


def test_very_long_document_is_segmented(english: Segmenter) -> None:
    text = "I have asthma and it is fine. " * 40_000  # 1.2 MB on one line, above spaCy's default max_length
    sentences = list(Segmenter("en", chunk_chars=10_000).sentences(text))
    assert len(sentences) == 40_000
    assert set(sentences) == {"I have asthma and it is fine."}


def test_missing_model_is_a_clear_error() -> None:
    with pytest.raises(SegmenterError, match="not installed"):
        Segmenter("en", model="no_such_spacy_model_xyz")


def _spacy_only(segmenter: Segmenter, text: str) -> list[str]:
    """Sentences as spaCy alone splits them (no one-sentence shortcut)."""
    docs = segmenter.nlp.pipe(chunks(text, segmenter.chunk_chars))
    return [s.text.strip() for doc in docs for s in doc.sents if s.text.strip()]


@pytest.mark.parametrize("lang", ["en", "es"])
def test_one_sentence_shortcut_matches_spacy(lang: str) -> None:
    import gzip
    import json
    from pathlib import Path

    segmenter = Segmenter(lang)
    tricky = ["Hi!!!", "...", "?", "Wait... what", "U.S. troops", "etc.", "end.)", "(yes.) no", "e.g. this.", "a.m.",
              "No punctuation at all", "3.5 mg", "Really?!", "Dr. Smith.", "¿Qué?", "«Sí.»", "I have ADD.", "x ! y"]
    assert list(segmenter.sentences("\n".join(tricky))) == _spacy_only(segmenter, "\n".join(tricky))
    data = Path(__file__).parents[1] / "data"
    samples = {"en": ["corpus_reddit_sample_en.jsonl.gz", "corpus_codiesp_sample_en.jsonl.gz"],
               "es": ["corpus_codiesp_sample_es.jsonl.gz"]}[lang]
    for name in samples:
        with gzip.open(data / name, "rt", encoding="utf-8") as handle:
            texts = [json.loads(line)["text"] for line, _ in zip(handle, range(150))]
        for text in texts:
            assert list(segmenter.sentences(text)) == _spacy_only(segmenter, text)


# --- Fast paths of the blank pipeline: same tokens, same sentences as spaCy alone --------------------------

TRICKY_WORDS = [
    "I'm", "don't", "it's", "It’s", "y'all", "can't", "'s", "’s", "e.g.", "i.e.", "Dr.", "Mr.", "U.S.", "a.m.", "3p.m.",
    "EE.", "UU.", "EE. UU.", "etc.", "Sr.", "p.ej.", ":)", ":-(", "(:", "<3", ":D", "o.O", "^_^", "...", "?!", "!!!", "?",
    ".", "!", "¿Qué?", "¡Sí!", "«Sí.»", '"hi"', "'quoted'", "(yes.)", "[1]", "3.5", "$10.", "50%", "anxiety", "asthma.",
    "ADHD", "Alzheimer's", "well-known", "--", "—", "http://x.org/a.b", "user@mail.com", "café", "niño", "日本。", "😀",
    "😀.", "x", "_", "a_b.", "#tag", "@user", "..", "A.", "b.", "No", "yes", "The", "end.)", "U.K.", "vs.", "Ph.D.",
]
SEPARATORS = [" ", " ", " ", " ", "  ", "\t", "\xa0", " \u2009 "]


@pytest.mark.parametrize("lang", ["en", "es"])
def test_sentence_starts_from_words_equal_those_from_the_whole_line(lang: str) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    segmenter = Segmenter(lang)
    segmenter.nlp  # builds the blank pipeline and the patterns _sentence_starts uses
    words = st.sampled_from(TRICKY_WORDS) | st.text(max_size=4)

    @settings(max_examples=500, deadline=None, derandomize=True)
    @given(st.lists(st.tuples(words, st.sampled_from(SEPARATORS)), min_size=1, max_size=30))
    def check(parts: list[tuple[str, str]]) -> None:
        line = "".join(word + separator for word, separator in parts).strip()
        if line:
            assert segmenter._sentence_starts(line) == segmenter._sentence_starts_of_doc(line)

    check()
    assert len(segmenter._word_cache) > 50 and segmenter._multiword_specials == (("EE. UU.", "Ee. Uu.") if lang == "es" else ())


def _random_texts():
    """Texts of tricky words (abbreviations, quotes, emoji) and separators, for property tests."""
    from hypothesis import strategies as st

    words = st.sampled_from(TRICKY_WORDS) | st.text(max_size=3)
    separators = st.sampled_from(SEPARATORS + ["\n", " \n\n "])
    return st.lists(st.tuples(words, separators), max_size=40).map(
        lambda parts: "".join(word + separator for word, separator in parts))


@pytest.mark.parametrize("lang", ["en", "es"])
def test_sentences_of_random_texts_match_spacy(lang: str) -> None:
    from hypothesis import given, settings

    segmenter = Segmenter(lang)
    reference = Segmenter(lang)

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(_random_texts())
    def check(text: str) -> None:
        assert list(segmenter.sentences(text)) == _spacy_only(reference, text)

    check()


def test_one_sentence_check_ascii_shortcut() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    segmenter = Segmenter("en")
    segmenter.nlp
    assert segmenter._ascii_marks == ("!", ".", "?")

    @settings(max_examples=500, deadline=None, derandomize=True)
    @given(st.text(alphabet=st.sampled_from("ab .!?,;:'\"()…。¿¡؟।é😀\u3002")))
    def check(line: str) -> None:
        assert segmenter._is_one_sentence(line) == (not segmenter._one_sentence.search(line.rstrip(".!?")))

    check()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_lines_only_counted_have_as_many_sentences_as_when_cut(lang: str) -> None:
    """The filter counts the sentences of a line without a term instead of cutting it: the same number."""
    from hypothesis import given, settings

    segmenter = Segmenter(lang)

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(_random_texts())
    def check(text: str) -> None:
        cut = list(segmenter.line_sentences(text))
        counted = list(segmenter.line_sentences(text, lambda line: False))
        assert [(line, count) for line, count, _ in cut] == [(line, count) for line, count, _ in counted]
        assert all(count == len(sentences) for _, count, sentences in cut)
        assert not any(sentences for _, _, sentences in counted)
        assert [sentence for _, _, sentences in cut for sentence in sentences] == list(segmenter.sentences(text))

    check()
