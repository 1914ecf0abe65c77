"""An audit's output folder (OUTDIR): every file name in it, the typed summary, and the checked readers.

Everything that reads or writes an audit folder (the pipeline, report, figures, compare, flagged, the
cross-lingual analysis, and the probe wing's link) goes through :class:`AuditFolder`, so a file is named once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from corpus_audit.audit.results import AnalysisSummary, ResultsError
from corpus_audit.common.errors import UserError
from corpus_audit.common.log import to_stderr
from corpus_audit.score.cascade import DESIGN_WEIGHT_COLUMN, IN_SAMPLE_COLUMN, CascadeRecord
from corpus_audit.stigma.bias_map import BiasDimension
from corpus_audit.stigma.quadrants import ILLNESS_TYPES, quadrant_of

if TYPE_CHECKING:
    import pandas as pd

FILTERED = "filtered.parquet"
FILTERED_SUMMARY = "filtered.summary.json"
SENTENCES = "sentences.parquet"
DOCUMENTS = "documents.parquet"
SCORE_SUMMARY = "score.json"
SCORE_PARTS = "score-parts"
AQ27 = "aq27.csv"
SUMMARY = "summary.json"
REPORT = "report.html"
CHECKPOINTS = "checkpoints.json"
#: Figures (stem -> caption), in report order; each is written as every one of FIGURE_FORMATS.
FIGURES = {
    "density": "Warmth × competence density of mental (red) and physical (blue) illness sentences.",
    "density_by_illness": "The same plane per illness (most frequent illnesses), coloured by illness type.",
    "quadrant_shares": "Share of sentences in each warmth/competence quadrant, mental vs physical.",
    "aq27": "AQ-27 stigma dimensions: share of sentences in each dimension's BIAS-map region, with 95% CIs.",
}
#: What an audit writes (the report embeds the PNGs); ``corpus-audit plot --svg`` adds SVG copies, whose saving took
#: 40% of the figures' time.
FIGURE_FORMATS = ("png",)
VECTOR_FORMAT = "svg"
#: Columns of sentences.parquet that the commands reading an audit need.
SENTENCE_COLUMNS = ("doc_id", "sentence_index", "sentence", "illnesses", "illness_type", "warmth", "competence",
                    "quadrant")
AQ27_COLUMNS = ("dimension", "warmth", "competence", "share_mental", "share_physical")
#: The parts of summary.json that every reader needs, and those that a report needs as well (else: empty).
_SUMMARY_PARTS = ("options", "score")
_RESULT_PARTS = ("filter", "analysis")


class AuditOutputError(UserError, ValueError):
    """An audit folder lacks a file or holds an unreadable one (or, in strict mode, a bad row); ``path`` is the
    offending file, ``row`` the offending row (1-based) if any."""

    def __init__(self, path: Path, reason: str, row: int | None = None) -> None:
        super().__init__(f"{path}:{row}: {reason}" if row is not None else f"{path}: {reason}")
        self.path, self.row = path, row


@dataclass
class ScoreRecord:
    """``score.json``: what the score stage did."""

    model_id: str | None
    duplicates_removed: int
    sentences_scored: int
    embedding_seconds: float
    masked: bool
    #: sentences whose vectors came from the embedding cache / were embedded (None: no cache, or not known)
    from_embedding_cache: int | None = None
    embedded: int | None = None
    #: the cascade, where it ran (None: the encoder read every sentence)
    cascade: CascadeRecord | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "duplicates_removed": self.duplicates_removed,
                "sentences_scored": self.sentences_scored, "embedding_seconds": self.embedding_seconds,
                "masked": self.masked, "from_embedding_cache": self.from_embedding_cache, "embedded": self.embedded,
                "cascade": self.cascade.to_dict() if self.cascade else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreRecord:
        return cls(data.get("model_id"), data.get("duplicates_removed", 0), data.get("sentences_scored", 0),
                   data.get("embedding_seconds", 0.0), data.get("masked", False), data.get("from_embedding_cache"),
                   data.get("embedded"), CascadeRecord.from_dict(data.get("cascade")))


@dataclass
class AuditSummary:
    """``summary.json``: the corpus, the options, the filter and score records, the analysis and time per stage.

    ``options`` is the audit's options as recorded (``AuditOptions``); ``filter`` the filter summary
    (``FilterSummary.to_dict()``); ``analysis`` the results, typed (:class:`AnalysisSummary`; None in the summary
    of an unfinished audit). The properties name what the readers of an audit use, so none of them digs in the
    dictionaries.
    """

    options: dict[str, Any]
    filter: dict[str, Any]
    score: ScoreRecord
    analysis: AnalysisSummary | None
    corpus: dict[str, Any] = field(default_factory=dict)
    package_version: str = "?"
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def lang(self) -> str:
        return self.options.get("lang", "en")

    @property
    def seed(self) -> int:
        return self.options.get("seed", 0)

    @property
    def axes_path(self) -> str | None:
        return self.options.get("axes_path")

    @property
    def model_id(self) -> str | None:
        return self.score.model_id

    @property
    def corpus_name(self) -> str:
        """The corpus in words: its dataset name or its input paths."""
        return self.corpus.get("hf_dataset") or ", ".join(map(str, self.corpus.get("inputs") or [])) \
            or "(unknown corpus)"

    def to_dict(self) -> dict[str, Any]:
        return {"corpus": self.corpus, "options": self.options, "package_version": self.package_version,
                "filter": self.filter, "score": self.score.to_dict(),
                "analysis": self.analysis.to_dict() if self.analysis is not None else {},
                "seconds": self.seconds}

    @classmethod
    def from_dict(cls, data: Any, path: Path, complete: bool = False) -> AuditSummary:
        """The summary read from ``path``; :class:`AuditOutputError` when it is not the summary of an audit, or
        (``complete``) of a finished one, with the filter's counts and the analysis."""
        if not isinstance(data, dict):
            raise AuditOutputError(path, "not a JSON object: not the summary of an audit")
        lacking = [key for key in _SUMMARY_PARTS + (_RESULT_PARTS if complete else ())
                   if not isinstance(data.get(key), dict)]
        if lacking:
            raise AuditOutputError(path, f"lacks {', '.join(lacking)}: not the summary of a finished audit")
        analysis = None
        if data.get("analysis"):
            try:
                analysis = AnalysisSummary.from_dict(data["analysis"])
            except ResultsError as error:
                if complete:  # a report needs it; comparing two audits does not
                    raise AuditOutputError(path, f"{error}: not the summary of an audit of this version") from None
        return cls(options=data["options"], filter=data.get("filter") or {}, score=ScoreRecord.from_dict(data["score"]),
                   analysis=analysis, corpus=data.get("corpus") or {},
                   package_version=data.get("package_version", "?"), seconds=data.get("seconds") or {})


