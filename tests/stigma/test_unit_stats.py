"""corpus_audit.stigma.unit_stats against scipy and hand-computed cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from corpus_audit.stigma.unit_stats import compare_units, hedges_g, partial_rank_correlation


def test_compare_units_exact_permutation_p_by_enumeration():
    a, b = np.array([1.0, 2.5, 3.0, 4.2]), np.array([0.1, 0.4, 2.0])
    result = compare_units(a, b, permutations=9999, n_boot=500)
    pooled = np.concatenate([a, b])
    observed = abs(a.mean() - b.mean())
    splits = [np.array(index) for index in itertools.combinations(range(7), 4)]
    extreme = sum(abs(pooled[s].mean() - np.delete(pooled, s).mean()) >= observed - 1e-12 for s in splits)
    assert result.exact and result.permutation_p == pytest.approx(extreme / len(splits))  # 35 splits
    assert result.mean_difference == pytest.approx(a.mean() - b.mean())
    low, high = result.mean_difference_ci
    assert low < result.mean_difference < high


def test_hedges_g_by_hand():
    a, b = np.array([2.0, 4.0, 6.0]), np.array([1.0, 2.0, 3.0])
    pooled = np.sqrt((2 * 4.0 + 2 * 1.0) / 4)
    assert hedges_g(a, b) == pytest.approx((4.0 - 2.0) / pooled * (1 - 3 / 15))


def test_compare_units_monte_carlo_agrees_with_welch_on_a_clear_shift():
    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 1.0, 22), rng.normal(0.0, 1.0, 22)
    result = compare_units(a, b)
    welch = stats.ttest_ind(a, b, equal_var=False).pvalue
    assert not result.exact and result.permutation_p == pytest.approx(welch, abs=0.01)
    null = compare_units(rng.normal(size=22), rng.normal(size=22))
    assert null.permutation_p > 0.05


def test_compare_units_too_few_units_warns():
    result = compare_units([1.0], [2.0, 3.0])
    assert result.permutation_p != result.permutation_p and result.warnings  # NaN


def test_partial_rank_correlation_matches_the_formula_with_one_covariate():
    rng = np.random.default_rng(0)
    x, z = rng.normal(size=40), rng.normal(size=40)
    y = 0.3 * x + z + rng.normal(size=40)
    result = partial_rank_correlation(x, y, {"z": z}, n_boot=300, permutations=999)
    rx, ry, rz = (stats.rankdata(v) for v in (x, y, z))
    r_xy, r_xz, r_yz = (stats.pearsonr(u, v)[0] for u, v in ((rx, ry), (rx, rz), (ry, rz)))
    expected = (r_xy - r_xz * r_yz) / np.sqrt((1 - r_xz ** 2) * (1 - r_yz ** 2))
    assert result.rho == pytest.approx(expected)
    assert result.rho_ci[0] < result.rho < result.rho_ci[1]


def test_a_link_through_the_covariate_alone_vanishes():
    rng = np.random.default_rng(1)
    length = rng.integers(1, 6, size=44).astype(float)
    corpus = -length + rng.normal(0, 0.3, 44)  # shorter names are mentioned more often
    model = -length + rng.normal(0, 0.3, 44)  # and a random model's PLL falls with length
    assert stats.spearmanr(corpus, model)[0] > 0.7
    result = partial_rank_correlation(corpus, model, {"pieces": length}, n_boot=300, permutations=999)
    assert result.permutation_p > 0.05 and result.rho_ci[0] < 0 < result.rho_ci[1]
