"""The audit's analysis: warmth/competence of mental vs physical illness mentions, and the AQ-27 through the BIAS map.

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
* **Weighted rows.** After a cascade (score/cascade.py) the table holds the sentences the encoder read, with
  ``design_weight`` (how many kept sentences each stands for) and ``in_sample`` (the random sample). Every mean,
  median and share is then weighted and its interval a bootstrap of the weighted rows (stigma/stats/weighted.py);
  the rank and energy tests and Fisher's test read the random sample alone; every ``n`` counts rows. Without the
  column every row weighs 1 and nothing changes.
* ``to_dict()`` returns plain Python (NaN and infinities become ``None``), so ``json.dumps(...,
  allow_nan=False)`` accepts it.

The groups, quadrants and regions are defined in :mod:`corpus_audit.stigma.quadrants`, the tests and
intervals in :mod:`corpus_audit.stigma.stats` and the map in :mod:`corpus_audit.stigma.bias_map`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from corpus_audit.common.jsonable import jsonable
from corpus_audit.corpus.dominance import dominant_illnesses
from corpus_audit.score.cascade import DESIGN_WEIGHT_COLUMN, IN_SAMPLE_COLUMN
from corpus_audit.stigma.bias_map import BiasDimension, load_bias_map
from corpus_audit.stigma.judgement import (CATEGORIES, CATEGORY_COLUMN, DIMENSION_COLUMNS, JUDGEMENT,
                                           STRENGTH_COLUMN, TOP_DIMENSION_COLUMN)
from corpus_audit.stigma.quadrants import (GROUPS, ILLNESS_TYPES, QUADRANTS, explode_illnesses, group_masks,
                                           quadrant_index, region_quadrants, require_columns, scored_rows)
from corpus_audit.stigma.stats import (MIN_GROUP_SIZE, EnergyTest, GroupComparison, bootstrap_weighted_counts,
                                       compare_groups, compare_weighted_groups, holm, mean_ci, percentile_ci,
                                       size_warnings, two_sample_2d, weighted_mean, weighted_mean_ci)


def design_weights(df: pd.DataFrame) -> np.ndarray | None:
    """The rows' design weights after a cascade, else None (every row weighs 1)."""
    return df[DESIGN_WEIGHT_COLUMN].to_numpy(dtype=float) if DESIGN_WEIGHT_COLUMN in df else None


def _tested(df: pd.DataFrame) -> pd.DataFrame:
    """The rows the tests read: after a cascade its random sample, else every row."""
    return df[df[IN_SAMPLE_COLUMN].to_numpy(dtype=bool)] if DESIGN_WEIGHT_COLUMN in df else df


def _mean(values: pd.Series, weights: np.ndarray | None) -> float:
    return weighted_mean(values.to_numpy(dtype=float), weights) if weights is not None else float(values.mean())


def _share(hits: pd.Series, weights: np.ndarray | None) -> float:
    """The (weighted) share of True in ``hits``; NaN when empty."""
    if not len(hits):
        return float("nan")
    return _mean(hits.astype(float), weights)


def _compare(a: pd.DataFrame, b: pd.DataFrame, column: str, seed: int) -> GroupComparison:
    """compare_groups of ``column`` between two row sets, weighted after a cascade."""
    weights_a, weights_b = design_weights(a), design_weights(b)
    if weights_a is None or weights_b is None:
        return compare_groups(a[column], b[column], seed=seed)
    return compare_weighted_groups(a[column].to_numpy(dtype=float), b[column].to_numpy(dtype=float), weights_a,
                                   weights_b, a[IN_SAMPLE_COLUMN].to_numpy(dtype=bool),
                                   b[IN_SAMPLE_COLUMN].to_numpy(dtype=bool), seed=seed)


def _quadrant_counts(df: pd.DataFrame) -> np.ndarray:
    """Counts per quadrant (order QUADRANTS) of the already scored rows of ``df``, weighted after a cascade."""
    index = quadrant_index(df["warmth"].to_numpy(dtype=float), df["competence"].to_numpy(dtype=float))
    return np.bincount(index, weights=design_weights(df), minlength=len(QUADRANTS))


