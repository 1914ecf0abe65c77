"""The audit pipeline: filter -> score -> report, each a :class:`Stage` record with a checkpoint.

A stage names what its output depends on (input files' sizes and times, reading options, lexicon, model, axes,
options, package version) and the files it writes. ``checkpoints.json`` records, for each finished stage, a digest
of each dependency and of each output. A rerun skips every stage whose digests all match and runs the rest, saying
why (what changed, which output is missing or damaged, or that checkpoints.json is unreadable), so an interrupted
or repeated audit never redoes finished work and never trusts a damaged file. Every file is written atomically
(temporary file + rename); the temporary files of a killed run are removed on the next.

Where the work runs (``--engine``, ``--workers``, ``--device``, ``--batch-size``) is in no stage's dependencies:
every engine gives the same outputs. Adding a stage is one record in :data:`STAGES`. The file names are
:mod:`corpus_audit.audit.folder`'s.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from corpus_audit.common.version import __version__
from corpus_audit.audit.folder import AuditFolder, AuditSummary, ScoreRecord, statistics_rows
from corpus_audit.audit.results import AnalysisSummary
from corpus_audit.common.atomic import (atomic_path, check_output_location, folder_lock, remove_temporaries,
                                        write_text_atomic)
from corpus_audit.common.checkpoints import NOT_RUN, Checkpoints, fingerprint
from corpus_audit.common.errors import Interrupted, UserError
from corpus_audit.common.resources import SHIPPED_AXES_DIR, data_file, sha256_file, sha256_files
from corpus_audit.corpus.filter import CorpusSpec
from corpus_audit.corpus.matcher import DEFAULT_TERM_SET, default_lexicon_path, lexicon_files
from corpus_audit.embed import model_identity
from corpus_audit.engines import EngineOptions, filter_corpus, make_scorer
from corpus_audit.languages import get_language
from corpus_audit.scm.columns import OUTPUT_COLUMNS, STIGMA_COLUMN
from corpus_audit.score.cascade_options import DEFAULT_SAMPLE_SHARE
from corpus_audit.score.scorer import ModelSpec

#: Options that say where the work runs, not what it computes: left out of every checkpoint.
ENGINE_OPTIONS = ("engine", "workers", "device", "batch_size", "embedding_cache")


@dataclass
class AuditOptions:
    """The options of an audit, as ``summary.json`` records them (``--model`` etc. of ``corpus-audit audit``)."""

    lang: str
    model: str | None = None
    device: str = "cpu"
    batch_size: int = 64
    backend: str = "auto"  # corpus_audit.embed.BACKENDS
    axes_path: str | None = None
    lexicon: str | None = None
    terms: str = DEFAULT_TERM_SET  # the lexicon's term set: paper (diagnoses) or extended (every form)
    spacy_model: str | None = None
    keep_fields: tuple[str, ...] = ()
    workers: int | None = None
    max_sentences: int | None = None  # per illness type, uniform sample
    bias_map: str | None = None  # BIAS-map CSV; None: the bundled lexicons/bias_map.csv
    # On by default: on the real corpora the illness word alone moved the mental-physical gap by 0.05-0.09
    # (docs/findings.md); masking leaves only what the sentence says.
    mask_terms: bool = True
    seed: int = 0
    group_by: str | None = None  # a keep-field to break the report down by
    # The cascade (score/cascade.py): a triage over every sentence, the encoder on its band and a random sample.
    cascade: str = "auto"  # CASCADE_MODES
    cascade_sample: float = DEFAULT_SAMPLE_SHARE
    engine: EngineOptions = field(default_factory=EngineOptions)
    embedding_cache: str | None = None  # folder of the embedding cache (corpus_audit.embed.cache); None: none

    def model_spec(self) -> ModelSpec:
        return ModelSpec(self.lang, self.model, self.device, self.batch_size, self.axes_path, backend=self.backend,
                         embedding_cache=self.embedding_cache)

    def results_options(self) -> dict[str, Any]:
        """The options that decide the results (every option but ENGINE_OPTIONS)."""
        return {name: value for name, value in asdict(self).items() if name not in ENGINE_OPTIONS}


@dataclass
class AuditRun:
    """What the stages of one run share."""

    spec: CorpusSpec
    folder: AuditFolder
    options: AuditOptions
    log: Callable[[str], None]
    progress: bool
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Stage:
    """One checkpointed step: ``depends_on(run)`` names each thing its outputs depend on (digested into the
    checkpoint), ``outputs(folder)`` the files it writes, ``run(run, depends_on)`` does the work. ``label`` is how
    the log calls it; ``when_skipped(run)`` tidies up after a skip."""

    name: str
    label: str
    depends_on: Callable[[AuditRun], dict[str, Any]]
    outputs: Callable[[AuditFolder], tuple[Path, ...]]
    run: Callable[[AuditRun, dict[str, Any]], None]
    when_skipped: Callable[[AuditRun], None] = lambda run: None


def _filter_depends(run: AuditRun) -> dict[str, Any]:
    options = run.options
    return {"input files": run.spec.identity(), "reading options": asdict(run.spec), "lang": options.lang,
            "lexicon": sha256_files(lexicon_files(options.lexicon or default_lexicon_path(options.lang))),
            "terms": options.terms,
            "spacy_model": options.spacy_model, "keep_fields": options.keep_fields, "package version": __version__}


def _run_filter(run: AuditRun, depends_on: dict[str, Any]) -> None:
    options = run.options
    summary = filter_corpus(run.spec, run.folder.filtered, options.lang, options.lexicon, options.spacy_model,
                            options.keep_fields, options.workers, run.progress, options.engine,
                            options.terms)
    if not summary.sentences_kept:  # nothing to score: a verdict on 0 sentences would be no answer
        lost = "; ".join(summary.warnings)
        raise UserError(f"nothing to audit: no sentence of the {summary.reading.documents:,} document(s) read mentions "
                        f"an illness of the {options.lang} lexicon (is --lang right? is this the corpus you meant?)"
                        + (f"; {lost}" if lost else ""))
    _check_group_by(run)


def _check_group_by(run: AuditRun) -> None:
    """:class:`UserError` naming the records' fields when no kept sentence has a value of ``--group-by``: a field no
    record has (a typo) would otherwise give a breakdown with one group, "(none)"."""
    import pyarrow.parquet as pq

    from corpus_audit.corpus.documents import ReadStats
    from corpus_audit.corpus.filter import SOURCE_FILE
    from corpus_audit.corpus.readers import iter_documents

    field = run.options.group_by
    if not field:
        return
    values = pq.read_table(run.folder.filtered, columns=[field]).column(field)
    if values.null_count < len(values):
        return
    spec = run.spec
    first = next(iter_documents(spec.inputs, spec.options, ReadStats(), limit=1, hf_dataset=spec.hf_dataset,
                                hf_config=spec.hf_config, hf_split=spec.hf_split), None)
    fields = sorted(first.meta) if first is not None else []
    raise UserError(f"--group-by {field}: no record with an illness mention has this field; the records' fields: "
                    f"{', '.join(fields) or '(none)'}, or {SOURCE_FILE} (the input file)")


def _score_depends(run: AuditRun) -> dict[str, Any]:
    options = run.options
    return {"filtered sentences": sha256_file(run.folder.filtered),
            "model": model_identity(options.model or get_language(options.lang).default_model),
            "backend": options.backend,
            "axes": sha256_file(Path(options.axes_path)) if options.axes_path else None,
            # without --axes, the shipped axes of the language and its stance branch (a release may refit them)
            "shipped axes": None if options.axes_path else {
                path.name: sha256_file(path) for path in sorted(SHIPPED_AXES_DIR.glob(f"{options.lang}-*"))
                if path.suffix in (".npz", ".safetensors")},
            "mask_terms": options.mask_terms, "max_sentences": options.max_sentences, "seed": options.seed,
            "cascade": [options.cascade, options.cascade_sample], "package version": __version__}


def _run_score(run: AuditRun, depends_on: dict[str, Any]) -> None:
    from corpus_audit.audit.score_parts import ScoreParts
    from corpus_audit.corpus.matcher import mention_forms
    from corpus_audit.corpus.select import mask_mentions, select_sentences
    from corpus_audit.score.cascade import (DESIGN_WEIGHT_COLUMN, ENCODER, IN_SAMPLE_COLUMN, SCORED_BY_COLUMN,
                                            TRIAGE, TriageCalibration, cascade_runs, plan_cascade)
    from corpus_audit.score.scorer import add_score_columns, prepare_text

    options, folder = run.options, run.folder
    frame, duplicates = select_sentences(folder.filtered, options.max_sentences, options.seed)
    mask = get_language(options.lang).mask
    texts = [mask_mentions(sentence, offsets, mask) if options.mask_terms else sentence
             for sentence, offsets in zip(frame["sentence"], frame["term_offsets"])]
    # The stigma head reads the forms of each sentence's mentions and its slang words (the mask erases them).
    forms = [mention_forms(sentence_forms, terms) for sentence_forms, terms in zip(frame["forms"], frame["terms"])]
    started = time.perf_counter()
    scorer = make_scorer(options.model_spec(), options.engine)
    plan = None
    if cascade_runs(options.cascade, len(texts)) and not (
            options.cascade == "auto" and TriageCalibration.of(scorer.axes()) is None):
        plan = plan_cascade(scorer.axes(), [prepare_text(text)[0] for text in texts], options.cascade_sample,
                            options.seed, forms)
        run.log(f"score: cascade: the encoder reads {int(plan.encoded.sum()):,} of {len(texts):,} sentences "
                f"({int(plan.band.sum()):,} in the triage band, {int(plan.sample.sum()):,} in the random sample)")
        texts, forms = plan.for_encoder(texts, forms)
    parts = ScoreParts(folder.score_parts, fingerprint(depends_on), len(texts))
    scores = parts.score(texts, scorer, run.log, run.progress, forms)
    embedding_seconds = time.perf_counter() - started
    cached = scorer.embedding_cache_counts()
    if cached is not None:
        run.log(f"score: {cached[0]} sentence(s) from the embedding cache, {cached[1]} embedded "
                f"({options.embedding_cache})")
    cascade = None
    if plan is not None:
        scores = plan.combine(scores)
        cascade = plan.record(scores[:, OUTPUT_COLUMNS.index(STIGMA_COLUMN)])
    # The offsets served the masking; sentences.parquet keeps the filter's other columns.
    frame = add_score_columns(frame.drop(columns="term_offsets"), scores, quadrant=True)
    if plan is not None:
        frame[SCORED_BY_COLUMN] = np.where(plan.encoded, ENCODER, TRIAGE)
        frame[IN_SAMPLE_COLUMN] = plan.sample
        frame[DESIGN_WEIGHT_COLUMN] = plan.design_weights(frame["illness_type"].to_numpy())
    with atomic_path(folder.sentences) as tmp:
        frame.to_parquet(tmp, index=False)
    record = ScoreRecord(parts.model_id, duplicates, len(frame), embedding_seconds, options.mask_terms,
                         *(cached or (None, None)), cascade=cascade)
    write_text_atomic(folder.score_summary, json.dumps(record.to_dict()))
    parts.remove()


def _remove_score_parts(run: AuditRun) -> None:
    shutil.rmtree(run.folder.score_parts, ignore_errors=True)  # left if a run was killed right after marking


def _report_depends(run: AuditRun) -> dict[str, Any]:
    options, folder = run.options, run.folder
    return {"scored sentences": sha256_file(folder.sentences), "filter summary": sha256_file(folder.filtered_summary),
            "score summary": sha256_file(folder.score_summary), "options": options.results_options(),
            "inputs": list(run.spec.inputs),
            "bias map": sha256_file(Path(options.bias_map) if options.bias_map else data_file("lexicons", "bias_map.csv")),
            "package version": __version__}


def _run_report(run: AuditRun, depends_on: dict[str, Any]) -> None:
    import pandas as pd

    from corpus_audit.audit.analysis import AnalysisResult, analyse
    from corpus_audit.audit.documents import write_documents
    from corpus_audit.audit.figures import analyse_and_write_figures
    from corpus_audit.audit.report import write_report
    from corpus_audit.stigma.bias_map import load_bias_map

    options, folder = run.options, run.folder
    started = time.perf_counter()
    sentences = pd.read_parquet(folder.sentences)
    # After a cascade the statistics and figures read the sentences the encoder read, each weighted by how many
    # sentences it stands for (unweighted, the triage's band would bias them); the documents read every sentence.
    sample = statistics_rows(sentences, weighted=True)

    def analyse_and_write() -> AnalysisResult:
        result = analyse(sample, bias_map=load_bias_map(options.bias_map), seed=options.seed,
                         group_by=options.group_by)
        with atomic_path(folder.aq27) as tmp:
            result.bias_map.to_csv(tmp, index=False)
        write_documents(folder, sentences)
        run.seconds["analyse"] = time.perf_counter() - started
        return result

    result = analyse_and_write_figures(sample, analyse_and_write, folder)
    run.seconds["plot"] = time.perf_counter() - started - run.seconds["analyse"]
    folder.write_summary(AuditSummary(
        corpus={"inputs": list(run.spec.inputs), "hf_dataset": run.spec.hf_dataset,
                "reading": asdict(run.spec.options)}, options=asdict(options),
        package_version=__version__, filter=folder.read_filter_summary(), score=folder.read_score_record(),
        analysis=AnalysisSummary.from_dict(result.to_dict()), seconds=run.seconds))
    write_report(folder)  # reads summary.json and the figures, so it comes last


STAGES: tuple[Stage, ...] = (
    Stage("filter", "filter", _filter_depends, lambda f: (f.filtered, f.filtered_summary), _run_filter),
    Stage("score", "score", _score_depends, lambda f: (f.sentences, f.score_summary), _run_score,
          when_skipped=_remove_score_parts),
    Stage("report", "analysis, figures and report", _report_depends,
          lambda f: (f.aq27, *f.figure_paths(), f.summary, f.report), _run_report),
)


def _other_corpus(folder: AuditFolder, spec: CorpusSpec) -> str | None:
    """The corpus a finished audit in ``folder`` read, in words, when it is not ``spec``'s; else None."""
    if not folder.summary.is_file():
        return None
    try:
        recorded = folder.read_summary()
    except UserError:
        return None

    def paths(inputs: Any) -> list[str]:
        return sorted(str(Path(path).resolve()) if path != "-" else path for path in inputs or [])
    if (paths(recorded.corpus.get("inputs")), recorded.corpus.get("hf_dataset")) \
            == (paths(spec.inputs), spec.hf_dataset):
        return None
    return recorded.corpus_name


