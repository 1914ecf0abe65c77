"""The raw-line pre-filter: it never drops a line whose document the exact path keeps (any case, accents, JSON
escapes, boundaries made by escapes), it lets every bad record through to the exact reader, and a filter with it
writes the rows and counts of the exact path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus_audit.corpus import prefilter
from corpus_audit.corpus.documents import Document
from corpus_audit.corpus.filter import CorpusSpec, iter_kept_sentences
from corpus_audit.corpus.kept import FilterSummary
from corpus_audit.corpus.matcher import IllnessMatcher, fold
from corpus_audit.corpus.segment import Segmenter
from corpus_audit.engines import filter_corpus

DATA = Path(__file__).resolve().parents[1] / "data"
MATCHERS = {lang: IllnessMatcher.for_language(lang) for lang in ("en", "es")}
PREFILTERS = {lang: prefilter.line_prefilter(matcher, "text") for lang, matcher in MATCHERS.items()}
SEGMENTERS = {lang: Segmenter(lang) for lang in MATCHERS}
TERMS = {lang: sorted({entry.term for entry in matcher.entries}) for lang, matcher in MATCHERS.items()}
GLUE = [" ", "  ", "\n", "\t", ".", ", ", "x", "9", "_", "é", "É", "ñ", "“", "’", "-", "/", "\u2028", "\xa0", "😀",
        "\\", '"', "K", "\u212a", "İ", "(", "a.", "?"]


def exact_keeps(text: str, lang: str) -> bool:
    """Whether the exact path keeps a sentence of a document with ``text``."""
    kept = iter_kept_sentences([Document("d", text, {}, "s", 1)], MATCHERS[lang], SEGMENTERS[lang],
                               FilterSummary(lang=lang))
    return any(True for _ in kept)


def json_line(text: str, ascii_only: bool, escaped: set[int]) -> bytes:
    """``{"text": text}`` with the characters at ``escaped`` written as \\uXXXX escapes (any writer may)."""
    body = "".join(f"\\u{ord(char):04x}" if index in escaped else json.dumps(char, ensure_ascii=ascii_only)[1:-1]
                   for index, char in enumerate(text))
    return ('{"id": 1, "text": "' + body + '"}\n').encode("utf-8", "surrogatepass")


def spelled(term: str, draw: st.DrawFn) -> str:
    """``term`` in any case, some letters with an accent, apostrophes and hyphens in any typographic form."""
    out = []
    for char in term:
        choices = [char, char.upper(), char.lower()]
        choices += [spelling for spelling in prefilter._spellings().get(fold(char), ()) if not spelling.isascii()][:3]
        out.append(draw(st.sampled_from(choices)))
    return "".join(out)


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, str, bytes]:
    lang = draw(st.sampled_from(["en", "es"]))
    pieces = draw(st.lists(st.one_of(st.sampled_from(GLUE), st.sampled_from(TERMS[lang]).map(lambda t: spelled(t, draw))),
                           min_size=1, max_size=12))
    text = "".join(pieces)
    escaped = set(draw(st.lists(st.integers(0, len(text) - 1), max_size=4))) if text else set()
    return lang, text, json_line(text, draw(st.booleans()), escaped)


@given(documents())
def test_the_prefilter_keeps_every_line_the_exact_path_keeps(document):
    lang, text, raw = document
    if exact_keeps(json.loads(raw)["text"], lang):
        assert PREFILTERS[lang].keeps(raw), raw


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_matching_sets_in_every_encoding(lang):
    """Every sentence of the matching test set that the exact path keeps, plain, after an escape, escaped, in capitals."""
    import csv

    with open(DATA / f"matching_{lang}.csv", encoding="utf-8") as handle:
        sentences = [row["sentence"] for row in csv.DictReader(handle)]
    checked = 0
    for sentence in sentences:
        for text in (sentence, "\n" + sentence, sentence.upper(), "\u201c" + sentence + "\u201d"):
            if exact_keeps(text, lang):
                checked += 1
                for raw in (json_line(text, True, set()), json_line(text, False, set()),
                            json_line(text, False, set(range(0, len(text), 3)))):
                    assert PREFILTERS[lang].keeps(raw), raw
    assert checked > 150


def test_lines_without_a_term_are_left_out_and_bad_records_let_through():
    keeps = PREFILTERS["en"].keeps
    assert keeps(b'{"id": 1, "text": "Nothing to see here, an address and a scold."}\n') is False
    assert keeps(b"   \n") is None  # no document
    for bad in (b'{"id": 1, "text": "truncated\n', b'{"id": 1}\n', b'{"text": 3}\n', b'[1, 2]\n', b'{"text": "caf\xe9"}\n',
                b'{"text": "nan", "v": NaN}\n', b'{"text": "x", "deep": ' + b"[" * 300 + b"]" * 300 + b"}\n"):
        assert keeps(bad), bad


def test_no_character_above_the_basic_multilingual_plane_folds_into_it():
    assert not [code for code in range(0x10000, 0x110000) if ord(fold(chr(code))[:1] or "\U00010000") < 0x10000]


@pytest.mark.parametrize("hide", [False, True])
def test_the_filter_writes_the_exact_rows_and_counts(tmp_path, monkeypatch, hide):
    """Two workers behind the pre-filter (or, with Hyperscan hidden, without it) and one process without it agree
    on every row and count, bad records included."""
    import pandas as pd

    if hide:
        monkeypatch.setattr(prefilter, "hyperscan", None)
        assert prefilter.line_prefilter(MATCHERS["en"], "text") is None
    tricky = tmp_path / "tricky.jsonl"
    tricky.write_bytes(b"".join([
        json_line("I have OCD.\nReally.", True, set()), b'{"id": "bad", "text": "asthma"\n', b"\n",
        json_line("caf\u00e9 talk, no illness", False, set()), b'{"text": "caf\xe9 asthma"}\n', b'{"id": "x"}\n',
        json_line("DIAB\u00c9TES type 2. Fin", True, set()), json_line("an address", True, {3}),
        json_line("x\u2019s ADHD", False, {4}), b'{"text": "flu. Cold.", "v": NaN}\n']))
    inputs = (str(tricky), str(DATA / "corpus_reddit_sample_en.jsonl.gz"))
    results = {}
    for workers in (1, 2):
        output = tmp_path / f"out{workers}.parquet"
        summary = filter_corpus(CorpusSpec(inputs), output, "en", workers=workers).to_dict()
        results[workers] = (pd.read_parquet(output), {key: value for key, value in summary.items()
                                                      if key not in ("seconds", "megabytes_per_second", "output")})
    assert results[1][0].equals(results[2][0]) and len(results[1][0]) > 30
    assert results[1][1] == results[2][1] and results[1][1]["records_skipped"] == 2
    assert results[1][1]["records_repaired"] == 1  # the invalid byte: kept, replaced, counted


def test_filter_prefiltered_is_filter_unit(tmp_path):
    """The Ray engine's worker-side pre-filter: the kept sentences and counts of the exact path on the same batch."""
    import gzip

    from corpus_audit.corpus.documents import ReaderOptions
    from corpus_audit.corpus.filter import filter_prefiltered, filter_unit, init_filter_worker
    from corpus_audit.corpus.readers import LineBatch

    data = gzip.decompress((Path(__file__).parents[1] / "data" / "corpus_reddit_sample_en.jsonl.gz").read_bytes())
    data += b'not json\n{"text": 3}\n\n{"id": "x", "text": "Ansiedad? no: anxiety\\u2019s here"}\n'
    matcher = IllnessMatcher.for_language("en", "extended")
    init_filter_worker(ReaderOptions(), matcher, Segmenter("en"), "en", ())
    batch = LineBatch("reddit.jsonl", 1, data)
    exact_kept, exact_counted = filter_unit(batch)
    kept, counted = filter_prefiltered(batch, prefilter.line_prefilter(matcher, "text"))
    assert kept == exact_kept and len(kept) > 100
    assert counted.to_dict() == exact_counted.to_dict()
    assert counted.documents_processed > counted.documents_with_candidates


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("terms", ["paper", "extended"])
def test_terms_grouped_into_patterns_mark_the_lines_of_a_pattern_per_term(lang, terms):
    """Terms that share a first character share a pattern (faster to compile): the lines they mark are those that a
    pattern per term marks, on the bundled samples and on lines of term spellings and glue."""
    import gzip

    from hypothesis import settings

    matcher = IllnessMatcher.for_language(lang, terms)
    folded = sorted({fold(entry.term) for entry in matcher.entries if entry.term})
    grouped = prefilter._compiled(prefilter.term_patterns(folded))
    one_each = prefilter._compiled([prefilter.term_patterns([term])[0] for term in folded])
    assert len(prefilter.term_patterns(folded)) < len(folded) / 3

    def marked(database, data: bytes) -> set[int]:
        starts = [0]
        for line in data.split(b"\n"):
            starts.append(starts[-1] + len(line) + 1)
        lines: set[int] = set()
        database.scan(data, match_event_handler=lambda _id, _from, end, _flags, _context:
                      lines.add(prefilter.bisect_right(starts, end - 1) - 1))
        return lines

    samples = b"".join(gzip.open(path).read() for path in sorted(DATA.glob(f"corpus_*_{lang}.jsonl.gz")))
    assert marked(grouped, samples) == marked(one_each, samples) != set()

    @settings(max_examples=200, deadline=None, derandomize=True)
    @given(st.lists(st.lists(st.sampled_from(TERMS[lang] + GLUE), max_size=8).map("".join), max_size=6))
    def check(lines: list[str]) -> None:
        data = b"\n".join(json_line(line, False, set()) for line in lines)
        assert marked(grouped, data) == marked(one_each, data)

    check()
