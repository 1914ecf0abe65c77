"""``.json``: a JSON array of records, or JSON Lines."""

from __future__ import annotations

import io
import itertools
import json
import re
from collections.abc import Iterator
from typing import BinaryIO

from corpus_audit.corpus.documents import Document, INVALID_UTF8, has_surrogates, repair_escaped, truncation
from corpus_audit.corpus.readers.jsonl import read_lines
from corpus_audit.corpus.readers.records import TOO_DEEP, RecordConverter, json_error, too_deep
from corpus_audit.corpus.readers.streams import BOM, STREAM_ERRORS, numbered_lines, skipper


def read(path: str, handle: BinaryIO, convert: RecordConverter) -> Iterator[Document]:
    """A .json file is either a JSON array of records (loaded whole) or JSON Lines."""
    stats, strict = convert.stats, convert.options.strict
    buffered = io.BufferedReader(handle) if not isinstance(handle, io.BufferedIOBase) else handle
    try:
        head = buffered.peek(64).removeprefix(BOM).lstrip()
    except STREAM_ERRORS as exc:
        stats.skip(truncation(exc), path, None, strict)
        return
    if not head.startswith(b"["):
        yield from read_lines(path, numbered_lines(buffered, stats, skipper(stats, path, strict)), convert)
        return
    try:
        data = buffered.read()
    except STREAM_ERRORS as exc:
        stats.skip(truncation(exc), path, None, strict)
        return
    stats.bytes_read += len(data)
    yield from _read_json_array(path, data.removeprefix(BOM), convert)


_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _read_json_array(path: str, data: bytes, convert: RecordConverter) -> Iterator[Document]:
    """The records of a JSON array, decoded one at a time, so that a bad record (too deep, not an object...) is
    skipped alone, a record with invalid UTF-8 is repaired alone, and a syntax error, after which records cannot
    be delimited, ends the file but keeps the records before it. Documents' lines are where their records start;
    default ids keep the record's position in the array."""
    stats, strict = convert.stats, convert.options.strict
    try:
        text = data.decode("utf-8")
        invalid_bytes = False
    except UnicodeDecodeError:
        # Each invalid byte becomes a lone surrogate, which valid UTF-8 never decodes to: records holding one
        # are the ones with invalid bytes (inside their strings: JSON has no other place for them).
        text = data.decode("utf-8", "surrogateescape")
        invalid_bytes = True
    decoder = json.JSONDecoder()
    position = _JSON_SPACE.match(text, text.index("[") + 1).end()
    line, counted_to = 1, 0
    if text.startswith("]", position):
        position += 1
    else:
        for index in itertools.count(1):
            line += text.count("\n", counted_to, position)
            counted_to, start = position, position
            try:
                record, position = decoder.raw_decode(text, position)
            except ValueError as exc:
                stats.skip(json_error(exc) + "; rest of file skipped", path, getattr(exc, "lineno", line), strict)
                return
            except RecursionError:
                stats.skip(TOO_DEEP + "; rest of file skipped", path, line, strict)
                return
            repaired = invalid_bytes and has_surrogates(text[start:position])
            if repaired:  # parsed again from its bytes, each invalid sequence replaced by U+FFFD
                record = json.loads(repair_escaped(text[start:position]))
            if too_deep(record, text.count("[", start, position) + text.count("{", start, position)):
                stats.skip(TOO_DEEP, path, line, strict)
            elif (doc := convert(record, path, line, f"{path}:{index}")) is not None:
                if repaired:
                    stats.repair(INVALID_UTF8, path, line, strict)
                yield doc
            position = _JSON_SPACE.match(text, position).end()
            if text.startswith(",", position):
                position = _JSON_SPACE.match(text, position + 1).end()
                continue
            if text.startswith("]", position):
                position += 1
                break
            reason = "malformed JSON (Expecting ',' delimiter); rest of file skipped"
            stats.skip(reason, path, line + text.count("\n", start, position), strict)
            return
    if _JSON_SPACE.match(text, position).end() != len(text):
        stats.skip("malformed JSON (Extra data after the array)", path, 1 + text.count("\n", 0, position), strict)
