"""Compose reader -> pre-filter -> segmenter -> matcher, and write the kept sentences to Parquet.

:func:`iter_kept_sentences` is the lazy pipeline (reused by later commands); :func:`run_filter` drives it,
writes Parquet in row batches to a temporary file renamed into place, and writes a JSON summary beside it.
:func:`iter_kept_sentences_parallel` / :func:`run_filter_parallel` do the same for JSON Lines input with the
parsing, matching and sentence splitting spread over worker processes: same rows, same order, same counts.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from corpus_audit.atomic import atomic_path, write_text_atomic
from corpus_audit.matcher import IllnessMatcher, illness_type
from corpus_audit.readers import (Document, LineBatch, ReaderOptions, ReadStats, field_text, read_file,
                                   read_line_batch)
from corpus_audit.resources import sha256_file
from corpus_audit.segment import Segmenter, import_spacy_without_torch

if TYPE_CHECKING:
    from corpus_audit.engines import EngineOptions

BATCH_ROWS = 5_000
BASE_COLUMNS = ("doc_id", "sentence_index", "sentence", "terms", "illnesses", "illness_type")
MAX_AUTO_WORKERS = 8  # each worker holds its own spaCy pipeline (about 150 MB)


@dataclass(slots=True)
class KeptSentence:
    """A sentence that mentions at least one illness."""

    doc_id: str
    sentence_index: int
    sentence: str
    terms: list[str]
    illnesses: list[str]
    illness_type: str
    fields: dict[str, Any]

    def to_row(self) -> dict[str, Any]:
        row = {name: getattr(self, name) for name in BASE_COLUMNS}
        row.update(self.fields)
        return row


@dataclass
class FilterSummary:
    """Counts for one run; ``reading`` is filled by the readers as documents stream past."""

    lang: str
    reading: ReadStats = field(default_factory=ReadStats)
    documents_processed: int = 0
    documents_with_candidates: int = 0
    documents_matched: int = 0
    sentences_segmented: int = 0
    sentences_kept: int = 0
    sentences_by_type: Counter = field(default_factory=Counter)
    sentences_by_illness: Counter = field(default_factory=Counter)
    mentions_by_illness: Counter = field(default_factory=Counter)
    terms: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        reading = self.reading.to_dict()
        return {
            "lang": self.lang,
            **reading,
            "documents_processed": self.documents_processed,
            "documents_with_candidates": self.documents_with_candidates,
            "documents_matched": self.documents_matched,
            "sentences_segmented": self.sentences_segmented,
            "sentences_kept": self.sentences_kept,
            "sentences_by_type": {k: self.sentences_by_type.get(k, 0) for k in ("mental", "physical", "both")},
            "sentences_by_illness": dict(self.sentences_by_illness.most_common()),
            "mentions_by_illness": dict(self.mentions_by_illness.most_common()),
            "top_terms": dict(self.terms.most_common(50)),
            "seconds": round(self.seconds, 3),
            "megabytes_per_second": round(reading["bytes_read"] / 1e6 / self.seconds, 3) if self.seconds else None,
            **self.extra,
        }

    def merge(self, other: FilterSummary) -> None:
        """Add the counts of ``other`` (the documents that follow those counted here)."""
        self.reading.merge(other.reading)
        self.documents_processed += other.documents_processed
        self.documents_with_candidates += other.documents_with_candidates
        self.documents_matched += other.documents_matched
        self.sentences_segmented += other.sentences_segmented
        self.sentences_kept += other.sentences_kept
        for name in ("sentences_by_type", "sentences_by_illness", "mentions_by_illness", "terms"):
            getattr(self, name).update(getattr(other, name))

    def format_text(self) -> str:
        """Human-readable summary for the terminal."""
        data = self.to_dict()
        lines = [
            f"documents read: {data['documents_read']} ({data['bytes_read'] / 1e6:.1f} MB from {data['files']} source(s)),"
            f" processed: {data['documents_processed']}, matched: {data['documents_matched']}",
            f"sentences kept: {data['sentences_kept']} (mental {data['sentences_by_type']['mental']},"
            f" physical {data['sentences_by_type']['physical']}, both {data['sentences_by_type']['both']})",
        ]
        if data["sentences_by_illness"]:
            lines.append("sentences per illness: " + ", ".join(f"{k} {v}" for k, v in data["sentences_by_illness"].items()))
        lines.append(f"records skipped: {data['records_skipped']}")
        lines.extend(f"  {reason}: {count}" for reason, count in data["skipped_by_reason"].items())
        lines.append(f"time: {data['seconds']} s")
        return "\n".join(lines)


def iter_kept_sentences(
    documents: Iterable[Document],
    matcher: IllnessMatcher,
    segmenter: Segmenter,
    summary: FilterSummary,
    keep_fields: Iterable[str] = (),
) -> Iterator[KeptSentence]:
    """Lazily yield the sentences that mention an illness, counting everything in ``summary``.

    Documents without any lexicon term on word boundaries are dropped before segmentation (the cheap
    Aho-Corasick pre-filter), which is what makes a pass over a large corpus fast.
    """
    keep_fields = tuple(keep_fields)
    for doc in documents:
        summary.documents_processed += 1
        if not matcher.has_candidate(doc.text):
            continue
        summary.documents_with_candidates += 1
        fields = {name: _field_value(doc, name) for name in keep_fields}
        matched = False
        for index, sentence in enumerate(segmenter.sentences(doc.text)):
            summary.sentences_segmented += 1
            matches = matcher.find(sentence)
            if not matches:
                continue
            matched = True
            illnesses = sorted({m.illness for m in matches})
            kind = illness_type(matches)
            summary.sentences_kept += 1
            summary.sentences_by_type[kind] += 1
            summary.sentences_by_illness.update(illnesses)
            summary.mentions_by_illness.update(m.illness for m in matches)
            summary.terms.update(m.surface.lower() for m in matches)
            yield KeptSentence(doc.id, index, sentence, [m.surface for m in matches], illnesses, kind, fields)
        if matched:
            summary.documents_matched += 1


def default_workers() -> int:
    """One worker per CPU this process may use, at most ``MAX_AUTO_WORKERS``."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cpus, MAX_AUTO_WORKERS))


