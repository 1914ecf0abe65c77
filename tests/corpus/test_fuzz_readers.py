"""Fuzzing the readers: whatever the bytes, no exception; every bad record counted with its reason; every
good record read back with its text.

Each generated case is one file: a random mix of good records, records with invalid UTF-8 (kept, repaired) and
bad ones (malformed, truncated or wrongly typed JSON, other encodings, deep nesting, huge numbers, huge lines, CSV
rows with extra or missing cells and stray quotes, empty fields, blank lines, a byte-order mark), in one format and
one compression. The ``*_mix`` tests know which records are good and check the documents and counts exactly;
the ``*_chaos`` tests mutate such files at random (or use random bytes) and check what must hold whatever the
input. Every read also runs in strict mode, which must stop at the first bad or repaired record with the same
message.

Example counts come from the hypothesis profile (tests/conftest.py): CORPUS_AUDIT_FUZZ=thorough runs
10,000 cases per test, i.e. per reader format.
"""

from __future__ import annotations

import bz2
import csv
import dataclasses
import functools
import gzip
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from corpus_audit.corpus.documents import INVALID_UTF8 as REPAIRED, CorpusError, Document, ReaderOptions, ReadStats
from corpus_audit.corpus.readers.records import MAX_JSON_DEPTH
from corpus_audit.corpus.readers import (iter_line_batches,
                                  read_file, read_line_batch)

