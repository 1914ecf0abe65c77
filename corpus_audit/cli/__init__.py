"""Command-line interface: thin click commands that parse options, call the library and print what it returns.

This package is the only one that imports click, and nothing in the package imports it. Every command maps the
library's user errors to a message through :func:`corpus_audit.cli.errors.reports_errors`.
"""

from __future__ import annotations

import click

from corpus_audit.common.version import __version__
from corpus_audit.cli import axes, corpus, outputs, probe


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="corpus-audit")
def main() -> None:
    """Audit text corpora for health-related stigma before pretraining.

    Sentences are projected onto the Stereotype Content Model's warmth and competence axes;
    mentions of mental and physical illnesses are compared and mapped to AQ-27 stigma dimensions.
    """


for _command in (*corpus.COMMANDS, *outputs.COMMANDS, *axes.COMMANDS, *probe.COMMANDS):
    main.add_command(_command)