def iter_kept_sentences_parallel(
    batches: Iterable[LineBatch],
    options: ReaderOptions,
    matcher: IllnessMatcher,
    segmenter: Segmenter,
    summary: FilterSummary,
    keep_fields: Iterable[str] = (),
    workers: int = 2,
) -> Iterator[KeptSentence]:
    """:func:`iter_kept_sentences` over the documents of JSON Lines ``batches``, parsed and filtered by
    ``workers`` processes; yields the same sentences in the same order and leaves the same counts.

    At most ``2 * workers + 2`` batches are in flight, so memory stays bounded whatever the input size.
    """
    keep_fields = tuple(keep_fields)
    # fork shares the matcher and settings without pickling and starts in milliseconds; elsewhere the
    # platform default (spawn) pickles them (the Segmenter pickles as its settings).
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    initargs = (options, matcher, segmenter, summary.lang, keep_fields)
    with context.Pool(workers, initializer=init_filter_worker, initargs=initargs) as pool:
        pending: deque[tuple[LineBatch, Any]] = deque()
        for batch in batches:
            pending.append((batch, pool.apply_async(filter_unit, (batch,))))
            if len(pending) > 2 * workers + 1:
                yield from _merge_result(*pending.popleft(), summary, options.strict)
        while pending:
            yield from _merge_result(*pending.popleft(), summary, options.strict)


def _merge_result(batch: LineBatch, result: Any, summary: FilterSummary, strict: bool) -> Iterator[KeptSentence]:
    # get() re-raises a worker's CorpusError (strict mode) in input order
    return merge_filtered(*result.get(), batch.source, batch.skips, summary, strict)


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
    if segmenter.model is None:
        # A worker only splits sentences with the blank pipeline: skip the 1.2 s torch import thinc would do.
        import_spacy_without_torch()
    _worker_state = (options, matcher, segmenter, lang, keep_fields)


def filter_unit(unit: LineBatch | str) -> tuple[list[KeptSentence], FilterSummary]:
    """The kept sentences and counts of a JSON Lines batch (``batch.skips`` left to :func:`merge_filtered`), or of
    a whole file of any format given by its path, in a worker set up by :func:`init_filter_worker`."""
    assert _worker_state is not None, "worker not initialised"
    options, matcher, segmenter, lang, keep_fields = _worker_state
    counted = FilterSummary(lang=lang)
    if isinstance(unit, LineBatch):
        documents = read_line_batch(unit, options, counted.reading)
    else:
        documents = read_file(unit, options, counted.reading)
    return list(iter_kept_sentences(documents, matcher, segmenter, counted, keep_fields)), counted


def _field_value(doc: Document, name: str) -> str | None:
    # Kept fields are stored as strings so every batch has the same Parquet schema whatever the input.
    return doc.source if name == "source" else field_text(doc.meta.get(name))


def output_schema(keep_fields: Iterable[str]) -> pa.Schema:
    """Parquet schema of the filter output."""
    return pa.schema(
        [
            ("doc_id", pa.string()),
            ("sentence_index", pa.int32()),
            ("sentence", pa.string()),
            ("terms", pa.list_(pa.string())),
            ("illnesses", pa.list_(pa.string())),
            ("illness_type", pa.string()),
            *[(name, pa.string()) for name in keep_fields],
        ]
    )


def summary_path_for(output: str | Path) -> Path:
    """``out.parquet`` -> ``out.summary.json``."""
    output = Path(output)
    return output.with_name(output.stem + ".summary.json")


