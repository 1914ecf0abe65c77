"""Illness lexicons and matcher: rules, word boundaries, and precision/recall on labelled sentences."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from corpus_audit.common.errors import LexiconError
from corpus_audit.corpus.matcher import IllnessMatcher, fold, lexicon_files, load_lexicon, rules_path_for
from corpus_audit.stigma.quadrants import illness_type_of

DATA = Path(__file__).parents[1] / "data"
SEED_MENTAL = {
    "Alzheimer's", "anxiety", "schizophrenia", "bulimia", "dementia", "psychosis", "epilepsy", "OCD",
    "bipolar affective disorder", "depression", "social anxiety", "panic disorder", "separation anxiety disorder",
    "anorexia", "anorexia nervosa", "bulimia nervosa", "binge eating disorder", "PTSD", "ADHD",
    "delusional disorder", "borderline personality disorder", "anti-social personality disorder",
}
SEED_PHYSICAL = {
    "cold", "appendicitis", "tonsillitis", "blocked nose", "allergies", "acid reflux", "contusions", "diabetes",
    "rhinitis", "bronchitis", "flu", "sinusitis", "asthma", "lesions", "conjunctivitis", "arthrosis", "arthritis",
    "hypertension", "hypotension", "osteoporosis", "angina pectoris", "migraines",
}


@pytest.fixture(scope="module", params=["en", "es"])
def lang(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def matchers() -> dict[str, IllnessMatcher]:
    return {lang: IllnessMatcher.for_language(lang) for lang in ("en", "es")}


def illnesses(matcher: IllnessMatcher, text: str) -> set[str]:
    return {m.illness for m in matcher.find(text)}


def test_lexicon_covers_the_seed_paper_lists(lang: str, matchers: dict[str, IllnessMatcher]) -> None:
    entries = [entry for entry in matchers[lang].entries if entry.form == "diagnosis"]  # the paper's term set
    assert {e.illness for e in entries if e.type == "mental"} == SEED_MENTAL
    assert {e.illness for e in entries if e.type == "physical"} == SEED_PHYSICAL


def test_labelled_set_recall_and_precision(lang: str, matchers: dict[str, IllnessMatcher]) -> None:
    """Pairs (sentence, illness): recall >= 0.9 and precision >= 0.95, ambiguous negatives included."""
    rows = list(csv.DictReader(open(DATA / f"matching_{lang}.csv", encoding="utf-8")))
    assert len(rows) >= 100 and sum(1 for r in rows if not r["illnesses"]) >= 20
    true_pos = false_pos = false_neg = 0
    for row in rows:
        expected = {x for x in row["illnesses"].split(";") if x}
        found = illnesses(matchers[lang], row["sentence"])
        true_pos += len(found & expected)
        false_pos += len(found - expected)
        false_neg += len(expected - found)
    recall = true_pos / (true_pos + false_neg)
    precision = true_pos / (true_pos + false_pos)
    assert recall >= 0.9, recall
    assert precision >= 0.95, precision


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I caught a cold yesterday.", {"cold"}),
        ("It was a cold day.", set()),
        ("The Great Depression", set()),
        ("I have manic depression", {"bipolar affective disorder"}),  # longest term wins
        ("She had anorexia nervosa", {"anorexia nervosa"}),
        ("Alzheimer’s runs in the family", {"Alzheimer's"}),  # typographic apostrophe
        ("influence and reflux", set()),  # "flu" inside a word; bare "reflux" is not acid reflux
        ("I have ADD", {"ADHD"}),
        ("we should add more", set()),  # case-exact abbreviation
        ("DEPRESSION IS REAL", {"depression"}),
        ("He is a cold and heartless drunk.", set()),  # adjectival cold, coordinated with an adjective
        ("a cold and emotionless man", set()),  # any coordinated adjective in -less
        ("I have a cold and a cough.", {"cold"}),
        ("Photo by Gerd Altmann", set()),  # case=not_title: a first name
        ("GERD and gerd", {"acid reflux"}),
        ("like if he had the flu", set()),  # analogy
        ("as though I had allergies", set()),
        ("I feel like if it were allergies the pills would help", {"allergies"}),  # a hypothesis, not a simile
        ("the flu, as if that was not enough", {"flu"}),  # the term before the comparison
        ("acting as if he was schizophrenic", {"schizophrenia"}),  # mental terms: figurative use is kept
    ],
)
def test_english_rules(matchers: dict[str, IllnessMatcher], text: str, expected: set[str]) -> None:
    assert illnesses(matchers["en"], text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tiene depresion", {"depression"}),  # accents optional
        ("DEPRESIÓN", {"depression"}),
        ("depresión del segmento ST", set()),
        ("toc toc", set()),
        ("diagnóstico de TOC", {"OCD"}),
        ("pacientes esquizofrénicas", {"schizophrenia"}),
        ("astenia, anorexia y pérdida de peso", set()),
        ("distrofia miotónica tipo I (DM tipo I)", set()),  # DM is myotonic dystrophy here
        ("antecedentes de DM tipo I", {"diabetes"}),
        ("como si tuviera gripe", set()),  # analogy
        ("con síntomas similares a los de un resfriado", set()),
        ("cuadro compatible con gripe", {"flu"}),
        ("Erge", set()),
        ("ERGE", {"acid reflux"}),
    ],
)
def test_spanish_rules(matchers: dict[str, IllnessMatcher], text: str, expected: set[str]) -> None:
    assert illnesses(matchers["es"], text) == expected


def test_match_offsets_and_surface(matchers: dict[str, IllnessMatcher]) -> None:
    text = "Mi abuela tiene Alzhéimer y DIABETES."
    matches = matchers["es"].find(text)
    assert [(text[m.start : m.end], m.surface, m.type) for m in matches] == [
        ("Alzhéimer", "Alzhéimer", "mental"),
        ("DIABETES", "DIABETES", "physical"),
    ]
    assert illness_type_of(m.type for m in matches) == "both"
    assert illness_type_of([]) is None


def test_prefilter_never_drops_a_sentence_that_matches(lang: str, matchers: dict[str, IllnessMatcher]) -> None:
    matcher = matchers[lang]
    for row in csv.DictReader(open(DATA / f"matching_{lang}.csv", encoding="utf-8")):
        if matcher.find(row["sentence"]):
            assert matcher.has_candidate(row["sentence"]), row["sentence"]
    assert not matcher.has_candidate("nothing to see here, influence reflux")


def test_fold_keeps_length_and_enye() -> None:
    for text in ("Depresión ÁÉÍÓÚ ü", "niño İstanbul", "Alzheimer’s"):
        assert len(fold(text)) == len(text)
    assert fold("DEPRESIÓN niño") == "depresion niño"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("term,illness\nx,y\n", "missing column"),
        ("term,illness,type\nx,y,emotional\n", "type must be"),
        ("term,illness,type,case\nx,y,mental,upper\n", "lex.csv:2: case must be one of any, exact, not_title"),
        ("term,illness,type,exclude_context\nx,y,mental,(unclosed\n", "bad regular expression"),
        ("term,illness,type\n", "no entries"),
    ],
)
def test_bad_lexicon_is_reported_with_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "lex.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(LexiconError, match=message):
        load_lexicon(path)


def test_case_not_title_rejects_only_a_capitalised_word(tmp_path: Path) -> None:
    path = tmp_path / "lex.csv"
    path.write_text("term,illness,type,case\ngerd,acid reflux,physical,not_title\n", encoding="utf-8")
    matcher = IllnessMatcher.from_csv(path)
    assert [m.surface for m in matcher.find("GERD, gerd, Gerd, gERD")] == ["GERD", "gerd", "gERD"]


def test_each_physical_term_and_no_mental_term_names_the_analogy_rule(
    lang: str, matchers: dict[str, IllnessMatcher]
) -> None:
    """A physical simile ("felt like the flu") is not about anyone with the flu; a mental one ("acts as if he was
    bipolar") is the trivialising use the audit is there to see, so it stays a mention."""
    entries = matchers[lang].entries
    assert {entry.type for entry in entries if "analogy" in entry.rules} == {"physical"}
    assert all("analogy" in entry.rules for entry in entries if entry.type == "physical")
    assert all(entry.exclude_context is not None for entry in entries if entry.type == "physical")


def _lexicon_with_rules(tmp_path: Path, rules: str) -> Path:
    path = tmp_path / "lex.csv"
    path.write_text(
        "term,illness,type,exclude_context,rules\n"
        "gout,gout,physical,\\bno @@,simile\n"
        "flare,flare,physical,,\n",
        encoding="utf-8",
    )
    if rules:
        rules_path_for(path).write_text(rules, encoding="utf-8")
    return path


def test_shared_rules_combine_with_the_row_exclusions(tmp_path: Path) -> None:
    path = _lexicon_with_rules(tmp_path, "rule,exclude_context,note\nsimile,\\bas if\\b.*@@,comparison\n")
    matcher = IllnessMatcher.from_csv(path)
    assert illnesses(matcher, "He has gout.") == {"gout"}
    assert illnesses(matcher, "There was no gout.") == set()  # the row's own exclusion
    assert illnesses(matcher, "He limps as if he had gout.") == set()  # the shared rule
    assert illnesses(matcher, "As if I had a flare.") == {"flare"}  # a row that names no rule
    assert lexicon_files(path) == [path, tmp_path / "context_rules.csv"]
    assert lexicon_files(tmp_path / "elsewhere" / "lex.csv") == [tmp_path / "elsewhere" / "lex.csv"]


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ("", r"lex\.csv:2: names rule\(s\) simile but .*context_rules\.csv does not exist"),
        ("rule,exclude_context\nother,x\n", r"lex\.csv:2: unknown rule\(s\) simile"),
        ("rule,exclude_context\nsimile,(unclosed\n", r"context_rules\.csv:2: bad regular expression"),
        ("rule,exclude_context\nsimile,x\nsimile,y\n", r"context_rules\.csv:3: rule 'simile' is defined twice"),
        ("rule,exclude_context\nsimile,\n", r"context_rules\.csv:2: empty rule or exclude_context"),
        ("rule,pattern\nsimile,x\n", r"context_rules\.csv: missing column\(s\) exclude_context"),
    ],
)
def test_bad_context_rules_are_reported_with_file_and_line(tmp_path: Path, rules: str, message: str) -> None:
    with pytest.raises(LexiconError, match=message):
        load_lexicon(_lexicon_with_rules(tmp_path, rules))


