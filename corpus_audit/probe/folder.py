"""A probe's output folder: every file name in it and the typed summary, the contract that every probe writes
and that the probe report and ``probe/link.py`` read (as :mod:`corpus_audit.audit.folder` is for audits).

- ``scores.parquet``: one row per scored prompt (the model's score of each filled questionnaire item);
- ``summary.json``: :class:`ProbeSummary`, what was probed (``probe``: aq27, gender, social-distance, sentiment,
  contextual),
  with what, and the statistics;
- ``illnesses.csv``: per illness of the illness lexicon, the probe's measure (``mean_score``), for people and for
  ``corpus-audit link``; ``dimensions.csv``: the AQ-27 probe's statistics per dimension;
- ``fills.parquet`` (fill-mask probes: every fill or phrase with its probability), ``tests.csv`` (their tests),
  ``diagnoses.csv`` (gender: per diagnosis), ``conditions.csv`` (social distance, sentiment: per condition), ``fill_labels.csv`` (social distance: each fill
  word's valence and where it came from);
- ``responses.jsonl`` (contextual: every chat completion received, by request key, the record that makes a rerun
  pay for nothing twice), ``completions.parquet`` (contextual: one row per completion with its codes),
  ``explicit.parquet`` (contextual: one row per AQ-27 answer sheet);
- ``link.json``, ``link_dimensions.csv``, ``link_illnesses.csv``: what ``corpus-audit link`` found;
- ``baselines.parquet`` (AQ-27, controlled method: the neutral carrier sentences scored) and
  ``null_scores.parquet`` (AQ-27 null check: the prompts scored by randomly initialised copies of the model);
- ``report.html`` and the figures; ``checkpoints.json`` and ``score-parts/`` (``baseline-parts/``,
  ``null-parts/``) for resuming, as in an audit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corpus_audit.common.atomic import write_text_atomic
from corpus_audit.common.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

SCORES = "scores.parquet"
SUMMARY = "summary.json"
REPORT = "report.html"
CHECKPOINTS = "checkpoints.json"
SCORE_PARTS = "score-parts"
DIMENSIONS = "dimensions.csv"
ILLNESSES = "illnesses.csv"
FILLS = "fills.parquet"
TESTS = "tests.csv"
DIAGNOSES = "diagnoses.csv"
CONDITIONS = "conditions.csv"
FILL_LABELS = "fill_labels.csv"
RESPONSES = "responses.jsonl"
COMPLETIONS = "completions.parquet"
EXPLICIT = "explicit.parquet"
LINK = "link.json"
LINK_DIMENSIONS = "link_dimensions.csv"
LINK_ILLNESSES = "link_illnesses.csv"
BASELINES = "baselines.parquet"
BASELINE_PARTS = "baseline-parts"
NULL_SCORES = "null_scores.parquet"
NULL_PARTS = "null-parts"
LINK_FIGURE = "link"
LINK_CAPTION = ("Left: per AQ-27 dimension, the corpus's mental - physical difference against the model's. Right: per "
                "illness, how often the corpus mentions it against the model's mean score of its prompts.")
FIGURE_FORMATS = ("png", "svg")
#: Options that say where a probe runs, not what it computes: in no checkpoint and no summary.
RUN_OPTIONS = ("device", "max_tokens", "threads", "api_key_env", "concurrency", "retries", "backoff", "timeout",
               "budget")
#: The parts of summary.json every reader needs.
_SUMMARY_PARTS = ("probe", "model_id", "lang")
#: Columns of dimensions.csv and illnesses.csv that the link reads.
DIMENSION_COLUMNS = ("dimension", "mean_difference")
ILLNESS_COLUMNS = ("illness", "illness_type", "mean_score")


class ProbeOptionsError(UserError, ValueError):
    """A probe's options do not go together (the command line shows the message, not a traceback)."""


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
        self.dimensions = self.path / DIMENSIONS
        self.illnesses = self.path / ILLNESSES
        self.fills = self.path / FILLS
        self.tests = self.path / TESTS
        self.diagnoses = self.path / DIAGNOSES
        self.conditions = self.path / CONDITIONS
        self.fill_labels = self.path / FILL_LABELS
        self.responses = self.path / RESPONSES
        self.completions = self.path / COMPLETIONS
        self.explicit = self.path / EXPLICIT
        self.link = self.path / LINK
        self.link_dimensions = self.path / LINK_DIMENSIONS
        self.link_illnesses = self.path / LINK_ILLNESSES
        self.baselines = self.path / BASELINES
        self.baseline_parts = self.path / BASELINE_PARTS
        self.null_scores = self.path / NULL_SCORES
        self.null_parts = self.path / NULL_PARTS

    def figure(self, stem: str, fmt: str) -> Path:
        return self.path / f"{stem}.{fmt}"

    def link_files(self) -> list[Path]:
        """What ``corpus-audit link`` writes in the folder."""
        return [self.link, self.link_dimensions, self.link_illnesses,
                *(self.figure(LINK_FIGURE, fmt) for fmt in FIGURE_FORMATS)]

    def remove_link(self, log: Callable[[str], None]) -> None:
        """Remove what ``corpus-audit link`` wrote: it was made from the previous results."""
        stale = [path for path in self.link_files() if path.exists()]
        for path in stale:
            path.unlink()
        if stale:
            log("report: removed the link to audits, made from the previous results (run corpus-audit link again)")

    def existing(self, path: Path) -> Path:
        """``path``, or :class:`ProbeOutputError` naming it when it does not exist."""
        if not path.is_file():
            raise ProbeOutputError(path, f"missing (is {self.path} the output folder of a finished probe? run "
                                         "corpus-audit probe first)")
        return path

    def read_table(self, path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
        """A CSV or Parquet table of the folder that has ``columns``; :class:`ProbeOutputError` otherwise."""
        import pandas as pd
        import pyarrow as pa

        self.existing(path)
        try:
            table = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
        except (OSError, ValueError, pa.ArrowException) as error:  # pandas' parser errors are ValueErrors
            raise ProbeOutputError(path, f"not a readable table ({error})") from None
        missing = [name for name in columns if name not in table.columns]
        if missing:
            raise ProbeOutputError(path, f"lacks column(s) {', '.join(missing)}")
        return table

    def read_dimensions(self) -> pd.DataFrame:
        return self.read_table(self.dimensions, DIMENSION_COLUMNS)

    def read_illnesses(self) -> pd.DataFrame:
        return self.read_table(self.illnesses, ILLNESS_COLUMNS)

    def previous_model_id(self, default: str) -> str:
        """The model id a finished earlier run recorded (a skipped model stage knows no other), else ``default``."""
        return self.read_summary().model_id if self.summary.is_file() else default

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
