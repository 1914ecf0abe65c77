"""One error mapping for every command: a :class:`~corpus_audit.common.errors.UserError` is printed as its message
with exit status 1 (no traceback), and an OS error while writing names what could not be written."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from corpus_audit.common.errors import UserError

Command = TypeVar("Command", bound=Callable[..., Any])


def reports_errors(cannot_write: str | None = None) -> Callable[[Command], Command]:
    """Decorate a command so that user errors end it with their message. ``cannot_write``: the message of an
    ``OSError`` (a full disk, a read-only folder), a format string over the command's parameters, e.g.
    ``"cannot write {output}"``; the error follows it. Without it an ``OSError`` propagates."""

    def decorate(command: Command) -> Command:
        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return command(*args, **kwargs)
            except UserError as error:
                exception = click.ClickException(str(error))
                exception.exit_code = getattr(error, "exit_code", exception.exit_code)
                raise exception from error
            except OSError as error:
                if cannot_write is None:
                    raise
                # a repeatable option (compare -o) is a tuple: its paths, not its repr
                named = {name: ", ".join(map(str, value)) if isinstance(value, (tuple, list)) else value
                         for name, value in kwargs.items()}
                raise click.ClickException(f"{cannot_write.format(**named)}: {error}") from error

        return run  # type: ignore[return-value]

    return decorate
