"""The statistics of the probes and the link (stigma/stats/): paired Wilcoxon with the matched-pairs
rank-biserial, Bonferroni, Cronbach's alpha, t-tests with Cohen's d, Pearson's r and Spearman with bootstrap and
permutation, Benjamini-Hochberg, Cohen's kappa and the binomial mixed model, against scipy, statsmodels and cases
computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from corpus_audit.stigma.stats import (agreement, benjamini_hochberg, bonferroni, compare_paired, cronbach_alpha,
                                       mixed_logit, pearson, rank_biserial_paired, rank_correlation, t_test)


def test_paired_comparison_agrees_with_scipy():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0.3, 1, 200), rng.normal(0, 1, 200)
    result = compare_paired(a, b, n_boot=500)
    expected = stats.wilcoxon(a - b)
    assert result.wilcoxon_statistic == expected.statistic and result.wilcoxon_p == pytest.approx(expected.pvalue)
    # T+ from scipy's one-sided statistic; r = (T+ - T-) / (n (n + 1) / 2) when no difference is 0
    t_plus, total = stats.wilcoxon(a - b, alternative="greater").statistic, 200 * 201 / 2
    assert result.rank_biserial == pytest.approx((t_plus - (total - t_plus)) / total)
    assert result.mean_difference == pytest.approx(np.mean(a - b))
    low, high = result.mean_difference_ci
    assert low < result.mean_difference < high and high - low < 0.5
    low, high = result.rank_biserial_ci
    assert 0 < low < result.rank_biserial < high


def test_rank_biserial_by_hand():
    # |d| of the non-zero differences 1, -2, 3 rank 1, 2, 3: T+ = 1 + 3, T- = 2, r = (4 - 2) / 6
    assert rank_biserial_paired(np.array([1.0, 0.0, -2.0, 3.0]))[0] == pytest.approx(1 / 3)
    # ties share their average rank: |d| = 1, 1, 2 rank 1.5, 1.5, 3; T+ = 1.5 + 3, T- = 1.5
    assert rank_biserial_paired(np.array([1.0, -1.0, 2.0]))[0] == pytest.approx((4.5 - 1.5) / 6)
    assert rank_biserial_paired(np.array([[1.0, 2.0], [-1.0, -2.0]])).tolist() == [1.0, -1.0]


def test_paired_comparison_degenerate_cases_give_nan_not_errors():
    same = compare_paired([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert math.isnan(same.wilcoxon_p) and math.isnan(same.rank_biserial) and same.mean_difference == 0
    one = compare_paired([1.0, np.nan], [0.0, 5.0])
    assert one.n_pairs == 1 and math.isnan(one.wilcoxon_p) and one.warnings
    with pytest.raises(ValueError, match="same length"):
        compare_paired([1.0], [1.0, 2.0])


def test_bonferroni():
    assert bonferroni([0.01, 0.2, np.nan, 0.5]).tolist()[:2] == pytest.approx([0.03, 0.6])
    adjusted = bonferroni([0.01, 0.2, np.nan, 0.5])
    assert math.isnan(adjusted[2]) and adjusted[3] == 1.0


def test_cronbach_alpha_by_hand():
    scores = [[1, 2, 3], [2, 3, 3], [3, 3, 5], [4, 5, 4]]
    # item variances (ddof 1): 5/3, 19/12, 11/12, sum 25/6; totals 6, 8, 11, 13 have variance 29/3;
    # alpha = 3/2 (1 - (25/6) / (29/3)) = 3/2 x 33/58 = 99/116
    assert cronbach_alpha(scores) == pytest.approx(99 / 116)
    assert cronbach_alpha(scores + [[np.nan, 1, 1]]) == pytest.approx(99 / 116)  # rows with a NaN are dropped
    identical = [[v, v, v] for v in (1.0, 2.0, 5.0)]
    assert cronbach_alpha(identical) == pytest.approx(1.0)
    assert math.isnan(cronbach_alpha([[1, 2]]))
    with pytest.raises(ValueError, match="2-D"):
        cronbach_alpha([1, 2, 3])


def test_rank_correlation_agrees_with_scipy_and_its_permutation_test():
    rng = np.random.default_rng(3)
    x = rng.normal(size=30)
    y = x + rng.normal(size=30)
    result = rank_correlation(x, y, permutations=1999)
    expected = stats.spearmanr(x, y)
    assert result.rho == pytest.approx(expected.statistic)
    assert result.rho_ci[0] < result.rho < result.rho_ci[1]
    permutation = stats.permutation_test((y,), lambda v: stats.spearmanr(x, v).statistic,
                                         permutation_type="pairings", n_resamples=1999, random_state=0)
    assert result.permutation_p == pytest.approx(permutation.pvalue, abs=0.003)
    unrelated = rank_correlation(x, rng.normal(size=30), permutations=999)
    assert unrelated.permutation_p > 0.05


def test_rank_correlation_with_ties_and_small_samples():
    assert rank_correlation([1, 2, 2, 3, 4], [1, 3, 2, 4, 5]).rho == pytest.approx(
        stats.spearmanr([1, 2, 2, 3, 4], [1, 3, 2, 4, 5]).statistic)
    small = rank_correlation([1, 2], [2, 1])
    assert math.isnan(small.rho) and "at least 3" in small.warnings[0]
    assert math.isnan(rank_correlation([1, 1, 1, 1], [1, 2, 3, 4]).rho)


def test_paired_t_test_by_hand_and_against_scipy():
    # differences 1, 2, 3: mean 2, SD 1, so d_z = 2 and t = 2 sqrt(3)
    result = t_test([2.0, 4.0, 6.0], [1.0, 2.0, 3.0], paired=True, label_a="female", label_b="male")
    assert result.cohens_d == pytest.approx(2.0) and result.t == pytest.approx(2 * math.sqrt(3))
    assert result.p == pytest.approx(2 * stats.t.sf(2 * math.sqrt(3), df=2))
    assert (result.n_a, result.mean_a, result.mean_b, result.mean_difference) == (3, 4.0, 2.0, 2.0)
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.2, 1, 50), rng.normal(0, 1, 50)
    a[7] = np.nan  # the pair is dropped
    result = t_test(a, b, paired=True)
    expected = stats.ttest_rel(np.delete(a, 7), np.delete(b, 7))
    assert result.n_a == 49 and result.t == pytest.approx(expected.statistic) and result.p == pytest.approx(
        expected.pvalue)


def test_independent_t_test_by_hand_and_against_scipy():
    # a = 1, 2, 3 (mean 2, var 1), b = 4, 5, 6, 7 (mean 5.5, var 5/3): pooled var (2 + 5) / 5 = 1.4
    result = t_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], paired=False)
    assert result.cohens_d == pytest.approx(-3.5 / math.sqrt(1.4))
    assert result.t == pytest.approx(-3.5 / math.sqrt(1.4 * (1 / 3 + 1 / 4)))
    expected = stats.ttest_ind([1, 2, 3], [4, 5, 6, 7])
    assert result.p == pytest.approx(expected.pvalue) and (result.n_a, result.n_b) == (3, 4)


def test_t_tests_without_variance_or_values_give_nan():
    assert math.isnan(t_test([1.0, 2.0], [0.0, 1.0], paired=True).p)  # every difference is 1
    assert math.isnan(t_test([1.0], [2.0, 3.0], paired=False).t)
    with pytest.raises(ValueError, match="same length"):
        t_test([1.0, 2.0], [1.0], paired=True)


def test_pearson_agrees_with_scipy_and_a_case_by_hand():
    assert pearson([1, 2, 3, 4], [2, 4, 6, 8]).r == pytest.approx(1.0)
    # x = 1, 2, 3; y = 1, 3, 2: covariance 0.5, variances 1 and 1: r = 0.5
    assert pearson([1, 2, 3], [1, 3, 2]).r == pytest.approx(0.5)
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    y = x + rng.normal(size=40)
    result, expected = pearson(x, y), stats.pearsonr(x, y)
    assert result.r == pytest.approx(expected.statistic) and result.p == pytest.approx(expected.pvalue)
    low, high = result.r_ci
    assert low < result.r < high
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]).r)


def test_benjamini_hochberg_by_hand_and_against_statsmodels():
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.2]
    assert benjamini_hochberg(p) == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.2])
    rng = np.random.default_rng(3)
    random = rng.uniform(0, 0.2, 40)
    assert benjamini_hochberg(random) == pytest.approx(multipletests(random, method="fdr_bh")[1])
    with_nan = benjamini_hochberg([0.01, np.nan, 0.04])
    assert np.isnan(with_nan[1]) and with_nan[[0, 2]] == pytest.approx([0.02, 0.04])


def test_agreement_kappa_by_hand_and_undefined_cases():
    result = agreement([1, 1, 0, 0], [1, 0, 0, 0])
    assert result == {"n": 4, "kappa": pytest.approx(0.5), "agreement": 0.75}  # po 0.75, pe 0.5
    assert agreement([1, 1], [1, 1])["kappa"] is None  # one label only: no chance correction
    assert agreement([1, None, 0], [1, 0, None])["n"] == 1


def _simulated(odds_ratios, n_groups=30, repetitions=10, group_sd=0.8, intercept=-2.0, seed=11):
    rng = np.random.default_rng(seed)
    levels = ["healthy", *odds_ratios]
    offsets = rng.normal(0, group_sd, n_groups)
    rows = []
    for g in range(n_groups):
        for level in levels:
            eta = intercept + (np.log(odds_ratios[level]) if level != "healthy" else 0.0) + offsets[g]
            rows += [(f"s{g}", level, int(y)) for y in rng.random(repetitions) < 1 / (1 + np.exp(-eta))]
    return pd.DataFrame(rows, columns=["group", "level", "y"])


def test_mixed_logit_recovers_known_odds_ratios_within_their_intervals():
    truth = {"mental": 17.45, "physical-high": 13.02, "physical-low": 4.43}
    data = _simulated(truth)
    fit = mixed_logit(data["y"], {"category": (data["level"], "healthy")}, data["group"])
    assert fit.n == len(data) and fit.n_groups == 30 and not fit.warnings
    for effect in fit.effects:
        low, high = effect["odds_ratio_ci"]
        assert low < truth[effect["level"]] < high, effect
        assert effect["p_bh"] < 0.001
    assert 0.4 < fit.group_sd < 1.4  # the true SD is 0.8
    assert fit.formula == "y ~ category + (1 | group)"


def test_mixed_logit_agrees_with_conditional_logistic_regression():
    """Conditional logit (statsmodels) conditions the scenario intercepts out: the same within-group odds ratios."""
    from statsmodels.discrete.conditional_models import ConditionalLogit

    data = _simulated({"a": 5.0, "b": 2.0}, n_groups=25, repetitions=8, seed=5)
    fit = mixed_logit(data["y"], {"condition": (data["level"], "healthy")}, data["group"])
    design = pd.get_dummies(data["level"])[["a", "b"]].astype(float)
    reference = ConditionalLogit(data["y"], design, groups=data["group"]).fit(disp=0)
    for effect in fit.effects:
        assert effect["log_odds_ratio"] == pytest.approx(reference.params[effect["level"]], abs=0.02)
        assert effect["se"] == pytest.approx(reference.bse[effect["level"]], rel=0.03)


def test_mixed_logit_without_group_differences_gives_the_cross_product_ratio():
    """One group-free 2 x 2 table: OR = (a d) / (b c), SE = sqrt(1/a + 1/b + 1/c + 1/d) (Woolf), by hand."""
    a, b, c, d = 30, 70, 10, 90  # exposed: 30 yes, 70 no; healthy: 10 yes, 90 no
    levels = ["ill"] * (a + b) + ["healthy"] * (c + d)
    outcome = [1] * a + [0] * b + [1] * c + [0] * d
    groups = [f"g{i % 10}" for i in range(len(outcome))]  # balanced: every group has the same rates
    fit = mixed_logit(outcome, {"condition": (levels, "healthy")}, groups)
    effect = fit.effects[0]
    assert effect["odds_ratio"] == pytest.approx(a * d / (b * c), rel=0.03)
    assert effect["se"] == pytest.approx(np.sqrt(1 / a + 1 / b + 1 / c + 1 / d), rel=0.05)


def test_mixed_logit_warns_when_a_level_never_shows_the_outcome():
    data = _simulated({"a": 5.0}, n_groups=10, repetitions=5)
    data.loc[data["level"] == "healthy", "y"] = 0
    fit = mixed_logit(data["y"], {"condition": (data["level"], "healthy")}, data["group"])
    assert any("never seen" in warning for warning in fit.warnings)
    assert np.isfinite(fit.effects[0]["odds_ratio"])
