"""The cross-lingual analysis (corpus_audit.audit.cross_lingual) and its script, on two small audit folders whose
relation is known."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from corpus_audit.audit import cross_lingual
from corpus_audit.audit.analysis import analyse
from corpus_audit.stigma.quadrants import quadrant_of

DIMENSIONS = ["anger", "help", "pity"]


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("cross_lingual")


def write_audit(folder: Path, sentences: pd.DataFrame, aq27: list[float], model: str = "toy:m@1") -> Path:
    folder.mkdir()
    n = len(sentences)
    sentences = sentences.assign(sentence_index=0, sentence=[f"s{i}" for i in range(n)], illnesses=[["x"]] * n,
                                 quadrant=quadrant_of(sentences["warmth"].to_numpy(), sentences["competence"].to_numpy()))
    sentences.to_parquet(folder / "sentences.parquet")
    analysis = analyse(sentences).to_dict()  # as an audit writes it, with set comparisons
    for score in ("warmth", "competence"):
        analysis["comparisons"][score].update(mean_difference=0.1, mean_difference_ci=[0.0, 0.2], rank_biserial=0.05,
                                              mann_whitney_p=0.3)
    summary = {"options": {}, "filter": {}, "score": {"model_id": model}, "analysis": analysis}
    (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    pd.DataFrame({"dimension": DIMENSIONS, "warmth": "low", "competence": "any", "share_mental": 0.5,
                  "share_physical": 0.5, "difference": aq27}).to_csv(folder / "aq27.csv", index=False)
    return folder


@pytest.fixture()
def audits(tmp_path):
    rng = np.random.default_rng(0)
    n = 40
    spanish = pd.DataFrame({
        "doc_id": [f"d{i // 2}" for i in range(n)],  # two sentences per document
        "illness_type": (["mental", "physical", "both", "physical"] * n)[:n],
        "warmth": rng.uniform(-1, 1, n),
        "competence": rng.uniform(-1, 1, n),
    })
    # The translation: warmth a linear function of the original, competence unrelated; one document
    # missing, and an unscored sentence that must not count.
    english = spanish.copy()
    english["warmth"] = 0.5 * spanish["warmth"] + 0.1
    english["competence"] = rng.uniform(-1, 1, n)
    unscored = pd.DataFrame({"doc_id": ["d1"], "illness_type": ["mental"], "warmth": [5.0], "competence": [np.nan]})
    english = pd.concat([english[english["doc_id"] != "d0"], unscored], ignore_index=True)
    return (write_audit(tmp_path / "es", spanish, [0.1, -0.2, 0.3]),
            write_audit(tmp_path / "en", english, [0.2, -0.4, 0.6], model="toy:other@2"), spanish)


def test_document_correlations_and_group_membership(audits):
    es, en, spanish = audits
    report = cross_lingual.compare(es, [en])
    entry = report["b"][0]
    overall = entry["correlations"]["all"]
    assert overall["documents"] == 19  # d0 is missing in the translation
    assert overall["warmth_pearson"] == pytest.approx(1.0)
    assert overall["warmth_spearman"] == pytest.approx(1.0)
    assert abs(overall["competence_pearson"]) < 0.6
    # "both" sentences count in the mental and in the physical group
    mental_docs = spanish.loc[spanish["illness_type"].isin(["mental", "both"]), "doc_id"].nunique() - 1
    assert entry["correlations"]["mental"]["documents"] == mental_docs
    assert entry["aq27_difference_pearson"] == pytest.approx(1.0)
    assert report["a"]["model_id"] == "toy:m@1" and entry["audit"]["model_id"] == "toy:other@2"


def test_spread_and_high_warmth_share(audits):
    es, _, spanish = audits
    spread = cross_lingual.compare(es, [es])["a"]["spread"]
    physical = spanish[spanish["illness_type"].isin(["physical", "both"])]
    assert spread["physical"]["n"] == len(physical)
    assert spread["physical"]["warmth_sd"] == pytest.approx(physical["warmth"].std())
    assert spread["physical"]["high_warmth_share"] == pytest.approx((physical["warmth"] > 0).mean())


def test_script_prints_and_writes_json(script, audits, tmp_path, monkeypatch, capsys):
    es, en, _ = audits
    out = tmp_path / "report.json"
    monkeypatch.setattr("sys.argv", ["cross_lingual.py", str(es), str(en), str(en), "--json", str(out)])
    script.main()
    printed = capsys.readouterr().out
    assert "B2 = " in printed and "warmth mental - physical" in printed
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert len(saved["b"]) == 2 and saved["b"][0]["correlations"]["all"]["documents"] == 19