def test_custom_lexicon_context_rules(tmp_path: Path) -> None:
    path = tmp_path / "lex.csv"
    path.write_text(
        "term,illness,type,case,require_context,exclude_context,note\n"
        "gout,gout,physical,any,,\\bno @@,\n"
        "flare,flare,physical,any,joint @@,,\n",
        encoding="utf-8",
    )
    matcher = IllnessMatcher.from_csv(path)
    assert illnesses(matcher, "He has gout.") == {"gout"}
    assert illnesses(matcher, "There was no gout.") == set()
    assert illnesses(matcher, "a joint flare") == {"flare"}
    assert illnesses(matcher, "a solar flare") == set()


# --- The Rust pre-filter (ahocorasick_rs) answers exactly as the pyahocorasick one --------------------------

_NOISE = ["", " ", "_", "x", "9", "-", "'", "’", ".", ",", "é", "É", "ñ", "ß", "İ", "K", "\u0301", "\u200b", "😀",
          "𝔸", "\n", "\t", "\xa0", "\ud800", "\udfff", "日本", "ﬁ", "Σ", "ς"]


def _term_spellings(matcher: IllnessMatcher) -> list[str]:
    spellings = set()
    for entry in matcher.entries:
        term = entry.term
        spellings.update({term, term.lower(), term.upper(), term.title(), fold(term), term.replace("'", "’")})
    return sorted(spellings)


