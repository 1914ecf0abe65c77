"""A binomial mixed model (logit link, random intercepts) fitted by adaptive Gauss-Hermite quadrature."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from corpus_audit.common.jsonable import JsonRecord
from corpus_audit.stigma.stats.corrections import benjamini_hochberg

#: Gauss-Hermite nodes per group of :func:`mixed_logit`'s adaptive quadrature (lme4's nAGQ; 1 would be Laplace).
QUADRATURE_NODES = 15


@dataclass
class MixedLogit(JsonRecord):
    """A binomial mixed model (logit link) with random intercepts of ``group`` and treatment-coded factors.

    ``effects``: one record per non-reference level of each factor: ``factor``, ``level``, ``reference``,
    ``log_odds_ratio``, ``se``, ``odds_ratio`` and its 95% Wald ``odds_ratio_ci``, two-sided ``p`` (normal), and
    ``p_bh`` (Benjamini-Hochberg over the levels of that factor). ``group_sd``: the SD of the random intercepts.
    """

    n: int
    n_groups: int
    formula: str
    effects: list[dict[str, Any]]
    intercept: float
    group_sd: float
    log_likelihood: float
    method: str
    warnings: list[str] = field(default_factory=list)


def _group_log_likelihood(beta: np.ndarray, log_sd: float, cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                          nodes: np.ndarray, weights: np.ndarray) -> float:
    """Marginal log-likelihood of the groups' binomial cells (X, successes, trials), the random intercept
    integrated out by adaptive Gauss-Hermite quadrature centred on each group's mode."""
    sd = np.exp(log_sd)
    total = 0.0
    for X, k, n in cells:
        eta = X @ beta

        def h(u: np.ndarray, eta: np.ndarray = eta, k: np.ndarray = k, n: np.ndarray = n) -> np.ndarray:
            # log integrand at standard-normal u (one row per u), bound to this group's cells
            linear = eta[None, :] + sd * u[:, None]
            return (k * linear - n * np.logaddexp(0.0, linear)).sum(axis=1) - 0.5 * u * u

        mode = 0.0
        for _ in range(30):  # Newton steps to the integrand's mode
            p = 1.0 / (1.0 + np.exp(-(eta + sd * mode)))
            gradient = sd * (k - n * p).sum() - mode
            curvature = -(sd * sd) * (n * p * (1 - p)).sum() - 1.0
            step = gradient / curvature
            mode -= step
            if abs(step) < 1e-10:
                break
        p = 1.0 / (1.0 + np.exp(-(eta + sd * mode)))
        scale = 1.0 / np.sqrt((sd * sd) * (n * p * (1 - p)).sum() + 1.0)
        u = mode + np.sqrt(2.0) * scale * nodes
        values = h(u) + nodes * nodes  # Gauss-Hermite weights carry exp(-z^2)
        top = values.max()
        total += top + np.log((weights * np.exp(values - top)).sum() * np.sqrt(2.0) * scale / np.sqrt(2 * np.pi))
    return float(total)