def _shares_row(group: str, part: pd.DataFrame, label: str) -> dict[str, Any]:
    n, counts = len(part), _quadrant_counts(part)
    shares = counts / counts.sum() if n else np.full(len(QUADRANTS), np.nan)
    return {"group": group, "n": n, **dict(zip(QUADRANTS, shares.tolist())),
            "warning": "; ".join(size_warnings(label, n))}


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
        rows = [_shares_row(group, scored[masks[group]], group) for group in GROUPS]
    elif by == "illnesses":
        require_columns(scored, ("illnesses",))
        exploded = explode_illnesses(scored, "illnesses")
        rows = [_shares_row(str(illness), part, str(illness))
                for illness, part in exploded.groupby("illnesses", sort=True)]
        rows.sort(key=lambda row: -row["n"])
    else:
        raise ValueError(f"by must be 'illness_type' or 'illnesses', not {by!r}")
    return pd.DataFrame(rows, columns=["group", "n", *QUADRANTS, "warning"])


def _region_stats(counts: dict[str, np.ndarray], boot: dict[str, np.ndarray], tested: dict[str, np.ndarray],
                  rows: dict[str, int], selector: np.ndarray) -> dict[str, float]:
    """Shares, CIs and Fisher p of one region for the mental and physical groups: ``counts`` and ``boot`` (its
    replicates) per quadrant, weighted after a cascade; ``tested``: the quadrant counts of the rows the test reads;
    ``rows``: the rows of each group."""
    nan = float("nan")
    n = {group: float(counts[group].sum()) for group in GROUPS}
    share = {group: float(counts[group][selector].sum()) / n[group] if n[group] else nan for group in GROUPS}
    out: dict[str, float] = {"share_mental": share["mental"], "share_physical": share["physical"],
                             "difference": share["mental"] - share["physical"]}
    testable = all(rows[group] >= 2 for group in GROUPS)
    # A replicate's share is of its own total (a replicate of weighted rows has its own; none for an empty group).
    totals = {group: boot[group].sum(axis=1) for group in GROUPS}
    boot_share = {group: boot[group][:, selector].sum(axis=1) / np.where(totals[group] > 0, totals[group], np.nan)
                  for group in GROUPS}
    for name, samples in (("share_mental", boot_share["mental"]), ("share_physical", boot_share["physical"]),
                          ("difference", boot_share["mental"] - boot_share["physical"])):
        low, high = percentile_ci(samples) if testable else (nan, nan)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = float(low), float(high)
    k = {group: int(tested[group][selector].sum()) for group in GROUPS}
    m = {group: int(tested[group].sum()) for group in GROUPS}
    table = [[k["mental"], m["mental"] - k["mental"]], [k["physical"], m["physical"] - k["physical"]]]
    out["p_value"] = float(stats.fisher_exact(table).pvalue) if all(m[group] >= 2 for group in GROUPS) else nan
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

    The bootstrap resamples sentences with replacement within each group, independently (after a cascade, each
    keeping its weight: stigma/stats/weighted.py). Every region is a union of quadrants, so a
    resample is summarised exactly by its quadrant counts, which are drawn from the multinomial of the observed
    quadrant shares (same distribution, cost independent of n); all dimensions share the same replicates.
    """
    dimensions = list(bias_map) if bias_map is not None else load_bias_map()
    scored = scored_rows(df)
    masks = group_masks(scored)
    parts = {group: scored[masks[group]] for group in GROUPS}
    counts = {group: _quadrant_counts(parts[group]) for group in GROUPS}
    tested = {group: np.bincount(quadrant_index(_tested(part)["warmth"].to_numpy(dtype=float),
                                                _tested(part)["competence"].to_numpy(dtype=float)),
                                 minlength=len(QUADRANTS)) for group, part in parts.items()}
    rows_of = {group: len(part) for group, part in parts.items()}
    rng = np.random.default_rng(seed)
    boot = {}
    for group, part in parts.items():
        weights = design_weights(part)
        if weights is not None:
            index = quadrant_index(part["warmth"].to_numpy(dtype=float), part["competence"].to_numpy(dtype=float))
            boot[group] = bootstrap_weighted_counts(index, weights, len(QUADRANTS), n_boot, rng)
            continue
        n = rows_of[group]
        # An empty group draws zero sentences; any valid probability vector does (its CIs are NaN anyway).
        probabilities = counts[group] / n if n else np.full(len(QUADRANTS), 1.0 / len(QUADRANTS))
        boot[group] = rng.multinomial(n, probabilities, size=n_boot)
    warning = "; ".join(size_warnings("mental", rows_of["mental"]) + size_warnings("physical", rows_of["physical"]))
    rows = []
    for dim in dimensions:
        row: dict[str, Any] = {"dimension": dim.dimension, "warmth": dim.warmth, "competence": dim.competence,
                               "n_mental": rows_of["mental"], "n_physical": rows_of["physical"]}
        lenient = _region_stats(counts, boot, tested, rows_of, region_quadrants(dim.warmth, dim.score_competence))
        strict = (_region_stats(counts, boot, tested, rows_of, region_quadrants(dim.warmth, dim.strict_competence))
                  if dim.strict_competence else dict.fromkeys(lenient, float("nan")))
        row.update(lenient)
        row.update({f"strict_{key}": value for key, value in strict.items()})
        row["warning"] = warning
        rows.append(row)
    table = pd.DataFrame(rows)
    table.insert(table.columns.get_loc("p_value") + 1, "p_holm", holm(table["p_value"]))
    table.insert(table.columns.get_loc("strict_p_value") + 1, "strict_p_holm", holm(table["strict_p_value"]))
    return table


def category_shares(df: pd.DataFrame) -> pd.DataFrame:
    """Share of each judgement category (``CATEGORIES``) among the scored sentences of each group ("both" counts in
    each), with ``n`` (rows) and ``sentences`` (the kept sentences they stand for: their design weights' sum after a
    cascade, else ``n``): what the sentences that mention an illness do, before any score is read as stigma."""
    scored = scored_rows(df)
    masks = group_masks(scored)
    rows = []
    for group in GROUPS:
        part = scored[masks[group] & scored[CATEGORY_COLUMN].notna().to_numpy()]
        labels, weights = part[CATEGORY_COLUMN], design_weights(part)
        rows.append({"group": group, "n": len(part),
                     "sentences": len(part) if weights is None else int(round(float(weights.sum()))),
                     **{category: _share(labels == category, weights) for category in CATEGORIES}})
    return pd.DataFrame(rows, columns=["group", "n", "sentences", *CATEGORIES])


def dimension_scores(judgements: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The nine AQ-27 dimensions read directly from the judgements: per dimension the mean score (in [-1, 1]:
    endorsed minus rejected) of mental and of physical judgements, their difference with a bootstrap CI and the
    Mann-Whitney p (Holm over the nine), and the share of each group's judgements whose top dimension it is."""
    masks = group_masks(judgements)
    rows = []
    parts = {group: judgements[masks[group]] for group in GROUPS}
    for dimension, column in DIMENSION_COLUMNS.items():
        comparison = _compare(parts["mental"], parts["physical"], column, seed)
        rows.append({"dimension": dimension, "n_mental": comparison.n_a, "n_physical": comparison.n_b,
                     "mean_mental": comparison.mean_a, "mean_physical": comparison.mean_b,
                     "difference": comparison.mean_difference,
                     "difference_ci_low": comparison.mean_difference_ci[0],
                     "difference_ci_high": comparison.mean_difference_ci[1],
                     "p_value": comparison.mann_whitney_p,
                     **{f"top_share_{group}": _share(part[TOP_DIMENSION_COLUMN] == dimension, design_weights(part))
                        for group, part in parts.items()}})
    table = pd.DataFrame(rows)
    table.insert(table.columns.get_loc("p_value") + 1, "p_holm", holm(table["p_value"]))
    return table


