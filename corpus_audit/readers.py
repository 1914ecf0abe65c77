"""Read documents lazily from files, globs, folders, stdin or a Hugging Face dataset.

Every reader yields :class:`Document` objects one at a time. A bad record (malformed JSON, missing text
field, invalid UTF-8, truncated compressed stream, empty file) never stops a run: it is counted in
:class:`ReadStats` with its reason. With ``strict=True`` the first bad record raises :class:`CorpusError`
naming the file and line instead.

JSON Lines files can also be read as :class:`LineBatch` es of raw lines (:func:`iter_line_batches`) that
are parsed elsewhere, e.g. in worker processes (:func:`read_line_batch`), with the same documents and counts.
"""

from __future__ import annotations

import bz2
import contextlib
import csv
import glob
import gzip
import io
import itertools
import json
import random
import re
import shutil
import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import zstandard

try:  # parses JSON Lines about three times faster than json; json decides whenever the two might differ
    import orjson
except ImportError:  # pragma: no cover - a dependency; json alone gives the same documents, slower
    orjson = None

FORMATS = ("jsonl", "json", "csv", "tsv", "txt", "parquet")
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2"}
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".tsv": "tsv", ".txt": "txt",
               ".text": "txt", ".parquet": "parquet"}
STDIN = "-"
MAX_EXAMPLES = 20  # bad records quoted in the summary, per run
# Deeper JSON records are bad records: json's parser raises RecursionError near 1,000 levels (fewer inside a
# deep call stack), so a fixed, lower limit makes every reading path (orjson or json, one process or workers)
# accept the same records. Real corpora nest a few levels.
MAX_JSON_DEPTH = 256
# The csv module refuses fields above 128 KB by default, which would drop long documents; this limit only
# bounds the memory an unclosed quote (a field running to the end of the file) can take.
MAX_CSV_FIELD_CHARS = 1 << 24
BOM = b"\xef\xbb\xbf"  # UTF-8 byte-order mark: an encoding signature at the start of a file, not text
# Errors a decompressor raises on a truncated or corrupt stream.
_STREAM_ERRORS = (EOFError, OSError, zlib.error, zstandard.ZstdError)
_PARQUET_BATCH_ROWS = 1024


class CorpusError(Exception):
    """An input problem: a path that does not exist, or a bad record in strict mode."""


@dataclass(slots=True)
class Document:
    """One document: ``meta`` holds the record's other fields; ``source``/``line`` say where it came from."""

    id: str
    text: str
    meta: dict[str, Any]
    source: str
    line: int | None = None


@dataclass
class ReadStats:
    """What the readers saw: documents yielded, bytes read (uncompressed) and records skipped, by reason."""

    files: int = 0
    documents: int = 0
    bytes_read: int = 0
    skipped: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def skip(self, reason: str, source: str, line: int | None, strict: bool, count: int = 1) -> None:
        """Count one bad record (``count`` records lost from ``line`` on), or raise in strict mode."""
        where = f"{source}:{line}" if line is not None else source
        if strict:
            raise CorpusError(f"{where}: {reason}")
        self.skipped[reason] += count
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(f"{where}: {reason}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "documents_read": self.documents,
            "bytes_read": self.bytes_read,
            "records_skipped": sum(self.skipped.values()),
            "skipped_by_reason": dict(self.skipped.most_common()),
            "skipped_examples": list(self.examples),
        }

    def merge(self, other: ReadStats) -> None:
        """Add the counts of ``other``, read after everything counted here (examples keep that order)."""
        self.files += other.files
        self.documents += other.documents
        self.bytes_read += other.bytes_read
        self.skipped.update(other.skipped)
        self.examples.extend(other.examples[: MAX_EXAMPLES - len(self.examples)])


@dataclass
class ReaderOptions:
    """How to turn records into documents."""

    text_field: str = "text"
    id_field: str = "id"
    format: str | None = None  # None: from the file extension (stdin: jsonl)
    line_docs: bool = False  # .txt: one document per line instead of per file
    strict: bool = False


