"""The AQ-27 as prompts for a masked language model: items x noun phrases x illnesses (seed paper §3.1).

A questionnaire folder (bundled: ``questionnaires/<lang>/``; see its README) holds three editable files:

* ``aq27.csv``: ``item``, ``dimension``, ``reverse_scored``, ``text`` with ``[noun phrase]`` and ``<mask>`` (the
  illness's slot); ``{masculine|feminine}`` picks the form that agrees with the noun phrase's grammatical gender
  (Spanish "es {peligroso|peligrosa}"). Item numbers, dimensions and reverse scoring must agree with
  :mod:`corpus_audit.stigma.aq27`;
* ``noun_phrases.csv``: ``noun_phrase``, ``kind`` (name, gendered, neutral), ``sex`` of the referent (male,
  female or empty), ``gender`` (grammatical m/f, needed where an item agrees);
* ``illnesses.csv``: ``illness`` (the canonical name of the illness lexicon, which gives its type) and ``phrase``,
  the words that fill the slot ("a cold", "la nariz tapada");
* ``aq27_carriers.csv`` (optional; the controlled method needs it): ``carrier``, ``text``, neutral sentences in
  the items' frame ("[noun phrase] has <mask>.") that give each illness its baseline likelihood.

:func:`prompts` fills every item with every noun phrase and illness and records where the illness phrase is in
the sentence, so that a score can be taken over the whole sentence or over the illness's pieces only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from corpus_audit.corpus.matcher import default_lexicon_path, load_lexicon
from corpus_audit.probe.models.masked import MASK
from corpus_audit.probe.questionnaires.files import QuestionnaireError, bundled_folder, read_rows
from corpus_audit.stigma.aq27 import DIMENSION_ITEMS, N_ITEMS, REVERSE_SCORED, dimension_of
from corpus_audit.stigma.quadrants import GROUPS

if TYPE_CHECKING:
    import pandas as pd

NOUN_PHRASE = "[noun phrase]"
NOUN_PHRASE_KINDS = ("name", "gendered", "neutral")
CARRIERS = "aq27_carriers.csv"
#: Articles that a slot phrase may start with; the rest must be one token to count as "in the vocabulary".
ARTICLES = {"en": ("a", "an", "the"), "es": ("un", "una", "el", "la", "los", "las")}
#: Spanish contractions a filled item may need ("a el" -> "al").
_CONTRACTIONS = {"es": ((re.compile(r"\ba el\b"), "al"), (re.compile(r"\bde el\b"), "del"))}
_AGREEMENT = re.compile(r"\{([^|{}]*)\|([^|{}]*)\}")
#: Relative pronouns that open the clause of the illness's slot ("[noun phrase] who has <mask>"). After a name that
#: clause is non-defining, set off by commas ("James, who has asthma, ..."): the seed paper's Table 3 transforms it
#: so, the defining clause being ungrammatical after a name.
RELATIVE_PRONOUNS = {"en": ("who",), "es": ("que",)}


@dataclass(frozen=True)
class Item:
    number: int
    dimension: str
    reverse_scored: bool
    text: str


@dataclass(frozen=True)
class NounPhrase:
    text: str
    kind: str
    sex: str
    gender: str


@dataclass(frozen=True)
class Illness:
    name: str
    type: str
    phrase: str


@dataclass
class Questionnaire:
    """The items, noun phrases and illnesses of one language, read from ``folder``."""

    lang: str
    folder: Path
    items: list[Item]
    noun_phrases: list[NounPhrase]
    illnesses: list[Illness]
    carriers: list[Item]

    def files(self) -> list[Path]:
        return [self.folder / name for name in ("aq27.csv", "noun_phrases.csv", "illnesses.csv")]

    def carriers_file(self) -> Path:
        return self.folder / CARRIERS


def _items(path: Path) -> list[Item]:
    items = []
    for where, row in read_rows(path, ("item", "dimension", "reverse_scored", "text")):
        try:
            number = int(row["item"])
            dimension = dimension_of(number)
        except ValueError:
            raise QuestionnaireError(f"{where}: item must be a number from 1 to {N_ITEMS}, not {row['item']!r}") \
                from None
        if row["dimension"] != dimension:
            raise QuestionnaireError(f"{where}: item {number} belongs to {dimension} in the AQ-27, not "
                                     f"{row['dimension']!r}")
        if row["reverse_scored"] != ("yes" if dimension in REVERSE_SCORED else "no"):
            raise QuestionnaireError(f"{where}: reverse_scored of a {dimension} item is "
                                     f"{'yes' if dimension in REVERSE_SCORED else 'no'}")
        if row["text"].count(MASK) != 1:
            raise QuestionnaireError(f"{where}: the text must hold {MASK} (the illness's slot) exactly once")
        items.append(Item(number, dimension, dimension in REVERSE_SCORED, row["text"]))
    numbers = sorted(item.number for item in items)
    if numbers != list(range(1, N_ITEMS + 1)):
        raise QuestionnaireError(f"{path}: needs items 1 to {N_ITEMS} once each (dimensions: "
                                 f"{', '.join(f'{d} {items}' for d, items in DIMENSION_ITEMS.items())})")
    return items


def _carriers(path: Path) -> list[Item]:
    """The neutral carrier sentences (as items of no dimension, numbered by ``carrier``); none without the file."""
    if not path.is_file():
        return []
    carriers = []
    for where, row in read_rows(path, ("carrier", "text")):
        if row["text"].count(MASK) != 1 or NOUN_PHRASE not in row["text"]:
            raise QuestionnaireError(f"{where}: the text must hold {NOUN_PHRASE} and {MASK} (the illness's slot), "
                                     f"{MASK} exactly once")
        if not row["carrier"].isdigit():
            raise QuestionnaireError(f"{where}: carrier must be a number, not {row['carrier']!r}")
        carriers.append(Item(int(row["carrier"]), "", False, row["text"]))
    return carriers


def _noun_phrases(path: Path, agreement: bool) -> list[NounPhrase]:
    phrases = []
    for where, row in read_rows(path, ("noun_phrase", "kind", "sex", "gender")):
        if not row["noun_phrase"]:
            raise QuestionnaireError(f"{where}: empty noun phrase")
        if row["kind"] not in NOUN_PHRASE_KINDS:
            raise QuestionnaireError(f"{where}: kind must be one of {', '.join(NOUN_PHRASE_KINDS)}, not "
                                     f"{row['kind']!r}")
        if row["sex"] not in ("male", "female", ""):
            raise QuestionnaireError(f"{where}: sex must be male, female or empty, not {row['sex']!r}")
        if row["gender"] not in ("m", "f", ""):
            raise QuestionnaireError(f"{where}: gender must be m, f or empty, not {row['gender']!r}")
        if agreement and not row["gender"]:
            raise QuestionnaireError(f"{where}: items agree with the noun phrase here: give its gender (m or f)")
        phrases.append(NounPhrase(row["noun_phrase"], row["kind"], row["sex"], row["gender"]))
    return phrases


def _illnesses(path: Path, lang: str, lexicon: Path | None) -> list[Illness]:
    lexicon = lexicon or default_lexicon_path(lang)
    types = {entry.illness: entry.type for entry in load_lexicon(lexicon)}
    illnesses = []
    for where, row in read_rows(path, ("illness", "phrase")):
        if row["illness"] not in types:
            raise QuestionnaireError(f"{where}: {row['illness']!r} is not an illness of the lexicon {lexicon}")
        if not row["phrase"]:
            raise QuestionnaireError(f"{where}: empty phrase")
        illnesses.append(Illness(row["illness"], types[row["illness"]], row["phrase"]))
    lacking = [group for group in GROUPS if not any(illness.type == group for illness in illnesses)]
    if lacking:
        raise QuestionnaireError(f"{path}: no {' and no '.join(lacking)} illness: nothing to compare")
    return illnesses


def load_questionnaire(lang: str, folder: str | Path | None = None, lexicon: str | Path | None = None
                       ) -> Questionnaire:
    """The questionnaire of ``lang`` from ``folder`` (default: the bundled ``questionnaires/<lang>/``); the
    illnesses' types come from ``lexicon`` (default: the bundled ``lexicons/<lang>/illnesses.csv``)."""
    folder = Path(folder) if folder is not None else bundled_folder(lang)
    items = _items(folder / "aq27.csv")
    carriers = _carriers(folder / CARRIERS)
    agreement = any(_AGREEMENT.search(item.text) for item in [*items, *carriers])
    return Questionnaire(lang, folder, items, _noun_phrases(folder / "noun_phrases.csv", agreement),
                         _illnesses(folder / "illnesses.csv", lang, Path(lexicon) if lexicon else None), carriers)


