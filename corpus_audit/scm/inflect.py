"""Gender and number forms of Spanish SCM adjectives, so that sentences agree with their subjects.

``inflect`` turns a base (masculine singular) adjective into its four forms with three backends:

1. ``lookup``: the Spanish lemma table of ``spacy-lookups-data`` (a form -> lemma dict), inverted, attests
   forms. A form counts only when it is the one expected for its slot: the table also maps nouns, verb
   forms and misspellings to adjective lemmas (``superiora``, ``capazes``, ``pésimo`` -> ``malo``,
   ``regulara`` -> ``regular``), so attestation confirms forms but does not choose them; letting it choose
   between invariable and -a feminines of consonant-final words picked nouns (``general``/``generala``).
2. ``rule``: Spanish inflection rules with stress-aware accents produce the forms, attested or not.
3. ``stanza`` (optional, never downloaded): a Stanza Spanish pipeline checks each form in a short sentence;
   a form it rejects is kept but the source label says so.

The generated table ``lexicons/es/scm_forms.csv`` ships with the package, so running an audit needs neither
``spacy-lookups-data`` nor Stanza. Regenerate it with ``corpus-audit lexicon forms --lang es``; rows whose
``source`` is ``manual`` are user corrections and survive regeneration.
"""

from __future__ import annotations

import csv
import functools
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.errors import UserError
from corpus_audit.common.resources import data_dir, data_file

SLOTS = ("ms", "fs", "mp", "fp")
COLUMNS = ("lemma", *SLOTS, "source")
BACKENDS = ("auto", "lookup", "rule", "stanza")
MANUAL = "manual"
NO_LOOKUP_NOTE = "rule:no-lookup-data"  # auto mode without spacy-lookups-data

# Comparatives (and -color compounds) end in -or but have one form for both genders.
_INVARIABLE_OR = frozenset({
    "mejor", "peor", "mayor", "menor", "superior", "inferior", "exterior", "interior", "anterior",
    "posterior", "ulterior", "citerior", "multicolor", "bicolor", "tricolor", "unicolor", "incolor",
})
# Gender-invariable words of classes that otherwise take -a in the feminine.
_INVARIABLE_ES = frozenset({"cortés", "descortés", "montés"})
_INVARIABLE_ON_AN_IN = frozenset({"marrón", "afín"})

_ACCENTED = {"a": "á", "e": "é", "i": "í", "o": "ó", "u": "ú"}
_PLAIN = {accented: plain for plain, accented in _ACCENTED.items()}
_VOWELS = frozenset("aeiouáéíóúü")
# An accented i/u is stressed in hiatus, so it does not join a neighbouring vowel into a diphthong.
_STRONG = frozenset("aeoáéóíú")

# Subjects that make the slot's gender and number unambiguous to a tagger.
_STANZA_SUBJECTS = {"ms": "Él es", "fs": "Ella es", "mp": "Ellos son", "fp": "Ellas son"}
_UD_FEATS = {"ms": ("Masc", "Sing"), "fs": ("Fem", "Sing"), "mp": ("Masc", "Plur"), "fp": ("Fem", "Plur")}


class FormsTableError(UserError, ValueError):
    """A forms table is malformed; the message names the file and line."""


class BackendUnavailableError(UserError, RuntimeError):
    """An explicitly requested inflection backend cannot run here (package or models missing)."""


class StanzaPipeline(Protocol):
    """What is used of ``stanza.Pipeline``: called on a text, it returns a document with ``sentences``
    whose ``words`` have ``text``, ``lemma``, ``upos`` and ``feats`` (``"Gender=Fem|Number=Sing"``)."""

    def __call__(self, text: str) -> Any: ...


@dataclass(frozen=True)
class Forms:
    """An adjective's masculine/feminine singular and plural forms."""

    ms: str
    fs: str
    mp: str
    fp: str

    def for_subject(self, gender: str, number: str) -> str:
        """The form agreeing with a subject of ``gender`` (``m``/``f``) and ``number`` (``s``/``p``)."""
        if gender not in ("m", "f") or number not in ("s", "p"):
            raise ValueError(f"gender must be 'm' or 'f' and number 's' or 'p', got {gender!r}, {number!r}")
        return getattr(self, gender + number)


# --- Stress and written accents ------------------------------------------------------------------------


