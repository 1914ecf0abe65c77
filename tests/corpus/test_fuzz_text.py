"""Fuzzing the segmenter and the matcher on any text: no exception, nothing lost, nothing invented.

Segmenter: every sentence is non-empty, stripped and at most ``chunk_chars`` long, and the sentences hold
every non-whitespace character of the text, in order. Matcher: every match is a word-bounded spelling of
its term (exact where the lexicon says so), matches do not overlap, the pre-filter never rejects a text in
which ``find`` finds something, and every term written into a text (any case, accents, apostrophes and
hyphens) is found where it was written. Example counts: the hypothesis profile (tests/conftest.py).
"""

from __future__ import annotations

import unicodedata
import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus_audit.corpus.matcher import IllnessMatcher, fold
from corpus_audit.corpus.segment import Segmenter

PIECES = [".", "!", "?", "…", "...", " ", "  ", "\n", "\r\n", "\t", "\xa0", "\u2028", "\u3000", "\x85", "\x00", "¿",
          "«", "»", '"', "(", ")", "e.g.", "Dr.", "U.S.", "3.5", "I'm", "don't", "😀", "\u0301", "\u200b", "مرحبا",
          "日本語", "İ", "ß", "\ufeff", "\ud800", "\udfff"]


def texts(max_huge: int = 30_000) -> st.SearchStrategy[str]:
    """Any characters (lone surrogates included), sentence-like pieces, and long unbroken runs."""
    any_char = st.characters(exclude_categories=[])
    words = st.text(any_char, max_size=12)
    run = st.builds(lambda unit, times: unit * times, st.text(any_char, min_size=1, max_size=4),
                    st.integers(100, max_huge))
    return st.lists(st.sampled_from(PIECES) | words | words | st.just("word") | run, max_size=30).map("".join)


@pytest.fixture(scope="module")
def segmenters() -> list[Segmenter]:
    return [Segmenter("en"), Segmenter("es"), Segmenter("en", chunk_chars=64)]


def visible(text: str) -> str:
    """The non-whitespace characters of ``text``, lone surrogates as U+FFFD (the readers' rule)."""
    return "".join("\ufffd" if 0xD800 <= ord(char) <= 0xDFFF else char for char in text if not char.isspace())


@given(text=texts(), which=st.integers(0, 2))
def test_segmenter_loses_nothing(segmenters: list[Segmenter], text: str, which: int) -> None:
    segmenter = segmenters[which]
    sentences = list(segmenter.sentences(text))
    for sentence in sentences:
        assert sentence and sentence == sentence.strip() and len(sentence) <= segmenter.chunk_chars
        sentence.encode("utf-8")  # written to Parquet later
    assert visible("".join(sentences)) == visible(text)


# --------------------------------------------------------------------------------------------- matcher


@pytest.fixture(scope="module")
def matchers() -> dict[str, IllnessMatcher]:
    return {lang: IllnessMatcher.for_language(lang) for lang in ("en", "es")}


@given(text=texts(max_huge=3_000), lang=st.sampled_from(["en", "es"]))
def test_matches_are_bounded_spellings_of_their_terms(matchers: dict[str, IllnessMatcher], text: str, lang: str) -> None:
    check_matches(matchers[lang], text)


def check_matches(matcher: IllnessMatcher, text: str) -> list:
    matches = matcher.find(text)
    folded = fold(text)
    end = 0
    for match in matches:
        assert end <= match.start < match.end <= len(text)  # left to right, no overlap
        end = match.end
        assert text[match.start:match.end] == match.surface
        assert fold(match.surface) == fold(match.entry.term)
        if match.entry.exact_case:
            assert match.surface == match.entry.term
        for index in (match.start - 1, match.end):  # whole words only
            assert not (0 <= index < len(text) and (folded[index].isalnum() or folded[index] == "_"))
    assert matcher.has_candidate(text) or not matches  # the pre-filter never drops a match
    return matches


# A lexicon in which no term is another term with words around it, so every written term is found as itself.
LEXICON = """term,illness,type,case
asthma,asthma,physical,any
flu,influenza,physical,any
heart failure,heart failure,physical,any
depresión,depression,mental,any
Alzheimer's disease,alzheimer,mental,any
obsessive-compulsive disorder,ocd,mental,any
PTSD,ptsd,mental,exact
anorexia nervosa,anorexia,mental,any
anorexia,anorexia,mental,any
"""
_ACCENTED = {}  # base letter -> Latin-1/Latin Extended-A letters that differ from it only by accents
for _code in range(0xC0, 0x180):
    _char = chr(_code)
    _base = unicodedata.normalize("NFD", _char)[0]
    if _base.isascii() and _base.isalpha() and _char.lower() not in ("ñ", "ı") and len(_char.lower()) == 1:
        _ACCENTED.setdefault(_base.lower(), []).append(_char)
_APOSTROPHES = ["'", "’", "ʼ", "‘"]
_HYPHENS = ["-", "‐", "‑"]


@st.composite
def spelling(draw, term: str, exact: bool) -> str:
    """``term`` as a writer might type it: any case, accents on any letter, typographic apostrophes and
    hyphens (an exact-case term is written exactly)."""
    if exact:
        return term
    out = []
    for char in term:
        options = [char.lower(), char.upper()]
        if char == "'":
            options = _APOSTROPHES
        elif char == "-":
            options = _HYPHENS
        elif fold(char) in _ACCENTED:
            options += _ACCENTED[fold(char)]
        out.append(draw(st.sampled_from(options)))
    return "".join(out)


SEPARATORS = st.text(st.sampled_from(list(" \n\t.,;:!?()[]\"«»—–/\xa0\u2028😀\ufffd")), min_size=1, max_size=3)
NOISE = st.text(st.sampled_from(list("bcdfghjklmnpqrstvwxz")), min_size=1, max_size=6)  # no vowels: never a term


@pytest.fixture(scope="module")
def custom_matcher(tmp_path_factory) -> IllnessMatcher:
    path = tmp_path_factory.mktemp("lexicon") / "illnesses.csv"
    path.write_text(LEXICON, encoding="utf-8")
    return IllnessMatcher.from_csv(path)


@given(data=st.data())
def test_every_written_term_is_found_where_it_was_written(custom_matcher: IllnessMatcher, data) -> None:
    entries = custom_matcher.entries
    text = data.draw(SEPARATORS)
    written = []
    for _ in range(data.draw(st.integers(0, 6))):
        if data.draw(st.booleans()):
            entry = data.draw(st.sampled_from(entries))
            surface = data.draw(spelling(entry.term, entry.exact_case))
            written.append((len(text), len(text) + len(surface), entry.illness))
            text += surface
        else:
            text += data.draw(NOISE)
        text += data.draw(SEPARATORS)
    matches = check_matches(custom_matcher, text)
    assert [(m.start, m.end, m.illness) for m in matches] == written


def test_prefilter_keeps_accented_and_typographic_spellings(matchers: dict[str, IllnessMatcher]) -> None:
    # Found by the fuzz test above: the pre-filter dropped texts whose only term had an accent the lexicon
    # spelling lacks, or a non-breaking hyphen, although find() matches them.
    cases = {"en": ["I have ÀSTHMA.", "obsessive‑compulsive disorder", "Alzheimerʼs disease", "ALZHEIMER’S disease"],
             "es": ["Tengo diabétes.", "DEPRESÍON grave"]}
    for lang, texts_ in cases.items():
        for text in texts_:
            assert matchers[lang].find(text), text
            assert matchers[lang].has_candidate(text), text
