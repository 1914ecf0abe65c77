"""What every questionnaire of the probes shares: the bundled folder of a language (``questionnaires/<lang>/``, see
its README) and the reading of a questionnaire CSV with errors that name the file
and line."""

from __future__ import annotations

from pathlib import Path

from corpus_audit.common.csv_rows import read_csv_rows
from corpus_audit.common.errors import UserError
from corpus_audit.common.resources import data_dir


class QuestionnaireError(UserError, ValueError):
    """A questionnaire file is missing or malformed; the message names the file and line."""


def bundled_folder(lang: str) -> Path:
    return data_dir("questionnaires") / lang


def read_rows(path: Path, columns: tuple[str, ...]) -> list[tuple[str, dict[str, str]]]:
    """(``file:line``, row) of a questionnaire CSV that has ``columns``; values stripped (every probe's files)."""
    rows = [(f"{path}:{line}", row) for line, row in read_csv_rows(
        path, columns, QuestionnaireError, "missing (see questionnaires/README.md for the files of each probe)")]
    if not rows:
        raise QuestionnaireError(f"{path}: no rows")
    return rows