def non_defining(text: str, lang: str) -> str:
    """``text`` with the relative clause of the slot after ``[noun phrase]`` set off by commas, closed by a second
    comma when the sentence goes on after the slot: "[noun phrase], who has <mask>, would terrify me." Texts
    without such a clause are returned as they are."""
    pronouns = RELATIVE_PRONOUNS.get(lang)
    if not pronouns:
        return text
    clause = re.search(rf"{re.escape(NOUN_PHRASE)} ((?:{'|'.join(pronouns)}) [^<,.;:]*{re.escape(MASK)})", text)
    if clause is None:
        return text
    rest = text[clause.end():]
    closing = "," if re.match(r"\s+\w", rest) else ""
    return f"{text[:clause.start()]}{NOUN_PHRASE}, {clause.group(1)}{closing}{rest}"


def _fill(text: str, noun_phrase: NounPhrase, lang: str) -> str:
    text = _AGREEMENT.sub(lambda match: match.group(2 if noun_phrase.gender == "f" else 1), text)
    text = text.replace(NOUN_PHRASE, noun_phrase.text)
    for pattern, replacement in _CONTRACTIONS.get(lang, ()):
        text = pattern.sub(replacement, text)
    return text


def fill(item: Item, noun_phrase: NounPhrase, illness: Illness, lang: str, period: bool = True
         ) -> tuple[str, int, int]:
    """The filled sentence and the characters [start, end) of the illness phrase in it.

    ``period``: end the sentence with a full stop (items are written with one; without, it is dropped). A name
    takes the relative clause as a non-defining one (:func:`non_defining`)."""
    text = non_defining(item.text, lang) if noun_phrase.kind == "name" else item.text
    before, after = (_fill(part, noun_phrase, lang) for part in text.split(MASK))
    if not period:
        after = after.rstrip().removesuffix(".")
    sentence = before + illness.phrase + after
    sentence = sentence[:1].upper() + sentence[1:]  # "a man who has ..." opens item 3
    return sentence, len(before), len(before) + len(illness.phrase)


def prompts(questionnaire: Questionnaire, period: bool = True, carriers: bool = False) -> pd.DataFrame:
    """One row per item x noun phrase x illness: ``item``, ``dimension``, ``reverse_scored``, ``noun_phrase``,
    ``np_kind``, ``np_sex``, ``illness``, ``illness_type``, ``sentence``, ``illness_start``, ``illness_end``.
    ``carriers``: the same of the neutral carrier sentences instead (``item`` the carrier's number, ``dimension``
    empty)."""
    import pandas as pd

    rows = []
    for item in questionnaire.carriers if carriers else questionnaire.items:
        for noun_phrase in questionnaire.noun_phrases:
            for illness in questionnaire.illnesses:
                sentence, start, end = fill(item, noun_phrase, illness, questionnaire.lang, period)
                rows.append((item.number, item.dimension, item.reverse_scored, noun_phrase.text, noun_phrase.kind,
                             noun_phrase.sex, illness.name, illness.type, sentence, start, end))
    return pd.DataFrame(rows, columns=["item", "dimension", "reverse_scored", "noun_phrase", "np_kind", "np_sex",
                                       "illness", "illness_type", "sentence", "illness_start", "illness_end"])


def in_vocabulary(illnesses: list[Illness], tokenizer: object, lang: str) -> list[Illness]:
    """The illnesses whose phrase, less a leading article, is one token of ``tokenizer`` after a space (the seed
    paper kept "the illnesses present in the models' vocabulary")."""
    kept = []
    for illness in illnesses:
        words = illness.phrase.split()
        if len(words) > 1 and words[0].lower() in ARTICLES.get(lang, ()):
            words = words[1:]
        pieces = tokenizer.tokenize(" " + " ".join(words))  # type: ignore[attr-defined]
        if len(pieces) == 1:
            kept.append(illness)
    return kept
