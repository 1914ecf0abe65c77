"""The stigma score's text head reproduces scikit-learn's TF-IDF + logistic regression from its saved arrays."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from corpus_audit.scm.text_head import TextHead, head_texts, ngrams

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


# Sentences written for these tests: the mask erases the slang word; the forms keep it.
SLANG_TRAIN = ["you are a this condition", "what a this condition you are", "he is such a this condition",
               "she is a total this condition", "the boss is this condition about it", "they were this condition at me",
               "i was so this condition that day", "everyone got this condition about the rain"]
SLANG_FORMS = [("slang", "slang:retard")] * 4 + [("slang", "slang:mad")] * 4
SLANG_LABELS = np.array([1, 1, 1, 1, 0, 0, 0, 0])


def test_the_head_reads_each_slang_word_as_a_token_after_the_masked_text():
    assert head_texts(["a this condition", "b"], [("slang", "slang:nut job", "slang:mad"), ("diagnosis",)]) == \
        ["a this condition slangwordnutjob slangwordmad", "b"]
    assert head_texts(["a"], None) == ["a"]
    with pytest.raises(ValueError, match="1 form lists for 2 texts"):
        head_texts(["a", "b"], [()])
    head = TextHead(("no", "yes")).fit(SLANG_TRAIN, SLANG_LABELS, C=10.0, forms=SLANG_FORMS)
    assert {"slangwordretard", "slangwordmad"} <= set(head.arrays["vocabulary"].tolist())
    # the same masked sentence, told apart by its slang word
    retard, mad = head.predict_proba(["the man is this condition"] * 2, [SLANG_FORMS[0], SLANG_FORMS[-1]])[:, 1]
    assert retard > 0.5 > mad
    # a head fitted without forms has no slang token: forms change nothing it reads
    plain = TextHead(("no", "yes")).fit(TRAIN, LABELS)
    np.testing.assert_array_equal(plain.predict_proba(UNSEEN, [("slang", "slang:retard")] * len(UNSEEN)),
                                  plain.predict_proba(UNSEEN))
