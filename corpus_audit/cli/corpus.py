"""The commands that read a corpus or a table: ``filter``, ``audit`` and ``score``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from corpus_audit.cli.errors import reports_errors
from corpus_audit.score.cascade_options import AUTO_MIN_SENTENCES, CASCADE_MODES, DEFAULT_SAMPLE_SHARE
from corpus_audit.cli.options import (CORPUS_LANG_OPTION, PROGRESS_OPTION, TERMS_OPTION, corpus_model_options,
                                      corpus_options, corpus_spec_from, embedding_cache_from, embedding_cache_options,
                                      engine_from, engine_options, log, model_options, output_extension,
                                      show_progress, text_field_from, text_field_options, warn)


@click.command("score")
@click.argument("input_path", metavar="INPUT", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              callback=output_extension(".csv", ".parquet", writes="score writes CSV or Parquet"),
              help="Output table, .csv or .parquet: every input column plus warmth and competence.")
@text_field_options("text", "Column (CSV/Parquet) or field (JSONL) holding the sentence; .txt files have one per "
                    "line.", old_name="--text-column")
@click.option("--axes", "axes_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Axes file from `corpus-audit axes train` (default: the shipped axes of the model, or "
                   "axes trained once and cached).")
@click.option("--strict", is_flag=True, help="Stop at the first bad record, naming file and line.")
@click.option("--mask-terms/--no-mask-terms", default=True, show_default=True,
              help="Replace each illness mention (the --lang lexicon, or --lexicon) by a neutral phrase before "
                   "scoring, as an audit does: the illness word itself would otherwise move the scores.")
@click.option("--lexicon", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Illness lexicon CSV for --mask-terms (default: the bundled one of --lang).")
@TERMS_OPTION
@model_options
@embedding_cache_options
@engine_options
@reports_errors("cannot write {output}")
def score_command(input_path: str, output: str, text_field: str | None, old_text_field: str | None,
                  axes_path: str | None, strict: bool, mask_terms: bool, lexicon: str | None, terms: str, lang: str,
                  model: str | None, device: str, batch_size: int, backend: str, **settings: Any) -> None:
    """Score each sentence of INPUT with the instrument.

    INPUT is .txt (one sentence per line), .csv/.tsv, .jsonl or .parquet (optionally .gz/.zst/.bz2). The
    output keeps every input column and adds: warmth and competence (in [-1, 1]: the sign says high or low,
    near 0 for text that judges no one), category (judgement, self_disclosure, clinical, question, analogy or
    information), judgement_strength (the probability that the sentence judges people), p_<category>, the nine
    AQ-27 dimension scores dim_<dimension> (in [-1, 1]: +1 endorses the attitude, -1 rejects it),
    top_dimension (for judgements) and stigma (the probability, in [0, 1], that the sentence stigmatises people
    with the illness; supportive and neutral text near 0). Blank rows and bad records are counted and reported; blank rows keep empty
    scores; rows with invalid UTF-8 are kept, the bytes replaced by U+FFFD, and counted as repaired.
    """
    from corpus_audit.common.atomic import check_output_location
    from corpus_audit.corpus.select import MentionMasker
    from corpus_audit.engines import make_scorer
    from corpus_audit.score.scorer import ModelSpec
    from corpus_audit.score.table import check_output_path, score_file

    text_field = text_field_from(text_field, old_text_field, "text", "--text-column")
    engine = engine_from(settings)
    spec = ModelSpec(lang, model, device, batch_size, axes_path, backend=backend,
                     embedding_cache=embedding_cache_from(settings))
    check_output_location(check_output_path(output).resolve().parent)
    spec.check(device="cpu" if engine.is_ray else None)  # before reading; a cluster's GPUs are its own
    masker = MentionMasker(lang, lexicon, terms) if mask_terms else None
    summary = score_file(input_path, output, make_scorer(spec, engine), text_field=text_field, strict=strict,
                         mask=masker)
    click.echo(f"scored {summary.scored} of {summary.rows} rows ({summary.distinct_texts} distinct texts) "
               f"with {summary.model_id} -> {output}")
    if summary.truncated:
        click.echo(f"{summary.truncated} texts longer than the limit were cut before embedding")
    for reason, count in summary.skipped.most_common():
        click.echo(f"skipped {count}: {reason}")
    for reason, count in summary.repaired.most_common():
        click.echo(f"repaired {count} (kept, bytes replaced by U+FFFD): {reason}")
    for example in summary.examples[:5]:
        click.echo(f"  e.g. {example}")


@click.command("filter")
@click.argument("corpus", nargs=-1)
@CORPUS_LANG_OPTION
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              callback=output_extension(".parquet", writes="filter writes Parquet"),
              help="Output Parquet file (one row per kept sentence); the summary goes to OUT.summary.json beside it.")
@corpus_options
@engine_options
@PROGRESS_OPTION
@reports_errors("cannot write {output}")
def filter_command(corpus: tuple[str, ...], lang: str, output: str, keep_fields: tuple[str, ...], lexicon: str | None,
                   terms: str, spacy_model: str | None, workers: int | None, progress: bool | None,
                   **settings: Any) -> None:
    """Keep the sentences of CORPUS that mention a mental or physical illness.

    CORPUS: files, globs or folders of .jsonl/.json/.csv/.tsv/.txt/.parquet (optionally .gz/.zst/.bz2),
    or '-' for stdin. Writes one Parquet row per kept sentence (doc_id, sentence_index, sentence, terms,
    term_offsets, illnesses, illness_type, forms (the form of each term: diagnosis, generic, person, adjective,
    slang or treatment) and the --keep-field columns) and prints a summary, mentions per form included. Fails when no
    document was read (an empty corpus, or every record skipped: the message names the fix).
    """
    from corpus_audit.common.atomic import check_output_location
    from corpus_audit.common.errors import Interrupted
    from corpus_audit.engines import filter_corpus

    spec = corpus_spec_from(corpus, settings)
    engine = engine_from(settings)
    if output in corpus:
        raise click.UsageError("the output file must not be one of the inputs")
    check_output_location(Path(output).resolve().parent)
    try:
        summary = filter_corpus(spec, output, lang, lexicon, spacy_model, keep_fields, workers,
                                show_progress(progress), engine, terms)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted: nothing written ({output} is written once the whole corpus is read); run "
                          "the same command again to start over") from None
    click.echo(f"terms: {terms}")
    click.echo(summary.format_text())
    for warning in summary.warnings:
        warn(warning)
    click.echo(f"wrote {summary.sentences_kept} sentences to {output}")


@click.command("audit")
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
@click.option("--force", is_flag=True, help="Replace the audit of another corpus that OUTDIR holds.")
@click.option("--group-by", "group_by", default=None,
              help="Break the report down by this input field (e.g. subreddit, domain; 'source_file': the input "
                   "file): "
                   "per value, sentences, judgements and their scores, mental and physical. Kept like a "
                   "--keep-field.")
@click.option("--cascade", type=click.Choice(CASCADE_MODES), default="auto", show_default=True,
              help="Score every sentence with a cheap triage (the stigma text head) and run the encoder only on the "
                   "sentences the triage says could be stigmatising, plus a random sample that stands for the rest "
                   "in the statistics (each sentence weighted by how many it stands for): "
                   f"'auto' from {AUTO_MIN_SENTENCES:,} distinct sentences on, 'on' always, 'off' never (the "
                   "encoder reads every sentence). docs/scaling.md says what it costs and keeps.")
@click.option("--cascade-sample", type=click.FloatRange(min=0.0, max=1.0, min_open=True), default=DEFAULT_SAMPLE_SHARE,
              show_default=True,
              help="With the cascade: the share of the sentences the encoder reads at random, for the statistics. "
                   "What the triage's band holds (judgements, AQ-27 dimensions) is read whole; what spreads over "
                   "every sentence is estimated from the sample, its interval about 1/sqrt(share) wider than the "
                   "full path's (at 0.5 every statistic of the benchmark corpus fell inside the full path's "
                   "intervals; docs/scaling.md).")
@corpus_options
@corpus_model_options
@embedding_cache_options
@engine_options
@PROGRESS_OPTION
@reports_errors("cannot write to {outdir}")
def audit_command(corpus: tuple[str, ...], lang: str, outdir: str, axes_path: str | None, max_sentences: int | None,
                  bias_map: str | None, mask_terms: bool, force: bool, group_by: str | None, cascade: str,
                  cascade_sample: float,
                  keep_fields: tuple[str, ...], lexicon: str | None, terms: str, spacy_model: str | None,
                  workers: int | None, model: str | None, device: str, batch_size: int, backend: str, progress: bool | None,
                  **settings: Any) -> None:
    """Audit CORPUS: keep illness sentences, score warmth and competence, compare mental vs physical.

    Writes to OUTDIR: report.html (one offline page: the verdict, the documents to review, the findings, figures
    and examples), documents.parquet (per-document stigma scores, ranked; see `corpus-audit documents`),
    filtered.parquet, sentences.parquet (scored), summary.json (counts, configuration, statistics, time per stage), aq27.csv
    (BIAS-map share per AQ-27 dimension, mental vs physical, with 95% bootstrap CIs and Holm-corrected p-values)
    and the figures. Fails when no document was read (an empty corpus, or every record skipped: the message names
    the fix). Sentences embedded before by the same model come from the embedding cache; Ctrl-C keeps what is
    done, and the same command resumes.
    """
    from corpus_audit.api import Instrument

    spec = corpus_spec_from(corpus, settings)
    instrument = Instrument(lang, model, backend=backend, terms=terms, lexicon=lexicon, axes=axes_path, device=device,
                            batch_size=batch_size, mask_terms=mask_terms, spacy_model=spacy_model,
                            embedding_cache=embedding_cache_from(settings), engine=engine_from(settings))
    summary = instrument.audit(spec, outdir, log=log, progress=show_progress(progress), force=force,
                               keep_fields=keep_fields, workers=workers, max_sentences=max_sentences,
                               bias_map=bias_map, seed=spec.seed, group_by=group_by, cascade=cascade,
                               cascade_sample=cascade_sample).summary
    for warning in summary.filter.get("warnings", []):
        warn(warning)
    from corpus_audit.audit.verdict import verdict
    from corpus_audit.common.formats import num, p_value, percent

    analysis = summary.analysis
    lines = [line.replace("OUTDIR", outdir) for line in verdict(analysis)]
    click.echo(f"answer: {lines[0]}")
    click.echo(f"sentences scored: {analysis.n_sentences} ({analysis.n_by_type})")
    if summary.score.cascade:
        click.echo(f"cascade: {summary.score.cascade.describe()}")
    judgement = analysis.judgement
    parts = [("all sentences", analysis)]
    if judgement:
        shares = ", ".join(f"{row['group']} {percent(row['judgement'])} of {row['n']}" for row in judgement.categories)
        click.echo(f"judgements about people: {shares}")
        parts.insert(0, ("judgements", judgement.judgements))
    for label, part in parts:
        for score, comparison in part.comparisons.items():
            click.echo(f"{label}, {score}: mental - physical mean difference "
                       f"{num(comparison.mean_difference, signed=True)}, Mann-Whitney p "
                       f"{p_value(comparison.mann_whitney_p)}, rank-biserial r {num(comparison.rank_biserial, 2)}")
    for warning in analysis.warnings:
        click.echo(f"warning: {warning}")
    click.echo("details: " + " ".join(lines[1:]))
    click.echo(f"wrote {outdir}/report.html, summary.json, aq27.csv, documents.parquet, sentences.parquet and "
               "figures")


COMMANDS = (filter_command, audit_command, score_command)
