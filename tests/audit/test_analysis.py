"""Statistics of corpus_audit.audit.analysis, checked against scipy and hand-computed cases."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from corpus_audit.audit import analysis as A
from corpus_audit.stigma import stats as S
from corpus_audit.stigma.bias_map import BiasDimension, BiasMapError, load_bias_map
from corpus_audit.stigma.quadrants import QUADRANTS, quadrant_of


def six_points() -> pd.DataFrame:
    """Quadrants: mental = rows 1, 2, 3, 6 (WC, WC, CC, CI); physical = rows 4, 5, 6 (WI, CI, CI)."""
    return pd.DataFrame({
        "doc_id": ["d1", "d2", "d3", "d4", "d5", "d6"],
        "illness_type": ["mental", "mental", "mental", "physical", "physical", "both"],
        "illnesses": [["depression"], ["depression"], ["anxiety"], ["asthma"], np.array(["asthma"]),
                      ["asthma", "depression"]],
        "warmth": [0.5, 0.0, -0.4, 0.2, -0.5, -0.1],
        "competence": [0.5, 0.0, 0.1, -0.3, -0.5, -0.2],
    })


def synthetic(n_mental: int, n_physical: int, seed: int = 0, shift: float = 0.3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_mental + n_physical
    warmth = np.concatenate([rng.normal(-shift / 2, 0.5, n_mental), rng.normal(shift / 2, 0.5, n_physical)])
    return pd.DataFrame({"illness_type": ["mental"] * n_mental + ["physical"] * n_physical,
                         "illnesses": [["depression"]] * n_mental + [["asthma"]] * n_physical,
                         "warmth": warmth, "competence": rng.normal(0, 0.5, n)})


# ------------------------------------------------------------------------------------------- BIAS map file


def test_bundled_bias_map_has_the_nine_dimensions_and_their_regions():
    dims = {d.dimension: d for d in load_bias_map()}
    assert sorted(dims) == ["Anger", "Avoidance", "Blame", "Coercion", "Dangerousness", "Fear", "Help", "Pity",
                            "Segregation"]
    assert (dims["Pity"].warmth, dims["Pity"].competence) == ("high", "low")
    assert dims["Pity"].score_competence == "low" and dims["Pity"].strict_competence is None
    assert dims["Anger"].score_competence is None and dims["Anger"].strict_competence == "low"
    assert dims["Fear"].strict_competence == "high"
    assert dims["Help"].warmth == "high" and dims["Help"].score_competence is None


@pytest.mark.parametrize("body, expected", [
    ("dimension,warmth,competence\nAnger,low,any\nFear,lukewarm,any\n", r"line 3: warmth 'lukewarm'"),
    ("dimension,warmth,competence\nPity,high,sometimes\n", r"line 2: competence 'sometimes'"),
    ("dimension,warmth,competence\nAnger,low,any\nanger,high,any\n", r"line 3: .*already defined on line 2"),
    ("dimension,warmth,competence\n,low,any\n", r"line 2: empty dimension"),
    ("dimension,warmth\nAnger,low\n", r"line 1: missing column\(s\) competence"),
    ("dimension,warmth,competence\n", r"no dimensions"),
])
def test_bias_map_errors_name_file_and_line(tmp_path, body, expected):
    path = tmp_path / "my_map.csv"
    path.write_text(body)
    with pytest.raises(BiasMapError, match=expected) as info:
        load_bias_map(path)
    assert str(path) in str(info.value)


# ------------------------------------------------------------------------------------------- quadrants


def test_quadrant_of_zero_counts_as_high_and_nan_gives_none():
    assert quadrant_of(0.0, 0.0) == "warm-competent"
    assert quadrant_of(-0.1, 0.0) == "cold-competent"
    assert quadrant_of(0.0, -1e-9) == "warm-incompetent"
    labels = quadrant_of(np.array([0.3, -0.3, np.nan]), np.array([-0.2, -0.2, 0.5]))
    assert labels.tolist() == ["warm-incompetent", "cold-incompetent", None]


def test_quadrant_shares_by_type_on_six_points():
    table = A.quadrant_shares(six_points(), by="illness_type").set_index("group")
    assert table.loc["mental", "n"] == 4 and table.loc["physical", "n"] == 3  # "both" counted in each
    assert table.loc["mental", list(QUADRANTS)].tolist() == pytest.approx([0.5, 0.0, 0.25, 0.25])
    assert table.loc["physical", list(QUADRANTS)].tolist() == pytest.approx([0.0, 1 / 3, 0.0, 2 / 3])
    assert "only 4 sentences" in table.loc["mental", "warning"]


def test_quadrant_shares_by_illness_explodes_lists():
    table = A.quadrant_shares(six_points(), by="illnesses").set_index("group")
    assert table["n"].to_dict() == {"depression": 3, "asthma": 3, "anxiety": 1}
    assert table.loc["depression", list(QUADRANTS)].tolist() == pytest.approx([2 / 3, 0, 0, 1 / 3])
    assert table.loc["asthma", list(QUADRANTS)].tolist() == pytest.approx([0, 1 / 3, 0, 2 / 3])
    assert table.loc["anxiety", "cold-competent"] == 1.0


def test_quadrant_shares_rejects_unknown_grouping_and_missing_columns():
    with pytest.raises(ValueError, match="by must be"):
        A.quadrant_shares(six_points(), by="doc_id")
    with pytest.raises(ValueError, match="lacks column.*illness_type"):
        A.quadrant_shares(six_points().drop(columns="illness_type"))


# ------------------------------------------------------------------------------------------- one score


def test_rank_biserial_by_hand():
    # a = [1, 2, 3], b = [2, 4, 5]: pairs with a > b: (3, 2) = 1, ties: (2, 2) = 0.5 -> U = 1.5;
    # r = 1 - 2 * 1.5 / 9 = 2/3 = P(a < b) - P(a > b) = (7 - 1) / 9.
    result = S.compare_groups([1, 2, 3], [2, 4, 5])
    assert result.mann_whitney_u == pytest.approx(1.5)
    assert result.rank_biserial == pytest.approx(2 / 3)
    assert S.compare_groups([2, 4, 5], [1, 2, 3]).rank_biserial == pytest.approx(-2 / 3)


def test_compare_groups_matches_scipy():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 1, 80), rng.normal(0.4, 1.5, 120)
    result = S.compare_groups(np.append(a, np.nan), b)  # the NaN is dropped
    u = stats.mannwhitneyu(a, b, alternative="two-sided")
    ks = stats.ks_2samp(a, b)
    assert (result.n_a, result.n_b) == (80, 120)
    assert result.mann_whitney_u == pytest.approx(u.statistic)
    assert result.mann_whitney_p == pytest.approx(u.pvalue)
    assert result.ks_statistic == pytest.approx(ks.statistic)
    assert result.ks_p == pytest.approx(ks.pvalue)
    assert result.mean_a == pytest.approx(a.mean()) and result.median_b == pytest.approx(np.median(b))
    assert result.mean_difference == pytest.approx(a.mean() - b.mean())
    assert result.warnings == []


def test_bootstrap_ci_contains_true_mean_difference_and_is_seeded():
    rng = np.random.default_rng(11)
    a, b = rng.normal(0.3, 1.0, 4000), rng.normal(0.1, 1.0, 4000)
    result = S.compare_groups(a, b, seed=5)
    low, high = result.mean_difference_ci
    assert low < 0.2 < high
    assert low < result.mean_difference < high
    assert high - low < 0.15  # about 2 * 1.96 * sqrt(2 / 4000) = 0.088
    assert S.compare_groups(a, b, seed=5).mean_difference_ci == result.mean_difference_ci


def test_small_and_empty_groups_give_nan_and_warnings():
    empty = S.compare_groups([], [0.1, 0.2, 0.3])
    assert empty.n_a == 0 and math.isnan(empty.mean_a) and math.isnan(empty.mann_whitney_p)
    assert any("mental: 0 sentence" in w for w in empty.warnings)
    single = S.compare_groups([0.5], [0.1, 0.2])
    assert single.mean_a == 0.5 and math.isnan(single.rank_biserial) and math.isnan(single.mean_difference_ci[0])
    small = S.compare_groups(np.linspace(-1, 1, 10), np.linspace(-1, 1, 40))
    assert not math.isnan(small.mann_whitney_p)
    assert small.warnings == ["mental: only 10 sentences (< 30); statistics are unreliable"]
    energy = S.two_sample_2d(np.zeros((1, 2)), np.ones((5, 2)))
    assert math.isnan(energy.statistic) and math.isnan(energy.p_value) and energy.warnings


# ------------------------------------------------------------------------------------------- 2-D test


def test_energy_statistic_equals_scipy_energy_distance_squared_in_1d():
    rng = np.random.default_rng(2)
    u, v = rng.normal(0, 1, 40), rng.normal(0.5, 2, 55)
    result = S.two_sample_2d(np.c_[u, np.zeros_like(u)], np.c_[v, np.zeros_like(v)], permutations=9)
    # scipy's 1-D energy distance is sqrt(2 E|X-Y| - E|X-X'| - E|Y-Y'|) on the empirical distributions.
    assert result.statistic == pytest.approx(stats.energy_distance(u, v) ** 2)


def test_energy_permutation_test_separates_shifted_from_identical():
    rng = np.random.default_rng(7)
    a = rng.normal(0, 0.3, (150, 2))
    shifted = S.two_sample_2d(a, rng.normal(0, 0.3, (150, 2)) + [0.3, 0.0], permutations=199, seed=1)
    assert shifted.p_value == pytest.approx(1 / 200)
    same = S.two_sample_2d(a, rng.normal(0, 0.3, (150, 2)), permutations=199, seed=1)
    assert same.p_value > 0.05
    copy = S.two_sample_2d(a, a.copy(), permutations=199, seed=1)
    assert copy.statistic == pytest.approx(0.0, abs=1e-12) and copy.p_value == 1.0
    assert round(same.p_value * 200) == pytest.approx(same.p_value * 200)  # (count + 1) / (B + 1)


def test_energy_test_subsamples_large_groups():
    rng = np.random.default_rng(0)
    result = S.two_sample_2d(rng.normal(size=(50, 2)), rng.normal(size=(12, 2)), permutations=19, max_points=20)
    assert (result.n_a, result.n_used_a, result.n_b, result.n_used_b) == (50, 20, 12, 12)


# ------------------------------------------------------------------------------------------- BIAS map scores


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04, 0.2 -> 4*0.01, 3*0.03, max(0.09, 2*0.04), max(0.09, 0.2)
    assert S.holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    adjusted = S.holm([0.01, np.nan, 0.04])  # NaN is not part of the family: m = 2
    assert adjusted[0] == pytest.approx(0.02) and math.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.04)
    assert S.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1


def test_bias_map_shares_on_six_points():
    table = A.bias_map_scores(six_points(), n_boot=200).set_index("dimension")
    # mental quadrant counts WC 2, WI 0, CC 1, CI 1 (n 4); physical WC 0, WI 1, CC 0, CI 2 (n 3)
    anger = table.loc["Anger"]  # low warmth, competence any_or_low
    assert (anger.n_mental, anger.n_physical) == (4, 3)
    assert (anger.share_mental, anger.share_physical) == pytest.approx((0.5, 2 / 3))
    assert anger.difference == pytest.approx(-1 / 6)
    assert (anger.strict_share_mental, anger.strict_share_physical) == pytest.approx((0.25, 2 / 3))
    fear = table.loc["Fear"]  # strict region = cold-competent
    assert (fear.strict_share_mental, fear.strict_share_physical) == pytest.approx((0.25, 0.0))
    help_ = table.loc["Help"]
    assert (help_.share_mental, help_.share_physical) == pytest.approx((0.5, 1 / 3))
    assert math.isnan(help_.strict_share_mental) and math.isnan(help_.strict_p_value)
    pity = table.loc["Pity"]  # warm-incompetent
    assert (pity.share_mental, pity.share_physical) == pytest.approx((0.0, 1 / 3))
    assert anger.p_value == pytest.approx(stats.fisher_exact([[2, 2], [2, 1]]).pvalue)
    assert pity.p_value == pytest.approx(stats.fisher_exact([[0, 4], [1, 2]]).pvalue)
    assert table["p_holm"].to_numpy() == pytest.approx(S.holm(table["p_value"].to_numpy()))
    strict = table["strict_p_value"].dropna()
    assert len(strict) == 3 and table["strict_p_holm"].dropna().to_numpy() == pytest.approx(S.holm(strict))
    assert "only 4 sentences" in anger.warning


def test_bias_map_accepts_a_custom_map():
    custom = [BiasDimension("Warm", "high", "any"), BiasDimension("Cold and able", "low", "high")]
    table = A.bias_map_scores(six_points(), custom, n_boot=50)
    assert table["dimension"].tolist() == ["Warm", "Cold and able"]
    assert table["share_mental"].tolist() == pytest.approx([0.5, 0.25])


def test_bias_map_bootstrap_matches_resampling_sentences_and_covers_the_truth():
    df = synthetic(3000, 3000, seed=4, shift=0.3)
    low_warmth = [BiasDimension("Low warmth", "low", "any")]
    row = A.bias_map_scores(df, low_warmth, n_boot=2000, seed=1).iloc[0]
    # True shares: P(N(-0.15, 0.5) < 0) - P(N(0.15, 0.5) < 0).
    truth = stats.norm.cdf(0.3) - stats.norm.cdf(-0.3)
    assert row.difference_ci_low < truth < row.difference_ci_high
    # The multinomial shortcut must give the same interval as literally resampling sentences.
    rng = np.random.default_rng(9)
    cold = {g: (df.loc[df.illness_type == g, "warmth"] < 0).to_numpy() for g in ("mental", "physical")}
    diffs = [rng.choice(cold["mental"], cold["mental"].size).mean()
             - rng.choice(cold["physical"], cold["physical"].size).mean() for _ in range(2000)]
    assert row.difference_ci_low == pytest.approx(np.quantile(diffs, 0.025), abs=0.006)
    assert row.difference_ci_high == pytest.approx(np.quantile(diffs, 0.975), abs=0.006)


# ------------------------------------------------------------------------------------------- analyse


def test_analyse_bundles_everything_and_is_json_serialisable():
    df = synthetic(300, 200, seed=1, shift=0.6)
    df.loc[0, "warmth"] = np.nan
    df.loc[1, "illness_type"] = "both"
    result = A.analyse(df, seed=3)
    assert result.n_sentences == 500 and result.n_unscored == 1
    assert result.n_by_type == {"mental": 298, "physical": 200, "both": 1}  # row 0 unscored, row 1 "both"
    assert result.comparisons["warmth"].n_a == 299 and result.comparisons["warmth"].n_b == 201
    assert result.comparisons["warmth"].rank_biserial > 0.3  # mental warmth is lower by construction
    assert result.comparisons["warmth"].mann_whitney_p < 1e-6
    assert result.joint.p_value == pytest.approx(1 / 1000)
    assert len(result.bias_map) == 9 and result.bias_map.set_index("dimension").loc["Anger", "difference"] > 0
    assert any("left out" in w for w in result.warnings) and any("count in both" in w for w in result.warnings)
    payload = result.to_dict()
    json.dumps(payload, allow_nan=False)
    assert payload["quadrants_by_type"][0]["group"] == "mental"
    assert payload == A.analyse(df, seed=3).to_dict()


def test_analyse_with_a_missing_group_does_not_raise():
    df = six_points()
    df = df[df.illness_type == "mental"]
    result = A.analyse(df)
    assert result.comparisons["competence"].n_b == 0
    assert math.isnan(result.comparisons["competence"].ks_p) and math.isnan(result.joint.p_value)
    assert result.bias_map["p_value"].isna().all() and result.bias_map["share_physical"].isna().all()
    assert any("physical: 0 sentence" in w for w in result.warnings)
    json.dumps(result.to_dict(), allow_nan=False)
    empty = A.analyse(df.iloc[:0])
    assert empty.n_sentences == 0 and empty.quadrants_by_illness.empty
