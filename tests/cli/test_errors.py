"""The one error mapping of the command line."""

from __future__ import annotations

import errno

import click
import pytest
from click.testing import CliRunner

from corpus_audit.cli.errors import reports_errors
from corpus_audit.common.atomic import OutputLocationError
from corpus_audit.common.errors import UserError


def command(error: Exception, cannot_write: str | None = "cannot write {output}") -> click.Command:
    @click.command()
    @click.option("--output", default="out.csv")
    @reports_errors(cannot_write)
    def run(output: str) -> None:
        raise error

    return run


@pytest.mark.parametrize("error, message", [
    (UserError("bad.jsonl:3: malformed JSON"), "Error: bad.jsonl:3: malformed JSON"),
    (OutputLocationError(errno.ENOSPC, "out has only 1 MB free"), "Error: out has only 1 MB free"),
    (PermissionError(errno.EACCES, "Permission denied"), "Error: cannot write out.csv: [Errno 13] Permission denied"),
])
def test_user_and_write_errors_become_one_line_and_exit_1(error, message):
    result = CliRunner().invoke(command(error), [])
    assert result.exit_code == 1 and result.output.strip() == message


def test_other_errors_are_not_hidden():
    result = CliRunner().invoke(command(KeyError("bug")), [])
    assert isinstance(result.exception, KeyError)
    result = CliRunner().invoke(command(OSError("disk"), cannot_write=None), [])
    assert isinstance(result.exception, OSError)
