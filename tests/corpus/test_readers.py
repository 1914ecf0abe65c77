"""Readers: every format and compression, lazy reading, bad records counted (or raised in strict mode)."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import random
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from corpus_audit.corpus.documents import (CorpusError, NoDocumentsError, ReaderOptions, ReadStats,
                                           check_documents_read)
from corpus_audit.corpus.readers import expand_paths, iter_documents, read_file

RECORDS = [{"id": f"d{i}", "text": f"text {i}", "lang": "en"} for i in range(5)]


def jsonl_bytes(records: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def read(path: Path | str, **options) -> tuple[list, ReadStats]:
    stats = ReadStats()
    return list(read_file(str(path), ReaderOptions(**options), stats)), stats


@pytest.mark.parametrize(
    ("name", "compress"),
    [
        ("a.jsonl", lambda b: b),
        ("a.jsonl.gz", gzip.compress),
        ("a.jsonl.bz2", bz2.compress),
        ("a.jsonl.zst", lambda b: zstandard.ZstdCompressor().compress(b)),
        ("a.json", lambda b: json.dumps(RECORDS).encode()),
        ("a.json.gz", lambda b: gzip.compress(json.dumps(RECORDS).encode())),
    ],
)
def test_json_formats(tmp_path: Path, name: str, compress) -> None:
    path = tmp_path / name
    path.write_bytes(compress(jsonl_bytes(RECORDS)))
    docs, stats = read(path)
    assert [(d.id, d.text, d.meta) for d in docs] == [(r["id"], r["text"], {"id": r["id"], "lang": "en"}) for r in RECORDS]
    assert stats.documents == 5 and not stats.skipped and stats.bytes_read > 0


def test_csv_tsv_with_custom_fields(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text('key,body\n1,"multi\nline, text"\n2,second\n', encoding="utf-8")
    (tmp_path / "b.tsv.gz").write_bytes(gzip.compress(b"key\tbody\n7\ttab text\n"))
    docs, stats = read(tmp_path / "a.csv", text_field="body", id_field="key")
    assert [(d.id, d.text) for d in docs] == [("1", "multi\nline, text"), ("2", "second")]
    docs, _ = read(tmp_path / "b.tsv.gz", text_field="body", id_field="key")
    assert [(d.id, d.text) for d in docs] == [("7", "tab text")]


def test_parquet_plain_and_compressed(tmp_path: Path) -> None:
    table = pa.Table.from_pylist(RECORDS * 600)  # more rows than one read batch
    pq.write_table(table, tmp_path / "a.parquet")
    with open(tmp_path / "a.parquet", "rb") as handle:
        (tmp_path / "b.parquet.zst").write_bytes(zstandard.ZstdCompressor().compress(handle.read()))
    for name in ("a.parquet", "b.parquet.zst"):
        docs, stats = read(tmp_path / name)
        assert len(docs) == 3000 and docs[-1].text == "text 4" and docs[-1].line == 3000


def test_txt_file_or_line_documents(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("first line\n\nsecond line\n", encoding="utf-8")
    docs, _ = read(path)
    assert [(d.id, d.text) for d in docs] == [(str(path), "first line\n\nsecond line\n")]
    docs, _ = read(path, line_docs=True)
    assert [(d.id, d.text) for d in docs] == [(f"{path}:1", "first line"), (f"{path}:3", "second line")]


def test_bad_records_are_counted_and_good_ones_kept(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b'{"id": "ok1", "text": "good"}\n'
        b'{"id": "broken", "text": \n'
        b'{"id": "notext"}\n'
        b'{"id": "num", "text": 3}\n'
        b'["a list"]\n'
        b'{"id": "latin1", "text": "caf\xe9"}\n'
        b'\n'
        b'{"id": "ok2", "text": "also good"}\n'
    )
    docs, stats = read(path)
    assert [d.id for d in docs] == ["ok1", "latin1", "ok2"]
    assert [d.line for d in docs] == [1, 6, 8]
    assert docs[1].text == "caf\ufffd"  # kept, the invalid byte replaced
    assert sum(stats.skipped.values()) == 4 and "invalid UTF-8" not in stats.skipped
    assert stats.skipped["missing text field 'text'"] == 1
    assert stats.repaired == {"invalid UTF-8": 1} and stats.repaired_examples == [f"{path}:6: invalid UTF-8"]
    assert any(reason.startswith("malformed JSON") for reason in stats.skipped)
    assert any(example.startswith(f"{path}:2: malformed JSON") for example in stats.examples)


def test_strict_mode_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"text": "good"}\n{oops\n')
    with pytest.raises(CorpusError, match=r"bad\.jsonl:2: malformed JSON"):
        read(path, strict=True)


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst", ".jsonl.bz2"])
def test_truncated_compressed_file_keeps_complete_records(tmp_path: Path, suffix: str) -> None:
    rng = random.Random(0)  # incompressible text, so that the cut lands after several compressed blocks
    records = [{"id": str(i), "text": f"record {i} " + "%x" % rng.getrandbits(800)} for i in range(2000)]
    data = jsonl_bytes(records)
    compressed = {
        ".jsonl.gz": gzip.compress, ".jsonl.bz2": lambda b: bz2.compress(b, 1),  # 100 kB blocks
        ".jsonl.zst": lambda b: zstandard.ZstdCompressor().compress(b),
    }[suffix](data)
    path = tmp_path / f"cut{suffix}"
    path.write_bytes(compressed[: len(compressed) // 2])
    docs, stats = read(path)
    assert 0 < len(docs) < 2000
    assert [d.text for d in docs] == [r["text"] for r in records[: len(docs)]]  # every record before the cut
    assert sum(v for k, v in stats.skipped.items() if k.startswith("truncated or corrupt")) == 1


def test_csv_bad_utf8_and_extra_cells(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_bytes(b"id,text\n1,fine\n2,caf\xe9\n3,too,many\n4,fine again\n")
    docs, stats = read(path)
    assert [(d.id, d.text) for d in docs] == [("1", "fine"), ("2", "caf\ufffd"), ("4", "fine again")]
    assert stats.skipped == {"row has more cells than the header": 1}
    assert stats.repaired == {"invalid UTF-8": 1} and stats.repaired_examples == [f"{path}:3: invalid UTF-8"]


@pytest.mark.parametrize("name, data, line", [
    ("r.jsonl", b'{"text": "ok"}\n{"id": "r", "text": "caf\xe9 \xff\xfe!"}\n', 2),
    ("r.json", b'[{"text": "ok"},\n {"id": "r", "text": "caf\xe9 \xff\xfe!"}]', 2),
    ("r.csv", b'id,text\n0,ok\nr,"caf\xe9 \xff\xfe!"\n', 3),
    ("r.txt", b"caf\xe9 \xff\xfe!", 1),
])
def test_invalid_utf8_is_replaced_and_counted_or_stops_a_strict_run(tmp_path: Path, name: str, data: bytes,
                                                                     line: int) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    docs, stats = read(path)
    assert docs[-1].text == "caf\ufffd \ufffd\ufffd!" and docs[-1].line in (line, None)
    assert stats.repaired == {"invalid UTF-8": 1} and not stats.skipped
    assert stats.to_dict()["repaired_examples"] == [f"{path}:{line}: invalid UTF-8"]
    with pytest.raises(CorpusError, match=rf"r\.{path.suffix[1:]}:{line}: invalid UTF-8"):
        read(path, strict=True)


def test_parquet_strings_with_invalid_utf8_are_replaced(tmp_path: Path) -> None:
    # Parquet does not check strings: build a string column from raw bytes, as a damaged or careless writer would.
    raw = pa.array([b"fine", b"caf\xe9", None], pa.binary())
    text = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())
    pq.write_table(pa.table({"text": text, "id": ["a", "b", "c"]}), tmp_path / "r.parquet")
    docs, stats = read(tmp_path / "r.parquet")
    assert [(d.id, d.text) for d in docs] == [("a", "fine"), ("b", "caf\ufffd")]
    assert stats.repaired == {"invalid UTF-8": 1} and stats.skipped == {"missing text field 'text'": 1}


def test_empty_files_are_reported(tmp_path: Path) -> None:
    for name, data in [("e.jsonl", b""), ("e.txt", b""), ("e.jsonl.gz", gzip.compress(b""))]:
        (tmp_path / name).write_bytes(data)
        docs, stats = read(tmp_path / name)
        assert docs == [] and stats.skipped == {"empty file": 1}, name


def test_corrupt_parquet_is_reported(tmp_path: Path) -> None:
    (tmp_path / "x.parquet").write_bytes(b"not parquet at all")
    docs, stats = read(tmp_path / "x.parquet")
    assert docs == [] and any(k.startswith("unreadable Parquet") for k in stats.skipped)


def test_paths_globs_folders_and_errors(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("sub/b.jsonl", "a.jsonl.gz", "c.csv", "ignored.bin"):
        (tmp_path / name).write_bytes(b"")
    assert expand_paths([str(tmp_path)]) == [str(tmp_path / n) for n in ("a.jsonl.gz", "c.csv", "sub/b.jsonl")]
    assert expand_paths([str(tmp_path / "*.csv")]) == [str(tmp_path / "c.csv")]
    with pytest.raises(CorpusError, match="no such file"):
        expand_paths([str(tmp_path / "missing.jsonl")])
    with pytest.raises(CorpusError, match="no file matches"):
        expand_paths([str(tmp_path / "*.parquet")])


def test_reading_is_lazy(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(jsonl_bytes(RECORDS) + b"{broken\n")
    stats = ReadStats()
    stream = iter_documents([str(path)], ReaderOptions(), stats)
    first = next(stream)
    assert first.id == "d0" and stats.documents == 1 and not stats.skipped


def test_limit_and_reproducible_sample(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(jsonl_bytes([{"id": str(i), "text": "t"} for i in range(1000)]))

    def ids(**kwargs) -> list[str]:
        return [d.id for d in iter_documents([str(path)], ReaderOptions(), ReadStats(), **kwargs)]

    assert ids(limit=3) == ["0", "1", "2"]
    sampled = ids(sample=0.1, seed=7)
    assert 50 < len(sampled) < 150 and sampled == ids(sample=0.1, seed=7) != ids(sample=0.1, seed=8)
    with pytest.raises(CorpusError, match="sample"):
        ids(sample=1.5)


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = io.TextIOWrapper(io.BytesIO(jsonl_bytes(RECORDS[:2])))
    monkeypatch.setattr(sys, "stdin", fake)
    docs = list(iter_documents(["-"], ReaderOptions(), ReadStats()))
    assert [d.id for d in docs] == ["d0", "d1"] and docs[0].source == "-"


def test_hf_dataset_builder_on_local_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    path = tmp_path / "a.jsonl"
    path.write_bytes(jsonl_bytes(RECORDS))
    stats = ReadStats()
    docs = list(iter_documents([str(path)], ReaderOptions(), stats, hf_dataset="json", limit=4))
    assert [d.id for d in docs] == ["d0", "d1", "d2", "d3"]
    assert docs[0].meta["lang"] == "en" and docs[0].source == "hf:json[train]"
    with pytest.raises(CorpusError, match="cannot open Hugging Face dataset"):
        list(iter_documents([], ReaderOptions(), ReadStats(), hf_dataset=str(tmp_path / "nothing_here")))


# --- orjson fast path: the same records as json, or json decides ------------------------------------------

JSON_EDGE_CASES = [
    b'{"a": 1}', b'\xef\xbb\xbf{"a": 1}', b'{"a": "\\ud800"}', b'{"a": "\\udc00x"}', b'{"a": "\\ud83d\\ude00"}',
    b'{"a": 18446744073709551615}', b'{"a": 18446744073709551616}', b'{"a": -9223372036854775808}',
    b'{"a": -9223372036854775809}', b'{"a": [1, {"b": 123456789012345678901234567890}]}', b'{"a": 1e400}',
    b'{"a": -0}', b'{"a": -0.0}', b'{"a": 0.1}', b'{"a": NaN}', b'{"a": Infinity}', b'{"a": "x\x01y"}',
    b'{"a": "x\x7fy"}', b'{"a": 1}\x0c', b'{"a": 1}\r\n', b'{"a": 1, "a": 2, "b": 3}', b'\t{"a": 1} ', b'{"a": "\xed\xa0\x80"}',
    b'{"a": "\xc3"}', b'{"a": "\xc0\x80"}', b'{"a": "\xf4\x90\x80\x80"}', b'[1, 2]', b'"s"', b'null', b'{"a": 01}',
    b'{"a": "\\/\\u0000\\n"}', b'{"\\u00e9": "caf\\u00e9"}', b'{"a": true,}', b'{"a": [1,]}', b'{"a" 1}', b'{',
    b'{"a": "\\x"}', b'{"a": 1}{"b": 2}', b'[' * 3000 + b']' * 3000,
]


def _reference_loads(raw: bytes) -> str:
    """What the reader made of a line before orjson: the record's repr, or the error."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "invalid UTF-8"
    try:
        return repr(json.loads(text))
    except json.JSONDecodeError as exc:
        return f"malformed JSON ({exc.msg})"
    except RecursionError:
        return "RecursionError"


