"""The instrument as a Python object: loaded once for a language, model, backend and term set, then asked for the
mentions of a text, the scores of sentences, the scores of documents (streamed in batches) or a whole audit.

Every answer comes from the stages the command line runs: the matcher and segmenter of ``corpus-audit filter``
(:func:`~corpus_audit.corpus.filter.iter_kept_sentences`), the masking and scoring of ``corpus-audit audit``
(:func:`~corpus_audit.corpus.select.mask_mentions`, :func:`~corpus_audit.score.scorer.score_with`,
:func:`~corpus_audit.score.scorer.add_score_columns`), the document rule of ``corpus-audit documents``
(:func:`~corpus_audit.score.documents.document_scores`) and the audit pipeline itself
(:func:`~corpus_audit.audit.pipeline.run_audit`): one code path, so the API and the command line give the same
numbers.
"""

from __future__ import annotations

import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from corpus_audit.audit.documents import read_documents
from corpus_audit.audit.folder import AuditSummary
from corpus_audit.audit.pipeline import AuditOptions, run_audit
from corpus_audit.common.errors import UserError
from corpus_audit.corpus.documents import Document, ReaderOptions, ReadStats
from corpus_audit.corpus.filter import CorpusSpec, iter_kept_sentences
from corpus_audit.corpus.kept import BASE_COLUMNS, FilterSummary, KeptSentence
from corpus_audit.corpus.matcher import DEFAULT_TERM_SET, IllnessMatcher, default_lexicon_path, mention_forms
from corpus_audit.corpus.readers import iter_documents
from corpus_audit.corpus.segment import Segmenter
from corpus_audit.corpus.select import mask_mentions
from corpus_audit.engines import EngineOptions, make_scorer
from corpus_audit.languages import get_language
from corpus_audit.scm.columns import OUTPUT_COLUMNS
from corpus_audit.score.cascade import DEFAULT_SAMPLE_SHARE, check_sample_share, plan_cascade
from corpus_audit.score.documents import document_scores, rank_documents
from corpus_audit.score.scorer import CHUNK_SENTENCES, Forms, ModelSpec, Scorer, add_score_columns, score_with

#: Where a document that came from Python, not a file, says it came from (``Document.source``).
PYTHON_SOURCE = "<python>"


@dataclass(frozen=True)
class Mention:
    """An illness mention: ``text[start:end]`` of the text searched is ``surface``; ``type`` is mental or physical,
    ``form`` how the illness is named (diagnosis, generic, person, adjective, slang, treatment)."""

    surface: str
    start: int
    end: int
    illness: str
    type: str
    form: str


@dataclass
class DocumentBatch:
    """One batch of documents scored together: the documents, their illness sentences (the filter's columns plus
    the instrument's, one row per kept sentence, duplicates included), their document scores (the columns of
    ``corpus-audit documents``, ranked within the batch; documents without an illness sentence have no row) and,
    per document (in the order of ``documents``), its illness mentions per form and type, as ``corpus-audit
    filter`` counts them: ``{form: {"mental": n, "physical": n}}``."""

    documents: list[Document]
    sentences: pd.DataFrame
    scores: pd.DataFrame
    mentions: list[dict[str, dict[str, int]]] = field(default_factory=list)


@dataclass
class AuditResults:
    """A finished audit: ``summary`` is what ``summary.json`` holds, typed (``summary.analysis`` the results);
    ``documents`` the ranked documents table (``documents.parquet``; None when the axes have no stigma head);
    ``outdir`` the audit folder (None when the audit ran in a temporary folder, removed since)."""

    summary: AuditSummary
    documents: pd.DataFrame | None
    outdir: Path | None


@dataclass
class Skipped:
    """Records :meth:`Instrument.score_documents` could not read, by reason, with the first few examples."""

    counts: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def add(self, reason: str, where: str) -> None:
        self.counts[reason] += 1
        if len(self.examples) < 5:
            self.examples.append(f"{where}: {reason}")


