"""Command-line interface: thin click commands that parse options and call library functions."""

from __future__ import annotations

from pathlib import Path

import click

from corpus_audit import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="corpus-audit")
def main() -> None:
    """Audit text corpora for health-related stigma before pretraining.

    Sentences are projected onto the Stereotype Content Model's warmth and competence axes;
    mentions of mental and physical illnesses are compared and mapped to AQ-27 stigma dimensions.
    """


_model_options = [
    click.option("--lang", type=click.Choice(["en", "es"]), default="en", show_default=True,
                 help="Language: picks the default model, lexicon and templates."),
    click.option("--model", default=None,
                 help="Embedding model: 'minilm' (English default), 'e5-small' (Spanish default), 'use', or any "
                      "sentence-transformers name or local folder."),
    click.option("--device", default="cpu", show_default=True, help="cpu or cuda (sentence-transformers models)."),
    click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True,
                 help="Sentences per embedding batch."),
]


def model_options(command):
    for option in reversed(_model_options):
        command = option(command)
    return command


def _check_model_options(model: str | None, lang: str, device: str, batch_size: int, axes_path: str | None) -> None:
    """Fail now, before any input is read, on a model that cannot load or an axes file that is not one."""
    from corpus_audit.embedders import EmbedderError, check_model
    from corpus_audit.scm.axes import AxesFileError, SCMAxes

    try:
        check_model(model, lang, device, batch_size)
        if axes_path:
            SCMAxes.load(axes_path)
    except (EmbedderError, AxesFileError) as error:
        raise click.ClickException(str(error)) from error


_engine_options = [
    click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                 help="Where filtering and embedding run: 'local' (this process and its worker processes) or 'ray' "
                      "(Ray Data; started inside the command, or a cluster with --ray-address; needs "
                      "pip install 'corpus-audit[ray]'). The outputs are the same. See docs/scaling.md."),
    click.option("--ray-address", default=None,
                 help="With --engine ray: the Ray cluster to run on ('auto', HOST:PORT or ray://HOST:PORT; input "
                      "files must be readable from every node). Default: start Ray on this machine."),
    click.option("--ray-concurrency", type=click.IntRange(min=1), default=None,
                 help="With --engine ray: workers per stage (filter actors, embedding actors). Default: one per "
                      "CPU of the cluster; for embedding with --device cuda, one per GPU."),
]


def engine_options(command):
    """--engine, --ray-address and --ray-concurrency, read back by :func:`_engine`."""
    for option in reversed(_engine_options):
        command = option(command)
    return command


def _engine(settings: dict):
    """EngineOptions from the engine options (which it removes from ``settings``)."""
    from corpus_audit.engines import EngineOptions

    name, address, concurrency = (settings.pop(key) for key in ("engine", "ray_address", "ray_concurrency"))
    if name != "ray" and (address or concurrency):
        raise click.UsageError("--ray-address and --ray-concurrency need --engine ray")
    return EngineOptions(name, address, concurrency)


def _load_embedder(model: str | None, lang: str, device: str, batch_size: int):
    from corpus_audit.embedders import EmbedderError, load_embedder

    try:
        return load_embedder(model, lang=lang, device=device, batch_size=batch_size)
    except EmbedderError as error:
        raise click.ClickException(str(error)) from error


