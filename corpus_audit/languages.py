"""The languages corpus-audit knows, one registry: everything that differs between them is a field here, and
the language data (lexicons, templates) lives in ``lexicons/<code>/`` and ``templates/<code>/``.

Adding a language is one :class:`Language` record plus its data folders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from corpus_audit.common.errors import UserError


class UnknownLanguageError(UserError, ValueError):
    """A language code that is not in :data:`LANGUAGES`."""


@dataclass(frozen=True)
class Language:
    """``mask``: the neutral phrase that replaces an illness mention before embedding (``--mask-terms``).
    ``default_model``: the embedding model of ``--lang`` without ``--model`` (a name of the embed registry).
    ``spacy_code``: the blank spaCy pipeline that splits sentences. ``agreement``: adjectives agree with their
    noun in gender and number (the SCM templates then take forms from ``lexicons/<code>/scm_forms.csv``).
    ``euphony``: (pattern, replacement) rewrites that filled templates need, e.g. Spanish "y" -> "e"."""

    code: str
    name: str
    mask: str
    default_model: str
    spacy_code: str
    agreement: bool = False
    euphony: tuple[tuple[str, str], ...] = ()
    _euphony: tuple[tuple[re.Pattern[str], str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_euphony", tuple((re.compile(p), r) for p, r in self.euphony))

    def apply_euphony(self, text: str) -> str:
        for pattern, replacement in self._euphony:
            text = pattern.sub(replacement, text)
        return text


LANGUAGES: dict[str, Language] = {
    "en": Language("en", "English", mask="this condition", default_model="minilm", spacy_code="en"),
    # Spanish default model: multilingual-e5-small measured better than multilingual USE on every functional test
    # of the Spanish axes (docs/axes.md).
    "es": Language("es", "Spanish", mask="esta afección", default_model="e5-small", spacy_code="es", agreement=True,
                   # "y" becomes "e" before a word that starts with the sound /i/ ("amables e inteligentes").
                   euphony=((r"\by (?=h?[iíIÍ](?![aeiouáéóú]))", "e "),)),
}
LANGUAGE_CODES = tuple(LANGUAGES)


def get_language(code: str) -> Language:
    """The language registered as ``code``; :class:`UnknownLanguageError` naming the known ones otherwise."""
    try:
        return LANGUAGES[code]
    except KeyError:
        raise UnknownLanguageError(f"unknown language {code!r}: use one of {', '.join(LANGUAGE_CODES)}") from None
