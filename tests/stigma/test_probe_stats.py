"""The statistics of the probes and the link (stigma/stats.py): paired Wilcoxon with the matched-pairs
rank-biserial, Bonferroni, Cronbach's alpha and Spearman with bootstrap and permutation, against scipy and cases
computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from corpus_audit.stigma.stats import (bonferroni, compare_paired, cronbach_alpha, rank_biserial_paired,
                                       rank_correlation)


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