@pytest.mark.parametrize("language", ["en", "es"])
def test_rust_prefilter_agrees_with_pyahocorasick(language: str, matchers: dict[str, IllnessMatcher]) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    matcher = matchers[language]
    assert matcher._fast_prefilter is not None  # the fast path is the one under test
    pieces = st.one_of(st.sampled_from(_term_spellings(matcher)), st.sampled_from(_NOISE), st.text(max_size=4))

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(st.lists(pieces, max_size=12))
    def check(parts: list[str]) -> None:
        text = "".join(parts)
        # has_candidate searches the lower-cased and the folded text; the two pre-filters must agree on each.
        for searched in (text.lower(), fold(text)):
            assert matcher._candidate_in(searched) == matcher._has_candidate_reference(searched), searched

    check()


def test_rust_prefilter_edge_cases_and_pickling(matchers: dict[str, IllnessMatcher]) -> None:
    import pickle

    matcher = matchers["en"]
    cases = ["asthma", "ASTHMA.", "xasthma", "asthma_", "😀asthma😀", "𝔸 asthma", "asthma\ud800", "\ud800 flu",
             "café flu", "the FLU’s", "Alzheimer’s", "ADHD", "İ adhd", "influence reflux", "", "a" * 10_000 + " flu"]
    expected = [matcher._has_candidate_reference(text.lower()) for text in cases]
    assert [matcher.has_candidate(text) for text in cases] == expected
    assert expected[:3] == [True, True, False] and expected[6:8] == [True, True]
    copy = pickle.loads(pickle.dumps(matcher))  # worker processes where fork is unavailable
    assert copy._fast_prefilter is not None
    assert [copy.has_candidate(text) for text in cases] == expected


