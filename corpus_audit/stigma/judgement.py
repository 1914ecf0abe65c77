"""What a sentence that mentions an illness does: judge people, or something else (the judgement gate's classes),
and how a judgement reads on the nine AQ-27 dimensions.

Stigma is a judgement about people (a group, or a person because of their illness). A self-disclosure, a clinical
description, a question or a figurative use ("like having the flu") mentions an illness without one, and an audit
that averages over them measures tone and topic rather than stigma. Each sentence gets one category and a
judgement strength (the probability that it judges people); each dimension score is in [-1, 1]: +1 the sentence
endorses the dimension's attitude ("they should be locked up": Segregation), -1 it rejects it ("they belong in the
community"), 0 it says nothing about it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corpus_audit.stigma.aq27 import DIMENSIONS, dimension_label

if TYPE_CHECKING:
    import numpy as np

JUDGEMENT = "judgement"
#: The gate's categories; every one but the first is a mention without a judgement about people.
CATEGORIES = (JUDGEMENT, "self_disclosure", "clinical", "question", "analogy", "information")
NEUTRAL_CATEGORIES = CATEGORIES[1:]
STANCES = ("endorse", "reject")
#: A judgement that fits no single AQ-27 dimension (a trait: "they are lazy and unreliable").
TRAIT = "trait"

#: Per-sentence output columns of the instrument after (warmth, competence): the probability of each category
#: (that of a judgement is the judgement strength), then the dimension scores.
STRENGTH_COLUMN = "judgement_strength"
CATEGORY_COLUMNS = (STRENGTH_COLUMN, *(f"p_{category}" for category in NEUTRAL_CATEGORIES))
DIMENSION_COLUMNS = {dimension: f"dim_{dimension.lower()}" for dimension in DIMENSIONS}
CATEGORY_COLUMN = "category"
TOP_DIMENSION_COLUMN = "top_dimension"
#: The stigma score's decision point: calibrated on dev so that 0.5 is a balanced decision (scm/stigma.py).
STIGMA_DECISION = 0.5
#: The sign that turns a dimension score into "more stigma": endorsing a dimension's attitude is stigma for every
#: dimension but Help, whose attitude (helping) is its opposite; the written judgements are labelled that way.
STIGMA_SIGN = {dimension: -1.0 if dimension == "Help" else 1.0 for dimension in DIMENSIONS}


def dimension_named(name: str) -> str:
    """The AQ-27 dimension called ``name`` in any letter case, or by an older name (as data files write it)."""
    dimension = dimension_label(name)
    if dimension not in DIMENSIONS:
        raise ValueError(f"unknown AQ-27 dimension {name!r}; choose one of {', '.join(DIMENSIONS)}")
    return dimension


def label_sentences(probabilities: np.ndarray, dimension_scores: np.ndarray,
                    stigma: np.ndarray | None = None) -> tuple[list, list]:
    """Per sentence: its category (the most probable of ``CATEGORIES``; None where unscored) and, for judgements,
    its top dimension (the largest absolute dimension score, e.g. ``Fear``; None otherwise).

    ``probabilities`` (n, len(CATEGORIES)) and ``dimension_scores`` (n, 9) are the instrument's columns; with
    ``stigma`` (the stigma score, n), a sentence scored stigmatising (at least ``STIGMA_DECISION``) is a judgement
    about people whatever the gate's most probable category, so that the category, the score and the dimension
    shown for a sentence agree."""
    import numpy as np

    probabilities = np.asarray(probabilities, dtype=float)
    scores = np.asarray(dimension_scores, dtype=float)
    scored = np.isfinite(probabilities).all(axis=1)
    best = np.argmax(np.nan_to_num(probabilities, nan=-1.0), axis=1)
    if stigma is not None:
        best = np.where(np.nan_to_num(np.asarray(stigma, dtype=float), nan=0.0) >= STIGMA_DECISION,
                        CATEGORIES.index(JUDGEMENT), best)
    top = np.argmax(np.abs(np.nan_to_num(scores)), axis=1)
    categories = [CATEGORIES[b] if ok else None for b, ok in zip(best, scored)]
    dimensions = [DIMENSIONS[t] if category == JUDGEMENT else None for t, category in zip(top, categories)]
    return categories, dimensions
