"""Computational Stereotype Content Model: seed lexicon, sentence templates, warmth/competence axes."""

from corpus_audit.scm.axes import AxesMismatchError, SCMAxes
from corpus_audit.scm.lexicon import SeedAdjective, load_seed_lexicon

__all__ = ["AxesMismatchError", "SCMAxes", "SeedAdjective", "load_seed_lexicon"]