@main.command("score")
@click.argument("input_path", metavar="INPUT", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output table, .csv or .parquet: every input column plus warmth and competence.")
@click.option("--text-column", default="text", show_default=True,
              help="Column (CSV/Parquet) or field (JSONL) holding the sentence; .txt files have one per line.")
@click.option("--axes", "axes_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Axes file from `corpus-audit axes train` (default: the shipped axes of the model, or "
                   "axes trained once and cached).")
@click.option("--strict", is_flag=True, help="Stop at the first bad record, naming file and line.")
@model_options
@engine_options
def score_command(input_path: str, output: str, text_column: str, axes_path: str | None, strict: bool,
                  lang: str, model: str | None, device: str, batch_size: int, **settings) -> None:
    """Add warmth and competence scores to each sentence of INPUT.

    INPUT is .txt (one sentence per line), .csv/.tsv, .jsonl or .parquet (optionally .gz/.zst/.bz2).
    The sign of a score says high or low (the default axes score in [-1, 1]). Blank rows and bad
    records are counted and reported; blank rows keep empty scores.
    """
    from corpus_audit.atomic import OutputLocationError, check_output_location
    from corpus_audit.engines import EngineError
    from corpus_audit.scm.axes import AxesFileError, AxesMismatchError
    from corpus_audit.scm.store import axes_for
    from corpus_audit.scoring import ScoreError, check_output_path, score_file

    engine = _engine(settings)

    def load_model():
        embedder = _load_embedder(model, lang, device, batch_size)
        return embedder, axes_for(embedder, lang, axes_path, log=lambda m: click.echo(m, err=True))

    try:
        check_output_location(check_output_path(output).resolve().parent)
        _check_model_options(model, lang, "cpu" if engine.is_ray else device, batch_size, axes_path)  # before reading
        summary = score_file(input_path, output, load_model, text_column=text_column, strict=strict, engine=engine,
                             device=device)
    except (ScoreError, AxesFileError, AxesMismatchError, EngineError) as error:
        raise click.ClickException(str(error)) from error
    except OutputLocationError as error:
        raise click.ClickException(error.strerror) from error
    except OSError as error:
        raise click.ClickException(f"cannot write {output}: {error}") from error
    click.echo(f"scored {summary.scored} of {summary.rows} rows ({summary.distinct_texts} distinct texts) "
               f"with {summary.model_id} -> {output}")
    if summary.truncated:
        click.echo(f"{summary.truncated} texts longer than the limit were cut before embedding")
    for reason, count in summary.skipped.most_common():
        click.echo(f"skipped {count}: {reason}")
    for example in summary.examples[:5]:
        click.echo(f"  e.g. {example}")


@main.group("axes")
def axes_group() -> None:
    """Train and evaluate the warmth/competence axes of an embedding model."""


@axes_group.command("train")
@click.option("--recipe", type=click.Choice(["default", "reference"]), default="default", show_default=True,
              help="'reference': basic templates, PLS + axis-rotated POLAR (Fraser et al. 2022); "
                   "'default': the measured-best recipe of this package.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where to save the axes (.npz); default: the user cache, where score finds them.")
@model_options
def axes_train_command(recipe: str, output: str | None, lang: str, model: str | None, device: str,
                       batch_size: int) -> None:
    """Train axes for a model on the whole seed lexicon and save them."""
    from corpus_audit.scm.recipes import train_axes
    from corpus_audit.scm.store import cached_axes_path

    embedder = _load_embedder(model, lang, device, batch_size)
    axes = train_axes(embedder, lang=lang, recipe=recipe)
    target = output or cached_axes_path(embedder.model_id, lang, recipe)
    axes.save(target)
    click.echo(f"trained {recipe} axes for {embedder.model_id} on {axes.metadata_['n_training_sentences']} "
               f"sentences -> {target}")


@axes_group.command("evaluate")
@click.option("--recipe", type=click.Choice(["default", "reference"]), default="default", show_default=True,
              help="Recipe to evaluate; the reference recipe is always shown beside it.")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Cross-validation folds over held-out adjectives.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for folds and sampled pairs.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the results as JSON.")
@click.option("--embedding-cache", type=click.Path(dir_okay=False), default=None,
              help="Keep the sentence embeddings in this .npz between runs, so that a rerun after editing "
                   "templates or lexicons embeds only the new sentences (a file of another model is replaced).")
@model_options
def axes_evaluate_command(recipe: str, folds: int, seed: int, json_path: str | None, embedding_cache: str | None,
                          lang: str, model: str | None, device: str, batch_size: int) -> None:
    """Cross-validated functional accuracy of the axes for a model.

    Adjectives are split into folds; each fold trains on the others and tests on sentences built from
    its own adjectives only: basic ('these people are always X'), negation ('... are never X', label
    flipped), two-adjective composition (quadrant must be right) and syntactic variants. Also reports
    generalisation to real-group sentences with adjectives outside every training lexicon.
    """
    from corpus_audit.scm.evaluate import evaluate_model, format_report

    embedder = _load_embedder(model, lang, device, batch_size)
    report = evaluate_model(embedder, lang, recipes=dict.fromkeys([recipe, "reference"]), n_folds=folds, seed=seed,
                            embedding_cache=embedding_cache)
    click.echo(format_report(report))
    if json_path:
        import json

        from corpus_audit.atomic import write_text_atomic

        write_text_atomic(json_path, json.dumps(report, indent=2))
        click.echo(f"wrote {json_path}")


@main.group("lexicon")
def lexicon_group() -> None:
    """Maintain the editable language data (lexicons/)."""


@lexicon_group.command("forms")
@click.option("--lang", type=click.Choice(["es"]), default="es", show_default=True,
              help="Language whose SCM adjectives take gender/number forms.")
@click.option("--backend", type=click.Choice(["auto", "lookup", "rule", "stanza"]), default="auto", show_default=True,
              help="'lookup': forms attested in spacy-lookups-data (pip install 'corpus-audit[lexicon-tools]'), "
                   "rules for the rest; 'rule': rules only; 'stanza': also check every form with a local Stanza "
                   "Spanish model; 'auto': whatever is installed.")
def lexicon_forms_command(lang: str, backend: str) -> None:
    """Regenerate lexicons/<lang>/scm_forms.csv, the masculine/feminine x singular/plural forms of every SCM
    adjective. Rows whose source is 'manual' are your corrections: they are kept as they are."""
    from corpus_audit.scm.inflect import BackendUnavailableError, FormsTableError, rebuild_forms_table

    try:
        path, counts = rebuild_forms_table(lang, backend)
    except (BackendUnavailableError, FormsTableError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"wrote {path}: {sum(counts.values())} rows (" +
               ", ".join(f"{source} {count}" for source, count in sorted(counts.items())) + ")")


_corpus_options = [
    click.option("--format", "fmt", type=click.Choice(["jsonl", "json", "csv", "tsv", "txt", "parquet"]), default=None,
                 help="Input format for every file (default: from each file's extension; stdin: jsonl)."),
    click.option("--text-field", default="text", show_default=True, help="Field/column holding the document text."),
    click.option("--id-field", default="id", show_default=True,
                 help="Field/column holding the document id (default id when absent: FILE:LINE)."),
    click.option("--line-docs", is_flag=True,
                 help="For .txt input: each non-empty line is a document (default: each file is one)."),
    click.option("--keep-field", "keep_fields", multiple=True,
                 help="Copy this input field into the output as a string column (repeatable); 'source' gives the "
                      "input file."),
    click.option("--hf-dataset", default=None,
                 help="Read a Hugging Face dataset in streaming mode: a hub name, a local dataset folder, or a "
                      "builder (json, csv, parquet, text) whose data files are the CORPUS arguments."),
    click.option("--hf-config", default=None, help="Configuration (subset) name of the --hf-dataset."),
    click.option("--split", "hf_split", default="train", show_default=True, help="Split of the --hf-dataset to read."),
    click.option("--limit", type=click.IntRange(min=1), default=None,
                 help="Stop after this many documents (after sampling)."),
    click.option("--sample", type=click.FloatRange(0, 1, min_open=True), default=None,
                 help="Keep each document with this probability (0 < RATE <= 1)."),
    click.option("--seed", type=int, default=0, show_default=True,
                 help="Random seed for --sample (audit: also --max-sentences and the bootstrap and permutation "
                      "tests)."),
    click.option("--lexicon", type=click.Path(exists=True, dir_okay=False), default=None,
                 help="Illness lexicon CSV to use instead of the bundled lexicons/LANG/illnesses.csv."),
    click.option("--spacy-model", default=None,
                 help="Installed spaCy model for sentence splitting (default: blank pipeline + rule-based "
                      "sentencizer, no download)."),
    click.option("--strict", is_flag=True,
                 help="Stop at the first bad record (malformed JSON, missing text, bad UTF-8, truncated file), naming "
                      "file and line."),
    click.option("--workers", type=click.IntRange(min=1), default=None,
                 help="Processes that parse, match and split JSON Lines input with --engine local (default: one per "
                      "CPU, at most 8; 1: no worker processes). Other formats, --hf-dataset, --limit and --sample run "
                      "in one process. The output is the same either way."),
]


def corpus_options(command):
    """The reading, matching and splitting options shared by ``filter`` and ``audit``."""
    for option in reversed(_corpus_options):
        command = option(command)
    return command


_CORPUS_KEYS = ("fmt", "text_field", "id_field", "line_docs", "hf_dataset", "hf_config", "hf_split", "limit", "sample",
                "seed", "strict")


def _corpus_spec(corpus: tuple[str, ...], settings: dict):
    """A CorpusSpec from the CORPUS arguments and the shared options (which it removes from ``settings``)."""
    from corpus_audit.filtering import CorpusSpec
    from corpus_audit.readers import ReaderOptions

    values = {key: settings.pop(key) for key in _CORPUS_KEYS}
    if not corpus and not values["hf_dataset"]:
        raise click.UsageError("give at least one CORPUS path (or '-' for stdin), or --hf-dataset")
    if values["fmt"] == "parquet" and "-" in corpus:
        raise click.UsageError("Parquet cannot be read from stdin")
    options = ReaderOptions(text_field=values["text_field"], id_field=values["id_field"], format=values["fmt"],
                            line_docs=values["line_docs"], strict=values["strict"])
    return CorpusSpec(tuple(corpus), options, limit=values["limit"], sample=values["sample"], seed=values["seed"],
                      hf_dataset=values["hf_dataset"], hf_config=values["hf_config"], hf_split=values["hf_split"])


def _show_progress(progress: bool | None) -> bool:
    import sys

    return sys.stderr.isatty() if progress is None else progress


_PROGRESS_OPTION = click.option("--progress/--no-progress", default=None,
                                help="Progress bars on stderr (default: when stderr is a terminal).")


@main.command("filter")
@click.argument("corpus", nargs=-1)
@click.option("--lang", type=click.Choice(["en", "es"]), required=True,
              help="Language of the corpus: picks the illness lexicon and the sentence splitter.")
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Output Parquet file (one row per kept sentence); the summary goes to OUT.summary.json beside it.")
@corpus_options
@engine_options
@_PROGRESS_OPTION
def filter_command(corpus: tuple[str, ...], lang: str, output: str, keep_fields: tuple[str, ...], lexicon: str | None,
                   spacy_model: str | None, workers: int | None, progress: bool | None, **settings) -> None:
    """Keep the sentences of CORPUS that mention a mental or physical illness.

    CORPUS: files, globs or folders of .jsonl/.json/.csv/.tsv/.txt/.parquet (optionally .gz/.zst/.bz2),
    or '-' for stdin. Writes one Parquet row per kept sentence (doc_id, sentence_index, sentence, terms,
    illnesses, illness_type and the --keep-field columns) and prints a summary.
    """
    from corpus_audit.atomic import OutputLocationError, check_output_location
    from corpus_audit.engines import EngineError
    from corpus_audit.filtering import filter_corpus
    from corpus_audit.matcher import LexiconError
    from corpus_audit.readers import CorpusError
    from corpus_audit.segment import SegmenterError

    spec = _corpus_spec(corpus, settings)
    engine = _engine(settings)
    if output in corpus:
        raise click.UsageError("the output file must not be one of the inputs")
    try:
        check_output_location(Path(output).resolve().parent)
        summary = filter_corpus(spec, output, lang, lexicon, spacy_model, keep_fields, workers,
                                _show_progress(progress), engine)
    except (CorpusError, LexiconError, SegmenterError, EngineError) as exc:
        raise click.ClickException(str(exc)) from exc
    except OutputLocationError as exc:
        raise click.ClickException(exc.strerror) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc}") from exc
    click.echo(summary.format_text())
    click.echo(f"wrote {summary.sentences_kept} sentences to {output}")


