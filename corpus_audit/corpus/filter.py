"""The filter stage: reader -> pre-filter -> segmenter -> matcher, lazily, counting everything.

:func:`iter_kept_sentences` is the pipeline over documents; :func:`init_filter_worker` / :func:`filter_unit` run
it on a unit of input (a JSON Lines batch or a file) in a worker process of an engine, and :func:`merge_filtered`
counts a unit's results into the run's summary in input order, so every engine leaves the same rows and counts.
:func:`run_filter` is the single-process run; the engines (``corpus_audit.engines``) choose how to run it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from tqdm import tqdm

from corpus_audit.common.resources import sha256_file
from corpus_audit.corpus.documents import Document, ReaderOptions, ReadStats, field_text
from corpus_audit.corpus.kept import FilterSummary, KeptSentence
from corpus_audit.corpus.matcher import IllnessMatcher
from corpus_audit.corpus.prefilter import LinePrefilter
from corpus_audit.corpus.readers import STDIN, LineBatch, expand_paths, read_file, read_line_batch
from corpus_audit.corpus.segment import Segmenter, import_spacy_without_torch
from corpus_audit.corpus.writer import finish, write_parquet
from corpus_audit.stigma.quadrants import illness_type_of


def iter_kept_sentences(
    documents: Iterable[Document],
    matcher: IllnessMatcher,
    segmenter: Segmenter,
    summary: FilterSummary,
    keep_fields: Iterable[str] = (),
) -> Iterator[KeptSentence]:
    """Lazily yield the sentences that mention an illness, counting everything in ``summary``.

    Documents without any lexicon term on word boundaries are dropped before segmentation (the cheap
    Aho-Corasick pre-filter), which is what makes a pass over a large corpus fast; in the others, only the
    sentences that hold a term's spelling are cut out and matched, the others are only counted.
    """
    keep_fields = tuple(keep_fields)
    for doc in documents:
        summary.documents_processed += 1
        lines, whole = segmenter.lines(doc.text)
        # A line without a term on word boundaries holds no sentence that matches (a sentence is cut at a token
        # after punctuation, so its edges are word boundaries of the line too): its sentences are only counted.
        has_candidate, spans = matcher.candidate_spans(lines)
        if not (has_candidate if whole else matcher.has_candidate(doc.text)):
            continue
        summary.documents_with_candidates += 1
        fields = {name: _field_value(doc, name) for name in keep_fields}
        matched = False
        count, sentences = segmenter.document_sentences(lines, spans)
        summary.sentences_segmented += count
        for index, sentence in sentences:
            matches = matcher.find(sentence)
            if not matches:
                continue
            matched = True
            illnesses = sorted({m.illness for m in matches})
            kind = illness_type_of(m.type for m in matches)
            summary.sentences_kept += 1
            summary.sentences_by_type[kind] += 1
            summary.sentences_by_illness.update(illnesses)
            summary.mentions_by_illness.update(m.illness for m in matches)
            summary.mentions_by_form.update((m.form, m.type) for m in matches)
            summary.terms.update(m.surface.lower() for m in matches)
            yield KeptSentence(doc.id, index, sentence, [m.surface for m in matches],
                               [[m.start, m.end] for m in matches], illnesses, kind, fields, [m.form for m in matches])
        if matched:
            summary.documents_matched += 1


def merge_filtered(kept: list[KeptSentence], counted: FilterSummary, source: str,
                   skips: Iterable[tuple[str, int | None]], summary: FilterSummary, strict: bool) -> Iterator[KeptSentence]:
    """Count what :func:`filter_unit` returned into ``summary``, then the reading problems ``skips`` of
    ``source`` met after it (a batch's ``skips``), and yield the kept sentences.

    Called on the units in input order, this leaves the counts and examples a single process would."""
    summary.merge(counted)
    for reason, line in skips:
        summary.reading.skip(reason, source, line, strict)
    yield from kept


_worker_state: tuple[ReaderOptions, IllnessMatcher, Segmenter, str, tuple[str, ...]] | None = None


def init_filter_worker(
    options: ReaderOptions, matcher: IllnessMatcher, segmenter: Segmenter, lang: str, keep_fields: tuple[str, ...]
) -> None:
    """Set up a worker process (a pool process, or a Ray actor) to run :func:`filter_unit`."""
    global _worker_state
    if segmenter.needs_spacy_blank:
        # A worker only splits sentences with the blank pipeline: skip the 1.2 s torch import thinc would do.
        import_spacy_without_torch()
    _worker_state = (options, matcher, segmenter, lang, keep_fields)


def filter_unit(unit: LineBatch | list[LineBatch] | str) -> tuple[list[KeptSentence], FilterSummary]:
    """The kept sentences and counts of a JSON Lines batch (``batch.skips`` left to :func:`merge_filtered`), of the
    runs of lines of a batch that the pre-filter let through (``corpus_audit.corpus.prefilter``), or of a whole file
    of any format given by its path, in a worker set up by :func:`init_filter_worker`."""
    assert _worker_state is not None, "worker not initialised"
    options, matcher, segmenter, lang, keep_fields = _worker_state
    counted = FilterSummary(lang=lang)
    if isinstance(unit, LineBatch):
        documents = read_line_batch(unit, options, counted.reading)
    elif isinstance(unit, list):
        documents = chain.from_iterable(read_line_batch(run, options, counted.reading) for run in unit)
    else:
        documents = read_file(unit, options, counted.reading)
    return list(iter_kept_sentences(documents, matcher, segmenter, counted, keep_fields)), counted


def filter_prefiltered(batch: LineBatch, scanner: LinePrefilter) -> tuple[list[KeptSentence], FilterSummary]:
    """:func:`filter_unit` of a JSON Lines batch after ``scanner``'s pre-filter, in the same worker: only the lines
    it lets through are read; the others count as documents (:func:`count_plain_documents`)."""
    kept_lines = scanner.split(batch)
    kept, counted = filter_unit(kept_lines.runs)
    count_plain_documents(counted, kept_lines.plain_documents)
    return kept, counted


def count_plain_documents(counted: FilterSummary, documents: int) -> None:
    """Count ``documents`` that the pre-filter left out: they hold no term, so the exact path would have read and
    dropped them, and counted no more."""
    counted.documents_processed += documents
    counted.reading.documents += documents


#: The keep-field that holds each document's input file. ``source`` names it too, for records without a field of
#: that name: a record's own ``source`` field is never overwritten.
SOURCE_FILE = "source_file"


def _field_value(doc: Document, name: str) -> str | None:
    # Kept fields are stored as strings so every batch has the same Parquet schema whatever the input.
    if name == SOURCE_FILE or (name == "source" and "source" not in doc.meta):
        return doc.source
    return field_text(doc.meta.get(name))


def _with_progress(documents: Iterable[Document], stats: ReadStats, enabled: bool) -> Iterator[Document]:
    """Pass documents through while a tqdm bar shows documents/s and MB/s (on stderr)."""
    bar = tqdm(documents, unit=" docs", disable=not enabled, mininterval=0.5, smoothing=0.1)
    start = time.perf_counter()
    last = start
    for doc in bar:
        yield doc
        now = time.perf_counter()
        if enabled and now - last >= 0.5:
            last = now
            bar.set_postfix_str(f"{stats.bytes_read / 1e6 / (now - start):.1f} MB/s, {stats.bytes_read / 1e6:.0f} MB", refresh=False)
    bar.close()


def run_filter(
    documents: Iterable[Document],
    summary: FilterSummary,
    output: str | Path,
    matcher: IllnessMatcher,
    segmenter: Segmenter,
    keep_fields: Iterable[str] = (),
    progress: bool = False,
) -> FilterSummary:
    """Filter ``documents`` into ``output`` (Parquet) and ``<output stem>.summary.json``; return the summary.

    ``documents`` must report into ``summary.reading`` (pass it as the readers' ``stats``).
    """
    keep_fields = list(keep_fields)
    start = time.perf_counter()
    stream = _with_progress(documents, summary.reading, progress)
    write_parquet(iter_kept_sentences(stream, matcher, segmenter, summary, keep_fields), output, keep_fields)
    return finish(summary, output, start)


def lexicon_info(path: str | Path, terms: str) -> dict[str, str]:
    """Provenance of the lexicon and term set used (recorded in the summary)."""
    return {"lexicon": str(path), "lexicon_sha256": sha256_file(Path(path)), "terms": terms}


@dataclass
class CorpusSpec:
    """What to read: files/globs/folders/stdin (or a Hugging Face dataset) and how to turn records into documents."""

    inputs: tuple[str, ...]
    options: ReaderOptions = field(default_factory=ReaderOptions)
    limit: int | None = None
    sample: float | None = None
    seed: int = 0
    hf_dataset: str | None = None
    hf_config: str | None = None
    hf_split: str = "train"

    def identity(self) -> list[Any]:
        """Files by path, size and modification time, for checkpoints (stdin and hub datasets cannot be
        fingerprinted: a fresh value each time, so they are never resumed)."""
        if self.hf_dataset or STDIN in self.inputs:
            return [time.time()]
        return [(path, Path(path).stat().st_size, Path(path).stat().st_mtime_ns) for path in expand_paths(self.inputs)]
