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
    data = Path(__file__).parent / "data"
    samples = {"en": ["corpus_reddit_sample_en.jsonl.gz", "corpus_codiesp_sample_en.jsonl.gz"],
               "es": ["corpus_codiesp_sample_es.jsonl.gz"]}[lang]
    for name in samples:
        with gzip.open(data / name, "rt", encoding="utf-8") as handle:
            texts = [json.loads(line)["text"] for line, _ in zip(handle, range(150))]
        for text in texts:
            assert list(segmenter.sentences(text)) == _spacy_only(segmenter, text)