def by_group(df: pd.DataFrame, field: str, max_groups: int = 20) -> pd.DataFrame:
    """Where the stigma sits: per value of ``field`` (a keep-field, e.g. the subreddit or the source file), the
    ``max_groups`` values with the most scored sentences (the rest pooled as "(other)"). Per value and illness type:
    sentences, judgements and their share, mean judgement strength and mean warmth and competence of the
    judgements (each with a bootstrap CI where it has at least 2 values). One illness type alone still gives every
    descriptive figure: nothing needs the other group."""
    require_columns(df, (field,))
    scored = scored_rows(df)
    values = scored[field].astype("string").fillna("(none)")
    counts = values.value_counts()
    keep = set(counts.index[:max_groups])
    values = values.where(values.isin(keep), "(other)")
    judged = CATEGORY_COLUMN in scored
    rows = []
    for value, part in scored.groupby(values, sort=False):
        masks = group_masks(part)
        for group in GROUPS:
            rows_of = part[masks[group]]
            if rows_of.empty:
                continue
            row: dict[str, Any] = {"group": value, "illness_type": group, "n": len(rows_of)}
            weights = design_weights(rows_of)
            if judged:
                judging = rows_of[CATEGORY_COLUMN] == JUDGEMENT
                judgements = rows_of[judging]
                row.update({"n_judgements": len(judgements), "judgement_share": _share(judging, weights),
                            "mean_judgement_strength": _mean(rows_of[STRENGTH_COLUMN], weights)})
            else:
                judgements = rows_of
            judgement_weights = design_weights(judgements)
            for score in ("warmth", "competence"):
                values_of = judgements[score].to_numpy(dtype=float)
                row[f"{score}_mean"] = _mean(judgements[score], judgement_weights) if values_of.size else np.nan
                low, high = ((mean_ci(values_of) if judgement_weights is None
                              else weighted_mean_ci(values_of, judgement_weights))
                             if values_of.size >= 2 else (np.nan, np.nan))
                row[f"{score}_ci_low"], row[f"{score}_ci_high"] = low, high
            rows.append(row)
    table = pd.DataFrame(rows)
    return table.sort_values(["n", "group"], ascending=[False, True], kind="stable").reset_index(drop=True) \
        if not table.empty else table


# --------------------------------------------------------------------------------------------- all together


@dataclass
class GroupAnalysis:
    """The mental-vs-physical analysis of one set of sentences (all of them, or the judgements only)."""

    n_by_type: dict[str, int]  # scored sentences per illness_type value ("both" on its own here)
    comparisons: dict[str, GroupComparison]
    joint: EnergyTest
    quadrants_by_type: pd.DataFrame
    quadrants_by_illness: pd.DataFrame
    bias_map: pd.DataFrame
    warnings: list[str]


@dataclass
class JudgementAnalysis:
    """What the sentences do (category shares per group) and the analysis restricted to judgements about people,
    with the nine AQ-27 dimensions read directly (``dimensions``)."""

    categories: pd.DataFrame
    judgements: GroupAnalysis
    dimensions: pd.DataFrame


@dataclass
class AnalysisResult(GroupAnalysis):
    """Everything ``analyse`` computes; ``to_dict()`` is JSON-serialisable (tables as lists of records). The fields
    of :class:`GroupAnalysis` analyse every sentence; ``judgement`` (None for axes without the judgement gate) the
    judgements."""

    n_sentences: int = 0
    n_unscored: int = 0
    seed: int = 0
    judgement: JudgementAnalysis | None = None
    group_by: str | None = None
    groups: pd.DataFrame | None = None  # by_group(df, group_by)

    def to_dict(self) -> dict[str, Any]:
        return jsonable({name: getattr(self, name) for name in self.__dataclass_fields__})


