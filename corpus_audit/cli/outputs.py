"""The commands that read finished audits: ``report``, ``plot``, ``compare``, ``documents``, ``clean`` and
``export-flagged``."""

from __future__ import annotations

import click

from corpus_audit.cli.errors import reports_errors
from corpus_audit.cli.options import STRICT_OUTPUT_OPTION, output_extension, warn
from corpus_audit.stigma.judgement import CATEGORIES, CATEGORY_COLUMN
from corpus_audit.stigma.quadrants import GROUPS, QUADRANTS


@click.command("compare")
@click.argument("outdir_a", type=click.Path(exists=True, file_okay=False))
@click.argument("outdir_b", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", "outputs", multiple=True, type=click.Path(dir_okay=False),
              callback=output_extension(".html", ".json", writes="compare writes an HTML report or JSON"),
              help="Write the comparison: .html (a report with the densities overlaid) or .json; repeatable.")
@click.option("--labels", nargs=2, default=("A", "B"), show_default=True, help="Names of the two audits.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and permutation tests.")
@click.option("--allow-different-models", is_flag=True,
              help="Compare audits scored with different models or axes (their scores are not on the same axes).")
@STRICT_OUTPUT_OPTION
@reports_errors("cannot write {outputs}")
def compare_command(outdir_a: str, outdir_b: str, outputs: tuple[str, ...], labels: tuple[str, str], seed: int,
                    allow_different_models: bool, strict: bool) -> None:
    """Compare two finished audits (two corpora, or one corpus before and after `corpus-audit clean`).

    Every difference is B - A. Per illness type: warmth and competence of B vs A, a 2-D energy test and the
    quadrant shares; the mental - physical gap of the means in A and B and its change with a 95% CI (all
    sentences, and judgements); per AQ-27 dimension: the shares in A and B and the change of the gap with a CI.
    """
    import json

    from corpus_audit.audit.compare import compare_audits, format_comparison, write_comparison_report
    from corpus_audit.common.atomic import write_text_atomic

    if labels[0] == labels[1]:
        raise click.BadParameter(f"the two labels must differ, not {labels[0]!r} twice", param_hint="--labels")
    result = compare_audits(outdir_a, outdir_b, labels=labels, seed=seed,
                            allow_different_models=allow_different_models, strict=strict, log=warn)
    click.echo(format_comparison(result))
    for output in outputs:
        if output.lower().endswith(".html"):
            write_comparison_report(result, output, strict, warn)
        else:
            write_text_atomic(output, json.dumps(result, indent=2, allow_nan=False))
        click.echo(f"wrote {output}")


@click.command("export-flagged")
@click.argument("outdir", type=click.Path(exists=True, file_okay=False))
@click.option("--quadrant", type=click.Choice(QUADRANTS), default=None, help="Keep sentences in this quadrant.")
@click.option("--dimension", default=None,
              help="Keep sentences in this AQ-27 dimension's BIAS-map region (e.g. Pity; competence is free for "
                   "any/any_or_* dimensions). The map is the one the audit used.")
@click.option("--type", "illness_type", type=click.Choice(GROUPS), default=None,
              help="Keep sentences about this illness type ('both' sentences count for each).")
@click.option("--category", "categories", multiple=True, type=click.Choice((*CATEGORIES, "all")),
              help="Keep sentences of this judgement-gate category (repeatable; 'all': every category). Default: "
                   "judgements about people only; self-disclosures, clinical descriptions, questions, figures of "
                   "speech and information judge no one.")
@click.option("--top", type=click.IntRange(min=1), default=None,
              help="Keep the flagged sentences of the N most stigmatising documents only (ranked by their most "
                   "stigmatising flagged sentence): a review starts at the top.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              callback=output_extension(".csv", ".parquet", ".jsonl", ".json", writes="export-flagged writes CSV, "
                                        "Parquet, JSON Lines or (--format label-studio) JSON"),
              help="Output file: .csv, .parquet or .jsonl; .json with --format label-studio.")
@click.option("--format", "output_format", type=click.Choice(("table", "label-studio")), default="table",
              show_default=True,
              help="label-studio: a Label Studio import file (.json) of one task per sentence, most stigmatising "
                   "first, with the instrument's category, stigma label and dimension as pre-annotations (they fill "
                   "every required field), and the labelling configuration (OUTPUT stem + .label_config.xml, the "
                   "choices of docs/labelling.md). Export the reviewed project as JSON or JSON-MIN and give it to "
                   "`corpus-audit clean --reviewed` or `corpus-audit axes refit`.")
