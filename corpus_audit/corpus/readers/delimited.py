"""CSV and TSV with a header row."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from corpus_audit.corpus.documents import Document, INVALID_UTF8, has_surrogates, repair_escaped, truncation
from corpus_audit.corpus.readers.records import RecordConverter
from corpus_audit.corpus.readers.streams import STREAM_ERRORS, CountingReader

# The csv module refuses fields above 128 KB by default, which would drop long documents; this limit only
# bounds the memory an unclosed quote (a field running to the end of the file) can take.
MAX_CSV_FIELD_CHARS = 1 << 24
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what the csv module counts as the end of a line


def read_csv(path: str, handle: BinaryIO, convert: RecordConverter) -> Iterator[Document]:
    return _read_delimited(path, handle, ",", convert)


def read_tsv(path: str, handle: BinaryIO, convert: RecordConverter) -> Iterator[Document]:
    return _read_delimited(path, handle, "\t", convert)


def _read_delimited(path: str, handle: BinaryIO, delimiter: str, convert: RecordConverter) -> Iterator[Document]:
    stats, strict = convert.stats, convert.options.strict
    # surrogateescape keeps the stream going past bad bytes; rows holding them are repaired below.
    # utf-8-sig drops a byte-order mark, which would otherwise rename the first column.
    counting = CountingReader(handle, stats)
    text = io.TextIOWrapper(counting, encoding="utf-8-sig", errors="surrogateescape", newline="")
    csv.field_size_limit(max(csv.field_size_limit(), MAX_CSV_FIELD_CHARS))
    reader = csv.DictReader(text, delimiter=delimiter)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            stats.skip(f"malformed CSV ({exc})", path, reader.line_num, strict)
            continue
        except STREAM_ERRORS as exc:
            stats.skip(truncation(exc), path, reader.line_num + 1, strict)
            return
        # line_num is the record's last line (after the header and any blank lines the reader skipped): its
        # first line is that less the line breaks inside its quoted fields.
        line = reader.line_num - _line_breaks(row)
        if None in row:  # more cells than header columns
            stats.skip("row has more cells than the header", path, line, strict)
            continue
        repaired = any(isinstance(v, str) and has_surrogates(v) for v in row.values())
        if repaired:
            row = {name: repair_escaped(v) if isinstance(v, str) else v for name, v in row.items()}
        doc = convert(row, path, line, f"{path}:{line}")
        if doc is not None:
            if repaired:
                stats.repair(INVALID_UTF8, path, line, strict)
            yield doc


def _line_breaks(row: dict[Any, Any]) -> int:
    """Line breaks inside the cells of a CSV row (extra cells are a list under the key None)."""
    count = 0
    for value in row.values():
        for cell in value if isinstance(value, list) else (value,):
            if cell and ("\n" in cell or "\r" in cell):
                count += len(_LINE_BREAK.findall(cell))
    return count
