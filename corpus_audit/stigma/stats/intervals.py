"""Percentile-bootstrap intervals: of a mean, of a difference of means, and of how a mental - physical gap
changes between two corpora."""

from __future__ import annotations

import numpy as np

from corpus_audit.stigma.stats.samples import finite

#: Confidence level of every bootstrap interval.
CI_LEVEL = 0.95
#: Upper bound on bootstrap indices drawn at once (memory stays ~100 MB however large the group).
BOOT_CELLS = 10_000_000


def percentile_ci(samples: np.ndarray) -> tuple[float, float]:
    """Percentile interval at CI_LEVEL of 1-D bootstrap replicates."""
    alpha = (1.0 - CI_LEVEL) / 2.0
    low, high = np.quantile(samples, [alpha, 1.0 - alpha])
    return float(low), float(high)


def bootstrap_mean_difference(a: np.ndarray, b: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` bootstrap replicates of mean(a) - mean(b), drawn in chunks to bound memory."""
    differences = np.empty(n_boot)
    chunk = max(1, BOOT_CELLS // max(a.size, b.size))
    for start in range(0, n_boot, chunk):
        k = min(chunk, n_boot - start)
        mean_a = a[rng.integers(0, a.size, size=(k, a.size))].mean(axis=1)
        mean_b = b[rng.integers(0, b.size, size=(k, b.size))].mean(axis=1)
        differences[start:start + k] = mean_a - mean_b
    return differences


def mean_ci(values: np.ndarray, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap CI (``CI_LEVEL``) of the mean of ``values`` (at least 2)."""
    rng = np.random.default_rng(seed)
    chunk = max(1, BOOT_CELLS // values.size)
    means = np.concatenate([values[rng.integers(0, values.size, size=(min(chunk, n_boot - start), values.size))]
                            .mean(axis=1) for start in range(0, n_boot, chunk)])
    low, high = percentile_ci(means)
    return float(low), float(high)


def gap_change(a_mental: np.ndarray, a_physical: np.ndarray, b_mental: np.ndarray, b_physical: np.ndarray,
               n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """How the mental - physical gap of the means changes from A to B: (gap_B - gap_A, CI low, CI high), the CI
    a percentile bootstrap (``CI_LEVEL``) resampling each of the four groups independently; NaN CI when a group
    has fewer than 2 values (NaN change when one is empty)."""
    groups = [finite(values) for values in (a_mental, a_physical, b_mental, b_physical)]
    nan = float("nan")
    if any(group.size == 0 for group in groups):
        return nan, nan, nan
    change = (groups[2].mean() - groups[3].mean()) - (groups[0].mean() - groups[1].mean())
    if any(group.size < 2 for group in groups):
        return float(change), nan, nan
    rng = np.random.default_rng(seed)
    a_gap = bootstrap_mean_difference(groups[0], groups[1], n_boot, rng)
    b_gap = bootstrap_mean_difference(groups[2], groups[3], n_boot, rng)
    low, high = percentile_ci(b_gap - a_gap)
    return float(change), float(low), float(high)