@main.command("audit")
@click.argument("corpus", nargs=-1)
@click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False),
              help="Output folder; rerunning with the same folder resumes (finished stages are skipped).")
@click.option("--axes", "axes_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Axes file from `corpus-audit axes train` (default: the shipped or cached axes of the model).")
@click.option("--max-sentences", type=click.IntRange(min=1), default=None,
              help="Score at most this many distinct sentences per illness type (uniform sample, seeded).")
@click.option("--bias-map", "bias_map", type=click.Path(exists=True, dir_okay=False), default=None,
              help="BIAS-map CSV (dimension,warmth,competence) instead of the bundled lexicons/bias_map.csv.")
@click.option("--mask-terms/--no-mask-terms", default=True, show_default=True,
              help="Replace the illness mention by a neutral phrase ('this condition') before embedding, so that the "
                   "point reflects what is said about the illness rather than the illness word itself.")
@corpus_options
@model_options
@engine_options
@_PROGRESS_OPTION
def audit_command(corpus: tuple[str, ...], lang: str, outdir: str, axes_path: str | None, max_sentences: int | None,
                  bias_map: str | None, mask_terms: bool, keep_fields: tuple[str, ...], lexicon: str | None,
                  spacy_model: str | None, workers: int | None, model: str | None, device: str, batch_size: int,
                  progress: bool | None, **settings) -> None:
    """Audit CORPUS: keep illness sentences, score warmth and competence, compare mental vs physical.

    Writes to OUTDIR: filtered.parquet, sentences.parquet (scored), summary.json (counts, configuration,
    statistics, time per stage) and aq27.csv (BIAS-map share per AQ-27 dimension, mental vs physical,
    with 95% bootstrap CIs and Holm-corrected p-values).
    """
    from corpus_audit.analysis import BiasMapError, load_bias_map
    from corpus_audit.atomic import OutputLocationError
    from corpus_audit.audit import AuditOptions, run_audit
    from corpus_audit.embedders import EmbedderError
    from corpus_audit.engines import EngineError
    from corpus_audit.matcher import LexiconError
    from corpus_audit.readers import CorpusError
    from corpus_audit.scm.axes import AxesFileError, AxesMismatchError
    from corpus_audit.scm.store import axes_for
    from corpus_audit.segment import SegmenterError

    spec = _corpus_spec(corpus, settings)
    engine = _engine(settings)
    options = AuditOptions(lang=lang, model=model, device=device, batch_size=batch_size, axes_path=axes_path,
                           lexicon=lexicon, spacy_model=spacy_model, keep_fields=keep_fields, workers=workers,
                           max_sentences=max_sentences, bias_map=bias_map, mask_terms=mask_terms, seed=spec.seed,
                           engine=engine)

    def load_model():
        embedder = _load_embedder(model, lang, device, batch_size)
        return embedder, axes_for(embedder, lang, axes_path, log=lambda m: click.echo(m, err=True))

    # Fail now, not when the filter is done; with Ray the GPUs are the cluster's, checked when scoring starts.
    _check_model_options(model, lang, "cpu" if engine.is_ray else device, batch_size, axes_path)
    try:
        load_bias_map(bias_map)
        summary = run_audit(spec, outdir, options, load_model, log=lambda m: click.echo(m, err=True),
                            progress=_show_progress(progress))
    except (CorpusError, LexiconError, SegmenterError, AxesFileError, AxesMismatchError, BiasMapError,
            EmbedderError, EngineError) as exc:
        raise click.ClickException(str(exc)) from exc
    except OutputLocationError as exc:
        raise click.ClickException(exc.strerror) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot write to {outdir}: {exc}") from exc
    analysis = summary["analysis"]
    click.echo(f"sentences scored: {analysis['n_sentences']} ({analysis['n_by_type']})")
    def number(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3g}"

    for score in ("warmth", "competence"):
        comparison = analysis["comparisons"][score]
        click.echo(f"{score}: mental - physical mean difference {number(comparison['mean_difference'])}, "
                   f"Mann-Whitney p {number(comparison['mann_whitney_p'])}, "
                   f"rank-biserial r {number(comparison['rank_biserial'])}")
    for warning in analysis["warnings"]:
        click.echo(f"warning: {warning}")
    click.echo(f"wrote {outdir}/report.html, summary.json, aq27.csv, sentences.parquet and figures")


