"""The tokenizer of a blank spaCy pipeline (``spacy.blank(lang)``), run from its exported rules without importing
spaCy: a filter worker that splits sentences then starts in milliseconds instead of a second.

spaCy's rule-based tokenizer is data (prefix, suffix and infix patterns, a URL pattern, special cases) and a short
algorithm (``spacy/tokenizer.pyx``, MIT licence), reproduced here step for step: split at whitespace, then per span
the special cases, the prefixes and suffixes (``_split_affixes``), the URL pattern and the infixes
(``_attach_tokens``), then the special cases that affix splitting broke up (``_apply_special_cases``). The rules and the
sentencizer's punctuation are exported from the installed spaCy into ``spacy_rules/<lang>.json``
(``python scripts/export_spacy_rules.py``); they are used only while the installed spaCy is the version they came
from (:func:`blank_tokenizer` gives None otherwise, and the segmenter asks spaCy itself). The tests check that the
shipped files equal what the installed spaCy exports and that the tokens equal spaCy's on the bundled samples' words
and texts, on generated text and on every special case in punctuation (when written, also on the 306,579 distinct
words of the shared English and Spanish corpora).
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

RULES_DIR = Path(__file__).resolve().with_name("spacy_rules")
# spaCy's whitespace: str.isspace, which \s matches.
_SPACES = re.compile(r"\s+")
#: The version of this file's format, recorded in each rules file.
RULES_FORMAT = 1


def rules_path(lang: str) -> Path:
    """Where the exported rules of ``lang``'s blank pipeline are shipped."""
    return RULES_DIR / f"{lang}.json"


def installed_spacy_version() -> str | None:
    """The installed spaCy's version (from its metadata: spaCy is not imported), or None without spaCy."""
    try:
        return metadata.version("spacy")
    except metadata.PackageNotFoundError:
        return None


def export_rules(lang: str) -> dict[str, Any]:
    """The rules of the installed spaCy's blank ``lang`` pipeline and its sentencizer (imports spaCy)."""
    import spacy
    from spacy.attrs import ORTH

    nlp = spacy.blank(lang)
    tokenizer = nlp.tokenizer
    sentencizer = nlp.add_pipe("sentencizer")
    if not tokenizer.faster_heuristics:  # the default; the other mode puts every special case in the matcher
        raise ValueError(f"spaCy's {lang!r} tokenizer does not use faster_heuristics")

    def pattern(search: Any) -> str | None:
        if search is None:
            return None
        compiled = search.__self__
        if not isinstance(compiled, re.Pattern) or compiled.flags & ~re.UNICODE:
            raise ValueError(f"spaCy's {lang!r} tokenizer has a pattern this module cannot export: {compiled!r}")
        return compiled.pattern

    return {
        "format": RULES_FORMAT,
        "spacy": spacy.__version__,
        "lang": lang,
        "prefix": pattern(tokenizer.prefix_search),
        "suffix": pattern(tokenizer.suffix_search),
        "infix": pattern(tokenizer.infix_finditer),
        "token_match": pattern(tokenizer.token_match),
        "url_match": pattern(tokenizer.url_match),
        # each token of a special case by its attribute id or its name
        "special_cases": {text: [token[ORTH] if ORTH in token else token["ORTH"] for token in tokens]
                          for text, tokens in sorted(tokenizer.rules.items())},
        "punct_chars": sorted(sentencizer.punct_chars),
    }


