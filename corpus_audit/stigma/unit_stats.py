"""Statistics whose unit is the sampled thing itself (an illness, a model), not the prompts built from it.

A probe fills many prompts with each illness; the prompts of one illness are not independent observations of the
mental vs physical contrast, the illnesses are (design.md §11). These functions take one value per unit:

* :func:`compare_units`: two groups of units (e.g. 22 mental vs 22 physical illnesses' scores): difference of
  means with a stratified percentile-bootstrap CI (``scipy.stats.bootstrap``, each group resampled on its own) and
  a two-sided permutation test that shuffles the group labels (``scipy.stats.permutation_test``; exact when the
  number of distinct splits is at most ``permutations``), with Hedges' g;
* :func:`partial_rank_correlation`: Spearman's rho of x and y after the ranks of covariates are regressed out of
  both (the rank analogue of a partial correlation), with a bootstrap CI over units and a permutation p-value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from corpus_audit.common.jsonable import JsonRecord

#: Significance level of every "significant" boolean (after correction).
ALPHA = 0.05


@dataclass
class UnitComparison(JsonRecord):
    """Group a vs group b, one value per unit. ``mean_difference`` = mean(a) - mean(b), ``mean_difference_ci`` its
    95% percentile-bootstrap interval; ``permutation_p`` two-sided; ``hedges_g`` the standardised difference (pooled
    SD, small-sample corrected); ``exact``: the p-value enumerates every split."""

    label_a: str
    label_b: str
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    mean_difference: float
    mean_difference_ci: tuple[float, float]
    hedges_g: float
    permutation_p: float
    permutations: int
    exact: bool
    n_boot: int
    warnings: list[str] = field(default_factory=list)


def _mean_difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def hedges_g(a: np.ndarray, b: np.ndarray) -> float:
    """Hedges' g: the mean difference over the pooled SD, times the small-sample correction 1 - 3 / (4 df - 1)."""
    df = a.size + b.size - 2
    if df < 1:
        return float("nan")
    pooled = np.sqrt(((a.size - 1) * np.var(a, ddof=1) + (b.size - 1) * np.var(b, ddof=1)) / df)
    if pooled == 0:
        return float("nan")
    return float((a.mean() - b.mean()) / pooled * (1 - 3 / (4 * df - 1)))


def compare_units(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, label_a: str = "mental",
                  label_b: str = "physical", permutations: int = 9999, n_boot: int = 2000, seed: int = 0
                  ) -> UnitComparison:
    """Compare the units of group a with those of group b (NaN values dropped). NaN statistics with fewer than 2
    units in a group."""
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    nan = float("nan")
    warnings = [f"{label}: {n} unit(s), at least 2 per group are needed" for label, n in ((label_a, a.size),
                                                                                          (label_b, b.size)) if n < 2]
    if warnings:
        return UnitComparison(label_a, label_b, int(a.size), int(b.size), float(np.mean(a)) if a.size else nan,
                              float(np.mean(b)) if b.size else nan, nan, (nan, nan), nan, nan, permutations, False,
                              n_boot, warnings)
    if a.size < 5 or b.size < 5:
        warnings.append(f"{a.size} {label_a} vs {b.size} {label_b} units: only a large difference can show")
    difference = float(a.mean() - b.mean())
    if np.ptp(np.concatenate([a, b])) == 0:
        return UnitComparison(label_a, label_b, int(a.size), int(b.size), float(a.mean()), float(b.mean()),
                              difference, (difference, difference), nan, 1.0, permutations, True, n_boot, warnings)
    rng = np.random.default_rng(seed)
    test = stats.permutation_test((a, b), _mean_difference, permutation_type="independent", vectorized=True,
                                  n_resamples=permutations, alternative="two-sided", random_state=rng)
    boot = stats.bootstrap((a, b), _mean_difference, n_resamples=n_boot, vectorized=True, method="percentile",
                           random_state=rng)
    low, high = boot.confidence_interval
    return UnitComparison(label_a, label_b, int(a.size), int(b.size), float(a.mean()), float(b.mean()), difference,
                          (float(low), float(high)), hedges_g(a, b), float(test.pvalue), permutations,
                          math.comb(a.size + b.size, a.size) <= permutations, n_boot, warnings)


