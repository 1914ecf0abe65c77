"""Compare the warmth/competence scores of mental vs physical illness mentions, and map them to the AQ-27.

Input: a table with one row per sentence and the columns ``illness_type`` (``"mental"``, ``"physical"`` or
``"both"``), ``illnesses`` (list of canonical illness names) and the scores ``warmth`` and ``competence``
in [-1, 1]. Everything here is a pure function of that table (no plotting, no files written).

Conventions:

* **"both" counts in both groups.** A sentence that mentions a mental and a physical illness is a statement
  about each, so it is added to the mental group *and* to the physical group. The two groups then share
  those sentences, which the two-sample tests (they assume independent samples) do not model; ``analyse``
  reports how many such sentences there are so the reader can judge the overlap.
* **Unscored sentences** (a NaN warmth or competence, e.g. blank text) are left out; every ``n`` counts
  sentences with both scores finite.
* **Quadrants and regions**: a score < 0 is "low" (cold / incompetent), a score ≥ 0 is "high": an exact 0
  counts as high, so every scored sentence has exactly one quadrant.
* **Small groups never raise.** Every result reports its ``n``; a group smaller than ``MIN_GROUP_SIZE``
  adds a warning string to the result; a group with 0 or 1 sentences gives NaN test statistics,
  p-values and confidence intervals (descriptive shares and means stay defined from one sentence on).
* ``to_dict()`` returns plain Python (NaN and infinities become ``None``), so ``json.dumps(...,
  allow_nan=False)`` accepts it.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.spatial.distance import cdist

from corpus_audit.resources import data_file

#: Groups smaller than this get a warning: tests and intervals on fewer sentences are too unstable to read.
MIN_GROUP_SIZE = 30
#: ``two_sample_2d`` subsamples each group to at most this many points (seeded): the pooled distance
#: matrix is (2 * 2000)^2 doubles = 128 MB and the 999 permutations take about a second.
MAX_POINTS_2D = 2000
#: Confidence level of every bootstrap interval.
CI_LEVEL = 0.95
#: Upper bound on bootstrap indices drawn at once (memory stays ~100 MB however large the group).
_BOOT_CELLS = 10_000_000

GROUPS = ("mental", "physical")
ILLNESS_TYPES = ("mental", "physical", "both")
#: Order of the quadrant columns; index = 2 * (warmth < 0) + (competence < 0).
QUADRANTS = ("warm-competent", "warm-incompetent", "cold-competent", "cold-incompetent")
WARMTH_LEVELS = ("low", "high")
COMPETENCE_LEVELS = ("low", "high", "any", "any_or_low", "any_or_high")
_BIAS_MAP_COLUMNS = ("dimension", "warmth", "competence")


class BiasMapError(ValueError):
    """The BIAS-map file is malformed (the message names the file and the line)."""


# --------------------------------------------------------------------------------------------- BIAS map


@dataclass(frozen=True)
class BiasDimension:
    """One AQ-27 dimension of the BIAS map and its region of the warmth/competence plane."""

    dimension: str
    warmth: str  # "low" or "high"
    competence: str  # one of COMPETENCE_LEVELS
    source_note: str = ""

    @property
    def score_competence(self) -> str | None:
        """Competence level of the scored (lenient) region; None = competence free."""
        return self.competence if self.competence in ("low", "high") else None

    @property
    def strict_competence(self) -> str | None:
        """Competence level of the strict region reported beside the score (only for ``any_or_*``)."""
        return self.competence.removeprefix("any_or_") if self.competence.startswith("any_or_") else None

    def to_dict(self) -> dict[str, Any]:
        return {"dimension": self.dimension, "warmth": self.warmth, "competence": self.competence,
                "source_note": self.source_note}


def load_bias_map(path: str | Path | None = None) -> list[BiasDimension]:
    """Read a BIAS-map CSV (``dimension,warmth,competence[,source_note]``); default: the bundled map.

    Values are case-insensitive and stripped. Raises ``BiasMapError`` naming the file and line for a
    missing column, an unknown level, an empty or duplicated dimension, or a file without rows.
    """
    path = Path(path) if path is not None else data_file("lexicons", "bias_map.csv")
    dimensions: list[BiasDimension] = []
    seen: dict[str, int] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header = [name.strip() for name in (reader.fieldnames or [])]
        missing = [name for name in _BIAS_MAP_COLUMNS if name not in header]
        if missing:
            raise BiasMapError(f"{path}, line 1: missing column(s) {', '.join(missing)} "
                               f"(expected {','.join(_BIAS_MAP_COLUMNS)},source_note)")
        reader.fieldnames = header
        for row in reader:
            line = reader.line_num
            dimension = (row.get("dimension") or "").strip()
            warmth = (row.get("warmth") or "").strip().lower()
            competence = (row.get("competence") or "").strip().lower()
            if not dimension:
                raise BiasMapError(f"{path}, line {line}: empty dimension")
            if dimension.lower() in seen:
                raise BiasMapError(f"{path}, line {line}: dimension {dimension!r} already defined "
                                   f"on line {seen[dimension.lower()]}")
            if warmth not in WARMTH_LEVELS:
                raise BiasMapError(f"{path}, line {line}: warmth {warmth!r} for {dimension!r} is not one of "
                                   f"{', '.join(WARMTH_LEVELS)}")
            if competence not in COMPETENCE_LEVELS:
                raise BiasMapError(f"{path}, line {line}: competence {competence!r} for {dimension!r} is not "
                                   f"one of {', '.join(COMPETENCE_LEVELS)}")
            seen[dimension.lower()] = line
            dimensions.append(BiasDimension(dimension, warmth, competence, (row.get("source_note") or "").strip()))
    if not dimensions:
        raise BiasMapError(f"{path}: no dimensions (the file has a header but no rows)")
    return dimensions


# --------------------------------------------------------------------------------------------- helpers


def _finite(values: Any) -> np.ndarray:
    """1-D float array without NaN/inf."""
    array = np.asarray(values, dtype=float).ravel()
    return array[np.isfinite(array)]


def _size_warnings(label: str, n: int) -> list[str]:
    if n < 2:
        return [f"{label}: {n} sentence(s); tests and intervals need at least 2, they are NaN"]
    if n < MIN_GROUP_SIZE:
        return [f"{label}: only {n} sentences (< {MIN_GROUP_SIZE}); statistics are unreliable"]
    return []


def _percentile_ci(samples: np.ndarray) -> tuple[float, float]:
    """Percentile interval at CI_LEVEL of 1-D bootstrap replicates."""
    alpha = (1.0 - CI_LEVEL) / 2.0
    low, high = np.quantile(samples, [alpha, 1.0 - alpha])
    return float(low), float(high)


def jsonable(value: Any) -> Any:
    """Plain-Python copy of ``value``: numpy scalars/arrays and DataFrames converted, NaN/inf -> None."""
    if isinstance(value, pd.DataFrame):
        return [jsonable(record) for record in value.to_dict(orient="records")]
    if hasattr(value, "to_dict") and not isinstance(value, (dict, pd.Series)):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def _require_columns(df: pd.DataFrame, columns: Iterable[str]) -> None:
    missing = [name for name in columns if name not in df.columns]
    if missing:
        raise ValueError(f"the sentence table lacks column(s) {', '.join(missing)} "
                         f"(has: {', '.join(map(str, df.columns))})")


def scored_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows whose warmth and competence are both finite."""
    _require_columns(df, ("warmth", "competence"))
    warmth = pd.to_numeric(df["warmth"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    competence = pd.to_numeric(df["competence"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return df[np.isfinite(warmth) & np.isfinite(competence)]


def group_masks(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """Boolean row masks of the mental and physical groups ("both" rows are in each)."""
    _require_columns(df, ("illness_type",))
    return {group: df["illness_type"].isin([group, "both"]).to_numpy(dtype=bool) for group in GROUPS}


def _quadrant_index(warmth: np.ndarray, competence: np.ndarray) -> np.ndarray:
    return 2 * (warmth < 0).astype(int) + (competence < 0).astype(int)


def _quadrant_counts(df: pd.DataFrame) -> np.ndarray:
    """Counts per quadrant (order QUADRANTS) of the already scored rows of ``df``."""
    index = _quadrant_index(df["warmth"].to_numpy(dtype=float), df["competence"].to_numpy(dtype=float))
    return np.bincount(index, minlength=len(QUADRANTS))


def region_quadrants(warmth: str, competence: str | None) -> np.ndarray:
    """Boolean selector over QUADRANTS of a region (competence None = free)."""
    warm = np.array([label.startswith("warm") for label in QUADRANTS])
    competent = np.array([label.endswith("-competent") for label in QUADRANTS])
    selector = warm if warmth == "high" else ~warm
    if competence == "high":
        selector = selector & competent
    elif competence == "low":
        selector = selector & ~competent
    return selector


# --------------------------------------------------------------------------------------------- quadrants


def quadrant_of(warmth: Any, competence: Any) -> Any:
    """Quadrant label(s) of (warmth, competence) points.

    Scalars give a ``str``; arrays (broadcast together) give an object array of the same shape. Labels are
    QUADRANTS; a score < 0 is low (cold / incompetent) and a score ≥ 0 is high, so 0 counts as high.
    A NaN coordinate gives ``None``.
    """
    w, c = np.broadcast_arrays(np.asarray(warmth, dtype=float), np.asarray(competence, dtype=float))
    labels = np.asarray(QUADRANTS, dtype=object)[_quadrant_index(w, c).ravel()].reshape(w.shape)
    labels[np.isnan(w) | np.isnan(c)] = None
    return labels.item() if labels.ndim == 0 else labels


def _shares_row(group: str, counts: np.ndarray, label: str) -> dict[str, Any]:
    n = int(counts.sum())
    shares = counts / n if n else np.full(len(QUADRANTS), np.nan)
    return {"group": group, "n": n, **dict(zip(QUADRANTS, shares.tolist())),
            "warning": "; ".join(_size_warnings(label, n))}


def quadrant_shares(df: pd.DataFrame, by: str = "illness_type") -> pd.DataFrame:
    """Share of sentences in each quadrant, per group.

    ``by="illness_type"``: two rows, ``mental`` and ``physical`` ("both" sentences count in each), present
    even when empty. ``by="illnesses"``: one row per illness, the ``illnesses`` lists exploded (a sentence
    naming two illnesses counts for each; a plain string is one illness), sorted by n descending.

    Returns a DataFrame with columns ``group``, ``n`` (scored sentences), one column per quadrant (shares
    summing to 1; NaN when n = 0) and ``warning`` ("" unless n < MIN_GROUP_SIZE).
    """
    scored = scored_rows(df)
    if by == "illness_type":
        masks = group_masks(scored)
        rows = [_shares_row(group, _quadrant_counts(scored[masks[group]]), group) for group in GROUPS]
    elif by == "illnesses":
        _require_columns(scored, ("illnesses",))
        lists = scored["illnesses"].map(lambda v: [v] if isinstance(v, str) else list(v) if v is not None else [])
        exploded = scored.assign(illnesses=lists).explode("illnesses").dropna(subset=["illnesses"])
        rows = [_shares_row(str(illness), _quadrant_counts(part), str(illness))
                for illness, part in exploded.groupby("illnesses", sort=True)]
        rows.sort(key=lambda row: -row["n"])
    else:
        raise ValueError(f"by must be 'illness_type' or 'illnesses', not {by!r}")
    return pd.DataFrame(rows, columns=["group", "n", *QUADRANTS, "warning"])


# --------------------------------------------------------------------------------------------- one score


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
    x, y = _finite(a), _finite(b)
    nan = float("nan")
    warnings = _size_warnings(label_a, x.size) + _size_warnings(label_b, y.size)
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
        low, high = _percentile_ci(_bootstrap_mean_difference(x, y, n_boot, np.random.default_rng(seed)))
        ci = (float(low), float(high))
    return GroupComparison(label_a, label_b, int(x.size), int(y.size), mean_a, mean_b, median_a, median_b,
                           mean_a - mean_b, ci, u, u_p, r, ks, ks_p, n_boot, warnings)


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
    warnings = _size_warnings(label_a, n_a) + _size_warnings(label_b, n_b)
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


# --------------------------------------------------------------------------------------------- BIAS map scores


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


def _region_stats(counts: dict[str, np.ndarray], boot: dict[str, np.ndarray], selector: np.ndarray) -> dict[str, float]:
    """Shares, CIs and Fisher p of one region for the mental and physical groups."""
    nan = float("nan")
    n = {group: int(counts[group].sum()) for group in GROUPS}
    k = {group: int(counts[group][selector].sum()) for group in GROUPS}
    share = {group: k[group] / n[group] if n[group] else nan for group in GROUPS}
    out: dict[str, float] = {"share_mental": share["mental"], "share_physical": share["physical"],
                             "difference": share["mental"] - share["physical"]}
    testable = all(n[group] >= 2 for group in GROUPS)
    boot_share = {group: boot[group][:, selector].sum(axis=1) / max(n[group], 1) for group in GROUPS}
    for name, samples in (("share_mental", boot_share["mental"]), ("share_physical", boot_share["physical"]),
                          ("difference", boot_share["mental"] - boot_share["physical"])):
        low, high = _percentile_ci(samples) if testable else (nan, nan)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = float(low), float(high)
    table = [[k["mental"], n["mental"] - k["mental"]], [k["physical"], n["physical"] - k["physical"]]]
    out["p_value"] = float(stats.fisher_exact(table).pvalue) if testable else nan
    return out


def bias_map_scores(df: pd.DataFrame, bias_map: Sequence[BiasDimension] | None = None, n_boot: int = 1000,
                    seed: int = 0) -> pd.DataFrame:
    """Score each AQ-27 dimension: share of mental and of physical sentences in its BIAS-map region.

    One row per dimension (map order). Columns: ``dimension``, ``warmth``, ``competence`` (map levels),
    ``n_mental``, ``n_physical``; for the score (lenient) region ``share_mental``, ``share_physical``,
    ``difference`` (mental - physical), each with ``*_ci_low``/``*_ci_high`` (percentile bootstrap,
    ``CI_LEVEL``), ``p_value`` (two-sided Fisher exact test on the 2x2 table in/out of region x group) and
    ``p_holm`` (Holm over the dimensions of the table); then the same prefixed ``strict_`` for the strict
    region of ``any_or_low``/``any_or_high`` dimensions (NaN for the others; Holm over the strict rows);
    and ``warning``.

    The bootstrap resamples sentences with replacement within each group, independently. Every region is a
    union of quadrants, so a resample is summarised exactly by its quadrant counts, which are drawn from
    the multinomial of the observed quadrant shares (same distribution, cost independent of n); all
    dimensions share the same replicates.
    """
    dimensions = list(bias_map) if bias_map is not None else load_bias_map()
    scored = scored_rows(df)
    masks = group_masks(scored)
    counts = {group: _quadrant_counts(scored[masks[group]]) for group in GROUPS}
    rng = np.random.default_rng(seed)
    boot = {}
    for group in GROUPS:
        n = int(counts[group].sum())
        # An empty group draws zero sentences; any valid probability vector does (its CIs are NaN anyway).
        probabilities = counts[group] / n if n else np.full(len(QUADRANTS), 1.0 / len(QUADRANTS))
        boot[group] = rng.multinomial(n, probabilities, size=n_boot)
    warning = "; ".join(_size_warnings("mental", int(counts["mental"].sum()))
                        + _size_warnings("physical", int(counts["physical"].sum())))
    rows = []
    for dim in dimensions:
        row: dict[str, Any] = {"dimension": dim.dimension, "warmth": dim.warmth, "competence": dim.competence,
                               "n_mental": int(counts["mental"].sum()), "n_physical": int(counts["physical"].sum())}
        lenient = _region_stats(counts, boot, region_quadrants(dim.warmth, dim.score_competence))
        strict = (_region_stats(counts, boot, region_quadrants(dim.warmth, dim.strict_competence))
                  if dim.strict_competence else dict.fromkeys(lenient, float("nan")))
        row.update(lenient)
        row.update({f"strict_{key}": value for key, value in strict.items()})
        row["warning"] = warning
        rows.append(row)
    table = pd.DataFrame(rows)
    table.insert(table.columns.get_loc("p_value") + 1, "p_holm", holm(table["p_value"]))
    table.insert(table.columns.get_loc("strict_p_value") + 1, "strict_p_holm", holm(table["strict_p_value"]))
    return table


# --------------------------------------------------------------------------------------------- all together


@dataclass
class AnalysisResult:
    """Everything ``analyse`` computes; ``to_dict()`` is JSON-serialisable (tables as lists of records)."""

    n_sentences: int
    n_unscored: int
    n_by_type: dict[str, int]  # scored sentences per illness_type value ("both" on its own here)
    comparisons: dict[str, GroupComparison]
    joint: EnergyTest
    quadrants_by_type: pd.DataFrame
    quadrants_by_illness: pd.DataFrame
    bias_map: pd.DataFrame
    warnings: list[str]
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return jsonable({name: getattr(self, name) for name in self.__dataclass_fields__})


def analyse(df: pd.DataFrame, bias_map: Sequence[BiasDimension] | None = None, seed: int = 0) -> AnalysisResult:
    """Run the whole mental-vs-physical analysis on a scored sentence table.

    ``df`` needs ``illness_type``, ``illnesses``, ``warmth`` and ``competence``. Rows with another
    ``illness_type`` (or none) are left out with a warning. Returns type-level comparisons of warmth and
    competence, the 2-D energy test, quadrant shares per type and per illness, the BIAS-map table and the
    de-duplicated warnings of all parts. Deterministic for a given ``seed``.
    """
    _require_columns(df, ("illness_type", "illnesses", "warmth", "competence"))
    warnings: list[str] = []
    scored = scored_rows(df)
    n_unscored = len(df) - len(scored)
    if n_unscored:
        warnings.append(f"{n_unscored} sentence(s) without a finite warmth/competence score were left out")
    types = scored["illness_type"]
    n_other = int((~types.isin(ILLNESS_TYPES)).sum())
    if n_other:
        warnings.append(f"{n_other} sentence(s) with an illness_type other than mental/physical/both were left out")
    n_by_type = {kind: int(types.isin([kind]).sum()) for kind in ILLNESS_TYPES}
    if n_by_type["both"]:
        warnings.append(f"{n_by_type['both']} sentence(s) mention both a mental and a physical illness and count "
                        "in both groups (the groups overlap)")
    masks = group_masks(scored)
    mental, physical = scored[masks["mental"]], scored[masks["physical"]]
    comparisons = {score: compare_groups(mental[score], physical[score], seed=seed)
                   for score in ("warmth", "competence")}
    joint = two_sample_2d(mental[["warmth", "competence"]].to_numpy(dtype=float),
                          physical[["warmth", "competence"]].to_numpy(dtype=float), seed=seed)
    by_type = quadrant_shares(scored, by="illness_type")
    by_illness = quadrant_shares(scored, by="illnesses")
    table = bias_map_scores(scored, bias_map, seed=seed)
    warnings += comparisons["warmth"].warnings
    small = by_illness.loc[by_illness["warning"] != "", "group"].tolist()
    if small:
        warnings.append(f"{len(small)} illness(es) with fewer than {MIN_GROUP_SIZE} sentences: {', '.join(small)}")
    return AnalysisResult(len(df), n_unscored, n_by_type, comparisons, joint, by_type, by_illness, table,
                          list(dict.fromkeys(warnings)), seed)
