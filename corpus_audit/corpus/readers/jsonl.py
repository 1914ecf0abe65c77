"""JSON Lines: one record per line. Also read as :class:`LineBatch` es of raw lines (:func:`iter_line_batches`)
parsed elsewhere, e.g. in worker processes (:func:`read_line_batch`), with the same documents and counts."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from corpus_audit.corpus.documents import INVALID_UTF8, Document, ReaderOptions, ReadStats
from corpus_audit.corpus.readers import records
from corpus_audit.corpus.readers.records import TOO_DEEP, UNDECIDED, RecordConverter, json_error, loads_fast, too_deep
from corpus_audit.corpus.readers.streams import (STDIN, decode, disk_position, expand_paths, is_binary, numbered_lines,
                                                 open_binary, skipper, split_format)


def read(path: str, handle: BinaryIO, convert: RecordConverter) -> Iterator[Document]:
    stats, strict = convert.stats, convert.options.strict
    yield from read_lines(path, numbered_lines(handle, stats, skipper(stats, path, strict)), convert)


def read_lines(path: str, lines: Iterator[tuple[int, bytes]], convert: RecordConverter) -> Iterator[Document]:
    stats, strict = convert.stats, convert.options.strict
    fast = records.orjson is not None  # looked up here: the tests switch it off
    for number, raw in lines:
        if not raw.strip():
            continue
        record = loads_fast(raw) if fast else UNDECIDED  # orjson refuses invalid UTF-8: json decides
        repaired = False
        if record is UNDECIDED:
            text, repaired = decode(raw)
            try:
                record = json.loads(text)
            except ValueError as exc:
                stats.skip(json_error(exc), path, number, strict)
                continue
            except RecursionError:
                stats.skip(TOO_DEEP, path, number, strict)
                continue
        if too_deep(record, raw.count(b"[") + raw.count(b"{")):
            stats.skip(TOO_DEEP, path, number, strict)
            continue
        doc = convert(record, path, number, f"{path}:{number}")
        if doc is not None:
            if repaired:  # counted once the record is known to be a document, not a skipped one
                stats.repair(INVALID_UTF8, path, number, strict)
            yield doc


@dataclass(slots=True)
class LineBatch:
    """Consecutive raw lines of one JSON Lines input, from line ``first_line`` on.

    ``skips`` are the reading problems met right after these lines (truncated stream, empty or unopenable
    file) as ``(reason, line)``; whoever merges the parsed batches counts them, in order, after the batch.
    """

    source: str
    first_line: int
    data: bytes
    skips: list[tuple[str, int | None]] = field(default_factory=list)


def line_batch_files(inputs: Iterable[str], options: ReaderOptions) -> list[str] | None:
    """The files named by ``inputs`` if every one is read as JSON Lines (so can be read in line batches), else None."""
    files = expand_paths(inputs)
    formats = {options.format or ("jsonl" if path == STDIN else split_format(path)[0]) for path in files}
    return files if files and formats == {"jsonl"} else None


def iter_line_batches(files: Iterable[str], stats: ReadStats, batch_bytes: int = 1 << 20) -> Iterator[LineBatch]:
    """Raw lines of JSON Lines files in batches of about ``batch_bytes``, counting files and bytes in ``stats``.

    Lines are read exactly as :func:`read_file` reads them, so :func:`read_line_batch` on every batch, with
    the batch skips counted after each, gives the same documents and counts as ``read_file`` on every file.
    """
    files = list(files)
    # set now, before the first batch is asked for: a progress bar is made before it
    stats.disk_total = None if STDIN in files else sum(os.path.getsize(path) for path in files)
    return _line_batches(files, stats, batch_bytes)


def _line_batches(files: list[str], stats: ReadStats, batch_bytes: int) -> Iterator[LineBatch]:
    finished = 0  # bytes on disk of the files read to the end
    for path in files:
        stats.files += 1
        try:
            handle = open_binary(path)
        except OSError as exc:
            yield LineBatch(path, 1, b"", [(f"cannot open file ({exc.strerror or exc})", None)])
            continue
        if is_binary(handle):
            stats.binary.append(path)
        skips: list[tuple[str, int | None]] = []
        lines: list[bytes] = []
        size, first, last = 0, 1, 0
        with handle if path != STDIN else contextlib.nullcontext(handle):
            for last, raw in numbered_lines(handle, stats, lambda reason, line: skips.append((reason, line))):
                lines.append(raw)
                size += len(raw)
                if size >= batch_bytes:
                    stats.disk_read = finished + (disk_position(handle) or 0)
                    yield LineBatch(path, first, b"".join(lines))
                    lines, size, first = [], 0, last + 1
        if last == 0 and not skips:  # no bytes and no error: read_file's "empty file"
            skips.append(("empty file", None))
        if path != STDIN:
            finished += os.path.getsize(path)
            stats.disk_read = finished
        yield LineBatch(path, first, b"".join(lines), skips)


def read_line_batch(batch: LineBatch, options: ReaderOptions, stats: ReadStats) -> Iterator[Document]:
    """Documents of one batch (bad records counted in ``stats``; ``batch.skips`` are left to the caller)."""
    convert = RecordConverter(options, stats)
    lines = enumerate(io.BytesIO(batch.data), start=batch.first_line)  # splits on b"\n" only, like read_file
    for doc in read_lines(batch.source, lines, convert):
        stats.count(doc)
        yield doc
