"""The decision aids of an audit: the verdict, the minimum detectable difference, the per-group tables (one illness
type alone included), the gap change of `compare` (one sign convention, CI), `--force` and Ctrl-C."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats as scipy_stats

from corpus_audit.audit.analysis import analyse, by_group
from corpus_audit.audit.results import AnalysisSummary
from corpus_audit.audit.verdict import verdict
from corpus_audit.cli import main
from corpus_audit.stigma.stats import gap_change, mean_ci, minimum_detectable_effect

SAMPLE = str(Path(__file__).parents[1] / "data" / "corpus_reddit_sample_en.jsonl.gz")


def test_minimum_detectable_effect_matches_the_normal_approximation_for_large_groups():
    expected = (scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)) * math.sqrt(1 / 2000 + 1 / 500)
    assert minimum_detectable_effect(2000, 500) == pytest.approx(expected, rel=2e-3)
    assert minimum_detectable_effect(20, 20) > expected  # the t distribution needs more with few sentences
    assert math.isnan(minimum_detectable_effect(1, 50))
    from statsmodels.stats.power import TTestIndPower

    for n_a, n_b in ((2, 2), (7, 255), (123, 3331)):
        reference = TTestIndPower().solve_power(nobs1=n_a, ratio=n_b / n_a, alpha=0.05, power=0.8)
        assert minimum_detectable_effect(n_a, n_b) == pytest.approx(reference, rel=1e-5)


def test_gap_change_is_the_difference_of_the_two_gaps_with_a_covering_ci():
    rng = np.random.default_rng(0)
    a_mental, a_physical = rng.normal(0.3, 0.2, 400), rng.normal(0.0, 0.2, 400)
    b_mental, b_physical = rng.normal(0.1, 0.2, 400), rng.normal(0.0, 0.2, 400)
    change, low, high = gap_change(a_mental, a_physical, b_mental, b_physical)
    hand = (b_mental.mean() - b_physical.mean()) - (a_mental.mean() - a_physical.mean())
    assert change == pytest.approx(hand)
    standard_error = math.sqrt(sum(values.var(ddof=1) / values.size for values in (a_mental, a_physical, b_mental,
                                                                                   b_physical)))
    assert low == pytest.approx(hand - 1.96 * standard_error, abs=0.01)
    assert high == pytest.approx(hand + 1.96 * standard_error, abs=0.01)
    assert all(math.isnan(value) for value in gap_change(a_mental, np.array([]), b_mental, b_physical))
    low, high = mean_ci(a_mental)
    assert low < a_mental.mean() < high and high - low == pytest.approx(2 * 1.96 * a_mental.std() / 20, rel=0.1)


def frame(n_mental: int, n_physical: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_mental + n_physical
    return pd.DataFrame({"illness_type": ["mental"] * n_mental + ["physical"] * n_physical,
                         "illnesses": [["depression"]] * n_mental + [["flu"]] * n_physical,
                         "warmth": rng.uniform(-1, 1, n), "competence": rng.uniform(-1, 1, n),
                         "site": rng.choice(["x", "y"], n)})


def test_by_group_describes_a_corpus_with_one_illness_type_without_nan():
    table = by_group(frame(40, 0), "site")
    assert set(table["illness_type"]) == {"mental"} and table["n"].sum() == 40
    assert table[["warmth_mean", "warmth_ci_low", "warmth_ci_high"]].notna().all().all()
    x = frame(40, 0).query("site == 'x'")["warmth"]
    assert table.set_index("group").loc["x", "warmth_mean"] == pytest.approx(x.mean())


def test_by_group_pools_the_smaller_groups():
    data = frame(60, 0).assign(site=[f"s{i % 5}" for i in range(60)])
    assert set(by_group(data, "site", max_groups=2)["group"]) == {"s0", "s1", "(other)"}


def test_verdict_leads_with_one_answer_then_the_details():
    one_group = verdict(typed(analyse(frame(50, 0))))
    assert one_group[0].startswith("Too few to tell: with only 0 physical-illness sentences")
    both = verdict(typed(analyse(frame(300, 300))), n_documents=12)
    assert both[0].startswith("No reliable difference:") and "would have shown" in both[0]
    assert both[0].count(". ") == 0  # one sentence
    details = " ".join(both[1:])
    assert "Details over 300 mental and 300 physical sentences" in details
    assert "these group sizes detect about" in details and "(of 12)" in details
    shifted = frame(300, 300).assign(warmth=lambda f: np.where(f.illness_type == "mental", -0.5, 0.5)
                                     + np.random.default_rng(1).normal(0, 0.1, 600))
    lead = verdict(typed(analyse(shifted)))[0]
    assert lead.startswith("Yes: sentences about mental illness are more stigmatising here than about physical")
    assert "colder by 1.01 (95% CI 1.00 to 1.03, p < 0.001)" in lead and "no reliable difference in competence" in lead


@pytest.fixture(scope="module")
def small_audit(tiny_st_model, tiny_axes, tmp_path_factory):
    outdir = tmp_path_factory.mktemp("decision") / "audit"
    result = CliRunner().invoke(main, ["audit", SAMPLE, "--lang", "en", "-o", str(outdir), "--model", tiny_st_model,
                                       "--axes", tiny_axes, "--workers", "1", "--group-by", "subreddit"])
    assert result.exit_code == 0, result.output
    # the console answers first, in one line, and gives the details after the numbers
    answer = next(line for line in result.output.splitlines() if line.startswith("answer: "))
    assert answer.startswith(("answer: Too few to tell", "answer: Yes", "answer: No", "answer: Mixed"))
    assert result.output.index("answer: ") < result.output.index("details: ")
    return outdir


def test_group_by_reaches_the_report(small_audit):
    summary = json.loads((small_audit / "summary.json").read_text())
    assert summary["analysis"]["group_by"] == "subreddit" and summary["analysis"]["groups"]
    html = (small_audit / "report.html").read_text()
    assert "<h2>By subreddit</h2>" in html and 'id="verdict"' in html


def test_another_corpus_needs_force(small_audit, tiny_st_model, tiny_axes, tmp_path):
    outdir = shutil.copytree(small_audit, tmp_path / "audit")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "1", "text": "My depression is bad."}) + "\n")
    args = ["audit", str(other), "--lang", "en", "-o", str(outdir), "--model", tiny_st_model, "--axes", tiny_axes,
            "--workers", "1"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 1
    assert "holds the audit of another corpus" in refused.output and "pass --force" in refused.output
    assert (outdir / "sentences.parquet").is_file()
    forced = CliRunner().invoke(main, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert json.loads((outdir / "summary.json").read_text())["corpus"]["inputs"] == [str(other)]


def test_ctrl_c_says_what_is_saved(small_audit, tiny_st_model, tiny_axes, tmp_path, monkeypatch):
    from corpus_audit.audit.score_parts import ScoreParts

    outdir = tmp_path / "audit"
    monkeypatch.setattr(ScoreParts, "chunk", 8)
    calls = {"n": 0}
    original = ScoreParts.save_chunk

    def interrupted(self, index, data):
        if calls["n"] == 2:
            raise KeyboardInterrupt
        calls["n"] += 1
        original(self, index, data)

    monkeypatch.setattr(ScoreParts, "save_chunk", interrupted)
    result = CliRunner().invoke(main, ["audit", SAMPLE, "--lang", "en", "-o", str(outdir), "--model", tiny_st_model,
                                       "--axes", tiny_axes, "--workers", "1", "--limit", "200"])
    assert result.exit_code == 130
    assert "interrupted during the score stage: finished stages kept: filter; 2 chunk(s) of up to 8" in result.output
    assert "Run the same command again to resume" in result.output


def test_compare_reads_b_minus_a_and_writes_html(small_audit, tmp_path):
    from corpus_audit.audit.compare import compare_audits

    result = compare_audits(small_audit, small_audit)
    warmth = result["by_type"]["mental"]["warmth"]
    assert warmth["mean_difference"] == pytest.approx(0.0)
    assert [row["sentences"] for row in result["gaps"]] == ["all sentences"] * 2  # no gate: no judgement rows
    assert all(row["gap_change"] == pytest.approx(0.0) for row in result["gaps"])
    html = tmp_path / "compare.html"
    cli = CliRunner().invoke(main, ["compare", str(small_audit), str(small_audit), "--labels", "before", "after",
                                    "-o", str(html), "-o", str(tmp_path / "compare.json")])
    assert cli.exit_code == 0, cli.output
    first, counts = cli.output.splitlines()[:2]
    assert first.startswith("answer: ") and "from before to after" in first
    documents = result["audits"]["a"]["documents_read"]
    assert counts.startswith(f"before -> after: documents read {documents} -> {documents}")
    assert f"sentences {result['audits']['a']['sentences']} -> " in counts
    page = html.read_text()
    assert 'class="answer"' in page and "before → after: documents read" in page
    assert "Every difference is B − A" in page and "data:image/png;base64," in page
    assert json.loads((tmp_path / "compare.json").read_text())["labels"] == ["before", "after"]
    refused = CliRunner().invoke(main, ["compare", str(small_audit), str(small_audit), "-o", str(tmp_path / "c.txt")])
    assert refused.exit_code != 0 and "compare writes an HTML report or JSON: name the output .html or .json" in refused.output


def test_verdict_claims_no_direction_from_a_narrow_interval_alone():
    def analysis(n_b: int, ci: list) -> AnalysisSummary:
        data = analyse(frame(111, n_b)).to_dict()
        for score in ("warmth", "competence"):
            data["comparisons"][score].update(mean_difference=-0.24, mean_difference_ci=ci, mann_whitney_p=0.42,
                                              minimum_detectable_difference=1.05)
        return AnalysisSummary.from_dict(data)

    lines = verdict(analysis(2, [-0.43, -0.04]))
    assert lines[0].startswith("Too few to tell: with only 2 physical-illness sentences (under 30)")
    assert "read the figures below as a description only" in lines[0]
    text = " ".join(lines)
    assert "the interval excludes 0 but the test does not reject, so no direction is claimed" in text
    assert "colder" not in text
    plain = verdict(analysis(200, [-0.5, 0.1]))
    assert plain[0].startswith("No reliable difference") and "about 1.05 or more would have shown" in plain[0]
    assert "warmth: mental − physical -0.24 [95% CI -0.50 to +0.10]" in " ".join(plain)


def typed(result) -> AnalysisSummary:
    """An analysis as a report reads it back from summary.json."""
    return AnalysisSummary.from_dict(result.to_dict())


def test_compare_answer_says_which_way_the_gap_moved_and_how_sure():
    from corpus_audit.audit.compare import comparison_answer

    def result(change: float, low: float, high: float, n: int = 100) -> dict:
        sizes = {f"n_{group}_{side}": n for group in ("mental", "physical") for side in "ab"}
        return {"labels": ["before", "after"],
                "gaps": [{"sentences": "judgements", "score": score, **sizes, "gap_a": -0.2, "gap_b": -0.2 + change,
                          "gap_change": change, "gap_change_ci_low": low, "gap_change_ci_high": high}
                         for score in ("warmth", "competence")]}

    better = comparison_answer(result(0.12, 0.05, 0.2))
    assert better.startswith("Less stigmatising in after than in before: relative to physical-illness judgements")
    assert "warmer by 0.12 (95% CI +0.05 to +0.20) and more competent by 0.12" in better
    assert comparison_answer(result(-0.1, -0.2, -0.01)).startswith("More stigmatising in after")
    assert comparison_answer(result(0.05, -0.02, 0.12)).startswith("No reliable change from before to after")
    assert comparison_answer(result(0.3, 0.2, 0.4, n=5)).startswith("Too few to tell")