def _nuclei(word: str) -> list[tuple[int, int]]:
    """Spans of the syllable nuclei (vowel groups) of a lower-case word."""
    spans: list[tuple[int, int]] = []

    def is_vowel(i: int) -> bool:
        letter = word[i]
        if letter == "u" and 0 < i < len(word) - 1 and word[i - 1] in "qg" and word[i + 1] in "eéií":
            return False  # silent u of que/qui/gue/gui
        # Final y after a vowel is the offglide of a diphthong (ley, guay).
        return letter in _VOWELS or (letter == "y" and i == len(word) - 1 and i > 0 and word[i - 1] in _VOWELS)

    i = 0
    while i < len(word):
        if not is_vowel(i):
            i += 1
            continue
        end = i + 1
        while end < len(word) and is_vowel(end) and not (word[end - 1] in _STRONG and word[end] in _STRONG):
            end += 1
        spans.append((i, end))
        i = end
    return spans


def _stressed_vowel(word: str) -> int:
    """Index of the stressed vowel of a word, from its spelling (-1 if it has no vowel)."""
    accented = [i for i, letter in enumerate(word) if letter in _PLAIN]
    if accented:
        return accented[-1]
    spans = _nuclei(word)
    if not spans:
        return -1
    # Without a written accent, words ending in a vowel, or in -n/-s after a vowel, stress the penultimate
    # syllable; others the last (-s after a consonant: esnobs, while cómics, bíceps need the accent).
    penultimate = word[-1] in "aeiou" or (word[-1] in "ns" and len(word) > 1 and word[-2] in "aeiou")
    start, end = spans[-2] if penultimate and len(spans) > 1 else spans[-1]
    strong = [i for i in range(start, end) if word[i] in _STRONG]
    weak = [i for i in range(start, end) if word[i] != "y"]
    return strong[0] if strong else weak[-1]  # iu/ui stress the second vowel (ruin, cuida)


def _spell(word: str, stress: int) -> str:
    """Write ``word`` with the stress on the vowel at ``stress``, adding or dropping the written accent."""
    plain = "".join(_PLAIN.get(letter, letter) for letter in word)
    if _stressed_vowel(plain) == stress:
        return plain
    return plain[:stress] + _ACCENTED[plain[stress]] + plain[stress + 1:]


# --- Rules ---------------------------------------------------------------------------------------------


def _rule_forms(lemma: str) -> Forms:
    """Forms of a masculine singular adjective by the rules of Spanish inflection."""
    word = lemma.lower()
    stress = _stressed_vowel(word)
    if stress < 0:
        raise ValueError(f"cannot inflect {lemma!r}: no vowel")

    def forms(feminine: str, plural: str, feminine_plural: str) -> Forms:
        return Forms(word, _spell(feminine, stress), _spell(plural, stress), _spell(feminine_plural, stress))

    def invariable(plural: str) -> Forms:
        return forms(word, plural, plural)

    last = word[-1]
    if last in _VOWELS:
        if stress == len(word) - 1:  # stressed final vowel: marroquí/marroquíes, hindú/hindúes, bebé/bebés
            return invariable(word + ("es" if last in "íú" else "s"))
        if last == "o" or word.endswith(("ete", "ote")):  # simpático, regordete/regordeta, grandote/grandota
            return forms(word[:-1] + "a", word + "s", word[:-1] + "as")
        return invariable(word + "s")  # amable, egoísta, idiota, hipócrita
    if word in _INVARIABLE_OR or word in _INVARIABLE_ES or word in _INVARIABLE_ON_AN_IN:
        return invariable(word + "es")
    if word.endswith(("or", "ón", "án", "ín", "és")):  # trabajador, burlón, holgazán, parlanchín, inglés
        return forms(word + "a", word + "es", word + "as")
    if last in "sx" and stress < _nuclei(word)[-1][0]:  # unstressed final syllable: gratis, dúplex
        return invariable(word)
    if last == "z":
        return invariable(word[:-1] + "ces")  # capaz/capaces
    if last in "lrndjsxh":
        return invariable(word + "es")  # fiel/fieles, joven/jóvenes, gris/grises
    return invariable(word + "s")  # other final consonants (loanwords): esnob/esnobs, cómic/cómics


# --- Attested forms (spacy-lookups-data) ---------------------------------------------------------------


@dataclass(frozen=True)
class _Attested:
    table: Mapping[str, str]  # form -> lemma
    forms_of: Mapping[str, frozenset[str]]  # lemma -> forms

    def of(self, lemma: str) -> frozenset[str]:
        """Forms attested for ``lemma``, including those of the lemma it is itself a form of (participles:
        ``educado`` and ``educada`` both map to ``educar``)."""
        forms = self.forms_of.get(lemma, frozenset())
        parent = self.table.get(lemma)
        return forms | self.forms_of.get(parent, frozenset()) if parent else forms


