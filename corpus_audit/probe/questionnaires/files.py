"""What every questionnaire of the probes shares: the bundled folder of a language (``questionnaires/<lang>/``, see
its README) and the reading of a questionnaire CSV with errors that name the file
and line."""

from __future__ import annotations

import csv
from pathlib import Path

from corpus_audit.common.errors import UserError
from corpus_audit.common.resources import data_dir


class QuestionnaireError(UserError, ValueError):
    """A questionnaire file is missing or malformed; the message names the file and line."""


def bundled_folder(lang: str) -> Path:
    return data_dir("questionnaires") / lang


def read_rows(path: Path, columns: tuple[str, ...]) -> list[tuple[str, dict[str, str]]]:
    """(``file:line``, row) of a questionnaire CSV that has ``columns``; values stripped (every probe's files)."""
    if not path.is_file():
        raise QuestionnaireError(f"{path}: missing (see questionnaires/README.md for the files of each probe)")
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [name for name in columns if name not in (reader.fieldnames or [])]
        if missing:
            raise QuestionnaireError(f"{path}: missing column(s) {', '.join(missing)}")
        rows = [(f"{path}:{line}", {key: (value or "").strip() for key, value in row.items() if key})
                for line, row in enumerate(reader, start=2)]
    if not rows:
        raise QuestionnaireError(f"{path}: no rows")
    return rows