@pytest.mark.parametrize("language", ["en", "es"])
def test_candidate_spans_of_joined_lines(language: str, matchers: dict[str, IllnessMatcher]) -> None:
    """One search over a document's lines gives has_candidate of the document and of each line, and spans that hold
    every match find() makes in the line; the line-by-line path (pyahocorasick) gives the same."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    matcher = matchers[language]
    line_by_line = IllnessMatcher(matcher.entries)
    line_by_line._fast_prefilter = None
    pieces = st.one_of(st.sampled_from(_term_spellings(matcher)), st.sampled_from(_NOISE), st.text(max_size=4))
    lines = st.lists(pieces, min_size=1, max_size=8).map(lambda parts: "".join(parts).replace("\n", " ").strip())

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(st.lists(lines.filter(bool), max_size=5))
    def check(document: list[str]) -> None:
        has_candidate, spans = matcher.candidate_spans(document)
        assert has_candidate == matcher.has_candidate("\n".join(document))
        assert [line_spans is not None for line_spans in spans] == [matcher.has_candidate(line) for line in document]
        slow = line_by_line.candidate_spans(document)
        assert slow[0] == has_candidate
        assert [None if s is None else sorted(s) for s in slow[1]] == [None if s is None else sorted(s) for s in spans]
        for line, line_spans in zip(document, spans):
            for match in matcher.find(line):
                assert any(start <= match.start and match.end <= end for start, end in line_spans or [])

    check()


def test_fold_of_long_texts_is_the_table_translation() -> None:
    """fold() of a long text maps code points through an array (and replaces the apostrophes and hyphens beyond
    Latin Extended-A): the same as str.translate with the table, for every character."""
    import random

    from corpus_audit.corpus.matcher import _FOLD_TABLE, _LONG_TEXT, _fold_lowered

    every = "".join(chr(code) for code in range(0x110000) if not 0xD800 <= code < 0xE000)
    assert _fold_lowered(every) == every.translate(_FOLD_TABLE)
    rng = random.Random(0)
    alphabet = every[:0x400] + "’ʼ‘‐‑😀日本\n"
    for length in (_LONG_TEXT - 1, _LONG_TEXT, 3 * _LONG_TEXT):
        text = "".join(rng.choice(alphabet) for _ in range(length))
        assert _fold_lowered(text) == text.translate(_FOLD_TABLE)
    with_surrogate = "á" * _LONG_TEXT + "\ud800"
    assert _fold_lowered(with_surrogate) == "a" * _LONG_TEXT + "\ud800"
