"""Split documents into sentences with spaCy: a blank pipeline plus the rule-based ``sentencizer``
(no model download), or an installed spaCy model when one is named.

Line breaks are treated as hard boundaries (titles, list items and clinical notes rarely continue a
sentence across lines), and long lines are cut into chunks of at most ``chunk_chars`` characters at a
sentence end or a space, so that a document of any length is processed in bounded memory.

spaCy is imported on first use, not with this module: its import costs 2 s, most of it torch (pulled in by
thinc), and a filter run whose documents never need splitting should not pay it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

DEFAULT_CHUNK_CHARS = 20_000
# Words whose tokenization spaCy may cache (its default is 10,000); the entries are small.
TOKENIZER_CACHE_SIZE = 100_000
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
    pipeline is built on the first call to :meth:`sentences`, so creating a Segmenter costs nothing and an
    unused one (or one only handed to worker processes) never imports spaCy.
    """

    def __init__(self, lang: str, model: str | None = None, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> None:
        self.lang = lang
        self.model = model
        self.chunk_chars = chunk_chars
        self._one_sentence: re.Pattern[str] | None = None  # set by _load for the blank pipeline
        self._ascii_marks: tuple[str, ...] = ()  # the ASCII ones among those punct_chars
        self._punct_orths: set[int] | None = None  # ORTH ids of the sentencizer's punct_chars (blank pipeline)
        self._warmed: set[str] = set()  # words already handed to the tokenizer alone (see _warm_tokenizer_cache)
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
                nlp = spacy.blank(self.lang)
            except ImportError as exc:
                raise SegmenterError(f"spaCy has no language {self.lang!r}") from exc
            sentencizer = nlp.add_pipe("sentencizer")
            # The sentencizer only ends a sentence after a token that is one of its punct_chars; a line whose
            # only such characters are in a final run of ".!?" (all punctuation, so no token after them can
            # start a sentence) is one sentence, the line itself. About 30% of lines, skipped by spaCy.
            self._one_sentence = re.compile("[" + re.escape("".join(sorted(sentencizer.punct_chars))) + "]")
            self._ascii_marks = tuple(sorted(char for char in sentencizer.punct_chars if char.isascii()))
            self._punct_orths = {nlp.vocab.strings.add(char) for char in sentencizer.punct_chars}
            # A bigger cache of word tokenizations; it never changes the tokens (see _warm_tokenizer_cache).
            nlp.tokenizer.max_cache_size = max(nlp.tokenizer.max_cache_size, TOKENIZER_CACHE_SIZE)
        nlp.max_length = max(nlp.max_length, self.chunk_chars + 1)
        return nlp

    def __getstate__(self) -> dict[str, Any]:
        # Sent to worker processes as settings: each builds its own pipeline.
        return {"lang": self.lang, "model": self.model, "chunk_chars": self.chunk_chars, "_nlp": None,
                "_one_sentence": None, "_ascii_marks": (), "_punct_orths": None, "_warmed": set()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def sentences(self, text: str) -> Iterator[str]:
        """Sentences of ``text`` in order, stripped, empty ones dropped."""
        nlp = self.nlp
        lines = list(chunks(text, self.chunk_chars))  # the text is in memory already; this only slices it
        marks = self._one_sentence
        single = [marks is not None and self._is_one_sentence(line) for line in lines]
        todo = (line for line, one in zip(lines, single) if not one)
        # Blank pipeline: only the tokenizer runs; the sentencizer's rule is applied to token arrays.
        docs = nlp.pipe(todo, batch_size=64) if marks is None else map(self._tokenize, todo)
        for line, one in zip(lines, single):
            if one:
                yield line
                continue
            doc = next(docs)
            texts = (sent.text for sent in doc.sents) if marks is None else self._sentencizer_texts(doc, line)
            for text_ in texts:
                sentence = text_.strip()
                if sentence:
                    yield sentence

    def _is_one_sentence(self, line: str) -> bool:
        """Whether the sentencizer leaves ``line`` whole: none of its punct_chars before a final run of ".!?"."""
        body = line.rstrip(".!?")
        if body.isascii():  # the same answer as the regular expression, three ``in`` scans instead
            return not any(mark in body for mark in self._ascii_marks)
        return not self._one_sentence.search(body)  # type: ignore[union-attr]

    def _tokenize(self, line: str) -> Any:
        """``nlp.tokenizer(line)``, after :meth:`_warm_tokenizer_cache`."""
        tokenizer = self.nlp.tokenizer
        self._warm_tokenizer_cache(tokenizer, line)
        return tokenizer(line)

    def _warm_tokenizer_cache(self, tokenizer: Any, line: str) -> None:
        """Tokenize each word of ``line`` not seen before on its own, so that the tokenizer caches it.

        spaCy's tokenizer caches the tokens of each whitespace-separated word, but within one call it stops
        caching after the first word that holds a special case ("I'm", "don't", "e.g."): in a Reddit post that
        is nearly every later word, each tokenized again with the prefix, suffix and infix rules every time
        (four fifths of the segmentation time). A word tokenized alone is cached unless it holds a special
        case itself. The cache never changes the tokens: an entry is what tokenizing that word computes
        (spaCy fills it from whatever call meets the word first), and special cases are never cached.
        """
        seen = self._warmed
        for word in line.split():  # str.split and the tokenizer both split on str.isspace characters
            if word not in seen:
                if len(seen) >= tokenizer.max_cache_size:
                    return  # the cache is (nearly) full: spaCy adds no more entries
                seen.add(word)
                tokenizer(word)

    def _sentencizer_texts(self, doc: Any, text: str) -> list[str]:
        """The sentences spaCy's ``sentencizer`` makes of ``doc``, the tokenized ``text``, without building
        Token objects (a third faster on matched Reddit posts; the tests check the two agree). spaCy's
        tokenizer is non-destructive: ``text`` is ``doc.text``, which costs a Token object per token.

        Its rule: after a token that is one of ``punct_chars``, the next token that is neither punctuation
        nor one of ``punct_chars`` starts a sentence.
        """
        from spacy.attrs import IDX, IS_PUNCT, ORTH

        bounds = [0]
        seen_mark = False
        for orth, is_punct, idx in doc.to_array([ORTH, IS_PUNCT, IDX]).tolist():
            if orth in self._punct_orths:
                seen_mark = True
            elif seen_mark and not is_punct:
                bounds.append(idx)
                seen_mark = False
        bounds.append(len(text))
        return [text[begin:end] for begin, end in zip(bounds, bounds[1:])]
