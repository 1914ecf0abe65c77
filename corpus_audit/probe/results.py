"""Typed views of what a probe's ``summary.json`` concludes, for its readers (the command line, ``probe compare``,
the verdict): fields with names where they read nested dicts by string keys before. The file itself is unchanged;
a summary that lacks a part is named (:class:`~corpus_audit.probe.folder.ProbeOutputError`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from corpus_audit.probe.folder import ProbeOutputError, ProbeSummary

#: The keys of a record's p-values, the corrected one first: the p its ``significant`` follows is the first present
#: (controlled: Holm over dimensions, the permutation p overall; paper: Bonferroni over dimensions, Wilcoxon overall).
P_KEYS = ("p_holm", "p_bonferroni", "permutation_p", "wilcoxon_p")


#: Stars of Table 2 by adjusted p-value, strictest first.
STARS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))


def stars(p: float | None) -> str:
    """The significance mark of ``p`` ("n.s." above 0.05; empty where there is no p)."""
    if p is None or not math.isfinite(p):
        return ""
    return next((mark for limit, mark in STARS if p < limit), "n.s.")


def _interval(value: Any) -> tuple[float | None, float | None]:
    """A confidence interval as summary.json holds it ([low, high], or null where it could not be computed)."""
    low, high = value or (None, None)
    return low, high


def corrected_p(record: Mapping[str, Any]) -> float | None:
    """The corrected p-value a result record's ``significant`` follows."""
    return next((record[key] for key in P_KEYS if key in record), None)


@dataclass(frozen=True)
class GroupResult:
    """One mental - physical comparison of the AQ-27 probe: overall (``dimension`` ALL) or one dimension."""

    dimension: str
    mean_difference: float | None
    mean_difference_ci: tuple[float | None, float | None]
    p: float | None
    p_name: str | None
    significant: bool
    significance: str
    flagged: bool
    alpha: float | None
    reverse_scored: bool
    #: The units of each side (--method paper: the item x noun phrase pairs, the same on both sides; controlled:
    #: the illnesses), each side's mean, and the effect size: rank-biserial r with its CI (paper), Hedges' g
    #: (controlled).
    n_mental: int | None
    n_physical: int | None
    mean_mental: float | None
    mean_physical: float | None
    effect: float | None
    effect_ci: tuple[float | None, float | None]

    @classmethod
    def from_record(cls, record: Mapping[str, Any], dimension: str) -> GroupResult:
        p_name = next((key for key in P_KEYS if key in record), None)
        return cls(dimension, record.get("mean_difference"), _interval(record.get("mean_difference_ci")),
                   corrected_p(record), p_name, bool(record.get("significant")), str(record.get("significance", "")),
                   bool(record.get("flagged")), record.get("alpha"), bool(record.get("reverse_scored", False)),
                   record.get("n_a", record.get("n_pairs")), record.get("n_b", record.get("n_pairs")),
                   record.get("mean_a"), record.get("mean_b"), record.get("hedges_g", record.get("rank_biserial")),
                   _interval(record.get("rank_biserial_ci")))

    @property
    def label(self) -> str:
        """The dimension as a table shows it."""
        return f"{self.dimension}{' (reversed)' if self.reverse_scored else ''}"


@dataclass(frozen=True)
class AQ27Results:
    """The conclusions of an AQ-27 probe: the method, the overall and per-dimension comparisons, the verdict."""

    method: str
    overall: GroupResult
    dimensions: tuple[GroupResult, ...]
    verdict: tuple[str, ...]
    prompts: int | None

    @classmethod
    def of(cls, summary: ProbeSummary, where: Any = "summary.json") -> AQ27Results:
        """The results of ``summary`` (read from ``where``, named in errors)."""
        results = summary.results
        if summary.probe != "aq27":
            raise ProbeOutputError(where, f"a {summary.probe} probe, not an AQ-27 probe")
        if not isinstance(results.get("overall"), Mapping) or not isinstance(results.get("dimensions"), list):
            raise ProbeOutputError(where, "lacks results.overall or results.dimensions: not a finished AQ-27 probe")
        return cls(str(results.get("method", "paper")), GroupResult.from_record(results["overall"], "ALL"),
                   tuple(GroupResult.from_record(record, str(record.get("dimension")))
                         for record in results["dimensions"]),
                   tuple(results.get("verdict") or ()), (results.get("counts") or {}).get("prompts"))


