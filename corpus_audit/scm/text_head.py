"""``TextHead``: a classifier over the words of a (masked) sentence, kept as plain arrays.

The stigma score averages two views of a sentence: the embedding head (what the sentence means) and this one, a
balanced logistic regression on TF-IDF of its word 1- and 2-grams (which words carry the judgement: "scum",
"lock them up", "lazy"). On the labelled dev sentences the average ranked stigmatising sentences better than either
alone, most of all within one corpus of social text (docs/stigma_score.md). scikit-learn fits it; scoring needs
only the vocabulary, the idf weights and the coefficients, in numpy and the standard library, and reproduces
scikit-learn's ``TfidfVectorizer`` (default token pattern, lower-cased, ``sublinear_tf``, l2 norm) followed by
``LogisticRegression.predict_proba`` (checked in the tests).

Given the mention forms of each sentence (:func:`~corpus_audit.corpus.matcher.mention_forms`), the head also reads
the word of each slang mention, one token after the masked text (``slangwordmad``): the mask erases "mad" (angry,
not a mention), "crazy" and "retard" alike. On dev this raised real AUC from 0.948 to 0.955 (English) and 0.923 to
0.935 (Spanish), most within one corpus of comments (docs/stigma_score.md). A head fitted without them has none of
these tokens in its vocabulary and reads the same text as before.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from corpus_audit.corpus.matcher import SLANG_WORD

#: scikit-learn's default token pattern: words of two or more word characters.
TOKEN = re.compile(r"(?u)\b\w\w+\b")
NGRAMS = (1, 2)
MIN_DF = 2
_NON_WORD = re.compile(r"\W+")


def head_texts(texts: Sequence[str], forms: Sequence[Sequence[str]] | None) -> list[str]:
    """What the head reads of ``texts``: each followed by a token for each slang word among its ``forms``
    (``slang:nut job`` -> ``slangwordnutjob``); ``texts`` as they are without forms."""
    if forms is None:
        return list(texts)
    if len(forms) != len(texts):
        raise ValueError(f"{len(forms)} form lists for {len(texts)} texts")
    return [text + "".join(f" slangword{_NON_WORD.sub('', entry[len(SLANG_WORD):])}" for entry in entries
                           if entry.startswith(SLANG_WORD))
            for text, entries in zip(texts, forms)]


def ngrams(text: str) -> list[str]:
    """The word 1- and 2-grams of ``text`` as ``TfidfVectorizer(ngram_range=(1, 2))`` forms them."""
    tokens = TOKEN.findall(text.lower())
    grams = list(tokens)
    grams.extend(" ".join(tokens[i:i + 2]) for i in range(len(tokens) - 1))
    return grams


class TextHead:
    """Class probabilities from text. ``arrays``: ``vocabulary`` (the n-grams, a string array), ``idf``, ``coef``
    and ``intercept``: for two classes one coefficient per n-gram and (1,) (scikit-learn's binary model: the logit
    of the second class), for more a column per class and (k,) (its multinomial model)."""

    kind = "tfidf-logistic"

    def __init__(self, classes: Sequence[str], arrays: dict[str, np.ndarray] | None = None) -> None:
        if len(classes) < 2:
            raise ValueError("a text head has at least two classes")
        self.classes, self.arrays = tuple(classes), dict(arrays or {})
        self._index: dict[str, int] | None = None

    def fit(self, texts: Sequence[str], labels: np.ndarray, *, C: float = 1.0,
            sample_weight: np.ndarray | None = None, forms: Sequence[Sequence[str]] | None = None) -> TextHead:
        """Fit on ``texts`` (with their mention ``forms``: :func:`head_texts`) and ``labels`` (indices into
        ``classes``), classes balanced; n-grams in fewer than ``MIN_DF`` texts are dropped."""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        vectoriser = TfidfVectorizer(ngram_range=NGRAMS, min_df=MIN_DF, sublinear_tf=True)
        features = vectoriser.fit_transform(head_texts(texts, forms))
        model = LogisticRegression(C=C, max_iter=5000, class_weight="balanced")
        model.fit(features, np.asarray(labels), sample_weight=sample_weight)
        vocabulary = sorted(vectoriser.vocabulary_, key=vectoriser.vocabulary_.get)
        coef = model.coef_[0] if len(self.classes) == 2 else model.coef_.T
        self.arrays = {"vocabulary": np.array(vocabulary, dtype=str), "idf": vectoriser.idf_.astype(np.float64),
                       "coef": coef.astype(np.float64), "intercept": model.intercept_.astype(np.float64)}
        self._index = None
        return self

    @property
    def index(self) -> dict[str, int]:
        if self._index is None:
            self._index = {gram: column for column, gram in enumerate(self.arrays["vocabulary"].tolist())}
        return self._index

    def decision(self, texts: Sequence[str], forms: Sequence[Sequence[str]] | None = None) -> np.ndarray:
        """The logits of each text (with its mention ``forms``: :func:`head_texts`): shape (n,), the second
        class's, for two classes; (n, k) for more."""
        idf, coef = self.arrays["idf"], self.arrays["coef"]
        out = np.zeros((len(texts), *coef.shape[1:]), dtype=np.float64)
        for row, text in enumerate(head_texts(texts, forms)):
            counts = Counter(column for column in map(self.index.get, ngrams(text)) if column is not None)
            if not counts:
                continue
            columns = np.fromiter(counts, dtype=np.int64, count=len(counts))
            weights = (1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))) * idf[columns]
            out[row] = weights @ coef[columns] / np.linalg.norm(weights)
        intercept = self.arrays["intercept"]
        return out + (intercept[0] if len(self.classes) == 2 else intercept)

    def predict_proba(self, texts: Sequence[str], forms: Sequence[Sequence[str]] | None = None) -> np.ndarray:
        """Class probabilities, shape (n, len(classes)) (``forms``: as :meth:`decision` takes them)."""
        logits = self.decision(texts, forms)
        if len(self.classes) == 2:
            positive = 1.0 / (1.0 + np.exp(-logits))
            return np.stack([1.0 - positive, positive], axis=1)
        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
        return shifted / shifted.sum(axis=1, keepdims=True)

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """The arrays a fitted head holds and their shapes (one entry, or row, per n-gram of its vocabulary)."""
        n = len(self.arrays["vocabulary"]) if "vocabulary" in self.arrays else 0
        k = len(self.classes)
        return {"vocabulary": (n,), "idf": (n,), "coef": (n,) if k == 2 else (n, k),
                "intercept": (1,) if k == 2 else (k,)}
