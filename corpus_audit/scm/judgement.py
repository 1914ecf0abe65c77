"""Training data of the judgement gate and the AQ-27 dimension heads, their fitting, and their cross-validation.

Two editable files per language, written for this project (``templates/README.md``):

- ``templates/<lang>/neutral.csv`` (``category,sentence``): mentions of an illness that judge nobody, one of
  the gate's neutral categories (self-disclosure, clinical, question, analogy, information);
- ``templates/<lang>/judgements.csv`` (``dimension,stance,strength,warmth,competence,sentence``): judgements about
  people, each expressing one AQ-27 dimension (or ``trait``), endorsed or rejected, with strength 1-3 and the
  SCM reading (high / low / none on each axis).

``{illness}`` in a sentence is filled with the language's mask phrase, as an audit masks every illness mention
before embedding. Cross-validation holds out whole sentences (each written once), so every test sentence is new.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corpus_audit.common.csv_rows import read_csv_rows
from corpus_audit.common.resources import data_dir, sha256_files
from corpus_audit.languages import get_language
from corpus_audit.scm.columns import DIMENSION_CLASSES
from corpus_audit.scm.heads import ClassifierHead
from corpus_audit.scm.templates import TemplateError
from corpus_audit.stigma.judgement import CATEGORIES, JUDGEMENT, NEUTRAL_CATEGORIES, STANCES, TRAIT, dimension_named

POLES = {"high": 1.0, "low": -1.0, "none": np.nan}
NEUTRAL_FILE, JUDGEMENT_FILE = "neutral.csv", "judgements.csv"


@dataclass
class JudgementData:
    """Labelled sentences for the gate and the dimension heads (one row per sentence).

    ``category``: index into ``CATEGORIES``; ``dimension``: index into the dimension head's classes (0 = none);
    ``targets``: (warmth, competence) in {-1, 0, 1} or NaN (a judgement that does not speak to that axis; neutral
    sentences are 0 on both); ``strength``: 1-3 for judgements, 0 otherwise.
    """

    sentences: list[str] = field(default_factory=list)
    category: list[int] = field(default_factory=list)
    dimension: list[int] = field(default_factory=list)
    targets: list[tuple[float, float]] = field(default_factory=list)
    strength: list[int] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def sha256(self) -> str:
        return sha256_files(self.files)

    def subset(self, rows: np.ndarray) -> JudgementData:
        """The sentences at ``rows`` (a cross-validation fold's training part)."""
        return JudgementData(*([values[i] for i in rows] for values in (self.sentences, self.category, self.dimension,
                                                                          self.targets, self.strength)),
                             files=self.files)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return (np.asarray(self.category), np.asarray(self.dimension), np.asarray(self.targets, dtype=np.float64),
                np.asarray(self.strength))


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    return read_csv_rows(path, columns, TemplateError, "training file not found")


def fill(sentence: str, mask: str) -> str:
    """``sentence`` with ``{illness}`` replaced by the mask phrase, first letter capitalised."""
    text = sentence.replace("{illness}", mask)
    return text[:1].upper() + text[1:]


def load_judgement_data(lang: str, folder: Path | None = None) -> JudgementData:
    """The gate's and the dimension heads' training sentences of ``lang``; a bad row names its file and line."""
    folder = folder or data_dir("templates") / lang
    mask = get_language(lang).mask
    data = JudgementData(files=[folder / NEUTRAL_FILE, folder / JUDGEMENT_FILE])
    seen: set[str] = set()

    def add(path: Path, line: int, sentence: str, category: str, dimension: int, targets: tuple[float, float],
            strength: int) -> None:
        if not sentence:
            raise TemplateError(f"{path}, line {line}: empty sentence")
        text = fill(sentence, mask)
        if text in seen:  # a repeated sentence would sit in training and test folds at once
            return
        seen.add(text)
        data.sentences.append(text)
        data.category.append(CATEGORIES.index(category))
        data.dimension.append(dimension)
        data.targets.append(targets)
        data.strength.append(strength)

    path = data.files[0]
    for line, row in _rows(path, ("category", "sentence")):
        if row["category"] not in NEUTRAL_CATEGORIES:
            raise TemplateError(f"{path}, line {line}: category must be one of {', '.join(NEUTRAL_CATEGORIES)}, "
                                f"found {row['category']!r}")
        add(path, line, row["sentence"], row["category"], 0, (0.0, 0.0), 0)
    path = data.files[1]
    for line, row in _rows(path, ("dimension", "stance", "strength", "warmth", "competence", "sentence")):
        try:
            if row["stance"] not in STANCES:
                raise ValueError(f"stance must be {' or '.join(STANCES)}, found {row['stance']!r}")
            if row["strength"] not in ("1", "2", "3"):
                raise ValueError(f"strength must be 1, 2 or 3, found {row['strength']!r}")
            poles = tuple(POLES[row[axis]] if row[axis] in POLES else _bad_pole(axis, row[axis])
                          for axis in ("warmth", "competence"))
            dimension = 0 if row["dimension"].lower() == TRAIT else \
                DIMENSION_CLASSES.index(f"{dimension_named(row['dimension'])}:{row['stance']}")
        except ValueError as error:
            raise TemplateError(f"{path}, line {line}: {error}") from None
        add(path, line, row["sentence"], JUDGEMENT, dimension, poles, int(row["strength"]))
    for name, labels, classes in (("categories", data.category, CATEGORIES),
                                  ("dimension classes", data.dimension, DIMENSION_CLASSES)):
        absent = sorted(set(range(len(classes))) - set(labels))
        if absent:
            raise TemplateError(f"{folder}: no training sentence for the {name} {[classes[i] for i in absent]}")
    return data


def _bad_pole(axis: str, value: str) -> float:
    raise ValueError(f"{axis} must be high, low or none, found {value!r}")


def fit_judgement_heads(X: np.ndarray, data: JudgementData, kind: str, *, C: float = 1.0, hidden_units: int = 256,
                        alpha: float = 1e-3, random_state: int = 0) -> tuple[ClassifierHead, ClassifierHead]:
    """The gate (category of every sentence) and the dimension head (dimension x stance of the judgements, ``none``
    for trait judgements and neutral sentences), fitted with balanced classes on embeddings ``X`` of ``data``."""
    category, dimension, _, _ = data.arrays()
    options = {"C": C, "hidden_units": hidden_units, "alpha": alpha, "random_state": random_state, "balanced": True}
    gate = ClassifierHead(kind, CATEGORIES).fit(X, category, **options)
    dimensions = ClassifierHead(kind, DIMENSION_CLASSES).fit(X, dimension, **options)
    return gate, dimensions


def sentence_folds(data: JudgementData, n_folds: int, seed: int = 0) -> list[np.ndarray]:
    """Test-row indices of ``n_folds`` folds, stratified by gate category and dimension class."""
    rng = np.random.default_rng(seed)
    category, dimension, _, _ = data.arrays()
    folds: list[list[int]] = [[] for _ in range(n_folds)]
    offset = 0
    for stratum in sorted(set(zip(category.tolist(), dimension.tolist()))):
        members = np.flatnonzero((category == stratum[0]) & (dimension == stratum[1]))
        for position, row in enumerate(rng.permutation(members)):
            folds[(position + offset) % n_folds].append(int(row))
        offset += len(members)
    return [np.sort(np.asarray(fold, dtype=int)) for fold in folds]
