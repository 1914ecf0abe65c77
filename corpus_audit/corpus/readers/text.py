"""Plain text: a file is one document, or (``line_docs``) each non-empty line is one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from corpus_audit.corpus.documents import Document, INVALID_UTF8, truncation
from corpus_audit.corpus.readers.records import RecordConverter
from corpus_audit.corpus.readers.streams import BOM, STREAM_ERRORS, decode, numbered_lines, skipper


def read(path: str, handle: BinaryIO, convert: RecordConverter) -> Iterator[Document]:
    stats, opts = convert.stats, convert.options
    if opts.line_docs:
        for number, raw in numbered_lines(handle, stats, skipper(stats, path, opts.strict)):
            text, repaired = decode(raw)
            if repaired:  # never blank: U+FFFD is no space
                stats.repair(INVALID_UTF8, path, number, opts.strict)
            if text.strip():
                yield Document(f"{path}:{number}", text.rstrip("\r\n"), {}, path, number)
            else:  # counted so that line numbers add up, but never an error, not even in strict mode
                stats.skipped["blank line"] += 1
        return
    # A .txt file is one document, read whole (use --line-docs for huge one-record-per-line files).
    try:
        data = handle.read()
    except STREAM_ERRORS as exc:
        stats.skip(truncation(exc), path, None, opts.strict)
        return
    stats.bytes_read += len(data)
    text, repaired = decode(data.removeprefix(BOM))
    if repaired:
        stats.repair(INVALID_UTF8, path, 1, opts.strict)
    if text.strip():
        yield Document(path, text, {}, path, None)
