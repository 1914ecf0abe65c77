"""corpus-audit: audit text corpora for health-related stigma before pretraining.

``import corpus_audit`` stays cheap: the Python API (:mod:`corpus_audit.api`: ``Instrument``, ``Mention``,
``DocumentBatch``, ``AuditResults``) is imported on first use of one of its names.
"""

from typing import Any

from corpus_audit.common.version import __version__

#: The names of the Python API, exported from the package root on first use.
API_NAMES = frozenset(("AuditResults", "DocumentBatch", "Instrument", "Mention"))
__all__ = ["AuditResults", "DocumentBatch", "Instrument", "Mention", "__version__"]


def __getattr__(name: str) -> Any:
    if name in API_NAMES:
        from corpus_audit import api

        return getattr(api, name)
    raise AttributeError(f"module 'corpus_audit' has no attribute {name!r}")
