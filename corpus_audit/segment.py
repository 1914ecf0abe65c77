"""Split documents into sentences with spaCy: a blank pipeline plus the rule-based ``sentencizer``
(no model download), or an installed spaCy model when one is named.

Line breaks are treated as hard boundaries (titles, list items and clinical notes rarely continue a
sentence across lines), and long lines are cut into chunks of at most ``chunk_chars`` characters at a
sentence end or a space, so that a document of any length is processed in bounded memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import spacy

DEFAULT_CHUNK_CHARS = 20_000
_LINE_BREAK = re.compile(r"\s*\n\s*")
# Preferred cut points inside an over-long line: after sentence-final punctuation, else any whitespace.
_SENTENCE_END = re.compile(r"[.!?…]\s")
_SPACE = re.compile(r"\s")


class SegmenterError(RuntimeError):
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


class Segmenter:
    """Sentence splitter for one language."""

    def __init__(self, lang: str, model: str | None = None, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> None:
        self.lang = lang
        self.chunk_chars = chunk_chars
        if model:
            try:
                # Only the parts that set sentence boundaries are needed; the rest is disabled for speed.
                self.nlp = spacy.load(model, exclude=["ner", "lemmatizer", "textcat"])
            except OSError as exc:
                raise SegmenterError(f"spaCy model {model!r} is not installed ({exc})") from exc
            if not (self.nlp.has_pipe("parser") or self.nlp.has_pipe("senter") or self.nlp.has_pipe("sentencizer")):
                self.nlp.add_pipe("sentencizer")
        else:
            try:
                self.nlp = spacy.blank(lang)
            except ImportError as exc:
                raise SegmenterError(f"spaCy has no language {lang!r}") from exc
            self.nlp.add_pipe("sentencizer")
        self.nlp.max_length = max(self.nlp.max_length, chunk_chars + 1)

    def sentences(self, text: str) -> Iterator[str]:
        """Sentences of ``text`` in order, stripped, empty ones dropped."""
        for doc in self.nlp.pipe(chunks(text, self.chunk_chars), batch_size=64):
            for sent in doc.sents:
                sentence = sent.text.strip()
                if sentence:
                    yield sentence
