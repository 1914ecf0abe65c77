"""Rewrite a corpus without chosen documents: every other record byte for byte as it was.

The documents to remove are named by id, as the readers name them (the ``--id-field`` value, else ``FILE:LINE``),
so the ids of an audit's ranked list apply to the files it read. Each input file is rewritten under the output
folder with its own name and compression, without the records whose document id is chosen: JSON Lines and
``--line-docs`` text line by line (the kept lines' bytes unchanged, blank and unreadable lines kept as they
were: they were never documents), a whole-file text document whole or not at all, Parquet row by row (kept rows'
values unchanged, in the input's schema). CSV, TSV and JSON-array files cannot be rewritten record by record
without re-encoding them and are refused before anything is written.
"""

from __future__ import annotations

import bz2
import gzip
import io
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from corpus_audit.common.atomic import atomic_path
from corpus_audit.corpus.documents import CorpusError, ReaderOptions, ReadStats
from corpus_audit.corpus.readers import STDIN, expand_paths, read_file, split_format
from corpus_audit.corpus.readers.streams import open_binary

#: Formats whose records can be removed while the others stay byte for byte as they are.
CLEANABLE = ("jsonl", "txt", "parquet")
#: A clean of more files than this names only those with removed records (up to this many) and sums up the rest.
MAX_FILES_LOGGED = 20


@dataclass
class CleanedFile:
    """One input file and what its rewritten copy holds."""

    input: str
    output: str
    format: str
    records_removed: int = 0
    removed_ids: list[str] = field(default_factory=list)


@dataclass
class CleanResult:
    files: list[CleanedFile]
    #: chosen ids found in no input file (e.g. a corpus other than the audited one)
    ids_not_found: list[str]
    documents_read: int
    reading: dict[str, Any]

    @property
    def records_removed(self) -> int:
        return sum(file.records_removed for file in self.files)


def _format_of(path: str, options: ReaderOptions) -> str:
    fmt, compression = split_format(path)
    fmt = options.format or fmt
    if fmt == "parquet" and compression:
        raise CorpusError(f"{path}: a compressed Parquet file cannot be rewritten; decompress it first")
    if fmt not in CLEANABLE:
        raise CorpusError(f"{path}: clean rewrites {', '.join(CLEANABLE)} files record by record; "
                          f"{fmt or 'this file type'} is not one of them (convert it to JSON Lines first)")
    return fmt


def _open_output(path: Path, named: Path) -> BinaryIO:
    """``path`` opened for binary writing, compressed as ``named``'s name says (.gz, .bz2, .zst)."""
    compression = split_format(str(named))[1]
    if compression == "gzip":
        return gzip.open(path, "wb")
    if compression == "bz2":
        return bz2.open(path, "wb")
    if compression == "zstd":
        import zstandard

        return zstandard.ZstdCompressor().stream_writer(open(path, "wb"), closefd=True)
    return open(path, "wb")


def _copy_lines(source: str, target: Path, removed_lines: set[int]) -> None:
    """The lines of ``source`` (decompressed) into ``target`` (compressed as named), except ``removed_lines``."""
    with open_binary(source) as handle, atomic_path(target) as tmp, _open_output(tmp, target) as out:
        for number, line in enumerate(handle, start=1):
            if number not in removed_lines:
                out.write(line)


def _copy_parquet(source: str, target: Path, removed_rows: set[int]) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(source)
    with atomic_path(target) as tmp, pq.ParquetWriter(tmp, parquet.schema_arrow) as writer:
        offset = 0
        for batch in parquet.iter_batches():
            rows = np.arange(offset, offset + batch.num_rows)
            writer.write_batch(batch.filter(pa.array(~np.isin(rows + 1, list(removed_rows)))))
            offset += batch.num_rows


def _removed_positions(path: str, options: ReaderOptions, ids: set[str], found: Counter) -> Iterator[tuple[int, str]]:
    """(line or row number, doc id) of each record of ``path`` whose document id is in ``ids``; ``found`` counts
    every id met. Whole-file text documents give number 0."""
    stats = ReadStats()
    for doc in read_file(path, options, stats):
        found["documents"] += 1
        if doc.id in ids:
            found[doc.id] += 1
            yield doc.line or 0, doc.id


def clean_corpus(inputs: Sequence[str], options: ReaderOptions, remove_ids: set[str], outdir: str | Path,
                 log: Callable[[str], None] = print) -> CleanResult:
    """Write each file of ``inputs`` into ``outdir`` (same name and compression) without the records of the
    documents in ``remove_ids``; return what was removed where. The inputs are checked (formats, distinct names,
    no output over an input) before anything is written."""
    outdir = Path(outdir)
    files, targets = [], []
    for item in inputs:
        if item == STDIN:
            raise CorpusError("clean rewrites files: stdin ('-') cannot be cleaned")
        for path in expand_paths([item]):
            files.append(path)
            # a folder's files keep their place in its tree; a file named alone goes to the top
            relative = Path(path).relative_to(item) if Path(item).is_dir() else Path(Path(path).name)
            targets.append(outdir / relative)
    formats = [_format_of(path, options) for path in files]
    names = Counter(targets)
    if clashes := sorted(str(target.relative_to(outdir)) for target, count in names.items() if count > 1):
        raise CorpusError(f"several inputs would be written as {', '.join(clashes)}: clean writes each under its own "
                          "name in the output folder; clean them one folder at a time")
    for path, target in zip(files, targets):
        if target.resolve() == Path(path).resolve():
            raise CorpusError(f"{target}: the output folder holds the input itself; choose another folder")
    outdir.mkdir(parents=True, exist_ok=True)
    found: Counter = Counter()
    cleaned = []
    logged = 0
    for path, target, fmt in zip(files, targets, formats):
        target.parent.mkdir(parents=True, exist_ok=True)
        removed = dict(_removed_positions(path, options, remove_ids, found))
        file = CleanedFile(path, str(target), fmt, len(removed), sorted(set(removed.values())))
        if fmt == "parquet":
            _copy_parquet(path, target, set(removed))
        elif fmt == "txt" and not options.line_docs:
            if not removed:  # a whole-file document: kept whole or removed whole
                _copy_lines(path, target, set())
            else:
                file.output = ""
        else:
            _copy_lines(path, target, set(removed))
        if len(files) <= MAX_FILES_LOGGED or file.records_removed:
            logged += 1
            if logged <= MAX_FILES_LOGGED:
                log(f"{path}: removed {file.records_removed} record(s)" + (f" -> {target}" if file.output else ""))
        cleaned.append(file)
    if logged > MAX_FILES_LOGGED:
        log(f"... and {logged - MAX_FILES_LOGGED} more file(s) with removed records (every file: the manifest)")
    if len(files) > MAX_FILES_LOGGED:
        with_removals = sum(1 for file in cleaned if file.records_removed)
        log(f"{len(files)} files rewritten under {outdir} (the input folders' tree kept), {with_removals} of them "
            "with records removed")
    documents = found.pop("documents", 0)
    return CleanResult(cleaned, sorted(remove_ids - set(found)), documents,
                       {"text_field": options.text_field, "id_field": options.id_field, "format": options.format,
                        "line_docs": options.line_docs})


def read_id_file(path: str | Path) -> set[str]:
    """Document ids, one per line (blank lines and a trailing newline ignored), as ``--ids`` takes them."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CorpusError(f"{path}: cannot read the id list ({error})") from None
    return {line.strip() for line in io.StringIO(text) if line.strip()}
