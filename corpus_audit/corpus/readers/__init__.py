"""Read documents lazily from files, globs, folders, stdin or a Hugging Face dataset: one module per format,
and :data:`READERS`, the registry that maps a format name to its reader.

Every reader yields :class:`Document` objects one at a time. A bad record (malformed JSON, missing text
field, truncated compressed stream, empty file) never stops a run: it is counted in :class:`ReadStats` with its
reason. A record with invalid UTF-8 is kept with each invalid sequence replaced by U+FFFD, and counted as
repaired. With ``strict=True`` the first bad or repaired record raises :class:`CorpusError` naming the file and
line instead.

JSON Lines files can also be read as :class:`LineBatch` es of raw lines (:func:`iter_line_batches`) that
are parsed elsewhere, e.g. in worker processes (:func:`read_line_batch`), with the same documents and counts.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

from corpus_audit.corpus.documents import CorpusError, Document, ReaderOptions, ReadStats
from corpus_audit.corpus.readers import delimited, json_array, jsonl, parquet, text
from corpus_audit.corpus.readers.hf_dataset import read_hf_dataset
from corpus_audit.corpus.readers.jsonl import LineBatch, iter_line_batches, line_batch_files, read_line_batch
from corpus_audit.corpus.readers.records import RecordConverter
from corpus_audit.corpus.readers.streams import (STDIN, expand_paths, ignored_files, is_binary, open_binary,
                                                 split_format)

#: A reader of a byte stream: (path, open binary handle, converter) -> documents.
StreamReader = Callable[[str, BinaryIO, RecordConverter], Iterator[Document]]
#: Format name -> reader of its byte stream. Parquet needs random access and reads its path itself.
READERS: dict[str, StreamReader] = {"jsonl": jsonl.read, "json": json_array.read, "csv": delimited.read_csv,
                                    "tsv": delimited.read_tsv, "txt": text.read}
FORMATS = (*READERS, "parquet")

__all__ = ["FORMATS", "READERS", "STDIN", "LineBatch", "expand_paths", "ignored_files", "iter_documents",
           "iter_line_batches", "line_batch_files", "read_file", "read_line_batch", "split_format"]


def read_file(path: str, options: ReaderOptions, stats: ReadStats) -> Iterator[Document]:
    """Documents of one file (or stdin for ``-``)."""
    fmt = options.format or (split_format(path)[0] if path != STDIN else "jsonl")
    if fmt is None:
        raise CorpusError(f"{path}: unknown file type; name it .jsonl/.json/.csv/.tsv/.txt/.parquet or pass --format")
    stats.files += 1
    convert = RecordConverter(options, stats)
    before = (stats.documents, stats.bytes_read, sum(stats.skipped.values()))
    if fmt == "parquet":
        source = parquet.read(path, convert)
    else:
        try:
            handle = open_binary(path)
        except OSError as exc:
            stats.skip(f"cannot open file ({exc.strerror or exc})", path, None, options.strict)
            return
        if is_binary(handle):
            stats.binary.append(path)
        source = _read_stream(READERS[fmt], path, handle, convert)
    for doc in source:
        stats.count(doc)
        yield doc
    if (stats.documents, stats.bytes_read, sum(stats.skipped.values())) == before:
        stats.skip("empty file", path, None, options.strict)


def _read_stream(reader: StreamReader, path: str, handle: BinaryIO, convert: RecordConverter) -> Iterator[Document]:
    with handle if path != STDIN else contextlib.nullcontext(handle):  # stdin stays open
        yield from reader(path, handle, convert)


def iter_documents(
    inputs: Iterable[str],
    options: ReaderOptions,
    stats: ReadStats,
    limit: int | None = None,
    sample: float | None = None,
    seed: int = 0,
    hf_dataset: str | None = None,
    hf_config: str | None = None,
    hf_split: str = "train",
) -> Iterator[Document]:
    """All documents of the inputs (or of a HF dataset, with the inputs as its data files), lazily.

    ``sample`` keeps each document with that probability (reproducible with ``seed``); ``limit`` stops
    after that many kept documents.
    """
    if sample is not None and not 0 < sample <= 1:
        raise CorpusError("--sample must be in (0, 1]")
    paths = list(inputs)
    if hf_dataset:
        stream: Iterator[Document] = read_hf_dataset(hf_dataset, options, stats, hf_config, hf_split, expand_paths(paths) if paths else None)
    else:
        files = expand_paths(paths)
        if not files:
            raise CorpusError("no input: give files, globs, folders, '-' for stdin, or --hf-dataset")
        stream = (doc for path in files for doc in read_file(path, options, stats))
    rng = random.Random(seed)
    kept = 0
    for doc in stream:
        if sample is not None and sample < 1 and rng.random() >= sample:
            continue
        if limit is not None and kept >= limit:
            return
        kept += 1
        yield doc
