"""Input files as byte streams: names and formats, compression, numbered lines, byte counts."""

from __future__ import annotations

import bz2
import glob
import gzip
import io
import os
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import zstandard

from corpus_audit.corpus.documents import CorpusError, ReadStats, truncation

COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2"}
EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".tsv": "tsv", ".txt": "txt",
               ".text": "txt", ".parquet": "parquet"}
STDIN = "-"
BOM = b"\xef\xbb\xbf"  # UTF-8 byte-order mark: an encoding signature at the start of a file, not text
# Errors a decompressor raises on a truncated or corrupt stream.
STREAM_ERRORS = (EOFError, OSError, zlib.error, zstandard.ZstdError)


def split_format(path: str) -> tuple[str | None, str | None]:
    """(format, compression) from a file name such as ``x.jsonl.zst``; format ``None`` if unknown."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    compression = COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    if compression:
        suffixes = suffixes[:-1]
    fmt = EXTENSIONS.get(suffixes[-1]) if suffixes else None
    return fmt, compression


def expand_paths(inputs: Iterable[str]) -> list[str]:
    """Files named by paths, globs and folders (folders: every readable file inside, sorted)."""
    files: list[str] = []
    for item in inputs:
        if item == STDIN:
            files.append(item)
            continue
        path = Path(item)
        if path.is_dir():
            found = sorted(str(p) for p in path.rglob("*") if p.is_file() and split_format(str(p))[0])
            if not found:
                raise CorpusError(f"{item}: folder holds no .jsonl/.json/.csv/.tsv/.txt/.parquet files")
            files.extend(found)
        elif path.is_file():
            files.append(item)
        elif glob.has_magic(item):
            found = sorted(p for p in glob.glob(item, recursive=True) if Path(p).is_file())
            if not found:
                raise CorpusError(f"{item}: no file matches this pattern")
            files.extend(found)
        else:
            raise CorpusError(f"{item}: no such file or folder")
    return files


def ignored_files(inputs: Iterable[str]) -> list[str]:
    """The files inside the folders of ``inputs`` that :func:`expand_paths` leaves out (no known format), sorted."""
    return sorted(str(path) for item in inputs if item != STDIN and Path(item).is_dir()
                  for path in Path(item).rglob("*") if path.is_file() and not split_format(str(path))[0])


#: Bytes of a stream's start checked for NUL bytes, which no UTF-8 text holds.
SNIFF_BYTES = 8192


def is_binary(handle: BinaryIO) -> bool:
    """Whether the stream's first block (decompressed; not consumed) holds a NUL byte: an executable, an image or a
    Parquet or zip file under a text name. A stream that fails here is left to the reader, which reports it."""
    try:
        head = handle.peek(SNIFF_BYTES)[:SNIFF_BYTES] if hasattr(handle, "peek") else b""
    except STREAM_ERRORS:
        return False
    return b"\x00" in head


def disk_position(handle: BinaryIO) -> int | None:
    """How far into the file on disk ``handle`` has read (compressed bytes for .gz/.zst/.bz2: the decompressors read
    through one file descriptor), or None for a pipe such as stdin: what a progress bar's share and ETA need."""
    try:
        return os.lseek(handle.fileno(), 0, os.SEEK_CUR)
    except (OSError, ValueError, io.UnsupportedOperation):
        return None


def open_binary(path: str) -> BinaryIO:
    """Open a file (or stdin for ``-``) for binary reading, decompressing .gz/.zst/.bz2 on the fly."""
    if path == STDIN:
        return sys.stdin.buffer
    compression = split_format(path)[1]
    if compression == "gzip":
        return gzip.open(path, "rb")
    if compression == "bz2":
        return bz2.open(path, "rb")
    if compression == "zstd":
        return io.BufferedReader(_ZstdReader(open(path, "rb")), 1 << 16)
    return open(path, "rb")


class _ZstdReader(io.RawIOBase):
    """Zstandard decompression that reads every frame and, unlike ``stream_reader``, raises EOFError when
    the file ends inside a frame (a truncated download), so the loss is reported instead of silent."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.decompressor = zstandard.ZstdDecompressor().decompressobj()
        self.pending = b""
        self.in_frame = False

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.raw.fileno()

    def readinto(self, buffer: Any) -> int:
        while not self.pending:
            data = self.raw.read(1 << 16)
            if not data:
                if self.in_frame:
                    raise EOFError("compressed file ended before the end of a zstd frame")
                return 0
            while data:
                self.in_frame = True
                self.pending += self.decompressor.decompress(data)
                data = b""
                if self.decompressor.eof:  # frame complete; the rest of the chunk starts the next frame
                    data = self.decompressor.unused_data
                    self.decompressor = zstandard.ZstdDecompressor().decompressobj()
                    self.in_frame = False
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        return size

    def close(self) -> None:
        self.raw.close()
        super().close()


def numbered_lines(handle: BinaryIO, stats: ReadStats, on_error: Callable[[str, int], None]) -> Iterator[tuple[int, bytes]]:
    """Numbered raw lines; a truncated or corrupt compressed stream ends the file with one
    ``on_error(reason, line)`` call."""
    number = 0
    reader = io.BufferedReader(handle) if not isinstance(handle, io.BufferedIOBase) else handle
    try:
        for number, raw in enumerate(reader, start=1):
            stats.bytes_read += len(raw)
            if number == 1 and raw.startswith(BOM):
                raw = raw[len(BOM):]
            yield number, raw
    except STREAM_ERRORS as exc:
        on_error(truncation(exc), number + 1)


def skipper(stats: ReadStats, source: str, strict: bool) -> Callable[[str, int], None]:
    return lambda reason, line: stats.skip(reason, source, line, strict)


def decode(raw: bytes) -> tuple[str, bool]:
    """``raw`` as UTF-8 text, each invalid sequence replaced by U+FFFD, and whether there was one."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), True


class CountingReader(io.RawIOBase):
    """Wraps a binary stream to count the bytes read (CSV and text files are read through it)."""

    def __init__(self, handle: BinaryIO, stats: ReadStats) -> None:
        self.handle = handle
        self.stats = stats

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.handle.read(len(buffer))
        buffer[: len(data)] = data
        self.stats.bytes_read += len(data)
        return len(data)
