"""The BIAS map (Cuddy et al. 2007; Table 1 of the seed paper): each AQ-27 stigma dimension tied to a region of
the warmth/competence plane. The map is data (``lexicons/bias_map.csv``) that users can edit.

A dimension's competence is "low", "high", "any" (free) or "any_or_low"/"any_or_high" (the literature allows
both readings): the score is read on the lenient region (competence free) and the strict one is shown beside it.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus_audit.common.errors import UserError
from corpus_audit.common.resources import data_file
from corpus_audit.stigma.quadrants import QUADRANTS, region_quadrants

WARMTH_LEVELS = ("low", "high")
COMPETENCE_LEVELS = ("low", "high", "any", "any_or_low", "any_or_high")
_BIAS_MAP_COLUMNS = ("dimension", "warmth", "competence")


class BiasMapError(UserError, ValueError):
    """The BIAS-map file is malformed (the message names the file and the line)."""


class UnknownDimensionError(UserError, ValueError):
    """A dimension name that the BIAS map does not define (the message lists the valid ones)."""


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

    def quadrants(self) -> list[str]:
        """Quadrant labels of the dimension's lenient (scored) region."""
        return [label for label, inside in zip(QUADRANTS, region_quadrants(self.warmth, self.score_competence))
                if inside]


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


def find_dimension(name: str, bias_map: Sequence[BiasDimension]) -> BiasDimension:
    """The dimension of ``bias_map`` called ``name`` (case-insensitive); :class:`UnknownDimensionError` otherwise."""
    for dimension in bias_map:
        if dimension.dimension.lower() == name.strip().lower():
            return dimension
    raise UnknownDimensionError(f"unknown AQ-27 dimension {name!r}; valid: "
                                f"{', '.join(d.dimension for d in bias_map)}")
