"""Documents and what the readers count while reading them.

A bad record (malformed JSON, missing text field, truncated compressed stream, empty file) never stops a run: it
is counted in :class:`ReadStats` with its reason. A record with invalid UTF-8 is kept, each invalid sequence
replaced by U+FFFD, and counted as repaired. With ``strict=True`` the first bad or repaired record raises
:class:`CorpusError` naming the file and line instead.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from corpus_audit.common.errors import UserError
from corpus_audit.languages import LanguageEvidence

MAX_EXAMPLES = 20  # bad records quoted in the summary, per run
MAX_FIELDS_SEEN = 20  # field names of records without a text field, kept to suggest --text-field
INVALID_UTF8 = "invalid UTF-8"  # the reason of a repaired record
#: The reason of a compressed file (or Parquet file) that ends early: the rest of the file is lost, not one record.
TRUNCATED = "truncated or corrupt file"
#: What a file with NUL bytes in its first block is (git's rule for binary files): an executable, an image, a zip or
#: Parquet file under a text name, or UTF-16 text. It is still read record by record (one record with a stray NUL
#: must not lose a file), but said, and a run whose every file is binary fails.
BINARY = "binary content, not text (NUL bytes; a UTF-16 file must be converted to UTF-8)"
MAX_FILES_LISTED = 10  # ignored files named in a warning


def truncation(error: BaseException) -> str:
    """The skip reason of a stream that ended early with ``error``."""
    return f"{TRUNCATED} ({type(error).__name__})"


class CorpusError(UserError):
    """An input problem: a path that does not exist, or a bad record in strict mode."""


class NoDocumentsError(CorpusError):
    """Reading gave no document: an empty corpus, or every record skipped (a wrong ``--text-field``...)."""


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
    repaired: Counter = field(default_factory=Counter)
    repaired_examples: list[str] = field(default_factory=list)
    #: The fields of the records skipped for lacking the text field (the first MAX_FIELDS_SEEN names), each with
    #: the characters of its string values: what the text field may be.
    fields_seen: Counter = field(default_factory=Counter)
    #: The text field that records were skipped for lacking (None if none was).
    text_field: str | None = None
    #: The words of the first documents, to tell which language they are in.
    language: LanguageEvidence = field(default_factory=LanguageEvidence)
    #: Where files ended early ("path:line"; the rest of each is lost), files skipped as binary, and files in the
    #: input folders left unread (unknown extension): data loss the user must hear about.
    truncated: list[str] = field(default_factory=list)
    binary: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    #: Bytes of the input files on disk (compressed as stored; None when a pipe is read) and how many of them were
    #: read: the progress bar's share and ETA.
    disk_total: int | None = None
    disk_read: int = 0

    def count(self, doc: Document) -> None:
        """Count a document the readers give."""
        self.documents += 1
        self.language.add(doc.text)

    def skip(self, reason: str, source: str, line: int | None, strict: bool, count: int = 1) -> None:
        """Count one bad record (``count`` records lost from ``line`` on), or raise in strict mode."""
        where = f"{source}:{line}" if line is not None else source
        if strict:
            raise CorpusError(f"{where}: {reason}")
        self.skipped[reason] += count
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(f"{where}: {reason}")
        if reason.startswith(TRUNCATED):
            self.truncated.append(where)

    def repair(self, reason: str, source: str, line: int | None, strict: bool) -> None:
        """Count one record kept after a repair (invalid bytes replaced), or raise in strict mode."""
        where = f"{source}:{line}" if line is not None else source
        if strict:
            raise CorpusError(f"{where}: {reason}")
        self.repaired[reason] += 1
        if len(self.repaired_examples) < MAX_EXAMPLES:
            self.repaired_examples.append(f"{where}: {reason}")

    def skip_without_text(self, record: dict[Any, Any], text_field: str, source: str, line: int | None,
                          strict: bool) -> None:
        """Skip a record that has no text field ``text_field``, noting its fields (see :attr:`fields_seen`)."""
        self.skip(f"missing text field {text_field!r}", source, line, strict)
        self.text_field = text_field
        for name, value in record.items():
            if str(name) in self.fields_seen or len(self.fields_seen) < MAX_FIELDS_SEEN:
                self.fields_seen[str(name)] += len(value) if isinstance(value, str) else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "documents_read": self.documents,
            "bytes_read": self.bytes_read,
            "records_skipped": sum(self.skipped.values()),
            "skipped_by_reason": dict(self.skipped.most_common()),
            "skipped_examples": list(self.examples),
            "records_repaired": sum(self.repaired.values()),
            "repaired_by_reason": dict(self.repaired.most_common()),
            "repaired_examples": list(self.repaired_examples),
            "files_truncated": list(self.truncated),
            "files_binary": list(self.binary),
            "files_ignored": list(self.ignored),
        }

    def merge(self, other: ReadStats) -> None:
        """Add the counts of ``other``, read after everything counted here (examples keep that order)."""
        self.files += other.files
        self.documents += other.documents
        self.bytes_read += other.bytes_read
        self.skipped.update(other.skipped)
        self.examples.extend(other.examples[: MAX_EXAMPLES - len(self.examples)])
        self.repaired.update(other.repaired)
        self.repaired_examples.extend(other.repaired_examples[: MAX_EXAMPLES - len(self.repaired_examples)])
        for name, characters in other.fields_seen.items():
            if name in self.fields_seen or len(self.fields_seen) < MAX_FIELDS_SEEN:
                self.fields_seen[name] += characters
        self.text_field = self.text_field or other.text_field
        self.language.merge(other.language)
        self.truncated.extend(other.truncated)
        self.binary.extend(other.binary)
        self.ignored.extend(other.ignored)


def data_loss_warnings(stats: ReadStats) -> list[str]:
    """One line per loss the readers saw that a count of skipped records would understate: a file that ends early
    (all after that point lost), a binary file skipped, files in the input folders left unread."""
    lines = [f"{where}: the file ends here (truncated or corrupt): everything after this point was lost; "
             "re-download or re-compress it" for where in stats.truncated]
    lines += [f"{path}: {BINARY}: is it the corpus you meant? read as text, its bytes are noise"
              for path in stats.binary]
    if stats.ignored:
        named = ", ".join(stats.ignored[:MAX_FILES_LISTED])
        more = f" and {len(stats.ignored) - MAX_FILES_LISTED} more" if len(stats.ignored) > MAX_FILES_LISTED else ""
        lines.append(f"{len(stats.ignored)} file(s) in the input folder(s) were not read (not "
                     f".jsonl/.json/.csv/.tsv/.txt/.parquet, optionally .gz/.zst/.bz2): {named}{more}; rename them, "
                     "or pass them by name with --format")
    return lines


def check_documents_read(stats: ReadStats) -> None:
    """Raise :class:`NoDocumentsError` with a one-line message that names the fix when the readers gave no
    document: the corpus is empty, or every record was skipped (for a wrong text field: the fields seen and the
    likeliest text field)."""
    if stats.files and len(stats.binary) == stats.files:
        raise NoDocumentsError(f"no text read: every input file is {BINARY}, e.g. {stats.binary[0]}; give the "
                               "corpus's text files")
    if stats.documents:
        return
    skipped = sum(stats.skipped.values())
    if skipped == stats.skipped["empty file"] + stats.skipped["blank line"]:
        raise NoDocumentsError(f"the corpus is empty: its {stats.files} file(s) hold no record; check the CORPUS "
                               "paths")
    if stats.fields_seen:
        # The text is likeliest in the longest string field (not the text field itself: it is null there).
        longest = max(stats.fields_seen, key=lambda name: (name != stats.text_field, stats.fields_seen[name]))
        fix = f"pass --text-field {longest}" if stats.fields_seen[longest] else \
            "pass --text-field with the field that holds the text"
        raise NoDocumentsError(f"no document had a text field {stats.text_field!r} ({skipped:,} records skipped); "
                               f"fields seen: {', '.join(sorted(stats.fields_seen))}; {fix}")
    reasons = ", ".join(f"{reason} {count:,}" for reason, count in stats.skipped.most_common(3))
    raise NoDocumentsError(f"no document read: all {skipped:,} records were skipped ({reasons}), e.g. "
                           f"{stats.examples[0]}; fix the input or pass --format, --text-field or --line-docs")


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


def repair_escaped(value: str) -> str:
    """``value``, decoded with ``surrogateescape``, as if decoded with ``replace``: each invalid UTF-8 sequence
    becomes U+FFFD (the same text as ``raw.decode("utf-8", "replace")`` on its bytes)."""
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def has_surrogates(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
