"""Statistics shared by both wings: two-sample comparisons of one score, the 2-D energy test, bootstrap
intervals and Holm's correction (the audit); paired Wilcoxon comparisons, Bonferroni's correction, Cronbach's alpha,
paired and independent t-tests with Cohen's d, Pearson's r and rank correlations with permutation tests (the probes
and the link). Pure functions of arrays: no files, no
plotting.

* **Small groups never raise.** Every result reports its ``n``; a group smaller than ``MIN_GROUP_SIZE`` adds a
  warning string; a group with 0 or 1 values gives NaN statistics, p-values and intervals.
* ``to_dict()`` returns plain Python (NaN and infinities become ``None``).
"""

from __future__ import annotations

import math

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats
from scipy.spatial.distance import cdist

from corpus_audit.common.jsonable import jsonable

#: Groups smaller than this get a warning: tests and intervals on fewer sentences are too unstable to read.
MIN_GROUP_SIZE = 30
#: ``two_sample_2d`` subsamples each group to at most this many points (seeded): the pooled distance
#: matrix is (2 * 2000)^2 doubles = 128 MB and the 999 permutations take about a second.
MAX_POINTS_2D = 2000
#: Confidence level of every bootstrap interval.
CI_LEVEL = 0.95
#: Upper bound on bootstrap indices drawn at once (memory stays ~100 MB however large the group).
_BOOT_CELLS = 10_000_000


def finite(values: Any) -> np.ndarray:
    """1-D float array without NaN/inf."""
    array = np.asarray(values, dtype=float).ravel()
    return array[np.isfinite(array)]


def size_warnings(label: str, n: int) -> list[str]:
    if n < 2:
        return [f"{label}: {n} sentence(s); tests and intervals need at least 2, they are NaN"]
    if n < MIN_GROUP_SIZE:
        return [f"{label}: only {n} sentences (< {MIN_GROUP_SIZE}); statistics are unreliable"]
    return []


def percentile_ci(samples: np.ndarray) -> tuple[float, float]:
    """Percentile interval at CI_LEVEL of 1-D bootstrap replicates."""
    alpha = (1.0 - CI_LEVEL) / 2.0
    low, high = np.quantile(samples, [alpha, 1.0 - alpha])
    return float(low), float(high)


@dataclass
class GroupComparison:
    """Two-sample comparison of one score (e.g. warmth of mental vs physical sentences).

    ``rank_biserial`` = 1 - 2U/(n_a n_b) with U the Mann–Whitney statistic of sample a, i.e.
    P(a < b) - P(a > b) over all pairs: **positive when a's values tend to be lower than b's**
    (with a = mental: mental sentences score lower), in [-1, 1]. ``mean_difference`` = mean_a - mean_b
    with a percentile-bootstrap CI (groups resampled independently).
    """

    label_a: str
    label_b: str
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    median_a: float
    median_b: float
    mean_difference: float
    mean_difference_ci: tuple[float, float]
    mann_whitney_u: float
    mann_whitney_p: float
    rank_biserial: float
    ks_statistic: float
    ks_p: float
    n_boot: int
    warnings: list[str] = field(default_factory=list)
    #: the smallest |mean difference| these group sizes detect with 80% power at alpha 0.05 (two-sided t-test),
    #: in the score's units (Cohen's d times the pooled standard deviation)
    minimum_detectable_difference: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self.__dict__)


