"""Reliability: Cronbach's alpha of a scale and the agreement of two coders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def cronbach_alpha(scores: Sequence[Sequence[float]] | np.ndarray) -> float:
    """Cronbach's alpha of ``scores`` (shape (observations, items)): k / (k - 1) (1 - sum of the item variances /
    variance of the observation totals), variances with ddof = 1. Rows with a NaN are dropped; NaN with fewer
    than 2 items, fewer than 2 rows, or totals without variance."""
    matrix = np.asarray(scores, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(f"scores must be a 2-D (observations, items) array, not shape {matrix.shape}")
    matrix = matrix[np.isfinite(matrix).all(axis=1)]
    rows, k = matrix.shape
    if k < 2 or rows < 2:
        return float("nan")
    total_variance = matrix.sum(axis=1).var(ddof=1)
    if total_variance == 0:
        return float("nan")
    return float(k / (k - 1) * (1.0 - matrix.var(axis=0, ddof=1).sum() / total_variance))


def agreement(a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any] | None = None) -> dict[str, Any]:
    """How two coders (or a coder and hand labels) agree on the same items: ``n``, Cohen's ``kappa``
    (``sklearn.metrics.cohen_kappa_score``; None when undefined: fewer than 2 items or one label only, which gives
    no chance-corrected agreement) and the raw ``agreement`` share. Items where either side is None are left out."""
    from sklearn.metrics import cohen_kappa_score

    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if not pairs:
        return {"n": 0, "kappa": None, "agreement": None}
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    kappa = None
    if len(pairs) >= 2 and len(set(x) | set(y)) > 1:
        with np.errstate(invalid="ignore", divide="ignore"):
            value = float(cohen_kappa_score(x, y, labels=list(labels) if labels is not None else None))
        kappa = value if np.isfinite(value) else None
    return {"n": len(pairs), "kappa": kappa, "agreement": sum(u == v for u, v in pairs) / len(pairs)}
