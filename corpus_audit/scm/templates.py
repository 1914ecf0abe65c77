"""Sentence templates for training and testing SCM axes, and their realisation into labelled sentences.

A template is a sentence with slots ``{a}`` (and ``{b}`` for two-adjective sentences) and optionally
``{subject}``; the ``negate`` column lists the slots whose label a negation flips ("never {a}" -> the
opposite pole of the adjective in slot ``a``). Two-adjective sentences pair one warmth and one
competence adjective, which gives a quadrant label.
"""

from __future__ import annotations

import csv
import string
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corpus_audit.resources import data_dir, sha256_files
from corpus_audit.scm.lexicon import SeedAdjective

SLOTS = ("a", "b")
_ALLOWED_FIELDS = {"subject", *SLOTS}


class TemplateError(ValueError):
    """A template file is malformed; the message names the file and line."""


@dataclass(frozen=True)
class Template:
    text: str
    negate: frozenset[str] = frozenset()
    test: str = ""  # functional test type, for evaluation templates

    @property
    def n_slots(self) -> int:
        return 2 if "{b}" in self.text else 1


@dataclass
class TemplateSet:
    templates: list[Template]
    subjects: list[str]
    files: list[Path] = field(default_factory=list)

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


def _parse_template(path: Path, line: int, text: str, negate: str, test: str) -> Template:
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
    return Template(text=text, negate=negated, test=test)


def read_templates(path: Path) -> list[Template]:
    """Read a template CSV with columns ``template,negate`` (and ``test`` for evaluation files)."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if "template" not in (reader.fieldnames or []):
            raise TemplateError(f"{path}: missing column 'template'")
        templates = [
            _parse_template(path, reader.line_num, row["template"].strip(), (row.get("negate") or "").strip(),
                            (row.get("test") or "").strip())
            for row in reader
        ]
    if not templates:
        raise TemplateError(f"{path}: no templates")
    return templates


def read_subjects(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        subjects = [row["subject"].strip() for row in csv.DictReader(handle) if row["subject"].strip()]
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
    return TemplateSet(read_templates(template_path), read_subjects(subject_path), [template_path, subject_path])


def _sentence(template: Template, subject: str, fillers: dict[str, str]) -> str:
    text = template.text.format(subject=subject, **fillers).strip()
    return text[:1].upper() + text[1:]


def realise(
    template_set: TemplateSet,
    adjectives: list[SeedAdjective],
    *,
    pairs_per_template: int = 150,
    seed: int = 0,
) -> LabelledSentences:
    """Fill every template with the given adjectives.

    One-slot templates take every adjective once; two-slot templates take ``pairs_per_template`` random
    (warmth, competence) pairs, each in a random slot order. Subjects are drawn pseudo-randomly from
    the sentence's content and ``seed``.
    """
    rng = np.random.default_rng(seed)
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
        subject = template_set.subjects[zlib.crc32(key.encode()) % len(template_set.subjects)]
        target = [0, 0]
        for slot, adj in filled.items():
            target[adj.axis] = adj.polarity * (-1 if slot in template.negate else 1)
        sentences.append(_sentence(template, subject, {slot: adj.word for slot, adj in filled.items()}))
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
