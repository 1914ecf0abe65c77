"""``corpus-audit probe aq27`` on the anchor models with a trimmed questionnaire (4 noun phrases x 6 illnesses):
the outputs, the statistics recomputed independently, skipping, resuming and the options."""

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

from corpus_audit.cli import main
from corpus_audit.probe.folder import FIGURE_FORMATS, ProbeFolder, ProbeOutputError
from corpus_audit.probe.models import parts as parts_module
from corpus_audit.probe.models.masked import MaskedLM
from corpus_audit.probe.questionnaires.aq27 import AQ27Options, AQ27Probe
from corpus_audit.probe.questionnaires.files import bundled_folder
from corpus_audit.probe.results import AQ27Results
from corpus_audit.probe.run import run_probe

ANCHORS = json.loads(tiny_mlm.ANCHORS.read_text(encoding="utf-8"))
NOUN_PHRASES = ("James", "Mary", "a woman", "someone")
ILLNESSES = ("schizophrenia", "depression", "anxiety", "bronchitis", "asthma", "diabetes")


def run_aq27(options, outdir, log):
    return run_probe(AQ27Probe(options), outdir, log=log)


def trimmed(folder, lang="en", noun_phrases=NOUN_PHRASES, illnesses=ILLNESSES):
    """A copy of the bundled questionnaire with fewer noun phrases and illnesses (every item kept)."""
    shutil.copytree(bundled_folder(lang), folder)
    for name, column, keep in (("noun_phrases.csv", "noun_phrase", noun_phrases), ("illnesses.csv", "illness",
                                                                                     illnesses)):
        with open(folder / name, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        with open(folder / name, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(row for row in rows if row[column] in keep)
    return folder


def probe_args(model, outdir, questionnaire, *extra):
    return ["probe", "aq27", "--model", model, "--lang", "en", "-o", str(outdir), "--questionnaire",
            str(questionnaire), "--threads", "1", "--n-boot", "200", "--no-progress", "--method", "paper",
            "--null-models", "0", *extra]


@pytest.fixture(scope="module")
def questionnaire(tmp_path_factory):
    return trimmed(tmp_path_factory.mktemp("questionnaire") / "en")


@pytest.fixture(scope="module")
def probe_dir(anchor_models, questionnaire, tmp_path_factory):
    outdir = tmp_path_factory.mktemp("probe") / "out"
    result = CliRunner().invoke(main, probe_args(anchor_models["bert"], outdir, questionnaire))
    assert result.exit_code == 0, result.output
    assert "prompts, method paper" in result.output and "confounds each name's length" in result.output
    return outdir


def test_the_typed_results_read_what_summary_json_holds(probe_dir):
    summary = ProbeFolder(probe_dir).read_summary()
    raw, results = summary.results, AQ27Results.of(summary)
    assert results.method == raw["method"] == "paper" and results.prompts == raw["counts"]["prompts"]
    assert results.verdict == tuple(raw["verdict"]) and len(results.dimensions) == 9
    assert results.overall.dimension == "ALL" and results.overall.p == raw["overall"]["wilcoxon_p"]
    for typed, record in zip(results.dimensions, raw["dimensions"]):
        assert typed.dimension == record["dimension"] and typed.p_name == "p_bonferroni"
        assert typed.p == record["p_bonferroni"] and typed.significant == record["significant"]
        assert typed.mean_difference_ci == tuple(record["mean_difference_ci"])
        assert (typed.n_mental, typed.n_physical, typed.mean_mental, typed.mean_physical, typed.effect) == (
            record["n_pairs"], record["n_pairs"], record["mean_a"], record["mean_b"], record["rank_biserial"])
        assert typed.label == record["dimension"] + (" (reversed)" if record["reverse_scored"] else "")
    with pytest.raises(ProbeOutputError, match="lacks results.overall"):
        AQ27Results.of(dataclasses.replace(summary, results={"method": "paper"}))
    with pytest.raises(ProbeOutputError, match="a gender probe, not an AQ-27 probe"):
        AQ27Results.of(dataclasses.replace(summary, probe="gender"))


def test_the_probe_writes_every_output(probe_dir):
    folder = ProbeFolder(probe_dir)
    scores = pd.read_parquet(folder.scores)
    assert len(scores) == 27 * len(NOUN_PHRASES) * len(ILLNESSES)
    assert (scores["n_tokens_illness"] >= 1).all() and (scores["pll_illness"] > scores["pll_sentence"]).all()
    summary = folder.read_summary()
    assert summary.probe == "aq27" and summary.options["metric"] == "within_word_l2r"
    assert summary.results["counts"]["illnesses"] == {"mental": 3, "physical": 3}
    assert len(folder.read_dimensions()) == 9 and len(folder.read_illnesses()) == len(ILLNESSES)
    for stem in AQ27Probe.figures:
        for fmt in FIGURE_FORMATS:
            assert folder.figure(stem, fmt).stat().st_size > 1000
    report = folder.report.read_text(encoding="utf-8")
    assert "Table 2" in report and report.count("data:image/png;base64,") == len(AQ27Probe.figures)


def test_prompt_scores_are_the_anchors(probe_dir):
    """Item 1 with "a woman" is the anchors' sentence: its stored PLL is minicons' number."""
    scores = pd.read_parquet(ProbeFolder(probe_dir).scores).set_index(["item", "noun_phrase", "illness"])
    for illness in ("schizophrenia", "bronchitis"):
        sentence = f"I would feel aggravated by a woman who has {illness}."
        row = scores.loc[(1, "a woman", illness)]
        assert row["sentence"] == sentence
        assert row["pll_sentence"] == pytest.approx(ANCHORS["bert"][sentence]["minicons_sum_within_word_l2r"],
                                                    abs=1e-4)
        pieces = dict(enumerate(ANCHORS["bert"][sentence]["minicons_tokens_within_word_l2r"]))
        span = [value for index, (token, value) in pieces.items() if index >= 9 and token != "."]  # "has" is 8
        assert row["pll_illness"] == pytest.approx(sum(span), abs=1e-4)
        assert row["n_tokens_illness"] == len(span)


def test_statistics_match_an_independent_computation(probe_dir):
    folder = ProbeFolder(probe_dir)
    scores = pd.read_parquet(folder.scores)
    summary = folder.read_summary().results
    # pairs by item x noun phrase: mean over each group's illnesses
    means = scores.groupby(["item", "noun_phrase", "illness_type"])["pll_sentence"].mean().unstack()
    expected = stats.wilcoxon(means["mental"], means["physical"])
    assert summary["overall"]["n_pairs"] == 27 * len(NOUN_PHRASES)
    assert summary["overall"]["wilcoxon_p"] == pytest.approx(expected.pvalue, rel=1e-9)
    dimensions = folder.read_dimensions().set_index("dimension")
    anger = means[means.index.get_level_values("item").isin([1, 4, 12])]
    p_anger = stats.wilcoxon(anger["mental"], anger["physical"]).pvalue
    assert dimensions.loc["Anger", "p_bonferroni"] == pytest.approx(min(1.0, 9 * p_anger), rel=1e-9)
    assert dimensions.loc["Anger", "mean_difference"] == pytest.approx((anger["mental"] - anger["physical"]).mean())
    # Cronbach's alpha of Fear on the mental illnesses: items 3, 19, 24 over noun phrase x illness
    fear = scores[scores["item"].isin([3, 19, 24]) & (scores["illness_type"] == "mental")]
    matrix = fear.pivot_table(index=["noun_phrase", "illness"], columns="item", values="pll_sentence").to_numpy()
    k = matrix.shape[1]
    alpha = k / (k - 1) * (1 - matrix.var(axis=0, ddof=1).sum() / matrix.sum(axis=1).var(ddof=1))
    assert dimensions.loc["Fear", "alpha"] == pytest.approx(alpha)
    illnesses = folder.read_illnesses().set_index("illness")
    assert illnesses.loc["asthma", "mean_score"] == pytest.approx(
        scores.loc[scores["illness"] == "asthma", "pll_sentence"].mean())


def test_a_rerun_skips_and_a_new_reduction_reruns_only_the_report(probe_dir, anchor_models, questionnaire, tmp_path):
    outdir = tmp_path / "out"
    shutil.copytree(probe_dir, outdir)
    (outdir / "report.html").unlink()
    runner = CliRunner()
    result = runner.invoke(main, probe_args(anchor_models["bert"], outdir, questionnaire))
    assert result.exit_code == 0 and "score: up to date, skipped" in result.stderr
    assert "report: up to date, skipped" in result.stderr
    assert "Table 2" in (outdir / "report.html").read_text(encoding="utf-8")  # a missing report is rewritten
    result = runner.invoke(main, probe_args(anchor_models["bert"], outdir, questionnaire, "--reduce", "mean"))
    assert result.exit_code == 0 and "report: reduce changed since the last run" in result.stderr
    scores = pd.read_parquet(outdir / "scores.parquet")
    per_token = scores["pll_sentence"] / scores["n_tokens_sentence"]
    asthma = per_token[scores["illness"] == "asthma"].mean()
    assert ProbeFolder(outdir).read_illnesses().set_index("illness").loc["asthma", "mean_score"] == \
        pytest.approx(asthma)


def test_an_interrupted_probe_resumes_to_the_same_scores(probe_dir, anchor_models, questionnaire, tmp_path,
                                                         monkeypatch):
    monkeypatch.setattr(parts_module.PLLParts, "chunk", 100)
    real = MaskedLM.score
    calls = []

    def interrupted(self, *args, **kwargs):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(MaskedLM, "score", interrupted)
    options = AQ27Options(model=anchor_models["bert"], questionnaire=str(questionnaire), n_boot=200, threads=1,
                          method="paper", null_models=0)
    with pytest.raises(KeyboardInterrupt):
        run_aq27(options, tmp_path / "out", log=lambda message: None)
    assert len(list((tmp_path / "out" / "score-parts").glob("part-*.parquet"))) == 2
    monkeypatch.setattr(MaskedLM, "score", real)
    messages = []
    run_aq27(options, tmp_path / "out", log=messages.append)
    distinct = pd.read_parquet(probe_dir / "scores.parquet")["sentence"].nunique()
    assert f"score: resumed, 200 of {distinct} sentences were already scored" in messages
    resumed = pd.read_parquet(tmp_path / "out" / "scores.parquet")
    expected = pd.read_parquet(probe_dir / "scores.parquet")
    assert np.allclose(resumed["pll_sentence"], expected["pll_sentence"], atol=1e-4)


def test_a_damaged_chunk_is_scored_again(probe_dir, anchor_models, questionnaire, tmp_path):
    outdir = tmp_path / "out"
    shutil.copytree(probe_dir, outdir)
    part = next((outdir / "score-parts").glob("part-*.parquet"))
    part.write_bytes(part.read_bytes()[:-10])
    (outdir / "scores.parquet").unlink()
    messages = []
    run_aq27(AQ27Options(model=anchor_models["bert"], questionnaire=str(questionnaire), n_boot=200, threads=1,
                          method="paper", null_models=0),
             outdir, log=messages.append)
    assert f"score: {part.name} is damaged (its SHA-256 differs from the one recorded); scoring its sentences " \
           "again" in messages
    assert np.allclose(pd.read_parquet(outdir / "scores.parquet")["pll_sentence"],
                       pd.read_parquet(probe_dir / "scores.parquet")["pll_sentence"], atol=1e-4)


def test_in_vocabulary_keeps_single_token_illnesses(anchor_models, questionnaire, tmp_path):
    summary = run_aq27(AQ27Options(model=anchor_models["bert"], questionnaire=str(questionnaire), n_boot=200,
                                   illnesses="in-vocabulary", threads=1, null_models=0), tmp_path / "out",
                       log=lambda m: None)
    kept = set(pd.read_parquet(tmp_path / "out" / "scores.parquet")["illness"])
    assert kept == {"schizophrenia", "depression", "anxiety", "asthma", "diabetes"}  # "bro ##nch ##itis" is out
    assert summary.options["illnesses"] == "in-vocabulary"


def test_spanish_probe_and_illness_scope(anchor_models, tmp_path):
    questionnaire = trimmed(tmp_path / "es", "es", ("María", "un individuo"), ("depression", "asthma"))
    result = CliRunner().invoke(main, ["probe", "aq27", "--model", anchor_models["roberta_bpe"], "--lang", "es",
                                       "-o", str(tmp_path / "out"), "--questionnaire", str(questionnaire),
                                       "--method", "paper", "--scope", "illness", "--no-period", "--threads", "1",
                                       "--n-boot", "100", "--null-models", "0"])
    assert result.exit_code == 0, result.output
    scores = pd.read_parquet(tmp_path / "out" / "scores.parquet")
    item13 = scores[(scores["item"] == 13) & (scores["illness"] == "asthma")].set_index("noun_phrase")["sentence"]
    assert item13.to_dict() == {"María": "Creo que María con asma es peligrosa",
                                "un individuo": "Creo que un individuo con asma es peligroso"}
    illnesses = ProbeFolder(tmp_path / "out").read_illnesses().set_index("illness")
    assert illnesses.loc["asthma", "mean_score"] == pytest.approx(
        scores.loc[scores["illness"] == "asthma", "pll_illness"].mean())


# ----------------------------------------------------------------------------------- the controlled method (default)


@pytest.fixture(scope="module")
def controlled_dir(anchor_models, questionnaire, tmp_path_factory):
    outdir = tmp_path_factory.mktemp("controlled") / "out"
    run_aq27(AQ27Options(model=anchor_models["bert"], questionnaire=str(questionnaire), n_boot=200, threads=1,
                         null_models=1, permutations=999), outdir, log=lambda message: None)
    return outdir


def test_controlled_statistics_match_an_independent_computation(controlled_dir):
    folder = ProbeFolder(controlled_dir)
    scores, baselines = pd.read_parquet(folder.scores), pd.read_parquet(folder.baselines)
    results = folder.read_summary().results
    assert results["method"] == "controlled" and set(baselines["item"]) == {1, 2, 3}
    per_piece = baselines["pll_illness"] / baselines["n_tokens_illness"]
    baseline = per_piece.groupby([baselines["noun_phrase"], baselines["illness"]]).mean()
    prompt = scores["pll_illness"] / scores["n_tokens_illness"] - baseline.loc[
        list(zip(scores["noun_phrase"], scores["illness"]))].to_numpy()
    illness = prompt.groupby([scores["illness_type"], scores["illness"]]).mean()
    mental, physical = illness["mental"].to_numpy(), illness["physical"].to_numpy()
    overall = results["overall"]
    assert overall["n_a"] == 3 and overall["n_b"] == 3 and overall["exact"]
    assert overall["mean_difference"] == pytest.approx(mental.mean() - physical.mean())
    exact = stats.permutation_test((mental, physical), lambda a, b: a.mean() - b.mean(), n_resamples=np.inf,
                                   permutation_type="independent")
    assert overall["permutation_p"] == pytest.approx(exact.pvalue)
    assert overall["significant"] == (exact.pvalue < 0.05)
    anger = prompt[scores["dimension"] == "Anger"].groupby(
        [scores["illness_type"], scores["illness"]]).mean()
    dimensions = folder.read_dimensions().set_index("dimension")
    assert dimensions.loc["Anger", "mean_difference"] == pytest.approx(
        anger["mental"].mean() - anger["physical"].mean())
    holm = np.asarray(dimensions["p_holm"])
    raw = np.asarray(dimensions["permutation_p"])
    order = np.argsort(raw, kind="stable")
    assert holm[order[0]] == pytest.approx(min(1.0, 9 * raw[order[0]]))
    assert (dimensions["significant"] == (dimensions["p_holm"] < 0.05)).all()
    table = folder.read_illnesses().set_index("illness")
    assert table.loc["asthma", "mean_score"] == pytest.approx(illness["physical"]["asthma"])
    assert table.loc["bronchitis", "n_pieces"] == 3  # bro ##nch ##itis
    null = results["null_check"]
    assert null["models"] == 1 and len(null["copies"]) == 1 and null["false_positive_rate"] in (0.0, 1.0)
    report = folder.report.read_text(encoding="utf-8")
    assert "the illness as the unit" in report and "Null check" in report


def test_the_null_check_flags_the_papers_result(controlled_dir, anchor_models, questionnaire, tmp_path):
    outdir = tmp_path / "out"
    shutil.copytree(controlled_dir, outdir)
    messages = []
    summary = run_aq27(AQ27Options(model=anchor_models["bert"], questionnaire=str(questionnaire), n_boot=200,
                                   threads=1, null_models=1, permutations=999, method="paper"), outdir,
                       log=messages.append)
    assert "null: up to date, skipped" in messages  # switching the method reruns the report only
    overall = summary.results["overall"]
    # a random copy's PLL falls with every piece of the name: the paper's test finds a "difference" in it too
    assert overall["significant"] and overall["flagged"] and overall["null_agrees"] == 1
    assert summary.results["null_check"]["false_positive_rate"] == 1.0
    assert any("a model that learnt nothing produces this result" in line for line in summary.results["verdict"])
    assert "confounds the illness names' length and frequency" in (outdir / "report.html").read_text("utf-8")


@pytest.mark.parametrize("lang, noun_phrases", [("en", ("Mary", "someone")), ("es", ("María", "un individuo"))])
def test_a_random_model_shows_no_difference_with_the_default_method(anchor_models, lang, noun_phrases, tmp_path):
    """The anchor BERT learnt nothing: every illness of the bundled list (22 + 22), two noun phrases."""
    with open(bundled_folder(lang) / "illnesses.csv", encoding="utf-8") as handle:
        illnesses = [row["illness"] for row in csv.DictReader(handle)]
    questionnaire = trimmed(tmp_path / lang, lang, noun_phrases, illnesses)
    summary = run_aq27(AQ27Options(model=anchor_models["bert"], lang=lang, questionnaire=str(questionnaire),
                                   n_boot=200, permutations=999, threads=1, null_models=0), tmp_path / "out",
                       log=lambda message: None)
    results = summary.results
    assert results["counts"]["illnesses"] == {"mental": 22, "physical": 22}
    assert not results["overall"]["significant"]
    assert sum(not d["significant"] for d in results["dimensions"]) >= 8
    assert results["verdict"][0].startswith("Mental vs physical illnesses: no evidence of a difference")


def test_compare_puts_two_models_side_by_side_and_tests_their_gaps(controlled_dir, anchor_models, questionnaire,
                                                                   tmp_path):
    other = tmp_path / "roberta"
    run_aq27(AQ27Options(model=anchor_models["roberta"], questionnaire=str(questionnaire), n_boot=200, threads=1,
                         null_models=0, permutations=999), other, log=lambda message: None)
    result = CliRunner().invoke(main, ["probe", "compare", str(controlled_dir), str(other), "-o",
                                       str(tmp_path / "cmp"), "--n-boot", "200", "--permutations", "999"])
    assert result.exit_code == 0, result.output
    compared = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert compared["method"] == "controlled" and len(compared["tests"]) == 10  # one pair: ALL + 9 dimensions
    assert len(compared["per_model"]) == 2 * 10
    bert = ProbeFolder(controlled_dir).read_illnesses().set_index("illness")
    roberta = ProbeFolder(other).read_illnesses().set_index("illness")
    gap = bert["mean_score"] - roberta.loc[bert.index, "mean_score"]
    mental = bert["illness_type"] == "mental"
    overall = next(t for t in compared["tests"] if t["dimension"] == "ALL")
    assert overall["difference_of_gaps"] == pytest.approx(gap[mental].mean() - gap[~mental].mean())
    exact = stats.permutation_test((gap[mental].to_numpy(), gap[~mental].to_numpy()),
                                   lambda a, b: a.mean() - b.mean(), n_resamples=np.inf,
                                   permutation_type="independent")
    assert overall["permutation_p"] == pytest.approx(exact.pvalue)
    from statsmodels.stats.multitest import multipletests

    expected = multipletests([t["permutation_p"] for t in compared["tests"]], method="holm")[1]
    assert [t["p_holm"] for t in compared["tests"]] == pytest.approx(list(expected))
    assert (tmp_path / "cmp" / "compare.png").stat().st_size > 1000
    assert "AQ-27 probes compared" in (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    alone = CliRunner().invoke(main, ["probe", "compare", str(other), "-o", str(tmp_path / "cmp2")])
    assert alone.exit_code == 1 and "give at least two AQ-27 probe folders" in alone.output


def test_the_controlled_method_refuses_the_sentence_scope_clearly(tmp_path):
    result = CliRunner().invoke(main, ["probe", "aq27", "--model", str(tmp_path), "-o", str(tmp_path / "out"),
                                       "--scope", "sentence"])
    assert result.exit_code == 2 and "--scope sentence goes with --method paper only" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_whole_name_scoring_masks_each_name_as_one_unit(anchor_models, tmp_path):
    """--name-scoring whole: a name's pieces masked together (log P(name | rest), left to right), the controlled
    score its sum in the item less its mean in the carriers. A name of one word scores as the within-word PLL
    scores it; a name of several words does not (the PLL scores each word with the others visible)."""
    several = ("bipolar affective disorder", "cold")  # "a cold": the article is part of the name
    questionnaire = trimmed(tmp_path / "q", noun_phrases=("Mary", "someone"),
                            illnesses=(*several, "schizophrenia", "anxiety", "bronchitis", "asthma"))
    options = {"model": anchor_models["bert"], "questionnaire": str(questionnaire), "n_boot": 200,
               "permutations": 999, "threads": 1, "null_models": 0}
    run_aq27(AQ27Options(**options), tmp_path / "pll", log=lambda message: None)
    summary = run_aq27(AQ27Options(**options, name_scoring="whole"), tmp_path / "whole", log=lambda message: None)
    assert summary.options["name_scoring"] == "whole" and summary.options["reduce"] == "sum"
    folder = ProbeFolder(tmp_path / "whole")
    key = ["item", "noun_phrase", "illness"]
    pll = pd.read_parquet(ProbeFolder(tmp_path / "pll").scores).set_index(key).sort_index()
    whole = pd.read_parquet(folder.scores).set_index(key).sort_index()
    assert whole["pll_sentence"].isna().all() and (whole["n_tokens_illness"] == pll["n_tokens_illness"]).all()
    one_word = ~whole.index.get_level_values("illness").isin(several)
    assert np.allclose(whole.loc[one_word, "pll_illness"], pll.loc[one_word, "pll_illness"], atol=1e-4)
    row = whole.loc[(13, "someone", "bipolar affective disorder")]
    (masked,) = MaskedLM.load(anchor_models["bert"]).span_log_probs([row["sentence"]],
                                                                    [(row["illness_start"], row["illness_end"])])
    assert masked.tokens == ["bipolar", "affect", "##ive", "disorder"] and row["pll_illness"] == pytest.approx(
        masked.total, abs=1e-4)
    assert np.abs(whole.loc[~one_word, "pll_illness"] - pll.loc[~one_word, "pll_illness"]).mean() > 0.1
    baselines = pd.read_parquet(folder.baselines)
    baseline = baselines.groupby(["noun_phrase", "illness"])["pll_illness"].mean()
    prompts = whole.loc[(slice(None), slice(None), "bipolar affective disorder"), :]
    expected = (prompts["pll_illness"] - baseline.loc[list(zip(prompts.index.get_level_values("noun_phrase"),
                                                                prompts.index.get_level_values("illness")))]
                .to_numpy()).mean()
    assert folder.read_illnesses().set_index("illness").loc["bipolar affective disorder", "mean_score"] == \
        pytest.approx(expected)
    assert "illness name masked whole" in folder.report.read_text(encoding="utf-8")
    mixed = CliRunner().invoke(main, ["probe", "compare", str(tmp_path / "pll"), str(tmp_path / "whole"), "-o",
                                      str(tmp_path / "cmp")])
    assert mixed.exit_code == 1 and "the probes differ in name scoring (pll, whole)" in mixed.output
    paper = CliRunner().invoke(main, ["probe", "aq27", "--model", anchor_models["bert"], "-o", str(tmp_path / "p"),
                                      "--method", "paper", "--name-scoring", "whole"])
    assert paper.exit_code == 2 and "--name-scoring whole" in paper.output and "--method controlled only" in \
        paper.output
