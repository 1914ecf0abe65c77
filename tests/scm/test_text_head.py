"""The stigma score's text head reproduces scikit-learn's TF-IDF + logistic regression from its saved arrays."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from corpus_audit.scm.text_head import TextHead, ngrams

TRAIN = ["they are scum and should be locked up", "lock them up they are dangerous scum",
         "lazy people with this condition are a burden", "a burden and lazy, every one of them",
         "my sister lives with this condition and she is brave", "support for people with this condition matters",
         "the trial measured this condition over two years", "is this condition treatable with therapy"]
LABELS = np.array([1, 1, 1, 1, 0, 0, 0, 0])
WEIGHTS = np.array([1.0, 0.3, 1.0, 0.3, 1.0, 1.0, 0.3, 1.0])
UNSEEN = ["", "!!!", "Words never seen here", "THEY ARE SCUM, scum, SCUM", "lazy lazy lazy burden of this condition",
          "support them", "a"]


@pytest.mark.parametrize(("classes", "labels"), [
    (("no", "yes"), LABELS),
    (("other", "supportive", "stigmatising"), np.array([2, 2, 2, 2, 1, 1, 0, 0])),  # multinomial
])
def test_the_probabilities_equal_scikit_learns_pipeline(classes, labels):
    head = TextHead(classes).fit(TRAIN, labels, C=2.0, sample_weight=WEIGHTS)
    vectoriser = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    model = LogisticRegression(C=2.0, max_iter=5000, class_weight="balanced").fit(
        vectoriser.fit_transform(TRAIN), labels, sample_weight=WEIGHTS)
    texts = TRAIN + UNSEEN
    np.testing.assert_allclose(head.predict_proba(texts), model.predict_proba(vectoriser.transform(texts)),
                               rtol=1e-7, atol=1e-10)
    assert head.predict_proba(["THEY ARE SCUM"])[0, -1] > head.predict_proba(["support them"])[0, -1]
    n = len(head.arrays["vocabulary"])
    assert head.shapes() == {"vocabulary": (n,), "idf": (n,), "coef": (n,) if len(classes) == 2 else (n, 3),
                             "intercept": (1,) if len(classes) == 2 else (3,)}
    assert {name: array.shape for name, array in head.arrays.items()} == head.shapes()


def test_ngrams_are_scikit_learns():
    analyse = TfidfVectorizer(ngram_range=(1, 2)).build_analyzer()
    for text in TRAIN + UNSEEN + ["Ünïcode wörds, ñ and 42 numbers; x y z"]:
        assert ngrams(text) == analyse(text)


def test_a_text_head_has_at_least_two_classes():
    with pytest.raises(ValueError, match="at least two classes"):
        TextHead(("a",))
