"""`corpus-audit score` and `axes` commands through click's CliRunner, with a tiny model built in the test."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from corpus_audit.cli import main
from corpus_audit.scm.axes import SCMAxes
from corpus_audit.scm.columns import OUTPUT_COLUMNS


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_score_masks_illness_mentions_like_an_audit(tmp_path, tiny_st_model, tiny_axes):
    """With --mask-terms (the default) the illness word is replaced by the mask phrase before embedding: a sentence
    naming depression scores as the same sentence saying "this condition"; without it, it does not."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "People with depression are kind."}\n{"text": "People with this condition are kind."}\n',
                      encoding="utf-8")
    scores = {}
    for flag in ("--mask-terms", "--no-mask-terms"):
        out = tmp_path / f"{flag}.csv"
        result = run("score", str(source), "-o", str(out), "--model", tiny_st_model, "--axes", tiny_axes, flag)
        assert result.exit_code == 0, result.output
        scores[flag] = pd.read_csv(out)
    masked, unmasked = scores["--mask-terms"], scores["--no-mask-terms"]
    assert masked["text"].tolist() == ["People with depression are kind.", "People with this condition are kind."]
    np.testing.assert_allclose(masked.loc[0, ["warmth", "competence"]], masked.loc[1, ["warmth", "competence"]])
    assert not np.allclose(unmasked.loc[0, ["warmth", "competence"]], unmasked.loc[1, ["warmth", "competence"]])


def test_library_and_command_normalise_whitespace_alike(tiny_st_model, tiny_axes):
    from corpus_audit.score.scorer import ModelSpec, prepare_text, score_texts

    embedder, axes = ModelSpec("en", tiny_st_model, axes_path=tiny_axes).load()
    scores = score_texts(["They are kind.", "They are kind. ", "  They\tare\n kind.", " "], embedder, axes)
    np.testing.assert_array_equal(scores[1], scores[0])
    np.testing.assert_array_equal(scores[2], scores[0])
    assert np.isnan(scores[3]).all()
    assert prepare_text(" a \u00a0 b\n") == ("a b", False) and prepare_text("x" * 6000)[1]


def test_axes_train_records_provenance(tiny_axes, tiny_st_model):
    axes = SCMAxes.load(tiny_axes)
    meta = axes.metadata_
    assert meta["embedder_id"].startswith(f"sentence-transformers:{tiny_st_model}@")
    assert meta["dimension"] == 32 and axes.n_features_in_ == 32
    assert meta["recipe"]["name"] == "reference" and len(meta["lexicon_sha256"]) == 64
    assert len(meta["templates_sha256"]) == 64 and meta["n_training_sentences"] > 235


def test_score_csv_keeps_columns_and_embeds_duplicates_once(tmp_path, tiny_st_model, tiny_axes):
    source = tmp_path / "in.csv"
    pd.DataFrame({"id": [1, 2, 3, 4], "sentence": ["They are kind.", "They are cruel.", "They are kind.", "x"],
                  "extra": ["a", "b", "c", "d"]}).to_csv(source, index=False)
    out = tmp_path / "out.parquet"
    result = run("score", str(source), "-o", str(out), "--text-field", "sentence", "--model", tiny_st_model,
                 "--axes", tiny_axes)
    assert result.exit_code == 0, result.output
    assert "scored 4 of 4 rows (3 distinct texts)" in result.output
    frame = pd.read_parquet(out)
    # the input's columns in their order, then the instrument's (judgement columns empty: reference axes)
    assert list(frame.columns) == ["id", "sentence", "extra", *OUTPUT_COLUMNS, "category", "top_dimension"]
    assert frame["extra"].tolist() == ["a", "b", "c", "d"] and frame["judgement_strength"].isna().all()
    assert "stigma" in OUTPUT_COLUMNS and frame["stigma"].isna().all()  # no stigma head in reference axes
    np.testing.assert_allclose(frame.loc[0, ["warmth", "competence"]], frame.loc[2, ["warmth", "competence"]])
    assert np.isfinite(frame[["warmth", "competence"]].to_numpy()).all()  # the reference head is unbounded


