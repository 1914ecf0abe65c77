"""A user's stigma score (scm/refit.py, `corpus-audit axes refit`): the recipe read back from the axes, the reviewed
sentences joined to the labelled data with their weight, the paired AUC difference against scikit-learn, and the
command end to end on the real Label Studio export of the mixed demo's 100 reviewed sentences, over a small slice
of the labelled data: new axes that differ only in their stigma head, that `score --axes` uses, and nothing of the
package changed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.metrics import roc_auc_score

from corpus_audit.common.errors import UserError
from corpus_audit.common.resources import SHIPPED_AXES_DIR
from corpus_audit.scm.axes import SCMAxes
from corpus_audit.scm.recipes import get_recipe
from corpus_audit.scm.refit import DEFAULT_WEIGHT, REFIT_KEY, joined, paired_auc_difference, recipe_of
from corpus_audit.scm.stigma import load_stigma_data

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = SHIPPED_AXES_DIR / "en-default-minilm.npz"
LABELLED = ROOT / "templates" / "en" / "stigma_labelled.csv"
REVIEWED = ROOT / "tests" / "data" / "label_studio" / "mixed_demo" / "export.json"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_recipe_is_read_back_from_the_axes():
    recipe = recipe_of(SCMAxes.load(SHIPPED))
    shipped = get_recipe("default")
    assert recipe.stigma_settings("en") == shipped.stigma_settings("en") and recipe.judgement
    assert (recipe.name, recipe.head, recipe.C) == (shipped.name, shipped.head, shipped.C)


def test_reviewed_sentences_join_the_labelled_data_weight_times(tmp_path):
    table = pd.read_csv(LABELLED, dtype=str, keep_default_na=False).head(30)
    path = tmp_path / "labelled.csv"
    table.to_csv(path, index=False)
    labelled = load_stigma_data("en", path)
    reviewed = labelled.subset(np.arange(5))
    data = joined(labelled, reviewed, np.array([1, 3]), 3)
    assert len(data) == 30 + 6 and data.texts[30:] == [reviewed.texts[1]] * 3 + [reviewed.texts[3]] * 3
    assert data.stigmatising[30:].tolist() == [reviewed.stigmatising[1]] * 3 + [reviewed.stigmatising[3]] * 3
    assert len(data.mention_forms) == len(data.doc_id) == len(data.category) == 36


def test_the_paired_auc_difference_is_scikit_learns():
    rng = np.random.default_rng(1)
    truth = rng.random(80) < 0.4
    new, old = truth + rng.normal(0, 0.6, 80), truth + rng.normal(0, 1.2, 80)
    groups = np.repeat(np.arange(40), 2)
    value, low, high = paired_auc_difference(truth, new, old, groups, n_boot=500)
    assert value == pytest.approx(roc_auc_score(truth, new) - roc_auc_score(truth, old))
    assert low < value < high


def test_axes_without_a_stigma_head_cannot_be_refitted():
    axes = SCMAxes.load(SHIPPED)
    axes.judgement_.pop("stigma")
    axes.judgement_.pop("stigma_text", None)
    with pytest.raises(UserError, match="no stigma head"):
        recipe_of(axes)


@pytest.mark.slow
def test_refit_end_to_end_writes_new_axes_and_changes_nothing_of_the_package(tmp_path):
    from corpus_audit.cli import main

    # a slice of the labelled data (every split, both classes) keeps the test short; the command's default is all
    table = pd.read_csv(LABELLED, dtype=str, keep_default_na=False)
    slice_ = pd.concat([group.head(60) for _, group in table.groupby(["split", "stigmatising"])])
    labelled = tmp_path / "labelled.csv"
    slice_.to_csv(labelled, index=False)
    before = {path: sha256(path) for path in (SHIPPED, LABELLED)}
    output, report = tmp_path / "my-axes.npz", tmp_path / "refit.json"
    result = CliRunner().invoke(main, ["axes", "refit", str(REVIEWED), "-o", str(output), "--labelled",
                                       str(labelled), "--folds", "3", "--json", str(report)])
    assert result.exit_code == 0, result.output
    assert "100 reviewed sentence(s) from 1 file(s) (54 stigmatising)" in result.output
    assert "on your reviewed sentences, held out (3-fold cross-validation" in result.output
    assert {path: sha256(path) for path in (SHIPPED, LABELLED)} == before  # nothing of the package changed
    new, shipped = SCMAxes.load(output), SCMAxes.load(SHIPPED)
    measured = json.loads(report.read_text())
    assert new.metadata_[REFIT_KEY] == measured and measured["n_reviewed"] == 100 and measured["weight"] == 5
    # the cascade's triage is calibrated again against the refitted score, on the labelled dev sentences
    from corpus_audit.score.cascade import TriageCalibration

    triage = TriageCalibration.of(new)
    assert triage is not None and triage.to_dict() == measured["triage"]
    assert measured["triage"]["measured"]["dev"]["recall_of_full_path"] >= 0.99
    cv = measured["cross_validation"]
    assert cv["folds"] == 3 and cv["n"] == 100 and 0 <= cv["refitted"]["auc"] <= 1
    assert cv["auc_difference"]["value"] == pytest.approx(cv["refitted"]["auc"] - cv["original"]["auc"])
    # the stigma head is new; the projection, the gate (where the shipped axes have one of their own, not read
    # from the stigma head) and the dimension heads are the shipped ones
    assert not np.allclose(new.stigma_head.arrays["logistic__weights"], shipped.stigma_head.arrays["logistic__weights"])
    assert new.gate_reads_stigma == shipped.gate_reads_stigma and set(new.judgement_) == set(shipped.judgement_)
    for part in {"gate", "dimensions"} & set(shipped.judgement_):
        for name, value in shipped.judgement_[part].arrays.items():
            assert np.array_equal(new.judgement_[part].arrays[name], value)
    for name, value in shipped.projection_.items():
        assert np.array_equal(new.projection_[name], value)
    # score --axes uses it: the same columns, a different stigma score
    sentences = tmp_path / "s.txt"
    sentences.write_text("Those retards should be kept away from our kids.\nI was diagnosed with asthma.\n")
    scored = {}
    for name, axes in (("new", output), ("shipped", SHIPPED)):
        out = tmp_path / f"{name}.csv"
        ran = CliRunner().invoke(main, ["score", str(sentences), "--lang", "en", "--axes", str(axes), "-o", str(out)])
        assert ran.exit_code == 0, ran.output
        scored[name] = pd.read_csv(out)
    assert np.allclose(scored["new"]["warmth"], scored["shipped"]["warmth"])
    assert not np.allclose(scored["new"]["stigma"], scored["shipped"]["stigma"])
    refused = CliRunner().invoke(main, ["axes", "refit", str(REVIEWED), "-o", str(SHIPPED_AXES_DIR / "x.npz")])
    assert refused.exit_code != 0 and "not into the package" in refused.output
    over = CliRunner().invoke(main, ["axes", "refit", str(REVIEWED), "--axes", str(output), "-o", str(output)])
    assert over.exit_code != 0 and "not over the axes it starts from" in over.output


def test_the_commands_default_weight_is_the_modules():
    from corpus_audit.cli import main

    option = next(param for param in main.commands["axes"].commands["refit"].params if param.name == "weight")
    assert option.default == DEFAULT_WEIGHT


def test_the_report_says_the_stigma_score_was_refitted_and_how_it_did():
    from corpus_audit.audit.report import _stigma_refit

    difference = {"value": 0.031, "low": 0.004, "high": 0.06}
    refit = {"base_axes": "en-default-minilm.npz", "n_labelled": 7332, "n_reviewed": 100, "weight": 5,
             "reviewed": [{"file": "export.json", "sha256": "x"}],
             "cross_validation": {"n": 100, "folds": 5, "n_documents": 97, "n_stigmatising": 54,
                                  "refitted": {"auc": 0.91}, "original": {"auc": 0.88}, "auc_difference": difference},
             "labelled_heldout": {"refitted": {"auc": 0.915, "n": 394}, "original": {"auc": 0.916, "n": 394}}}
    html = _stigma_refit(refit)
    assert "was refitted" in html and "export.json" in html and "counting 5 times" in html
    assert "+0.031 (+0.004 to +0.060)" in html and "0.910; 0.880" in html and "394 held-out" in html
