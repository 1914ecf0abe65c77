"""Fail loudly: what used to end with exit 0 and an empty report (a text field that does not exist, an empty corpus,
every record unreadable, a wrong extension on an output) stops with a non-zero exit and one line naming the fix; a
corpus that does not look like --lang gets a warning; the text option has one name in every command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from corpus_audit.cli import main

DATA = Path(__file__).parents[1] / "data"
REDDIT = DATA / "corpus_reddit_sample_en.jsonl.gz"  # 162 records: id, subreddit, date, text
CODIESP_ES = DATA / "corpus_codiesp_sample_es.jsonl.gz"


def invoke(*args: str | Path):
    return CliRunner().invoke(main, [str(arg) for arg in args])


def error_line(result) -> str:
    """The one line of a failed command's message."""
    assert result.exit_code != 0 and "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, result.output
    return lines[0].removeprefix("Error: ")


@pytest.fixture()
def audit_args(tiny_st_model, tiny_axes) -> list[str]:
    return ["--model", tiny_st_model, "--axes", tiny_axes, "--workers", "1"]


@pytest.mark.parametrize("command", ["filter", "audit"])
def test_a_text_field_that_no_record_has_names_the_fields_seen_and_the_fix(command, tmp_path, audit_args):
    output = ["-o", tmp_path / "out.parquet"] if command == "filter" else ["-o", tmp_path / "audit", *audit_args]
    result = invoke(command, REDDIT, "--lang", "en", "--text-field", "body", *output)
    assert error_line(result) == ("no document had a text field 'body' (162 records skipped); fields seen: date, id, "
                                  "subreddit, text; pass --text-field text")


@pytest.mark.parametrize("command", ["filter", "audit"])
@pytest.mark.parametrize("content, message", [
    (b"", "the corpus is empty: its 1 file(s) hold no record; check the CORPUS paths"),
    (b'{"text": \n[1]\n', "no document read: all 2 records were skipped (malformed JSON (Expecting value) 1, record is "
                          "not an object 1), e.g. {path}:1: malformed JSON (Expecting value); fix the input or pass "
                          "--format, --text-field or --line-docs"),
])
def test_a_corpus_without_a_document_fails(command, content, message, tmp_path, audit_args):
    corpus = tmp_path / "in.jsonl"
    corpus.write_bytes(content)
    output = ["-o", tmp_path / "out.parquet"] if command == "filter" else ["-o", tmp_path / "audit", *audit_args]
    for _ in range(2):  # the filter stage is not marked done: a rerun reads the corpus again, and fails again
        result = invoke(command, corpus, "--lang", "en", *output)
        assert error_line(result) == message.format(path=corpus)


def test_a_sample_that_keeps_no_document_fails(tmp_path):
    corpus = tmp_path / "in.jsonl"
    corpus.write_text('{"text": "I have asthma."}\n', encoding="utf-8")
    result = invoke("filter", corpus, "--lang", "en", "--sample", "0.0001", "-o", tmp_path / "out.parquet")
    assert error_line(result) == "--sample kept none of the 1 documents read: raise it"


def test_audit_needs_lang(tmp_path, audit_args):
    result = invoke("audit", REDDIT, "-o", tmp_path / "audit", *audit_args)
    assert result.exit_code == 2 and "Missing option '--lang'" in result.output
    assert not (tmp_path / "audit").exists()


@pytest.mark.parametrize("command", ["filter", "audit"])
def test_a_corpus_in_another_language_is_warned_about(command, tmp_path, audit_args):
    output = ["-o", tmp_path / "out.parquet"] if command == "filter" else ["-o", tmp_path / "audit", *audit_args]
    result = invoke(command, CODIESP_ES, "--lang", "en", *output)
    assert result.exit_code == 0, result.output  # a warning, not an error: corpora mix languages
    warning = "the corpus looks like Spanish (es), not English (en): pass --lang es"
    assert f"warning: {warning}" in result.output
    summary = tmp_path / "out.summary.json" if command == "filter" else tmp_path / "audit" / "summary.json"
    summary = json.loads(summary.read_text(encoding="utf-8"))
    assert (summary if command == "filter" else summary["filter"])["warnings"] == [warning]


