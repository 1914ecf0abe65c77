"""The weighted design's statistics (stigma/stats/weighted.py) against hand computations, numpy and scipy, and the
cascade's design simulated: unbiased where the unweighted rows are not, intervals that cover."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_audit.stigma import stats as S


def test_weighted_mean_and_median_by_hand_and_as_repeated_rows():
    x, w = np.array([1.0, 2.0, 10.0, np.nan]), np.array([3.0, 1.0, 1.0, 5.0])
    assert S.weighted_mean(x, w) == pytest.approx((3 + 2 + 10) / 5)  # the NaN row and its weight are dropped
    assert S.weighted_median(x, w) == 1.0  # 1 stands for three of five
    rng = np.random.default_rng(0)
    values, counts = rng.normal(size=41), rng.integers(1, 5, size=41)
    repeated = np.repeat(values, counts)
    assert S.weighted_mean(values, counts) == pytest.approx(repeated.mean())
    assert S.weighted_median(values, counts) == pytest.approx(np.median(repeated))
    for n in (1, 2, 7, 8):  # equal weights: numpy's median, odd and even
        assert S.weighted_median(values[:n], np.ones(n)) == pytest.approx(np.median(values[:n]))
    assert np.isnan(S.weighted_mean(np.array([np.nan]), np.array([1.0])))
    with pytest.raises(ValueError, match="positive"):
        S.weighted_mean(np.ones(2), np.array([1.0, 0.0]))


def test_one_weight_is_the_ordinary_comparison():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 1, 60), rng.normal(0.4, 1, 45)
    plain = S.compare_groups(a, b, seed=5)
    weighted = S.compare_weighted_groups(a, b, np.ones(60), np.ones(45), np.ones(60, bool), np.ones(45, bool), seed=5)
    for name in ("n_a", "n_b", "mean_a", "mean_b", "median_a", "median_b", "mean_difference", "mann_whitney_p",
                 "ks_p", "rank_biserial", "minimum_detectable_difference"):
        assert getattr(weighted, name) == pytest.approx(getattr(plain, name), rel=1e-12), name
    # with every weight 1 the bootstrap of weighted rows draws the ordinary bootstrap's replicates
    np.testing.assert_allclose(weighted.mean_difference_ci, plain.mean_difference_ci, rtol=1e-12)
    assert S.weighted_mean_ci(a, np.ones(60), seed=2) == pytest.approx(S.mean_ci(a, seed=2), rel=1e-12)
    codes = rng.integers(0, 4, 50)
    counts = S.bootstrap_weighted_counts(codes, np.ones(50), 4, 200, np.random.default_rng(3))
    expected = np.random.default_rng(3).multinomial(50, np.bincount(codes, minlength=4) / 50, size=200)
    np.testing.assert_array_equal(counts, expected)


def test_the_tests_read_only_the_tested_rows():
    rng = np.random.default_rng(2)
    a, b = rng.normal(0, 1, 80), rng.normal(0, 1, 70)
    tested_a, tested_b = rng.random(80) < 0.5, rng.random(70) < 0.5
    weighted = S.compare_weighted_groups(a, b, np.full(80, 2.0), np.full(70, 2.0), tested_a, tested_b)
    assert weighted.mann_whitney_p == pytest.approx(S.compare_groups(a[tested_a], b[tested_b]).mann_whitney_p)
    assert (weighted.n_a, weighted.n_b) == (80, 70) and weighted.mean_a == pytest.approx(a.mean())
    few = S.compare_weighted_groups(a, b, np.ones(80), np.ones(70), np.arange(80) < 1, np.arange(70) < 10)
    assert np.isnan(few.mann_whitney_p) and np.isfinite(few.mean_difference_ci).all()  # the interval reads every row
    assert few.warnings == ["mental: 1 sentence(s) in the random sample; the tests need at least 2 and are not "
                            "computed", "physical: only 10 sentences in the random sample (< 30); the tests are "
                            "unreliable"]


def test_the_cascade_design_is_unbiased_and_its_intervals_cover():
    """A population whose high values a triage puts in a band read whole, the rest sampled at p: the weighted mean
    is unbiased and its stratified-bootstrap interval covers the population mean; the unweighted mean of the same
    rows is far off."""
    rng = np.random.default_rng(7)
    population = rng.exponential(1.0, 3000)
    band = population + rng.normal(0, 0.3, population.size) > 1.5
    p, truth = 0.2, population.mean()
    estimates, naive, covered = [], [], 0
    for _ in range(200):
        sample = rng.random(population.size) < p
        read = band | sample
        # post-stratified, as the cascade does: the sampled rows outside the band stand for all the rows there
        weights = np.where(band, 1.0, (~band).sum() / (sample & ~band).sum())[read]
        estimates.append(S.weighted_mean(population[read], weights))
        naive.append(population[read].mean())
        low, high = S.weighted_mean_ci(population[read], weights, n_boot=400, seed=int(rng.integers(1 << 30)))
        covered += low <= truth <= high
    standard_error = np.std(estimates) / np.sqrt(len(estimates))
    assert abs(np.mean(estimates) - truth) < 4 * standard_error
    assert np.mean(naive) - truth > 20 * standard_error
    assert covered / 200 >= 0.93  # the band is a census, so a superpopulation interval errs on the wide side


def test_weighted_counts_are_the_rows_drawn_with_their_weights():
    """A replicate draws as many rows as there are, each keeping its weight: it always holds n rows, and its
    weighted count of a category has mean sum(w) over that category (the observed weighted count)."""
    codes = np.array([0, 0, 1, 2, 2, 2, 1, 0])
    weights = np.array([1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 5.0, 5.0])
    boot = S.bootstrap_weighted_counts(codes, weights, 3, 20_000, np.random.default_rng(0))
    assert boot.mean(axis=0) == pytest.approx(np.bincount(codes, weights, minlength=3), rel=0.03)
    assert len(np.unique(boot.sum(axis=1))) > 1  # the mix of weights varies between replicates
    assert ((boot.sum(axis=1) - 8) % 4 == 0).all()  # 8 rows drawn, each weighing 1 or 5: 8 + 4 x (5s drawn)