@functools.cache
def _attested() -> _Attested | None:
    """The inverted Spanish lemma table, loaded once (about 500,000 forms); None without the package."""
    try:
        import spacy_lookups_data
    except ImportError:
        return None
    from spacy.util import load_language_data

    table: dict[str, str] = load_language_data(spacy_lookups_data.es["lemma_lookup"])
    forms_of: defaultdict[str, set[str]] = defaultdict(set)
    for form, lemma in table.items():
        forms_of[lemma].add(form)
    return _Attested(table, {lemma: frozenset(forms) for lemma, forms in forms_of.items()})


def _require_attested() -> _Attested:
    attested = _attested()
    if attested is None:
        raise BackendUnavailableError("the 'lookup' inflection backend needs spacy-lookups-data: "
                                      "pip install 'corpus-audit[lexicon-tools]'")
    return attested


def _label(lemma: str, forms: Forms, attested: _Attested | None) -> str:
    """``lookup`` when the table attests every form, ``rule`` when none, ``lookup+rule`` in between."""
    if attested is None:
        return "rule"
    known = attested.of(lemma.lower())
    # A form spelt like the lemma (ms; both genders of invariable words) counts when the table knows the lemma.
    sources = {"lookup" if form in known or (form == forms.ms and known) else "rule"
               for form in (getattr(forms, slot) for slot in SLOTS)}
    return "lookup+rule" if len(sources) > 1 else sources.pop()


# --- Stanza validation ---------------------------------------------------------------------------------


@functools.cache
def _stanza() -> tuple[StanzaPipeline | None, str]:
    """A local Stanza Spanish pipeline, or None and the reason it is unavailable. Never downloads."""
    try:
        import stanza
    except ImportError:
        return None, "stanza is not installed"
    try:
        pipeline = stanza.Pipeline("es", processors="tokenize,pos,lemma", download_method=None, verbose=False)
    except (FileNotFoundError, ValueError) as error:  # stanza's missing-model errors subclass these
        return None, f"no local Stanza Spanish models ({error})"
    return pipeline, ""


def _stanza_accepts(pipeline: StanzaPipeline, lemma: str, slot: str, form: str) -> bool:
    """Whether Stanza reads ``form``, after a subject of the slot's gender and number, as an adjective of
    ``lemma`` whose Gender/Number features (where it gives them) match the slot."""
    document = pipeline(f"{_STANZA_SUBJECTS[slot]} {form}.")
    gender, number = _UD_FEATS[slot]
    for sentence in document.sentences:
        for word in sentence.words:
            if word.text.lower() != form.lower():
                continue
            feats = dict(item.split("=", 1) for item in (word.feats or "").split("|") if "=" in item)
            # Invariable adjectives (amable, capaz) carry no Gender feature.
            return (word.upos == "ADJ" and (word.lemma or "").lower() == lemma.lower()
                    and feats.get("Gender", gender) == gender and feats.get("Number", number) == number)
    return False


def _validate(lemma: str, forms: Forms, source: str, pipeline: StanzaPipeline) -> str:
    """Source label after Stanza checked every form: ``stanza`` when it accepts them all."""
    rejected = [slot for slot in SLOTS if not _stanza_accepts(pipeline, lemma, slot, getattr(forms, slot))]
    return f"{source}+stanza-rejected" if rejected else "stanza"


# --- Public API ----------------------------------------------------------------------------------------


def _inflect(lemma: str, attested: _Attested | None, pipeline: StanzaPipeline | None) -> tuple[Forms, str]:
    forms = _rule_forms(lemma)
    source = _label(lemma, forms, attested)
    return forms, source if pipeline is None else _validate(lemma, forms, source, pipeline)


