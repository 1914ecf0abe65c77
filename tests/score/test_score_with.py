"""score_with: each distinct (text, forms) is projected once, and the forms reach the projection."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_audit.scm.columns import OUTPUT_COLUMNS
from corpus_audit.score.scorer import ScoreSummary, score_with


def test_a_text_is_distinct_by_its_words_and_its_set_of_forms():
    calls = []

    def project(texts, forms):
        calls.append((list(texts), forms))
        return np.arange(len(texts) * len(OUTPUT_COLUMNS), dtype=np.float32).reshape(len(texts), -1)

    texts = ["Keep  this condition away.", "Keep this condition away.", "Keep this condition away.", " ", "Other."]
    forms = [("slang", "diagnosis"), ("diagnosis", "slang", "slang"), ("diagnosis",), ("slang",), ()]
    summary = ScoreSummary()
    scores = score_with(texts, project, summary, forms)
    assert calls == [(["Keep this condition away.", "Keep this condition away.", "Other."],
                      [("diagnosis", "slang"), ("diagnosis",), ()])]
    # the first two are the same text with the same forms; the third has other forms; the blank one is not scored
    np.testing.assert_array_equal(scores[0], scores[1])
    assert not np.array_equal(scores[0], scores[2]) and np.isnan(scores[3]).all()
    assert summary.distinct_texts == 3 and summary.skipped["blank text"] == 1
    calls.clear()
    score_with(texts[:2], project)
    assert calls == [(["Keep this condition away."], None)]  # no forms known: None, one text
    with pytest.raises(ValueError, match="2 form lists for 5 texts"):
        score_with(texts, project, forms=forms[:2])