def test_a_corpus_in_its_language_gets_no_warning(tmp_path):
    result = invoke("filter", REDDIT, "--lang", "en", "-o", tmp_path / "out.parquet", "--workers", "1")
    assert result.exit_code == 0 and "warning" not in result.output, result.output
    assert json.loads((tmp_path / "out.summary.json").read_text(encoding="utf-8"))["warnings"] == []


def test_repaired_records_are_in_the_filter_summary(tmp_path):
    corpus = tmp_path / "in.jsonl"
    corpus.write_bytes(b'{"id": "a", "text": "I have asthma."}\n{"id": "b", "text": "Caf\xe9 and asthma."}\n')
    result = invoke("filter", corpus, "--lang", "en", "-o", tmp_path / "out.parquet", "--workers", "1")
    assert result.exit_code == 0, result.output
    assert "records repaired (kept, invalid bytes replaced by U+FFFD): 1" in result.output
    summary = json.loads((tmp_path / "out.summary.json").read_text(encoding="utf-8"))
    assert summary["records_repaired"] == 1 and summary["repaired_examples"] == [f"{corpus}:2: invalid UTF-8"]
    result = invoke("filter", corpus, "--lang", "en", "-o", tmp_path / "strict.parquet", "--strict")
    assert error_line(result) == f"{corpus}:2: invalid UTF-8"


@pytest.fixture()
def folders(tmp_path) -> tuple[Path, Path]:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return tmp_path / "a", tmp_path / "b"


@pytest.mark.parametrize("args, message", [
    (["filter", REDDIT, "--lang", "en", "-o", "{tmp}/out.csv"],
     "{tmp}/out.csv: filter writes Parquet: name the output .parquet"),
    (["score", REDDIT, "-o", "{tmp}/out.xlsx", "--model", "/no/such/model"],
     "{tmp}/out.xlsx: score writes CSV or Parquet: name the output .csv or .parquet"),
    (["export-flagged", "{tmp}/a", "-o", "{tmp}/out.txt"],
     "{tmp}/out.txt: export-flagged writes CSV, Parquet, JSON Lines or (--format label-studio) JSON: name the output "
     ".csv or .parquet or .jsonl or .json"),
    (["compare", "{tmp}/a", "{tmp}/b", "-o", "{tmp}/out.csv"],
     "{tmp}/out.csv: compare writes an HTML report or JSON: name the output .html or .json"),
    (["probe", "score", REDDIT, "--model", "/no/such/model", "-o", "{tmp}/out.txt"],
     "{tmp}/out.txt: probe score writes Parquet, JSON Lines or CSV: name the output .parquet or .jsonl or .csv"),
    (["axes", "train", "--model", "/no/such/model", "-o", "{tmp}/axes.csv"],
     "{tmp}/axes.csv: axes train writes NumPy .npz: name the output .npz"),
    (["axes", "evaluate", "--model", "/no/such/model", "--json", "{tmp}/out.csv"],
     "{tmp}/out.csv: --json writes JSON: name the output .json"),
])
def test_an_output_extension_that_does_not_match_the_format_fails_before_any_work(args, message, folders, tmp_path):
    result = invoke(*[str(arg).format(tmp=tmp_path) for arg in args])
    assert error_line(result) == message.format(tmp=tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a", "b"]  # nothing written


def test_text_field_is_the_one_name_and_the_old_names_still_work(tmp_path, tiny_st_model, tiny_axes):
    source = tmp_path / "in.jsonl"
    source.write_text('{"body": "They are kind."}\n', encoding="utf-8")
    model = ["--model", tiny_st_model, "--axes", tiny_axes]
    new = invoke("score", source, "-o", tmp_path / "new.csv", "--text-field", "body", *model)
    assert new.exit_code == 0 and "warning" not in new.output, new.output
    old = invoke("score", source, "-o", tmp_path / "old.csv", "--text-column", "body", *model)
    assert old.exit_code == 0 and "warning: --text-column is now --text-field" in old.output, old.output
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()
    both = invoke("score", source, "-o", tmp_path / "both.csv", "--text-field", "text", "--text-column", "body", *model)
    assert both.exit_code == 2 and "disagree: give --text-field only" in both.output
    for command in (["score"], ["probe", "score"], ["filter"], ["audit"]):
        help_text = invoke(*command, "--help").output
        assert "--text-field" in help_text and "--text-column" not in help_text and "--column" not in help_text


def test_audit_help_lists_report_html():
    assert "report.html" in invoke("audit", "--help").output