BOM = b"\xef\xbb\xbf"
COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "": lambda data: data,
    ".gz": lambda data: gzip.compress(data, mtime=0),
    ".bz2": lambda data: bz2.compress(data, 1),  # level 9 is slow on the repetitive huge lines
    ".zst": lambda data: zstandard.ZstdCompressor().compress(data),
}
# Byte sequences that are never valid UTF-8 where they are inserted (before ASCII or at the end of a field).
INVALID_UTF8 = [b"\xff", b"\x80", b"\xc3", b"caf\xe9", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xe2\x82"]
LATIN1_TEXT = st.text(st.characters(max_codepoint=0xFF, exclude_characters="\n"), max_size=10)
VISIBLE_CHARACTER = st.characters(exclude_categories=["Cs", "Zs", "Zl", "Zp", "Cc"])  # never whitespace
TRICKY = ["", " ", "\x00", "\t", "a\r\nb", "\r", "\ufeff", "é", "ñ", "😀", "\u2028", "\x85", '"', "'", ",", "\\",
          "{", "]", "\x1c", "İ", "\u0301"]


# The reasons a reader gives for a skipped record.
REASONS = ("malformed JSON (", "JSON nested deeper than", "invalid UTF-8", "record is not an object",
           "missing text field", "text field", "malformed CSV (", "row has more cells than the header",
           "truncated or corrupt file (", "unreadable Parquet (", "unreadable Parquet row group (", "empty file",
           "blank line")


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> Path:
    # Module-scoped: hypothesis runs many examples per test call, each overwriting its case file.
    return tmp_path_factory.mktemp("fuzz")


# --------------------------------------------------------------------------------------------- strategies


# Strategies are built once (lru_cache): building one, st.recursive above all, costs more than drawing from it.


@functools.lru_cache(maxsize=None)
def texts(surrogates: bool = False, newlines: bool = True) -> st.SearchStrategy[str]:
    """Document texts: any characters (lone surrogates where the format can carry them), tricky pieces, and
    now and then (1 in 41) a huge line (above the CSV module's default field limit of 131,072 characters)."""
    excluded = [] if surrogates else ["Cs"]
    chars = st.characters(exclude_categories=excluded, exclude_characters=None if newlines else "\n")
    small = st.text(chars, max_size=30)
    pieces = st.lists(st.sampled_from([t for t in TRICKY if newlines or "\n" not in t]) | small, max_size=6).map("".join)
    huge = st.builds(lambda unit, times: unit * times, st.text(chars, min_size=3, max_size=3),
                     st.integers(44_000, 48_000))  # 132,000 to 144,000 characters
    return st.one_of(*[small, pieces] * 20, huge)


@functools.lru_cache(maxsize=None)
def json_scalars(surrogates: bool) -> st.SearchStrategy:
    return (st.none() | st.booleans() | st.integers() | st.floats()
            | st.text(st.characters(exclude_categories=[] if surrogates else ["Cs"]), max_size=8))


@functools.lru_cache(maxsize=None)
def json_values(surrogates: bool) -> st.SearchStrategy:
    keys = st.sampled_from(["a", "é", "", "text", "\ud800" if surrogates else "s"])
    return st.recursive(json_scalars(surrogates), lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(keys, inner, max_size=3), max_leaves=6)


def nested(depth: int) -> list:
    """A list nested ``depth`` levels deep (depth 1: ``[]``)."""
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def deep_json(depth: int) -> bytes:
    """JSON text of a list nested ``depth`` levels deep (built by hand: json.dumps stops near 1,000)."""
    return b"[" * depth + b"]" * depth


def utf16_fix(text: str) -> str:
    """What a JSON reader makes of ``text`` written with \\u escapes: surrogate pairs join, lone surrogates
    become U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


@dataclass
class Expected:
    """The documents a case must give, in order, as (id or None for the default id, position, text), the
    number of bad records it holds (each counted once) and how many of the good ones are repaired."""

    good: list[tuple[str | None, int, str]] = field(default_factory=list)
    bad: int = 0
    repaired: int = 0


ID_FIELDS = {"id": "id", "key": "key"}


@functools.lru_cache(maxsize=None)
def id_values(surrogates: bool) -> st.SearchStrategy:
    # ABSENT: no id field; None and "" also fall back to the default id.
    return st.one_of(st.just(ABSENT), st.none(), st.just(""), st.integers(), st.booleans(),
                     st.text(st.characters(exclude_categories=[] if surrogates else ["Cs"]), min_size=1, max_size=10))


ABSENT = object()


def expected_id(value: object) -> str | None:
    return None if value is ABSENT or value is None or value == "" else utf16_fix(str(value))


# --------------------------------------------------------------------------------------------- reading


def read_checked(path: Path, options: ReaderOptions) -> tuple[list[Document], ReadStats]:
    """Read ``path`` and check what holds for any input; strict mode must stop at the first bad record."""
    stats = ReadStats()
    docs = list(read_file(str(path), options, stats))
    assert stats.documents == len(docs)
    assert all(reason.startswith(REASONS) for reason in stats.skipped), stats.skipped  # never a bare exception text
    assert set(stats.repaired) <= {REPAIRED}
    assert len(stats.repaired_examples) == min(sum(stats.repaired.values()), 20)
    for doc in docs:  # downstream (spaCy, Parquet, JSON) needs text that encodes
        doc.text.encode("utf-8")
        doc.id.encode("utf-8")
        assert doc.source == str(path)
    strict = dataclasses.replace(options, strict=True)
    try:
        strict_docs = list(read_file(str(path), strict, ReadStats()))
    except CorpusError as error:  # the first bad record, or the first repaired one, whichever comes first
        assert str(error) in stats.examples[:1] + stats.repaired_examples[:1]
    else:
        assert not stats.examples and not stats.repaired_examples
        assert [(d.id, d.text) for d in strict_docs] == [(d.id, d.text) for d in docs]
    return docs, stats


def check_expected(docs: list[Document], stats: ReadStats, expected: Expected, default_id: Callable[[int], str],
                   empty: bool = False, blank: int = 0) -> None:
    """Every good record, in order, with its text and id; every bad one counted, and an empty file once
    (``blank``: blank lines of a text file read with --line-docs, counted but not errors)."""
    want = [(value if value is not None else default_id(position), text) for value, position, text in expected.good]
    assert [(d.id, d.text) for d in docs] == want
    assert sum(stats.skipped.values()) == expected.bad + empty + blank, stats.skipped
    assert len(stats.examples) == min(expected.bad + empty, 20)
    assert sum(stats.repaired.values()) == expected.repaired, stats.repaired


def write_case(folder: Path, name: str, data: bytes, compression: str) -> Path:
    path = folder / f"{name}{compression}"
    path.write_bytes(COMPRESSORS[compression](data))
    return path


# --------------------------------------------------------------------------------------------- JSON Lines


JSONL_BAD = ["truncated", "garbage", "utf16", "not_object", "no_text", "text_type", "deep", "huge_int", "bom_inside"]
JSONL_REPAIRED = ["invalid_utf8", "latin1"]


@st.composite
def jsonl_lines(draw, text_field: str, id_field: str) -> tuple[list[bytes], Expected]:
    """Lines (without line ends) of a JSON Lines file and what reading them must give."""
    lines: list[bytes] = []
    expected = Expected()
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["good"] * 6 + ["blank"] + JSONL_BAD + JSONL_REPAIRED))
        ascii_only = draw(st.booleans())
        if kind == "blank":
            lines.append(draw(st.sampled_from([b"", b" ", b"\t \r", b"\x0c"])))
            continue
        if kind in ("good", "deep", "huge_int", "truncated", "bom_inside"):
            record = good_record(draw, text_field, id_field, ascii_only)
        if kind == "good":
            extra_depth = draw(st.sampled_from([0, 0, 0, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH // 2]))
            if extra_depth:
                record["deep"] = nested(extra_depth)  # the record is MAX_JSON_DEPTH deep at most: good
            lines.append(json.dumps(record, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))
            expected.good.append((expected_id(record.get(id_field, ABSENT)), len(lines), utf16_fix(record[text_field])))
            continue
        if kind in JSONL_REPAIRED:
            if kind == "invalid_utf8":
                raw = json.dumps({text_field: "@@", "n": 1}, ensure_ascii=False).encode()
                lines.append(raw.replace(b"@@", b"ok" + draw(st.sampled_from(INVALID_UTF8))))
            else:  # an é before '"': never valid UTF-8
                lines.append(json.dumps({text_field: draw(LATIN1_TEXT) + "é"}, ensure_ascii=False).encode("latin-1"))
            # Kept, each invalid sequence replaced by U+FFFD.
            expected.good.append((None, len(lines), json.loads(lines[-1].decode("utf-8", "replace"))[text_field]))
            expected.repaired += 1
            continue
        expected.bad += 1
        if kind == "truncated":
            raw = json.dumps(record, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
            lines.append(raw[: draw(st.integers(1, len(raw) - 1))])  # a proper prefix of an object is never JSON
        elif kind == "garbage":
            lines.append(draw(st.sampled_from([b"\x00", b"\xff", b"}", b"#"]))
                         + draw(st.binary(max_size=40)).replace(b"\n", b" "))
        elif kind == "utf16":
            record = {text_field: draw(texts(newlines=False))[:50]}
            encoding = draw(st.sampled_from(["utf-16-le", "utf-16-be", "utf-16"]))
            lines.append(json.dumps(record, ensure_ascii=False).encode(encoding).replace(b"\n", b" "))
        elif kind == "not_object":
            value = draw(st.one_of(st.lists(json_scalars(False), max_size=3), json_scalars(False)))
            lines.append(json.dumps(value).encode())
        elif kind == "no_text":
            lines.append(json.dumps({id_field: "x", text_field: None} if draw(st.booleans()) else {"other": "t"}).encode())
        elif kind == "text_type":
            value = draw(st.one_of(st.integers(), st.floats(), st.booleans(), st.lists(st.text(max_size=3), max_size=2),
                                   st.dictionaries(st.text(max_size=2), st.integers(), max_size=2)))
            lines.append(json.dumps({id_field: "x", text_field: value}).encode())
        elif kind == "deep":  # the record is one level deeper than its "deep" field
            raw = json.dumps(record, ensure_ascii=True).encode()
            lines.append(raw[:-1] + b', "deep": ' + deep_json(draw(st.integers(MAX_JSON_DEPTH, 4 * MAX_JSON_DEPTH))) + b"}")
        elif kind == "huge_int":  # json gives up beyond 4,300 digits (CVE-2020-10735 limit)
            digits = b"7" * draw(st.integers(4301, 6000))
            raw = json.dumps(record, ensure_ascii=True).encode()
            lines.append(raw[:-1] + b', "n": ' + draw(st.sampled_from([b"", b"-"])) + digits + b"}")
        elif kind == "bom_inside":  # a byte-order mark inside a file is not JSON (at its start it is dropped)
            lines.append(BOM + json.dumps(record, ensure_ascii=True).encode())
            if len(lines) == 1:
                lines.insert(0, b"")
    return lines, expected


def good_record(draw, text_field: str, id_field: str, ascii_only: bool) -> dict:
    """A record with a string text (lone surrogates only where \\u escapes carry them), maybe an id, extras."""
    record: dict = {}
    identifier = draw(id_values(surrogates=ascii_only))
    if identifier is not ABSENT:
        record[id_field] = identifier
    record[text_field] = draw(texts(surrogates=ascii_only))
    for name in draw(st.lists(st.sampled_from(["meta", "n", "é", "x y"]), max_size=2, unique=True)):
        record[name] = draw(json_values(surrogates=ascii_only))
    if draw(st.booleans()):
        record = dict(reversed(record.items()))
    return record


def join_lines(draw, lines: list[bytes], bom: bool) -> bytes:
    ends = [draw(st.sampled_from([b"\n", b"\r\n"])) for _ in lines]
    # No line end after the last line, unless that line is empty: an empty last line without its end is no line.
    if lines and lines[-1] and draw(st.booleans()):
        ends[-1] = b""
    return (BOM if bom else b"") + b"".join(line + end for line, end in zip(lines, ends))


@st.composite
def jsonl_case(draw) -> tuple[bytes, Expected, ReaderOptions]:
    text_field, id_field = draw(st.sampled_from(["text", "body"])), draw(st.sampled_from(list(ID_FIELDS)))
    lines, expected = draw(jsonl_lines(text_field, id_field))
    return join_lines(draw, lines, draw(st.booleans())), expected, ReaderOptions(text_field=text_field, id_field=id_field)


@given(case=jsonl_case(), compression=st.sampled_from(list(COMPRESSORS)))
def test_jsonl_mix(fuzz_dir: Path, case, compression: str) -> None:
    data, expected, options = case
    path = write_case(fuzz_dir, "case.jsonl", data, compression)
    docs, stats = read_checked(path, options)
    check_expected(docs, stats, expected, lambda line: f"{path}:{line}", empty=not data)
    assert stats.bytes_read == len(data)
    # The worker-process path (raw line batches parsed elsewhere) reads the same documents and counts.
    batch_stats = ReadStats()
    batch_docs = []
    for batch in iter_line_batches([str(path)], batch_stats, batch_bytes=64):
        batch_docs.extend(read_line_batch(batch, options, batch_stats))
        for reason, line in batch.skips:
            batch_stats.skip(reason, batch.source, line, strict=False)
    assert [(d.id, d.text, d.line, d.meta) for d in batch_docs] == [(d.id, d.text, d.line, d.meta) for d in docs]
    assert batch_stats.to_dict() == stats.to_dict()


# --------------------------------------------------------------------------------------------- JSON


JSON_FATAL = ["truncated", "deep", "huge_int", "garbage"]


@st.composite
def json_array_case(draw) -> tuple[bytes, Expected, ReaderOptions]:
    """A JSON array of records: bad records anywhere (skipped one by one), records with invalid UTF-8 (repaired
    one by one), and maybe a fatal error at the end (malformed, too deep to parse or a huge number: nothing after
    it can be read, the records before it are kept)."""
    text_field, id_field = draw(st.sampled_from(["text", "body"])), draw(st.sampled_from(list(ID_FIELDS)))
    elements: list[bytes] = []
    expected = Expected()
    for position in range(1, draw(st.integers(0, 10)) + 1):
        kind = draw(st.sampled_from(["good"] * 5 + ["invalid_utf8", "not_object", "no_text", "text_type", "deep"]))
        ascii_only = draw(st.booleans())
        if kind == "good":
            record = good_record(draw, text_field, id_field, ascii_only)
            elements.append(json.dumps(record, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))
            expected.good.append((expected_id(record.get(id_field, ABSENT)), position, utf16_fix(record[text_field])))
            continue
        if kind == "invalid_utf8":  # kept, each invalid sequence replaced by U+FFFD
            raw = json.dumps({text_field: "@@", id_field: position}, ensure_ascii=False).encode()
            bad = draw(st.sampled_from(INVALID_UTF8))
            elements.append(raw.replace(b"@@", bad))
            expected.good.append((str(position), position, bad.decode("utf-8", "replace")))
            expected.repaired += 1
            continue
        expected.bad += 1
        if kind == "not_object":
            elements.append(json.dumps(draw(st.one_of(st.lists(json_scalars(False), max_size=3), json_scalars(False)))).encode())
        elif kind == "no_text":
            elements.append(json.dumps({"other": position}).encode())
        elif kind == "deep":  # too deep, but parsed: skipped alone
            elements.append(deep_json(draw(st.integers(MAX_JSON_DEPTH + 1, 2 * MAX_JSON_DEPTH))))
        else:
            elements.append(json.dumps({text_field: draw(st.integers() | st.lists(st.integers(), max_size=2))}).encode())
    fatal = draw(st.sampled_from([None, None, *JSON_FATAL]))
    tail = b"]"
    if fatal is not None:
        expected.bad += 1
        record = good_record(draw, text_field, id_field, True)
        raw = json.dumps(record).encode()
        if fatal == "truncated":
            elements.append(raw[: draw(st.integers(1, len(raw) - 1))])
            tail = b""
        elif fatal == "deep":  # too deep for json's parser: the end of the record cannot be found
            elements.append(deep_json(draw(st.integers(5_000, 8_000))))
        elif fatal == "huge_int":
            elements.append(raw[:-1] + b', "n": ' + b"9" * draw(st.integers(4301, 5000)) + b"}")
        else:
            elements.append(draw(st.sampled_from([b"}", b"{,", b"'x'", b"NaX", b"[1,,2]"])))
        elements.extend(json.dumps({text_field: "after the error"}).encode() for _ in range(draw(st.integers(0, 2))))
    separators = [draw(st.sampled_from([b",", b", ", b",\n", b"\r\n,\t"])) for _ in elements]
    body = b"".join(sep + element if i else element for i, (sep, element) in enumerate(zip(separators, elements)))
    lead = draw(st.sampled_from([b"", b" ", b"\n", b"\r\n  ", b" " * 100]))
    data = (BOM if draw(st.booleans()) else b"") + lead + b"[" + draw(st.sampled_from([b"", b"\n", b" "])) + body + tail
    data += draw(st.sampled_from([b"", b"\n", b" \n"])) if tail else b""
    return data, expected, ReaderOptions(text_field=text_field, id_field=id_field)


@given(case=json_array_case(), compression=st.sampled_from(list(COMPRESSORS)))
def test_json_array_mix(fuzz_dir: Path, case, compression: str) -> None:
    data, expected, options = case
    path = write_case(fuzz_dir, "case.json", data, compression)
    docs, stats = read_checked(path, options)
    check_expected(docs, stats, expected, lambda position: f"{path}:{position}")
    assert stats.bytes_read == len(data)


@given(case=jsonl_case(), compression=st.sampled_from(list(COMPRESSORS)))
def test_json_file_of_lines_mix(fuzz_dir: Path, case, compression: str) -> None:
    """A .json file that is not an array is read as JSON Lines."""
    data, expected, options = case
    if data.removeprefix(BOM).lstrip().startswith(b"["):  # a file that starts with "[" is a JSON array
        return
    path = write_case(fuzz_dir, "lines.json", data, compression)
    docs, stats = read_checked(path, options)
    check_expected(docs, stats, expected, lambda line: f"{path}:{line}", empty=not data)


# --------------------------------------------------------------------------------------------- CSV / TSV


@functools.lru_cache(maxsize=None)
def sloppy_cells(delimiter: str) -> st.SearchStrategy[str]:
    """Unquoted cells with a quote inside (never first): the csv module reads them as written."""
    plain = st.text(st.characters(exclude_categories=["Cs"], exclude_characters=f'\r\n"{delimiter}'), max_size=5)
    return st.builds(lambda head, tail: head + '"' + tail, plain.filter(bool), plain)


@st.composite
def csv_case(draw, delimiter: str) -> tuple[bytes, Expected, ReaderOptions]:
    """A CSV/TSV file: rows written by the csv module (any quoting) or by hand (stray quotes), rows with invalid
    UTF-8 in a cell (kept, repaired), and bad rows: more cells than the header, no text cell. Blank lines may fall
    between rows."""
    text_field, id_field = draw(st.sampled_from(["text", "body"])), draw(st.sampled_from(list(ID_FIELDS)))
    columns = draw(st.permutations([text_field, *draw(st.lists(st.sampled_from([id_field, "a", "é", "x y"]),
                                                               max_size=3, unique=True))]))
    quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    terminator = draw(st.sampled_from(["\n", "\r\n"]))
    text_index = columns.index(text_field)

    def write(cells: list[str]) -> str:
        # The writer quotes \r and \n only when they are in its line terminator: write with \r\n, then end
        # the row with the case's terminator.
        out = io.StringIO()
        csv.writer(out, delimiter=delimiter, quoting=quoting, lineterminator="\r\n").writerow(cells)
        return out.getvalue()[:-2] + terminator

    chunks: list[bytes] = [write(columns).encode()]
    starts: list[int] = []  # byte offset where each good record starts
    expected = Expected()
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["good"] * 6 + ["sloppy", "blank", "invalid_utf8", "extra_cells", "short"]))
        if kind == "blank":
            chunks.append(terminator.encode())
            continue
        cells = {name: draw(texts()) if name == text_field else draw(st.text(max_size=6)) for name in columns}
        if kind == "sloppy":  # unquoted, with quotes inside fields: read back as written
            cells = {name: draw(sloppy_cells(delimiter)) for name in columns}
        if kind == "short" and text_index == 0:
            kind = "extra_cells"  # a row without the first cell is a blank line
        row = [cells[name] for name in columns]
        if kind == "sloppy":
            raw = (delimiter.join(row) + terminator).encode()
        elif kind == "invalid_utf8":
            target = draw(st.sampled_from(columns))
            raw = write(["@@" if name == target else cells[name] for name in columns]).encode()
            if raw.count(b"@@") == 1:  # else another cell holds the marker: the row stays good as it is
                bad = draw(st.sampled_from(INVALID_UTF8))
                raw = raw.replace(b"@@", bad)
                cells[target] = bad.decode("utf-8", "replace")  # kept, each invalid sequence replaced by U+FFFD
                expected.repaired += 1
            else:
                raw = write(row).encode()
        elif kind == "extra_cells":
            raw = write(row + draw(st.lists(st.text(max_size=3), min_size=1, max_size=2))).encode()
        else:
            raw = write(row[:text_index] if kind == "short" else row).encode()
        if kind in ("good", "sloppy", "invalid_utf8"):
            starts.append(sum(map(len, chunks)))
            expected.good.append((cells.get(id_field) or None, len(starts) - 1, cells[text_field]))
        else:
            expected.bad += 1
        chunks.append(raw)
    bom = BOM if draw(st.booleans()) else b""
    data = b"".join(chunks)
    # A record's line: 1 + the line breaks before it (the csv module counts \r\n, \r and \n).
    lines = [1 + len(re.findall(rb"\r\n|\r|\n", data[:start])) for start in starts]
    expected.good = [(value, lines[index], text) for value, index, text in expected.good]
    return bom + data, expected, ReaderOptions(text_field=text_field, id_field=id_field)


@pytest.mark.parametrize("delimiter", [",", "\t"], ids=["csv", "tsv"])
@given(data=st.data(), compression=st.sampled_from(list(COMPRESSORS)))
def test_csv_mix(fuzz_dir: Path, delimiter: str, data, compression: str) -> None:
    content, expected, options = data.draw(csv_case(delimiter))
    path = write_case(fuzz_dir, "case.csv" if delimiter == "," else "case.tsv", content, compression)
    docs, stats = read_checked(path, options)
    check_expected(docs, stats, expected, lambda line: f"{path}:{line}")
    assert stats.bytes_read == len(content)


# --------------------------------------------------------------------------------------------- text


@st.composite
def txt_lines_case(draw) -> tuple[bytes, Expected, int]:
    """Lines of a text file read with --line-docs: good ones, invalid UTF-8 ones (kept, repaired), blank ones."""
    lines: list[bytes] = []
    expected = Expected()
    blank = 0
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["good"] * 4 + ["blank", "invalid_utf8"]))
        if kind == "blank":
            lines.append(draw(st.sampled_from([b"", b" ", b"\t", b"\r", "\u2028 \x85".encode()])))
            blank += 1
        elif kind == "invalid_utf8":
            lines.append(draw(texts(newlines=False)).encode() + draw(st.sampled_from(INVALID_UTF8)))
            expected.good.append((None, len(lines), lines[-1].decode("utf-8", "replace")))
            expected.repaired += 1
        else:
            text = draw(texts(newlines=False)) + draw(VISIBLE_CHARACTER)
            text += draw(texts(newlines=False))
            lines.append(text.encode())
            expected.good.append((None, len(lines), text.rstrip("\r")))
    bom = draw(st.booleans())
    data = join_lines(draw, lines, bom)
    if data == BOM:  # a byte-order mark alone is one blank line
        blank = 1
    if not bom and data.startswith(BOM) and expected.good and expected.good[0][1] == 1:
        # A first line whose text starts with U+FEFF: its bytes are a byte-order mark, dropped as such.
        expected.good[0] = (None, 1, expected.good[0][2][1:])
    return data, expected, blank


@given(case=txt_lines_case(), compression=st.sampled_from(list(COMPRESSORS)))
def test_txt_line_docs_mix(fuzz_dir: Path, case, compression: str) -> None:
    data, expected, blank = case
    path = write_case(fuzz_dir, "case.txt", data, compression)
    docs, stats = read_checked(path, ReaderOptions(line_docs=True))
    check_expected(docs, stats, expected, lambda line: f"{path}:{line}", empty=not data, blank=blank)
    assert stats.skipped["blank line"] == blank


@given(pieces=st.lists(texts() | st.sampled_from(INVALID_UTF8), max_size=5), bom=st.booleans(),
       compression=st.sampled_from(list(COMPRESSORS)))
def test_txt_file_mix(fuzz_dir: Path, pieces: list, bom: bool, compression: str) -> None:
    """A whole .txt file is one document; invalid bytes are replaced by U+FFFD and count it as repaired."""
    data = (BOM if bom else b"") + b"".join(p if isinstance(p, bytes) else p.encode() for p in pieces)
    path = write_case(fuzz_dir, "whole.txt", data, compression)
    docs, stats = read_checked(path, ReaderOptions())
    try:  # adjacent invalid pieces may make valid UTF-8: decoding decides
        text = data.removeprefix(BOM).decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if not data:
        assert not docs and stats.skipped == {"empty file": 1}
    elif text is None:
        repaired = data.removeprefix(BOM).decode("utf-8", "replace")
        assert [(d.id, d.text) for d in docs] == [(str(path), repaired)] and not stats.skipped
        assert stats.repaired == {REPAIRED: 1}
    elif text.strip():
        assert [(d.id, d.text) for d in docs] == [(str(path), text)] and not stats.skipped
    else:
        assert not docs and not stats.skipped


# --------------------------------------------------------------------------------------------- Parquet


PARQUET_EXTRAS = {
    "n": (pa.int64(), st.none() | st.integers(-(2**63), 2**63 - 1)),
    "f": (pa.float64(), st.none() | st.floats()),
    "flag": (pa.bool_(), st.none() | st.booleans()),
    "raw": (pa.binary(), st.none() | st.binary(max_size=5)),
    "tags": (pa.list_(pa.string()), st.none() | st.lists(st.text(max_size=3), max_size=3)),
    "info": (pa.struct([("k", pa.int32())]), st.none() | st.fixed_dictionaries({"k": st.none() | st.integers(0, 9)})),
}


@st.composite
def parquet_case(draw) -> tuple[pa.Table, Expected, ReaderOptions, int]:
    """A Parquet table: string texts (nulls are bad records) or a text column of the wrong type (every row
    bad), string or integer ids (nulls: default id), extra columns of many types, small row groups."""
    text_field, id_field = draw(st.sampled_from(["text", "body"])), draw(st.sampled_from(list(ID_FIELDS)))
    rows = draw(st.integers(0, 25))
    text_type = draw(st.sampled_from(["string", "string", "large_string", "binary", "int64", "absent"]))
    id_type = draw(st.sampled_from(["string", "int64", "absent"]))
    columns, fields = {}, []
    if text_type != "absent":
        values = {"string": st.none() | texts(), "large_string": st.none() | texts(),
                  "binary": st.none() | st.binary(max_size=5), "int64": st.none() | st.integers(0, 9)}[text_type]
        columns[text_field] = draw(st.lists(values, min_size=rows, max_size=rows))
        fields.append((text_field, getattr(pa, text_type)()))
    if id_type != "absent":
        values = st.none() | (st.text(max_size=6) if id_type == "string" else st.integers(-(2**63), 2**63 - 1))
        columns[id_field] = draw(st.lists(values, min_size=rows, max_size=rows))
        fields.append((id_field, getattr(pa, id_type)()))
    for name in draw(st.lists(st.sampled_from(list(PARQUET_EXTRAS)), max_size=3, unique=True)):
        kind, values = PARQUET_EXTRAS[name]
        columns[name] = draw(st.lists(values, min_size=rows, max_size=rows))
        fields.append((name, kind))
    table = pa.table({name: pa.array(columns[name], type=kind) for name, kind in fields}, schema=pa.schema(fields)) \
        if fields else pa.table({"empty": pa.array([None] * rows, type=pa.null())})
    expected = Expected()
    for row in range(rows):
        text = columns.get(text_field, [None] * rows)[row]
        if text_type in ("string", "large_string") and text is not None:
            identifier = columns[id_field][row] if id_type != "absent" else None
            expected.good.append((None if identifier in (None, "") else str(identifier), row + 1, text))
        else:
            expected.bad += 1
    return table, expected, ReaderOptions(text_field=text_field, id_field=id_field), draw(st.integers(1, 8))


@given(case=parquet_case(), codec=st.sampled_from(["none", "snappy", "zstd"]),
       compression=st.sampled_from(["", ".gz", ".zst"]))
def test_parquet_mix(fuzz_dir: Path, case, codec: str, compression: str) -> None:
    table, expected, options, row_group = case
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=row_group, compression=codec)
    path = write_case(fuzz_dir, "case.parquet", buffer.getvalue(), compression)
    docs, stats = read_checked(path, options)
    check_expected(docs, stats, expected, lambda row: f"{path}:{row}", empty=table.num_rows == 0)
    assert [d.line for d in docs] == [position for _, position, _ in expected.good]


# --------------------------------------------------------------------------------------------- chaos


def mutate(draw, data: bytes) -> bytes:
    """``data`` after a few random edits: flipped, deleted, inserted or duplicated bytes, or a cut."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        edit = draw(st.sampled_from(["flip", "delete", "insert", "duplicate", "cut"]))
        at = draw(st.integers(0, len(data)))
        if edit == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        elif edit == "delete":
            del data[at:at + draw(st.integers(1, 16))]
        elif edit == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif edit == "duplicate":
            data[at:at] = data[at:at + draw(st.integers(1, 64))]
        elif edit == "cut":
            del data[at:]
    return bytes(data)


def chaos_file(folder: Path, name: str, data: st.DataObject, case: st.SearchStrategy,
               build: Callable = lambda case: case[0]) -> tuple[Path, bytes | None]:
    """Write random bytes, or a generated case mutated before or after compression; return the path and the
    uncompressed content (None where the compressed stream itself was damaged, so it is unknown)."""
    compression = data.draw(st.sampled_from(list(COMPRESSORS)))
    source = data.draw(st.sampled_from(["random", "mutated", "mutated", "damaged stream"]))
    content = data.draw(st.binary(max_size=400)) if source == "random" else build(data.draw(case))
    if source == "mutated" or (source == "damaged stream" and not compression):
        content = mutate(data.draw, content)
    packed = COMPRESSORS[compression](content)
    if source == "damaged stream" and compression:
        damaged = mutate(data.draw, packed)
        content, packed = (None if damaged != packed else content), damaged
    path = folder / f"{name}{compression}"
    path.write_bytes(packed)
    return path, content


def non_blank_lines(data: bytes) -> int:
    lines = data.split(b"\n")
    lines[0] = lines[0].removeprefix(BOM)
    return sum(1 for line in lines if line.strip())


@given(data=st.data())
def test_jsonl_chaos(fuzz_dir: Path, data) -> None:
    path, content = chaos_file(fuzz_dir, "chaos.jsonl", data, jsonl_case())
    docs, stats = read_checked(path, ReaderOptions())
    if content is not None:  # every non-blank line is a document or a counted bad record
        assert len(docs) + sum(stats.skipped.values()) == (non_blank_lines(content) if content else 1)


@given(data=st.data())
def test_json_chaos(fuzz_dir: Path, data) -> None:
    path, _ = chaos_file(fuzz_dir, "chaos.json", data, json_array_case())
    read_checked(path, ReaderOptions())


@pytest.mark.parametrize("delimiter", [",", "\t"], ids=["csv", "tsv"])
@given(data=st.data())
def test_csv_chaos(fuzz_dir: Path, delimiter: str, data) -> None:
    path, _ = chaos_file(fuzz_dir, "chaos.csv" if delimiter == "," else "chaos.tsv", data, csv_case(delimiter))
    read_checked(path, ReaderOptions())


@given(data=st.data(), line_docs=st.booleans())
def test_txt_chaos(fuzz_dir: Path, data, line_docs: bool) -> None:
    path, content = chaos_file(fuzz_dir, "chaos.txt", data, txt_lines_case())
    docs, stats = read_checked(path, ReaderOptions(line_docs=line_docs))
    if line_docs and content is not None:  # every line is a document, a blank line or a counted bad record
        lines = content.count(b"\n") + (0 if content.endswith(b"\n") else 1)
        assert len(docs) + sum(stats.skipped.values()) == (lines if content else 1)


def parquet_bytes(case, codec: str = "snappy") -> bytes:
    table, _, _, row_group = case
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=row_group, compression=codec)
    return buffer.getvalue()


@given(data=st.data())
def test_parquet_chaos(fuzz_dir: Path, data) -> None:
    path, _ = chaos_file(fuzz_dir, "chaos.parquet", data, parquet_case(), parquet_bytes)
    read_checked(path, ReaderOptions())


@given(case=parquet_case(), codec=st.sampled_from(["none", "snappy", "zstd"]), data=st.data())
def test_parquet_damaged_pages(fuzz_dir: Path, case, codec: str, data) -> None:
    """Bytes flipped in the data pages only (the footer intact): every row is a document or counted."""
    packed = bytearray(parquet_bytes(case, codec))
    footer = int.from_bytes(packed[-8:-4], "little")
    for _ in range(data.draw(st.integers(1, 4))):
        if len(packed) - 8 - footer > 4:
            packed[data.draw(st.integers(4, len(packed) - 9 - footer))] ^= data.draw(st.integers(1, 255))
    path = fuzz_dir / "pages.parquet"
    path.write_bytes(bytes(packed))
    docs, stats = read_checked(path, case[2])
    assert len(docs) + sum(stats.skipped.values()) == (case[0].num_rows or 1)  # 0 rows: "empty file"
