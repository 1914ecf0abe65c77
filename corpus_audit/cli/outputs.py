"""The commands that read finished audits: ``report``, ``plot``, ``compare`` and ``export-flagged``."""

from __future__ import annotations

import click

from corpus_audit.cli.errors import reports_errors
from corpus_audit.cli.options import STRICT_OUTPUT_OPTION, warn
from corpus_audit.stigma.quadrants import GROUPS, QUADRANTS


@click.command("compare")
@click.argument("outdir_a", type=click.Path(exists=True, file_okay=False))
@click.argument("outdir_b", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Also write the comparison as JSON.")
@click.option("--labels", nargs=2, default=("A", "B"), show_default=True, help="Names of the two audits.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and permutation tests.")
@click.option("--allow-different-models", is_flag=True,
              help="Compare audits scored with different models or axes (their scores are not on the same axes).")
@STRICT_OUTPUT_OPTION
@reports_errors("cannot write {output}")
def compare_command(outdir_a: str, outdir_b: str, output: str | None, labels: tuple[str, str], seed: int,
                    allow_different_models: bool, strict: bool) -> None:
    """Compare two finished audits (two corpora, or one corpus before and after filtering).

    Per illness type: warmth and competence of A vs B, a 2-D energy test and the quadrant shares; per
    AQ-27 dimension: the shares in A and B and the change of the mental - physical gap.
    """
    import json

    from corpus_audit.audit.compare import compare_audits, format_comparison
    from corpus_audit.common.atomic import write_text_atomic

    if labels[0] == labels[1]:
        raise click.BadParameter(f"the two labels must differ, not {labels[0]!r} twice", param_hint="--labels")
    result = compare_audits(outdir_a, outdir_b, labels=labels, seed=seed,
                            allow_different_models=allow_different_models, strict=strict, log=warn)
    click.echo(format_comparison(result))
    if output:
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
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output file: .csv, .parquet or .jsonl.")
@STRICT_OUTPUT_OPTION
@reports_errors("cannot write {output}")
def export_flagged_command(outdir: str, quadrant: str | None, dimension: str | None, illness_type: str | None,
                           output: str, strict: bool) -> None:
    """Export the sentences of an audit OUTDIR in a quadrant and/or an AQ-27 dimension's region.

    Writes doc_id, sentence_index, sentence, illnesses, illness_type, warmth, competence and quadrant,
    and prints the number of flagged sentences per document.
    """
    from corpus_audit.audit.flagged import export_flagged

    flagged, documents = export_flagged(outdir, output, quadrant=quadrant, dimension=dimension,
                                        illness_type=illness_type, strict=strict, log=warn)
    shown = 20
    click.echo(f"{len(flagged)} flagged sentences in {len(documents)} documents")
    for doc_id, count in documents.head(shown).itertuples(index=False):
        click.echo(f"  {count:6d}  {doc_id}")
    if len(documents) > shown:
        click.echo(f"  ... and {len(documents) - shown} more documents")
    click.echo(f"wrote {output}")


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
    from corpus_audit.audit.figures import replot
    from corpus_audit.audit.folder import AuditFolder
    from corpus_audit.audit.report import write_report
    from corpus_audit.common.atomic import folder_lock

    folder = AuditFolder(outdir)
    with folder_lock(outdir):  # an audit writing into the folder holds it
        if folder.missing_figures():
            replot(folder, strict, warn)
        path = write_report(folder, strict, warn)
    click.echo(f"wrote {path}")


COMMANDS = (report_command, plot_command, compare_command, export_flagged_command)
