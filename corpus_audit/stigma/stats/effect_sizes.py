"""Effect sizes written once: the pooled standard deviation behind Cohen's d and the matched-pairs
rank-biserial correlation."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def pooled_sd(a: np.ndarray, b: np.ndarray) -> float:
    """The pooled standard deviation of two samples (ddof 1 each): the denominator of Cohen's d."""
    return math.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2))


def rank_biserial_paired(differences: np.ndarray) -> np.ndarray:
    """Matched-pairs rank-biserial correlation of each row of ``differences`` (shape (..., n)); zeros dropped."""
    d = np.atleast_2d(np.asarray(differences, dtype=float))
    magnitude = np.where(d == 0, np.nan, np.abs(d))
    ranks = stats.rankdata(magnitude, axis=-1, nan_policy="omit")
    ranks = np.where(np.isnan(magnitude), 0.0, ranks)
    positive, negative = (ranks * (d > 0)).sum(axis=-1), (ranks * (d < 0)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (positive - negative) / (positive + negative)
