"""How far int8 weights move the scores (scm/quantised.py), on hand-made score rows."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_audit.scm.columns import OUTPUT_COLUMNS, STIGMA_COLUMN
from corpus_audit.scm.quantised import score_agreement


def _rows(warmth, competence, stigma) -> np.ndarray:
    rows = np.full((len(stigma), len(OUTPUT_COLUMNS)), np.nan)
    rows[:, 0], rows[:, 1] = warmth, competence
    rows[:, OUTPUT_COLUMNS.index(STIGMA_COLUMN)] = stigma
    return rows


def test_agreement_counts_flags_and_quadrants_by_hand():
    fp32 = _rows([0.01, -0.2, 0.3, 0.0], [0.5, -0.1, -0.4, 0.2], [0.49, 0.9, 0.1, 0.5])
    int8 = _rows([-0.01, -0.25, 0.3, 0.02], [0.5, -0.1, -0.3, 0.2], [0.51, 0.8, 0.1, 0.5])
    agreement = score_agreement(fp32, int8)
    assert agreement["n"] == 4
    # row 0 crosses 0.5 (flag changes) and warmth crosses 0 (quadrant changes); the others keep both
    assert agreement["stigma_flag_changed"] == 0.25 and agreement["same_quadrant"] == 0.75
    assert agreement["mean_abs_difference"]["stigma"] == pytest.approx((0.02 + 0.1) / 4)
    assert agreement["max_abs_difference"]["warmth"] == pytest.approx(0.05)
    assert set(agreement["mean_abs_difference"]) == {"warmth", "competence", STIGMA_COLUMN}  # NaN columns left out
    with pytest.raises(ValueError, match="shape"):
        score_agreement(fp32, int8[:3])
