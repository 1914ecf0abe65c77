"""Correlations of paired values: Pearson's r, and Spearman's rho with bootstrap and permutation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from corpus_audit.common.jsonable import JsonRecord
from corpus_audit.stigma.stats.intervals import CI_LEVEL, percentile_ci


@dataclass
class LinearCorrelation(JsonRecord):
    """Pearson's r of paired values with its two-sided p-value and 95% CI (Fisher's z, ``scipy.stats.pearsonr``)."""

    n: int
    r: float
    p: float
    r_ci: tuple[float, float]
    warnings: list[str] = field(default_factory=list)


def pearson(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> LinearCorrelation:
    """Pearson's r of ``x`` and ``y``; pairs with a NaN dropped; NaN with fewer than 3 pairs or a constant side."""
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    nan = float("nan")
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return LinearCorrelation(int(x.size), nan, nan, (nan, nan), [f"{x.size} usable pairs: no correlation"])
    result = stats.pearsonr(x, y)
    interval = result.confidence_interval(confidence_level=CI_LEVEL)
    return LinearCorrelation(int(x.size), float(result.statistic), float(result.pvalue),
                             (float(interval.low), float(interval.high)),
                             [f"only {x.size} pairs: the correlation is rough"] if x.size < 10 else [])


# --------------------------------------------------------------------------------------------- rank correlation


@dataclass
class RankCorrelation(JsonRecord):
    """Spearman rank correlation of paired values (e.g. per illness: corpus frequency and the model's score).

    ``rho`` with a percentile-bootstrap CI over resampled pairs; ``permutation_p``: two-sided permutation test,
    (count + 1) / (permutations + 1) with count = shuffles of y whose |rho| is at least the observed |rho|."""

    n: int
    rho: float
    rho_ci: tuple[float, float]
    permutation_p: float
    permutations: int
    n_boot: int
    seed: int
    warnings: list[str] = field(default_factory=list)


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman rho of each row pair of ``x`` and ``y`` (shape (r, n)): Pearson's r of the average ranks."""
    rx, ry = stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1)
    rx, ry = rx - rx.mean(axis=-1, keepdims=True), ry - ry.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(axis=-1) / np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))


def rank_correlation(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, n_boot: int = 2000,
                     permutations: int = 9999, seed: int = 0) -> RankCorrelation:
    """Spearman's rho of ``x`` and ``y`` (shapes (n,)); pairs with a NaN are dropped. NaN with fewer than 3 pairs
    or a constant variable."""
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    nan = float("nan")
    warnings = [f"only {x.size} pairs: a rank correlation needs at least 3"] if x.size < 3 else \
        [f"only {x.size} pairs: the correlation and its interval are rough"] if x.size < 10 else []
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return RankCorrelation(int(x.size), nan, (nan, nan), nan, permutations, n_boot, seed, warnings)
    rho = float(_spearman_rows(x[None], y[None])[0])
    rng = np.random.default_rng(seed)
    index = rng.integers(0, x.size, size=(n_boot, x.size))
    replicates = _spearman_rows(x[index], y[index])
    ci = percentile_ci(replicates[np.isfinite(replicates)])
    count = 0
    for start in range(0, permutations, 1000):
        shuffled = rng.permuted(np.tile(y, (min(1000, permutations - start), 1)), axis=1)
        count += int((np.abs(_spearman_rows(np.broadcast_to(x, shuffled.shape), shuffled))
                      >= abs(rho) - 1e-12).sum())
    return RankCorrelation(int(x.size), rho, ci, (count + 1) / (permutations + 1), permutations, n_boot, seed,
                           warnings)