def test_score_jsonl_and_txt_inputs(tmp_path, tiny_st_model, tiny_axes):
    jsonl = tmp_path / "in.jsonl.gz"
    with gzip.open(jsonl, "wt") as handle:
        handle.write(json.dumps({"text": "They are smart.", "doc": 7}) + "\n{not json\n")
        handle.write(json.dumps({"text": "They are stupid.", "doc": 8}) + "\n")
    out = tmp_path / "out.csv"
    result = run("score", str(jsonl), "-o", str(out), "--model", tiny_st_model, "--axes", tiny_axes)
    assert result.exit_code == 0, result.output
    assert "skipped 1: malformed JSON" in result.output
    assert pd.read_csv(out)["doc"].tolist() == [7, 8]

    txt = tmp_path / "in.txt"
    txt.write_bytes(b"They are warm.\n\nThey are cold.\n\xff\xfe broken bytes\n" + b"kind " * 20000 + b"\n")
    result = run("score", str(txt), "-o", str(out), "--model", tiny_st_model, "--axes", tiny_axes)
    assert result.exit_code == 0, result.output
    assert "repaired 1 (kept, bytes replaced by U+FFFD): invalid UTF-8" in result.output and "in.txt:4" in result.output
    assert "1 texts longer than the limit were cut" in result.output
    frame = pd.read_csv(out)
    assert "skipped 1: blank line" in result.output
    assert frame["line"].tolist() == [1, 3, 4, 5] and frame["warmth"].notna().all()
    assert frame["text"][2] == "\ufffd\ufffd broken bytes"


@pytest.mark.parametrize(
    "content, args, message",
    [
        (b"", [], "is empty"),
        (b"id,sentence\n1,They are kind.\n", [], "no document had a text field 'text' (1 records skipped); fields "
                                                "seen: id, sentence; pass --text-field sentence"),
    ],
)
def test_user_errors_are_messages_not_tracebacks(tmp_path, tiny_st_model, tiny_axes, content, args, message):
    source = tmp_path / "in.csv"
    source.write_bytes(content)
    result = run("score", str(source), "-o", str(tmp_path / "o.csv"), "--model", tiny_st_model, "--axes",
                 tiny_axes, *args)
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o.csv").exists()


