"""spaCy's blank-pipeline tokenizer run from its shipped rules (corpus/spacy_tokenizer.py): the rules are those of
the installed spaCy, the tokens are spaCy's on real and generated text, and stale rules fall back to spaCy itself."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpus_audit.corpus import spacy_tokenizer
from corpus_audit.corpus.segment import Segmenter
from corpus_audit.corpus.spacy_tokenizer import blank_tokenizer, export_rules, rules_path

DATA = Path(__file__).parents[1] / "data"
SAMPLES = {"en": ["corpus_reddit_sample_en.jsonl.gz", "corpus_codiesp_sample_en.jsonl.gz"],
           "es": ["corpus_codiesp_sample_es.jsonl.gz"]}
# Characters that the prefix, suffix and infix rules, the URL pattern and the special cases are about.
ALPHABET = [*"aAzZ09.,;:!?¿¡'\"’‘“”()[]{}<>/\\-–—_+=*&%$€£#@~^|…·«»", "ñ", "é", "ß", "😀", "\u0301", "°", "°C", "km",
            "n't", "'s", "’s", "http://", ".com"]


@pytest.fixture(scope="module", params=["en", "es"])
def pair(request: pytest.FixtureRequest) -> tuple[object, object]:
    import spacy

    tokenizer = blank_tokenizer(request.param)
    assert tokenizer is not None, f"{rules_path(request.param)} is stale: run scripts/export_spacy_rules.py"
    return tokenizer, spacy.blank(request.param).tokenizer


def spacy_tokens(tokenizer: object, text: str) -> list[tuple[int, str]]:
    return [(token.idx, token.text) for token in tokenizer(text)]  # type: ignore[operator]


@pytest.mark.parametrize("lang", ["en", "es"])
def test_shipped_rules_are_the_installed_spacys(lang: str) -> None:
    shipped = json.loads(rules_path(lang).read_text(encoding="utf-8"))
    assert shipped == export_rules(lang), "stale rules: run scripts/export_spacy_rules.py"
    assert len(shipped["special_cases"]) > 200 and "." in shipped["punct_chars"]


def test_tokens_of_the_samples_words_and_texts(pair: tuple[object, object]) -> None:
    ours, theirs = pair
    lang = "es" if "EE. UU." in ours.specials else "en"  # type: ignore[attr-defined]
    texts = [json.loads(line)["text"] for name in SAMPLES[lang] for line in gzip.open(DATA / name, "rt")]
    words = sorted({word for text in texts for word in text.split()})
    assert len(words) > 5000
    for samples in (words, texts[:300]):
        expected = [spacy_tokens(theirs, text) for text in samples]
        assert [ours.tokens(text) for text in samples] == expected  # type: ignore[attr-defined]


def test_tokens_of_generated_words_and_texts(pair: tuple[object, object]) -> None:
    ours, theirs = pair
    specials = sorted(ours.specials)  # type: ignore[attr-defined]
    pieces = st.sampled_from(ALPHABET) | st.sampled_from(specials) | st.text(max_size=3)
    separators = st.sampled_from(["", "", "", " ", "  ", "\t", "\n", "\xa0", " \n "])

    @settings(max_examples=3000, deadline=None, derandomize=True)
    @given(st.lists(st.tuples(pieces, separators), max_size=12))
    def check(parts: list[tuple[str, str]]) -> None:
        text = "".join(piece + separator for piece, separator in parts)
        assert ours.tokens(text) == spacy_tokens(theirs, text)  # type: ignore[attr-defined]

    check()


def test_special_cases_with_affixes(pair: tuple[object, object]) -> None:
    """Special cases that affix splitting cuts, alone and wrapped in punctuation (spaCy's special-case matcher)."""
    ours, theirs = pair
    texts = [wrap.format(special) for special in ours.specials  # type: ignore[attr-defined]
             for wrap in ("{}", "({})", '"{}".', "{}...", "x{}", "{}:)", "¿{}?", "{0} {0}")]
    assert [ours.tokens(text) for text in texts] == [spacy_tokens(theirs, text) for text in texts]  # type: ignore


def test_stale_rules_fall_back_to_spacy(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "Dr. Smith has asthma. U.S. troops?! Yes.\nNext line (e.g. this one)."
    expected = ["Dr. Smith has asthma.", "U.S. troops?!", "Yes.", "Next line (e.g. this one)."]
    with monkeypatch.context() as patch:
        patch.setattr(spacy_tokenizer, "installed_spacy_version", lambda: "0.0.0")
        blank_tokenizer.cache_clear()
        try:
            assert blank_tokenizer("en") is None
            segmenter = Segmenter("en")
            assert segmenter.needs_spacy_blank
            assert list(segmenter.sentences(text)) == expected
            assert segmenter._tokens == segmenter._spacy_tokens
        finally:
            blank_tokenizer.cache_clear()
    segmenter = Segmenter("en")
    assert not segmenter.needs_spacy_blank and list(segmenter.sentences(text)) == expected