def _interrupted(folder: AuditFolder, stage: Stage, checkpoints: Checkpoints) -> Interrupted:
    done = [name for name in (stage.name for stage in STAGES) if name in checkpoints.stages]
    from corpus_audit.audit.score_parts import ScoreParts

    saved = ""
    if stage.name == "score":
        chunks = len(list(folder.score_parts.glob("part-*")))
        saved = f"; {chunks} chunk(s) of up to {ScoreParts.chunk} scored sentences saved in {folder.score_parts}"
    return Interrupted(f"interrupted during the {stage.label} stage: "
                       f"{'finished stages kept: ' + ', '.join(done) if done else 'no stage had finished'}{saved}. "
                       f"Run the same command again to resume from there.")


def run_audit(spec: CorpusSpec, outdir: str | Path, options: AuditOptions, log: Callable[[str], None] = print,
              progress: bool = False, force: bool = False) -> AuditSummary:
    """Run (or resume) the audit of ``spec`` into ``outdir``; return the summary written to ``summary.json``.

    The model (``options.model_spec()``) is loaded only when sentences must be scored. An ``outdir`` holding the
    finished audit of another corpus is replaced only with ``force`` (else ``UserError``). Ctrl-C ends the run
    with :class:`Interrupted`, whose message says what is saved.
    """
    outdir = check_output_location(outdir)
    with folder_lock(outdir):
        folder = AuditFolder(outdir)
        if not force and (other := _other_corpus(folder, spec)):
            raise UserError(f"{outdir} holds the audit of another corpus ({other}); pass --force to replace it, or "
                            "choose another output folder")
        removed = remove_temporaries(folder.path) + remove_temporaries(folder.score_parts)
        if removed:
            log(f"removed {len(removed)} temporary file(s) left by an interrupted run")
        run = AuditRun(spec, folder, options, log, progress)
        checkpoints = Checkpoints(folder.checkpoints, log)
        for stage in STAGES:
            started = time.perf_counter()
            depends_on = stage.depends_on(run)
            outputs = stage.outputs(folder)
            if (reason := checkpoints.fresh(stage.name, depends_on, *outputs)) is None:
                log(f"{stage.label}: up to date, skipped")
                stage.when_skipped(run)
            else:
                log(f"{stage.label}: " + ("starting" if reason == NOT_RUN else f"running ({reason})"))
                try:
                    stage.run(run, depends_on)
                except KeyboardInterrupt:
                    raise _interrupted(folder, stage, checkpoints) from None
                checkpoints.mark(stage.name, depends_on, *outputs)
            run.seconds[stage.name] = time.perf_counter() - started
        return folder.read_summary(complete=True)
