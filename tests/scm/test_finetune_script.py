"""The SetFit pairs of scripts/finetune_stigma_encoder.py (the measurement of a tuned encoder, docs/stigma_score.md)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("finetune_stigma_encoder")


def test_each_sentence_gets_its_positive_and_negative_pairs(script):
    texts = [f"sentence {i}" for i in range(9)]
    labels = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    table = script.setfit_pairs(texts, labels, pairs=3, seed=0)
    assert len(table) == 2 * 3 * len(texts)
    label_of = dict(zip(texts, labels))
    same = table["sentence1"].map(label_of) == table["sentence2"].map(label_of)
    assert (same == (table["label"] == 1.0)).all()  # 1 exactly for pairs of one class
    per_sentence = table.groupby(["sentence1", "label"]).size()
    assert (per_sentence == 3).all() and len(per_sentence) == 2 * len(texts)


def test_pairs_are_reproducible_and_depend_on_the_seed(script):
    texts = [f"s{i}" for i in range(20)]
    labels = np.arange(20) % 2
    first, again = (script.setfit_pairs(texts, labels, 2, seed=5) for _ in range(2))
    assert first.equals(again)
    assert not first.equals(script.setfit_pairs(texts, labels, 2, seed=6))
