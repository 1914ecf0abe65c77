"""The statistics of the probes and the link (stigma/stats.py): paired Wilcoxon with the matched-pairs
rank-biserial, Bonferroni, Cronbach's alpha, t-tests with Cohen's d, Pearson's r and Spearman with bootstrap and
permutation, against scipy and cases computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from corpus_audit.stigma.stats import (bonferroni, compare_paired, cronbach_alpha, pearson, rank_biserial_paired,
                                       rank_correlation, t_test)


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
