"""Find illness mentions in text with a data-driven lexicon (``lexicons/<lang>/illnesses.csv``).

Matching is case-insensitive (unless an entry says ``case=exact``, or ``case=not_title`` for a term that is
also a name), accent-insensitive, on word boundaries, and prefers the longest term where terms overlap
("anorexia nervosa" beats "anorexia"). Each entry may carry a ``require_context`` and an ``exclude_context``
regular expression, tested on the lower-cased, accent-folded sentence in which the matched term is replaced by
``@@``, and name shared rules (``rules``: exclusions and requirements) defined in ``context_rules.csv`` beside the
lexicon. Each entry has a ``form`` (:data:`FORMS`); the ``paper`` term set (:data:`TERM_SETS`) is the ``diagnosis``
rows alone, the seed paper's list.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, compress, count
from operator import add
from pathlib import Path
from typing import Any

import ahocorasick

from corpus_audit.common.errors import LexiconError
from corpus_audit.common.resources import data_file
from corpus_audit.stigma.quadrants import GROUPS

try:  # a DFA in Rust: the pre-filter scans a corpus four times faster than with pyahocorasick
    import ahocorasick_rs
except ImportError:  # pragma: no cover - a dependency; pyahocorasick gives the same answers, slower
    ahocorasick_rs = None

MARKER = "@@"
# Characters of context kept on each side of a match for the context rules; sentences are short, this
# only bounds the cost on pathological "sentences" (tables, lists without punctuation).
CONTEXT_WINDOW = 200
# Up to this many pre-filter spellings the Rust automaton is a DFA (fastest; 10,000 take about 20 MB).
_DFA_MAX_PATTERNS = 10_000
_REQUIRED_COLUMNS = ("term", "illness", "type")
_CASES = ("any", "exact", "not_title")
#: How a term mentions an illness: ``diagnosis`` (the seed paper's names, the ``paper`` term set), ``generic``
#: (mental illness, the disabled, conditions outside the seed list), ``person`` (addicts), ``adjective`` (depressed),
#: ``slang`` (psycho, loco) or ``treatment`` (psych ward, manicomio). A lexicon without the column is all diagnosis.
FORMS = ("diagnosis", "generic", "person", "adjective", "slang", "treatment")
#: Before a slang mention's word among the forms the stigma score reads (:func:`mention_forms`).
SLANG_WORD = "slang:"
#: ``paper``: the diagnosis rows only (the seed paper's method); ``extended``: every row.
TERM_SETS = ("paper", "extended")
DEFAULT_TERM_SET = "extended"
#: Shared rules (``rule,exclude_context,require_context,note``), read from beside the lexicon that names them.
RULES_FILE_NAME = "context_rules.csv"
_RULE_COLUMNS = ("rule", "exclude_context")


def mention_forms(forms: Sequence[str], surfaces: Sequence[str]) -> tuple[str, ...]:
    """What the stigma score reads of a sentence's mentions, which the mask erases: their ``forms`` (sorted, each
    once) and then, for each slang mention, its word, lower-cased (``slang:mad``; ``surfaces[i]`` is the word of the
    mention of form ``forms[i]``). The mask turns a slur ("retard"), a milder word ("crazy") and a false friend
    ("mad" for angry, not a mention by the labelling guideline) into the same phrase; their words tell them apart."""
    if len(forms) != len(surfaces):
        raise ValueError(f"{len(forms)} forms for {len(surfaces)} mentions")
    words = {SLANG_WORD + surface.lower() for form, surface in zip(forms, surfaces) if form == "slang"}
    return tuple(sorted(set(forms))) + tuple(sorted(words))


def _fold_char(char: str) -> str:
    # One character in, one character out, so that offsets in the folded text are offsets in the original.
    lowered = char.lower()[:1]
    base = unicodedata.normalize("NFD", lowered)[:1]
    if lowered == "ñ":
        return lowered
    return base if base.isascii() and base.isalpha() else lowered


# Precomputed for Latin-1 and Latin Extended-A, the accents that occur in English and Spanish text;
# typographic apostrophes become ASCII so "Alzheimer’s" matches "alzheimer's".
_FOLD_TABLE = {code: _fold_char(chr(code)) for code in range(0xC0, 0x180) if _fold_char(chr(code)) != chr(code)}
_FOLD_TABLE.update({ord("’"): "'", ord("ʼ"): "'", ord("‘"): "'", ord("‐"): "-", ord("‑"): "-"})
# Characters that fold() changes beyond str.lower() (accents, typographic marks, "İ", which lowers to two),
# less "’": the pre-filter holds the curly-apostrophe spelling of each term, and most web text is full of it.
_FOLDED_BEYOND_LOWER = re.compile(
    "[" + re.escape("".join(sorted({chr(code) for code in _FOLD_TABLE if code != ord("’")} | {"İ"}))) + "]")


# Characters of the longest texts that fold() takes to _fold_codes() rather than str.translate.
_LONG_TEXT = 2_000


@cache
def _fold_codes() -> tuple[Any, Any]:
    """numpy (imported here: the command line starts without it) and _FOLD_TABLE as an array over the code points it
    maps in Latin-1 and Latin Extended-A."""
    import numpy

    codes = numpy.arange(0x180, dtype=numpy.uint32)
    for code, char in _FOLD_TABLE.items():
        if code < 0x180:
            codes[code] = ord(char)
    return numpy, codes


_FOLD_REPLACED = [(chr(code), char) for code, char in _FOLD_TABLE.items() if code >= 0x180]


def fold(text: str) -> str:
    """Lower-case and strip accents (except ñ) without changing the length of ``text``."""
    lowered = text.lower()
    if len(lowered) != len(text):  # rare characters such as "İ" lower to two code points
        lowered = "".join(char.lower()[:1] for char in text)
    return lowered if lowered.isascii() else _fold_lowered(lowered)


def _fold_lowered(lowered: str) -> str:
    """``lowered.translate(_FOLD_TABLE)``."""
    if len(lowered) < _LONG_TEXT:
        return lowered.translate(_FOLD_TABLE)
    # a long text through an array (the apostrophes and hyphens beyond it replaced one by one): six times faster than
    # str.translate, which looks each character up
    numpy, table = _fold_codes()
    try:
        codes = numpy.frombuffer(lowered.encode("utf-32-le"), dtype=numpy.uint32)
    except UnicodeEncodeError:  # lone surrogates
        return lowered.translate(_FOLD_TABLE)
    folded = numpy.where(codes < 0x180, table[numpy.minimum(codes, 0x17F)], codes).tobytes().decode("utf-32-le")
    for char, replacement in _FOLD_REPLACED:
        folded = folded.replace(char, replacement)
    return folded


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


@dataclass(frozen=True, slots=True)
class LexiconEntry:
    """One row of an illness lexicon."""

    term: str
    illness: str
    type: str
    exact_case: bool = False
    # "Gerd" is a first name, "GERD" and "gerd" the disease: a capitalised-word spelling is rejected.
    rejects_title_case: bool = False
    rules: tuple[str, ...] = ()
    # Every pattern must match (the row's own and those of its rules).
    require_context: tuple[re.Pattern[str], ...] = ()
    exclude_context: re.Pattern[str] | None = None
    note: str = ""
    form: str = "diagnosis"


@dataclass(frozen=True, slots=True)
class Match:
    """An accepted illness mention: ``text[start:end]`` is the surface form."""

    start: int
    end: int
    surface: str
    entry: LexiconEntry

    @property
    def illness(self) -> str:
        return self.entry.illness

    @property
    def type(self) -> str:
        return self.entry.type

    @property
    def form(self) -> str:
        return self.entry.form


def _compile(pattern: str, where: str) -> re.Pattern[str] | None:
    if not pattern.strip():
        return None
    try:
        # Patterns are folded like the text, so lexicon authors may write accents.
        return re.compile(fold(pattern))
    except re.error as exc:
        raise LexiconError(f"{where}: bad regular expression {pattern!r}: {exc}") from exc


def _any_of(patterns: list[str], where: str) -> re.Pattern[str] | None:
    """One regular expression that matches where any of ``patterns`` (each already valid) matches."""
    return _compile("|".join(f"(?:{pattern})" for pattern in patterns if pattern.strip()), where)


def rules_path_for(lexicon_path: str | Path) -> Path:
    """Where the shared context rules of a lexicon are read from: ``context_rules.csv`` in its folder."""
    return Path(lexicon_path).with_name(RULES_FILE_NAME)


def lexicon_files(lexicon_path: str | Path) -> list[Path]:
    """The files a matcher built from ``lexicon_path`` reads (the lexicon, and its rules file if there is one)."""
    rules_path = rules_path_for(lexicon_path)
    return [Path(lexicon_path), *([rules_path] if rules_path.is_file() else [])]


@dataclass(frozen=True, slots=True)
class ContextRule:
    """A shared rule: the mention is dropped where ``exclude`` matches, or where ``require`` does not."""

    exclude: str = ""
    require: str = ""


def load_context_rules(path: str | Path) -> dict[str, ContextRule]:
    """Read a context-rules CSV (``rule,exclude_context[,require_context],note``): rule name -> rule."""
    rules: dict[str, ContextRule] = {}
    for where, row in _csv_rows(Path(path), _RULE_COLUMNS):
        name = (row.get("rule") or "").strip()
        rule = ContextRule((row.get("exclude_context") or "").strip(), (row.get("require_context") or "").strip())
        if not name or not (rule.exclude or rule.require):
            raise LexiconError(f"{where}: empty rule or exclude_context and require_context")
        if name in rules:
            raise LexiconError(f"{where}: rule {name!r} is defined twice")
        _compile(rule.exclude, where)
        _compile(rule.require, where)
        rules[name] = rule
    return rules


def _csv_rows(path: Path, required: Sequence[str]) -> Iterator[tuple[str, dict[str, str]]]:
    """(``FILE:LINE``, row) of a CSV data file whose header must hold ``required``."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [col for col in required if col not in (reader.fieldnames or [])]
        if missing:
            raise LexiconError(f"{path}: missing column(s) {', '.join(missing)}")
        for line, row in enumerate(reader, start=2):
            yield f"{path}:{line}", row


