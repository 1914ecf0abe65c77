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

from corpus_audit.readers import CorpusError, ReaderOptions, ReadStats, expand_paths, iter_documents, read_file

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
    assert [d.id for d in docs] == ["ok1", "ok2"]
    assert [d.line for d in docs] == [1, 8]
    assert sum(stats.skipped.values()) == 5
    assert stats.skipped["missing text field 'text'"] == 1
    assert stats.skipped["invalid UTF-8"] == 1
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
    assert [d.id for d in docs] == ["1", "4"]
    assert stats.skipped == {"invalid UTF-8": 1, "row has more cells than the header": 1}


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