def _check_fast_loads(raw: bytes) -> bool:
    """Whether orjson decided ``raw``; if it did, its record must be json's, repr for repr (types, float signs,
    key order)."""
    from corpus_audit.corpus.readers.records import UNDECIDED, loads_fast

    record = loads_fast(raw)
    if record is UNDECIDED:
        return False
    assert repr(record) == _reference_loads(raw), raw
    return True


def test_orjson_fast_path_edge_cases() -> None:
    from corpus_audit.corpus.readers import records

    assert records.orjson is not None  # the fast path is the one under test
    decided = [raw for raw in JSON_EDGE_CASES if _check_fast_loads(raw)]
    assert b'{"a": 1}' in decided and b'{"a": 1, "a": 2, "b": 3}' in decided
    # Integers beyond 64 bits (orjson: floats), floats, NaN, lone surrogates, BOM, bad UTF-8: json decides.
    for raw in (b'{"a": 18446744073709551616}', b'{"a": -0.0}', b'{"a": NaN}', b'{"a": "\\ud800"}', b'\xef\xbb\xbf{"a": 1}',
                b'{"a": "\xc3"}', b'[' * 3000 + b']' * 3000):
        assert raw not in decided


def test_orjson_fast_path_random_values() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**70), max_value=2**70)
               | st.floats(allow_nan=False) | st.text() | st.sampled_from(["\ud800", "a\udfffb", "\x00", "\u2028", "é😀"]))
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                          max_leaves=12)

    @settings(max_examples=500, deadline=None, derandomize=True)
    @given(st.dictionaries(st.sampled_from(["id", "text", "meta", "a", "é"]), values, max_size=5), st.booleans(), st.booleans())
    def check(record: dict, ensure_ascii: bool, pad: bool) -> None:
        raw = json.dumps(record, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")
        _check_fast_loads(b" " + raw + b"\r\n" if pad else raw)

    check()


def test_orjson_fast_path_random_bytes() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    alphabet = [b'{', b'}', b'[', b']', b'"', b':', b',', b' ', b'\\', b'u', b'd8', b'00', b'1', b'-', b'.', b'e', b'0',
                b'true', b'null', b'NaN', b'\n', b'\t', b'\x00', b'\xc3', b'\xa9', b'\xed\xa0\x80', b'a', b'"text": ']
    chunks = st.lists(st.sampled_from(alphabet), max_size=20)

    @settings(max_examples=1500, deadline=None, derandomize=True)
    @given(chunks)
    def check(parts: list[bytes]) -> None:
        _check_fast_loads(b"".join(parts))

    check()


def test_jsonl_documents_and_counts_do_not_depend_on_orjson(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from corpus_audit.corpus.readers import records

    path = tmp_path / "mixed.jsonl"
    good = [{"id": 1, "text": "caf\u00e9 \u00e9t\u00e9", "n": 18446744073709551616}, {"id": "f", "text": "x", "score": -0.0},
            {"text": "no id", "meta": {"deep": [1, [2.5, None]]}}, {"id": "s", "text": "lone \ud800 surrogate"},
            {"id": 18446744073709551617, "text": "big id"}, {"id": "dup", "text": "second"}]  # the line itself (below) repeats the key
    lines = [json.dumps(record).encode("utf-8", "surrogatepass") + b"\n" for record in good]
    lines[5] = b'{"id": "dup", "text": "first", "text": "second"}\n'
    lines += [b'{"id": "nan", "text": "t", "v": NaN}\n', b'\xef\xbb\xbf{"id": "bom", "text": "t"}\n', b'{"text": "caf\xe9"}\n',
              b'{"id": "ctl", "text": "a\x01b"}\n', b'{"id": "trail", "text": "t",}\n', b'[1]\n', b'{"id": "nt"}\n', b'  \r\n']
    path.write_bytes(b"".join(lines))

    def snapshot() -> tuple:
        docs, stats = read(path)
        return [(d.id, d.text, repr(d.meta), d.line) for d in docs], stats.to_dict()

    fast = snapshot()
    monkeypatch.setattr(records, "orjson", None)
    assert snapshot() == fast
    assert [doc[0] for doc in fast[0]] == ["1", "f", f"{path}:3", "s", "18446744073709551617", "dup", "nan",
                                           f"{path}:9"]
    assert fast[1]["records_skipped"] == 5  # BOM, control character, trailing comma, list, no text
    assert fast[1]["records_repaired"] == 1  # Latin-1


def test_lone_surrogate_escapes_become_replacement_characters(tmp_path: Path) -> None:
    # json accepts "\ud800" escapes; neither spaCy nor Parquet accept the string they make.
    path = tmp_path / "s.jsonl"
    path.write_text('{"id": "a\\udc00", "text": "lone \\ud800 asthma", "x": 1}\n'
                    '{"id": "b", "text": "pair \\ud83d\\ude00 ok"}\n', encoding="utf-8")
    docs = list(read_file(str(path), ReaderOptions(), ReadStats()))
    assert [(d.id, d.text) for d in docs] == [("a\ufffd", "lone \ufffd asthma"), ("b", "pair \U0001f600 ok")]


def test_no_document_read_names_the_fields_seen_and_the_likeliest_text_field(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    path.write_text('{"text": null, "title": "ab", "id": 1}\n{"text": null, "title": "abc"}\n', encoding="utf-8")
    stats = read(path)[1]
    with pytest.raises(NoDocumentsError, match=r"^no document had a text field 'text' \(2 records skipped\); fields "
                                               r"seen: id, text, title; pass --text-field title$"):
        check_documents_read(stats)
    check_documents_read(read(path, text_field="title")[1])  # documents read: no error
    other = tmp_path / "o.jsonl"
    other.write_text('{"id": 1, "n": 2}\n', encoding="utf-8")
    with pytest.raises(NoDocumentsError, match="fields seen: id, n; pass --text-field with the field that holds"):
        check_documents_read(read(other)[1])
    other.write_text(json.dumps({f"f{i}": "x" * i for i in range(50)}) + "\n", encoding="utf-8")
    assert len(read(other)[1].fields_seen) == 20  # bounded, whatever the records
