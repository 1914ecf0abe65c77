"""``probe gender``, ``probe social-distance`` and ``probe sentiment`` end to end on tiny models built here (the
anchor BERT as fill-mask model, a classification head on the same recipe), trimmed questionnaires, the numbers
recomputed independently from the model's own fills, and the link of each probe to an audit."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil

import numpy as np
import pandas as pd
import pytest
import tiny_mlm
from click.testing import CliRunner
from scipy import stats
from statsmodels.stats.multitest import multipletests
from test_link import audit_dir  # noqa: F401  (the audit fixture)

from corpus_audit.cli import main
from corpus_audit.probe.folder import FIGURE_FORMATS, ProbeFolder, ProbeOutputError
from corpus_audit.probe.models.masked import MaskedLM
from corpus_audit.probe.questionnaires.files import bundled_folder
from corpus_audit.probe.questionnaires.gender import GenderProbe
from corpus_audit.probe.questionnaires.social_distance import BASELINE
from corpus_audit.probe.questionnaires.valence import agreement, auto_labels, is_word, read_function_words, read_labels
from corpus_audit.probe.results import GenderResults, SocialDistanceResults

DIAGNOSES = ("depression", "schizophrenia", "anxiety", "diabetes", "influenza", "cancer")
CONDITIONS = ("depression(symptomatic)", "depression(remitted)", "Latina/Latino", "HIV(average symptoms)",
              "Healthy", "Rich", "Have a monogamous relationship")


def _keep(folder, name, column, keep):
    with open(folder / name, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    with open(folder / name, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(row for row in rows if keep(row[column]))


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> str:
    return str(tiny_mlm.save("bert", tmp_path_factory.mktemp("bert") / "model"))


@pytest.fixture(scope="module")
def gender_words(bert):
    """Gender words taken from the tiny model's own most probable fills, so that gendered fills occur."""
    model = MaskedLM.load(bert, threads=1)
    fills = model.fill(["[MASK] has depression", "[MASK] has diabetes", "I feel scared of a [MASK] with anxiety."],
                       6)
    words = [fill.word for row in fills for fill in row if is_word(fill.word)]
    words = list(dict.fromkeys(words))
    return {"female": words[0::2][:3], "male": words[1::2][:3]}


