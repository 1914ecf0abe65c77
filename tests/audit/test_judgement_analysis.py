"""The audit's analysis over judgements: category shares, the direct AQ-27 dimension scores, and the same
mental-vs-physical statistics restricted to judgements (hand-computed cases and scipy references)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from corpus_audit.audit.analysis import analyse, category_shares, dimension_scores
from corpus_audit.stigma.judgement import DIMENSION_COLUMNS


def table(seed: int = 0, n: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    kinds = np.array(["mental", "physical", "both"])[rng.integers(0, 3, n)]
    categories = np.array(["judgement", "clinical", "question"])[rng.integers(0, 3, n)]
    frame = pd.DataFrame({"illness_type": kinds, "illnesses": [["x"]] * n,
                          "warmth": rng.uniform(-1, 1, n), "competence": rng.uniform(-1, 1, n),
                          "category": categories})
    for column in DIMENSION_COLUMNS.values():
        frame[column] = rng.uniform(-1, 1, n)
    frame["top_dimension"] = [max(DIMENSION_COLUMNS, key=lambda d: abs(row[DIMENSION_COLUMNS[d]]))
                              if row["category"] == "judgement" else None for _, row in frame.iterrows()]
    return frame


def test_category_shares_count_both_in_each_group():
    frame = pd.DataFrame({"illness_type": ["mental", "mental", "both", "physical"], "illnesses": [["a"]] * 4,
                          "warmth": [0.1] * 4, "competence": [0.1] * 4,
                          "category": ["judgement", "clinical", "judgement", "question"]})
    shares = category_shares(frame).set_index("group")
    assert shares.loc["mental", "n"] == 3 and shares.loc["mental", "judgement"] == pytest.approx(2 / 3)
    assert shares.loc["physical", "n"] == 2 and shares.loc["physical", "question"] == 0.5
    assert shares.loc["physical", "self_disclosure"] == 0


def test_dimension_scores_compare_judgements_per_dimension_with_holm():
    frame = table()
    judgements = frame[frame["category"] == "judgement"]
    result = dimension_scores(judgements, seed=1).set_index("dimension")
    mental = judgements[judgements["illness_type"].isin(["mental", "both"])]
    physical = judgements[judgements["illness_type"].isin(["physical", "both"])]
    row = result.loc["Fear"]
    assert row["mean_mental"] == pytest.approx(mental["dim_fear"].mean())
    assert row["difference"] == pytest.approx(mental["dim_fear"].mean() - physical["dim_fear"].mean())
    reference = stats.mannwhitneyu(mental["dim_fear"], physical["dim_fear"], alternative="two-sided")
    assert row["p_value"] == pytest.approx(reference.pvalue)
    assert row["difference_ci_low"] < row["difference"] < row["difference_ci_high"]
    assert (result["p_holm"] >= result["p_value"]).all() and len(result) == 9
    assert row["top_share_mental"] == pytest.approx((mental["top_dimension"] == "Fear").mean())


def test_analyse_adds_the_judgement_part_only_when_the_gate_ran():
    frame = table()
    result = analyse(frame, seed=0)
    part = result.judgement.judgements
    n_judged = int((frame["category"] == "judgement").sum())
    assert sum(part.n_by_type.values()) == n_judged and sum(result.n_by_type.values()) == len(frame)
    expected = analyse(frame[frame["category"] == "judgement"].drop(columns="category"), seed=0)
    assert part.comparisons["warmth"].to_dict() == expected.comparisons["warmth"].to_dict()
    pd.testing.assert_frame_equal(part.bias_map, expected.bias_map)
    assert result.to_dict()["judgement"]["dimensions"][0]["dimension"] == "Anger"
    assert analyse(frame.drop(columns="category"), seed=0).judgement is None
    assert analyse(frame.assign(category=None), seed=0).judgement is None


def _tables(result) -> dict[str, pd.DataFrame]:
    return {"quadrants": result.quadrants_by_type, "by_illness": result.quadrants_by_illness,
            "bias_map": result.bias_map, "categories": result.judgement.categories,
            "dimensions": result.judgement.dimensions, "judgement_bias_map": result.judgement.judgements.bias_map}


def test_weights_of_one_give_the_unweighted_analysis():
    """A cascade whose every row weighs 1 and is in the sample: the analysis is the unweighted one (the bootstrap
    of weighted rows draws the ordinary bootstrap's replicates; the tests read every row)."""
    frame = table(seed=4, n=300).assign(judgement_strength=lambda f: np.abs(f["warmth"]))
    weighted = analyse(frame.assign(design_weight=1.0, in_sample=True), seed=2, group_by="illness_type")
    plain = analyse(frame, seed=2, group_by="illness_type")
    for name, expected in _tables(plain).items():
        pd.testing.assert_frame_equal(_tables(weighted)[name], expected, check_dtype=False, rtol=1e-9, obj=name)
    pd.testing.assert_frame_equal(weighted.groups, plain.groups, check_dtype=False, rtol=1e-9)
    for score in ("warmth", "competence"):
        got, want = weighted.comparisons[score].to_dict(), plain.comparisons[score].to_dict()
        assert got.pop("mean_difference_ci") == pytest.approx(want.pop("mean_difference_ci"), rel=1e-9)
        assert got.pop("warnings") == want.pop("warnings")
        numbers = [name for name, value in want.items() if isinstance(value, float)]
        assert [got[name] for name in numbers] == pytest.approx([want[name] for name in numbers], rel=1e-9), score
        assert {name: got[name] for name in want if name not in numbers} == \
            {name: want[name] for name in want if name not in numbers}
    assert weighted.joint.to_dict() == plain.joint.to_dict()


def test_integer_weights_estimate_as_repeated_rows_and_the_tests_read_the_sample():
    frame = table(seed=5, n=240)
    rng = np.random.default_rng(0)
    weights = rng.integers(1, 4, len(frame)).astype(float)
    in_sample = rng.random(len(frame)) < 0.5
    weighted = analyse(frame.assign(design_weight=weights, in_sample=in_sample), seed=1)
    repeated = analyse(frame.loc[frame.index.repeat(weights.astype(int))].reset_index(drop=True), seed=1)
    tested = analyse(frame[in_sample], seed=1)
    for score in ("warmth", "competence"):
        got, rows, sample = (r.comparisons[score] for r in (weighted, repeated, tested))
        assert (got.mean_a, got.mean_b, got.median_a) == pytest.approx((rows.mean_a, rows.mean_b, rows.median_a))
        assert got.n_a == int(frame["illness_type"].isin(["mental", "both"]).sum())  # rows, not weights
        assert got.mann_whitney_p == pytest.approx(sample.mann_whitney_p)
    assert weighted.joint.statistic == pytest.approx(tested.joint.statistic)
    # the category table says how many kept sentences its rows stand for: the repeated table's rows
    assert weighted.judgement.categories["sentences"].tolist() == repeated.judgement.categories["n"].tolist()
    assert weighted.judgement.categories["n"].tolist() != repeated.judgement.categories["n"].tolist()
    for name in ("quadrants", "categories"):
        shares = [c for c in _tables(repeated)[name].columns if c not in ("group", "n", "sentences", "warning")]
        np.testing.assert_allclose(_tables(weighted)[name][shares], _tables(repeated)[name][shares], rtol=1e-9)
    for column in ("share_mental", "share_physical", "difference"):
        np.testing.assert_allclose(weighted.bias_map[column], repeated.bias_map[column], rtol=1e-9)
    np.testing.assert_allclose(weighted.bias_map["p_value"], tested.bias_map["p_value"], rtol=1e-9)
    for column in ("mean_mental", "difference", "top_share_mental", "top_share_physical"):
        np.testing.assert_allclose(weighted.judgement.dimensions[column], repeated.judgement.dimensions[column],
                                   rtol=1e-9)