def _group_analysis(scored: pd.DataFrame, bias_map: Sequence[BiasDimension] | None, seed: int) -> GroupAnalysis:
    warnings: list[str] = []
    types = scored["illness_type"]
    n_by_type = {kind: int(types.isin([kind]).sum()) for kind in ILLNESS_TYPES}
    masks = group_masks(scored)
    mental, physical = scored[masks["mental"]], scored[masks["physical"]]
    comparisons = {score: _compare(mental, physical, score, seed) for score in ("warmth", "competence")}
    joint = two_sample_2d(_tested(mental)[["warmth", "competence"]].to_numpy(dtype=float),
                          _tested(physical)[["warmth", "competence"]].to_numpy(dtype=float), seed=seed)
    by_illness = quadrant_shares(scored, by="illnesses")
    warnings += comparisons["warmth"].warnings
    small = by_illness.loc[by_illness["warning"] != "", "group"].tolist()
    if small:
        warnings.append(f"{len(small)} illness(es) with fewer than {MIN_GROUP_SIZE} sentences: {', '.join(small)}")
    return GroupAnalysis(n_by_type, comparisons, joint, quadrant_shares(scored, by="illness_type"), by_illness,
                         bias_map_scores(scored, bias_map, seed=seed), warnings)


def analyse(df: pd.DataFrame, bias_map: Sequence[BiasDimension] | None = None, seed: int = 0,
            group_by: str | None = None) -> AnalysisResult:
    """Run the whole mental-vs-physical analysis on a scored sentence table.

    ``df`` needs ``illness_type``, ``illnesses``, ``warmth`` and ``competence``. Rows with another
    ``illness_type`` (or none) are left out with a warning. Returns type-level comparisons of warmth and
    competence, the 2-D energy test, quadrant shares per type and per illness, the BIAS-map table and the
    de-duplicated warnings of all parts; where the table has the judgement gate's columns (``category``, the
    dimension scores), the same over judgements, the category shares and the direct AQ-27 dimension scores.
    ``group_by``: a column (keep-field) to break the figures down by (:func:`by_group`). Deterministic for a given
    ``seed``.
    """
    require_columns(df, ("illness_type", "illnesses", "warmth", "competence"))
    warnings: list[str] = []
    scored = scored_rows(df)
    n_unscored = len(df) - len(scored)
    if n_unscored:
        warnings.append(f"{n_unscored} sentence(s) without a finite warmth/competence score were left out")
    types = scored["illness_type"]
    n_other = int((~types.isin(ILLNESS_TYPES)).sum())
    if n_other:
        warnings.append(f"{n_other} sentence(s) with an illness_type other than mental/physical/both were left out")
    every = _group_analysis(scored, bias_map, seed)
    for dominant in dominant_illnesses(scored):
        warnings.append(f"{dominant.illness} is in {dominant.share:.0%} of the {dominant.group} sentences "
                        f"({dominant.sentences} of {dominant.group_sentences}): the {dominant.group} group is mostly "
                        f"{dominant.illness}; read the per-illness figures beside the group comparison")
    if every.n_by_type["both"]:
        warnings.append(f"{every.n_by_type['both']} sentence(s) mention both a mental and a physical illness and "
                        "count in both groups (the groups overlap)")
    judgement = None
    if CATEGORY_COLUMN in scored and scored[CATEGORY_COLUMN].notna().any():
        judgements = scored[scored[CATEGORY_COLUMN] == JUDGEMENT]
        part = _group_analysis(judgements, bias_map, seed)
        judgement = JudgementAnalysis(category_shares(scored), part, dimension_scores(judgements, seed=seed))
        warnings += [f"judgements: {warning}" for warning in part.warnings]
    return AnalysisResult(**{**vars(every), "warnings": list(dict.fromkeys(warnings + every.warnings))},
                          n_sentences=len(df), n_unscored=n_unscored, seed=seed, judgement=judgement,
                          group_by=group_by, groups=by_group(scored, group_by) if group_by else None)
