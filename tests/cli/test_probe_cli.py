"""The probe commands on the command line: ``probe score`` output formats and per-token values, every option
explained in --help, and user errors as one message with exit status 1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from corpus_audit.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "probe"))  # the anchor models' recipe

import tiny_mlm  # noqa: E402

ANCHORS = json.loads(tiny_mlm.ANCHORS.read_text(encoding="utf-8"))
SENTENCES = [key for key in ANCHORS["roberta"] if not key.startswith("_")]


@pytest.fixture(scope="module")
def roberta(tmp_path_factory) -> str:
    return str(tiny_mlm.save("roberta", tmp_path_factory.mktemp("roberta") / "model"))


@pytest.fixture()
def sentences_txt(tmp_path) -> Path:
    path = tmp_path / "sentences.txt"
    path.write_text("\n".join(SENTENCES) + "\n\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("metric", ["within_word_l2r", "original"])
def test_probe_score_writes_sums_and_token_values(roberta, sentences_txt, tmp_path, metric):
    output = tmp_path / "scores.parquet"
    result = CliRunner().invoke(main, ["probe", "score", str(sentences_txt), "--model", roberta, "-o", str(output),
                                       "--metric", metric, "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert f"scored {len(SENTENCES)} sentences" in result.output
    table = pd.read_parquet(output)
    assert table["sentence"].tolist() == SENTENCES
    for row in table.itertuples(index=False):
        anchor = ANCHORS["roberta"][row.sentence]
        assert row.pll == pytest.approx(anchor[f"minicons_sum_{metric}"], abs=1e-4)
        assert list(row.tokens) == anchor["tokens"] and row.n_tokens == len(anchor["tokens"])
        assert list(row.token_scores) == pytest.approx([v for _, v in anchor[f"minicons_tokens_{metric}"]], abs=1e-4)
    assert not (tmp_path / "scores.parquet.parts").exists()  # the resume chunks go once the output is written


def test_probe_score_reads_a_table_and_writes_csv_and_jsonl(roberta, tmp_path):
    source = tmp_path / "in.csv"
    pd.DataFrame({"text": SENTENCES}).to_csv(source, index=False)
    for suffix in (".csv", ".jsonl"):
        output = tmp_path / f"out{suffix}"
        result = CliRunner().invoke(main, ["probe", "score", str(source), "--text-field", "text", "--model", roberta,
                                           "-o", str(output), "--threads", "1"])
        assert result.exit_code == 0, result.output
        table = pd.read_csv(output) if suffix == ".csv" else pd.read_json(output, lines=True)
        tokens = table["tokens"].map(json.loads) if suffix == ".csv" else table["tokens"]
        assert list(tokens[2]) == ANCHORS["roberta"][SENTENCES[2]]["tokens"]
        assert table["pll"][2] == pytest.approx(ANCHORS["roberta"][SENTENCES[2]]["minicons_sum_within_word_l2r"],
                                                abs=1e-4)


@pytest.mark.parametrize("case, message", [
    ("column", "no column 'sentence' (has text); name the sentence column with --text-field"),
    ("suffix", "probe score writes Parquet, JSON Lines or CSV: name the output .parquet or .jsonl or .csv"),
    ("model", "cannot load masked language model 'no/such-model'"),
    ("pickled", "pickled checkpoints can run code when loaded and are refused"),
])
def test_probe_score_errors_are_one_message(roberta, tmp_path, case, message):
    source = tmp_path / "in.csv"
    pd.DataFrame({"text": SENTENCES}).to_csv(source, index=False)
    model, output = roberta, tmp_path / "out.parquet"
    if case == "suffix":
        source, output = tmp_path / "in.txt", tmp_path / "out.xlsx"
        source.write_text("A sentence.\n", encoding="utf-8")
    elif case == "model":
        model = "no/such-model"
    elif case == "pickled":
        (tmp_path / "pickled").mkdir()
        (tmp_path / "pickled" / "pytorch_model.bin").write_bytes(b"\x80\x04pickle")
        model = str(tmp_path / "pickled")
    args = ["probe", "score", str(source), "--model", model, "-o", str(output)]
    if case != "column":
        args += ["--text-field", "text"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert message in result.output and "Traceback" not in result.output


def test_probe_aq27_refuses_a_cuda_device_without_a_gpu(roberta, tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = CliRunner().invoke(main, ["probe", "aq27", "--model", roberta, "-o", str(tmp_path / "out"),
                                       "--device", "cuda"])
    assert result.exit_code == 1 and "torch sees no CUDA GPU here; use --device cpu" in result.output


@pytest.mark.parametrize("command", [["probe", "score"], ["probe", "aq27"], ["probe", "contextual"], ["link"]])
def test_every_option_is_explained(command):
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0
    context = main.make_context("corpus-audit", [], resilient_parsing=True)
    cli_command = main
    for name in command:
        cli_command = cli_command.get_command(context, name)
    for param in cli_command.params:
        if param.param_type_name == "option" and param.name != "help":
            assert param.help and len(param.help) > 15, f"{' '.join(command)} {param.opts} has no help"
    assert "--help" in result.output
