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
    segmenter.prepare()  # reads the rules _sentence_starts uses
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


def test_one_sentence_check_and_mark_search() -> None:
    """_is_one_sentence and _find_mark (a character class of the marks of the Basic Multilingual Plane and every
    character beyond it, then a check) answer as a plain look-up of the sentencizer's punct_chars."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    segmenter = Segmenter("en")
    segmenter.prepare()
    punct_chars = set(segmenter.nlp.get_pipe("sentencizer").punct_chars)
    astral_marks = sorted(char for char in punct_chars if char > "\uffff")
    assert astral_marks and segmenter._punct_chars == punct_chars

    @settings(max_examples=500, deadline=None, derandomize=True)
    @given(st.text(alphabet=st.sampled_from(["a", "b", " ", ".", "!", "?", ",", ";", "'", '"', "(", "…", "。", "¿", "¡",
                                               "؟", "।", "é", "😀", "\u3002", *astral_marks[:3]])),
           st.integers(0, 5))
    def check(line: str, position: int) -> None:
        assert segmenter._is_one_sentence(line) == (not any(char in punct_chars for char in line.rstrip(".!?")))
        marks = [index for index, char in enumerate(line) if char in punct_chars and index >= position]
        assert segmenter._find_mark(line, position) == (marks[0] if marks else -1)

    check()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_document_sentences_number_and_pick_the_sentences(lang: str) -> None:
    """document_sentences counts the sentences of the lines it does not cut (the same count as cutting them) and
    gives, numbered as in sentences(), exactly those that hold a whole span of their line."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    segmenter = Segmenter(lang)

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(_random_texts(), st.data())
    def check(text: str, data: st.DataObject) -> None:
        expected = list(segmenter.sentences(text))
        lines, whole = segmenter.lines(text)
        assert whole and lines == list(chunks(text, segmenter.chunk_chars))
        assert segmenter.document_sentences(lines, [None] * len(lines)) == (len(expected), [])
        every_character = [[(start, start + 1) for start in range(len(line))] for line in lines]
        assert segmenter.document_sentences(lines, every_character) == (len(expected), list(enumerate(expected)))
        spans = [data.draw(st.none() | st.lists(st.tuples(st.integers(0, len(line)), st.integers(0, 3)).map(
            lambda span: (span[0], span[0] + span[1])), max_size=3)) for line in lines]
        count, kept = segmenter.document_sentences(lines, spans)
        assert count == len(expected)
        assert all(expected[index] == sentence for index, sentence in kept)
        # a sentence is given where a span lies within its piece of the line (the piece, less its whitespace)
        given_indexes = {index for index, _ in kept}
        index = 0
        for line, line_spans in zip(lines, spans):
            starts = segmenter._sentence_starts(line)
            for begin, end in zip(starts, starts[1:] + [len(line)]):
                holds = line_spans is not None and any(begin <= s and e <= end for s, e in line_spans)
                assert (index in given_indexes) == holds
                index += 1

    check()


def test_long_documents_are_cut_into_chunks_as_before() -> None:
    segmenter = Segmenter("en", chunk_chars=64)
    text = "I have asthma and it is fine today, really. " * 10 + "\nShort line."
    lines, whole = segmenter.lines(text)
    assert not whole and lines == list(chunks(text, 64)) and max(map(len, lines)) <= 64
    count, kept = segmenter.document_sentences(lines, [[(0, 1)]] * len(lines))
    assert count == len(list(segmenter.sentences(text))) and len(kept) == len(lines)  # each chunk's first sentence