def write_parquet(rows: Iterable[KeptSentence], output: str | Path, keep_fields: Iterable[str]) -> int:
    """Write rows in batches of ``BATCH_ROWS`` to ``output`` atomically; return the number of rows."""
    schema = output_schema(keep_fields)
    count = 0
    with atomic_path(output) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(row.to_row())
            if len(batch) >= BATCH_ROWS:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                count += len(batch)
                batch.clear()
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            count += len(batch)
    return count


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
    return _finish(summary, output, start)


def run_filter_parallel(
    batches: Iterable[LineBatch],
    options: ReaderOptions,
    summary: FilterSummary,
    output: str | Path,
    matcher: IllnessMatcher,
    segmenter: Segmenter,
    keep_fields: Iterable[str] = (),
    workers: int = 2,
    progress: bool = False,
) -> FilterSummary:
    """:func:`run_filter` for JSON Lines ``batches`` (counted into ``summary.reading``), with ``workers`` processes."""
    keep_fields = list(keep_fields)
    start = time.perf_counter()
    rows = iter_kept_sentences_parallel(batches, options, matcher, segmenter, summary, keep_fields, workers)
    return write_merged_rows(rows, summary, output, keep_fields, progress, start)


def write_merged_rows(rows: Iterable[KeptSentence], summary: FilterSummary, output: str | Path,
                      keep_fields: list[str], progress: bool, start: float) -> FilterSummary:
    """Write ``rows`` merged from workers (which count the documents read into ``summary.reading`` as they
    are merged) to ``output`` and the summary beside it; ``start`` is when the run began."""
    write_parquet(_rows_with_progress(rows, summary.reading, progress), output, keep_fields)
    return _finish(summary, output, start)


def _rows_with_progress(rows: Iterable[KeptSentence], stats: ReadStats, enabled: bool) -> Iterator[KeptSentence]:
    """Pass rows through while a tqdm bar follows the documents read (updated as batches are merged)."""
    with tqdm(unit=" docs", disable=not enabled, mininterval=0.5) as bar:
        for row in rows:
            bar.update(stats.documents - bar.n)
            yield row
        bar.update(stats.documents - bar.n)


def _finish(summary: FilterSummary, output: str | Path, start: float) -> FilterSummary:
    summary.seconds = time.perf_counter() - start
    summary.extra.setdefault("output", str(output))
    write_text_atomic(summary_path_for(output), json.dumps(summary.to_dict(), indent=2, ensure_ascii=False) + "\n")
    return summary


def lexicon_info(path: str | Path) -> dict[str, str]:
    """Provenance of the lexicon used (recorded in the summary)."""
    return {"lexicon": str(path), "lexicon_sha256": sha256_file(Path(path))}


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


def filter_corpus(
    spec: CorpusSpec,
    output: str | Path,
    lang: str,
    lexicon_path: str | Path | None = None,
    spacy_model: str | None = None,
    keep_fields: Iterable[str] = (),
    workers: int | None = None,
    progress: bool = False,
    engine: EngineOptions | None = None,
) -> FilterSummary:
    """Filter a corpus into ``output`` (Parquet) and its summary JSON; the entry point of ``filter`` and ``audit``.

    Local engine: JSON Lines files are spread over ``workers`` processes (default: one per CPU); other
    inputs, and runs with ``limit``/``sample`` (which need one ordered stream), are read in this process.
    Ray engine: see :func:`corpus_audit.ray_engine.filter_corpus_ray` (same rows and counts). Raises
    ``CorpusError``, ``LexiconError``, ``SegmenterError``, ``EngineError`` or ``OSError`` for the caller to report.
    """
    from corpus_audit.matcher import default_lexicon_path
    from corpus_audit.readers import iter_documents, iter_line_batches, line_batch_files

    lexicon_path = lexicon_path or default_lexicon_path(lang)
    matcher = IllnessMatcher.from_csv(lexicon_path)
    segmenter = Segmenter(lang, spacy_model)
    summary = FilterSummary(lang=lang, extra=lexicon_info(lexicon_path))
    if engine is not None and engine.is_ray:
        from corpus_audit.ray_engine import filter_corpus_ray

        return filter_corpus_ray(spec, output, matcher, segmenter, summary, list(keep_fields), engine, progress)
    workers = workers or default_workers()
    parallel = workers > 1 and not (spec.hf_dataset or spec.limit or spec.sample)
    files = line_batch_files(spec.inputs, spec.options) if parallel else None
    if files:
        batches = iter_line_batches(files, summary.reading)
        return run_filter_parallel(batches, spec.options, summary, output, matcher, segmenter, keep_fields, workers,
                                   progress)
    documents = iter_documents(spec.inputs, spec.options, summary.reading, limit=spec.limit, sample=spec.sample,
                               seed=spec.seed, hf_dataset=spec.hf_dataset, hf_config=spec.hf_config,
                               hf_split=spec.hf_split)
    return run_filter(documents, summary, output, matcher, segmenter, keep_fields, progress=progress)