def split_format(path: str) -> tuple[str | None, str | None]:
    """(format, compression) from a file name such as ``x.jsonl.zst``; format ``None`` if unknown."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    compression = COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    if compression:
        suffixes = suffixes[:-1]
    fmt = _EXTENSIONS.get(suffixes[-1]) if suffixes else None
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


def _lines(handle: BinaryIO, stats: ReadStats, on_error: Callable[[str, int], None]) -> Iterator[tuple[int, bytes]]:
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
    except _STREAM_ERRORS as exc:
        on_error(f"truncated or corrupt file ({type(exc).__name__})", number + 1)


def _skipper(stats: ReadStats, source: str, strict: bool) -> Callable[[str, int], None]:
    return lambda reason, line: stats.skip(reason, source, line, strict)


def _decode(raw: bytes, source: str, line: int, stats: ReadStats, strict: bool) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        stats.skip("invalid UTF-8", source, line, strict)
        return None


class _RecordConverter:
    """Turns a mapping record into a Document (shared by JSON, CSV, Parquet and HF readers)."""

    def __init__(self, options: ReaderOptions, stats: ReadStats) -> None:
        self.options = options
        self.stats = stats

    def __call__(self, record: Any, source: str, line: int | None, fallback_id: str) -> Document | None:
        opts = self.options
        if not isinstance(record, dict):
            self.stats.skip("record is not an object", source, line, opts.strict)
            return None
        text = record.get(opts.text_field)
        if not isinstance(text, str):
            reason = f"missing text field {opts.text_field!r}" if text is None else f"text field {opts.text_field!r} is not a string"
            self.stats.skip(reason, source, line, opts.strict)
            return None
        raw_id = record.get(opts.id_field)
        doc_id = scrub_surrogates(str(raw_id)) if raw_id is not None and raw_id != "" else fallback_id
        meta = {key: value for key, value in record.items() if key != opts.text_field}
        return Document(doc_id, scrub_surrogates(text), meta, source, line)


_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_surrogates(value: str) -> str:
    """``value`` with lone surrogates (JSON escapes such as ``"\\ud800"``) replaced by U+FFFD: they are not
    text, and neither spaCy's tokenizer nor Parquet accept them."""
    return _SURROGATE.sub("\ufffd", value) if not value.isascii() and _has_surrogates(value) else value


def field_text(value: Any) -> str | None:
    """A record field as text, for output columns that must hold one type whatever the input: JSON for
    objects and lists, ``str`` for other values, None kept; lone surrogates replaced."""
    if value is None:
        return None
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value)
    return scrub_surrogates(value)


_UNDECIDED = object()


def _loads_fast(raw: bytes) -> Any:
    """``json.loads(raw.decode("utf-8"))`` parsed by orjson, or ``_UNDECIDED`` where the two might differ.

    orjson accepts a subset of what json accepts (strict RFC 8259 JSON in valid UTF-8: no NaN or Infinity,
    no lone surrogate escapes, no BOM) and then returns the same strings, integers, booleans, nulls, lists
    and dicts (duplicate keys too: the last value, at the first key's place). The one silent difference is
    an integer beyond 64 bits, which orjson turns into a float: a record holding any float is left to json.
    Anything orjson rejects is left to json as well, which reports the error (or parses it) as it always did.
    """
    try:
        record = orjson.loads(raw)
    except Exception:  # orjson.JSONDecodeError, or anything else: json decides
        return _UNDECIDED
    return _UNDECIDED if _holds_float(record) else record


def _holds_float(value: Any) -> bool:
    """Whether ``value`` is or contains (at any depth) a float."""
    stack = [value]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is float:
            return True
        if kind is dict:
            value = value.values()
        elif kind is not list:
            continue
        for item in value:
            kind = type(item)
            if kind is float:
                return True
            if kind is dict or kind is list:
                stack.append(item)
    return False