def load_lexicon(path: str | Path, terms: str = DEFAULT_TERM_SET) -> list[LexiconEntry]:
    """Read an illness lexicon CSV (see ``lexicons/README.md`` for the columns) and the rules it names; with
    ``terms="paper"`` only its ``diagnosis`` rows."""
    if terms not in TERM_SETS:
        raise LexiconError(f"term set must be one of {', '.join(TERM_SETS)}, not {terms!r}")
    path = Path(path)
    rules_path = rules_path_for(path)
    rules: dict[str, ContextRule] | None = None  # read on the first entry that names a rule
    entries: list[LexiconEntry] = []
    for where, row in _csv_rows(path, _REQUIRED_COLUMNS):
        term = (row.get("term") or "").strip()
        illness = (row.get("illness") or "").strip()
        kind = (row.get("type") or "").strip().lower()
        case = (row.get("case") or "any").strip().lower() or "any"
        form = (row.get("form") or "diagnosis").strip().lower() or "diagnosis"
        rule_names = tuple(name.strip() for name in (row.get("rules") or "").split(";") if name.strip())
        if not term or not illness:
            raise LexiconError(f"{where}: empty term or illness")
        if kind not in GROUPS:
            raise LexiconError(f"{where}: type must be mental or physical, not {kind!r}")
        if case not in _CASES:
            raise LexiconError(f"{where}: case must be one of {', '.join(_CASES)}, not {case!r}")
        if form not in FORMS:
            raise LexiconError(f"{where}: form must be one of {', '.join(FORMS)}, not {form!r}")
        if rule_names and rules is None:
            if not rules_path.is_file():
                raise LexiconError(f"{where}: names rule(s) {', '.join(rule_names)} but {rules_path} does not exist "
                                  "(copy the bundled lexicons/<lang>/context_rules.csv beside the lexicon)")
            rules = load_context_rules(rules_path)
        unknown = [name for name in rule_names if name not in (rules or {})]
        if unknown:
            raise LexiconError(f"{where}: unknown rule(s) {', '.join(unknown)} (not in {rules_path})")
        if terms == "paper" and form != "diagnosis":
            continue
        own_exclude = row.get("exclude_context") or ""
        _compile(own_exclude, where)  # reports a bad pattern of this row as such
        named = [(rules or {})[name] for name in rule_names]
        requires = [row.get("require_context") or "", *(rule.require for rule in named)]
        entries.append(
            LexiconEntry(
                term=term,
                illness=illness,
                type=kind,
                exact_case=case == "exact",
                rejects_title_case=case == "not_title",
                rules=rule_names,
                require_context=tuple(pattern for pattern in (_compile(text, where) for text in requires) if pattern),
                exclude_context=_any_of([own_exclude, *(rule.exclude for rule in named)], where),
                note=(row.get("note") or "").strip(),
                form=form,
            )
        )
    if not entries:
        raise LexiconError(f"{path}: no entries")
    return entries


