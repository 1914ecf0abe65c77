"""``corpus-audit link``: a real audit (tiny embedding model on the Reddit sample) beside a probe (anchor BERT),
with and without the instrument's direct dimension scores, one and two audits, and the errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats
from test_aq27 import probe_args, trimmed

from corpus_audit.audit.folder import AuditFolder
from corpus_audit.cli import main
from corpus_audit.probe.folder import ProbeFolder
from corpus_audit.stigma.aq27 import DIMENSIONS

SAMPLE = Path(__file__).parents[1] / "data" / "corpus_reddit_sample_en.jsonl.gz"
ILLNESSES = ("depression", "anxiety", "PTSD", "ADHD", "bipolar affective disorder", "schizophrenia", "cold", "flu",
             "asthma", "diabetes", "migraines", "arthritis")


@pytest.fixture(scope="module")
def audit_dir(tiny_st_model, tiny_axes, tmp_path_factory) -> Path:
    outdir = tmp_path_factory.mktemp("audit") / "reddit"
    result = CliRunner().invoke(main, ["audit", str(SAMPLE), "--lang", "en", "-o", str(outdir), "--model",
                                       tiny_st_model, "--axes", tiny_axes, "--workers", "1", "--no-progress"])
    assert result.exit_code == 0, result.output
    return outdir


@pytest.fixture(scope="module")
def audit_with_dimensions(audit_dir, tmp_path_factory) -> Path:
    """The same audit with the judgement gate's categories and direct dimension scores (dim_<dimension> columns) a
    newer audit writes: every third sentence a judgement."""
    outdir = tmp_path_factory.mktemp("audit-dims") / "reddit-dims"
    shutil.copytree(audit_dir, outdir)
    sentences = pd.read_parquet(outdir / "sentences.parquet")
    rng = np.random.default_rng(0)
    for dimension in DIMENSIONS:
        sentences[f"dim_{dimension.lower()}"] = rng.uniform(0, 1, len(sentences)) + \
            0.3 * (sentences["illness_type"] == "mental")
    sentences["category"] = np.where(np.arange(len(sentences)) % 3 == 0, "judgement", "self_disclosure")
    sentences.to_parquet(outdir / "sentences.parquet", index=False)
    return outdir


@pytest.fixture(scope="module")
def probe_dir(anchor_models, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("link-probe")
    questionnaire = trimmed(root / "q", noun_phrases=("Mary", "someone"), illnesses=ILLNESSES)
    result = CliRunner().invoke(main, probe_args(anchor_models["bert"], root / "out", questionnaire))
    assert result.exit_code == 0, result.output
    return root / "out"


@pytest.fixture()
def probe_copy(probe_dir, tmp_path) -> Path:
    shutil.copytree(probe_dir, tmp_path / "probe")
    return tmp_path / "probe"


def run_link(*folders, extra=()):
    return CliRunner().invoke(main, ["link", *map(str, folders), "--n-boot", "200", "--permutations", "999", *extra])


def test_link_puts_the_corpus_beside_the_model(audit_dir, probe_copy):
    result = run_link(audit_dir, probe_copy)
    assert result.exit_code == 0, result.output
    assert "reddit: across 9 dimensions, the corpus's mental - physical gaps (BIAS map)" in result.output
    folder = ProbeFolder(probe_copy)
    link = json.loads(folder.link.read_text(encoding="utf-8"))
    dimensions = pd.read_csv(folder.link_dimensions)
    aq27 = AuditFolder(audit_dir).read_aq27().set_index("dimension")
    expected = (aq27["share_mental"] - aq27["share_physical"]).reindex(dimensions["dimension"]).to_numpy()
    assert np.allclose(dimensions["corpus_difference"], expected)
    assert dimensions["corpus_dim_difference"].isna().all()  # this audit has no direct dimension scores
    model = folder.read_dimensions().set_index("dimension")["mean_difference"]
    assert np.allclose(dimensions["model_difference"], model.reindex(dimensions["dimension"]))
    first = link["correlations"][0]
    assert first["rho"] == pytest.approx(stats.spearmanr(dimensions["corpus_difference"],
                                                         dimensions["model_difference"]).statistic)
    # per illness: the corpus's sentence count is the number of sentences naming it
    illnesses = pd.read_csv(folder.link_illnesses).set_index("illness")
    sentences = pd.read_parquet(audit_dir / "sentences.parquet")
    counts = sentences["illnesses"].explode().value_counts()
    for illness in ILLNESSES:
        assert illnesses.loc[illness, "corpus_sentences"] == counts.get(illness, 0)
    depression = sentences[sentences["illnesses"].map(lambda v: "depression" in list(v))]
    assert illnesses.loc["depression", "corpus_warmth"] == pytest.approx(depression["warmth"].mean())
    frequency = next(c for c in link["correlations"] if c["measure"].startswith("sentences mentioning"))
    assert frequency["n"] == len(ILLNESSES)
    # partial Spearman: the inverse of the rank correlation matrix of corpus, model and the two covariates
    assert frequency["covariates"] == ["pieces of the illness's name", "the model's neutral likelihood of it"]
    ranks = illnesses[["corpus_sentences", "model_score", "n_pieces", "mean_baseline"]].rank().to_numpy()
    precision = np.linalg.inv(np.corrcoef(ranks, rowvar=False))
    assert frequency["rho"] == pytest.approx(-precision[0, 1] / np.sqrt(precision[0, 0] * precision[1, 1]))
    assert frequency["tests"] == len(link["correlations"]) and frequency["confidence"] == pytest.approx(
        1 - 0.05 / len(link["correlations"]))
    # the anchor BERT learnt nothing: no link may be claimed
    assert link["conclusion"]["evidence_of_link"] is False
    assert not any(c["evidence"] for c in link["correlations"])
    assert "reddit in short: none of" in result.output
    report = folder.report.read_text(encoding="utf-8")
    assert "How far the corpus explains the model" in report and "rank-correlate" in report
    assert folder.figure("link", "png").stat().st_size > 1000


def _model_follows_warmth(audit_dir: Path, probe: Path, sign: int) -> pd.Series:
    """Replace the probe's per-illness table by a model whose stigma score is ``sign`` times the corpus's mean
    warmth of each illness the corpus names (16 in the sample; the probe scored 6 of them), with pieces and
    neutral likelihoods drawn at random (the covariates the link takes out)."""
    from corpus_audit.corpus.matcher import default_lexicon_path, load_lexicon

    sentences = pd.read_parquet(audit_dir / "sentences.parquet")
    warmth = sentences.assign(illness=sentences["illnesses"].map(list)).explode("illness").dropna(
        subset=["illness"]).groupby("illness")["warmth"].mean()
    types = {entry.illness: entry.type for entry in load_lexicon(default_lexicon_path("en"))}
    rng = np.random.default_rng(0)
    pd.DataFrame({"illness": warmth.index, "illness_type": warmth.index.map(types),
                  "mean_score": sign * warmth.to_numpy(), "n_pieces": rng.integers(1, 5, len(warmth)),
                  "mean_baseline": rng.normal(-8, 2, len(warmth))}).to_csv(ProbeFolder(probe).illnesses, index=False)
    return warmth


@pytest.mark.parametrize("sign", [-1, 1])
def test_a_colder_corpus_and_a_higher_stigma_score_is_a_link(audit_dir, probe_copy, sign):
    """The AQ-27 score rises with stigma and a colder corpus is the stigmatising one, so a negative warmth
    correlation is the link expected, and a positive one runs against it (the verdict once counted only positive
    correlations, and so called the expected link "the opposite direction")."""
    assert len(_model_follows_warmth(audit_dir, probe_copy, sign)) >= 15  # enough for a strong link to show
    result = run_link(audit_dir, probe_copy)
    assert result.exit_code == 0, result.output
    link = json.loads(ProbeFolder(probe_copy).link.read_text(encoding="utf-8"))
    record = next(c for c in link["correlations"] if c["measure"].startswith("mean warmth"))
    assert record["expected_direction"] == -1 and record["evidence"] and np.sign(record["rho"]) == sign
    assert record["holds"] is (sign == -1)
    assert next(c for c in link["correlations"] if c["measure"].startswith("BIAS-map"))["expected_direction"] == 1
    assert next(c for c in link["correlations"] if c["measure"].startswith("sentences"))["expected_direction"] is None
    warmth_line = next(line for line in link["verdict"] if "the warmth of the corpus's sentences" in line)
    if sign == -1:
        assert link["conclusion"]["evidence_of_link"] is True
        assert "in the expected direction (the lower the one, the higher the other)" in warmth_line
        assert "the corpus explains the model through the warmth of the corpus's sentences" in result.output
    else:
        assert "a link opposite to the expected direction" in warmth_line
        assert link["conclusion"]["evidence_of_link"] is any(c["holds"] for c in link["correlations"])
        assert not any(c["holds"] for c in link["correlations"] if c["measure"].startswith("mean warmth"))
    assert ">link holds<" in ProbeFolder(probe_copy).report.read_text(encoding="utf-8")


def test_direct_dimension_scores_are_used_when_present(audit_with_dimensions, probe_copy):
    result = run_link(audit_with_dimensions, probe_copy)
    assert result.exit_code == 0, result.output
    folder = ProbeFolder(probe_copy)
    dimensions = pd.read_csv(folder.link_dimensions).set_index("dimension")
    sentences = pd.read_parquet(audit_with_dimensions / "sentences.parquet")
    sentences = sentences[sentences["category"] == "judgement"]  # the audit reads the dimensions over judgements
    mental = sentences["illness_type"].isin(["mental", "both"])
    physical = sentences["illness_type"].isin(["physical", "both"])
    expected = sentences.loc[mental, "dim_fear"].mean() - sentences.loc[physical, "dim_fear"].mean()
    assert dimensions.loc["Fear", "corpus_dim_difference"] == pytest.approx(expected)
    measures = [c["measure"] for c in json.loads(folder.link.read_text(encoding="utf-8"))["correlations"]]
    assert "direct dimension score difference (mental - physical) vs model score difference" in measures
    assert "mean Fear score vs model's Fear lean" in measures
    illnesses = pd.read_csv(folder.link_illnesses).set_index("illness")
    model = folder.read_illnesses().set_index("illness")
    assert illnesses.loc["asthma", "model_lean_fear"] == pytest.approx(model.loc["asthma", "mean_fear"]
                                                                       - model.loc["asthma", "mean_score"])


def test_several_audits_are_linked_side_by_side(audit_dir, audit_with_dimensions, probe_copy):
    result = run_link(audit_dir, audit_with_dimensions, probe_copy, extra=("--labels", "before,after"))
    assert result.exit_code == 0, result.output
    link = json.loads(ProbeFolder(probe_copy).link.read_text(encoding="utf-8"))
    assert [audit["label"] for audit in link["audits"]] == ["before", "after"]
    assert pd.read_csv(ProbeFolder(probe_copy).link_dimensions)["audit"].value_counts().to_dict() == \
        {"before": 9, "after": 9}
    assert any(line.startswith("after: ") for line in link["verdict"])


def test_a_new_probe_result_removes_the_stale_link(audit_dir, probe_copy, anchor_models):
    assert run_link(audit_dir, probe_copy).exit_code == 0
    questionnaire = json.loads((probe_copy / "summary.json").read_text())["options"]["questionnaire"]
    same = CliRunner().invoke(main, probe_args(anchor_models["bert"], probe_copy, questionnaire))
    assert same.exit_code == 0 and "report: up to date, skipped" in same.stderr  # the link's report section stays
    assert "How far the corpus explains" in ProbeFolder(probe_copy).report.read_text(encoding="utf-8")
    result = CliRunner().invoke(main, probe_args(anchor_models["bert"], probe_copy, questionnaire, "--seed", "1"))
    assert result.exit_code == 0
    assert "removed the link to audits" in result.stderr
    assert not ProbeFolder(probe_copy).link.exists()
    assert "How far the corpus explains" not in ProbeFolder(probe_copy).report.read_text(encoding="utf-8")


@pytest.mark.parametrize("case, message", [
    ("probe is an audit", "summary.json: lacks probe, model_id, lang"),
    ("audit is a probe", "not the summary of a finished audit"),
    ("one folder", "give at least one audit folder and then the probe folder"),
    ("labels", "1 label(s) for 2 audit(s)"),
])
def test_wrong_folders_fail_clearly(audit_dir, probe_dir, case, message):
    folders, extra = {"probe is an audit": ((audit_dir, audit_dir), ()),
                      "audit is a probe": ((probe_dir, probe_dir), ()),
                      "one folder": ((probe_dir,), ()),
                      "labels": ((audit_dir, audit_dir, probe_dir), ("--labels", "x"))}[case]
    result = run_link(*folders, extra=extra)
    assert result.exit_code != 0 and message in result.output
    assert "Traceback" not in result.output
