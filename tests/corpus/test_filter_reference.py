"""The filter keeps exactly what it kept before issue 43 made it fast (one Aho-Corasick search per document, only
the lines with a candidate cut into sentences, only the sentences holding a term's spelling matched, spaCy's
tokenizer run from its shipped rules): the same sentences, numbered alike, with the same terms, offsets, forms,
illnesses and types, and the same counts, on generated documents and on the bundled samples.

The reference is the filter as it was, written plainly: every line of a document that has a candidate term cut
into sentences by spaCy's own blank pipeline, and every sentence of a line that has a candidate matched.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpus_audit.corpus.documents import Document, scrub_surrogates
from corpus_audit.corpus.filter import iter_kept_sentences
from corpus_audit.corpus.kept import FilterSummary
from corpus_audit.corpus.matcher import IllnessMatcher, fold
from corpus_audit.corpus.segment import Segmenter, chunks
from corpus_audit.stigma.quadrants import illness_type_of

DATA = Path(__file__).parents[1] / "data"
SAMPLES = {"en": ["corpus_reddit_sample_en.jsonl.gz", "corpus_codiesp_sample_en.jsonl.gz"],
           "es": ["corpus_codiesp_sample_es.jsonl.gz"]}
WORDS = ["I'm", "don't", "it's", "e.g.", "Dr.", "U.S.", "EE. UU.", "etc.", "3.5", ":)", "...", "?!", "!!!", "¿Qué?",
         "«Sí.»", "(yes.)", "[1]", "$10.", "well-known", "--", "—", "http://x.org/a.b", "café", "niño", "😀", "😀.",
         "_", "a_b.", "#tag", "A.", "No", "The", "end.)", "vs.", "x", "and", "the", "of", "por", "la", "y", "İ", "ß",
         "K", "\ud800"]
SEPARATORS = [" ", " ", " ", " ", "  ", "\t", "\xa0", "\n", " \n\n ", "\n", ". ", "? "]


def reference(documents: Iterable[Document], matcher: IllnessMatcher, segmenter: Segmenter
              ) -> tuple[list[tuple], dict[str, int]]:
    """(rows, counts) of the filter before issue 43."""
    nlp = segmenter.nlp
    rows: list[tuple] = []
    counts = dict.fromkeys(["documents_processed", "documents_with_candidates", "documents_matched",
                            "sentences_segmented", "sentences_kept"], 0)
    for doc in documents:
        counts["documents_processed"] += 1
        if not matcher.has_candidate(doc.text):
            continue
        counts["documents_with_candidates"] += 1
        index, matched = -1, False
        for line in chunks(scrub_surrogates(doc.text), segmenter.chunk_chars):
            sentences = [text for sent in nlp(line).sents if (text := sent.text.strip())]
            counts["sentences_segmented"] += len(sentences)
            if not matcher.has_candidate(line):
                index += len(sentences)
                continue
            for sentence in sentences:
                index += 1
                if found := matcher.find(sentence):
                    matched = True
                    counts["sentences_kept"] += 1
                    rows.append((doc.id, index, sentence, [m.surface for m in found], [[m.start, m.end] for m in found],
                                 sorted({m.illness for m in found}), illness_type_of(m.type for m in found),
                                 [m.form for m in found]))
        counts["documents_matched"] += matched
    return rows, counts


def current(documents: list[Document], matcher: IllnessMatcher, segmenter: Segmenter
            ) -> tuple[list[tuple], dict[str, int]]:
    summary = FilterSummary(lang=segmenter.lang)
    rows = [(kept.doc_id, kept.sentence_index, kept.sentence, kept.terms, kept.term_offsets, kept.illnesses,
             kept.illness_type, kept.forms) for kept in iter_kept_sentences(documents, matcher, segmenter, summary)]
    counts = {name: getattr(summary, name) for name in ["documents_processed", "documents_with_candidates",
                                                         "documents_matched", "sentences_segmented", "sentences_kept"]}
    return rows, counts


@pytest.fixture(scope="module", params=[("en", "paper", 20_000, True), ("en", "extended", 20_000, True),
                                        ("es", "paper", 20_000, True), ("es", "extended", 20_000, True),
                                        ("en", "extended", 48, True), ("es", "extended", 20_000, False)],
                ids=lambda param: f"{param[0]}-{param[1]}-chunks{param[2]}" + ("" if param[3] else "-no-rust"))
def setting(request: pytest.FixtureRequest) -> tuple[str, IllnessMatcher, Segmenter]:
    """A language, its matcher (without the Rust automaton: the line-by-line path) and a segmenter (with short
    chunks: documents whose long lines are cut)."""
    lang, terms, chunk_chars, rust = request.param
    matcher = IllnessMatcher.for_language(lang, terms)
    if not rust:
        matcher._fast_prefilter = None
    return lang, matcher, Segmenter(lang, chunk_chars=chunk_chars)


def spellings(matcher: IllnessMatcher) -> list[str]:
    """Each term as written, in capitals, capitalised, folded and with a typographic apostrophe."""
    return sorted({form for entry in matcher.entries for form in
                   (entry.term, entry.term.upper(), entry.term.capitalize(), fold(entry.term),
                    entry.term.replace("'", "’"))})


def test_generated_documents(setting: tuple[str, IllnessMatcher, Segmenter]) -> None:
    lang, matcher, segmenter = setting
    pieces = st.sampled_from(spellings(matcher)) | st.sampled_from(WORDS) | st.text(max_size=3)

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(st.lists(st.lists(st.tuples(pieces, st.sampled_from(SEPARATORS)), max_size=25), min_size=1, max_size=4))
    def check(texts: list[list[tuple[str, str]]]) -> None:
        documents = [Document(f"d{number}", "".join(piece + separator for piece, separator in parts), {}, "x", number)
                     for number, parts in enumerate(texts)]
        assert current(documents, matcher, segmenter) == reference(documents, matcher, segmenter)

    check()


def test_bundled_samples(setting: tuple[str, IllnessMatcher, Segmenter]) -> None:
    lang, matcher, segmenter = setting
    documents = [Document(record["id"], scrub_surrogates(record["text"]), {}, name, number)
                 for name in SAMPLES[lang]
                 for number, record in enumerate(map(json.loads, gzip.open(DATA / name, "rt", encoding="utf-8")))]
    rows, counts = current(documents, matcher, segmenter)
    assert (rows, counts) == reference(documents, matcher, segmenter)
    assert counts["sentences_kept"] > 100 and counts["sentences_segmented"] > 5 * counts["sentences_kept"]