def statistics_rows(sentences: pd.DataFrame, weighted: bool = False) -> pd.DataFrame:
    """The rows of an audit's sentences that statistics read: every row, or after a cascade (score/cascade.py; its
    band is chosen by the triage and would bias an unweighted statistic) its random sample, or with ``weighted``
    every row the encoder read with its ``design_weight``, which the audit's own analysis weighs (audits that
    predate the column: the random sample)."""
    if IN_SAMPLE_COLUMN not in sentences:
        return sentences
    if weighted and DESIGN_WEIGHT_COLUMN in sentences:
        return sentences[np.isfinite(sentences[DESIGN_WEIGHT_COLUMN].to_numpy(dtype=float))]
    return sentences[sentences[IN_SAMPLE_COLUMN].astype(bool)].drop(columns=DESIGN_WEIGHT_COLUMN, errors="ignore")


class AuditFolder:
    """The files of one audit folder. Paths are attributes; ``read_*`` check what they read and raise
    :class:`AuditOutputError` naming the file."""

    def __init__(self, outdir: str | Path) -> None:
        self.path = Path(outdir)
        self.filtered = self.path / FILTERED
        self.filtered_summary = self.path / FILTERED_SUMMARY
        self.sentences = self.path / SENTENCES
        self.documents = self.path / DOCUMENTS
        self.score_summary = self.path / SCORE_SUMMARY
        self.score_parts = self.path / SCORE_PARTS
        self.aq27 = self.path / AQ27
        self.summary = self.path / SUMMARY
        self.report = self.path / REPORT
        self.checkpoints = self.path / CHECKPOINTS

    def figure(self, stem: str, fmt: str) -> Path:
        return self.path / f"{stem}.{fmt}"

    def figure_paths(self) -> list[Path]:
        return [self.figure(stem, fmt) for stem in FIGURES for fmt in FIGURE_FORMATS]

    def missing_figures(self) -> list[str]:
        """Stems of the figures of which some format is absent."""
        return [stem for stem in FIGURES if not all(self.figure(stem, fmt).is_file() for fmt in FIGURE_FORMATS)]

    def existing(self, path: Path) -> Path:
        """``path``, or :class:`AuditOutputError` naming it when it does not exist."""
        if not path.is_file():
            raise AuditOutputError(path, f"missing (is {self.path} the output folder of a finished audit? "
                                         "run corpus-audit audit first)")
        return path

    def read_summary(self, complete: bool = False) -> AuditSummary:
        """``summary.json``; ``complete``: it must hold the filter's counts and the analysis (see
        :meth:`AuditSummary.from_dict`)."""
        path = self.existing(self.summary)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:  # ValueError: bad JSON or bad UTF-8
            raise AuditOutputError(path, f"not valid JSON ({error})") from None
        return AuditSummary.from_dict(data, path, complete)

    def write_summary(self, summary: AuditSummary) -> None:
        from corpus_audit.common.atomic import write_text_atomic

        write_text_atomic(self.summary, json.dumps(summary.to_dict(), indent=2, default=str))

    def read_score_record(self) -> ScoreRecord:
        return ScoreRecord.from_dict(json.loads(self.score_summary.read_text(encoding="utf-8")))

    def read_filter_summary(self) -> dict[str, Any]:
        return json.loads(self.filtered_summary.read_text(encoding="utf-8"))

    def read_statistics_sentences(self, strict: bool = False, log: Callable[[str], None] | None = None,
                                  weighted: bool = False) -> pd.DataFrame:
        """The rows of :meth:`read_sentences` that statistics read (:func:`statistics_rows`): after a cascade its
        random sample, or with ``weighted`` every sentence the encoder read, weighted."""
        return statistics_rows(self.read_sentences(strict, log), weighted)

    def read_sentences(self, strict: bool = False, log: Callable[[str], None] | None = None) -> pd.DataFrame:
        """``sentences.parquet``, checked.

        A missing or unreadable file, or one without the columns an audit writes, raises ``AuditOutputError``
        naming it. Rows that no audit writes are bad records: an illness type other than mental, physical or
        both, no sentence, an infinite score, or a quadrant that disagrees with the scores (unscored rows, NaN with
        no quadrant, are fine). They are left out and counted in one message to ``log`` (default: stderr), or,
        with ``strict``, the first one raises ``AuditOutputError`` naming file, row (1-based) and reason.
        """
        import pandas as pd
        import pyarrow as pa

        path = self.existing(self.sentences)
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError, pa.ArrowException) as error:
            raise AuditOutputError(path, f"not a readable Parquet file ({error})") from None
        missing = [name for name in SENTENCE_COLUMNS if name not in frame.columns]
        if missing:
            raise AuditOutputError(path, f"lacks column(s) {', '.join(missing)}: not a sentences table of an audit")
        try:
            warmth, competence = (frame[name].to_numpy(dtype=float, na_value=np.nan)
                                  for name in ("warmth", "competence"))
        except (TypeError, ValueError) as error:
            raise AuditOutputError(path, f"warmth and competence must be numbers ({error})") from None
        expected = quadrant_of(warmth, competence)
        quadrant = frame["quadrant"].to_numpy(dtype=object)
        problems = [
            ("illness type is not mental, physical or both", ~frame["illness_type"].isin(ILLNESS_TYPES).to_numpy()),
            ("no sentence", frame["sentence"].isna().to_numpy()),
            ("a score is infinite", np.isinf(warmth) | np.isinf(competence)),
            ("quadrant disagrees with the scores",
             np.array([q != e and not (e is None and pd.isna(q)) for q, e in zip(quadrant, expected)], dtype=bool)),
        ]
        bad = np.zeros(len(frame), dtype=bool)
        counts = {}
        for reason, rows in problems:
            new = rows & ~bad  # a row counts once, for its first problem
            if new.any():
                counts[reason] = int(new.sum())
                bad |= new
        if not counts:
            return frame
        if strict:
            row = int(np.flatnonzero(bad)[0])
            raise AuditOutputError(path, next(reason for reason, rows in problems if rows[row]), row=row + 1)
        (log or to_stderr)(f"{path}: left out {int(bad.sum())} bad row(s): "
                            + ", ".join(f"{reason} ({count})" for reason, count in counts.items()))
        return frame[~bad].reset_index(drop=True)

    def read_aq27(self) -> pd.DataFrame:
        import pandas as pd

        path = self.existing(self.aq27)
        try:
            aq27 = pd.read_csv(path)
        except (OSError, ValueError, pd.errors.ParserError) as error:  # EmptyDataError is a ValueError
            raise AuditOutputError(path, f"not a readable CSV file ({error})") from None
        missing = [name for name in AQ27_COLUMNS if name not in aq27.columns]
        if missing:
            raise AuditOutputError(path, f"lacks column(s) {', '.join(missing)}: not an aq27.csv of an audit")
        return aq27

    def read_bias_map(self) -> list[BiasDimension]:
        """The BIAS map the audit used, as its ``aq27.csv`` records it (the map file may have changed since)."""
        return [BiasDimension(str(row.dimension), str(row.warmth), str(row.competence))
                for row in self.read_aq27().itertuples(index=False)]
