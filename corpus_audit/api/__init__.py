"""corpus-audit's Python API (docs/api.md): :class:`Instrument`, loaded once for a language, model and term set,
gives the mentions of a text, the scores of sentences and of documents, and whole audits. The datatrove steps are
in :mod:`corpus_audit.api.datatrove` (``pip install "corpus-audit[datatrove]"``)."""

from corpus_audit.api.instrument import AuditResults, DocumentBatch, Instrument, Mention

__all__ = ["AuditResults", "DocumentBatch", "Instrument", "Mention"]
