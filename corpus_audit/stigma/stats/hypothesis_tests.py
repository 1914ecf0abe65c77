"""Two-sample and paired tests of one score (Mann–Whitney with Kolmogorov–Smirnov, Wilcoxon, t-tests) and
the 2-D energy test of (warmth, competence) points."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats
from scipy.spatial.distance import cdist

from corpus_audit.common.jsonable import JsonRecord
from corpus_audit.stigma.stats.effect_sizes import pooled_sd, rank_biserial_paired
from corpus_audit.stigma.stats.intervals import BOOT_CELLS, bootstrap_mean_difference, percentile_ci
from corpus_audit.stigma.stats.power import minimum_detectable_difference
from corpus_audit.stigma.stats.samples import finite, size_warnings

#: ``two_sample_2d`` subsamples each group to at most this many points (seeded): the pooled distance
#: matrix is (2 * 2000)^2 doubles = 128 MB and the 999 permutations take about a second.
MAX_POINTS_2D = 2000


@dataclass
class GroupComparison(JsonRecord):
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
        low, high = percentile_ci(bootstrap_mean_difference(x, y, n_boot, np.random.default_rng(seed)))
        ci = (float(low), float(high))
    mdd = minimum_detectable_difference(x, y) if x.size >= 2 and y.size >= 2 else nan
    return GroupComparison(label_a, label_b, int(x.size), int(y.size), mean_a, mean_b, median_a, median_b,
                           mean_a - mean_b, ci, u, u_p, r, ks, ks_p, n_boot, warnings, mdd)


# --------------------------------------------------------------------------------------------- 2-D test


@dataclass
class EnergyTest(JsonRecord):
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


# --------------------------------------------------------------------------------------------- paired test


@dataclass
class PairedComparison(JsonRecord):
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
        chunk = max(1, BOOT_CELLS // d.size)
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
class TTest(JsonRecord):
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
            pooled = pooled_sd(x, y)
            if pooled > 0:
                result = stats.ttest_ind(x, y)
                t, p, d = float(result.statistic), float(result.pvalue), float((mean_a - mean_b) / pooled)
    return TTest(label_a, label_b, paired, int(x.size), int(y.size), mean_a, mean_b,
                 mean_a - mean_b if x.size and y.size else nan, t, p, d, warnings)
