"""Data loss is loud: a compressed file that ends early, a binary file given as a corpus, files a folder holds that no
reader takes, and a run that reads nothing usable: each is a console line and a summary.json field, or a failure."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from corpus_audit.cli import main

REDDIT = Path(__file__).parents[1] / "data" / "corpus_reddit_sample_en.jsonl.gz"  # 162 records


def invoke(*args: str | Path):
    return CliRunner().invoke(main, [str(arg) for arg in args])


@pytest.mark.parametrize("workers", ["1", "2"])  # one stream, and line batches in worker processes
def test_a_truncated_gzip_file_is_a_warning_and_in_the_summary(tmp_path, workers):
    data = REDDIT.read_bytes()
    truncated = tmp_path / "cut.jsonl.gz"
    truncated.write_bytes(data[: len(data) // 2])
    result = invoke("filter", truncated, "--lang", "en", "-o", tmp_path / "out.parquet", "--workers", workers)
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out.summary.json").read_text())
    assert len(summary["files_truncated"]) == 1 and summary["files_truncated"][0].startswith(f"{truncated}:")
    line = next(line for line in result.output.splitlines() if "the file ends here" in line)
    assert line.startswith(f"warning: {truncated}:") and "everything after this point was lost" in line
    assert line.removeprefix("warning: ") in summary["warnings"]
    assert 0 < summary["documents_read"] < 162


@pytest.mark.parametrize("name", ["program.txt", "program.jsonl", "program.csv.gz"])
def test_a_binary_file_is_not_repaired_into_a_corpus(tmp_path, name):
    binary = bytes(range(256)) * 64  # NUL bytes and invalid UTF-8, as an executable or an image has
    path = tmp_path / name
    path.write_bytes(gzip.compress(binary) if name.endswith(".gz") else binary)
    result = invoke("filter", path, "--lang", "en", "-o", tmp_path / "out.parquet")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "no text read: every input file is binary content, not text" in result.output
    assert json.loads((tmp_path / "out.summary.json").read_text())["files_binary"] == [str(path)]


def test_a_binary_file_among_good_ones_is_named_and_the_rest_is_read(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "good.jsonl.gz").write_bytes(REDDIT.read_bytes())
    (folder / "photo.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200))
    result = invoke("filter", folder, "--lang", "en", "-o", tmp_path / "out.parquet")
    assert result.exit_code == 0, result.output
    assert f"warning: {folder / 'photo.txt'}: binary content, not text" in result.output
    summary = json.loads((tmp_path / "out.summary.json").read_text())
    assert summary["files_binary"] == [str(folder / "photo.txt")] and summary["documents_read"] == 163


def test_files_a_folder_holds_that_no_reader_takes_are_listed(tmp_path):
    folder = tmp_path / "corpus"
    (folder / "2024").mkdir(parents=True)
    (folder / "2024" / "posts.jsonl.gz").write_bytes(REDDIT.read_bytes())
    for name in ("notes.docx", "2024/posts.xml", "README"):
        (folder / name).write_text("not read")
    result = invoke("filter", folder, "--lang", "en", "-o", tmp_path / "out.parquet")
    assert result.exit_code == 0, result.output
    ignored = sorted(str(folder / name) for name in ("notes.docx", "2024/posts.xml", "README"))
    assert json.loads((tmp_path / "out.summary.json").read_text())["files_ignored"] == ignored
    assert "warning: 3 file(s) in the input folder(s) were not read" in result.output
    assert all(path in result.output for path in ignored)


def test_an_audit_that_finds_nothing_to_audit_fails_without_a_verdict(tmp_path, tiny_st_model, tiny_axes):
    corpus = tmp_path / "weather.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": str(i), "text": f"The weather is nice on day {i}."})
                                for i in range(20)) + "\n")
    result = invoke("audit", corpus, "--lang", "en", "-o", tmp_path / "audit", "--model", tiny_st_model, "--axes",
                    tiny_axes, "--workers", "1")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "nothing to audit: no sentence of the 20 document(s) read mentions an illness" in result.output
    assert "answer:" not in result.output and not (tmp_path / "audit" / "summary.json").exists()


def test_a_records_own_source_field_is_kept_and_the_input_file_has_its_own_name(tmp_path):
    import pyarrow.parquet as pq

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "My depression is bad.", "source": "forum"}) + "\n"
                      + json.dumps({"id": "b", "text": "My asthma is bad."}) + "\n")
    out = tmp_path / "out.parquet"
    result = invoke("filter", corpus, "--lang", "en", "-o", out, "--keep-field", "source", "--keep-field",
                    "source_file", "--workers", "1")
    assert result.exit_code == 0, result.output
    rows = pq.read_table(out).to_pylist()
    assert [row["source"] for row in rows] == ["forum", str(corpus)]  # the record's field wins; else the file
    assert [row["source_file"] for row in rows] == [str(corpus)] * 2


def test_an_unknown_group_by_field_is_an_error_naming_the_fields(tmp_path, tiny_st_model, tiny_axes):
    result = invoke("audit", REDDIT, "--lang", "en", "-o", tmp_path / "audit", "--group-by", "subredit", "--model",
                    tiny_st_model, "--axes", tiny_axes, "--workers", "1")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert ("--group-by subredit: no record with an illness mention has this field; the records' fields: date, id, "
            "subreddit, or source_file (the input file)") in result.output
