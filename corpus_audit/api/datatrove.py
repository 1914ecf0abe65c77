"""corpus-audit as datatrove pipeline steps (``pip install "corpus-audit[datatrove]"``; docs/api.md shows a
pipeline): :class:`StigmaAnnotator` writes each document's illness mentions and stigma score to ``doc.metadata``,
:class:`StigmaFilter` drops the documents above a threshold (or a top share), with datatrove's exclusion writer
keeping what it dropped and why.

The annotator scores documents in batches (:meth:`Instrument.iter_document_batches`: one model call per batch of
about ``batch_sentences`` illness sentences), by the rule of ``corpus-audit documents``, so a document's
``stigma_score`` is the one an audit of the same corpus gives it. A document it cannot score (no text, written in
another language, metadata that is not a mapping) is counted in the step's stats and passed through unchanged.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterator
from typing import Any

from datatrove.data import Document as DatatroveDocument
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.filters.base_filter import BaseFilter
from datatrove.pipeline.writers.disk_base import DiskWriter

from corpus_audit.api.instrument import Instrument
from corpus_audit.corpus.documents import Document
from corpus_audit.languages import get_language, guess_language
from corpus_audit.score.documents import STIGMA_SCORE
from corpus_audit.score.scorer import CHUNK_SENTENCES
from corpus_audit.stigma.judgement import TOP_DIMENSION_COLUMN

#: The metadata the annotator writes. ``stigma_score``: the document's score (None: no illness sentence);
#: ``stigma_top_dimension``: the AQ-27 dimension of its most stigmatising sentence, where that sentence judges
#: people; ``stigma_top_sentence``: that sentence; ``illness_sentences``: its sentences that mention an illness;
#: ``illness_mentions``: its mentions per form and type, ``{form: {"mental": n, "physical": n}}``.
SCORE_KEY = STIGMA_SCORE
TOP_DIMENSION_KEY = "stigma_top_dimension"
TOP_SENTENCE_KEY = "stigma_top_sentence"
SENTENCES_KEY = "illness_sentences"
MENTIONS_KEY = "illness_mentions"
#: Why the annotator passed a document through unscored (also the name of its stat).
SKIPPED_KEY = "stigma_skipped"
NO_TEXT, OTHER_LANGUAGE, BAD_METADATA = "skipped_no_text", "skipped_other_language", "skipped_bad_metadata"


class StigmaAnnotator(PipelineStep):
    """Annotate documents with corpus-audit's illness mentions and stigma score (the metadata keys above).

    ``lang``, ``model`` and the other keyword arguments are :class:`~corpus_audit.api.Instrument`'s; the
    instrument is built in the worker, once per task (the step itself stays small to pickle for Slurm or Ray).
    ``language_key``: a metadata field holding the document's language (e.g. datatrove's ``LanguageFilter``
    writes ``language``); a document whose field names another language, or whose text reads as another
    language corpus-audit knows, is passed through unscored. The text is read only when it has enough words for a
    guess (:func:`~corpus_audit.languages.guess_language`: at least ``MIN_WORDS``, 200); a shorter document is
    scored in ``lang`` unless its ``language_key`` says otherwise (docs/api.md, "The language rule").
    """

    name = "🩺 corpus-audit stigma annotator"
    type = "📊 - STATS"

    def __init__(self, lang: str = "en", model: str | None = None, *, batch_sentences: int = CHUNK_SENTENCES,
                 language_key: str = "language", **instrument_options: Any) -> None:
        super().__init__()
        self.lang = lang
        self.model = model
        self.batch_sentences = batch_sentences
        self.language_key = language_key
        self.instrument_options = instrument_options
        inspect.signature(Instrument).bind(lang, model, **instrument_options)  # a typo fails when the pipeline is built
        self._instrument: Instrument | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_instrument": None}  # each worker builds its own

    @property
    def instrument(self) -> Instrument:
        if self._instrument is None:
            self._instrument = Instrument(self.lang, self.model, **self.instrument_options)
        return self._instrument

    def _skip_reason(self, doc: DatatroveDocument) -> str | None:
        if not isinstance(doc.metadata, dict):
            return BAD_METADATA
        if not isinstance(doc.text, str) or not doc.text.strip():
            return NO_TEXT
        language = doc.metadata.get(self.language_key)
        if language is not None and not isinstance(language, str):
            return BAD_METADATA
        if language and not get_language(self.lang).names(language):
            return OTHER_LANGUAGE
        guessed = guess_language([doc.text])
        return OTHER_LANGUAGE if guessed is not None and guessed != self.lang else None

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data is None:
            return
        # documents read but not yet passed on, each with its key in the batches (None: passed through unscored)
        pending: list[tuple[DatatroveDocument, str | None]] = []

        def scorable() -> Iterator[Document]:
            for position, doc in enumerate(data):
                reason = self._skip_reason(doc)
                key = None if reason else str(position)
                pending.append((doc, key))
                if reason is not None:
                    self.stat_update(reason)
                    if isinstance(doc.metadata, dict):
                        doc.metadata[SKIPPED_KEY] = reason
                    continue
                yield Document(key, doc.text, {}, "datatrove", position)

        batches = self.instrument.iter_document_batches(scorable(), self.batch_sentences)
        while True:
            with self.track_time("batch"):  # reading, splitting, matching and scoring one batch
                batch = next(batches, None)
            if batch is None:
                break
            self.stat_update("batches")
            scores = batch.scores.set_index("doc_id").to_dict("index") if len(batch.scores) else {}
            mentions = dict(zip((doc.id for doc in batch.documents), batch.mentions))
            for doc, key in pending:
                if key is not None:
                    self._annotate(doc, scores.get(key), mentions[key])
                yield doc
            pending.clear()
        yield from (doc for doc, _ in pending)  # documents passed through after the last batch

    def _annotate(self, doc: DatatroveDocument, row: dict[str, Any] | None,
                  mentions: dict[str, dict[str, int]]) -> None:
        score = None if row is None or _missing(row[STIGMA_SCORE]) else float(row[STIGMA_SCORE])
        top_dimension = None if row is None or _missing(row[TOP_DIMENSION_COLUMN]) else row[TOP_DIMENSION_COLUMN]
        doc.metadata.update({
            SCORE_KEY: score, TOP_DIMENSION_KEY: top_dimension,
            TOP_SENTENCE_KEY: None if row is None else row["top_sentence"],
            SENTENCES_KEY: 0 if row is None else int(row["n_sentences"]), MENTIONS_KEY: mentions})
        self.stat_update("documents_annotated")
        if row is not None:
            self.stat_update("documents_with_illness_sentences")
        if score is not None:
            self.stat_update(SCORE_KEY, value=score)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


#: The filter's threshold when it is given no rule: the calibrated stigma score's own decision point (a sentence
#: scoring at least 0.5 is more likely stigmatising than not).
DEFAULT_THRESHOLD = 0.5


class StigmaFilter(BaseFilter):
    """Drop the documents whose ``stigma_score`` (written by :class:`StigmaAnnotator`) is at least ``threshold``
    (:data:`DEFAULT_THRESHOLD` when neither rule is given), or the ``top_share`` (0 to 1) highest-scoring documents
    of each window of ``window`` documents (a task's whole shard when it holds fewer; ties at the cut all
    dropped). Give at most one of the two.

    Documents without a score (no illness sentence, or passed through unscored) are kept; a score that is not a
    number is counted (``unreadable_stigma_score``) and kept: nothing is removed that the rule did not choose.
    ``exclusion_writer``: a datatrove writer that keeps the dropped documents, ``metadata["filter_reason"]``
    saying why.
    """

    name = "🩺 corpus-audit stigma filter"

    def __init__(self, threshold: float | None = None, top_share: float | None = None,
                 exclusion_writer: DiskWriter | None = None, window: int = 100_000) -> None:
        if threshold is not None and top_share is not None:
            raise ValueError("give one of threshold (drop documents scoring at least this) or top_share (drop that "
                             "share of the highest-scoring documents), not both")
        if top_share is None and threshold is None:
            threshold = DEFAULT_THRESHOLD
        if threshold is not None and not 0 <= threshold <= 1:
            raise ValueError(f"threshold must be in [0, 1] (a stigma score), not {threshold}")
        if top_share is not None and not 0 < top_share < 1:
            raise ValueError(f"top_share must be in (0, 1), not {top_share}")
        super().__init__(exclusion_writer, batch_size=window if top_share is not None else 1)
        self.threshold = threshold
        self.top_share = top_share

    def _score(self, doc: DatatroveDocument) -> float | None:
        score = doc.metadata.get(SCORE_KEY) if isinstance(doc.metadata, dict) else None
        if score is None:
            self.stat_update("kept_unscored")
            return None
        if isinstance(score, bool) or not isinstance(score, (int, float)) or math.isnan(score):
            self.stat_update("unreadable_stigma_score")
            return None
        return float(score)

    def filter(self, doc: DatatroveDocument) -> bool | tuple[bool, str]:
        score = self._score(doc)
        if score is None or score < self.threshold:
            return True
        return False, f"stigma_score>={self.threshold:g}"

    def filter_batch(self, batch: list[DatatroveDocument]) -> list[bool | tuple[bool, str]]:
        if self.top_share is None:
            return [self.filter(doc) for doc in batch]
        scores = [self._score(doc) for doc in batch]
        scored = sorted((score for score in scores if score is not None), reverse=True)
        dropped = math.ceil(self.top_share * len(scored))
        if not dropped:
            return [True] * len(batch)
        cut = scored[dropped - 1]
        reason = f"stigma_score_top_{self.top_share:.0%}"
        return [True if score is None or score < cut else (False, reason) for score in scores]