def _bootstrap_mean_difference(a: np.ndarray, b: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` bootstrap replicates of mean(a) - mean(b), drawn in chunks to bound memory."""
    differences = np.empty(n_boot)
    chunk = max(1, _BOOT_CELLS // max(a.size, b.size))
    for start in range(0, n_boot, chunk):
        k = min(chunk, n_boot - start)
        mean_a = a[rng.integers(0, a.size, size=(k, a.size))].mean(axis=1)
        mean_b = b[rng.integers(0, b.size, size=(k, b.size))].mean(axis=1)
        differences[start:start + k] = mean_a - mean_b
    return differences


def compare_groups(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, label_a: str = "mental",
                   label_b: str = "physical", n_boot: int = 2000, seed: int = 0) -> GroupComparison:
    """Compare one score between two groups: shapes (n_a,) and (n_b,); NaN values are dropped.

    Mann–Whitney U (two-sided, ``scipy.stats.mannwhitneyu``) with rank-biserial r, two-sample
    Kolmogorov–Smirnov (``scipy.stats.ks_2samp``) and a percentile-bootstrap CI (``CI_LEVEL``, seeded)
    for the difference in means. Tests and CI are NaN when a group has fewer than 2 values.
    """
    x, y = finite(a), finite(b)
    nan = float("nan")
    warnings = size_warnings(label_a, x.size) + size_warnings(label_b, y.size)
    mean_a, mean_b = (float(v.mean()) if v.size else nan for v in (x, y))
    median_a, median_b = (float(np.median(v)) if v.size else nan for v in (x, y))
    u = u_p = r = ks = ks_p = nan
    ci = (nan, nan)
    if x.size >= 2 and y.size >= 2:
        u_result = stats.mannwhitneyu(x, y, alternative="two-sided")
        u, u_p = float(u_result.statistic), float(u_result.pvalue)
        r = 1.0 - 2.0 * u / (x.size * y.size)
        ks_result = stats.ks_2samp(x, y)
        ks, ks_p = float(ks_result.statistic), float(ks_result.pvalue)
        low, high = percentile_ci(_bootstrap_mean_difference(x, y, n_boot, np.random.default_rng(seed)))
        ci = (float(low), float(high))
    mdd = minimum_detectable_difference(x, y) if x.size >= 2 and y.size >= 2 else nan
    return GroupComparison(label_a, label_b, int(x.size), int(y.size), mean_a, mean_b, median_a, median_b,
                           mean_a - mean_b, ci, u, u_p, r, ks, ks_p, n_boot, warnings, mdd)


def mean_ci(values: np.ndarray, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap CI (``CI_LEVEL``) of the mean of ``values`` (at least 2)."""
    rng = np.random.default_rng(seed)
    chunk = max(1, _BOOT_CELLS // values.size)
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
    a_gap = _bootstrap_mean_difference(groups[0], groups[1], n_boot, rng)
    b_gap = _bootstrap_mean_difference(groups[2], groups[3], n_boot, rng)
    low, high = percentile_ci(b_gap - a_gap)
    return float(change), float(low), float(high)


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
    pooled = math.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2))
    return minimum_detectable_effect(a.size, b.size, alpha, power) * pooled


# --------------------------------------------------------------------------------------------- 2-D test


@dataclass
class EnergyTest:
    """Energy-distance two-sample test on 2-D points (warmth, competence).

    ``statistic`` = 2 E|X - Y| - E|X - X'| - E|Y - Y'| over the empirical distributions (V-statistic,
    Euclidean distance; 0 for identical samples). ``p_value`` = (count + 1) / (permutations + 1), count =
    permutations whose statistic is ≥ the observed one. ``n_used_*`` < ``n_*`` when a group was subsampled.
    """

    n_a: int
    n_b: int
    n_used_a: int
    n_used_b: int
    statistic: float
    p_value: float
    permutations: int
    seed: int
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self.__dict__)


def _energy_statistics(distances: np.ndarray, in_a: np.ndarray) -> np.ndarray:
    """Energy statistic for each labelling: ``distances`` (N, N) pooled, ``in_a`` (P, N) boolean -> (P,)."""
    indicator = in_a.astype(float)
    n = indicator[0].sum()
    m = distances.shape[0] - n
    row_sums = distances.sum(axis=1)
    total = row_sums.sum()
    # Block sums of the distance matrix from one product: S_aa = s' D s, S_ab = s' D 1 - S_aa, S_bb by difference.
    within_a = np.einsum("pn,pn->p", indicator @ distances, indicator)
    between = indicator @ row_sums - within_a
    within_b = total - within_a - 2.0 * between
    return 2.0 * between / (n * m) - within_a / n**2 - within_b / m**2


def two_sample_2d(a_points: np.ndarray, b_points: np.ndarray, permutations: int = 999, seed: int = 0,
                  max_points: int = MAX_POINTS_2D, *, label_a: str = "mental",
                  label_b: str = "physical") -> EnergyTest:
    """Energy-distance test of equal 2-D distributions; points of shape (n_a, 2) and (n_b, 2).

    Rows with a NaN are dropped; a group larger than ``max_points`` is subsampled without replacement
    (seeded) so that the pooled distance matrix stays bounded. Statistic and p-value are NaN when a group
    has fewer than 2 points.
    """
    a = np.asarray(a_points, dtype=float).reshape(-1, 2)
    b = np.asarray(b_points, dtype=float).reshape(-1, 2)
    a, b = a[np.isfinite(a).all(axis=1)], b[np.isfinite(b).all(axis=1)]
    n_a, n_b = len(a), len(b)
    warnings = size_warnings(label_a, n_a) + size_warnings(label_b, n_b)
    if n_a < 2 or n_b < 2:
        return EnergyTest(n_a, n_b, n_a, n_b, float("nan"), float("nan"), permutations, seed, warnings)
    rng = np.random.default_rng(seed)
    if n_a > max_points:
        a = a[rng.choice(n_a, max_points, replace=False)]
    if n_b > max_points:
        b = b[rng.choice(n_b, max_points, replace=False)]
    pooled = np.vstack([a, b])
    distances = cdist(pooled, pooled)
    labels = np.zeros(len(pooled), dtype=bool)
    labels[:len(a)] = True
    observed = float(_energy_statistics(distances, labels[None, :])[0])
    count = 0
    batch = 64  # permutations per matrix product: (batch, N) @ (N, N)
    for start in range(0, permutations, batch):
        shuffled = rng.permuted(np.tile(labels, (min(batch, permutations - start), 1)), axis=1)
        # Relative tolerance: a permutation equal to the observed split must count despite rounding.
        count += int((_energy_statistics(distances, shuffled) >= observed - 1e-12 * abs(observed)).sum())
    return EnergyTest(n_a, n_b, len(a), len(b), observed, (count + 1) / (permutations + 1), permutations, seed,
                      warnings)


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values, same order as the input; NaN entries stay NaN and are not counted.

    With the m finite p-values sorted ascending, p_adj(i) = max_{j ≤ i} min(1, (m - j + 1) p(j)).
    """
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    m = finite.size
    if m == 0:
        return adjusted
    order = finite[np.argsort(p[finite], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return adjusted


def bonferroni(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Bonferroni adjusted p-values, min(1, m p), m = the number of finite p-values; NaN entries stay NaN."""
    p = np.asarray(p_values, dtype=float)
    return np.minimum(1.0, p * np.isfinite(p).sum())


# --------------------------------------------------------------------------------------------- paired test


@dataclass
class PairedComparison:
    """Paired comparison of one score (e.g. a model's PLL of mental vs physical illnesses, paired by prompt).

    ``wilcoxon_statistic`` and ``wilcoxon_p``: two-sided Wilcoxon signed-rank test of the differences a - b
    (``scipy.stats.wilcoxon``, zero differences dropped). ``rank_biserial``: the matched-pairs rank-biserial
    correlation (Kerby 2014), (T+ - T-) / (T+ + T-) with T+ and T- the rank sums of the positive and negative
    differences: **positive when a tends to exceed b**, in [-1, 1]. Both ``mean_difference`` (mean of a - b) and
    ``rank_biserial`` have percentile-bootstrap CIs over resampled pairs.
    """

    label_a: str
    label_b: str
    n_pairs: int
    mean_a: float
    mean_b: float
    mean_difference: float
    mean_difference_ci: tuple[float, float]
    wilcoxon_statistic: float
    wilcoxon_p: float
    rank_biserial: float
    rank_biserial_ci: tuple[float, float]
    n_boot: int
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self.__dict__)


def rank_biserial_paired(differences: np.ndarray) -> np.ndarray:
    """Matched-pairs rank-biserial correlation of each row of ``differences`` (shape (..., n)); zeros dropped."""
    d = np.atleast_2d(np.asarray(differences, dtype=float))
    magnitude = np.where(d == 0, np.nan, np.abs(d))
    ranks = stats.rankdata(magnitude, axis=-1, nan_policy="omit")
    ranks = np.where(np.isnan(magnitude), 0.0, ranks)
    positive, negative = (ranks * (d > 0)).sum(axis=-1), (ranks * (d < 0)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (positive - negative) / (positive + negative)


def compare_paired(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, label_a: str = "mental",
                   label_b: str = "physical", n_boot: int = 2000, seed: int = 0) -> PairedComparison:
    """Compare paired scores ``a[i]`` and ``b[i]`` (shapes (n,)); pairs with a NaN are dropped.

    Statistics are NaN with fewer than 2 pairs or when every difference is 0."""
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired samples need the same length, not {a.size} and {b.size}")
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    d = a - b
    nan = float("nan")
    warnings = size_warnings("pairs", d.size)
    mean_a, mean_b = (float(v.mean()) if v.size else nan for v in (a, b))
    statistic = p = r = nan
    difference_ci = r_ci = (nan, nan)
    if d.size >= 2 and np.any(d != 0):
        result = stats.wilcoxon(d, alternative="two-sided")
        statistic, p = float(result.statistic), float(result.pvalue)
        r = float(rank_biserial_paired(d)[0])
        rng = np.random.default_rng(seed)
        chunk = max(1, _BOOT_CELLS // d.size)
        means, correlations = np.empty(n_boot), np.empty(n_boot)
        for start in range(0, n_boot, chunk):
            k = min(chunk, n_boot - start)
            resampled = d[rng.integers(0, d.size, size=(k, d.size))]
            means[start:start + k] = resampled.mean(axis=1)
            correlations[start:start + k] = rank_biserial_paired(resampled)
        difference_ci = percentile_ci(means)
        r_ci = percentile_ci(correlations[np.isfinite(correlations)]) if np.isfinite(correlations).any() \
            else (nan, nan)
    return PairedComparison(label_a, label_b, int(d.size), mean_a, mean_b, mean_a - mean_b if d.size else nan,
                            difference_ci, statistic, p, r, r_ci, n_boot, warnings)


# --------------------------------------------------------------------------------------------- t-tests


@dataclass
class TTest:
    """A two-sided t-test of a vs b with Cohen's d (Lin et al. 2022 report both).

    ``paired``: ``scipy.stats.ttest_rel`` on pairs (a[i], b[i]), d = mean(a - b) / SD(a - b) (d_z, ddof 1), so
    t = d sqrt(n). Otherwise Student's two-sample test (``scipy.stats.ttest_ind``, equal variances, as "independent
    t-test" reads), d = (mean_a - mean_b) / pooled SD. ``n_a`` = ``n_b`` = the pairs when paired; d > 0: a higher.
    """

    label_a: str
    label_b: str
    paired: bool
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    mean_difference: float
    t: float
    p: float
    cohens_d: float
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self.__dict__)


def t_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, paired: bool, label_a: str = "a",
           label_b: str = "b") -> TTest:
    """:class:`TTest` of ``a`` vs ``b``; NaN values (pairs with a NaN, when paired) are dropped. Statistics are NaN
    with fewer than 2 values per side or no variance."""
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    nan = float("nan")
    if paired:
        if x.shape != y.shape:
            raise ValueError(f"paired samples need the same length, not {x.size} and {y.size}")
        keep = np.isfinite(x) & np.isfinite(y)
        x, y = x[keep], y[keep]
        warnings = size_warnings("pairs", x.size)
    else:
        x, y = finite(x), finite(y)
        warnings = size_warnings(label_a, x.size) + size_warnings(label_b, y.size)
    mean_a, mean_b = (float(v.mean()) if v.size else nan for v in (x, y))
    t = p = d = nan
    if x.size >= 2 and y.size >= 2:
        if paired:
            spread = float((x - y).std(ddof=1))
            if spread > 0:
                result = stats.ttest_rel(x, y)
                t, p, d = float(result.statistic), float(result.pvalue), float((x - y).mean() / spread)
        else:
            pooled = np.sqrt(((x.size - 1) * x.var(ddof=1) + (y.size - 1) * y.var(ddof=1)) / (x.size + y.size - 2))
            if pooled > 0:
                result = stats.ttest_ind(x, y)
                t, p, d = float(result.statistic), float(result.pvalue), float((mean_a - mean_b) / pooled)
    return TTest(label_a, label_b, paired, int(x.size), int(y.size), mean_a, mean_b,
                 mean_a - mean_b if x.size and y.size else nan, t, p, d, warnings)


@dataclass
class LinearCorrelation:
    """Pearson's r of paired values with its two-sided p-value and 95% CI (Fisher's z, ``scipy.stats.pearsonr``)."""

    n: int
    r: float
    p: float
    r_ci: tuple[float, float]
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self.__dict__)


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


# --------------------------------------------------------------------------------------------- reliability


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


# --------------------------------------------------------------------------------------------- rank correlation


@dataclass
class RankCorrelation:
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

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self.__dict__)


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


# --------------------------------------------------------------------------------------------- multiple tests, coders


def benjamini_hochberg(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), same order as the input; NaN entries stay NaN
    and are not counted. With the m finite p-values sorted ascending, p_adj(i) = min_{j >= i} min(1, m p(j) / j)."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    m = finite.size
    if m == 0:
        return adjusted
    order = finite[np.argsort(p[finite], kind="stable")]
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return adjusted


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


# --------------------------------------------------------------------------------------------- binomial mixed model


#: Gauss-Hermite nodes per group of :func:`mixed_logit`'s adaptive quadrature (lme4's nAGQ; 1 would be Laplace).
QUADRATURE_NODES = 15


@dataclass
class MixedLogit:
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

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self.__dict__)


def _group_log_likelihood(beta: np.ndarray, log_sd: float, cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                          nodes: np.ndarray, weights: np.ndarray) -> float:
    """Marginal log-likelihood of the groups' binomial cells (X, successes, trials), the random intercept
    integrated out by adaptive Gauss-Hermite quadrature centred on each group's mode."""
    sd = np.exp(log_sd)
    total = 0.0
    for X, k, n in cells:
        eta = X @ beta

        def h(u: np.ndarray) -> np.ndarray:  # log integrand at standard-normal u (one row per u)
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