_STRICT_OUTPUT_OPTION = click.option(
    "--strict", is_flag=True,
    help="Stop at the first bad row of sentences.parquet (illness type not mental/physical/both, no sentence, "
         "infinite score, quadrant that disagrees with the scores), naming file and row; default: leave such rows "
         "out and say how many.")


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


@main.command("compare")
@click.argument("outdir_a", type=click.Path(exists=True, file_okay=False))
@click.argument("outdir_b", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Also write the comparison as JSON.")
@click.option("--labels", nargs=2, default=("A", "B"), show_default=True, help="Names of the two audits.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and permutation tests.")
@click.option("--allow-different-models", is_flag=True,
              help="Compare audits scored with different models or axes (their scores are not on the same axes).")
@_STRICT_OUTPUT_OPTION
def compare_command(outdir_a: str, outdir_b: str, output: str | None, labels: tuple[str, str], seed: int,
                    allow_different_models: bool, strict: bool) -> None:
    """Compare two finished audits (two corpora, or one corpus before and after filtering).

    Per illness type: warmth and competence of A vs B, a 2-D energy test and the quadrant shares; per
    AQ-27 dimension: the shares in A and B and the change of the mental - physical gap.
    """
    import json

    from corpus_audit.atomic import write_text_atomic
    from corpus_audit.compare import compare_audits, format_comparison

    try:
        result = compare_audits(outdir_a, outdir_b, labels=labels, seed=seed,
                                allow_different_models=allow_different_models, strict=strict, log=_warn)
    except ValueError as exc:  # AuditOutputError, ModelMismatchError, equal labels
        raise click.ClickException(str(exc)) from exc
    click.echo(format_comparison(result))
    if output:
        try:
            write_text_atomic(output, json.dumps(result, indent=2, allow_nan=False))
        except OSError as exc:
            raise click.ClickException(f"cannot write {output}: {exc}") from exc
        click.echo(f"wrote {output}")


#: Literal so that the CLI starts without importing scipy; the tests check it equals analysis.QUADRANTS.
_QUADRANT_CHOICES = ("warm-competent", "warm-incompetent", "cold-competent", "cold-incompetent")


@main.command("export-flagged")
@click.argument("outdir", type=click.Path(exists=True, file_okay=False))
@click.option("--quadrant", type=click.Choice(_QUADRANT_CHOICES), default=None, help="Keep sentences in this quadrant.")
@click.option("--dimension", default=None,
              help="Keep sentences in this AQ-27 dimension's BIAS-map region (e.g. Pity; competence is free for "
                   "any/any_or_* dimensions).")
@click.option("--type", "illness_type", type=click.Choice(["mental", "physical"]), default=None,
              help="Keep sentences about this illness type ('both' sentences count for each).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output file: .csv, .parquet or .jsonl.")
@_STRICT_OUTPUT_OPTION
def export_flagged_command(outdir: str, quadrant: str | None, dimension: str | None, illness_type: str | None,
                           output: str, strict: bool) -> None:
    """Export the sentences of an audit OUTDIR in a quadrant and/or an AQ-27 dimension's region.

    Writes doc_id, sentence_index, sentence, illnesses, illness_type, warmth, competence and quadrant,
    and prints the number of flagged sentences per document.
    """
    from corpus_audit.flagged import export_flagged

    try:
        flagged, documents = export_flagged(outdir, output, quadrant=quadrant, dimension=dimension,
                                            illness_type=illness_type, strict=strict, log=_warn)
    except ValueError as exc:  # missing sentences.parquet, unknown dimension or output format
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc}") from exc
    shown = 20
    click.echo(f"{len(flagged)} flagged sentences in {len(documents)} documents")
    for doc_id, count in documents.head(shown).itertuples(index=False):
        click.echo(f"  {count:6d}  {doc_id}")
    if len(documents) > shown:
        click.echo(f"  ... and {len(documents) - shown} more documents")
    click.echo(f"wrote {output}")


