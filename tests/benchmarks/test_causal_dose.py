"""The dose-response bench in miniature (benchmarks/causal_dose.py; docs/validation.md): a small slice of the demo
Reddit corpus, doses 0 and 100 % of the target-illness mentions, one tiny model per dose trained for a few hundred
steps, then the product's audit, AQ-27 probe, link and compare on them. Checks the plumbing (manifest, safetensors
models, every product output, results, figures, resume) and that the audit sees a 100 % dose. A model trained for
a few hundred steps has not learnt it (it stays near a unigram model; docs/validation.md measures this on the full
bench), so the model side is checked for its plumbing only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import causal_dose

CORPUS = ROOT / "demo" / "reddit_sample_en.jsonl.gz"
# A smaller probe: one noun phrase and 8 mental + 6 physical illnesses (the bench's own data file otherwise).
PROBE_ILLNESSES = ["anxiety", "ADHD", "social anxiety", "bipolar affective disorder", "depression", "PTSD",
                   "schizophrenia", "psychosis", "asthma", "diabetes", "flu", "cold", "migraines", "hypertension"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("causal_dose")
    templates = json.loads(causal_dose.DEFAULT_TEMPLATES.read_text())
    templates.update(probe_noun_phrases=["someone"], probe_illnesses=PROBE_ILLNESSES)
    (folder / "templates.json").write_text(json.dumps(templates))
    args = ["run", "-o", str(folder / "out"), "--figures", str(folder / "figures"), "--corpus", str(CORPUS),
            "--templates", str(folder / "templates.json"), "--limit-docs", "150", "--doses", "0,100", "--seeds", "0",
            "--steps", "200", "--vocab-size", "800", "--hidden", "64", "--layers", "2", "--heads", "2",
            "--batch", "16", "--seq-len", "32", "--lr", "0.003", "--checkpoint-every", "100", "--null-models", "0",
            "--permutations", "199", "--n-boot", "200", "--audit-backend", "torch"]
    causal_dose.main(args)
    return folder, {"args": args, "results": json.loads((folder / "out" / "results.json").read_text())}


@pytest.mark.slow
def test_manifest_records_what_was_injected(bench):
    folder, _ = bench
    manifest = json.loads((folder / "out" / "manifest.json").read_text())
    templates = json.loads((folder / "templates.json").read_text())
    assert manifest["doses"]["dose_0"]["rewritten"] == 0
    full = manifest["doses"]["dose_100"]
    assert full["rewritten"] == manifest["eligible_sentences"] > 10
    rows = [json.loads(line) for line in (folder / "out" / full["injections"]).read_text().splitlines()]
    assert len(rows) == full["rewritten"]
    assert {row["illness"] for row in rows} <= set(templates["target_illnesses"])
    assert {row["dimension"] for row in rows} == set(templates["target_dimensions"])
    assert len({row["text"] for row in rows}) == len(rows)  # varied surface forms, not one sentence repeated
    corpus = causal_dose.read_jsonl_gz(folder / "out" / full["corpus"])
    texts = " ".join(doc["text"] for doc in corpus)
    assert all(row["text"] in texts for row in rows)
    assert len(corpus) == manifest["documents"] == len(causal_dose.read_jsonl_gz(folder / "out" / "corpora" /
                                                                                "dose_0" / "corpus.jsonl.gz"))


@pytest.mark.slow
def test_models_are_safetensors_and_every_product_output_exists(bench):
    folder, _ = bench
    out = folder / "out"
    for name in ("dose_0_seed0", "dose_100_seed0"):
        assert (out / "models" / name / "model.safetensors").exists()
        assert not (out / "models" / name / "pytorch_model.bin").exists()
        assert not (out / "models" / name / "checkpoint").exists()
        assert (out / "probes" / name / "link.json").exists()
    assert (out / "audits" / "dose_100" / "documents.parquet").exists()
    assert (out / "compare" / "seed0" / "compare.json").exists()
    assert sorted(p.name for p in (folder / "figures").glob("*.png")) == [
        "causal_dose_corpus.png", "causal_dose_link.png", "causal_dose_model.png"]


@pytest.mark.slow
def test_the_audit_sees_a_full_dose_and_the_model_side_is_measured(bench):
    folder, data = bench
    corpus = {row["dose_percent"]: row for row in data["results"]["corpus"]}
    assert corpus[100]["target_flagged_share"] > corpus[0]["target_flagged_share"] + 0.2
    assert corpus[100]["fisher_p_vs_lowest"] < 0.01
    assert corpus[100]["control_flagged"] == corpus[0]["control_flagged"]  # control sentences untouched
    assert corpus[100]["injected_found"] > 0.8 * corpus[100]["rewritten"]
    assert corpus[100]["top_k_precision"] > 0.5  # changed documents rank first
    templates = json.loads((folder / "templates.json").read_text())
    for model in data["results"]["models"]:
        leans = {row["illness"]: row for row in model["illness_leans"]}
        mental = PROBE_ILLNESSES[:8]
        assert sorted(leans) == sorted(mental)
        assert all(leans[name]["target"] == (name in templates["target_illnesses"]) for name in mental)
        assert all(abs(row["lean_target_dims"]) < 5 for row in leans.values())
        assert isinstance(model["link_evidence"], bool)
    assert [row["dose_percent"] for row in data["results"]["curve"]] == [0, 100]
    assert set(data["results"]["compare"]) == {"seed0"}


@pytest.mark.slow
def test_a_rerun_resumes_without_training_again(bench):
    folder, data = bench
    log = folder / "out" / "models" / "dose_100_seed0" / "train_log.json"
    before = log.stat().st_mtime_ns
    causal_dose.main(data["args"])
    assert log.stat().st_mtime_ns == before
