"""The local engine: the filter in this process, or JSON Lines spread over worker processes (same rows, same
order, same counts); scoring in this process (:class:`~corpus_audit.score.scorer.LocalScorer`)."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from corpus_audit.corpus.documents import ReaderOptions
from corpus_audit.corpus.filter import filter_unit, init_filter_worker, merge_filtered
from corpus_audit.corpus.kept import FilterSummary, KeptSentence
from corpus_audit.corpus.matcher import IllnessMatcher
from corpus_audit.corpus.prefilter import LinePrefilter
from corpus_audit.corpus.readers import LineBatch
from corpus_audit.corpus.segment import Segmenter
from corpus_audit.corpus.writer import write_merged_rows

MAX_AUTO_WORKERS = 8  # each worker holds its own spaCy pipeline (about 150 MB)


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
    prefilter: LinePrefilter | None = None,
) -> Iterator[KeptSentence]:
    """:func:`iter_kept_sentences` over the documents of JSON Lines ``batches``, parsed and filtered by
    ``workers`` processes; yields the same sentences in the same order and leaves the same counts.

    With a ``prefilter``, this process scans each batch and sends only the lines it lets through to the workers,
    counting the others as documents.

    At most ``2 * workers + 2`` batches are in flight, so memory stays bounded whatever the input size.
    """
    keep_fields = tuple(keep_fields)
    # fork shares the matcher and settings without pickling and starts in milliseconds; elsewhere the
    # platform default (spawn) pickles them (the Segmenter pickles as its settings).
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    initargs = (options, matcher, segmenter, summary.lang, keep_fields)
    with context.Pool(workers, initializer=init_filter_worker, initargs=initargs) as pool:
        pending: deque[tuple[LineBatch, Any, int]] = deque()
        for batch in batches:
            if prefilter is None:
                pending.append((batch, pool.apply_async(filter_unit, (batch,)), 0))
            else:
                kept = prefilter.split(batch)
                pending.append((batch, pool.apply_async(filter_unit, (kept.runs,)) if kept.runs else None,
                                kept.plain_documents))
            if len(pending) > 2 * workers + 1:
                yield from _merge_result(*pending.popleft(), summary, options.strict)
        while pending:
            yield from _merge_result(*pending.popleft(), summary, options.strict)


def _merge_result(batch: LineBatch, result: Any, plain_documents: int, summary: FilterSummary,
                  strict: bool) -> Iterator[KeptSentence]:
    # get() re-raises a worker's CorpusError (strict mode) in input order
    kept, counted = result.get() if result is not None else ([], FilterSummary(lang=summary.lang))
    # Documents the pre-filter left out hold no term: read and dropped by the exact path, no more.
    counted.documents_processed += plain_documents
    counted.reading.documents += plain_documents
    return merge_filtered(kept, counted, batch.source, batch.skips, summary, strict)


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
    prefilter: LinePrefilter | None = None,
) -> FilterSummary:
    """:func:`run_filter` for JSON Lines ``batches`` (counted into ``summary.reading``), with ``workers`` processes
    (and a ``prefilter`` in this process)."""
    keep_fields = list(keep_fields)
    start = time.perf_counter()
    rows = iter_kept_sentences_parallel(batches, options, matcher, segmenter, summary, keep_fields, workers,
                                        prefilter)
    return write_merged_rows(rows, summary, output, keep_fields, progress, start)