def mixed_logit(outcome: Sequence[bool] | np.ndarray, factors: dict[str, tuple[Sequence[str], str]],
                group: Sequence[str]) -> MixedLogit:
    """Fit ``outcome`` (0/1 per observation) ~ factors + (1 | group) by maximum likelihood.

    ``factors``: name -> (level of each observation, reference level). The random intercept is integrated out by
    adaptive Gauss-Hermite quadrature (``QUADRATURE_NODES`` per group, as lme4's ``glmer(nAGQ = 15)``), the
    likelihood maximised by scipy's BFGS over the fixed effects and log SD, and the standard errors taken from the
    numerical Hessian (statsmodels' ``approx_hess3``). Observations are first pooled into binomial cells (group x
    levels), so the fit costs the same for 100 or 100,000 completions. The odds ratios are conditional on the group
    (within a scenario), as glmer's; tests/stigma checks them against conditional logistic regression (statsmodels
    ``ConditionalLogit``), the cross-product ratio and simulated data."""
    import pandas as pd
    from scipy.optimize import minimize
    from statsmodels.tools.numdiff import approx_hess3

    y = np.asarray(outcome, dtype=float).ravel()
    frame = pd.DataFrame({"y": y, "group": [str(g) for g in group]})
    columns, warnings, names = [], [], ["Intercept"]
    for index, (name, (levels, reference)) in enumerate(factors.items()):
        column = f"f{index}"
        frame[column] = [str(level) for level in levels]
        present = sorted(set(frame[column]))
        if reference not in present:
            raise ValueError(f"{name}: the reference level {reference!r} has no observation")
        others = [level for level in present if level != reference]
        columns.append((name, column, reference, others))
        names += [f"{name}[{level}]" for level in others]
        for level in present:
            rate = frame.loc[frame[column] == level, "y"].mean()
            if rate in (0.0, 1.0):
                warnings.append(f"{name} {level}: the outcome is {'never' if rate == 0 else 'always'} seen; its "
                                "odds ratios are unbounded (separation) and their intervals meaningless")
    keys = ["group", *(column for _, column, _, _ in columns)]
    pooled = frame.groupby(keys, sort=True)["y"].agg(["sum", "size"]).reset_index()
    design = np.column_stack([np.ones(len(pooled))] + [(pooled[column] == level).to_numpy(dtype=float)
                                                        for _, column, _, others in columns for level in others])
    cells = [(design[rows], pooled["sum"].to_numpy(dtype=float)[rows], pooled["size"].to_numpy(dtype=float)[rows])
             for rows in pooled.groupby("group", sort=True).indices.values()]
    nodes, weights = np.polynomial.hermite.hermgauss(QUADRATURE_NODES)

    def negative(theta: np.ndarray) -> float:
        return -_group_log_likelihood(theta[:-1], float(np.clip(theta[-1], -12.0, 5.0)), cells, nodes, weights)

    rate = np.clip(y.mean(), 1e-3, 1 - 1e-3)
    start = np.zeros(design.shape[1] + 1)
    start[0], start[-1] = np.log(rate / (1 - rate)), np.log(0.5)
    found = minimize(negative, start, method="BFGS", options={"gtol": 1e-6, "maxiter": 500})
    theta = found.x
    if not found.success and not np.isfinite(found.fun):
        raise ValueError(f"the mixed model did not converge: {found.message}")
    hessian = approx_hess3(theta, negative)
    covariance = np.linalg.pinv(hessian)
    se = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    if theta[-1] < -6:  # the group SD went to 0: its curvature is flat; the fixed effects' SEs stand without it
        covariance = np.linalg.pinv(hessian[:-1, :-1])
        se = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    effects, k = [], 1
    for name, _, reference, others in columns:
        records = []
        for level in others:
            beta, error = float(theta[k]), float(se[k])
            with np.errstate(over="ignore"):  # separation: an interval up to infinity
                interval = (float(np.exp(beta - 1.959964 * error)), float(np.exp(beta + 1.959964 * error)))
            records.append({"factor": name, "level": level, "reference": reference, "log_odds_ratio": beta,
                            "se": error, "odds_ratio": float(np.exp(beta)), "odds_ratio_ci": interval,
                            "p": float(2 * stats.norm.sf(abs(beta / error))) if error > 0 else float("nan")})
            k += 1
        for record, adjusted in zip(records, benjamini_hochberg([r["p"] for r in records])):
            record["p_bh"] = float(adjusted)
        effects += records
    n_groups = len(cells)
    if n_groups < 5:
        warnings.append(f"only {n_groups} groups: the random intercepts' SD is poorly estimated")
    formula = "y ~ " + " + ".join(name for name in factors) + " + (1 | group)"
    return MixedLogit(int(y.size), n_groups, formula, effects, float(theta[0]), float(np.exp(theta[-1])),
                      -float(found.fun), f"maximum likelihood, adaptive Gauss-Hermite quadrature ({QUADRATURE_NODES} "
                      "nodes per group), scipy BFGS, Hessian standard errors", warnings)