_TOO_DEEP = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"


def _json_error(exc: ValueError) -> str:
    """The skip reason for a json parse error: JSONDecodeError, or the ValueError of an integer longer than
    Python's int/str conversion limit (4,300 digits), whose message would make a reason per digit count."""
    return f"malformed JSON ({exc.msg})" if isinstance(exc, json.JSONDecodeError) else "malformed JSON (number too long)"


def _too_deep(record: Any, brackets: int) -> bool:
    """Whether ``record``, whose JSON text holds ``brackets`` opening brackets, nests deeper than
    MAX_JSON_DEPTH (walked only when there are enough brackets for that)."""
    if brackets <= MAX_JSON_DEPTH:
        return False
    stack = [(record, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = value.values()
        elif not isinstance(value, list):
            continue
        if depth > MAX_JSON_DEPTH:
            return True
        stack.extend((item, depth + 1) for item in value)
    return False


def _read_jsonl(path: str, lines: Iterator[tuple[int, bytes]], convert: _RecordConverter) -> Iterator[Document]:
    stats, strict = convert.stats, convert.options.strict
    fast = orjson is not None
    for number, raw in lines:
        if not raw.strip():
            continue
        record = _loads_fast(raw) if fast else _UNDECIDED
        if record is _UNDECIDED:
            text = _decode(raw, path, number, stats, strict)
            if text is None:
                continue
            try:
                record = json.loads(text)
            except ValueError as exc:
                stats.skip(_json_error(exc), path, number, strict)
                continue
            except RecursionError:
                stats.skip(_TOO_DEEP, path, number, strict)
                continue
        if _too_deep(record, raw.count(b"[") + raw.count(b"{")):
            stats.skip(_TOO_DEEP, path, number, strict)
            continue
        doc = convert(record, path, number, f"{path}:{number}")
        if doc is not None:
            yield doc


def _read_json(path: str, handle: BinaryIO, convert: _RecordConverter) -> Iterator[Document]:
    """A .json file is either a JSON array of records (loaded whole) or JSON Lines."""
    stats, strict = convert.stats, convert.options.strict
    buffered = io.BufferedReader(handle) if not isinstance(handle, io.BufferedIOBase) else handle
    try:
        head = buffered.peek(64).removeprefix(BOM).lstrip()
    except _STREAM_ERRORS as exc:
        stats.skip(f"truncated or corrupt file ({type(exc).__name__})", path, None, strict)
        return
    if not head.startswith(b"["):
        yield from _read_jsonl(path, _lines(buffered, stats, _skipper(stats, path, strict)), convert)
        return
    try:
        data = buffered.read()
    except _STREAM_ERRORS as exc:
        stats.skip(f"truncated or corrupt file ({type(exc).__name__})", path, None, strict)
        return
    stats.bytes_read += len(data)
    yield from _read_json_array(path, data.removeprefix(BOM), convert)


_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _read_json_array(path: str, data: bytes, convert: _RecordConverter) -> Iterator[Document]:
    """The records of a JSON array, decoded one at a time, so that a bad record (invalid UTF-8, too deep, not
    an object...) is skipped alone, and a syntax error, after which records cannot be delimited, ends the file
    but keeps the records before it. Documents' lines are where their records start; default ids keep the
    record's position in the array."""
    stats, strict = convert.stats, convert.options.strict
    try:
        text = data.decode("utf-8")
        invalid_bytes = False
    except UnicodeDecodeError:
        # Each invalid byte becomes a lone surrogate, which valid UTF-8 never decodes to: records holding one
        # are the ones with invalid bytes.
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
                stats.skip(_json_error(exc) + "; rest of file skipped", path, getattr(exc, "lineno", line), strict)
                return
            except RecursionError:
                stats.skip(_TOO_DEEP + "; rest of file skipped", path, line, strict)
                return
            if invalid_bytes and _has_surrogates(text[start:position]):
                stats.skip("invalid UTF-8", path, line, strict)
            elif _too_deep(record, text.count("[", start, position) + text.count("{", start, position)):
                stats.skip(_TOO_DEEP, path, line, strict)
            elif (doc := convert(record, path, line, f"{path}:{index}")) is not None:
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


_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what the csv module counts as the end of a line


def _read_csv(path: str, handle: BinaryIO, delimiter: str, convert: _RecordConverter) -> Iterator[Document]:
    stats, strict = convert.stats, convert.options.strict
    # surrogateescape keeps the stream going past bad bytes; rows holding them are skipped below.
    # utf-8-sig drops a byte-order mark, which would otherwise rename the first column.
    counting = _CountingReader(handle, stats)
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
        except _STREAM_ERRORS as exc:
            stats.skip(f"truncated or corrupt file ({type(exc).__name__})", path, reader.line_num + 1, strict)
            return
        # line_num is the record's last line (after the header and any blank lines the reader skipped): its
        # first line is that less the line breaks inside its quoted fields.
        line = reader.line_num - _line_breaks(row)
        if any(isinstance(v, str) and _has_surrogates(v) for v in row.values()):
            stats.skip("invalid UTF-8", path, line, strict)
            continue
        if None in row:  # more cells than header columns
            stats.skip("row has more cells than the header", path, line, strict)
            continue
        doc = convert(row, path, line, f"{path}:{line}")
        if doc is not None:
            yield doc


def _line_breaks(row: dict[Any, Any]) -> int:
    """Line breaks inside the cells of a CSV row (extra cells are a list under the key None)."""
    count = 0
    for value in row.values():
        for cell in value if isinstance(value, list) else (value,):
            if cell and ("\n" in cell or "\r" in cell):
                count += len(_LINE_BREAK.findall(cell))
    return count


def _has_surrogates(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class _CountingReader(io.RawIOBase):
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


def _read_txt(path: str, handle: BinaryIO, convert: _RecordConverter) -> Iterator[Document]:
    stats, opts = convert.stats, convert.options
    if opts.line_docs:
        for number, raw in _lines(handle, stats, _skipper(stats, path, opts.strict)):
            text = _decode(raw, path, number, stats, opts.strict)
            if text is None:
                continue
            if text.strip():
                yield Document(f"{path}:{number}", text.rstrip("\r\n"), {}, path, number)
            else:  # counted so that line numbers add up, but never an error, not even in strict mode
                stats.skipped["blank line"] += 1
        return
    # A .txt file is one document, read whole (use --line-docs for huge one-record-per-line files).
    try:
        data = handle.read()
    except _STREAM_ERRORS as exc:
        stats.skip(f"truncated or corrupt file ({type(exc).__name__})", path, None, opts.strict)
        return
    stats.bytes_read += len(data)
    text = _decode(data.removeprefix(BOM), path, 1, stats, opts.strict)
    if text is not None and text.strip():
        yield Document(path, text, {}, path, None)


def _read_parquet(path: str, compression: str | None, convert: _RecordConverter) -> Iterator[Document]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    stats, strict = convert.stats, convert.options.strict
    with tempfile.TemporaryDirectory(prefix="corpus-audit-") as tmp:
        local = path
        if compression or path == STDIN:
            # Parquet needs random access: decompress (or spool stdin) to a temporary file first.
            local = str(Path(tmp) / "input.parquet")
            try:
                with open_binary(path) as src, open(local, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except _STREAM_ERRORS as exc:
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


def read_file(path: str, options: ReaderOptions, stats: ReadStats) -> Iterator[Document]:
    """Documents of one file (or stdin for ``-``)."""
    fmt, compression = split_format(path) if path != STDIN else (None, None)
    fmt = options.format or fmt or ("jsonl" if path == STDIN else None)
    if fmt is None:
        raise CorpusError(f"{path}: unknown file type; name it .jsonl/.json/.csv/.tsv/.txt/.parquet or pass --format")
    stats.files += 1
    convert = _RecordConverter(options, stats)
    before = (stats.documents, stats.bytes_read, sum(stats.skipped.values()))
    if fmt == "parquet":
        source = _read_parquet(path, compression, convert)
    else:
        try:
            handle = open_binary(path)
        except OSError as exc:
            stats.skip(f"cannot open file ({exc.strerror or exc})", path, None, options.strict)
            return
        source = _read_from_handle(path, fmt, handle, convert)
    for doc in source:
        stats.documents += 1
        yield doc
    if (stats.documents, stats.bytes_read, sum(stats.skipped.values())) == before:
        stats.skip("empty file", path, None, options.strict)


def _read_from_handle(path: str, fmt: str, handle: BinaryIO, convert: _RecordConverter) -> Iterator[Document]:
    stats, strict = convert.stats, convert.options.strict
    with handle if path != STDIN else contextlib.nullcontext(handle):
        if fmt == "jsonl":
            yield from _read_jsonl(path, _lines(handle, stats, _skipper(stats, path, strict)), convert)
        elif fmt == "json":
            yield from _read_json(path, handle, convert)
        elif fmt in ("csv", "tsv"):
            yield from _read_csv(path, handle, "\t" if fmt == "tsv" else ",", convert)
        else:
            yield from _read_txt(path, handle, convert)


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
    for path in files:
        stats.files += 1
        try:
            handle = open_binary(path)
        except OSError as exc:
            yield LineBatch(path, 1, b"", [(f"cannot open file ({exc.strerror or exc})", None)])
            continue
        skips: list[tuple[str, int | None]] = []
        lines: list[bytes] = []
        size, first, last = 0, 1, 0
        with handle if path != STDIN else contextlib.nullcontext(handle):
            for last, raw in _lines(handle, stats, lambda reason, line: skips.append((reason, line))):
                lines.append(raw)
                size += len(raw)
                if size >= batch_bytes:
                    yield LineBatch(path, first, b"".join(lines))
                    lines, size, first = [], 0, last + 1
        if last == 0 and not skips:  # no bytes and no error: read_file's "empty file"
            skips.append(("empty file", None))
        yield LineBatch(path, first, b"".join(lines), skips)


def read_line_batch(batch: LineBatch, options: ReaderOptions, stats: ReadStats) -> Iterator[Document]:
    """Documents of one batch (bad records counted in ``stats``; ``batch.skips`` are left to the caller)."""
    convert = _RecordConverter(options, stats)
    lines = enumerate(io.BytesIO(batch.data), start=batch.first_line)  # splits on b"\n" only, like read_file
    for doc in _read_jsonl(batch.source, lines, convert):
        stats.documents += 1
        yield doc


def read_hf_dataset(
    name: str,
    options: ReaderOptions,
    stats: ReadStats,
    config: str | None = None,
    split: str = "train",
    data_files: list[str] | None = None,
) -> Iterator[Document]:
    """Documents of a Hugging Face dataset in streaming mode (a hub name, a local folder or a builder
    such as ``json``/``csv``/``parquet`` with ``data_files``)."""
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is a dependency
        raise CorpusError("the 'datasets' package is needed for --hf-dataset") from exc
    try:
        dataset = datasets.load_dataset(name, config, split=split, streaming=True, data_files=data_files or None)
    except Exception as exc:  # datasets raises many types (FileNotFoundError, DatasetNotFoundError, ValueError...)
        raise CorpusError(f"cannot open Hugging Face dataset {name!r}: {exc}") from exc
    source = f"hf:{name}" + (f"/{config}" if config else "") + f"[{split}]"
    stats.files += 1
    convert = _RecordConverter(options, stats)
    for index, record in enumerate(dataset):
        text = record.get(options.text_field) if isinstance(record, dict) else None
        if isinstance(text, str):
            stats.bytes_read += len(text.encode("utf-8"))
        doc = convert(record, source, index + 1, f"{name}:{index}")
        if doc is not None:
            stats.documents += 1
            yield doc


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
