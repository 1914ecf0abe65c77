"""The rows of a hand-edited CSV data file (templates, questionnaires), read once for every part that ships one."""

from __future__ import annotations

import csv
from pathlib import Path


def read_csv_rows(path: Path, columns: tuple[str, ...], error: type[Exception],
                  missing: str = "missing") -> list[tuple[int, dict[str, str]]]:
    """(line, row) of each row of ``path``, which must have ``columns``; values stripped, cells of no column
    dropped. ``error`` is raised, naming the file, for a missing file (with the message ``missing``) or a missing
    column; the line is where the row ends in the file."""
    if not path.is_file():
        raise error(f"{path}: {missing}")
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        absent = [name for name in columns if name not in (reader.fieldnames or [])]
        if absent:
            raise error(f"{path}: missing column(s) {', '.join(absent)}")
        return [(reader.line_num, {key: (value or "").strip() for key, value in row.items() if key})
                for row in reader]
