"""The language registry: one record per language, and everything that differs between languages read from it."""

from __future__ import annotations

import pytest

from corpus_audit.common.resources import data_file
from corpus_audit.embed import NAMED_MODELS
from corpus_audit.languages import LANGUAGES, UnknownLanguageError, get_language


@pytest.mark.parametrize("code", sorted(LANGUAGES))
def test_every_language_has_its_data_and_a_named_default_model(code):
    language = get_language(code)
    assert language.code == code and language.default_model in NAMED_MODELS
    for kind, name in (("lexicons", "illnesses.csv"), ("lexicons", "scm_seed.csv"), ("templates", "training.csv")):
        assert data_file(kind, code, name).is_file()
    if language.agreement:
        assert data_file("lexicons", code, "scm_forms.csv").is_file()


def test_spanish_euphony_and_masks():
    assert get_language("es").apply_euphony("amables y inteligentes, y hábiles") == "amables e inteligentes, y hábiles"
    assert get_language("en").apply_euphony("kind y inventive") == "kind y inventive"
    assert (get_language("en").mask, get_language("es").mask) == ("this condition", "esta afección")


def test_unknown_language():
    with pytest.raises(UnknownLanguageError, match="use one of en, es"):
        get_language("fr")
