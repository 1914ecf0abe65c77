"""A probe's output folder: every file name in it and the typed summary, the contract that every probe writes
and that the probe report and ``probe/link.py`` read (as :mod:`corpus_audit.audit.folder` is for audits).

- ``scores.parquet``: one row per scored prompt (the model's score of each filled questionnaire item);
- ``summary.json``: :class:`ProbeSummary`, what was probed, with what, and the statistics;
- ``report.html`` and the figures; ``checkpoints.json`` and ``score-parts/`` for resuming, as in an audit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus_audit.common.atomic import write_text_atomic
from corpus_audit.common.errors import UserError

SCORES = "scores.parquet"
SUMMARY = "summary.json"
REPORT = "report.html"
CHECKPOINTS = "checkpoints.json"
SCORE_PARTS = "score-parts"
#: The parts of summary.json every reader needs.
_SUMMARY_PARTS = ("probe", "model_id", "lang")


class ProbeOutputError(UserError, ValueError):
    """A probe folder lacks a file or holds an unreadable one; ``path`` is the offending file."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path


@dataclass
class ProbeSummary:
    """``summary.json`` of a probe: ``probe`` names the questionnaire (e.g. ``aq27``), ``model_id`` the model
    probed, ``lang`` the language of the prompts; ``options`` as given, ``results`` the statistics, ``seconds`` the
    time per stage."""

    probe: str
    model_id: str
    lang: str
    options: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    package_version: str = "?"
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"probe": self.probe, "model_id": self.model_id, "lang": self.lang, "options": self.options,
                "results": self.results, "package_version": self.package_version, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, data: Any, path: Path) -> ProbeSummary:
        if not isinstance(data, dict):
            raise ProbeOutputError(path, "not a JSON object: not the summary of a probe")
        lacking = [key for key in _SUMMARY_PARTS if not isinstance(data.get(key), str)]
        if lacking:
            raise ProbeOutputError(path, f"lacks {', '.join(lacking)}: not the summary of a finished probe")
        return cls(data["probe"], data["model_id"], data["lang"], data.get("options") or {},
                   data.get("results") or {}, data.get("package_version", "?"), data.get("seconds") or {})


class ProbeFolder:
    """The files of one probe folder."""

    def __init__(self, outdir: str | Path) -> None:
        self.path = Path(outdir)
        self.scores = self.path / SCORES
        self.summary = self.path / SUMMARY
        self.report = self.path / REPORT
        self.checkpoints = self.path / CHECKPOINTS
        self.score_parts = self.path / SCORE_PARTS

    def read_summary(self) -> ProbeSummary:
        if not self.summary.is_file():
            raise ProbeOutputError(self.summary, f"missing (is {self.path} the output folder of a finished probe?)")
        try:
            data = json.loads(self.summary.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:  # ValueError: bad JSON or bad UTF-8
            raise ProbeOutputError(self.summary, f"not valid JSON ({error})") from None
        return ProbeSummary.from_dict(data, self.summary)

    def write_summary(self, summary: ProbeSummary) -> None:
        write_text_atomic(self.summary, json.dumps(summary.to_dict(), indent=2, default=str))
