"""What the filter keeps (:class:`KeptSentence`, one Parquet row each) and what it counts (:class:`FilterSummary`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from corpus_audit.corpus.documents import NoDocumentsError, ReadStats, check_documents_read, data_loss_warnings
from corpus_audit.corpus.matcher import FORMS
from corpus_audit.languages import language_warning
from corpus_audit.stigma.quadrants import GROUPS, ILLNESS_TYPES

BASE_COLUMNS = ("doc_id", "sentence_index", "sentence", "terms", "term_offsets", "illnesses", "illness_type", "forms")


@dataclass(slots=True)
class KeptSentence:
    """A sentence that mentions at least one illness. ``term_offsets``: [start, end) of each of ``terms`` in
    ``sentence``, where the matcher found it (masking replaces exactly those spans)."""

    doc_id: str
    sentence_index: int
    sentence: str
    terms: list[str]
    term_offsets: list[list[int]]
    illnesses: list[str]
    illness_type: str
    fields: dict[str, Any]
    #: the form of each of ``terms`` (``corpus_audit.corpus.matcher.FORMS``)
    forms: list[str] = field(default_factory=list)

    def to_row(self) -> dict[str, Any]:
        row = {name: getattr(self, name) for name in BASE_COLUMNS}
        row.update(self.fields)
        return row


@dataclass
class FilterSummary:
    """Counts for one run; ``reading`` is filled by the readers as documents stream past."""

    lang: str
    reading: ReadStats = field(default_factory=ReadStats)
    documents_processed: int = 0
    documents_with_candidates: int = 0
    documents_matched: int = 0
    sentences_segmented: int = 0
    sentences_kept: int = 0
    sentences_by_type: Counter = field(default_factory=Counter)
    sentences_by_illness: Counter = field(default_factory=Counter)
    mentions_by_illness: Counter = field(default_factory=Counter)
    #: mentions per (form, type): how the corpus speaks of illness (the share of slang is itself a finding)
    mentions_by_form: Counter = field(default_factory=Counter)
    terms: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    #: What the user should know about the corpus, one line each (:func:`corpus_warnings`).
    warnings: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        reading = self.reading.to_dict()
        return {
            "lang": self.lang,
            **reading,
            "documents_processed": self.documents_processed,
            "documents_with_candidates": self.documents_with_candidates,
            "documents_matched": self.documents_matched,
            "sentences_segmented": self.sentences_segmented,
            "sentences_kept": self.sentences_kept,
            "sentences_by_type": {k: self.sentences_by_type.get(k, 0) for k in ILLNESS_TYPES},
            "sentences_by_illness": dict(self.sentences_by_illness.most_common()),
            "mentions_by_illness": dict(self.mentions_by_illness.most_common()),
            "mentions_by_form": self.form_counts(),
            "top_terms": dict(self.terms.most_common(50)),
            "seconds": round(self.seconds, 3),
            "megabytes_per_second": round(reading["bytes_read"] / 1e6 / self.seconds, 3) if self.seconds else None,
            "warnings": list(self.warnings),
            **self.extra,
        }

    def form_counts(self) -> dict[str, dict[str, int]]:
        """Mentions per form (in :data:`FORMS` order, those that occur) and type: {form: {mental: n, physical: n}}."""
        counts = {form: {kind: self.mentions_by_form[form, kind] for kind in GROUPS} for form in FORMS}
        return {form: by_type for form, by_type in counts.items() if any(by_type.values())}

    def merge(self, other: FilterSummary) -> None:
        """Add the counts of ``other`` (the documents that follow those counted here)."""
        self.reading.merge(other.reading)
        self.documents_processed += other.documents_processed
        self.documents_with_candidates += other.documents_with_candidates
        self.documents_matched += other.documents_matched
        self.sentences_segmented += other.sentences_segmented
        self.sentences_kept += other.sentences_kept
        for name in ("sentences_by_type", "sentences_by_illness", "mentions_by_illness", "mentions_by_form", "terms"):
            getattr(self, name).update(getattr(other, name))

    def format_text(self) -> str:
        """Human-readable summary for the terminal."""
        data = self.to_dict()
        lines = [
            f"documents read: {data['documents_read']} ({data['bytes_read'] / 1e6:.1f} MB from {data['files']} source(s)),"
            f" processed: {data['documents_processed']}, matched: {data['documents_matched']}",
            f"sentences kept: {data['sentences_kept']} (mental {data['sentences_by_type']['mental']},"
            f" physical {data['sentences_by_type']['physical']}, both {data['sentences_by_type']['both']})",
        ]
        if data["mentions_by_form"]:
            lines.append("mentions per form (mental/physical): " + ", ".join(
                f"{form} {counts['mental']}/{counts['physical']}" for form, counts in data["mentions_by_form"].items()))
        if data["sentences_by_illness"]:
            lines.append("sentences per illness: " + ", ".join(f"{k} {v}" for k, v in data["sentences_by_illness"].items()))
        lines.append(f"records skipped: {data['records_skipped']}")
        lines.extend(f"  {reason}: {count}" for reason, count in data["skipped_by_reason"].items())
        if data["records_repaired"]:
            lines.append(f"records repaired (kept, invalid bytes replaced by U+FFFD): {data['records_repaired']}")
            lines.extend(f"  {reason}: {count}" for reason, count in data["repaired_by_reason"].items())
        lines.append(f"time: {data['seconds']} s")
        return "\n".join(lines)


def check_documents_found(summary: FilterSummary) -> None:
    """Raise :class:`NoDocumentsError` (a one-line message naming the fix) when the filter saw no document: an
    empty corpus, every record skipped, or a ``--sample`` that kept none."""
    check_documents_read(summary.reading)
    if not summary.documents_processed:
        raise NoDocumentsError(f"--sample kept none of the {summary.reading.documents:,} documents read: raise it")


def corpus_warnings(summary: FilterSummary) -> list[str]:
    """Warnings about the corpus of a finished filter run: data lost while reading (a file that ends early, a binary
    file, files left unread in a folder), and text that does not look like ``summary.lang``."""
    warning = language_warning(summary.reading.language, summary.lang)
    return data_loss_warnings(summary.reading) + ([warning] if warning else [])
