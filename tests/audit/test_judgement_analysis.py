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