def default_lexicon_path(lang: str) -> Path:
    """The bundled illness lexicon for ``lang`` ("en" or "es")."""
    return data_file("lexicons", lang, "illnesses.csv")


def _bounded(text: str, start: int, end: int) -> bool:
    return (start == 0 or not _is_word_char(text[start - 1])) and (end == len(text) or not _is_word_char(text[end]))


class IllnessMatcher:
    """Aho-Corasick search over a lexicon, with word-boundary, case and context checks."""

    def __init__(self, entries: Iterable[LexiconEntry]) -> None:
        self.entries = list(entries)
        by_key: dict[str, list[LexiconEntry]] = {}
        for entry in self.entries:
            by_key.setdefault(fold(entry.term), []).append(entry)
        self._automaton = ahocorasick.Automaton()
        for key, group in by_key.items():
            self._automaton.add_word(key, (key, tuple(group)))
        self._automaton.make_automaton()
        # The pre-filter runs on text that is only lower-cased (folding every document costs more than the
        # whole search), so it also holds the accented and curly-apostrophe spellings of each term.
        self._prefilter = ahocorasick.Automaton()
        for entry in self.entries:
            for variant in {fold(entry.term), entry.term.lower(), entry.term.lower().replace("'", "’")}:
                self._prefilter.add_word(variant, len(variant))
        self._prefilter.make_automaton()
        self._fast_prefilter = _rust_automaton(list(self._prefilter.keys()))

    def __getstate__(self) -> dict[str, object]:
        # Pickled for worker processes where fork is unavailable; the Rust automaton does not pickle.
        return {key: value for key, value in self.__dict__.items() if key != "_fast_prefilter"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._fast_prefilter = _rust_automaton(list(self._prefilter.keys()))

    @classmethod
    def from_csv(cls, path: str | Path, terms: str = DEFAULT_TERM_SET) -> IllnessMatcher:
        return cls(load_lexicon(path, terms))

    @classmethod
    def for_language(cls, lang: str, terms: str = DEFAULT_TERM_SET) -> IllnessMatcher:
        return cls.from_csv(default_lexicon_path(lang), terms)

    def has_candidate(self, text: str) -> bool:
        """Cheap test: does any term occur on word boundaries? False means ``find`` returns nothing."""
        if self._candidate_in(text.lower()):
            return True
        # find() searches the folded text: a term written with an accent its lexicon spelling lacks ("ÀSTHMA",
        # "diabétes") or a typographic hyphen is only seen there. Most texts have none of those characters.
        return not text.isascii() and _FOLDED_BEYOND_LOWER.search(text) is not None and self._candidate_in(fold(text))

    def _candidate_in(self, lowered: str) -> bool:
        """Whether a pre-filter spelling occurs on word boundaries in ``lowered`` (lower-cased or folded text)."""
        if self._fast_prefilter is not None:
            try:
                # Every occurrence of every spelling, as code point offsets: the same set pyahocorasick finds.
                found = self._fast_prefilter.find_matches_as_indexes(lowered, overlapping=True)
            except UnicodeEncodeError:  # lone surrogates (JSON "\ud800") do not convert to Rust's UTF-8
                pass
            else:
                return any(_bounded(lowered, start, end) for _, start, end in found)
        return self._has_candidate_reference(lowered)

    def candidate_spans(self, lines: list[str]) -> tuple[bool, list[list[tuple[int, int]] | None]]:
        """(:meth:`has_candidate` of ``lines`` joined by "\\n", and for each line: None where :meth:`has_candidate`
        rejects the line, else (start, end) spans of the line such that :meth:`find` finds nothing in a part of it
        that holds none of them whole: every occurrence of a pre-filter spelling in the folded line).

        The lines joined are searched at once (folded too, where some line holds a character that folds beyond
        lower case) instead of one line at a time: the "\\n" between them is no word character, like their
        ends, and lower case and folding keep lengths, except for "İ", which takes the line-by-line path, as does
        a text that the Rust automaton cannot take (lone surrogates) or its absence."""
        joined = "\n".join(lines)
        lowered = joined.lower()
        if self._fast_prefilter is not None and len(lowered) == len(joined):
            try:
                return self._joined_candidate_spans(lines, joined, lowered)
            except UnicodeEncodeError:
                pass
        spans = [self._spans(fold(line)) if self.has_candidate(line) else None for line in lines]
        return self.has_candidate(joined), spans

    def _joined_candidate_spans(self, lines: list[str], joined: str, lowered: str
                                ) -> tuple[bool, list[list[tuple[int, int]] | None]]:
        """:meth:`candidate_spans` from the lines ``joined`` and ``lowered`` (same length)."""
        search = self._fast_prefilter.find_matches_as_indexes  # type: ignore[union-attr]
        found = search(lowered, overlapping=True)
        if not found and (lowered.isascii() or _FOLDED_BEYOND_LOWER.search(joined) is None):
            return False, [None] * len(lines)  # and no line is folded either (has_candidate's second look)
        starts = list(map(add, accumulate(map(len, lines), initial=0), count()))  # each line's offset
        numbers = [bisect_right(starts, start) - 1 for _, start, _ in found]  # each occurrence's line
        spans: list[list[tuple[int, int]] | None] = [None] * len(lines)
        for (_, start, end), number in zip(found, numbers):
            if spans[number] is None and _bounded(lowered, start, end):
                spans[number] = []
        if lowered.isascii():  # fold() is lower()
            for (_, start, end), number in zip(found, numbers):
                if (line_spans := spans[number]) is not None:
                    line_spans.append((start - starts[number], end - starts[number]))
            return any(line_spans is not None for line_spans in spans), spans
        has_candidate = any(line_spans is not None for line_spans in spans)
        if _FOLDED_BEYOND_LOWER.search(joined) is None:  # folding changes apostrophes and hyphens at most
            return has_candidate, [None if line_spans is None else self._fast_spans(fold(line))
                                   for line, line_spans in zip(lines, spans)]
        # has_candidate's second look, at the folded text: of the document, and of each line that holds a character
        # folded beyond lower case
        folded = _fold_lowered(lowered)
        found = search(folded, overlapping=True)
        numbers = [bisect_right(starts, start) - 1 for _, start, _ in found]
        for (_, start, end), number in zip(found, numbers):
            if _bounded(folded, start, end):
                has_candidate = True
                if spans[number] is None and _FOLDED_BEYOND_LOWER.search(lines[number]) is not None:
                    spans[number] = []
        for (_, start, end), number in zip(found, numbers):
            if (line_spans := spans[number]) is not None:
                line_spans.append((start - starts[number], end - starts[number]))
        return has_candidate, spans

    def _fast_spans(self, folded: str) -> list[tuple[int, int]]:
        """(start, end) of every occurrence of a pre-filter spelling in ``folded``, by the Rust automaton."""
        return [(start, end) for _, start, end in
                self._fast_prefilter.find_matches_as_indexes(folded, overlapping=True)]  # type: ignore[union-attr]

    def _spans(self, folded: str) -> list[tuple[int, int]]:
        """(start, end) of every occurrence of a pre-filter spelling in ``folded``, by pyahocorasick."""
        return [(end - length + 1, end + 1) for end, length in self._prefilter.iter(folded)]

    def _has_candidate_reference(self, lowered: str) -> bool:
        """:meth:`has_candidate` of lower-cased text with pyahocorasick (the tests compare the two)."""
        for end, length in self._prefilter.iter(lowered):
            if _bounded(lowered, end - length + 1, end + 1):
                return True
        return False

    def find(self, text: str) -> list[Match]:
        """All accepted mentions in ``text`` (a sentence), left to right, longest term first on overlaps."""
        folded = fold(text)
        candidates: list[tuple[int, int, tuple[LexiconEntry, ...]]] = []
        for end_index, (key, group) in self._automaton.iter(folded):
            start, end = end_index - len(key) + 1, end_index + 1
            if _bounded(folded, start, end):
                candidates.append((start, end, group))
        # Longest-leftmost: an overlapped shorter term ("depression" inside "manic depression") is dropped
        # even if the longer one is later rejected by its context rule, so rules never resurrect sub-terms.
        candidates.sort(key=lambda c: (c[0], -(c[1] - c[0])))
        matches: list[Match] = []
        covered_until = -1
        for start, end, group in candidates:
            if start < covered_until:
                continue
            covered_until = end
            entry = self._accept(text, folded, start, end, group)
            if entry is not None:
                matches.append(Match(start, end, text[start:end], entry))
        return matches

    @staticmethod
    def _accept(
        text: str, folded: str, start: int, end: int, group: tuple[LexiconEntry, ...]
    ) -> LexiconEntry | None:
        context = None
        for entry in group:
            if entry.exact_case and text[start:end] != entry.term:
                continue
            if entry.rejects_title_case and text[start:end].istitle():
                continue
            if entry.require_context or entry.exclude_context:
                if context is None:
                    left = folded[max(0, start - CONTEXT_WINDOW) : start]
                    context = left + MARKER + folded[end : end + CONTEXT_WINDOW]
                if not all(pattern.search(context) for pattern in entry.require_context):
                    continue
                if entry.exclude_context and entry.exclude_context.search(context):
                    continue
            return entry
        return None


def _rust_automaton(patterns: list[str]) -> object | None:
    """All-occurrences automaton over ``patterns`` with ahocorasick_rs, or None without it."""
    if ahocorasick_rs is None or not patterns:
        return None
    fast = ahocorasick_rs.Implementation.DFA if len(patterns) <= _DFA_MAX_PATTERNS else None
    return ahocorasick_rs.AhoCorasick(patterns, implementation=fast)
