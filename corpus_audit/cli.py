"""Command-line interface: thin click commands that parse options and call library functions."""

from __future__ import annotations

import click

from corpus_audit import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="corpus-audit")
def main() -> None:
    """Audit text corpora for health-related stigma before pretraining.

    Sentences are projected onto the Stereotype Content Model's warmth and competence axes;
    mentions of mental and physical illnesses are compared and mapped to AQ-27 stigma dimensions.
    """