def _part(summary: ProbeSummary, probe: str, where: Any, *keys: str) -> Any:
    """``summary.results[keys[0]][keys[1]]...`` of a ``probe`` summary; ProbeOutputError naming what is missing."""
    if summary.probe != probe:
        raise ProbeOutputError(where, f"a {summary.probe} probe, not a {probe} probe")
    value: Any = summary.results
    for depth, key in enumerate(keys):
        if not isinstance(value, Mapping) or key not in value:
            raise ProbeOutputError(where, f"lacks results.{'.'.join(keys[:depth + 1])}: not a finished {probe} "
                                          "probe")
        value = value[key]
    return value


@dataclass(frozen=True)
class Comparison:
    """Stigmatised vs non-stigmatised conditions (social distance, sentiment): their means and the difference."""

    mean_stigmatized: float | None
    mean_not_stigmatized: float | None
    mean_difference: float | None
    significant: bool | None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Comparison:
        return cls(record.get("mean_a"), record.get("mean_b"), record.get("mean_difference"),
                   record.get("significant"))


@dataclass(frozen=True)
class SocialDistanceResults:
    """The conclusions of a social-distance probe: P(negative), stigmatised vs not over all templates."""

    overall: Comparison
    above_half_stigmatized: int
    stigmatized_conditions: int
    valence_method: str
    valence_kappa: float | None

    @classmethod
    def of(cls, summary: ProbeSummary, where: Any = "summary.json") -> SocialDistanceResults:
        valence = _part(summary, "social-distance", where, "valence")
        return cls(Comparison.from_record(_part(summary, "social-distance", where, "comparisons", "all")),
                   int(_part(summary, "social-distance", where, "above_half", "stigmatized")),
                   int(_part(summary, "social-distance", where, "n_conditions", "stigmatized")),
                   str(valence.get("method")), valence.get("kappa"))


@dataclass(frozen=True)
class SentimentResults:
    """The conclusions of a sentiment probe: the share of negative labels, stigmatised vs not, and (with a
    social-distance probe) Pearson's r across the conditions both have."""

    comparison: Comparison
    pearson_r: float | None
    correlated_conditions: int | None

    @classmethod
    def of(cls, summary: ProbeSummary, where: Any = "summary.json") -> SentimentResults:
        correlation = summary.results.get("correlation")
        return cls(Comparison.from_record(_part(summary, "sentiment", where, "comparison")),
                   correlation["pearson"]["r"] if correlation else None, correlation["n"] if correlation else None)


@dataclass(frozen=True)
class GenderTest:
    """P(female) vs P(male) over all prompts of one family and diagnosis group (paired t-test, Bonferroni)."""

    family: str
    diagnosis_type: str
    p_female: float | None
    p_male: float | None
    cohens_d: float | None
    p_bonferroni: float | None


@dataclass(frozen=True)
class GenderResults:
    """The conclusions of a gendered fill-mask probe: the paired test of each family's prompts, per group."""

    tests: tuple[GenderTest, ...]

    @classmethod
    def of(cls, summary: ProbeSummary, where: Any = "summary.json") -> GenderResults:
        return cls(tuple(GenderTest(r["family"], r["diagnosis_type"], r.get("mean_a"), r.get("mean_b"),
                                    r.get("cohens_d"), r.get("p_bonferroni"))
                         for r in _part(summary, "gender", where, "paired") if r.get("part") == "all"))


@dataclass(frozen=True)
class OddsRatio:
    """One level's odds of a stigma-congruent completion against the healthy baseline (contextual probe)."""

    factor: str
    level: str
    odds_ratio: float | None
    ci: tuple[float | None, float | None]
    p_bh: float | None


@dataclass(frozen=True)
class ContextualResults:
    """The conclusions of a contextual probe: the odds ratios per category, and the requests of this run."""

    by_category: tuple[OddsRatio, ...]
    requests_sent: int
    requests_reused: int

    @classmethod
    def of(cls, summary: ProbeSummary, where: Any = "summary.json") -> ContextualResults:
        effects = _part(summary, "contextual", where, "by_category", "effects")
        requests = _part(summary, "contextual", where, "requests")
        return cls(tuple(OddsRatio(e["factor"], e["level"], e.get("odds_ratio"), _interval(e.get("odds_ratio_ci")),
                                   e.get("p_bh")) for e in effects), int(requests["sent"]), int(requests["reused"]))
