"""Checkpoints of a staged run: per finished stage, a digest of each thing its output depends on and of each file
it wrote, so that a rerun skips what is up to date and says why it redoes the rest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corpus_audit.common.atomic import write_text_atomic
from corpus_audit.common.resources import sha256_file


def fingerprint(payload: Any) -> str:
    """SHA-256 of ``payload`` as canonical JSON (values JSON cannot hold are written with ``str``)."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


#: :meth:`Checkpoints.fresh`'s reason for a stage with no record: it starts, rather than runs again.
NOT_RUN = "not run yet"


class Checkpoints:
    """A checkpoint file (e.g. ``OUTDIR/checkpoints.json``): per finished stage, the digests of what it depended on
    and of what it wrote.

    Each dependency has a readable name ("lexicon", "max_sentences", ...) so that a rerun can say what changed.
    An unreadable file (truncated, garbage, another layout) is reported and every stage runs again.
    """

    FORMAT = 2

    def __init__(self, path: Path, log: Callable[[str], None]) -> None:
        self.path = path
        self.stages: dict[str, dict[str, dict[str, str]]] = {}
        if not self.path.exists():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not (isinstance(data, dict) and data.get("format") == self.FORMAT and isinstance(data.get("stages"), dict)
                    and all(isinstance(v, dict) and isinstance(v.get("depends_on"), dict)
                            and isinstance(v.get("outputs"), dict) for v in data["stages"].values())):
                raise ValueError("not a corpus-audit checkpoint table of this version")
        except (OSError, ValueError) as error:  # ValueError: also bad JSON and bad UTF-8
            log(f"{self.path} is unreadable ({error}); every stage runs again")
            return
        self.stages = data["stages"]

    def fresh(self, stage: str, depends_on: dict[str, Any], *outputs: Path) -> str | None:
        """None when the stage can be skipped, else the reason it must run."""
        record = self.stages.get(stage)
        if record is None:
            return NOT_RUN
        digests = {name: fingerprint(value) for name, value in depends_on.items()}
        changed = sorted(name for name in digests.keys() | record["depends_on"].keys()
                         if digests.get(name) != record["depends_on"].get(name))
        if changed:
            return f"{', '.join(changed)} changed since the last run"
        for path in outputs:
            if not path.is_file():
                return f"{path.name} is missing"
            if sha256_file(path) != record["outputs"].get(path.name):
                return f"{path.name} was changed or damaged after it was written"
        return None

    def mark(self, stage: str, depends_on: dict[str, Any], *outputs: Path) -> None:
        self.stages[stage] = {"depends_on": {name: fingerprint(value) for name, value in depends_on.items()},
                              "outputs": {path.name: sha256_file(path) for path in outputs}}
        write_text_atomic(self.path, json.dumps({"format": self.FORMAT, "stages": self.stages}, indent=2))
