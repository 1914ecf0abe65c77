"""Guard rails: a bad output location, input, language, model, axes file or BIAS map stops filter, audit and
score at once, with a clear message and no traceback, before any input is read; an OUTDIR in use is locked,
and audits into different OUTDIRs run side by side."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from corpus_audit.audit.score_parts import ScoreParts
from corpus_audit.cli import main

SAMPLE = Path(__file__).parents[1] / "data" / "corpus_reddit_sample_en.jsonl.gz"
DRIVER = Path(__file__).parents[1] / "audit_driver.py"
COMMANDS = ["filter", "audit", "score"]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def command_args(command: str, source: Path, target: Path, model: str, axes: str) -> list[str]:
    """Arguments of a run of ``command`` that would succeed, reading ``source`` and writing under ``target``."""
    if command == "filter":
        return ["filter", str(source), "--lang", "en", "-o", str(target / "out.parquet"), "--workers", "1"]
    if command == "audit":
        return ["audit", str(source), "--lang", "en", "-o", str(target), "--model", model, "--axes", axes,
                "--workers", "1"]
    return ["score", str(source), "--lang", "en", "-o", str(target / "out.csv"), "--model", model, "--axes", axes]


@pytest.fixture()
def source(tmp_path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "They are kind. I have asthma."}) + "\n", encoding="utf-8")
    return path


def assert_clear_failure(result, message: str, target: Path) -> None:
    assert result.exit_code != 0
    assert message in result.output, result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, (KeyError, TypeError, AttributeError))
    written = [path for path in target.rglob("*") if path.is_file() and path.name != ".lock"] if target.is_dir() else []
    assert not written  # nothing was read or written before the error


@pytest.mark.parametrize("command", COMMANDS)
def test_unwritable_output_location(command, source, tmp_path, tiny_st_model, tiny_axes):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = invoke(*command_args(command, source, blocker / "out", tiny_st_model, tiny_axes))
    assert_clear_failure(result, "cannot write to", blocker / "out")


@pytest.mark.parametrize("command", COMMANDS)
def test_full_output_location(command, source, tmp_path, tiny_st_model, tiny_axes, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9 - 10**6, 10**6))
    target = tmp_path / "out"
    result = invoke(*command_args(command, source, target, tiny_st_model, tiny_axes))
    assert_clear_failure(result, "has only 1 MB free", target)


@pytest.mark.parametrize("command", COMMANDS)
def test_missing_input(command, tmp_path, tiny_st_model, tiny_axes):
    target = tmp_path / "out"
    result = invoke(*command_args(command, tmp_path / "nothing.jsonl", target, tiny_st_model, tiny_axes))
    assert_clear_failure(result, "nothing.jsonl", target)
    assert "no such file" in result.output or "does not exist" in result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_unknown_language(command, source, tmp_path, tiny_st_model, tiny_axes):
    target = tmp_path / "out"
    args = command_args(command, source, target, tiny_st_model, tiny_axes)
    args[args.index("--lang") + 1] = "fr"
    assert_clear_failure(invoke(*args), "Invalid value for '--lang'", target)


@pytest.mark.parametrize("command", ["audit", "score"])
def test_unknown_model_fails_before_the_input_is_read(command, tmp_path, tiny_axes):
    # An input that reading would reject: the model error must come first.
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\xff\xfe not json\n")
    target = tmp_path / "out"
    result = invoke(*command_args(command, garbage, target, str(tmp_path / "no-such-model"), tiny_axes))
    assert_clear_failure(result, "model folder not found", target)


@pytest.mark.parametrize("command", ["audit", "score"])
def test_tampered_axes_file_fails_before_the_input_is_read(command, source, tmp_path, tiny_st_model):
    axes = tmp_path / "axes.npz"
    axes.write_bytes(b"PK\x03\x04 not really a zip")
    target = tmp_path / "out"
    result = invoke(*command_args(command, source, target, tiny_st_model, str(axes)))
    assert_clear_failure(result, "not a readable corpus-audit axes file", target)


def test_audit_checks_bias_map_and_spacy_model_before_filtering(source, tmp_path, tiny_st_model, tiny_axes):
    bad_map = tmp_path / "map.csv"
    bad_map.write_text("dimension,warmth,competence\nOdd,lukewarm,any\n")
    target = tmp_path / "out"
    args = command_args("audit", source, target, tiny_st_model, tiny_axes)
    assert_clear_failure(invoke(*args, "--bias-map", str(bad_map)), "line 2", target)
    assert_clear_failure(invoke(*args, "--spacy-model", "no_such_model_xyz"), "not installed", target)


# --------------------------------------------------------------------------------------------- concurrency


def start_paused_audit(corpus: Path, outdir: Path, model: str, axes: str, gate: Path) -> subprocess.Popen:
    """An audit in a child process that stops before scoring its first chunk until ``gate/go`` exists."""
    controls = {"chunk": 16, "pause": {"reached": str(gate / f"{outdir.name}.reached"), "go": str(gate / "go")}}
    args = ["audit", str(corpus), "--lang", "en", "-o", str(outdir), "--model", model, "--axes", axes,
            "--workers", "1", "--no-progress"]
    return subprocess.Popen([sys.executable, str(DRIVER), *args], env={**os.environ, "AUDIT_DRIVER": json.dumps(controls)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(paths: list[Path], processes: list[subprocess.Popen], limit: float = 600) -> None:
    deadline = time.monotonic() + limit
    while not all(path.exists() for path in paths):
        for process in processes:
            assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the audits never reached their score stage"
        time.sleep(0.1)


def test_outdir_in_use_is_locked_and_two_outdirs_run_side_by_side(tiny_st_model, tiny_axes, tmp_path, monkeypatch):
    gate = tmp_path / "gate"
    gate.mkdir()
    first, second = tmp_path / "first", tmp_path / "second"
    processes = [start_paused_audit(SAMPLE, outdir, tiny_st_model, tiny_axes, gate) for outdir in (first, second)]
    try:
        # Both audits hold their folder and wait inside the score stage: they run at the same time.
        wait_for([gate / "first.reached", gate / "second.reached"], processes)
        for busy in (first, second):
            for command in (["audit", str(SAMPLE), "--lang", "en", "-o", str(busy), "--model", tiny_st_model,
                             "--axes", tiny_axes], ["report", str(busy)], ["plot", str(busy)]):
                result = invoke(*command)
                assert result.exit_code == 1 and "is in use by another run (pid" in result.output, result.output
        (gate / "go").touch()
        outputs = [process.communicate(timeout=600) for process in processes]
    finally:
        for process in processes:
            process.kill()
    assert [process.returncode for process in processes] == [0, 0], outputs
    monkeypatch.setattr(ScoreParts, "chunk", 16)
    alone = tmp_path / "alone"
    result = invoke("audit", str(SAMPLE), "--lang", "en", "-o", str(alone), "--model", tiny_st_model, "--axes",
                    tiny_axes, "--workers", "1")
    assert result.exit_code == 0, result.output
    expected = pd.read_parquet(alone / "sentences.parquet")
    for outdir in (first, second):
        pd.testing.assert_frame_equal(pd.read_parquet(outdir / "sentences.parquet"), expected)
        assert json.loads((outdir / "summary.json").read_text())["analysis"] == \
            json.loads((alone / "summary.json").read_text())["analysis"]
