"""Parquet, read row group by row group (a damaged one loses only its own rows, counted)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpus_audit.corpus.documents import Document
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
                stats.skip(f"truncated or corrupt file ({type(exc).__name__})", path, None, strict)
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
                    for record in _parquet_records(batch):
                        row += 1
                        if record is None:
                            stats.skip("invalid UTF-8", path, row, strict)
                        elif (doc := convert(record, path, row, f"{path}:{row}")) is not None:
                            yield doc
            except (OSError, pa.ArrowException) as exc:
                lost = max(1, first + rows - row)
                stats.skip(f"unreadable Parquet row group ({exc})", path, row + 1, strict, count=lost)
            else:
                if row < first + rows:  # a damaged page header can end a row group early without an error
                    stats.skip("unreadable Parquet row group (fewer rows decoded than it holds)", path, row + 1,
                               strict, count=first + rows - row)
            first += rows


def _parquet_records(batch: Any) -> Iterator[dict[str, Any] | None]:
    """The rows of a record batch as dicts; None for a row whose strings are not valid UTF-8 (Parquet does
    not check them: a damaged page can hold any bytes)."""
    try:
        yield from batch.to_pylist()
    except UnicodeDecodeError:
        for index in range(batch.num_rows):
            try:
                yield batch.slice(index, 1).to_pylist()[0]
            except UnicodeDecodeError:
                yield None
