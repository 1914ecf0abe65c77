"""Where the heavy stages run: ``local`` (this process and its worker processes) or ``ray`` (Ray Data).

Engines call the stages (``corpus_audit.corpus``, ``corpus_audit.score``); the stages never import an engine.
What an engine receives is picklable: reading options, the matcher and segmenter, a
:class:`~corpus_audit.score.scorer.ModelSpec`.

This module never imports Ray: :mod:`corpus_audit.engines.ray` is imported only when ``--engine ray`` is chosen,
so the default install needs no Ray and the local engine pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from corpus_audit.corpus.filter import CorpusSpec, lexicon_info, run_filter
from corpus_audit.corpus.kept import FilterSummary
from corpus_audit.corpus.matcher import DEFAULT_TERM_SET, IllnessMatcher, default_lexicon_path
from corpus_audit.corpus.prefilter import prefilter_available
from corpus_audit.corpus.readers import ignored_files, iter_documents, iter_line_batches, line_batch_files
from corpus_audit.corpus.segment import Segmenter
from corpus_audit.engines.local import default_workers, run_filter_parallel
from corpus_audit.engines.options import ENGINES, RAY_INSTALL_HINT, EngineError, EngineOptions
from corpus_audit.score.scorer import LocalScorer, ModelSpec, Scorer

__all__ = ["ENGINES", "RAY_INSTALL_HINT", "EngineError", "EngineOptions", "filter_corpus", "make_scorer"]


def make_scorer(model: ModelSpec, engine: EngineOptions | None = None) -> Scorer:
    """The scorer of ``engine``: in this process, or Ray actors that each load ``model`` once (one GPU each when
    ``model.device`` is cuda)."""
    if engine is None or not engine.is_ray:
        return LocalScorer(model)
    from corpus_audit.engines.ray import RayScorer

    return RayScorer(model, engine)


def filter_corpus(
    spec: CorpusSpec,
    output: str | Path,
    lang: str,
    lexicon_path: str | Path | None = None,
    spacy_model: str | None = None,
    keep_fields: Iterable[str] = (),
    workers: int | None = None,
    progress: bool = False,
    engine: EngineOptions | None = None,
    terms: str = DEFAULT_TERM_SET,
) -> FilterSummary:
    """Filter a corpus into ``output`` (Parquet) and its summary JSON; the entry point of ``filter`` and ``audit``.

    Local engine: JSON Lines files are spread over ``workers`` processes, after a pre-filter of their raw lines in
    this process (``corpus_audit.corpus.prefilter``; default: one worker per CPU but this process's); other inputs,
    and
    runs with ``limit``/``sample`` (which need one ordered stream), are read in this process. Ray engine: see
    :func:`corpus_audit.engines.ray.filter_corpus_ray` (same rows and counts). ``terms``: the term set of the
    lexicon (``paper``: its diagnosis rows, the seed paper's list; ``extended``: every form). Raises ``CorpusError``,
    ``LexiconError``, ``SegmenterError``, ``EngineError`` or ``OSError`` for the caller to report.
    """
    lexicon_path = lexicon_path or default_lexicon_path(lang)
    matcher = IllnessMatcher.from_csv(lexicon_path, terms)
    segmenter = Segmenter(lang, spacy_model)
    summary = FilterSummary(lang=lang, extra=lexicon_info(lexicon_path, terms))
    summary.reading.ignored = ignored_files(spec.inputs)
    if engine is not None and engine.is_ray:
        from corpus_audit.engines.ray import filter_corpus_ray

        return filter_corpus_ray(spec, output, matcher, segmenter, summary, list(keep_fields), engine, progress)
    prefilter = prefilter_available()
    if workers is None:
        # By default this process pre-filters the lines and a worker runs on each CPU.
        workers = default_workers()
        parallel = prefilter or workers > 1
    else:
        parallel = workers > 1
    one_stream = spec.hf_dataset or spec.limit or spec.sample
    files = line_batch_files(spec.inputs, spec.options) if parallel and not one_stream else None
    if files:
        batches = iter_line_batches(files, summary.reading)
        return run_filter_parallel(batches, spec.options, summary, output, matcher, segmenter, keep_fields, workers,
                                   progress, prefilter)
    documents = iter_documents(spec.inputs, spec.options, summary.reading, limit=spec.limit, sample=spec.sample,
                               seed=spec.seed, hf_dataset=spec.hf_dataset, hf_config=spec.hf_config,
                               hf_split=spec.hf_split)
    return run_filter(documents, summary, output, matcher, segmenter, keep_fields, progress=progress)
