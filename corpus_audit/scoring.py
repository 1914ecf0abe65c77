"""Score a table of sentences: every input row comes back with ``warmth`` and ``competence`` added.

Input: ``.txt`` (one sentence per line), ``.csv``/``.tsv``, ``.jsonl``/``.json`` or ``.parquet``, optionally
compressed (the corpus readers do the parsing and count bad records). Output: ``.csv`` or ``.parquet``,
written atomically. Identical sentences are embedded once.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from corpus_audit.readers import (CorpusError, ReaderOptions, ReadStats, field_text, read_file, scrub_surrogates,
                                  split_format)
from corpus_audit.atomic import atomic_path

if TYPE_CHECKING:
    from corpus_audit.engines import EngineOptions

OUTPUT_FORMATS = (".csv", ".parquet")
#: Longer texts are cut before embedding; the default model reads at most 256 word pieces anyway.
MAX_TEXT_CHARS = 5000
SCORE_COLUMNS = ("warmth", "competence")


class ScoreError(Exception):
    """A user error in a score request (bad path, empty input, missing column); the message says which."""


@dataclass
class ScoreSummary:
    rows: int = 0
    scored: int = 0
    distinct_texts: int = 0
    truncated: int = 0
    skipped: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    model_id: str = ""
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "scored": self.scored, "distinct_texts": self.distinct_texts,
                "truncated": self.truncated, "skipped_by_reason": dict(self.skipped),
                "skipped_examples": self.examples, "model_id": self.model_id, "seconds": self.seconds}


def check_output_path(output: str | Path) -> Path:
    output = Path(output)
    if output.suffix.lower() not in OUTPUT_FORMATS:
        raise ScoreError(f"{output}: the output must end in .csv or .parquet")
    if output.is_dir():
        raise ScoreError(f"{output} is a folder; give a file name ending in .csv or .parquet")
    return output


def read_rows(path: str, text_column: str, strict: bool, summary: ScoreSummary) -> list[dict[str, Any]]:
    """Records of ``path`` as dicts holding every input column; bad records are counted in ``summary``."""
    fmt, _ = split_format(path)
    stats = ReadStats()
    options = ReaderOptions(text_field=text_column, line_docs=True, strict=strict)
    try:
        if fmt == "txt":
            rows = [{"line": doc.line, text_column: doc.text} for doc in read_file(path, options, stats)]
        else:
            rows = [{text_column: doc.text, **doc.meta} for doc in read_file(path, options, stats)]
    except CorpusError as error:
        raise ScoreError(str(error)) from None
    summary.skipped.update(stats.skipped)
    summary.examples.extend(stats.examples)
    if not rows:
        if stats.skipped.get("empty file"):
            raise ScoreError(f"{path} is empty: nothing to score")
        if any(reason.startswith("missing text field") for reason in stats.skipped):
            raise ScoreError(f"{path}: no record has a text column {text_column!r}; choose it with --text-column")
        raise ScoreError(f"{path}: no readable record ({dict(stats.skipped)})")
    return rows


def score_texts(texts: list[str], embedder, axes, summary: ScoreSummary | None = None,
                show_progress: bool | None = None) -> np.ndarray:
    """(warmth, competence) for each text, shape (n, 2); blank texts get NaN. Each distinct text is embedded once.

    ``show_progress`` is passed to the embedder (None: a bar for long inputs on a terminal)."""
    return score_with(texts, lambda distinct: axes.transform(embedder.encode(distinct, show_progress=show_progress)),
                      summary)


def score_with(texts: list[str], project: Callable[[list[str]], np.ndarray],
               summary: ScoreSummary | None = None) -> np.ndarray:
    """:func:`score_texts` with ``project`` turning the distinct non-blank texts (stripped, cut to
    ``MAX_TEXT_CHARS``) into points, shape (n_distinct, 2)."""
    summary = summary if summary is not None else ScoreSummary()
    prepared = []
    for text in texts:
        text = text.strip()
        if len(text) > MAX_TEXT_CHARS:
            summary.truncated += 1
            text = text[:MAX_TEXT_CHARS]
        prepared.append(text)
    distinct = list(dict.fromkeys(t for t in prepared if t))
    summary.distinct_texts = len(distinct)
    scores = np.full((len(texts), 2), np.nan, dtype=np.float32)
    if distinct:
        points = project(distinct)
        index = {text: row for row, text in enumerate(distinct)}
        for position, text in enumerate(prepared):
            if text:
                scores[position] = points[index[text]]
    blank = sum(1 for t in prepared if not t)
    if blank:
        summary.skipped["blank text"] += blank
    summary.scored = len(texts) - blank
    return scores


class Scorer(ABC):
    """Scores texts with a model that is loaded once, on first use (by :meth:`start` or the first texts).

    :class:`LocalScorer` runs in this process; ``corpus_audit.ray_engine.RayScorer`` on Ray actors. Both give
    :func:`score_texts` results: the same points up to floating-point noise (batches may be padded differently).
    """

    #: the embedder's ``model_id``, known once the model has been loaded (or the first chunk scored)
    model_id: str | None = None

    @abstractmethod
    def start(self) -> None:
        """Load the model (locally) or start the engine, so that a failure shows before any scoring."""

    @abstractmethod
    def score_chunks(self, chunks: Iterable[list[str]]) -> Iterator[np.ndarray]:
        """:func:`score_texts` of each chunk, shape (len(chunk), 2), in order, as each is ready."""

    @abstractmethod
    def project(self, texts: list[str]) -> np.ndarray:
        """Points of distinct, non-blank, prepared texts (the ``project`` of :func:`score_with`), shape (n, 2)."""


class LocalScorer(Scorer):
    """The embedder and axes of ``load_model()``, in this process."""

    def __init__(self, load_model: Callable[[], tuple[Any, Any]]) -> None:
        self._load_model = load_model
        self._model: tuple[Any, Any] | None = None

    def start(self) -> None:
        if self._model is None:
            self._model = self._load_model()
            self.model_id = self._model[0].model_id

    def score_chunks(self, chunks: Iterable[list[str]]) -> Iterator[np.ndarray]:
        for chunk in chunks:
            self.start()
            yield score_texts(chunk, *self._model, show_progress=False)

    def project(self, texts: list[str]) -> np.ndarray:
        self.start()
        embedder, axes = self._model
        return axes.transform(embedder.encode(texts))


def write_table(rows: list[dict[str, Any]], scores: np.ndarray, output: Path) -> None:
    """Write every input column plus the scores to ``output`` (.csv or .parquet), atomically.

    Uncleaned records disagree: a field that is a number in one record and a string, a list or an object in
    another has no Parquet type; such a table is written with its mixed columns as text (JSON for objects and
    lists, as in CSV output), so the output keeps every row and column. Lone surrogates (JSON ``\\ud800``
    escapes, CSV headers with invalid bytes) become U+FFFD: no file can encode them.
    """
    import pandas as pd
    import pyarrow as pa

    frame = pd.DataFrame.from_records([{scrub_surrogates(str(name)): scrub_surrogates(value) if isinstance(value, str)
                                        else value for name, value in row.items()} for row in rows])
    for column, values in zip(SCORE_COLUMNS, scores.T):
        frame[column] = values
    with atomic_path(output) as tmp:
        if output.suffix.lower() == ".csv":
            _mixed_as_text(frame).to_csv(tmp, index=False)
            return
        try:
            frame.to_parquet(tmp, index=False)
        except (pa.ArrowException, OverflowError, UnicodeEncodeError):
            _mixed_as_text(frame).to_parquet(tmp, index=False)


def _mixed_as_text(frame: Any) -> Any:
    """``frame`` with its columns of mixed or nested values (dtype object) as text (:func:`field_text`)."""
    frame = frame.copy()
    for name in frame.columns[frame.dtypes == object]:
        frame[name] = frame[name].map(field_text)
    return frame


def score_file(
    input_path: str,
    output: str | Path,
    load_model: Callable[[], tuple[Any, Any]],
    text_column: str = "text",
    strict: bool = False,
    engine: EngineOptions | None = None,
    device: str = "cpu",
) -> ScoreSummary:
    """Read ``input_path``, score every row, write ``output``.

    ``load_model`` returns (embedder, axes); it is called only once the input is known to hold rows, so a
    bad input fails before the model is loaded. ``engine``/``device``: where to embed (see
    :func:`corpus_audit.engines.make_scorer`); reading and writing stay in this process.
    """
    from corpus_audit.engines import make_scorer

    output = check_output_path(output)
    summary = ScoreSummary()
    started = time.perf_counter()
    rows = read_rows(input_path, text_column, strict, summary)
    summary.rows = len(rows)
    summary.seconds["read"] = time.perf_counter() - started
    started = time.perf_counter()
    scorer = make_scorer(load_model, engine, device)
    scorer.start()  # Ray: connects (the actors load the model while embedding)
    summary.seconds["load_model"] = time.perf_counter() - started
    started = time.perf_counter()
    scores = score_with([str(row[text_column]) for row in rows], scorer.project, summary)
    summary.model_id = scorer.model_id or ""
    summary.seconds["embed_and_project"] = time.perf_counter() - started
    started = time.perf_counter()
    write_table(rows, scores, output)
    summary.seconds["write"] = time.perf_counter() - started
    return summary
