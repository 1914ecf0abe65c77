"""report, plot, compare and export-flagged read an audit's outputs: a missing or unreadable file is a clear
error naming it; bad rows of sentences.parquet are left out and counted, or with --strict stop the command
at the first one, naming file, row and reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from corpus_audit.audit.analysis import analyse
from corpus_audit.stigma.quadrants import quadrant_of
from corpus_audit.cli import main

MODEL = "sentence-transformers:test-model@0"


def make_audit(outdir: Path) -> pd.DataFrame:
    """The files of a finished audit (sentences.parquet, aq27.csv, summary.json) for 60 synthetic sentences."""
    rng = np.random.default_rng(0)
    types = ["mental"] * 30 + ["physical"] * 25 + ["both"] * 5
    frame = pd.DataFrame({
        "doc_id": [f"doc-{i}" for i in range(len(types))], "sentence_index": 0,
        "sentence": [f"Sentence {i}." for i in range(len(types))], "terms": [["flu"]] * len(types),
        "illnesses": [["flu"]] * len(types), "illness_type": types,
        "warmth": rng.uniform(-1, 1, len(types)).astype("float32"),
        "competence": rng.uniform(-1, 1, len(types)).astype("float32")})
    frame["quadrant"] = quadrant_of(frame["warmth"].to_numpy(), frame["competence"].to_numpy())
    outdir.mkdir()
    frame.to_parquet(outdir / "sentences.parquet", index=False)
    result = analyse(frame, seed=0)
    result.bias_map.to_csv(outdir / "aq27.csv", index=False)
    summary = {"corpus": {"inputs": ["corpus.jsonl"], "hf_dataset": None},
               "options": {"lang": "en", "model": None, "axes_path": None, "seed": 0, "bias_map": None},
               "package_version": "test", "filter": {"documents_read": 60, "sentences_kept": 60},
               "score": {"model_id": MODEL, "duplicates_removed": 0, "sentences_scored": 60},
               "analysis": result.to_dict()}
    (outdir / "summary.json").write_text(json.dumps(summary, default=str), encoding="utf-8")
    return frame


@pytest.fixture()
def audits(tmp_path) -> tuple[Path, Path]:
    make_audit(tmp_path / "a")
    return tmp_path / "a", Path(shutil.copytree(tmp_path / "a", tmp_path / "b"))


def commands(outdir: Path, other: Path, tmp_path: Path) -> dict[str, list[str]]:
    return {"report": ["report", str(outdir)], "plot": ["plot", str(outdir)],
            "compare": ["compare", str(other), str(outdir)],
            "export-flagged": ["export-flagged", str(outdir), "-o", str(tmp_path / "flagged.csv")]}


COMMANDS = ["report", "plot", "compare", "export-flagged"]


def invoke(args: list[str]):
    return CliRunner().invoke(main, args)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("content", [b"", b"PAR1 garbage PAR1", b"\x00" * 100])
def test_unreadable_sentences_file_is_named(audits, tmp_path, command, content):
    a, b = audits
    (b / "sentences.parquet").write_bytes(content)
    result = invoke(commands(b, a, tmp_path)[command])
    assert result.exit_code == 1, result.output
    assert f"{b / 'sentences.parquet'}: not a readable Parquet file" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_sentences_file_without_the_audit_columns_is_named(audits, tmp_path, command):
    a, b = audits
    pd.DataFrame({"sentence": ["x"], "warmth": [0.1]}).to_parquet(b / "sentences.parquet")
    result = invoke(commands(b, a, tmp_path)[command])
    assert result.exit_code == 1 and f"{b / 'sentences.parquet'}: lacks column(s) doc_id" in result.output


@pytest.mark.parametrize("command", ["report", "plot", "compare"])
@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe"])
def test_unreadable_summary_is_named(audits, tmp_path, command, content):
    a, b = audits
    (b / "summary.json").write_bytes(content)
    result = invoke(commands(b, a, tmp_path)[command])
    assert result.exit_code == 1 and str(b / "summary.json") in result.output, result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("content", [b"", b"dimension\nAnger\n", b'"unclosed\n'])
def test_unreadable_aq27_table_is_named(audits, tmp_path, content):
    a, b = audits
    (b / "aq27.csv").write_bytes(content)
    result = invoke(commands(b, a, tmp_path)["compare"])
    assert result.exit_code == 1 and str(b / "aq27.csv") in result.output, result.output


def with_bad_rows(outdir: Path) -> pd.DataFrame:
    """Rows 5, 9 and 12 (1-based) made into rows no audit writes; return the good ones."""
    frame = pd.read_parquet(outdir / "sentences.parquet")
    frame.loc[4, "illness_type"] = "banana"
    frame.loc[8, "quadrant"] = "warm-competent" if frame.loc[8, "quadrant"] != "warm-competent" else "cold-competent"
    frame.loc[11, "warmth"] = np.inf
    frame.to_parquet(outdir / "sentences.parquet", index=False)
    return frame.drop(index=[4, 8, 11]).reset_index(drop=True)


@pytest.mark.parametrize("command", COMMANDS)
def test_strict_stops_at_the_first_bad_row(audits, tmp_path, command):
    a, b = audits
    with_bad_rows(b)
    result = invoke([*commands(b, a, tmp_path)[command], "--strict"])
    assert result.exit_code == 1
    assert f"{b / 'sentences.parquet'}:5: illness type is not mental, physical or both" in result.output
    assert not (tmp_path / "flagged.csv").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_bad_rows_are_left_out_and_counted(audits, tmp_path, command):
    a, b = audits
    good = with_bad_rows(b)
    result = invoke(commands(b, a, tmp_path)[command])
    assert result.exit_code == 0, result.output
    assert (f"warning: {b / 'sentences.parquet'}: left out 3 bad row(s): illness type is not mental, physical or "
            "both (1), a score is infinite (1), quadrant disagrees with the scores (1)") in result.stderr
    if command == "export-flagged":
        exported = pd.read_csv(tmp_path / "flagged.csv")
        assert exported["doc_id"].tolist() == good["doc_id"].tolist()


def test_unscored_rows_are_not_bad(audits, tmp_path):
    a, b = audits
    frame = pd.read_parquet(b / "sentences.parquet")
    frame.loc[3, ["warmth", "competence"]] = np.nan
    frame.loc[3, "quadrant"] = None
    frame.to_parquet(b / "sentences.parquet", index=False)
    result = invoke([*commands(b, a, tmp_path)["export-flagged"], "--strict"])
    assert result.exit_code == 0, result.output
    assert len(pd.read_csv(tmp_path / "flagged.csv")) == len(frame) - 1  # unscored: never flagged