def test_bad_output_extension_fails_before_any_work(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("They are kind.\n")
    result = run("score", str(source), "-o", str(tmp_path / "out.xlsx"), "--model", "/nonexistent/model")
    assert result.exit_code == 1 and "score writes CSV or Parquet: name the output .csv or .parquet" in result.output


def test_axes_from_another_model_are_refused(tmp_path, tiny_st_model, foreign_axes):
    source = tmp_path / "in.txt"
    source.write_text("They are kind.\n")
    result = run("score", str(source), "-o", str(tmp_path / "o.csv"), "--model", tiny_st_model, "--axes", foreign_axes)
    assert result.exit_code == 1 and "were trained on embeddings of" in result.output


def test_missing_axes_are_trained_once_and_cached(tmp_path, tiny_st_model, isolated_cache):
    source = tmp_path / "in.txt"
    source.write_text("They are kind.\n")
    first = run("score", str(source), "-o", str(tmp_path / "a.csv"), "--model", tiny_st_model)
    assert first.exit_code == 0, first.output
    assert "training them now" in first.output
    cached = list((isolated_cache / "corpus-audit" / "axes").glob("*.npz"))
    assert len(cached) == 1
    second = run("score", str(source), "-o", str(tmp_path / "b.csv"), "--model", tiny_st_model)
    assert second.exit_code == 0 and "training them now" not in second.output
    assert pd.read_csv(tmp_path / "a.csv").equals(pd.read_csv(tmp_path / "b.csv"))
    # the default recipe carries the stigma head: its column is scored, a probability
    stigma = pd.read_csv(tmp_path / "a.csv")["stigma"]
    assert stigma.notna().all() and ((stigma >= 0) & (stigma <= 1)).all()


def test_unknown_model_and_device_are_clear_errors(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("They are kind.\n")
    result = run("score", str(source), "-o", str(tmp_path / "o.csv"), "--model", str(tmp_path / "no-such-model"))
    assert result.exit_code == 1 and "model folder not found" in result.output
    result = run("score", str(source), "-o", str(tmp_path / "o.csv"), "--model", "use", "--device", "cuda")
    assert result.exit_code == 1 and ("CPU only" in result.output or "no CUDA device" in result.output)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_records_with_disagreeing_fields_are_all_written(tmp_path, tiny_st_model, tiny_axes, suffix):
    # Uncleaned JSON Lines: a field that is a number, a string, a list or an object depending on the record,
    # an empty object, a 70-bit integer, and \ud800 escapes in a value and in a field name.
    lines = ['{"text": "They are kind.", "n": 1, "meta": {"a": 1}, "big": 1180591620717411303424}',
             '{"text": "They are cruel.", "n": "two", "meta": [1, 2], "empty": {}}',
             '{"text": "They are smart.", "n": 3.5, "meta": "x\\ud800", "\\udce9": "odd name"}']
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / f"out{suffix}"
    result = run("score", str(source), "-o", str(out), "--model", tiny_st_model, "--axes", tiny_axes)
    assert result.exit_code == 0, result.output
    frame = pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out, dtype=str, keep_default_na=False)
    assert frame["text"].tolist() == ["They are kind.", "They are cruel.", "They are smart."]
    assert frame["n"].tolist() == ["1", "two", "3.5"]
    assert frame["meta"].tolist() == ['{"a": 1}', "[1, 2]", "x\ufffd"]
    assert frame["big"].tolist()[0] == "1180591620717411303424" and "\ufffd" in frame.columns
    assert np.isfinite(frame[["warmth", "competence"]].astype(float).to_numpy()).all()


@pytest.mark.parametrize("how", ["default", "--model"])
def test_spanish_train_score_and_audit_use_the_spanish_default_or_the_given_model(tmp_path, tiny_st_model, how,
                                                                                  monkeypatch):
    """``--lang es`` without ``--model`` loads the Spanish default model (here swapped for the tiny model), and any
    sentence-transformers model works through ``--model``; the axes are trained on the Spanish templates."""
    from pathlib import Path

    from corpus_audit.embed import NAMED_MODELS, NamedModel
    from corpus_audit.embed.sbert import SentenceTransformerEmbedder
    from corpus_audit.languages import LANGUAGES

    default = LANGUAGES["es"].default_model
    monkeypatch.setitem(NAMED_MODELS, default, NamedModel(lambda device, batch_size, *_: SentenceTransformerEmbedder(
        "tiny-default-es", path=tiny_st_model, device=device, batch_size=batch_size), NAMED_MODELS[default].package))
    model = ["--model", tiny_st_model] if how == "--model" else []
    expected_id = f"sentence-transformers:{tiny_st_model if model else 'tiny-default-es'}@"
    axes_path = tmp_path / "es.npz"
    result = run("axes", "train", "--lang", "es", "--recipe", "reference", "-o", str(axes_path), *model)
    assert result.exit_code == 0, result.output
    meta = SCMAxes.load(axes_path).metadata_
    assert meta["lang"] == "es" and meta["embedder_id"].startswith(expected_id) and meta["forms_sha256"]

    source = tmp_path / "in.txt"
    source.write_text("Son amables.\nSon crueles.\n", encoding="utf-8")
    result = run("score", str(source), "-o", str(tmp_path / "out.csv"), "--lang", "es", "--axes", str(axes_path),
                 *model)
    assert result.exit_code == 0, result.output
    assert len(pd.read_csv(tmp_path / "out.csv")) == 2
    if model:
        return  # the audit's --model path is the English tests'; here the default choice is the point

    corpus = Path(__file__).parents[1] / "data" / "corpus_codiesp_sample_es.jsonl.gz"
    outdir = tmp_path / "audit"
    result = run("audit", str(corpus), "--lang", "es", "-o", str(outdir), "--axes", str(axes_path), "--workers", "1")
    assert result.exit_code == 0, result.output
    summary = json.loads((outdir / "summary.json").read_text(encoding="utf-8"))
    assert summary["score"]["model_id"].startswith(expected_id)
    assert summary["analysis"]["n_sentences"] > 0