@STRICT_OUTPUT_OPTION
@reports_errors("cannot write {output}")
def export_flagged_command(outdir: str, quadrant: str | None, dimension: str | None, illness_type: str | None,
                           categories: tuple[str, ...], top: int | None, output: str, output_format: str,
                           strict: bool) -> None:
    """Export the judgements of an audit OUTDIR in a quadrant and/or an AQ-27 dimension's region.

    Writes doc_id, sentence_index, sentence, illnesses, illness_type, warmth, competence, quadrant, category,
    judgement_strength and the stigma score, and prints the number of flagged sentences per document, most
    stigmatising document first. Only judgements about people are exported unless --category says otherwise
    (audits whose axes have no judgement gate: every sentence). --format label-studio writes review tasks instead
    (docs/api.md#review-in-label-studio); --top N keeps the flagged sentences of the N most stigmatising
    documents.
    """
    from corpus_audit.audit.flagged import DEFAULT_CATEGORIES, export_flagged

    chosen = None if "all" in categories else categories or DEFAULT_CATEGORIES
    if output_format == "label-studio":
        from corpus_audit.audit.label_studio import export_label_studio

        tasks, config = export_label_studio(outdir, output, quadrant=quadrant, dimension=dimension,
                                            illness_type=illness_type, strict=strict, log=warn, categories=chosen,
                                            top=top)
        documents = len({task["data"]["doc_id"] for task in tasks})
        click.echo(f"{len(tasks)} Label Studio task(s) from {documents} documents, most stigmatising first")
        click.echo(f"wrote {output} (import file) and {config} (labelling configuration)")
        return
    if output.lower().endswith(".json"):
        raise click.ClickException(f"{output}: JSON is the Label Studio import file: pass --format label-studio, "
                                   "or name the output .csv, .parquet or .jsonl")
    flagged, documents = export_flagged(outdir, output, quadrant=quadrant, dimension=dimension,
                                        illness_type=illness_type, strict=strict, log=warn, categories=chosen,
                                        top=top)
    shown = 20
    gated = CATEGORY_COLUMN in flagged.columns  # axes without the judgement gate have no categories
    which = "" if not gated else " (every category)" if chosen is None else f" ({', '.join(chosen)})"
    click.echo(f"{len(flagged)} flagged sentences{which} in {len(documents)} documents")
    for row in documents.head(shown).to_dict(orient="records"):
        stigma = f"  stigma {row['stigma']:.3f}" if "stigma" in row else ""
        click.echo(f"  {row['flagged']:6d}{stigma}  {row['doc_id']}")
    if len(documents) > shown:
        click.echo(f"  ... and {len(documents) - shown} more documents")
    click.echo(f"wrote {output}")


@click.command("documents")
@click.argument("outdir", type=click.Path(exists=True, file_okay=False))
@click.option("--top", type=click.IntRange(min=1), default=None, help="Keep the N highest-ranked documents.")
@click.option("--min-score", type=click.FloatRange(0, 1), default=None,
              help="Keep documents scoring at least this (the stigma score, or the --dimension score).")
@click.option("--dimension", default=None,
              help="Rank by this AQ-27 dimension (e.g. Blame): the strongest judgement endorsing its attitude.")
@click.option("--illness", default=None, help="Keep documents with a sentence about this illness (e.g. ADHD).")
@click.option("--type", "illness_type", type=click.Choice(GROUPS), default=None,
              help="Keep documents with a sentence about this illness type.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              callback=output_extension(".csv", ".parquet", ".jsonl", ".txt",
                                        writes="documents writes CSV, Parquet, JSON Lines or an id list"),
              help="Write the list: .csv, .parquet or .jsonl (every column), or .txt (document ids, one per line, "
                   "as `corpus-audit clean --ids` reads them). Default: print the top 20.")
@STRICT_OUTPUT_OPTION
@reports_errors("cannot write {output}")
def documents_command(outdir: str, top: int | None, min_score: float | None, dimension: str | None,
                      illness: str | None, illness_type: str | None, output: str | None, strict: bool) -> None:
    """List the documents of an audit OUTDIR, most stigmatising first.

    A document's stigma score is the stigma score of its most stigmatising illness sentence (the instrument's
    probability, in [0, 1], that the sentence stigmatises people with the illness; supportive,
    counter-stereotypical and anti-stigma sentences score near 0). Each row has the document's keep-fields (--keep-field of the audit),
    that sentence, its category and AQ-27 dimension, counts of sentences (mental, physical, judgements) and one
    column per AQ-27 dimension.
    """
    from corpus_audit.audit.documents import STIGMA_SCORE, ranked_documents, read_documents, write_ids
    from corpus_audit.audit.flagged import write_table
    from corpus_audit.stigma.judgement import DIMENSION_COLUMNS, dimension_named

    table = ranked_documents(read_documents(outdir, strict, warn), top=top, min_score=min_score,
                             dimension=dimension, illness=illness, illness_type=illness_type)
    if output and output.lower().endswith(".txt"):
        write_ids(table["doc_id"].tolist(), output)
    elif output:
        write_table(table, output)
    click.echo(f"{len(table)} documents")
    score = STIGMA_SCORE if dimension is None else DIMENSION_COLUMNS[dimension_named(dimension)]
    for row in table.head(20).itertuples(index=False):
        sentence = str(row.top_sentence)
        click.echo(f"{row.rank:5d}  {getattr(row, score):.3f}  {row.doc_id}  "
                   f"{sentence[:100] + ('...' if len(sentence) > 100 else '')}")
    if output:
        click.echo(f"wrote {output}")