@main.command("plot")
@click.argument("outdir", type=click.Path(exists=True, file_okay=False))
@_STRICT_OUTPUT_OPTION
def plot_command(outdir: str, strict: bool) -> None:
    """Rebuild the figures of an audit folder from its sentences.parquet (no re-embedding)."""
    from corpus_audit.atomic import OutputLocationError, folder_lock
    from corpus_audit.report import ReportError, replot

    try:
        with folder_lock(outdir):  # an audit writing into the folder holds it
            written = replot(outdir, strict, _warn)
    except ReportError as exc:
        raise click.ClickException(str(exc)) from exc
    except OutputLocationError as exc:
        raise click.ClickException(exc.strerror) from exc
    click.echo(f"wrote {len(written)} figures to {outdir}")


@main.command("report")
@click.argument("outdir", type=click.Path(exists=True, file_okay=False))
@_STRICT_OUTPUT_OPTION
def report_command(outdir: str, strict: bool) -> None:
    """Write OUTDIR/report.html, one offline HTML file, from an audit's outputs (figures rebuilt if missing)."""
    from corpus_audit.atomic import OutputLocationError, folder_lock
    from corpus_audit.report import ReportError, missing_figures, replot, write_report

    try:
        with folder_lock(outdir):  # an audit writing into the folder holds it
            if missing_figures(outdir):
                replot(outdir, strict, _warn)
            path = write_report(outdir, strict, _warn)
    except ReportError as exc:
        raise click.ClickException(str(exc)) from exc
    except OutputLocationError as exc:
        raise click.ClickException(exc.strerror) from exc
    click.echo(f"wrote {path}")
