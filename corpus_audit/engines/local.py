"""The local engine: the filter in this process, or JSON Lines spread over worker processes (same rows, same
order, same counts); scoring in this process (:class:`~corpus_audit.score.scorer.LocalScorer`)."""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus_audit.common.resources import usable_cpus
from corpus_audit.corpus.documents import ReaderOptions
from corpus_audit.corpus.filter import count_plain_documents, filter_unit, init_filter_worker, merge_filtered
from corpus_audit.corpus.kept import FilterSummary, KeptSentence
from corpus_audit.corpus.matcher import IllnessMatcher
from corpus_audit.corpus.prefilter import line_prefilter
from corpus_audit.corpus.readers import LineBatch
from corpus_audit.corpus.segment import Segmenter
from corpus_audit.corpus.writer import write_merged_rows

MAX_AUTO_WORKERS = 8  # each worker holds its own matcher and tokenizer cache
#: Bytes of JSON Lines sent to the workers and not yet merged, per worker (about two batches each).
IN_FLIGHT_BYTES_PER_WORKER = 2 << 20


def default_workers() -> int:
    """One worker per CPU this process may use, at most ``MAX_AUTO_WORKERS``.

    No CPU is kept for this process's pre-filter: it costs about a tenth of a worker's CPU time per megabyte, and on
    2 CPUs two workers beside it filter 200 MB 1.4-1.5x faster than one (docs/performance.md)."""
    return max(1, min(usable_cpus(), MAX_AUTO_WORKERS))


@dataclass
class _Unit:
    """A batch in flight: where its reading problems go, its worker's result (None: nothing was sent), the bytes
    sent, and the documents the pre-filter counted."""

    source: str
    skips: list[tuple[str, int | None]]
    result: Any
    size: int
    plain_documents: int


def iter_kept_sentences_parallel(
    batches: Iterable[LineBatch],
    options: ReaderOptions,
    matcher: IllnessMatcher,
    segmenter: Segmenter,
    summary: FilterSummary,
    keep_fields: Iterable[str] = (),
    workers: int = 2,
    prefilter: bool = False,
) -> Iterator[KeptSentence]:
    """:func:`iter_kept_sentences` over the documents of JSON Lines ``batches``, parsed and filtered by
    ``workers`` processes; yields the same sentences in the same order and leaves the same counts.

    With ``prefilter`` (and Hyperscan installed), this process scans each batch
    (:mod:`corpus_audit.corpus.prefilter`) and sends only the lines it lets through to the workers, counting the
    others as documents.

    At most ``IN_FLIGHT_BYTES_PER_WORKER`` bytes per worker are sent and not yet merged, so memory stays bounded
    whatever the input size.
    """
    keep_fields = tuple(keep_fields)
    # fork shares the matcher and settings without pickling and starts in milliseconds; elsewhere the
    # platform default (spawn) pickles them (the Segmenter pickles as its settings).
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    if not segmenter.needs_spacy_blank:  # the shipped rules, read once here rather than in each worker
        segmenter.prepare()
    initargs = (options, matcher, segmenter, summary.lang, keep_fields)
    # Ctrl-C reaches the whole process group: the workers ignore it (from the fork on, and after their setup), so
    # only this process, which knows what to report, stops, and no worker prints a traceback.
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    try:
        pool = context.Pool(workers, initializer=_init_worker, initargs=initargs)
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous)
    with pool:
        # Built once the workers are starting (they import spaCy meanwhile); None without Hyperscan.
        scanner = line_prefilter(matcher, options.text_field) if prefilter else None
        pending: deque[_Unit] = deque()
        in_flight = 0
        for batch in batches:
            if scanner is None:
                pending.append(_Unit(batch.source, batch.skips, pool.apply_async(filter_unit, (batch,)),
                                     len(batch.data), 0))
            else:
                kept = scanner.split(batch)
                size = sum(len(run.data) for run in kept.runs)
                pending.append(_Unit(batch.source, batch.skips, pool.apply_async(filter_unit, (kept.runs,))
                                     if kept.runs else None, size, kept.plain_documents))
            in_flight += pending[-1].size
            # Merge what is done, and wait for the oldest while too much is in flight; a pre-filtered batch often
            # sends nothing, so this process scans on while the workers start.
            while pending and (pending[0].result is None or pending[0].result.ready()
                               or in_flight > IN_FLIGHT_BYTES_PER_WORKER * workers):
                in_flight -= pending[0].size
                yield from _merge_result(pending.popleft(), summary, options.strict)
        while pending:
            yield from _merge_result(pending.popleft(), summary, options.strict)


def _init_worker(*state: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    init_filter_worker(*state)


def _merge_result(unit: _Unit, summary: FilterSummary, strict: bool) -> Iterator[KeptSentence]:
    # get() re-raises a worker's CorpusError (strict mode) in input order
    kept, counted = unit.result.get() if unit.result is not None else ([], FilterSummary(lang=summary.lang))
    count_plain_documents(counted, unit.plain_documents)
    return merge_filtered(kept, counted, unit.source, unit.skips, summary, strict)


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
    prefilter: bool = False,
) -> FilterSummary:
    """:func:`run_filter` for JSON Lines ``batches`` (counted into ``summary.reading``), with ``workers`` processes
    (and a ``prefilter`` in this process)."""
    keep_fields = list(keep_fields)
    start = time.perf_counter()
    rows = iter_kept_sentences_parallel(batches, options, matcher, segmenter, summary, keep_fields, workers,
                                        prefilter)
    return write_merged_rows(rows, summary, output, keep_fields, progress, start)