@click.command("clean")
@click.argument("corpus", nargs=-1, required=True)
@click.option("--audit", "audit", required=True, type=click.Path(exists=True, file_okay=False),
              help="The audit of CORPUS whose ranked documents are removed (its reading options are used).")
@click.option("--top", type=click.IntRange(min=1), default=None, help="Remove the N highest-ranked documents.")
@click.option("--min-score", type=click.FloatRange(0, 1), default=None,
              help="Remove the documents scoring at least this.")
@click.option("--ids", "ids_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Remove the documents listed in this file, one id per line (e.g. `corpus-audit documents "
                   "... -o ids.txt`, edited by hand).")
@click.option("--dimension", default=None, help="With --top or --min-score: rank by this AQ-27 dimension.")
@click.option("--reviewed", "reviewed", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A Label Studio export (JSON or JSON-MIN) of the tasks of `export-flagged --format "
                   "label-studio`: remove the documents reviewers marked stigmatising and keep those they cleared "
                   "(alone, or over --top/--min-score/--ids); the flags' precision goes to the console and the "
                   "manifest.")
@click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False),
              help="Output folder: each input file rewritten under its own name, and clean-manifest.json.")
@reports_errors("cannot write to {outdir}")
def clean_command(corpus: tuple[str, ...], audit: str, top: int | None, min_score: float | None,
                  ids_file: str | None, dimension: str | None, reviewed: str | None, outdir: str) -> None:
    """Write CORPUS without the documents chosen from its audit, every other record byte for byte as it was.

    CORPUS: the JSON Lines, text (--line-docs as audited) or Parquet files the audit read; each is rewritten in
    OUTDIR with its name and compression. clean-manifest.json lists the rule, each file's counts and each removed
    document with its rank, score and most stigmatising sentence. Audit OUTDIR again, then `corpus-audit compare`
    the two audits: sentences embedded before come from the embedding cache. With --reviewed, the manifest also
    holds the review: tasks reviewed, documents confirmed and cleared, the flags' precision, and the tasks it
    could not use (no choice, unknown ids), counted; nothing is removed that no reviewer or rule chose.
    """
    from corpus_audit.audit.clean import Removal, clean_from_audit

    removal = Removal(top=top, min_score=min_score, ids_file=ids_file, dimension=dimension, reviewed=reviewed)
    result, manifest = clean_from_audit(corpus, audit, removal, outdir, log=click.echo)
    click.echo(f"removed {result.records_removed} record(s) of {result.documents_read} documents ({removal.describe()})")
    if result.ids_not_found:
        warn(f"{len(result.ids_not_found)} chosen id(s) are in no input file, e.g. {result.ids_not_found[0]!r}: "
             "is CORPUS the corpus the audit read?")
    click.echo(f"wrote {outdir} and {manifest}")


@click.command("plot")
@click.argument("outdir", type=click.Path(exists=True, file_okay=False))
@click.option("--svg", is_flag=True, help="Also write each figure as SVG (an audit writes PNG only).")
@STRICT_OUTPUT_OPTION
@reports_errors()
def plot_command(outdir: str, svg: bool, strict: bool) -> None:
    """Rebuild the figures of an audit folder from its sentences.parquet (no re-embedding)."""
    from corpus_audit.audit.figures import replot
    from corpus_audit.audit.folder import FIGURE_FORMATS, VECTOR_FORMAT, AuditFolder
    from corpus_audit.common.atomic import folder_lock

    with folder_lock(outdir):  # an audit writing into the folder holds it
        written = replot(AuditFolder(outdir), strict, warn, (*FIGURE_FORMATS, VECTOR_FORMAT) if svg else FIGURE_FORMATS)
    click.echo(f"wrote {len(written)} figures to {outdir}")


@click.command("report")
@click.argument("outdir", type=click.Path(exists=True, file_okay=False))
@STRICT_OUTPUT_OPTION
@reports_errors()
def report_command(outdir: str, strict: bool) -> None:
    """Write OUTDIR/report.html, one offline HTML file, from an audit's outputs (figures rebuilt if missing)."""
    from corpus_audit.audit.documents import write_documents
    from corpus_audit.audit.figures import replot
    from corpus_audit.audit.folder import AuditFolder
    from corpus_audit.audit.report import write_report
    from corpus_audit.common.atomic import folder_lock

    folder = AuditFolder(outdir)
    with folder_lock(outdir):  # an audit writing into the folder holds it
        if folder.missing_figures():
            replot(folder, strict, warn)
        if not folder.documents.is_file():  # an audit written before the documents table existed
            write_documents(folder)
        path = write_report(folder, strict, warn)
    click.echo(f"wrote {path}")


COMMANDS = (report_command, plot_command, compare_command, documents_command, clean_command, export_flagged_command)
