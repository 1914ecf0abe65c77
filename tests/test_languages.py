"""The language registry: one record per language, and everything that differs between languages read from it."""

from __future__ import annotations

import pytest

from corpus_audit.common.resources import data_file
from corpus_audit.embed import NAMED_MODELS
from corpus_audit.languages import (LANGUAGES, SAMPLE_WORDS, LanguageEvidence, UnknownLanguageError, get_language,
                                    guess_language, language_warning)


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


def _texts(name: str) -> list[str]:
    import gzip
    import json
    from pathlib import Path

    with gzip.open(Path(__file__).parent / "data" / name, "rt", encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle]


@pytest.mark.parametrize("name, code", [("corpus_reddit_sample_en.jsonl.gz", "en"),
                                        ("corpus_codiesp_sample_en.jsonl.gz", "en"),
                                        ("corpus_codiesp_sample_es.jsonl.gz", "es")])
def test_the_bundled_samples_look_like_their_language(name, code):
    texts = _texts(name)
    assert guess_language(texts) == code
    evidence = LanguageEvidence()
    for text in texts:
        evidence.add(text)
    assert SAMPLE_WORDS <= evidence.words < SAMPLE_WORDS + 3_000  # sampled, not read whole
    other = next(other for other in LANGUAGES if other != code)
    assert language_warning(evidence, code) is None
    assert language_warning(evidence, other) == (f"the corpus looks like {LANGUAGES[code].name} ({code}), not "
                                                 f"{LANGUAGES[other].name} ({other}): pass --lang {code}")


def test_no_guess_from_too_few_words_or_an_unregistered_language():
    assert guess_language(["The cat is on the mat."]) is None  # too few words to tell
    german = "Der Hund und die Katze sind im Garten, aber sie spielen nicht miteinander. " * 40
    assert guess_language([german]) is None


def test_function_words_tell_the_languages_apart():
    words = [language.function_words for language in LANGUAGES.values()]
    assert all(words) and not set.intersection(*map(set, words))