class BlankTokenizer:
    """spaCy's tokenizer from exported rules (:func:`export_rules`); :meth:`tokens` gives what
    ``spacy.blank(lang).tokenizer`` gives, as (offset, text) pairs."""

    def __init__(self, rules: dict[str, Any]) -> None:
        self.punct_chars = frozenset(rules["punct_chars"])
        self.specials: dict[str, tuple[str, ...]] = {text: tuple(orths)
                                                     for text, orths in rules["special_cases"].items()}
        never = re.compile("a^")  # spaCy's stand-in for a missing pattern
        self._prefix = re.compile(rules["prefix"]).search if rules["prefix"] else never.search
        self._suffix = re.compile(rules["suffix"]).search if rules["suffix"] else never.search
        self._infixes = re.compile(rules["infix"]).finditer if rules["infix"] else never.finditer
        self._token_match = re.compile(rules["token_match"]).match if rules["token_match"] else None
        self._url_match = re.compile(rules["url_match"]).match if rules["url_match"] else None
        # The special-case matcher: each special case that affix splitting would cut (or that holds a space), as the
        # tokens the splitting gives without special cases (spaCy's _special_matcher, a PhraseMatcher on ORTH).
        self._split_specials: set[tuple[str, ...]] = set()
        for text in self.specials:
            if self._prefix_length(text) or self._suffix_length(text) or any(self._infixes(text)) or " " in text:
                pieces = tuple(token for _, token in self._tokenize(text, False))
                if pieces:
                    self._split_specials.add(pieces)
        self._longest_split = max(map(len, self._split_specials), default=0)
        self._first_split_tokens = {pieces[0] for pieces in self._split_specials}

    def _prefix_length(self, text: str) -> int:
        match = self._prefix(text)
        return match.end() - match.start() if match is not None else 0

    def _suffix_length(self, text: str) -> int:
        match = self._suffix(text)
        return match.end() - match.start() if match is not None else 0

    def tokens(self, text: str) -> list[tuple[int, str]]:
        """(offset, text) of each token of ``text``, as spaCy's tokenizer makes them (a run of whitespace other
        than one ' ' after a word is a token)."""
        return self._apply_special_cases(text, self._tokenize(text, True))

    def _tokenize(self, text: str, with_specials: bool) -> list[tuple[int, str]]:
        """spaCy's ``_tokenize_affixes``: the spans between whitespace changes, each split by :meth:`_span`; after a
        span, one ' ' belongs to it (no token), any other whitespace is a span of its own."""
        tokens: list[tuple[int, str]] = []
        start = 0
        for space in _SPACES.finditer(text):
            if start < space.start():
                self._span(text[start:space.start()], start, with_specials, tokens)
                start = space.start() + (text[space.start()] == " ")  # a word's one ' '
            if start < space.end():
                self._span(text[start:space.end()], start, with_specials, tokens)
            start = space.end()
        if start < len(text):
            self._span(text[start:], start, with_specials, tokens)
        return tokens

    def _span(self, span: str, offset: int, with_specials: bool, tokens: list[tuple[int, str]]) -> None:
        """Append the tokens of one span (no whitespace change inside) from ``offset`` on."""
        special = self.specials.get(span) if with_specials else None
        if special is not None:
            pieces: list[str] = list(special)
        else:
            prefixes: list[str] = []
            suffixes: list[str] = []
            rest = self._split_affixes(span, prefixes, suffixes, with_specials)
            pieces = prefixes + self._attach(rest, with_specials) + suffixes[::-1]
        for piece in pieces:
            tokens.append((offset, piece))
            offset += len(piece)

    def _split_affixes(self, text: str, prefixes: list[str], suffixes: list[str], with_specials: bool) -> str:
        """spaCy's ``_split_affixes``: strip prefixes and suffixes until none is left or a special case remains."""
        specials = self.specials if with_specials else {}
        last_size = 0
        while text and len(text) != last_size:
            if self._token_match and self._token_match(text):
                break
            if text in specials:
                break
            last_size = len(text)
            pre_len = self._prefix_length(text)
            if pre_len:
                prefix, minus_pre = text[:pre_len], text[pre_len:]
                if minus_pre and minus_pre in specials:
                    prefixes.append(prefix)
                    return minus_pre
            suf_len = self._suffix_length(text[pre_len:])
            if suf_len:
                suffix, minus_suf = text[-suf_len:], text[:-suf_len]
                if minus_suf and minus_suf in specials:
                    suffixes.append(suffix)
                    return minus_suf
            if pre_len and suf_len and pre_len + suf_len <= len(text):
                prefixes.append(prefix)
                suffixes.append(suffix)
                text = text[pre_len:-suf_len]
            elif pre_len:
                prefixes.append(prefix)
                text = minus_pre
            elif suf_len:
                suffixes.append(suffix)
                text = minus_suf
        return text

    def _attach(self, text: str, with_specials: bool) -> list[str]:
        """spaCy's ``_attach_tokens`` for what affix splitting left: a special case, a URL, or infix splitting."""
        if not text:
            return []
        if with_specials and text in self.specials:
            return list(self.specials[text])
        if (self._token_match and self._token_match(text)) or (self._url_match and self._url_match(text)):
            return [text]
        pieces = []
        start = 0
        for match in self._infixes(text):
            infix_start, infix_end = match.start(), match.end()
            if infix_start == 0:  # spaCy skips an infix at the very start
                continue
            if infix_start != start:
                pieces.append(text[start:infix_start])
            if infix_start != infix_end:
                pieces.append(text[infix_start:infix_end])
            start = infix_end
        if text[start:]:
            pieces.append(text[start:])
        return pieces

    def _apply_special_cases(self, text: str, tokens: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """spaCy's ``_apply_special_cases``: runs of tokens that spell a special case as affix splitting cuts it are
        merged back into the special case's tokens, longest run first, where the run's text is the special case."""
        orths = [token for _, token in tokens]
        if self._first_split_tokens.isdisjoint(orths):
            return tokens
        found = [(start, end) for start in range(len(orths))
                 for end in range(start + 1, min(len(orths), start + self._longest_split) + 1)
                 if tuple(orths[start:end]) in self._split_specials]
        if not found:
            return tokens
        # spaCy's _filter_special_spans: longest first, then leftmost; a run is kept unless its first or last token
        # is in a run seen before (kept or not)
        seen: set[int] = set()
        kept = []
        for start, end in sorted(found, key=lambda span: (span[0] - span[1], span[0])):
            if start not in seen and end - 1 not in seen:
                kept.append((start, end))
            seen.update(range(start, end))
        merged = list(tokens)
        for start, end in sorted(kept, reverse=True):
            begin = tokens[start][0]
            special = self.specials.get(text[begin:tokens[end - 1][0] + len(tokens[end - 1][1])])
            if special is not None:
                pieces = []
                for piece in special:
                    pieces.append((begin, piece))
                    begin += len(piece)
                merged[start:end] = pieces
        return merged


@cache
def blank_tokenizer(lang: str) -> BlankTokenizer | None:
    """The tokenizer of ``lang``'s blank pipeline from its shipped rules, or None where there are none or the
    installed spaCy is not the version they were exported from (then only spaCy itself gives its tokens)."""
    path = rules_path(lang)
    if not path.is_file():
        return None
    rules = json.loads(path.read_text(encoding="utf-8"))
    if rules.get("format") != RULES_FORMAT or rules.get("spacy") != installed_spacy_version():
        return None
    return BlankTokenizer(rules)