@dataclass
class PartialRankCorrelation(JsonRecord):
    """Spearman's rho of x and y with the covariates' ranks partialled out of both ranks (``covariates`` names
    them). ``rho_ci``: percentile bootstrap over units at level ``confidence``; ``permutation_p``: two-sided,
    shuffling x's residual ranks, (count + 1) / (permutations + 1)."""

    n: int
    rho: float
    rho_ci: tuple[float, float]
    permutation_p: float
    covariates: list[str]
    confidence: float
    permutations: int
    n_boot: int
    warnings: list[str] = field(default_factory=list)


def _residual_ranks(values: np.ndarray, covariates: np.ndarray) -> np.ndarray:
    """Ranks of each row of ``values`` (shape (r, n)) less their least-squares fit on an intercept and the ranks of
    that row's ``covariates`` (shape (r, k, n))."""
    ranks = stats.rankdata(values, axis=-1)
    design = np.concatenate([np.ones((*values.shape, 1)), np.swapaxes(stats.rankdata(covariates, axis=-1), -1, -2)],
                            axis=-1)
    # the pseudo-inverse: a bootstrap resample may repeat one unit so often that a covariate is constant
    coefficients = np.einsum("rkn,rn->rk", np.linalg.pinv(design), ranks)
    return ranks - np.einsum("rnk,rk->rn", design, coefficients)


def _correlation_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = x - x.mean(axis=-1, keepdims=True), y - y.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (x * y).sum(axis=-1) / np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))


def partial_rank_correlation(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                             covariates: dict[str, Sequence[float] | np.ndarray], *, n_boot: int = 2000,
                             permutations: int = 9999, seed: int = 0, confidence: float = 0.95
                             ) -> PartialRankCorrelation:
    """Partial Spearman correlation of ``x`` and ``y`` given ``covariates`` (name -> values, each shape (n,); none:
    Spearman's rho); units with a NaN anywhere are dropped. ``confidence``: the level of ``rho_ci`` (e.g. 1 - 0.05 / m
    for an interval corrected over m tests). NaN with fewer than k + 4 units (k covariates) or a constant
    residual."""
    names = list(covariates)
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    z = np.asarray([np.asarray(covariates[name], dtype=float).ravel() for name in names]).reshape(len(names), x.size)
    keep = np.isfinite(x) & np.isfinite(y) & np.isfinite(z).all(axis=0)
    x, y, z = x[keep], y[keep], z[:, keep]
    nan = float("nan")
    needed = len(names) + 4
    warnings = [(f"only {x.size} units: a partial correlation with {len(names)} covariate(s) needs at least "
                 f"{needed}")] if x.size < needed else []
    if x.size < needed:
        return PartialRankCorrelation(int(x.size), nan, (nan, nan), nan, names, confidence, permutations, n_boot,
                                      warnings)
    rx, ry = _residual_ranks(x[None], z[None])[0], _residual_ranks(y[None], z[None])[0]
    rho = float(_correlation_rows(rx, ry))
    if not np.isfinite(rho):
        return PartialRankCorrelation(int(x.size), nan, (nan, nan), nan, names, confidence, permutations, n_boot,
                                      warnings + ["a variable is constant once the covariates are taken out"])
    rng = np.random.default_rng(seed)
    index = rng.integers(0, x.size, size=(n_boot, x.size))
    resampled = z[:, index].transpose(1, 0, 2)  # (n_boot, k, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = _correlation_rows(_residual_ranks(x[index], resampled), _residual_ranks(y[index], resampled))
    replicates = replicates[np.isfinite(replicates)]
    tail = 50 * (1 - confidence)
    ci = (float(np.percentile(replicates, tail)), float(np.percentile(replicates, 100 - tail)))
    shuffled = rng.permuted(np.tile(rx, (permutations, 1)), axis=1)
    count = int((np.abs(_correlation_rows(shuffled, np.broadcast_to(ry, shuffled.shape))) >= abs(rho) - 1e-12).sum())
    return PartialRankCorrelation(int(x.size), rho, ci, (count + 1) / (permutations + 1), names, confidence,
                                  permutations, n_boot, warnings)
