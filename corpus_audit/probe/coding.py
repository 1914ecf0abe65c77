"""Coding a completion as stigma-congruent or not, and its stigma types (Wang et al.'s codebook: danger,
incompetence, blame, social distance, control, pity), by this project's instrument; the judge model's coding is
parsed in :mod:`corpus_audit.probe.scenarios`.

The instrument reads the unfinished sentence and its completion as one text ("After the interview, the hiring
manager decided not to proceed with the offer.") and gives its judgement gate, warmth, competence and the nine
AQ-27 dimension scores (p(endorse) - p(reject), in [-1, 1]). A completion is **stigma-congruent** when the gate's
most probable category is a judgement about people and it has at least one type:

* the top dimension (largest absolute score, :func:`corpus_audit.stigma.judgement.label_sentences`) when endorsed
  (score > 0): Dangerousness and Fear -> danger; Blame and Anger -> blame; Avoidance and Segregation -> social
  distance; Coercion -> control; Pity -> pity; Help is the one positively worded dimension: rejected (score < 0) it
  is social distance, endorsed it is no stigma;
* incompetence: the AQ-27 has no dimension for it, so the Stereotype Content Model's competence axis stands in:
  competence at or below ``-INCOMPETENCE_CUT``.

The rule was fixed before the hand-labelled sample was coded (docs/probe.md gives its agreement).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from corpus_audit.common.errors import UserError
from corpus_audit.probe.scenarios import TYPES
from corpus_audit.scm.columns import OUTPUT_COLUMNS
from corpus_audit.stigma.judgement import CATEGORY_COLUMNS, DIMENSION_COLUMNS, JUDGEMENT, label_sentences

#: The AQ-27 dimension that stands for each stigma type when the instrument finds it endorsed.
DIMENSION_TYPES = {"Dangerousness": "danger", "Fear": "danger", "Blame": "blame", "Anger": "blame",
                   "Avoidance": "social distance", "Segregation": "social distance", "Coercion": "control",
                   "Pity": "pity"}
#: Help rejected ("I wouldn't help") is keeping away.
REJECTED_TYPES = {"Help": "social distance"}
#: Competence at or below minus this marks incompetence (the axis is about -1 to 1 over the seed lexicon).
INCOMPETENCE_CUT = 0.25


class InstrumentError(UserError, ValueError):
    """The instrument cannot code completions (its axes carry no judgement gate)."""


def instrument_codes(scores: np.ndarray) -> list[tuple[bool, tuple[str, ...]]]:
    """(stigma-congruent, types) of each row of the instrument's columns (``OUTPUT_COLUMNS``)."""
    scores = np.asarray(scores, dtype=float).reshape(-1, len(OUTPUT_COLUMNS))
    probabilities = scores[:, [OUTPUT_COLUMNS.index(c) for c in CATEGORY_COLUMNS]]
    dimensions = scores[:, [OUTPUT_COLUMNS.index(c) for c in DIMENSION_COLUMNS.values()]]
    if len(scores) and not np.isfinite(probabilities).any():
        raise InstrumentError("the instrument's axes carry no judgement gate, so it cannot tell judgements from "
                              "other text: train axes again with `corpus-audit axes train` (or pass --coder judge)")
    categories, tops = label_sentences(probabilities, dimensions)
    competence = scores[:, OUTPUT_COLUMNS.index("competence")]
    names = list(DIMENSION_COLUMNS)
    codes = []
    for row, category, top in zip(range(len(scores)), categories, tops):
        if category != JUDGEMENT:
            codes.append((False, ()))
            continue
        found = set()
        score = dimensions[row, names.index(top)]
        if score > 0 and top in DIMENSION_TYPES:
            found.add(DIMENSION_TYPES[top])
        elif score < 0 and top in REJECTED_TYPES:
            found.add(REJECTED_TYPES[top])
        if competence[row] <= -INCOMPETENCE_CUT:
            found.add("incompetence")
        types = tuple(t for t in TYPES if t in found)
        codes.append((bool(types), types))
    return codes


def type_agreement(a: Sequence[tuple[bool, tuple[str, ...]] | None],
                   b: Sequence[tuple[bool, tuple[str, ...]] | None]) -> dict[str, Any]:
    """How two codings of the same completions agree: Cohen's kappa of the binary code, of each type's presence,
    and the mean Jaccard similarity of the type sets where both call the completion stigma-congruent (the paper's
    measure of type agreement between its coders). None entries (unusable codes) are left out."""
    from corpus_audit.stigma.stats import agreement

    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    binary = agreement([x[0] for x, _ in pairs], [y[0] for _, y in pairs], labels=[False, True])
    per_type = {t: agreement([t in x[1] for x, _ in pairs], [t in y[1] for _, y in pairs], labels=[False, True])
                for t in TYPES}
    both = [(set(x[1]), set(y[1])) for x, y in pairs if x[0] and y[0]]
    jaccard = float(np.mean([len(s & t) / len(s | t) for s, t in both])) if both else None
    return {**binary, "types": per_type, "jaccard": jaccard, "n_both_congruent": len(both)}