def _resolve(backend: str,
             stanza_pipeline: StanzaPipeline | None) -> tuple[_Attested | None, StanzaPipeline | None, str]:
    """The lookup table and Stanza pipeline a backend uses, and the label note for auto without lookups."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "rule":
        return None, None, ""
    if backend == "lookup":
        return _require_attested(), None, ""
    attested = _attested()
    pipeline = stanza_pipeline
    if pipeline is None:
        pipeline, reason = _stanza()
        if pipeline is None and backend == "stanza":
            raise BackendUnavailableError(f"the 'stanza' inflection backend is unavailable: {reason}")
    return attested, pipeline, NO_LOOKUP_NOTE if attested is None and backend == "auto" else ""


def inflect(lemma: str, backend: str = "auto", *,
            stanza_pipeline: StanzaPipeline | None = None) -> tuple[Forms, str]:
    """Forms of a masculine singular adjective and where they come from (``lookup``, ``rule``,
    ``lookup+rule``, ``stanza``, ``...+stanza-rejected``, ``rule:no-lookup-data``).

    ``backend``: ``rule`` (rules only), ``lookup`` (attested forms, rules for the gaps; needs
    spacy-lookups-data), ``stanza`` (lookup when installed, then Stanza validation; needs stanza and its
    Spanish models, or ``stanza_pipeline``), ``auto`` (whatever of these is installed).
    """
    attested, pipeline, note = _resolve(backend, stanza_pipeline)
    forms, source = _inflect(lemma, attested, pipeline)
    return forms, note if note and source == "rule" else source


def _read_rows(path: Path) -> dict[str, tuple[Forms, str]]:
    rows: dict[str, tuple[Forms, str]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            raise FormsTableError(f"{path}: missing column(s) {missing}")
        for row in reader:
            line = reader.line_num
            values = {column: (row[column] or "").strip() for column in COLUMNS}
            empty = [column for column in COLUMNS if not values[column]]
            if empty:
                raise FormsTableError(f"{path}, line {line}: empty {', '.join(empty)}")
            if values["lemma"] in rows:
                raise FormsTableError(f"{path}, line {line}: duplicate lemma {values['lemma']!r}")
            rows[values["lemma"]] = Forms(*(values[slot] for slot in SLOTS)), values["source"]
    return rows


def read_forms_table(path: str | Path) -> dict[str, Forms]:
    """Read a forms table (columns ``lemma,ms,fs,mp,fp,source``): lemma -> forms."""
    return {lemma: forms for lemma, (forms, _) in _read_rows(Path(path)).items()}


def write_forms_table(lemmas: Iterable[str], path: str | Path, backend: str = "auto", *,
                      stanza_pipeline: StanzaPipeline | None = None) -> dict[str, int]:
    """(Re)write the forms table for ``lemmas``, sorted by lemma; return the number of rows per source.

    Rows marked ``manual`` are kept as they are, also for lemmas no longer listed; other rows of lemmas
    not in ``lemmas`` are dropped. The file is replaced atomically.
    """
    path = Path(path)
    manual = {lemma: entry for lemma, entry in (_read_rows(path).items() if path.exists() else ())
              if entry[1] == MANUAL}
    rows = dict(manual)
    for lemma in dict.fromkeys(lemma.strip() for lemma in lemmas):
        if lemma and lemma not in manual:
            rows[lemma] = inflect(lemma, backend, stanza_pipeline=stanza_pipeline)
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        for lemma in sorted(rows, key=_sort_key):
            forms, source = rows[lemma]
            writer.writerow([lemma, *(getattr(forms, slot) for slot in SLOTS), source])
    return dict(Counter(source for _, source in rows.values()))


def _sort_key(lemma: str) -> tuple[str, str]:
    """Alphabetical order that puts accented letters beside their plain ones (á with a)."""
    folded = "".join(c for c in unicodedata.normalize("NFD", lemma.lower()) if unicodedata.category(c) != "Mn")
    return folded, lemma


def forms_for(lemmas: Iterable[str], path: str | Path | None = None) -> dict[str, Forms]:
    """Forms of each lemma from the table at ``path`` (default: the bundled Spanish one); lemmas missing
    from it are inflected on the fly by the rules (attestation would only change the source label)."""
    table = read_forms_table(path if path is not None else data_file("lexicons", "es", "scm_forms.csv"))
    return {lemma: table[lemma] if lemma in table else _inflect(lemma, None, None)[0] for lemma in lemmas}


def rebuild_forms_table(lang: str = "es", backend: str = "auto") -> tuple[Path, dict[str, int]]:
    """Regenerate ``lexicons/<lang>/scm_forms.csv`` for every adjective of the language's SCM lexicons
    (seed, extended, generalisation); return the table's path and its rows per source."""
    from corpus_audit.scm.lexicon import load_seed_lexicon

    folder = data_dir("lexicons") / lang
    words = [adjective.word
             for name in ("scm_seed.csv", "scm_extended.csv", "scm_generalisation.csv") if (folder / name).is_file()
             for adjective in load_seed_lexicon(folder / name)]
    target = folder / "scm_forms.csv"
    return target, write_forms_table(words, target, backend)
