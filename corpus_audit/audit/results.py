"""The audit's results as ``summary.json`` holds them (``analysis``), as typed objects: the report, the verdict, the
command line and the cross-lingual analysis read attributes, so a wrong name is an error where it is written, not an
empty cell in a report. :meth:`AnalysisSummary.from_dict` reads what :meth:`AnalysisResult.to_dict
<corpus_audit.audit.analysis.AnalysisResult.to_dict>` wrote and :meth:`AnalysisSummary.to_dict` writes it back
unchanged (NaN is None in both). Tables (quadrant shares, the BIAS map, the dimensions, the groups) stay lists of
records: their columns are the tables' own, documented where they are computed."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

Record = dict[str, Any]
Results = TypeVar("Results")


class ResultsError(ValueError):
    """``summary.json``'s analysis lacks a part or has one this version does not know."""


def _build(cls: type[Results], data: Any, where: str) -> Results:
    if not isinstance(data, dict):
        raise ResultsError(f"{where}: not an object")
    names = {item.name for item in fields(cls)}  # type: ignore[arg-type]
    if unknown := sorted(set(data) - names):
        raise ResultsError(f"{where}: unknown key(s) {', '.join(unknown)}")
    try:
        return cls(**data)
    except TypeError as error:  # a required key is missing
        raise ResultsError(f"{where}: {error}") from None


@dataclass(frozen=True)
class ScoreComparison:
    """One score, mental vs physical (:class:`~corpus_audit.stigma.stats.GroupComparison`; a = mental)."""

    label_a: str
    label_b: str
    n_a: int
    n_b: int
    mean_a: float | None
    mean_b: float | None
    median_a: float | None
    median_b: float | None
    mean_difference: float | None
    mean_difference_ci: tuple[float | None, float | None]
    mann_whitney_u: float | None
    mann_whitney_p: float | None
    rank_biserial: float | None
    ks_statistic: float | None
    ks_p: float | None
    n_boot: int
    warnings: list[str] = field(default_factory=list)
    minimum_detectable_difference: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean_difference_ci", tuple(self.mean_difference_ci))


@dataclass(frozen=True)
class JointTest:
    """The 2-D energy test of (warmth, competence) (:class:`~corpus_audit.stigma.stats.EnergyTest`)."""

    n_a: int
    n_b: int
    n_used_a: int
    n_used_b: int
    statistic: float | None
    p_value: float | None
    permutations: int
    seed: int
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class GroupResults:
    """The mental-vs-physical results of one set of sentences (all of them, or the judgements)."""

    n_by_type: dict[str, int]
    comparisons: dict[str, ScoreComparison]
    joint: JointTest
    quadrants_by_type: list[Record]
    quadrants_by_illness: list[Record]
    bias_map: list[Record]
    warnings: list[str]

    @classmethod
    def parts_from_dict(cls, data: Record, where: str) -> Record:
        """``data`` with its comparisons and joint test typed."""
        comparisons = data.get("comparisons")
        if not isinstance(comparisons, dict):
            raise ResultsError(f"{where}.comparisons: not an object")
        return {**data, "comparisons": {score: _build(ScoreComparison, value, f"{where}.comparisons.{score}")
                                        for score, value in comparisons.items()},
                "joint": _build(JointTest, data.get("joint"), f"{where}.joint")}

    @classmethod
    def from_dict(cls, data: Any, where: str = "analysis") -> GroupResults:
        if not isinstance(data, dict):
            raise ResultsError(f"{where}: not an object")
        return _build(cls, cls.parts_from_dict(data, where), where)


@dataclass(frozen=True)
class JudgementResults:
    """What the sentences do (``categories``: share of each category per group), the results over the judgements,
    and the nine AQ-27 dimensions read directly (``dimensions``)."""

    categories: list[Record]
    judgements: GroupResults
    dimensions: list[Record]

    @classmethod
    def from_dict(cls, data: Any, where: str = "analysis.judgement") -> JudgementResults:
        if not isinstance(data, dict):
            raise ResultsError(f"{where}: not an object")
        return _build(cls, {**data, "judgements": GroupResults.from_dict(data.get("judgements"),
                                                                          f"{where}.judgements")}, where)


@dataclass(frozen=True)
class AnalysisSummary(GroupResults):
    """``summary.json``'s ``analysis``: the results over every sentence, and over the judgements where the axes have
    the judgement gate (``judgement``; None without it)."""

    n_sentences: int = 0
    n_unscored: int = 0
    seed: int = 0
    judgement: JudgementResults | None = None
    group_by: str | None = None
    groups: list[Record] | None = None

    @property
    def answered(self) -> GroupResults:
        """The results an answer reads: the judgements where there is a gate, else every sentence."""
        return self.judgement.judgements if self.judgement else self

    @classmethod
    def from_dict(cls, data: Any, where: str = "analysis") -> AnalysisSummary:
        if not isinstance(data, dict):
            raise ResultsError(f"{where}: not an object")
        parts = cls.parts_from_dict(data, where)
        if parts.get("judgement") is not None:
            parts["judgement"] = JudgementResults.from_dict(parts["judgement"], f"{where}.judgement")
        return _build(cls, parts, where)

    def to_dict(self) -> Record:
        """The analysis as ``summary.json`` holds it (what :meth:`from_dict` read)."""
        return _plain(self)


def _plain(value: Any) -> Any:
    """Dataclasses and tuples as dicts and lists, keys in field order: the JSON :meth:`from_dict` reads."""
    if hasattr(value, "__dataclass_fields__"):
        return {item.name: _plain(getattr(value, item.name)) for item in fields(value)}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
