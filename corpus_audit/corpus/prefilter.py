"""A pre-filter over raw JSON Lines bytes, in front of the exact path: one compiled, caseless multi-pattern scan
(Hyperscan) per batch of lines, so that only the lines that may mention a lexicon term are parsed into documents,
segmented and sent to a worker process.

It never drops a line whose document the exact path would keep (:func:`~corpus_audit.corpus.filter.iter_kept_sentences`
drops every document that :meth:`IllnessMatcher.has_candidate` rejects, and the matcher finds terms on word boundaries
of the folded text). A line is let through when

- its bytes hold a term on word boundaries, each letter and digit as itself (any case), each other character (an
  apostrophe, a hyphen, a space, ``ñ``) in any spelling that folds to it, as UTF-8 or as a JSON escape. A JSON escape
  before the term (``\\n``, ``\\u201c``) counts as a boundary, although its last byte is a letter;
- or it is not a plain document: valid JSON (orjson) holding an object whose text field is a string, not nested too
  deep. The exact reader then counts the line's problem at its place, so that the filter's counts stay those of the
  exact path;
- or it holds a character that may hide a term's letter or digit (an accented letter, the Kelvin sign, any JSON
  escape of one of those or of an ASCII letter or digit) and ``has_candidate`` accepts its text.

Lines that are let through go on as :class:`~corpus_audit.corpus.readers.LineBatch` es of consecutive lines, read by
the exact reader; the others count as documents. Without Hyperscan or orjson :func:`line_prefilter` gives None and
every line takes the exact path.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import cache

from corpus_audit.corpus.matcher import IllnessMatcher, fold
from corpus_audit.corpus.readers import LineBatch
from corpus_audit.corpus.readers.records import too_deep

try:  # Hyperscan (BSD-3) through the MIT-licensed bindings
    import hyperscan
except ImportError:  # pragma: no cover - a dependency; the fallback is tested by hiding it
    hyperscan = None
try:
    import orjson
except ImportError:  # pragma: no cover - a dependency
    orjson = None

#: JSON escapes that stand for a character outside every word: before a term they are a word boundary.
_BOUNDARY_ESCAPES = rb"\\[bfnrt]|\\u[0-9a-f]{4}"
_SHORT_ESCAPES = {"/": rb"\\/", '"': rb'\\"', "\\": rb"\\\\"}
#: Pattern ids at and above this one are characters that may hide a term's letter or digit.
_HIDING = 1 << 20


@cache
def _spellings() -> dict[str, tuple[str, ...]]:
    """Every character of the Basic Multilingual Plane by what :func:`fold` makes of it (no character of a higher
    plane folds into the BMP: checked by the tests)."""
    table: dict[str, list[str]] = {}
    for code in range(0x10000):
        if not 0xD800 <= code < 0xE000:
            char = chr(code)
            table.setdefault(fold(char), []).append(char)
    return {folded: tuple(chars) for folded, chars in table.items()}


def _is_ascii_word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _byte_literal(text: str) -> bytes:
    return "".join(f"\\x{byte:02x}" for byte in text.encode("utf-8")).encode()


def _escape(char: str) -> bytes:
    return b"\\\\u" + f"{ord(char):04x}".encode()


def _character(folded: str) -> bytes:
    """The pattern of one character of a folded term: a letter or digit as itself (the scan is caseless; its other
    spellings are hiding characters), anything else in every spelling, as UTF-8 and as JSON escapes."""
    if _is_ascii_word(folded):
        return folded.encode()
    forms = set()
    for char in _spellings().get(folded, (folded,)):
        forms |= {_byte_literal(char), _escape(char)}
        if char in _SHORT_ESCAPES:
            forms.add(_SHORT_ESCAPES[char])
    return b"(?:" + b"|".join(sorted(forms)) + b")"


def term_pattern(term: str) -> bytes:
    """The pattern of a folded lexicon term over raw JSON bytes, used caselessly: the term on word boundaries where
    its first or last character is a letter or digit (a boundary escape counts before it)."""
    start = b"(?:\\b|" + _BOUNDARY_ESCAPES + b")" if _is_ascii_word(term[0]) else b""
    end = b"\\b" if _is_ascii_word(term[-1]) else b""
    return start + b"".join(_character(char) for char in term) + end


def hiding_patterns(terms: list[str]) -> list[bytes]:
    """The spellings that may hide a letter or digit of ``terms`` from :func:`term_pattern`: every other character
    that folds to it, in UTF-8, and the JSON escape of any of its spellings."""
    letters = {char for term in terms for char in term if _is_ascii_word(char)}
    patterns = set()
    for letter in letters:
        for char in _spellings().get(letter, (letter,)):
            patterns.add(_escape(char))
            if not char.isascii():
                patterns.add(_byte_literal(char))
    return sorted(patterns)


@dataclass
class PrefilteredBatch:
    """What the pre-filter leaves of a :class:`LineBatch`: the runs of consecutive lines let through (batches of
    their own, without skips) and how many of the other lines are documents."""

    runs: list[LineBatch]
    plain_documents: int


class LinePrefilter:
    """The compiled pre-filter of a matcher's lexicon (module docstring); :func:`line_prefilter` builds one."""

    def __init__(self, matcher: IllnessMatcher, text_field: str) -> None:
        terms = sorted({fold(entry.term) for entry in matcher.entries if entry.term})
        hiding = hiding_patterns(terms)
        self.matcher = matcher
        self.text_field = text_field
        self._database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._database.compile(
            expressions=[term_pattern(term) for term in terms] + hiding,
            ids=list(range(len(terms))) + [_HIDING + index for index in range(len(hiding))],
            elements=len(terms) + len(hiding),
            flags=[hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH] * (len(terms) + len(hiding)))
        self._scratch = hyperscan.Scratch(self._database)

    def verdict(self, raw: bytes) -> tuple[bool, bool]:
        """(whether ``raw`` holds a term, whether it holds a hiding character)."""
        found = [False, False]

        def on_match(pattern: int, _start: int, _end: int, _flags: int, _context: object) -> None:
            found[pattern >= _HIDING] = True

        self._database.scan(raw, match_event_handler=on_match, scratch=self._scratch)
        return found[0], found[1]

    def keeps(self, raw: bytes) -> bool | None:
        """Whether the exact path must read the line ``raw``: True or False, or None for a blank line (no document)."""
        if not raw.strip():
            return None
        term, hiding = self.verdict(raw)
        if term:
            return True
        try:
            record = orjson.loads(raw)  # what orjson accepts, json accepts as the same object and strings
        except orjson.JSONDecodeError:
            return True
        if not isinstance(record, dict) or too_deep(record, raw.count(b"[") + raw.count(b"{")):
            return True
        text = record.get(self.text_field)
        return not isinstance(text, str) or (hiding and self.matcher.has_candidate(text))

    def split(self, batch: LineBatch) -> PrefilteredBatch:
        """The lines of ``batch`` that the exact path must read, as runs of consecutive lines, and the number of
        the other lines that are documents."""
        runs: list[LineBatch] = []
        run: list[bytes] = []
        run_first = batch.first_line
        plain = 0
        for number, raw in enumerate(io.BytesIO(batch.data), start=batch.first_line):  # lines as the reader splits
            keep = self.keeps(raw)
            if keep:
                if not run:
                    run_first = number
                run.append(raw)
                continue
            plain += keep is False
            if run:
                runs.append(LineBatch(batch.source, run_first, b"".join(run)))
                run = []
        if run:
            runs.append(LineBatch(batch.source, run_first, b"".join(run)))
        return PrefilteredBatch(runs, plain)


def line_prefilter(matcher: IllnessMatcher, text_field: str) -> LinePrefilter | None:
    """The pre-filter of ``matcher``'s lexicon for records whose text is ``text_field``, or None where Hyperscan or
    orjson is not installed (every line then takes the exact path)."""
    if hyperscan is None or orjson is None:
        return None
    return LinePrefilter(matcher, text_field)
