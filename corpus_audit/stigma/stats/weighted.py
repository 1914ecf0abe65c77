"""Estimates from a weighted design: row i stands for ``weights[i]`` sentences.

The cascade (score/cascade.py) has the encoder read every sentence of its band and a Bernoulli sample of the others
with probability p, so a band sentence stands for itself (weight 1) and a sampled sentence outside the band for about
1/p sentences (exactly: the sentences outside the band over those of them sampled, a post-stratified weight).
Means and shares weighted so are unbiased estimates of the full path's (ratio estimators: to first order), and much
tighter than the sample's alone where what is measured sits in the band (judgements, AQ-27 dimensions).

Intervals come from the **bootstrap of the weighted rows**: a group's rows drawn with replacement, as many as it has,
each keeping its weight. The mix of band and sample rows a group (the judgements of mental illnesses, say) holds
then varies between replicates as it varies between cascades; a bootstrap within each stratum held that mix fixed,
and its intervals excluded a true null difference of the judgements 11-12 % of the time where 5 % was due
(docs/scaling.md). With every weight 1 it is the ordinary bootstrap, replicate for replicate. Rank tests have no
weighted form here: they read the rows of a simple random sample (:func:`compare_weighted_groups`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from corpus_audit.stigma.stats.hypothesis_tests import GroupComparison, compare_groups
from corpus_audit.stigma.stats.intervals import BOOT_CELLS, percentile_ci
from corpus_audit.stigma.stats.samples import MIN_GROUP_SIZE, size_warnings


def _checked(values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float arrays of the rows whose value is finite; weights must be positive and finite."""
    x, w = np.asarray(values, dtype=float).ravel(), np.asarray(weights, dtype=float).ravel()
    if x.shape != w.shape:
        raise ValueError(f"{x.size} values but {w.size} weights")
    if not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError("weights must be positive and finite")
    keep = np.isfinite(x)
    return x[keep], w[keep]


def weighted_mean(values: np.ndarray, weights: np.ndarray) -> float:
    """Σ w x / Σ w over the finite values; NaN when none."""
    x, w = _checked(values, weights)
    return float(np.dot(w, x) / w.sum()) if x.size else float("nan")


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The median of the distribution that puts weight w on x: the midpoint of the two middle values where the
    cumulative weight reaches exactly half (as ``np.median`` with equal weights), else the first value past half."""
    x, w = _checked(values, weights)
    if not x.size:
        return float("nan")
    order = np.argsort(x, kind="stable")
    x, cumulative = x[order], np.cumsum(w[order])
    half = cumulative[-1] / 2.0
    i = int(np.searchsorted(cumulative, half))
    if np.isclose(cumulative[i], half) and i + 1 < x.size:
        return float((x[i] + x[i + 1]) / 2.0)
    return float(x[i])


def bootstrap_weighted_means(values: np.ndarray, weights: np.ndarray, n_boot: int,
                             rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` bootstrap replicates of the weighted mean: as many rows as there are drawn with replacement, each
    keeping its weight, so the mix of band and sample rows varies between replicates as it varies between
    cascades (with every weight 1, exactly the replicates of the ordinary bootstrap). ``values`` finite; drawn in
    chunks to bound memory."""
    x, w = _checked(values, weights)
    means = np.empty(n_boot)
    chunk = max(1, BOOT_CELLS // max(x.size, 1))
    for start in range(0, n_boot, chunk):
        k = min(chunk, n_boot - start)
        drawn = rng.integers(0, x.size, size=(k, x.size))
        drawn_weights = w[drawn]
        means[start:start + k] = (drawn_weights * x[drawn]).sum(axis=1) / drawn_weights.sum(axis=1)
    return means


def bootstrap_weighted_counts(categories: np.ndarray, weights: np.ndarray, n_categories: int, n_boot: int,
                              rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` bootstrap replicates of the weighted count of each category (integer codes in [0, n_categories)),
    shape (n_boot, n_categories): the rows drawn with replacement, each keeping its weight, summarised by how many
    of each (weight, category) cell were drawn, which is multinomial with the cells' observed shares (the same
    distribution as drawing the rows, at a cost independent of their number; with every weight 1, exactly the
    ordinary bootstrap's multinomial)."""
    codes, w = np.asarray(categories, dtype=int), np.asarray(weights, dtype=float)
    cell_weights, cell_of_row = np.unique(w, return_inverse=True)
    cells = np.bincount(cell_of_row * n_categories + codes, minlength=cell_weights.size * n_categories)
    n = int(cells.sum())
    shares = cells / n if n else np.full(cells.size, 1.0 / cells.size)
    drawn = rng.multinomial(n, shares, size=n_boot).reshape(n_boot, cell_weights.size, n_categories)
    return np.einsum("bwc,w->bc", drawn, cell_weights)


def weighted_mean_ci(values: np.ndarray, weights: np.ndarray, n_boot: int = 2000,
                     seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI (``CI_LEVEL``) of the weighted mean of ``values`` (at least 2 finite)."""
    x, w = _checked(values, weights)
    return percentile_ci(bootstrap_weighted_means(x, w, n_boot, np.random.default_rng(seed)))


def compare_weighted_groups(a: np.ndarray, b: np.ndarray, weights_a: np.ndarray, weights_b: np.ndarray,
                            tested_a: np.ndarray, tested_b: np.ndarray, *, label_a: str = "mental",
                            label_b: str = "physical", n_boot: int = 2000, seed: int = 0) -> GroupComparison:
    """:func:`compare_groups` under a weighted design. The means, medians and the mean difference with its
    bootstrap CI read every row, weighted; ``n_a``/``n_b`` count those rows. The Mann-Whitney and
    Kolmogorov-Smirnov tests, the rank-biserial and the minimum detectable difference read the ``tested`` rows
    alone (boolean masks: a simple random sample of the group, which the rank tests assume)."""
    a, b, weights_a, weights_b = (np.asarray(v, dtype=float) for v in (a, b, weights_a, weights_b))
    tested_a, tested_b = np.asarray(tested_a, dtype=bool), np.asarray(tested_b, dtype=bool)
    tests = compare_groups(a[tested_a], b[tested_b], label_a=label_a, label_b=label_b, n_boot=n_boot, seed=seed)
    (x, wx), (y, wy) = _checked(a, weights_a), _checked(b, weights_b)
    nan = float("nan")
    ci = (nan, nan)
    if x.size >= 2 and y.size >= 2:
        rng = np.random.default_rng(seed)
        ci = percentile_ci(bootstrap_weighted_means(x, wx, n_boot, rng) - bootstrap_weighted_means(y, wy, n_boot, rng))
    mean_a, mean_b = weighted_mean(x, wx), weighted_mean(y, wy)
    warnings = size_warnings(label_a, x.size) + size_warnings(label_b, y.size)
    for label, n in ((label_a, tests.n_a), (label_b, tests.n_b)):
        if n < 2:
            warnings.append(f"{label}: {n} sentence(s) in the random sample; the tests need at least 2 and are not "
                            "computed")
        elif n < MIN_GROUP_SIZE:
            warnings.append(f"{label}: only {n} sentences in the random sample (< {MIN_GROUP_SIZE}); the tests are "
                            "unreliable")
    return replace(tests, n_a=int(x.size), n_b=int(y.size), mean_a=mean_a, mean_b=mean_b,
                   median_a=weighted_median(x, wx), median_b=weighted_median(y, wy), mean_difference=mean_a - mean_b,
                   mean_difference_ci=(float(ci[0]), float(ci[1])), warnings=warnings)
