"""Sentence splitting: blank spaCy pipelines, line breaks, chunking of very long text."""

from __future__ import annotations

import pytest

from corpus_audit.segment import Segmenter, SegmenterError, chunks


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
