"""Split documents into sentences with spaCy: a blank pipeline plus the rule-based ``sentencizer``
(no model download), or an installed spaCy model when one is named.

Line breaks are treated as hard boundaries (titles, list items and clinical notes rarely continue a
sentence across lines), and long lines are cut into chunks of at most ``chunk_chars`` characters at a
sentence end or a space, so that a document of any length is processed in bounded memory.

The blank pipeline's sentences are found without running spaCy: its tokenizer runs from exported rules
(:mod:`corpus_audit.corpus.spacy_tokenizer`, so that spaCy is not even imported while the rules match the
installed version) on the few words that decide boundaries, and the sentencizer's rule is applied to their
tokens (:meth:`Segmenter._sentence_starts`); the lines a caller does not want cut are only counted, a whole
document at a time (:meth:`Segmenter.document_sentences`). The tests check the sentences equal spaCy's.
spaCy itself is imported on first use only, not with this module: its import costs 2 s, most of it torch
(pulled in by thinc).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from corpus_audit.common.errors import UserError
from corpus_audit.corpus.documents import scrub_surrogates
from corpus_audit.corpus.spacy_tokenizer import blank_tokenizer
from corpus_audit.languages import LANGUAGES

DEFAULT_CHUNK_CHARS = 20_000
# Distinct words whose tokens the blank pipeline remembers (see Segmenter._word_tokens); entries are small.
WORD_CACHE_SIZE = 200_000
_LINE_BREAK = re.compile(r"\s*\n\s*")
# Preferred cut points inside an over-long line: after sentence-final punctuation, else any whitespace.
_SENTENCE_END = re.compile(r"[.!?…]\s")
_SPACE = re.compile(r"\s")
# ``\s`` is str.isspace, the test spaCy's tokenizer splits on.
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"\S+")
# Whitespace other than ' ': a line without any has its words between runs of ' ' (see _sentence_starts).
_OTHER_SPACE = re.compile(r"[^\S ]")


class SegmenterError(UserError, RuntimeError):
    """The requested spaCy model cannot be loaded."""


def chunks(text: str, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> Iterator[str]:
    """Non-empty lines of ``text``, long ones cut into pieces of at most ``chunk_chars`` characters."""
    for line in _LINE_BREAK.split(text):
        line = line.strip()
        while len(line) > chunk_chars:
            window = line[:chunk_chars]
            cut = _last_match_end(_SENTENCE_END, window) or _last_match_end(_SPACE, window) or chunk_chars
            yield line[:cut].strip()
            line = line[cut:].strip()
        if line:
            yield line


def _last_match_end(pattern: re.Pattern[str], window: str) -> int:
    # Search only the second half: a cut near the start would make tiny chunks.
    ends = [m.end() for m in pattern.finditer(window, len(window) // 2)]
    return ends[-1] if ends else 0


def import_spacy_without_torch() -> None:
    """Import spaCy with torch hidden, in a process that only splits sentences (a filter worker).

    thinc imports torch when it can, which is 60% of spaCy's import time, but a blank pipeline with the
    rule-based sentencizer never uses it. A ``None`` entry in ``sys.modules`` makes ``import torch`` raise
    ImportError (documented import-system behaviour), so thinc records torch as absent; the entry is removed
    afterwards. Never call this in a process that may later use spaCy with torch (thinc keeps ``has_torch``
    false); in a process where torch or spaCy is already imported it does nothing.
    """
    if "spacy" in sys.modules or "torch" in sys.modules:
        return
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        import spacy  # noqa: F401
    finally:
        del sys.modules["torch"]


class Segmenter:
    """Sentence splitter for one language.

    A named model is loaded at once (so a missing one is reported before any work); the default blank
    pipeline's rules are read on the first call to :meth:`sentences`, so creating a Segmenter costs nothing and an
    unused one (or one only handed to worker processes) never reads them; spaCy is imported only where its
    rules are not shipped for the installed version (:func:`~corpus_audit.corpus.spacy_tokenizer.blank_tokenizer`).
    """

    def __init__(self, lang: str, model: str | None = None, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> None:
        self.lang = lang
        self.model = model
        self.chunk_chars = chunk_chars
        # Set by prepare for the blank pipeline: see _is_one_sentence, _sentence_starts and _word_tokens.
        # A mark (one of the sentencizer's punct_chars) of the Basic Multilingual Plane, or any character beyond it:
        # a character class of a few ranges, which the regular expression engine scans fast (see _find_mark).
        self._mark_or_astral: re.Pattern[str] | None = None
        self._multiword_specials: tuple[str, ...] = ()  # tokenizer special cases that span whitespace
        self._punct_chars: frozenset[str] = frozenset()  # the sentencizer's punct_chars
        self._alnum_no_mark = False  # no letter or digit is one of them (see _sentence_starts)
        self._tokens: Callable[[str], list[tuple[int, str]]] | None = None  # (offset, text) of each token
        self._word_cache: dict[str, tuple[tuple[int, bool, bool], ...]] = {}
        self._nlp: Any = self._load() if model else None

    @property
    def nlp(self) -> Any:
        """The spaCy pipeline (``spacy.language.Language``), built on first use."""
        if self._nlp is None:
            self._nlp = self._load()
        return self._nlp

    def _load(self) -> Any:
        import spacy

        if self.model:
            try:
                # Only the parts that set sentence boundaries are needed; the rest is disabled for speed.
                nlp = spacy.load(self.model, exclude=["ner", "lemmatizer", "textcat"])
            except OSError as exc:
                raise SegmenterError(f"spaCy model {self.model!r} is not installed ({exc})") from exc
            if not (nlp.has_pipe("parser") or nlp.has_pipe("senter") or nlp.has_pipe("sentencizer")):
                nlp.add_pipe("sentencizer")
        else:
            try:
                nlp = spacy.blank(self._spacy_code)
            except ImportError as exc:
                raise SegmenterError(f"spaCy has no language {self.lang!r}") from exc
            nlp.add_pipe("sentencizer")
        nlp.max_length = max(nlp.max_length, self.chunk_chars + 1)
        return nlp

    @property
    def needs_spacy_blank(self) -> bool:
        """Whether this segmenter runs spaCy's blank pipeline itself (no shipped rules for the installed spaCy)."""
        return not self.model and blank_tokenizer(self._spacy_code) is None

    @property
    def _spacy_code(self) -> str:
        language = LANGUAGES.get(self.lang)
        return language.spacy_code if language else self.lang

    def prepare(self) -> bool:
        """Set up the blank pipeline's rules (done on first use; worker processes forked afterwards share them);
        False for a named model, whose own pipeline splits."""
        if self.model:
            return False
        if self._tokens is None:
            tokenizer = blank_tokenizer(self._spacy_code)
            if tokenizer is not None:
                punct_chars, special_cases, self._tokens = tokenizer.punct_chars, tokenizer.specials, tokenizer.tokens
            else:  # no rules for this spaCy: its own tokenizer
                punct_chars = frozenset(self.nlp.get_pipe("sentencizer").punct_chars)
                special_cases, self._tokens = self.nlp.tokenizer.rules, self._spacy_tokens
            # The sentencizer only ends a sentence after a token that is one of its punct_chars; a line whose
            # only such characters are in a final run of ".!?" (all punctuation, so no token after them can
            # start a sentence) is one sentence, the line itself. About 30% of lines, skipped by spaCy.
            basic = "".join(sorted(char for char in punct_chars if char <= "\uffff"))
            self._mark_or_astral = re.compile("[" + re.escape(basic) + "\U00010000-\U0010ffff]")
            self._multiword_specials = tuple(key for key in special_cases
                                             if not key.isspace() and any(char.isspace() for char in key))
            self._punct_chars = punct_chars
            self._alnum_no_mark = not any(char.isalnum() for char in punct_chars)
        return True

    def _spacy_tokens(self, text: str) -> list[tuple[int, str]]:
        return [(token.idx, token.text) for token in self.nlp.tokenizer(text)]

    def __getstate__(self) -> dict[str, Any]:
        # Sent to worker processes as settings: each builds its own pipeline.
        return {"lang": self.lang, "model": self.model, "chunk_chars": self.chunk_chars, "_nlp": None,
                "_mark_or_astral": None, "_multiword_specials": (), "_punct_chars": frozenset(),
                "_alnum_no_mark": False, "_tokens": None, "_word_cache": {}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def sentences(self, text: str) -> Iterator[str]:
        """Sentences of ``text`` in order, stripped, empty ones dropped (lone surrogates become U+FFFD: spaCy
        cannot encode them; the readers already replace them, other callers may not)."""
        lines, _ = self.lines(text)
        if not self.prepare():  # a spaCy model: its own pipeline sets the boundaries
            for doc in self.nlp.pipe(lines, batch_size=64):
                yield from (sentence for sent in doc.sents if (sentence := sent.text.strip()))
            return
        for line in lines:
            yield from (sentence for piece in self._sentencizer_texts(line) if (sentence := piece.strip()))

    def lines(self, text: str) -> tuple[list[str], bool]:
        """The lines of ``text`` that are split into sentences on their own (stripped, none empty, long ones cut
        into chunks: :func:`chunks`), and whether they are the text's lines as they are: no line was cut, so that
        they hold the text's words with the same neighbours (whitespace stands for the line breaks)."""
        text = scrub_surrogates(text)
        if len(text) > self.chunk_chars:
            return list(chunks(text, self.chunk_chars)), False
        # no line to cut: the lines of chunks(), faster (\s is str.isspace, what strip() removes)
        return list(filter(None, map(str.strip, text.split("\n")))), True

    def document_sentences(self, lines: list[str], spans: list[list[tuple[int, int]] | None]
                           ) -> tuple[int, list[tuple[int, str]]]:
        """(number of sentences of ``lines``, a document's :meth:`lines`, and (index, sentence) of each sentence
        that holds a whole one of the ``spans`` of its line): the sentences of :meth:`sentences`, numbered in that
        order. A line whose spans are None is only counted, never cut (with a spaCy model, every sentence of a line
        with spans is given: the model's sentences carry no offsets here)."""
        index, kept = 0, []
        if not self.prepare():
            for doc, line_spans in zip(self.nlp.pipe(lines, batch_size=64), spans):
                sentences = [sentence for sent in doc.sents if (sentence := sent.text.strip())]
                if line_spans is not None:
                    kept.extend(enumerate(sentences, start=index))
                index += len(sentences)
            return index, kept
        for line, line_spans in zip(lines, spans):
            if line_spans is None:  # counted: pieces start at tokens, so none is blank, one sentence per start
                index += 1 if self._is_one_sentence(line) else len(self._sentence_starts(line))
                continue
            starts = [0] if self._is_one_sentence(line) else self._sentence_starts(line)
            for begin, end in zip(starts, starts[1:] + [len(line)]):
                if any(begin <= start and stop <= end for start, stop in line_spans):
                    kept.append((index, line[begin:end].strip()))
                index += 1
        return index, kept

    def _is_one_sentence(self, line: str) -> bool:
        """Whether the sentencizer leaves ``line`` whole: none of its punct_chars before a final run of ".!?"."""
        return self._find_mark(line.rstrip(".!?"), 0) < 0

    def _find_mark(self, line: str, position: int) -> int:
        """The offset of the first of the sentencizer's punct_chars in ``line`` at or after ``position``, or -1."""
        while (found := self._mark_or_astral.search(line, position)) is not None:  # type: ignore[union-attr]
            if found.group() in self._punct_chars:
                return found.start()
            position = found.end()  # a character beyond the Basic Multilingual Plane that is no mark
        return -1

    def _sentencizer_texts(self, line: str) -> list[str]:
        """The pieces spaCy's ``sentencizer`` cuts ``line`` into (not yet stripped).

        Its rule: after a token that is one of ``punct_chars``, the next token that is neither punctuation
        nor one of ``punct_chars`` starts a sentence. About 30% of lines hold no such token before a final
        run of ".!?" and are one sentence as they are.
        """
        if self._is_one_sentence(line):
            return [line]
        starts = self._sentence_starts(line)
        return [line[begin:end] for begin, end in zip(starts, starts[1:] + [len(line)])]

    def _sentence_starts(self, line: str) -> list[int]:
        """Offsets where the sentencizer starts a sentence in ``line`` (the first is 0).

        spaCy's tokenizer splits text at whitespace and tokenizes each word on its own (a run of whitespace
        other than one ' ' is a token of its own), so only the words that hold one of the punct_chars, and
        the tokens that follow them up to the next non-punctuation one, decide the boundaries; the other
        words, nine in ten, are never tokenized (the tests check the sentences equal spaCy's). The exception
        is a tokenizer special case that spans whitespace, such as Spanish "EE. UU.": a line holding one is
        tokenized whole.
        """
        if any(special in line for special in self._multiword_specials):
            return self._sentence_starts_of_doc(line)
        starts = [0]
        seen_mark = False
        position, end = 0, len(line)
        spaced = _OTHER_SPACE.search(line) is None  # words are separated by one ' ' or more: str.find finds them
        while position < end:
            if not seen_mark:  # on to the next word that holds a mark
                mark = self._find_mark(line, position)
                if mark < 0:
                    break
                if spaced:
                    word_start = max(position, line.rfind(" ", position, mark) + 1)
                    word_end = line.find(" ", mark)
                    word_end = end if word_end < 0 else word_end
                else:
                    word_start = mark
                    while word_start > position and not line[word_start - 1].isspace():
                        word_start -= 1
                    word_end = _WORD.match(line, mark).end()  # type: ignore[union-attr]
            elif self._alnum_no_mark and line.startswith(" ", position) and line[position + 1:position + 2].isalnum():
                # after a mark, one ' ' and a word that starts with a letter or digit, whose first token is then
                # neither punctuation nor a mark: a sentence starts there (the word is looked at from there on)
                starts.append(position + 1)
                seen_mark = False
                position += 1
                continue
            elif line[position].isspace():
                run_end = _SPACES.match(line, position).end()  # type: ignore[union-attr]
                token_start = position + 1 if line[position] == " " else position
                if token_start < run_end:  # a whitespace token: neither punctuation nor a mark
                    seen_mark = _apply_rule(_WHITESPACE_TOKEN, token_start, starts, seen_mark)
                position = run_end
                continue
            else:
                word_start, word_end = _WORD.match(line, position).span()  # type: ignore[union-attr]
            seen_mark = _apply_rule(self._word_tokens(line[word_start:word_end]), word_start, starts, seen_mark)
            position = word_end
        return starts

    def _word_tokens(self, word: str) -> tuple[tuple[int, bool, bool], ...]:
        """(offset, is one of punct_chars, is punctuation) of each token the tokenizer makes of ``word``."""
        tokens = self._word_cache.get(word)
        if tokens is None:
            tokens = self._token_flags(word)
            if len(self._word_cache) < WORD_CACHE_SIZE:
                self._word_cache[word] = tokens
        return tokens

    def _token_flags(self, text: str) -> tuple[tuple[int, bool, bool], ...]:
        """(offset, is one of punct_chars, is punctuation) of each token of ``text``."""
        return tuple((offset, token in self._punct_chars, _is_punct(token))
                     for offset, token in self._tokens(text))  # type: ignore[misc]

    def _sentence_starts_of_doc(self, line: str) -> list[int]:
        """:meth:`_sentence_starts` from the tokens of the whole line."""
        starts = [0]
        _apply_rule(self._token_flags(line), 0, starts, False)
        return starts


def _is_punct(text: str) -> bool:
    """spaCy's ``is_punct`` lexical attribute: every character is Unicode punctuation (a category P*)."""
    if text.isascii():
        return not text.strip(_ASCII_PUNCTUATION)
    return all(unicodedata.category(char).startswith("P") for char in text)


_ASCII_PUNCTUATION = "".join(chr(code) for code in range(128) if unicodedata.category(chr(code)).startswith("P"))

_WHITESPACE_TOKEN = ((0, False, False),)


def _apply_rule(tokens: Iterable[tuple[int, bool, bool]], base: int, starts: list[int], seen_mark: bool) -> bool:
    """The sentencizer's rule over ``tokens`` (offset from ``base``, is a mark, is punctuation): after a mark,
    the next token that is neither punctuation nor a mark starts a sentence (appended to ``starts``).
    Returns whether a mark is still waiting for such a token."""
    for offset, is_mark, is_punct in tokens:
        if is_mark:
            seen_mark = True
        elif seen_mark and not is_punct:
            starts.append(base + offset)
            seen_mark = False
    return seen_mark