@pytest.fixture(scope="module")
def gender_questionnaire(tmp_path_factory, gender_words):
    folder = tmp_path_factory.mktemp("gender") / "en"
    shutil.copytree(bundled_folder("en"), folder)
    _keep(folder, "gender_diagnoses.csv", "diagnosis", lambda d: d in DIAGNOSES)
    _keep(folder, "gender_prompts.csv", "item", lambda item: item in ("", "3", "19", "8", "20"))
    with open(folder / "gender_words.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["word", "gender", "kind", "case", "source"])
        for gender, words in gender_words.items():
            writer.writerows([word, gender, "noun", "any", "test"] for word in words)
    return folder


@pytest.fixture(scope="module")
def gender_dir(bert, gender_questionnaire, tmp_path_factory):
    outdir = tmp_path_factory.mktemp("gender-probe") / "out"
    result = CliRunner().invoke(main, ["probe", "gender", "--model", bert, "-o", str(outdir), "--questionnaire",
                                       str(gender_questionnaire), "--threads", "1", "--steps", "2", "--branch", "4",
                                       "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "P(female)" in result.output
    return outdir


def test_gender_probe_writes_every_output(gender_dir):
    folder = ProbeFolder(gender_dir)
    summary = folder.read_summary()
    assert summary.probe == "gender" and summary.options["steps"] == 2
    scores = pd.read_parquet(folder.scores)
    assert len(scores) == (17 + 4) * len(DIAGNOSES)
    assert ((scores["p_female"] + scores["p_male"] + scores["p_unspecified"]) <= 1 + 1e-9).all()
    assert scores["p_female"].gt(0).any() and scores["p_male"].gt(0).any()
    for stem in GenderProbe.figures:
        for fmt in FIGURE_FORMATS:
            assert folder.figure(stem, fmt).stat().st_size > 1000
    report = folder.report.read_text(encoding="utf-8")
    assert "Gendered fill-mask probe" in report and "Tables 4 and 6" in report
    illnesses = folder.read_illnesses()
    assert set(illnesses["illness"]) == {"depression", "schizophrenia", "anxiety", "diabetes", "flu"}


def test_gender_probabilities_are_the_models_fills(gender_dir, bert, gender_words):
    """A one-step prompt: P(female) is the sum of its female fills above 0.01. A recursive prompt: each two-word
    phrase's probability is the product of its two steps."""
    scores = pd.read_parquet(ProbeFolder(gender_dir).scores)
    model = MaskedLM.load(bert, threads=1)
    row = scores[(scores["template"] == "<mask> has [diagnosis]") & (scores["diagnosis"] == "diabetes")].iloc[0]
    fills = model.fill(["[MASK] has diabetes"], 100)[0]
    female = sum(f.prob for f in fills if f.prob > 0.01 and f.word.lower() in gender_words["female"])
    unspecified = sum(f.prob for f in fills if f.prob > 0.01 and f.word.lower() not in
                      gender_words["female"] + gender_words["male"])
    assert row["p_female"] == pytest.approx(female, abs=1e-6)  # float32 rounding of other batch shapes
    assert row["p_unspecified"] == pytest.approx(unspecified, abs=1e-6)

    phrases = pd.read_parquet(ProbeFolder(gender_dir).fills)
    recursive = phrases[(phrases["step"] == 2) & (phrases["set"] == "aq27")].iloc[0]
    prompt = recursive["prompt"]
    modifier, head = recursive["phrase"].split(" ", 1)
    first = {f.word: f.prob for f in model.fill([prompt.replace("<mask>", "[MASK]")], 100)[0]}
    second = {f.word: f.prob for f in model.fill([prompt.replace("<mask>", f"[MASK] {head}")], 100)[0]}
    assert recursive["probability"] == pytest.approx(first[head] * second[modifier], rel=1e-5)


def test_gender_tests_match_scipy(gender_dir):
    folder = ProbeFolder(gender_dir)
    scores = pd.read_parquet(folder.scores)
    tests = pd.read_csv(folder.tests)
    row = tests[(tests["family"] == "health action") & (tests["part"] == "all")
                & (tests["diagnosis_type"] == "mental")].iloc[0]
    sample = scores[scores["set"].isin(["diagnosis", "intention", "action"]) & (scores["diagnosis_type"] == "mental")]
    expected = stats.ttest_rel(sample["p_female"], sample["p_male"])
    assert row["t"] == pytest.approx(expected.statistic) and row["n_a"] == 17 * 3
    assert row["p_bonferroni"] == pytest.approx(min(1.0, expected.pvalue * tests["p"].notna().sum()))
    disparity = folder.read_summary().results["disparity"]
    aq27 = next(r for r in disparity if r["family"] == "AQ-27" and r["part"] == "all")
    part = scores[scores["set"] == "aq27"]
    expected = stats.ttest_ind(part.loc[part["diagnosis_type"] == "mental", "disparity"],
                               part.loc[part["diagnosis_type"] == "non-mental", "disparity"])
    assert aq27["t"] == pytest.approx(expected.statistic)


def test_gender_rerun_skips(gender_dir, bert, gender_questionnaire, tmp_path):
    outdir = tmp_path / "out"
    shutil.copytree(gender_dir, outdir)
    result = CliRunner().invoke(main, ["probe", "gender", "--model", bert, "-o", str(outdir), "--questionnaire",
                                       str(gender_questionnaire), "--threads", "1", "--steps", "2", "--branch", "4"])
    assert result.exit_code == 0 and "fill: up to date, skipped" in result.stderr
    assert "report: up to date, skipped" in result.stderr


@pytest.fixture(scope="module")
def distance_questionnaire(tmp_path_factory):
    folder = tmp_path_factory.mktemp("distance") / "en"
    shutil.copytree(bundled_folder("en"), folder)
    _keep(folder, "social_distance_conditions.csv", "condition", lambda c: c in CONDITIONS)
    _keep(folder, "social_distance_items.csv", "item", lambda item: item in ("1", "2", "5"))
    return folder


@pytest.fixture(scope="module")
def distance_dir(bert, distance_questionnaire, tmp_path_factory):
    outdir = tmp_path_factory.mktemp("distance-probe") / "out"
    result = CliRunner().invoke(main, ["probe", "social-distance", "--model", bert, "-o", str(outdir),
                                       "--questionnaire", str(distance_questionnaire), "--threads", "1", "--top-k",
                                       "20", "--n-boot", "200", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "P(negative): stigmatised" in result.output
    return outdir


def test_social_distance_probability_of_negative_by_hand(distance_dir):
    folder = ProbeFolder(distance_dir)
    fills, scores = pd.read_parquet(folder.fills), pd.read_parquet(folder.scores)
    assert len(scores) == 4 * 3 * (1 + 10)  # templates x items x (baseline + 10 phrases of 7 conditions)
    labels = pd.read_csv(folder.fill_labels).set_index("word")["label"]
    row = 5
    mine = fills[fills["row"] == row].assign(label=lambda f: f["word"].map(labels))
    mass = mine.groupby("label")["prob"].sum()
    relevant = sum(mass.get(label, 0.0) for label in ("positive", "negative", "neutral"))
    assert scores.loc[row, "p_negative"] == pytest.approx(mass.get("negative", 0.0) / relevant)
    conditions = pd.read_csv(folder.conditions).set_index("condition")
    latina = scores[scores["condition"] == "Latina/Latino"]
    by_template = latina.groupby(["template", "phrase"])["p_negative"].mean().groupby("template").mean()
    assert conditions.loc["Latina/Latino", "p_negative"] == pytest.approx(by_template.mean())
    assert BASELINE in conditions.index
    summary = folder.read_summary().results
    comparison = summary["comparisons"]["all"]
    real = conditions.drop(BASELINE)
    assert comparison["mean_a"] == pytest.approx(real.loc[real["stigmatized"] == "yes", "p_negative"].mean())
    assert comparison["n_a"] == 4 and comparison["n_b"] == 3
    assert summary["valence"]["method"] == "lexicons" and summary["valence"]["n"] == 119
    templates = [key for key in summary["comparisons"] if key != "all"]
    raw = [summary["comparisons"][key]["mann_whitney_p"] for key in templates]
    expected = multipletests(raw, method="holm")[1]
    for key, p in zip(templates, expected):  # Holm over the per-template family
        assert summary["comparisons"][key]["p_holm"] == pytest.approx(p)
        assert summary["comparisons"][key]["significant"] == (p < 0.05)
    assert "p (Holm over templates)" in folder.report.read_text(encoding="utf-8")
    illnesses = folder.read_illnesses().set_index("illness")
    assert illnesses.loc["depression", "mean_score"] == pytest.approx(
        real.loc[["depression(symptomatic)", "depression(remitted)"], "p_negative"].mean())


def test_valence_methods_and_hand_labels(tmp_path):
    labels = auto_labels(["good", "terrible", "table", "##ing", ",", "impossible"], "lexicons")
    assert labels == {"good": "positive", "terrible": "negative", "table": "neutral", "##ing": "irrelevant",
                      ",": "irrelevant", "impossible": "negative"}  # VADER lacks "impossible": TextBlob's label
    assert auto_labels(["impossible"], "vader") == {"impossible": "neutral"}
    function_words = read_function_words(bundled_folder("en") / "social_distance_function_words.csv")
    assert auto_labels(["the", "To", "not", "good"], "lexicons", function_words=function_words) == {
        "the": "irrelevant", "To": "irrelevant", "not": "irrelevant", "good": "positive"}  # not answers
    hand = read_labels(bundled_folder("en") / "social_distance_labels.csv")
    assert hand["impossible"] == "negative" and hand["ok"] == "positive"
    result = agreement({"a": "positive", "b": "negative", "c": "neutral"}, {"a": "positive", "b": "positive",
                                                                             "c": "neutral"})
    assert result["agreement"] == pytest.approx(2 / 3) and result["n"] == 3
    bad = tmp_path / "labels.csv"
    bad.write_text("word,label\nfine,great\n", encoding="utf-8")
    with pytest.raises(ValueError, match="label must be one of"):
        read_labels(bad)


def test_a_user_label_file_takes_precedence(distance_dir, bert, distance_questionnaire, tmp_path):
    outdir = tmp_path / "out"
    shutil.copytree(distance_dir, outdir)
    words = pd.read_csv(ProbeFolder(outdir).fill_labels)["word"].astype(str)
    labels = tmp_path / "labels.csv"
    labels.write_text("word,label\n" + "".join(f"{w},negative\n" for w in words if "," not in w), encoding="utf-8")
    result = CliRunner().invoke(main, ["probe", "social-distance", "--model", bert, "-o", str(outdir),
                                       "--questionnaire", str(distance_questionnaire), "--threads", "1", "--top-k",
                                       "20", "--n-boot", "200", "--labels", str(labels)])
    assert result.exit_code == 0, result.output
    assert "fill: up to date, skipped" in result.stderr and "report: labels changed" in result.stderr
    scores = pd.read_parquet(ProbeFolder(outdir).scores)
    assert np.allclose(scores["p_negative"].dropna(), 1.0)


def test_the_instrument_labels_the_fills(distance_dir, bert, distance_questionnaire, tiny_st_model, tiny_axes,
                                         tmp_path):
    outdir = tmp_path / "out"
    shutil.copytree(distance_dir, outdir)
    result = CliRunner().invoke(main, ["probe", "social-distance", "--model", bert, "-o", str(outdir),
                                       "--questionnaire", str(distance_questionnaire), "--threads", "1", "--top-k",
                                       "20", "--n-boot", "200", "--valence", "instrument", "--no-hand-labels",
                                       "--instrument-model", tiny_st_model, "--axes", tiny_axes])
    assert result.exit_code == 0, result.output
    folder = ProbeFolder(outdir)
    valence = folder.read_summary().results["valence"]
    assert valence["method"] == "instrument" and valence["n"] == 119 and valence["mass_labelled_by_hand"] == 0
    labels = pd.read_csv(folder.fill_labels, keep_default_na=False)
    assert set(labels["source"]) == {"instrument"}
    words = labels[labels["word"].map(is_word)]
    assert set(words["label"]) <= {"positive", "negative", "neutral"}
    assert (labels.loc[~labels["word"].map(is_word), "label"] == "irrelevant").all()


@pytest.fixture(scope="module")
def classifier(tmp_path_factory) -> str:
    """A BERT sequence classifier on the anchors' recipe, labels negative, neutral, positive."""
    from transformers import BertConfig, BertForSequenceClassification

    tok = tiny_mlm.tokenizer("bert")
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=3,
                        id2label={0: "negative", 1: "neutral", 2: "positive"},
                        label2id={"negative": 0, "neutral": 1, "positive": 2})
    model = tiny_mlm.formula_weights(BertForSequenceClassification(config))
    folder = tmp_path_factory.mktemp("classifier") / "model"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def test_sentiment_probe_and_its_correlation(classifier, distance_dir, distance_questionnaire, tmp_path):
    outdir = tmp_path / "sentiment"
    result = CliRunner().invoke(main, ["probe", "sentiment", "--model", classifier, "-o", str(outdir),
                                       "--questionnaire", str(distance_questionnaire), "--social-distance",
                                       str(distance_dir), "--threads", "1", "--n-boot", "200"])
    assert result.exit_code == 0, result.output
    folder = ProbeFolder(outdir)
    scores = pd.read_parquet(folder.scores)
    assert len(scores) == 2 * 11 and set(scores["valence"]) <= {"negative", "neutral", "positive"}
    assert "They are people who have symptomatic depression." in set(scores["prompt"])
    assert "These are people." in set(scores["prompt"])
    conditions = pd.read_csv(folder.conditions).set_index("condition")
    latina = scores[scores["condition"] == "Latina/Latino"]
    assert len(latina) == 6 and conditions.loc["Latina/Latino", "share_negative"] == pytest.approx(
        (latina["valence"] == "negative").mean())
    correlation = folder.read_summary().results["correlation"]
    fill_mask = pd.read_csv(ProbeFolder(distance_dir).conditions).set_index("condition").drop(BASELINE)
    x = fill_mask["p_negative"]
    y = conditions.drop(BASELINE)["share_negative"].reindex(x.index)
    assert correlation["n"] == 7
    if np.ptp(y) > 0:
        assert correlation["pearson"]["r"] == pytest.approx(stats.pearsonr(x, y).statistic)
    assert "Sentiment-classifier probe" in folder.report.read_text(encoding="utf-8")


def test_a_classifier_without_a_negative_label_is_refused(classifier, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(classifier, folder)
    data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    data["id2label"] = {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
    data["label2id"] = {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2}
    (folder / "config.json").write_text(json.dumps(data), encoding="utf-8")
    result = CliRunner().invoke(main, ["probe", "sentiment", "--model", str(folder), "-o", str(tmp_path / "out")])
    assert result.exit_code == 1 and "--negative-label" in result.output


@pytest.mark.parametrize("probe", ["gender", "distance"])
def test_the_link_puts_corpus_statistics_beside_each_probe(probe, gender_dir, distance_dir, audit_dir,  # noqa: F811
                                                           tmp_path):
    outdir = tmp_path / "probe"
    shutil.copytree(gender_dir if probe == "gender" else distance_dir, outdir)
    result = CliRunner().invoke(main, ["link", str(audit_dir), str(outdir), "--n-boot", "200", "--permutations",
                                       "199"])
    assert result.exit_code == 0, result.output
    link = json.loads((outdir / "link.json").read_text(encoding="utf-8"))
    assert link["dimensions"] == [] and link["illnesses"]
    measure = "P(female) - P(male)" if probe == "gender" else "P(negative)"
    assert link["model_measure"] == measure and measure in link["correlations"][0]["measure"]
    depression = next(i for i in link["illnesses"] if i["illness"] == "depression")
    assert depression["model_score"] == pytest.approx(
        ProbeFolder(outdir).read_illnesses().set_index("illness").loc["depression", "mean_score"])
    assert "Per illness" in (outdir / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("arguments, message", [
    (["probe", "gender", "--top-k", "5"], "--branch (10: fills followed at each recursive step) cannot exceed"),
    (["probe", "aq27", "--scope", "sentence"], "--scope sentence goes with --method paper only"),
    (["probe", "social-distance", "--instrument-model", "m"], "with --valence lexicons they would be ignored"),
    (["probe", "social-distance", "--valence", "vader", "--axes", "{axes}"], "add --valence instrument"),
])
def test_option_combinations_are_usage_errors_before_any_work(arguments, message, tmp_path):
    """Checked by the probe's options before the model is looked at (there is none here): exit 2, no traceback."""
    axes = tmp_path / "axes.npz"
    axes.write_bytes(b"")
    result = CliRunner().invoke(main, [*[a.format(axes=axes) for a in arguments], "--model",
                                       str(tmp_path / "no-model"), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and message in result.output and "Usage:" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "out").exists()


def test_sentiment_against_a_folder_of_another_probe_is_a_usage_error(gender_dir, tmp_path):
    result = CliRunner().invoke(main, ["probe", "sentiment", "--model", str(tmp_path / "no-model"), "-o",
                                       str(tmp_path / "out"), "--social-distance", str(gender_dir)])
    assert result.exit_code == 2 and "not a social-distance probe folder (it holds a gender probe)" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_typed_results_read_the_fill_probes_summaries(gender_dir, distance_dir):
    gender = ProbeFolder(gender_dir).read_summary()
    expected = [r for r in gender.results["paired"] if r["part"] == "all"]
    tests = GenderResults.of(gender).tests
    assert len(tests) == len(expected) >= 2
    for test, record in zip(tests, expected):
        assert (test.family, test.diagnosis_type, test.p_female, test.p_male, test.cohens_d, test.p_bonferroni) == (
            record["family"], record["diagnosis_type"], record["mean_a"], record["mean_b"], record["cohens_d"],
            record["p_bonferroni"])
    distance = ProbeFolder(distance_dir).read_summary()
    results, raw = SocialDistanceResults.of(distance), distance.results
    assert results.overall.mean_stigmatized == raw["comparisons"]["all"]["mean_a"]
    assert results.overall.mean_difference == raw["comparisons"]["all"]["mean_difference"]
    assert (results.above_half_stigmatized, results.stigmatized_conditions) == (
        raw["above_half"]["stigmatized"], raw["n_conditions"]["stigmatized"])
    with pytest.raises(ProbeOutputError, match="a gender probe, not a social-distance probe"):
        SocialDistanceResults.of(gender)
    with pytest.raises(ProbeOutputError, match="lacks results.paired"):
        GenderResults.of(dataclasses.replace(gender, results={}))
