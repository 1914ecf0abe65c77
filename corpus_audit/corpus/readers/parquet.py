"""Parquet, read row group by row group (a damaged one loses only its own rows, counted)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpus_audit.corpus.documents import Document, INVALID_UTF8, truncation
from corpus_audit.corpus.readers.records import RecordConverter
from corpus_audit.corpus.readers.streams import STDIN, STREAM_ERRORS, open_binary, split_format

_PARQUET_BATCH_ROWS = 1024


def read(path: str, convert: RecordConverter) -> Iterator[Document]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    stats, strict = convert.stats, convert.options.strict
    compression = split_format(path)[1] if path != STDIN else None
    with tempfile.TemporaryDirectory(prefix="corpus-audit-") as tmp:
        local = path
        if compression or path == STDIN:
            # Parquet needs random access: decompress (or spool stdin) to a temporary file first.
            local = str(Path(tmp) / "input.parquet")
            try:
                with open_binary(path) as src, open(local, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except STREAM_ERRORS as exc:
                stats.skip(truncation(exc), path, None, strict)
                return
        try:
            parquet = pq.ParquetFile(local)
        except Exception as exc:  # pyarrow raises several types (ArrowInvalid, OSError) for a bad file
            stats.skip(f"unreadable Parquet ({exc})", path, None, strict)
            return
        first = 0  # rows of the row groups before this one
        for group in range(parquet.num_row_groups):
            # Row group by row group: a corrupt one (a damaged page fails to decode) loses its unread rows,
            # counted, and reading goes on with the next.
            rows = parquet.metadata.row_group(group).num_rows
            row = first
            try:
                for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH_ROWS, row_groups=[group]):
                    stats.bytes_read += batch.nbytes
                    for record, repaired in _parquet_records(batch):
                        row += 1
                        if record is None:
                            stats.skip("invalid UTF-8 in a nested column", path, row, strict)
                        elif (doc := convert(record, path, row, f"{path}:{row}")) is not None:
                            if repaired:
                                stats.repair(INVALID_UTF8, path, row, strict)
                            yield doc
            except (OSError, pa.ArrowException) as exc:
                lost = max(1, first + rows - row)
                stats.skip(f"unreadable Parquet row group ({exc})", path, row + 1, strict, count=lost)
            else:
                if row < first + rows:  # a damaged page header can end a row group early without an error
                    stats.skip("unreadable Parquet row group (fewer rows decoded than it holds)", path, row + 1,
                               strict, count=first + rows - row)
            first += rows


def _parquet_records(batch: Any) -> Iterator[tuple[dict[str, Any] | None, bool]]:
    """The rows of a record batch as (dict, whether invalid UTF-8 was replaced in it). Parquet does not check
    strings (a damaged page can hold any bytes): in a string column each invalid sequence becomes U+FFFD; a row
    with invalid UTF-8 inside a nested column (a list or struct of strings) is None."""
    try:
        for record in batch.to_pylist():
            yield record, False
    except UnicodeDecodeError:
        for index in range(batch.num_rows):
            row = batch.slice(index, 1)
            try:
                yield row.to_pylist()[0], False
            except UnicodeDecodeError:
                yield _repaired_row(row), True


def _repaired_row(row: Any) -> dict[str, Any] | None:
    """The one row of ``row`` with the invalid UTF-8 of its string columns replaced; None if a nested column
    holds some."""
    import pyarrow as pa

    record = {}
    for name, column in zip(row.schema.names, row.columns):
        try:
            record[name] = column.to_pylist()[0]
        except UnicodeDecodeError:
            if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
                return None
            record[name] = column.cast(pa.large_binary()).to_pylist()[0].decode("utf-8", "replace")
    return record
