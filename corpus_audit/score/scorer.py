"""Scoring texts with the instrument (warmth, competence, judgement category probabilities and AQ-27 dimension
scores: ``OUTPUT_COLUMNS``): what model to load (:class:`ModelSpec`, a picklable record that engines send to their
workers) and the :class:`Scorer` interface that engines implement.

Every scorer gives :func:`score_texts` results: texts are normalised (:func:`prepare_text`: whitespace runs become
one space, ends stripped, cut to ``MAX_TEXT_CHARS``), each distinct text is embedded once, blank texts get NaN.
A text may come with the forms of its illness mentions (``forms``: the stigma head reads them, since the mask
erases whether a mention was a slur or a diagnosis); a text scored without them is read as one without a mention.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import repeat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from corpus_audit.common.log import to_stderr
from corpus_audit.scm.columns import OUTPUT_COLUMNS, STIGMA_COLUMN

if TYPE_CHECKING:
    import pandas as pd

    from corpus_audit.embed.base import Embedder
    from corpus_audit.scm.axes import SCMAxes

#: Longer texts are cut before embedding; the default model reads at most 256 word pieces anyway.
MAX_TEXT_CHARS = 5000
#: The mention forms of each text (``corpus.matcher.FORMS`` names), or None where they are not known.
Forms = Sequence[Sequence[str]] | None

#: Sentences per scoring unit (a few seconds of embedding on a CPU, so that an interrupted audit loses little, even a
#: small one): an audit saves its scores in chunks of this size, and the Ray engine sends chunks of
#: this size to its actors. Chunk boundaries decide the embedding batches, so resumed and fresh runs agree.
CHUNK_SENTENCES = 512


class ModelLoader(Protocol):
    """Anything that loads (embedder, axes) once asked; engines call it where the scoring runs."""

    def load(self) -> tuple[Embedder, SCMAxes]: ...


@dataclass(frozen=True)
class ModelSpec:
    """The embedding model and axes to score with, as options: picklable, so that an engine can send it to its
    workers, which each load the model once. ``model`` None: the language's default model; ``axes_path`` None: the
    shipped or cached axes of the model (trained now and cached if there are none); ``backend``: how a
    sentence-transformers model runs (``corpus_audit.embed.BACKENDS``); ``embedding_cache``: the folder of the
    embedding cache (:mod:`corpus_audit.embed.cache`), None for none."""

    lang: str
    model: str | None = None
    device: str = "cpu"
    batch_size: int = 64
    axes_path: str | None = None
    backend: str = "auto"
    embedding_cache: str | None = None

    def check(self, device: str | None = None) -> None:
        """Fail now, before any input is read, on a model that cannot load or an axes file that is not one.
        ``device`` replaces the spec's device for the check (a cluster's GPUs are checked where they are)."""
        from corpus_audit.embed import check_model
        from corpus_audit.scm.axes import SCMAxes

        check_model(self.model, self.lang, device or self.device, self.batch_size, self.backend)
        if self.axes_path:
            SCMAxes.load(self.axes_path)

    def load(self) -> tuple[Embedder, SCMAxes]:
        from corpus_audit.embed import load_embedder
        from corpus_audit.scm.store import axes_for

        embedder = load_embedder(self.model, lang=self.lang, device=self.device, batch_size=self.batch_size,
                                 backend=self.backend, log=to_stderr)
        axes = axes_for(embedder, self.lang, self.axes_path, log=to_stderr)
        if self.embedding_cache:
            from corpus_audit.embed.cache import CachedEmbedder

            embedder = CachedEmbedder(embedder, self.embedding_cache)
        return embedder, axes


@dataclass
class ScoreSummary:
    rows: int = 0
    scored: int = 0
    distinct_texts: int = 0
    truncated: int = 0
    skipped: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    repaired: Counter = field(default_factory=Counter)  # rows kept with their invalid UTF-8 replaced, by reason
    model_id: str = ""
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "scored": self.scored, "distinct_texts": self.distinct_texts,
                "truncated": self.truncated, "skipped_by_reason": dict(self.skipped),
                "skipped_examples": self.examples, "repaired_by_reason": dict(self.repaired), "model_id": self.model_id,
                "seconds": self.seconds}


def prepare_text(text: str) -> tuple[str, bool]:
    """The text the instrument embeds: every run of whitespace one space, the ends stripped (with some models a
    trailing space alone flips the sign of a score), cut to ``MAX_TEXT_CHARS``; and whether it was cut."""
    text = " ".join(text.split())
    return (text[:MAX_TEXT_CHARS], True) if len(text) > MAX_TEXT_CHARS else (text, False)


def score_texts(texts: list[str], embedder: Embedder, axes: SCMAxes, summary: ScoreSummary | None = None,
                show_progress: bool | None = None, forms: Forms = None) -> np.ndarray:
    """The instrument's ``OUTPUT_COLUMNS`` for each text (whose mentions have ``forms``, where known), shape
    (n, len(OUTPUT_COLUMNS)); blank texts get NaN. Each distinct text is embedded once.

    ``show_progress`` is passed to the embedder (None: a bar for long inputs on a terminal)."""
    return score_with(texts, lambda distinct, distinct_forms: axes.measure(
        embedder.encode(distinct, show_progress=show_progress), distinct, distinct_forms), summary, forms)


def score_with(texts: list[str], project: Callable[[list[str], Forms], np.ndarray],
               summary: ScoreSummary | None = None, forms: Forms = None) -> np.ndarray:
    """:func:`score_texts` with ``project`` turning the distinct non-blank texts (:func:`prepare_text`) and their
    forms (None where ``forms`` is None) into scores, shape (n_distinct, len(OUTPUT_COLUMNS)). A text is distinct
    by its prepared text and its set of forms."""
    summary = summary if summary is not None else ScoreSummary()
    if forms is not None and len(forms) != len(texts):
        raise ValueError(f"{len(forms)} form lists for {len(texts)} texts")
    keys = []
    for text, text_forms in zip(texts, repeat(()) if forms is None else forms):
        text, cut = prepare_text(text)
        summary.truncated += cut
        keys.append((text, tuple(sorted(set(text_forms)))))
    distinct = list(dict.fromkeys(key for key in keys if key[0]))
    summary.distinct_texts = len(distinct)
    scores = np.full((len(texts), len(OUTPUT_COLUMNS)), np.nan, dtype=np.float32)
    if distinct:
        points = project([text for text, _ in distinct], None if forms is None else [f for _, f in distinct])
        index = {key: row for row, key in enumerate(distinct)}
        for position, key in enumerate(keys):
            if key[0]:
                scores[position] = points[index[key]]
    blank = sum(1 for text, _ in keys if not text)
    if blank:
        summary.skipped["blank text"] += blank
    summary.scored = len(texts) - blank
    return scores


def add_score_columns(frame: pd.DataFrame, scores: np.ndarray, quadrant: bool = False) -> pd.DataFrame:
    """``frame`` (one row per text, changed in place and returned) with the instrument's columns: ``OUTPUT_COLUMNS``
    from ``scores`` (:func:`score_texts`), the ``quadrant`` where asked, then the judgement gate's ``category`` and
    the ``top_dimension`` derived from them. The columns of the ``score`` command, an audit's
    ``sentences.parquet`` and the Python API, made in one place."""
    from corpus_audit.stigma.judgement import (CATEGORY_COLUMN, CATEGORY_COLUMNS, DIMENSION_COLUMNS,
                                               TOP_DIMENSION_COLUMN, label_sentences)
    from corpus_audit.stigma.quadrants import quadrant_of

    for column, values in zip(OUTPUT_COLUMNS, scores.T):
        frame[column] = values
    if quadrant:
        frame["quadrant"] = quadrant_of(frame["warmth"].to_numpy(), frame["competence"].to_numpy())
    frame[CATEGORY_COLUMN], frame[TOP_DIMENSION_COLUMN] = label_sentences(
        frame[list(CATEGORY_COLUMNS)].to_numpy(dtype=float),
        frame[list(DIMENSION_COLUMNS.values())].to_numpy(dtype=float), frame[STIGMA_COLUMN].to_numpy(dtype=float))
    return frame


class Scorer(ABC):
    """Scores texts with a model that is loaded once, on first use (by :meth:`start` or the first texts).

    :class:`LocalScorer` runs in this process; ``corpus_audit.engines.ray.RayScorer`` on Ray actors. Both give
    :func:`score_texts` results: the same points up to floating-point noise (batches may be padded differently).
    """

    #: the embedder's ``model_id``, known once the model has been loaded (or the first chunk scored)
    model_id: str | None = None

    def embedding_cache_counts(self) -> tuple[int, int] | None:
        """(texts taken from the embedding cache, texts embedded) so far, where this scorer knows them."""
        return None

    @abstractmethod
    def start(self) -> None:
        """Load the model (locally) or start the engine, so that a failure shows before any scoring."""

    @abstractmethod
    def score_chunks(self, chunks: Iterable[list[str]], forms: Iterable[Forms] | None = None) -> Iterator[np.ndarray]:
        """:func:`score_texts` of each chunk (with the forms of its texts: one entry of ``forms`` per chunk, where
        given), shape (len(chunk), len(OUTPUT_COLUMNS)), in order, as each is ready."""

    @abstractmethod
    def project(self, texts: list[str], forms: Forms = None) -> np.ndarray:
        """Scores of distinct, non-blank, prepared texts (the ``project`` of :func:`score_with`)."""

    @abstractmethod
    def axes(self) -> SCMAxes:
        """The axes the scores are made with, in this process (the cascade's triage reads their text head)."""


class LocalScorer(Scorer):
    """The embedder and axes of ``model.load()``, in this process."""

    def __init__(self, model: ModelLoader) -> None:
        self._loader = model
        self._model: tuple[Embedder, SCMAxes] | None = None

    def start(self) -> None:
        if self._model is None:
            self._model = self._loader.load()
            self.model_id = self._model[0].model_id

    def score_chunks(self, chunks: Iterable[list[str]], forms: Iterable[Forms] | None = None) -> Iterator[np.ndarray]:
        for chunk, chunk_forms in zip(chunks, repeat(None) if forms is None else forms):
            self.start()
            yield score_texts(chunk, *self._model, show_progress=False, forms=chunk_forms)

    def embedding_cache_counts(self) -> tuple[int, int] | None:
        embedder = self._model[0] if self._model else None
        return (embedder.reused, embedder.embedded) if hasattr(embedder, "reused") else None

    def project(self, texts: list[str], forms: Forms = None) -> np.ndarray:
        self.start()
        embedder, axes = self._model
        return axes.measure(embedder.encode(texts), texts, forms)

    def axes(self) -> SCMAxes:
        self.start()
        return self._model[1]
