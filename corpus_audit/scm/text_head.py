"""``TextHead``: a classifier over the words of a (masked) sentence, kept as plain arrays.

The stigma score averages two views of a sentence: the embedding head (what the sentence means) and this one, a
balanced logistic regression on TF-IDF of its word 1- and 2-grams (which words carry the judgement: "scum",
"lock them up", "lazy"). On the labelled dev sentences the average ranked stigmatising sentences better than either
alone, most of all within one corpus of social text (docs/stigma_score.md). scikit-learn fits it; scoring needs
only the vocabulary, the idf weights and the coefficients, in numpy and the standard library, and reproduces
scikit-learn's ``TfidfVectorizer`` (default token pattern, lower-cased, ``sublinear_tf``, l2 norm) followed by
``LogisticRegression.predict_proba`` (checked in the tests).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

#: scikit-learn's default token pattern: words of two or more word characters.
TOKEN = re.compile(r"(?u)\b\w\w+\b")
NGRAMS = (1, 2)
MIN_DF = 2


def ngrams(text: str) -> list[str]:
    """The word 1- and 2-grams of ``text`` as ``TfidfVectorizer(ngram_range=(1, 2))`` forms them."""
    tokens = TOKEN.findall(text.lower())
    grams = list(tokens)
    grams.extend(" ".join(tokens[i:i + 2]) for i in range(len(tokens) - 1))
    return grams


class TextHead:
    """Class probabilities of two classes from text. ``arrays``: ``vocabulary`` (the n-grams, a string array),
    ``idf``, ``coef`` (one per n-gram) and ``intercept`` (1,)."""

    kind = "tfidf-logistic"

    def __init__(self, classes: Sequence[str], arrays: dict[str, np.ndarray] | None = None) -> None:
        if len(classes) != 2:
            raise ValueError("a text head has two classes")
        self.classes, self.arrays = tuple(classes), dict(arrays or {})
        self._index: dict[str, int] | None = None

    def fit(self, texts: Sequence[str], labels: np.ndarray, *, C: float = 1.0,
            sample_weight: np.ndarray | None = None) -> TextHead:
        """Fit on ``texts`` and ``labels`` (0/1 = index into ``classes``), classes balanced; n-grams in fewer than
        ``MIN_DF`` texts are dropped."""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        vectoriser = TfidfVectorizer(ngram_range=NGRAMS, min_df=MIN_DF, sublinear_tf=True)
        features = vectoriser.fit_transform(list(texts))
        model = LogisticRegression(C=C, max_iter=5000, class_weight="balanced")
        model.fit(features, np.asarray(labels), sample_weight=sample_weight)
        vocabulary = sorted(vectoriser.vocabulary_, key=vectoriser.vocabulary_.get)
        self.arrays = {"vocabulary": np.array(vocabulary, dtype=str), "idf": vectoriser.idf_.astype(np.float64),
                       "coef": model.coef_[0].astype(np.float64), "intercept": model.intercept_.astype(np.float64)}
        self._index = None
        return self

    @property
    def index(self) -> dict[str, int]:
        if self._index is None:
            self._index = {gram: column for column, gram in enumerate(self.arrays["vocabulary"].tolist())}
        return self._index

    def decision(self, texts: Sequence[str]) -> np.ndarray:
        """The logit of the second class for each text."""
        idf, coef = self.arrays["idf"], self.arrays["coef"]
        out = np.empty(len(texts), dtype=np.float64)
        for row, text in enumerate(texts):
            counts = Counter(column for column in map(self.index.get, ngrams(text)) if column is not None)
            if not counts:
                out[row] = 0.0
                continue
            columns = np.fromiter(counts, dtype=np.int64, count=len(counts))
            weights = (1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))) * idf[columns]
            out[row] = weights @ coef[columns] / np.linalg.norm(weights)
        return out + self.arrays["intercept"][0]

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """Class probabilities, shape (n, 2)."""
        positive = 1.0 / (1.0 + np.exp(-self.decision(texts)))
        return np.stack([1.0 - positive, positive], axis=1)

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """The arrays a fitted head holds and their shapes (one entry per n-gram of its vocabulary)."""
        n = len(self.arrays["vocabulary"]) if "vocabulary" in self.arrays else 0
        return {"vocabulary": (n,), "idf": (n,), "coef": (n,), "intercept": (1,)}
