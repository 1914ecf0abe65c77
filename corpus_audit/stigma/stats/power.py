"""Power: the smallest effect and difference a two-sample comparison of given sizes detects."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from corpus_audit.stigma.stats.effect_sizes import pooled_sd


def minimum_detectable_effect(n_a: int, n_b: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Cohen's d that a two-sided two-sample t-test detects with ``power`` at ``alpha`` for groups of ``n_a`` and
    ``n_b``: the d at which the noncentral t gives that power (what statsmodels' ``TTestIndPower.solve_power``
    solves; scipy here, as importing statsmodels costs a second of every audit); NaN below 2 per group."""
    if n_a < 2 or n_b < 2:
        return float("nan")
    from scipy.optimize import brentq

    df = n_a + n_b - 2
    critical = stats.t.ppf(1 - alpha / 2, df)
    scale = math.sqrt(n_a * n_b / (n_a + n_b))

    def shortfall(d: float) -> float:
        noncentrality = d * scale
        # the wrong-sign tail is negligible where scipy's noncentral t gives NaN for it (far in the tail)
        wrong_sign = float(np.nan_to_num(stats.nct.cdf(-critical, df, noncentrality)))
        return float(stats.nct.sf(critical, df, noncentrality)) + wrong_sign - power

    # at d = 0 the power is alpha; a noncentrality 10 above the critical value gives power 1 (and keeps nct finite)
    return float(brentq(shortfall, 0.0, (critical + 10) / scale))


def minimum_detectable_difference(a: np.ndarray, b: np.ndarray, alpha: float = 0.05, power: float = 0.8) -> float:
    """:func:`minimum_detectable_effect` of the sizes of ``a`` and ``b`` in their units: times the pooled standard
    deviation."""
    return minimum_detectable_effect(a.size, b.size, alpha, power) * pooled_sd(a, b)