class Instrument:
    """The instrument for one language: the illness lexicon (``terms``: ``extended`` or ``paper``; ``lexicon``: a
    CSV of your own), the sentence splitter, the embedding model (``model`` None: the language's default;
    ``backend``: how a sentence-transformers model runs) and its axes (``axes``: a file from ``corpus-audit axes
    train``; None: the shipped or cached ones). The model loads on the first scoring call, once.

    ``mask_terms``: replace each illness mention by the language's neutral phrase before scoring, as an audit does.
    ``embedding_cache``: a folder of the embedding cache (None: no cache). ``engine``: where scoring runs
    (:class:`~corpus_audit.engines.EngineOptions`; None: this process). ``cascade``: score documents as an audit
    with ``--cascade on --cascade-sample cascade_sample --seed seed`` does (score/cascade.py: the encoder reads the
    triage's band and the random sample, the triage the rest), so a document gets the audit's score.
    """

    def __init__(self, lang: str = "en", model: str | None = None, *, backend: str = "auto",
                 terms: str = DEFAULT_TERM_SET, lexicon: str | Path | None = None, axes: str | Path | None = None,
                 device: str = "cpu", batch_size: int = 64, mask_terms: bool = True, spacy_model: str | None = None,
                 embedding_cache: str | Path | None = None, engine: EngineOptions | None = None,
                 cascade: bool = False, cascade_sample: float = DEFAULT_SAMPLE_SHARE, seed: int = 0) -> None:
        self.language = get_language(lang)
        self.lang = lang
        self.terms = terms
        self.lexicon = str(lexicon) if lexicon else None
        self.mask_terms = mask_terms
        self.spacy_model = spacy_model
        self.engine = engine
        self.cascade = (check_sample_share(cascade_sample), seed) if cascade else None
        self.spec = ModelSpec(lang, model, device, batch_size, str(axes) if axes else None, backend=backend,
                              embedding_cache=str(embedding_cache) if embedding_cache else None)
        #: what the last :meth:`score_documents` or :meth:`iter_document_batches` could not read
        self.skipped = Skipped()
        #: what the readers of the last :meth:`read` saw (documents, bytes, records skipped by reason)
        self.read_stats = ReadStats()

    @cached_property
    def matcher(self) -> IllnessMatcher:
        """The illness matcher of the lexicon and term set (built on first use: an audit builds its own)."""
        return IllnessMatcher.from_csv(self.lexicon or default_lexicon_path(self.lang), self.terms)

    @cached_property
    def segmenter(self) -> Segmenter:
        return Segmenter(self.lang, self.spacy_model)

    @cached_property
    def _scorer(self) -> Scorer:
        """The scorer (the model loads on its first texts, once; an audit starts its own)."""
        return make_scorer(self.spec, self.engine)

    @property
    def model_id(self) -> str | None:
        """The embedding model's id, once loaded."""
        return self._scorer.model_id if "_scorer" in self.__dict__ else None

    def mentions(self, text: str) -> list[Mention]:
        """The illness mentions of ``text`` (a sentence or a short text), left to right."""
        return [Mention(match.surface, match.start, match.end, match.illness, match.type, match.form)
                for match in self.matcher.find(text)]

    def _masked(self, text: str) -> tuple[str, tuple[str, ...]]:
        """``text`` as the instrument reads it (masked, unless the instrument keeps mentions), and what the stigma
        score reads of its mentions (:func:`~corpus_audit.corpus.matcher.mention_forms`)."""
        matches = self.matcher.find(text)
        masked = mask_mentions(text, [(match.start, match.end) for match in matches],
                               self.language.mask) if self.mask_terms else text
        return masked, mention_forms([match.form for match in matches], [match.surface for match in matches])

    def score_sentences(self, texts: Sequence[str] | str) -> pd.DataFrame:
        """One row per text: ``sentence`` (as given), then the columns of ``corpus-audit score``: warmth,
        competence, the judgement gate's probabilities, the nine ``dim_<dimension>`` scores, ``stigma`` (the
        signed stigma score, in [0, 1]), ``category`` and ``top_dimension``. Blank texts get empty scores."""
        texts = [texts] if isinstance(texts, str) else list(texts)
        masked = [self._masked(text) for text in texts]
        scores = score_with([text for text, _ in masked], self._project, forms=[forms for _, forms in masked])
        return add_score_columns(pd.DataFrame({"sentence": texts}), scores)

    def _project(self, texts: list[str], forms: Forms = None) -> Any:
        return self._scorer.project(texts, forms)

    def _cascade_project(self, texts: list[str], forms: Forms = None) -> Any:
        """:meth:`_project` through the cascade: the encoder on the band and the random sample only."""
        plan = plan_cascade(self._scorer.axes(), texts, *self.cascade, forms)
        chosen, chosen_forms = plan.for_encoder(texts, forms)
        encoded = self._scorer.project(chosen, chosen_forms) if chosen \
            else np.empty((0, len(OUTPUT_COLUMNS)), dtype=np.float32)
        return plan.combine(encoded)

    def read(self, paths: str | Path | Iterable[str | Path], text_field: str = "text", id_field: str = "id",
             line_docs: bool = False) -> Iterator[Document]:
        """The documents of files, globs or folders, read as ``corpus-audit audit`` reads them (ids: the
        ``id_field`` value, else ``FILE:LINE``); bad records are skipped and counted in ``self.read_stats``."""
        paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
        self.read_stats = ReadStats()
        return iter_documents([str(path) for path in paths],
                              ReaderOptions(text_field=text_field, id_field=id_field, line_docs=line_docs),
                              self.read_stats)

    def iter_document_batches(self, documents: Iterable[Any], batch_sentences: int = CHUNK_SENTENCES,
                              text_field: str = "text", id_field: str = "id") -> Iterator[DocumentBatch]:
        """Score ``documents`` in batches of about ``batch_sentences`` illness sentences (a document is never split):
        one model call per batch, however many documents it holds. ``documents``: texts, records (mappings with
        ``text_field`` and, optionally, ``id_field``), (id, text) pairs or :class:`Document` objects. A record
        without a text is skipped and counted in ``self.skipped``."""
        self.skipped = Skipped()
        batch: list[Document] = []
        kept: list[KeptSentence] = []
        mentions: list[dict[str, dict[str, int]]] = []
        for doc in self._documents(documents, text_field, id_field):
            counted = FilterSummary(lang=self.lang)  # one document's counts: its mentions per form and type
            batch.append(doc)
            kept.extend(iter_kept_sentences((doc,), self.matcher, self.segmenter, counted))
            mentions.append(counted.form_counts())
            if len(kept) >= batch_sentences:
                yield self._score_batch(batch, kept, mentions)
                batch, kept, mentions = [], [], []
        if batch:
            yield self._score_batch(batch, kept, mentions)
        if self.skipped.counts:
            warnings.warn(f"skipped {sum(self.skipped.counts.values())} record(s): "
                          + "; ".join(f"{reason}: {count}" for reason, count in self.skipped.counts.items())
                          + f" (e.g. {self.skipped.examples[0]})", stacklevel=2)

    def score_documents(self, documents: Iterable[Any], batch_sentences: int = CHUNK_SENTENCES,
                        text_field: str = "text", id_field: str = "id") -> pd.DataFrame:
        """The document scores of ``documents`` (see :meth:`iter_document_batches`) by the rule of ``corpus-audit
        documents``, ranked over them all: ``rank``, ``doc_id``, ``stigma_score`` (of the document's most
        stigmatising illness sentence), ``top_sentence`` and its category and AQ-27 dimension, the counts of
        sentences (scored, mental, physical, judgements), ``illnesses`` and one ``dim_<dimension>`` per AQ-27
        dimension. Documents without an illness sentence have no row."""
        tables = [batch.scores for batch in self.iter_document_batches(documents, batch_sentences, text_field,
                                                                          id_field)]
        tables = [table for table in tables if len(table)]
        if not tables:
            return pd.DataFrame(columns=["rank", "doc_id"])
        return rank_documents(pd.concat(tables, ignore_index=True))

    def _documents(self, documents: Iterable[Any], text_field: str, id_field: str) -> Iterator[Document]:
        for position, item in enumerate(documents):
            if isinstance(item, Document):
                yield item
                continue
            meta: dict[str, Any] = {}
            if isinstance(item, str):
                doc_id, text = None, item
            elif isinstance(item, Mapping):
                doc_id, text, meta = item.get(id_field), item.get(text_field), dict(item)
            elif isinstance(item, tuple) and len(item) == 2:
                doc_id, text = item
            else:
                self.skipped.add(f"not a text, record or (id, text) pair: {type(item).__name__}",
                                 f"document {position}")
                continue
            if not isinstance(text, str) or not text.strip():
                self.skipped.add(f"no text in {text_field!r}" if isinstance(item, Mapping) else "no text",
                                 f"document {position}")
                continue
            yield Document(str(position) if doc_id is None else str(doc_id), text, meta, PYTHON_SOURCE, position)

    def _score_batch(self, documents: list[Document], kept: list[KeptSentence],
                     mentions: list[dict[str, dict[str, int]]]) -> DocumentBatch:
        rows = pd.DataFrame([sentence.to_row() for sentence in kept], columns=list(BASE_COLUMNS))
        if rows.empty:
            return DocumentBatch(documents, rows, pd.DataFrame(columns=["rank", "doc_id"]), mentions)
        mask = self.language.mask
        texts = [mask_mentions(sentence, offsets, mask) if self.mask_terms else sentence
                 for sentence, offsets in zip(rows["sentence"], rows["term_offsets"])]
        # score_with embeds each distinct text once, as the audit scores each distinct sentence once
        forms = [mention_forms(sentence_forms, terms) for sentence_forms, terms in zip(rows["forms"], rows["terms"])]
        sentences = add_score_columns(rows.drop(columns="term_offsets"),
                                      score_with(texts, self._cascade_project if self.cascade else self._project,
                                                 forms=forms), quadrant=True)
        return DocumentBatch(documents, sentences, document_scores(rows, sentences), mentions)

    def audit(self, corpus: str | Path | Iterable[Any] | CorpusSpec, outdir: str | Path | None = None, *,
              text_field: str = "text", id_field: str = "id", log: Callable[[str], None] | None = None,
              progress: bool = False, force: bool = False, **options: Any) -> AuditResults:
        """Run ``corpus-audit audit`` on ``corpus`` (a path, a list of paths or globs, an iterable of records, or a
        :class:`~corpus_audit.corpus.filter.CorpusSpec`, which says how to read it) into ``outdir`` (None: a
        temporary folder, removed once the results are read) and return its results. ``options``: the other
        fields of :class:`~corpus_audit.audit.pipeline.AuditOptions` (``max_sentences``, ``bias_map``, ``seed``,
        ``group_by``, ``keep_fields``, ``workers``). Records (mappings) are written to a JSON Lines file in a
        temporary folder first. The model and the BIAS map are checked before the corpus is read."""
        from corpus_audit.stigma.bias_map import load_bias_map

        engine = self.engine or EngineOptions()
        if self.cascade:  # the instrument's cascade, unless the call says otherwise
            options = {"cascade": "on", "cascade_sample": self.cascade[0], "seed": self.cascade[1], **options}
        audit_options = AuditOptions(lang=self.lang, model=self.spec.model, device=self.spec.device,
                                     batch_size=self.spec.batch_size, backend=self.spec.backend,
                                     axes_path=self.spec.axes_path, lexicon=self.lexicon, terms=self.terms,
                                     spacy_model=self.spacy_model, mask_terms=self.mask_terms,
                                     embedding_cache=self.spec.embedding_cache, engine=engine, **options)
        if audit_options.group_by and audit_options.group_by not in audit_options.keep_fields:
            audit_options.keep_fields = (*audit_options.keep_fields, audit_options.group_by)
        # Fail now, not when the filter is done; with Ray the GPUs are the cluster's, checked when scoring starts.
        audit_options.model_spec().check(device="cpu" if engine.is_ray else None)
        load_bias_map(audit_options.bias_map)
        with tempfile.TemporaryDirectory(prefix="corpus-audit-api-") as scratch:
            spec = corpus if isinstance(corpus, CorpusSpec) else CorpusSpec(
                _as_inputs(corpus, Path(scratch)), ReaderOptions(text_field=text_field, id_field=id_field),
                seed=audit_options.seed)
            folder = Path(outdir) if outdir is not None else Path(scratch) / "audit"
            summary = run_audit(spec, folder, audit_options, log=log or (lambda message: None), progress=progress,
                                force=force)
            documents = read_documents(folder) if (folder / "documents.parquet").is_file() else None
        return AuditResults(summary, documents, Path(outdir) if outdir is not None else None)


def _as_inputs(corpus: str | Path | Iterable[Any], scratch: Path) -> tuple[str, ...]:
    """Paths of ``corpus``: itself (a path), its items (paths), or a JSON Lines file in ``scratch`` holding its
    records."""
    import orjson

    if isinstance(corpus, (str, Path)):
        return (str(corpus),)
    items = iter(corpus)
    first = next(items, None)
    if first is None:
        return ()
    if isinstance(first, (str, Path)):
        return (str(first), *(str(item) for item in items))
    path = scratch / "records.jsonl"
    with open(path, "wb") as handle:
        for position, record in enumerate(_chain(first, items)):
            if not isinstance(record, Mapping):
                raise UserError(f"record {position} is a {type(record).__name__}: an audit reads paths, or records "
                                "(mappings with a text field)")
            handle.write(orjson.dumps(dict(record), default=str) + b"\n")
    return (str(path),)


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest
