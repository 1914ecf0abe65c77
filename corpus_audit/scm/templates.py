"""Sentence templates for training and testing SCM axes, and their realisation into labelled sentences.

A template is a sentence with slots ``{a}`` (and ``{b}`` for two-adjective sentences) and optionally
``{subject}``; the ``negate`` column lists the slots whose label a negation flips ("never {a}" -> the
opposite pole of the adjective in slot ``a``). Two-adjective sentences pair one warmth and one
competence adjective, which gives a quadrant label.

Languages with agreement (Spanish) add an ``agree`` column: the gender (``m``/``f``) and number
(``s``/``p``) the adjectives take, e.g. ``p`` ("{subject} son {a}": plural, gender of the subject) or
``fp`` ("Estas personas son {a}"). Subjects then carry their own ``gender`` and ``number``, a template
only draws subjects that match it, and each adjective is written in the agreeing form
(``lexicons/<lang>/scm_forms.csv``).
"""

from __future__ import annotations

import csv
import string
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corpus_audit.common.errors import UserError
from corpus_audit.common.resources import data_dir, sha256_files
from corpus_audit.languages import LANGUAGES
from corpus_audit.scm.inflect import Forms, forms_for
from corpus_audit.scm.lexicon import SeedAdjective, forms_table_path

SLOTS = ("a", "b")
_ALLOWED_FIELDS = {"subject", *SLOTS}
GENDERS = ("m", "f")
NUMBERS = ("s", "p")


class TemplateError(UserError, ValueError):
    """A template file is malformed; the message names the file and line."""


@dataclass(frozen=True)
class Template:
    text: str
    negate: frozenset[str] = frozenset()
    test: str = ""  # functional test type, for evaluation templates
    agree: str = ""  # gender and/or number the adjectives take: "", "p", "s", "mp", "fs", ...

    @property
    def n_slots(self) -> int:
        return 2 if "{b}" in self.text else 1

    @property
    def has_subject(self) -> bool:
        return "{subject}" in self.text


@dataclass(frozen=True)
class Subject:
    text: str
    gender: str = ""  # "m" or "f" where the language has agreement
    number: str = ""  # "s" or "p"

    def fits(self, agree: str) -> bool:
        """Whether this subject can fill a template that asks for ``agree`` (e.g. "p": any plural subject)."""
        return all(letter in (self.gender, self.number) for letter in agree)


@dataclass
class TemplateSet:
    templates: list[Template]
    subjects: list[Subject]
    files: list[Path] = field(default_factory=list)
    lang: str = "en"

    @property
    def sha256(self) -> str:
        return sha256_files(self.files)


@dataclass
class LabelledSentences:
    """Realised template sentences.

    ``targets`` has shape (n, 2): columns (warmth, competence) in {-1, 0, 1}; 0 means the sentence says
    nothing about that dimension. ``words`` holds the adjectives used, ``test`` the functional test type.
    """

    sentences: list[str]
    targets: np.ndarray
    words: list[tuple[str, ...]]
    test: list[str]

    def __len__(self) -> int:
        return len(self.sentences)


def _parse_template(path: Path, line: int, text: str, negate: str, test: str, agree: str) -> Template:
    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError as error:
        raise TemplateError(f"{path}, line {line}: {error}") from None
    unknown = fields - _ALLOWED_FIELDS
    if unknown or "a" not in fields:
        raise TemplateError(
            f"{path}, line {line}: a template needs slot {{a}} and may use {{b}} and {{subject}}; "
            f"found {sorted(fields)}"
        )
    negated = frozenset(negate.split())
    if not negated <= fields & set(SLOTS):
        raise TemplateError(f"{path}, line {line}: negate={negate!r} names a slot the template lacks")
    genders = [letter for letter in agree if letter in GENDERS]
    numbers = [letter for letter in agree if letter in NUMBERS]
    if len(genders) > 1 or len(numbers) > 1 or len(genders) + len(numbers) != len(agree):
        raise TemplateError(f"{path}, line {line}: agree={agree!r} must be a gender (m/f) and/or a number (s/p)")
    if agree and "subject" not in fields and not (genders and numbers):
        raise TemplateError(f"{path}, line {line}: a template without {{subject}} needs both gender and number "
                            f"in agree (e.g. 'mp'), found {agree!r}")
    return Template(text=text, negate=negated, test=test, agree=agree)


def read_templates(path: Path) -> list[Template]:
    """Read a template CSV with columns ``template,negate`` (``test`` for evaluation files, ``agree`` where the
    language has agreement)."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if "template" not in (reader.fieldnames or []):
            raise TemplateError(f"{path}: missing column 'template'")
        templates = [
            _parse_template(path, reader.line_num, row["template"].strip(), (row.get("negate") or "").strip(),
                            (row.get("test") or "").strip(), (row.get("agree") or "").strip().lower())
            for row in reader
        ]
    if not templates:
        raise TemplateError(f"{path}: no templates")
    return templates


def read_subjects(path: Path) -> list[Subject]:
    """Read a subjects CSV: column ``subject``, plus ``gender`` (m/f) and ``number`` (s/p) where needed."""
    subjects: list[Subject] = []
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if "subject" not in (reader.fieldnames or []):
            raise TemplateError(f"{path}: missing column 'subject'")
        for row in reader:
            text = (row["subject"] or "").strip()
            gender, number = ((row.get(key) or "").strip().lower() for key in ("gender", "number"))
            if gender not in ("", *GENDERS) or number not in ("", *NUMBERS):
                raise TemplateError(f"{path}, line {reader.line_num}: gender must be m/f and number s/p, "
                                    f"found {gender!r}, {number!r}")
            if text:
                subjects.append(Subject(text, gender, number))
    if not subjects:
        raise TemplateError(f"{path}: no subjects")
    return subjects


def load_template_set(lang: str, name: str, folder: Path | None = None, subjects: str = "subjects") -> TemplateSet:
    """Load ``templates/<lang>/<name>.csv`` and the subjects file ``<subjects>.csv`` of that folder."""
    folder = folder or data_dir("templates") / lang
    template_path = folder / f"{name}.csv"
    subject_path = folder / f"{subjects}.csv"
    for path in (template_path, subject_path):
        if not path.exists():
            raise TemplateError(f"template file not found: {path}")
    templates, subjects = read_templates(template_path), read_subjects(subject_path)
    for template in templates:
        if template.has_subject and not any(subject.fits(template.agree) for subject in subjects):
            raise TemplateError(f"{template_path}: no subject in {subject_path} fits agree={template.agree!r} "
                                f"of {template.text!r}")
    return TemplateSet(templates, subjects, [template_path, subject_path], lang)


def _sentence(template: Template, subject: str, fillers: dict[str, str], lang: str) -> str:
    text = template.text.format(subject=subject, **fillers).strip()
    language = LANGUAGES.get(lang)
    if language is not None:
        text = language.apply_euphony(text)
    return text[:1].upper() + text[1:]


def _agreeing_forms(template_set: TemplateSet, adjectives: list[SeedAdjective]) -> dict[str, Forms]:
    """Gender/number forms of the adjectives, when some template asks for agreement."""
    if not any(template.agree for template in template_set.templates):
        return {}
    return forms_for([adj.word for adj in adjectives], forms_table_path(template_set.lang))


def realise(
    template_set: TemplateSet,
    adjectives: list[SeedAdjective],
    *,
    pairs_per_template: int = 150,
    seed: int = 0,
    forms: Mapping[str, Forms] | None = None,
) -> LabelledSentences:
    """Fill every template with the given adjectives.

    One-slot templates take every adjective once; two-slot templates take ``pairs_per_template`` random
    (warmth, competence) pairs, each in a random slot order. Subjects are drawn pseudo-randomly from
    the sentence's content and ``seed``, among those that fit the template's agreement; adjectives take
    the subject's gender and number where the template asks for agreement, from ``forms`` (default: the
    language's forms table, completed by the inflector).
    """
    rng = np.random.default_rng(seed)
    forms = _agreeing_forms(template_set, adjectives) if forms is None else forms
    warm = [adj for adj in adjectives if adj.dimension == "warmth"]
    comp = [adj for adj in adjectives if adj.dimension == "competence"]
    sentences: list[str] = []
    targets: list[list[int]] = []
    words: list[tuple[str, ...]] = []
    tests: list[str] = []

    def add(template: Template, filled: dict[str, SeedAdjective]) -> None:
        # The subject depends only on the sentence's own content, so that the same template and adjectives
        # give the same sentence whatever other adjectives are realised with them (cross-validation folds
        # then share their sentences, and their embeddings).
        key = f"{seed}|{template.text}|{'|'.join(adj.word for adj in filled.values())}"
        candidates = [subject for subject in template_set.subjects if subject.fits(template.agree)]
        subject = candidates[zlib.crc32(key.encode()) % len(candidates)] if candidates else Subject("")
        target = [0, 0]
        for slot, adj in filled.items():
            target[adj.axis] = adj.polarity * (-1 if slot in template.negate else 1)
        if template.agree:
            gender = next((x for x in template.agree if x in GENDERS), subject.gender)
            number = next((x for x in template.agree if x in NUMBERS), subject.number)
            fillers = {slot: forms[adj.word].for_subject(gender, number) for slot, adj in filled.items()}
        else:
            fillers = {slot: adj.word for slot, adj in filled.items()}
        sentences.append(_sentence(template, subject.text, fillers, template_set.lang))
        targets.append(target)
        words.append(tuple(adj.word for adj in filled.values()))
        tests.append(template.test)

    for template in template_set.templates:
        if template.n_slots == 1:
            for adj in adjectives:
                add(template, {"a": adj})
        elif warm and comp:
            n_pairs = min(pairs_per_template, len(warm) * len(comp))
            for flat in rng.choice(len(warm) * len(comp), size=n_pairs, replace=False):
                pair = [warm[flat // len(comp)], comp[flat % len(comp)]]
                if rng.random() < 0.5:
                    pair.reverse()
                add(template, dict(zip(SLOTS, pair)))
    return LabelledSentences(sentences, np.asarray(targets, dtype=np.float32).reshape(-1, 2), words, tests)
