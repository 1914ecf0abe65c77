"""corpus-audit: audit text corpora for health-related stigma before pretraining."""

__version__ = "0.1.0"
