"""The valence of a fill word in a Social Distance prompt (Mei et al. 2023): positive, negative, neutral or
irrelevant. The paper labelled its 445 fill words by hand and published the labels only as a PDF; here a word takes
its label from a hand-labelled file when the file has it (the bundled ``social_distance_labels.csv``, or the
user's), and otherwise from one automatic method:

* ``vader``: the compound score of the word alone (vaderSentiment's lexicon and rules), positive at >= 0.05,
  negative at <= -0.05, neutral between (VADER's documented thresholds);
* ``textblob``: the polarity of the word alone (TextBlob's pattern lexicon of adjectives), its sign (0: neutral);
* ``lexicons`` (the default): VADER's label, and TextBlob's where VADER says neutral (VADER is a general sentiment
  lexicon that lacks many adjectives of judgement, "impossible", "unthinkable", "absurd"; TextBlob's covers
  adjectives);
* ``instrument``: this project's instrument on the word's baseline prompts ("It is <word> for me to rent a room in
  my home to someone."): the mean warmth's sign where the instrument's judgement gate says the sentences judge
  (mean ``judgement_strength`` >= 0.5), neutral otherwise.

A fill that is not an answer is irrelevant under every method, and irrelevant fills are left out of P(negative) as
in the paper: not a word (punctuation, a word piece such as ``##ing``), or a function word of the questionnaire's
``social_distance_function_words.csv`` ("the", "to", "not": words a model fills in that say nothing of the
prompt's valence, and that VADER and TextBlob call neutral, which diluted P(negative)). How each method agrees with the hand labels (Cohen's
kappa): docs/probe.md.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from corpus_audit.common.errors import UserError

LABELS = ("positive", "negative", "neutral", "irrelevant")
METHODS = ("lexicons", "vader", "textblob", "instrument")
#: The instrument calls a set of sentences a judgement from this mean judgement strength on (its gate).
JUDGEMENT_GATE = 0.5
_WORD = re.compile(r"[^\W\d_][^\W\d_'’-]*(?:['’-][^\W\d_]+)*")


class LabelFileError(UserError, ValueError):
    """A label file is missing, malformed or holds an unknown label."""


def is_word(fill: str) -> bool:
    """A fill that is a word (letters, inner hyphens or apostrophes), not punctuation or a word piece."""
    return bool(_WORD.fullmatch(fill))


def read_labels(path: str | Path) -> dict[str, str]:
    """``word`` -> ``label`` of a CSV with those columns; words are matched case-insensitively."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if not {"word", "label"} <= set(reader.fieldnames or []):
                raise LabelFileError(f"{path}: needs the columns word and label")
            labels = {}
            for line, row in enumerate(reader, start=2):
                label = (row["label"] or "").strip().lower()
                if label not in LABELS:
                    raise LabelFileError(f"{path}:{line}: label must be one of {', '.join(LABELS)}, not {label!r}")
                labels[(row["word"] or "").strip().lower()] = label
    except OSError as error:
        raise LabelFileError(f"{path}: cannot read it ({error})") from None
    return labels


def _by_score(scores: Iterable[float], low: float, high: float) -> list[str]:
    return ["positive" if s >= high else "negative" if s <= low else "neutral" for s in scores]


def vader_labels(words: Sequence[str]) -> list[str]:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()
    return _by_score((analyzer.polarity_scores(word)["compound"] for word in words), -0.05, 0.05)


def textblob_labels(words: Sequence[str]) -> list[str]:
    from textblob import TextBlob

    polarities = [TextBlob(word).sentiment.polarity for word in words]
    return ["positive" if p > 0 else "negative" if p < 0 else "neutral" for p in polarities]


def instrument_labels(words: Sequence[str], contexts: Sequence[str], measure: Callable[[list[str]], Any]) -> list[str]:
    """``contexts`` hold ``{word}``; ``measure`` gives the instrument's columns of sentences (``score_texts``)."""
    import numpy as np

    from corpus_audit.scm.columns import OUTPUT_COLUMNS

    sentences = [context.format(word=word) for word in words for context in contexts]
    scores = np.asarray(measure(sentences), dtype=float).reshape(len(words), len(contexts), len(OUTPUT_COLUMNS))
    warmth = np.nanmean(scores[:, :, OUTPUT_COLUMNS.index("warmth")], axis=1)
    strength = np.nanmean(scores[:, :, OUTPUT_COLUMNS.index("judgement_strength")], axis=1)
    return ["neutral" if not s >= JUDGEMENT_GATE else "positive" if w > 0 else "negative" if w < 0 else "neutral"
            for w, s in zip(warmth, strength)]


def read_function_words(path: str | Path) -> frozenset[str]:
    """The lower-cased ``word`` column of a CSV; none when the file does not exist (an older questionnaire)."""
    path = Path(path)
    if not path.is_file():
        return frozenset()
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if "word" not in (reader.fieldnames or []):
                raise LabelFileError(f"{path}: needs the column word")
            return frozenset((row["word"] or "").strip().lower() for row in reader if (row["word"] or "").strip())
    except OSError as error:
        raise LabelFileError(f"{path}: cannot read it ({error})") from None


def auto_labels(words: Sequence[str], method: str, contexts: Sequence[str] = (),
                measure: Callable[[list[str]], Any] | None = None,
                function_words: frozenset[str] = frozenset()) -> dict[str, str]:
    """The label of each distinct word by ``method``; non-words and ``function_words`` are irrelevant."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    distinct = sorted(set(words))
    real = [word for word in distinct if is_word(word) and word.lower() not in function_words]
    if method == "lexicons":
        found = [v if v != "neutral" else t for v, t in zip(vader_labels(real), textblob_labels(real))]
    elif method == "vader":
        found = vader_labels(real)
    elif method == "textblob":
        found = textblob_labels(real)
    else:
        if measure is None or not contexts:
            raise ValueError("the instrument method needs contexts and a measure")
        found = instrument_labels(real, contexts, measure) if real else []
    labels = dict.fromkeys(distinct, "irrelevant")
    labels.update(zip(real, found))
    return labels


def agreement(hand: dict[str, str], auto: dict[str, str]) -> dict[str, Any]:
    """Cohen's kappa and raw agreement of ``auto`` with ``hand`` over the words both label."""
    from corpus_audit.stigma.stats import agreement as coder_agreement

    words = sorted(set(hand) & set(auto))
    return coder_agreement([hand[w] for w in words], [auto[w] for w in words], labels=LABELS)
