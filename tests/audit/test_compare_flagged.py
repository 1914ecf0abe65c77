"""compare_audits / export_flagged and their CLI commands, on synthetic audit folders (no model needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

from corpus_audit import cli
from corpus_audit.audit.analysis import bias_map_scores
from corpus_audit.audit.compare import ModelMismatchError, compare_audits, format_comparison
from corpus_audit.audit.flagged import export_flagged, flagged_sentences
from corpus_audit.audit.folder import AuditOutputError
from corpus_audit.stigma.bias_map import UnknownDimensionError
from corpus_audit.stigma.quadrants import QUADRANTS, quadrant_of
from corpus_audit.stigma.stats import compare_groups, two_sample_2d

MODEL = "sentence-transformers:test-model@0"


def make_audit(outdir: Path, seed: int, shift: float = 0.0, model_id: str = MODEL) -> pd.DataFrame:
    """Write sentences.parquet, aq27.csv and summary.json as a finished audit would; return the sentences."""
    rng = np.random.default_rng(seed)
    types = np.array(["mental"] * 50 + ["physical"] * 40 + ["both"] * 10)
    warmth = np.clip(rng.normal(shift, 0.5, types.size), -1, 1)
    competence = np.clip(rng.normal(-shift, 0.5, types.size), -1, 1)
    warmth[-1] = np.nan  # one unscored sentence: never compared, never flagged
    illnesses = {"mental": ["depression"], "physical": ["asthma"], "both": ["depression", "asthma"]}
    frame = pd.DataFrame({
        "doc_id": [f"doc-{i // 3}" for i in range(types.size)],
        "sentence_index": np.arange(types.size) % 3,
        "sentence": [f"sentence {i} of audit {seed}" for i in range(types.size)],
        "terms": [list(illnesses[t]) for t in types],
        "illnesses": [list(illnesses[t]) for t in types],
        "illness_type": types,
        "warmth": warmth.astype("float32"),
        "competence": competence.astype("float32"),
    })
    frame["quadrant"] = quadrant_of(frame["warmth"].to_numpy(), frame["competence"].to_numpy())
    outdir.mkdir(parents=True)
    frame.to_parquet(outdir / "sentences.parquet", index=False)
    bias_map_scores(frame, seed=seed).to_csv(outdir / "aq27.csv", index=False)
    summary = {"score": {"model_id": model_id}, "options": {"seed": seed, "axes_path": None}}
    (outdir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return frame


@pytest.fixture
def audits(tmp_path: Path) -> tuple[Path, Path, pd.DataFrame, pd.DataFrame]:
    frame_a = make_audit(tmp_path / "a", seed=1)
    frame_b = make_audit(tmp_path / "b", seed=2, shift=0.3)
    return tmp_path / "a", tmp_path / "b", frame_a, frame_b


def _group(frame: pd.DataFrame, group: str) -> pd.DataFrame:
    scored = frame.dropna(subset=["warmth", "competence"])
    return scored[scored["illness_type"].isin([group, "both"])]


def test_compare_matches_direct_analysis_calls(audits) -> None:
    dir_a, dir_b, frame_a, frame_b = audits
    result = compare_audits(dir_a, dir_b, labels=("before", "after"), seed=3)
    json.dumps(result, allow_nan=False)
    for group in ("mental", "physical"):
        part_a, part_b = _group(frame_a, group), _group(frame_b, group)
        section = result["by_type"][group]
        assert (section["n_a"], section["n_b"]) == (len(part_a), len(part_b))
        for score in ("warmth", "competence"):
            expected = compare_groups(part_b[score], part_a[score], seed=3)  # every difference is B - A
            assert section[score]["mean_difference"] == pytest.approx(part_b[score].mean() - part_a[score].mean())
            assert section[score]["mean_difference_ci"] == pytest.approx(list(expected.mean_difference_ci))
            assert section[score]["mann_whitney_p"] == pytest.approx(
                stats.mannwhitneyu(part_a[score], part_b[score]).pvalue)
            assert section[score]["ks_p"] == pytest.approx(stats.ks_2samp(part_a[score], part_b[score]).pvalue)
        joint = two_sample_2d(part_b[["warmth", "competence"]].to_numpy(float),
                              part_a[["warmth", "competence"]].to_numpy(float), seed=3)
        assert section["joint"]["statistic"] == pytest.approx(joint.statistic)
        assert section["joint"]["p_value"] == pytest.approx(joint.p_value)
        for row in section["quadrants"]:
            share_a = (part_a["quadrant"] == row["quadrant"]).mean()
            share_b = (part_b["quadrant"] == row["quadrant"]).mean()
            assert (row["share_a"], row["share_b"]) == pytest.approx((share_a, share_b))
            assert row["change"] == pytest.approx(share_b - share_a)
    assert [row["quadrant"] for row in result["by_type"]["mental"]["quadrants"]] == list(QUADRANTS)
    # Pity = warm-incompetent; gap = mental share - physical share, change = gap B - gap A.
    pity = next(row for row in result["aq27"] if row["dimension"] == "Pity")
    gaps = [(_group(f, "mental")["quadrant"] == "warm-incompetent").mean()
            - (_group(f, "physical")["quadrant"] == "warm-incompetent").mean() for f in (frame_a, frame_b)]
    assert (pity["gap_a"], pity["gap_b"]) == pytest.approx(gaps)
    assert pity["gap_change"] == pytest.approx(gaps[1] - gaps[0])
    assert pity["gap_change_ci_low"] < pity["gap_change"] < pity["gap_change_ci_high"]
    warmth_gaps = [_group(f, "mental")["warmth"].mean() - _group(f, "physical")["warmth"].mean()
                   for f in (frame_a, frame_b)]
    all_warmth = next(row for row in result["gaps"] if (row["sentences"], row["score"]) == ("all sentences", "warmth"))
    assert all_warmth["gap_change"] == pytest.approx(warmth_gaps[1] - warmth_gaps[0], abs=1e-6)  # float32 scores
    assert len(result["aq27"]) == 9 and result["warnings"] == []
    text = format_comparison(result)
    assert "before" in text and "Pity" in text and "energy" in text


def test_different_models_are_refused_unless_allowed(tmp_path: Path) -> None:
    make_audit(tmp_path / "a", seed=1)
    make_audit(tmp_path / "b", seed=2, model_id="other-model")
    with pytest.raises(ModelMismatchError, match="other-model"):
        compare_audits(tmp_path / "a", tmp_path / "b")
    result = compare_audits(tmp_path / "a", tmp_path / "b", allow_different_models=True)
    assert any("different models" in warning for warning in result["warnings"])


def test_missing_file_names_the_path(audits) -> None:
    dir_a, dir_b, _, _ = audits
    (dir_b / "aq27.csv").unlink()
    with pytest.raises(AuditOutputError) as info:
        compare_audits(dir_a, dir_b)
    assert info.value.path == dir_b / "aq27.csv" and str(dir_b / "aq27.csv") in str(info.value)
    (dir_a / "sentences.parquet").unlink()
    with pytest.raises(AuditOutputError, match="sentences.parquet"):
        flagged_sentences(dir_a)


def test_flagged_selection_matches_hand_built_expectation(audits) -> None:
    dir_a, _, frame, _ = audits
    pity = flagged_sentences(dir_a, dimension="pity")
    expected = frame[(frame["warmth"] >= 0) & (frame["competence"] < 0)]
    assert pity["sentence"].tolist() == expected["sentence"].tolist()
    # Fear is any_or_high: the lenient region leaves competence free, so every cold sentence.
    fear = flagged_sentences(dir_a, dimension="Fear", illness_type="physical")
    expected = frame[(frame["warmth"] < 0) & frame["illness_type"].isin(["physical", "both"])]
    assert fear["sentence"].tolist() == expected["sentence"].tolist()
    both = flagged_sentences(dir_a, quadrant="cold-competent", dimension="Pity")
    assert both.empty
    assert len(flagged_sentences(dir_a)) == len(frame) - 1  # the unscored sentence is never flagged


def test_unknown_dimension_lists_valid_names(audits) -> None:
    with pytest.raises(UnknownDimensionError, match="Pity.*Segregation|Anger.*Pity"):
        flagged_sentences(audits[0], dimension="Shame")


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_export_round_trips(audits, tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"flagged{suffix}"
    flagged, documents = export_flagged(audits[0], target, quadrant="warm-competent", illness_type="mental")
    if suffix == ".csv":
        back = pd.read_csv(target)
        back["illnesses"] = back["illnesses"].str.split("; ")
    elif suffix == ".parquet":
        back = pd.read_parquet(target)
    else:
        back = pd.read_json(target, lines=True)
    assert back.columns.tolist() == flagged.columns.tolist()
    assert back["sentence"].tolist() == flagged["sentence"].tolist()
    assert back["doc_id"].tolist() == flagged["doc_id"].tolist()
    assert [list(names) for names in back["illnesses"]] == [list(names) for names in flagged["illnesses"]]
    np.testing.assert_allclose(back["warmth"], flagged["warmth"], rtol=1e-6)
    assert (back["quadrant"] == "warm-competent").all()
    assert documents["flagged"].sum() == len(flagged)
    assert documents.set_index("doc_id")["flagged"].to_dict() == flagged["doc_id"].value_counts().to_dict()


def test_export_rejects_unknown_format(audits, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\.xlsx"):
        export_flagged(audits[0], tmp_path / "flagged.xlsx")
    assert not (tmp_path / "flagged.xlsx").exists()


def test_cli_compare_and_export(audits, tmp_path: Path) -> None:
    dir_a, dir_b, _, _ = audits
    runner = CliRunner()
    out = tmp_path / "comparison.json"
    result = runner.invoke(cli.main, ["compare", str(dir_a), str(dir_b), "-o", str(out), "--labels", "raw", "clean"])
    assert result.exit_code == 0, result.output
    assert "raw" in result.output and json.loads(out.read_text())["labels"] == ["raw", "clean"]
    (dir_b / "summary.json").write_text(json.dumps({"score": {"model_id": "x"}, "options": {}}))
    result = runner.invoke(cli.main, ["compare", str(dir_a), str(dir_b)])
    assert result.exit_code == 1 and "different models" in result.output

    target = tmp_path / "pity.csv"
    result = runner.invoke(cli.main, ["export-flagged", str(dir_a), "--dimension", "Pity", "--type", "mental",
                                      "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert "flagged sentences in" in result.output and target.exists()
    result = runner.invoke(cli.main, ["export-flagged", str(dir_a), "--dimension", "Shame", "-o", str(target)])
    assert result.exit_code == 1 and "valid: Anger" in result.output
    result = runner.invoke(cli.main, ["export-flagged", str(dir_a), "--quadrant", "warm", "-o", str(target)])
    assert result.exit_code == 2


def test_export_flagged_reads_the_audits_own_bias_map(tmp_path):
    """An audit run with its own BIAS map (here Pity moved to cold and competent) is exported with that map, as its
    aq27.csv records it, not with the bundled one."""
    outdir = tmp_path / "audit"
    outdir.mkdir()
    warmth = np.array([0.5, 0.5, -0.5, -0.5])
    competence = np.array([0.5, -0.5, 0.5, -0.5])
    pd.DataFrame({"doc_id": list("abcd"), "sentence_index": 0, "sentence": list("wxyz"), "illnesses": [["flu"]] * 4,
                  "illness_type": "physical", "warmth": warmth, "competence": competence,
                  "quadrant": quadrant_of(warmth, competence)}).to_parquet(outdir / "sentences.parquet")
    pd.DataFrame({"dimension": ["Pity"], "warmth": ["low"], "competence": ["high"], "share_mental": [0.0],
                  "share_physical": [0.25]}).to_csv(outdir / "aq27.csv", index=False)
    assert flagged_sentences(outdir, dimension="pity")["doc_id"].tolist() == ["c"]
    with pytest.raises(UnknownDimensionError, match="valid: Pity$"):
        flagged_sentences(outdir, dimension="Fear")


def test_flagged_documents_rank_by_their_most_stigmatising_sentence():
    from corpus_audit.audit.flagged import documents_summary

    flagged = pd.DataFrame({"doc_id": ["many", "many", "many", "one", "none"], "stigma": [0.1, 0.2, 0.05, 0.9, np.nan]})
    summary = documents_summary(flagged)
    assert summary["doc_id"].tolist() == ["one", "many", "none"]
    assert summary["flagged"].tolist() == [1, 3, 1] and summary["stigma"].tolist()[:2] == [0.9, 0.2]
    # an audit scored before the stigma head: most flagged first, as before
    assert documents_summary(flagged.drop(columns="stigma"))["doc_id"].tolist() == ["many", "none", "one"]


def test_export_flagged_lists_judgements_with_their_category_unless_told(tmp_path):
    """The gate's neutral mentions (self-disclosure, clinical, ...) judge no one: not exported by default;
    --category chooses, 'all' keeps every one; the category is a column of the export."""
    frame = make_audit(tmp_path / "a", seed=1)
    categories = np.array(["judgement", "self_disclosure", "clinical", "question"])[np.arange(len(frame)) % 4]
    frame.assign(category=categories, judgement_strength=0.5).to_parquet(tmp_path / "a" / "sentences.parquet",
                                                                         index=False)
    scored = frame["quadrant"].notna().to_numpy()
    runner = CliRunner()
    target = tmp_path / "flagged.csv"
    result = runner.invoke(cli.main, ["export-flagged", str(tmp_path / "a"), "-o", str(target)])
    assert result.exit_code == 0, result.output
    exported = pd.read_csv(target)
    assert set(exported["category"]) == {"judgement"} and len(exported) == int((scored & (categories == "judgement")).sum())
    assert f"{len(exported)} flagged sentences (judgement) in" in result.output
    result = runner.invoke(cli.main, ["export-flagged", str(tmp_path / "a"), "--category", "clinical", "--category",
                                      "question", "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert set(pd.read_csv(target)["category"]) == {"clinical", "question"}
    result = runner.invoke(cli.main, ["export-flagged", str(tmp_path / "a"), "--category", "all", "-o", str(target)])
    assert len(pd.read_csv(target)) == int(scored.sum()) and "(every category)" in result.output
    result = runner.invoke(cli.main, ["export-flagged", str(tmp_path / "a"), "--category", "gossip", "-o",
                                      str(target)])
    assert result.exit_code == 2 and "'gossip' is not one of" in result.output
