"""Documents and what the readers count while reading them.

A bad record (malformed JSON, missing text field, invalid UTF-8, truncated compressed stream, empty file) never
stops a run: it is counted in :class:`ReadStats` with its reason. With ``strict=True`` the first bad record raises
:class:`CorpusError` naming the file and line instead.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from corpus_audit.common.errors import UserError

MAX_EXAMPLES = 20  # bad records quoted in the summary, per run


class CorpusError(UserError):
    """An input problem: a path that does not exist, or a bad record in strict mode."""


@dataclass(slots=True)
class Document:
    """One document: ``meta`` holds the record's other fields; ``source``/``line`` say where it came from."""

    id: str
    text: str
    meta: dict[str, Any]
    source: str
    line: int | None = None


@dataclass
class ReadStats:
    """What the readers saw: documents yielded, bytes read (uncompressed) and records skipped, by reason."""

    files: int = 0
    documents: int = 0
    bytes_read: int = 0
    skipped: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def skip(self, reason: str, source: str, line: int | None, strict: bool, count: int = 1) -> None:
        """Count one bad record (``count`` records lost from ``line`` on), or raise in strict mode."""
        where = f"{source}:{line}" if line is not None else source
        if strict:
            raise CorpusError(f"{where}: {reason}")
        self.skipped[reason] += count
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(f"{where}: {reason}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "documents_read": self.documents,
            "bytes_read": self.bytes_read,
            "records_skipped": sum(self.skipped.values()),
            "skipped_by_reason": dict(self.skipped.most_common()),
            "skipped_examples": list(self.examples),
        }

    def merge(self, other: ReadStats) -> None:
        """Add the counts of ``other``, read after everything counted here (examples keep that order)."""
        self.files += other.files
        self.documents += other.documents
        self.bytes_read += other.bytes_read
        self.skipped.update(other.skipped)
        self.examples.extend(other.examples[: MAX_EXAMPLES - len(self.examples)])


@dataclass
class ReaderOptions:
    """How to turn records into documents."""

    text_field: str = "text"
    id_field: str = "id"
    format: str | None = None  # None: from the file extension (stdin: jsonl)
    line_docs: bool = False  # .txt: one document per line instead of per file
    strict: bool = False
    # meta holds the whole record, text field included, in the record's order (the score command writes every
    # input column back in its place)
    whole_record: bool = False


_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_surrogates(value: str) -> str:
    """``value`` with lone surrogates (JSON escapes such as ``"\\ud800"``) replaced by U+FFFD: they are not
    text, and neither spaCy's tokenizer nor Parquet accept them."""
    return _SURROGATE.sub("\ufffd", value) if not value.isascii() and has_surrogates(value) else value


def field_text(value: Any) -> str | None:
    """A record field as text, for output columns that must hold one type whatever the input: JSON for
    objects and lists, ``str`` for other values, None kept; lone surrogates replaced."""
    if value is None:
        return None
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value)
    return scrub_surrogates(value)


def has_surrogates(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
