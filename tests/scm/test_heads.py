"""ClassifierHead: its numpy forward pass equals scikit-learn's, for binary and multinomial classes."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from corpus_audit.scm.heads import ClassifierHead


def blobs(k: int, n: int = 30, dim: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(k, dim))
    X = np.vstack([centre + rng.normal(size=(n, dim)) for centre in centres])
    return X, np.repeat(np.arange(k), n)


@pytest.mark.parametrize("k", [2, 3])
def test_logistic_probabilities_match_scikit_learn(k):
    X, labels = blobs(k)
    head = ClassifierHead("logistic", [f"c{i}" for i in range(k)]).fit(X, labels, C=0.5)
    reference = LogisticRegression(C=0.5, max_iter=3000).fit(X, labels)
    np.testing.assert_allclose(head.predict_proba(X), reference.predict_proba(X), atol=1e-10)


@pytest.mark.parametrize("k", [2, 3])
def test_mlp_probabilities_match_scikit_learn(k):
    X, labels = blobs(k)
    head = ClassifierHead("mlp", [f"c{i}" for i in range(k)]).fit(X, labels, hidden_units=8, alpha=1e-2)
    reference = MLPClassifier(hidden_layer_sizes=(8,), alpha=1e-2, max_iter=300, early_stopping=True,
                              random_state=0).fit(X, labels)
    np.testing.assert_allclose(head.predict_proba(X), reference.predict_proba(X), atol=1e-10)


def test_ensemble_is_the_mean_of_its_members_and_shapes_are_declared():
    X, labels = blobs(3)
    members = [ClassifierHead(kind, "abc").fit(X, labels, hidden_units=8).predict_proba(X)
               for kind in ("mlp", "logistic")]
    head = ClassifierHead("mlp+logistic", "abc").fit(X, labels, hidden_units=8)
    np.testing.assert_allclose(head.predict_proba(X), np.mean(members, axis=0), atol=1e-12)
    assert {name: value.shape for name, value in head.arrays.items()} == head.shapes(X.shape[1])


def test_every_class_needs_examples_and_kinds_are_checked():
    X, labels = blobs(2)
    with pytest.raises(ValueError, match=r"none for \['c'\]"):
        ClassifierHead("logistic", "abc").fit(X, labels)
    with pytest.raises(ValueError, match="unknown classifier kind"):
        ClassifierHead("forest", "ab")


def test_balanced_fit_lifts_a_rare_class():
    """A rare class in an overlapping cloud: balancing raises its predicted probability on its own examples."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(300, 4)), rng.normal(loc=1.0, size=(15, 4))])
    labels = np.r_[np.zeros(300, int), np.ones(15, int)]
    for kind in ("logistic", "mlp"):
        plain = ClassifierHead(kind, "ab").fit(X, labels, hidden_units=32).predict_proba(X[labels == 1])[:, 1]
        balanced = ClassifierHead(kind, "ab").fit(X, labels, hidden_units=32, balanced=True)
        assert balanced.predict_proba(X[labels == 1])[:, 1].mean() > plain.mean() + 0.1
