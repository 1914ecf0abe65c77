"""Corrections for multiple tests: Holm, Bonferroni and Benjamini-Hochberg adjusted p-values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _ascending(p_values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the p-values as floats, an all-NaN output of their shape, the indices of the finite ones sorted ascending):
    what a step-wise correction starts from; NaN entries are not counted."""
    p = np.asarray(p_values, dtype=float)
    finite = np.flatnonzero(np.isfinite(p))
    return p, np.full(p.shape, np.nan), finite[np.argsort(p[finite], kind="stable")]


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values, same order as the input; NaN entries stay NaN and are not counted.

    With the m finite p-values sorted ascending, p_adj(i) = max_{j ≤ i} min(1, (m - j + 1) p(j)).
    """
    p, adjusted, order = _ascending(p_values)
    m = order.size
    if m == 0:
        return adjusted
    scaled = (m - np.arange(m)) * p[order]
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return adjusted


def bonferroni(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Bonferroni adjusted p-values, min(1, m p), m = the number of finite p-values; NaN entries stay NaN."""
    p = np.asarray(p_values, dtype=float)
    return np.minimum(1.0, p * np.isfinite(p).sum())


def benjamini_hochberg(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), same order as the input; NaN entries stay NaN
    and are not counted. With the m finite p-values sorted ascending, p_adj(i) = min_{j >= i} min(1, m p(j) / j)."""
    p, adjusted, order = _ascending(p_values)
    m = order.size
    if m == 0:
        return adjusted
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return adjusted
