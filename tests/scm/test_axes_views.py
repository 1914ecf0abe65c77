"""Axes over rows of two views (a sentence embedding, then a stance branch's features): each part reads its own
view, the gate can read the stigma head, and the category, score and dimension shown for a sentence agree."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_audit.scm.axes import STIGMA_TARGETS, SCMAxes, gate_from_stigma
from corpus_audit.scm.columns import DIMENSION_CLASSES, OUTPUT_COLUMNS, STIGMA_COLUMN
from corpus_audit.scm.heads import ClassifierHead
from corpus_audit.stigma.judgement import CATEGORIES, CATEGORY_COLUMNS, JUDGEMENT, label_sentences

SENTENCE, STANCE = 6, 4
CATEGORY_CLASSES = STIGMA_TARGETS["category"]


def two_view_axes(gate_reads_stigma: bool, seed: int = 0) -> tuple[SCMAxes, np.ndarray]:
    """Axes fitted on random rows of a 6-value sentence view and a 4-value stance view."""
    rng = np.random.default_rng(seed)
    n = 280
    X = rng.normal(size=(n, SENTENCE + STANCE))
    y = np.column_stack([np.sign(X[:, 0]), np.sign(X[:, 1])])
    axes = SCMAxes(head="logistic").fit(X, y, metadata={"embedder_id": "toy"}, views=(SENTENCE, STANCE))
    sentence, stance = X[:, :SENTENCE], X[:, SENTENCE:]
    gate = ClassifierHead("logistic", CATEGORIES).fit(sentence, np.arange(n) % len(CATEGORIES))
    dimensions = ClassifierHead("logistic", DIMENSION_CLASSES).fit(sentence, np.arange(n) % len(DIMENSION_CLASSES))
    stigma = ClassifierHead("logistic", CATEGORY_CLASSES).fit(
        stance, np.digitize(stance[:, 0], np.quantile(stance[:, 0], np.linspace(0, 1, len(CATEGORY_CLASSES) + 1)[1:-1])))
    return axes.attach_judgement(None if gate_reads_stigma else gate, dimensions, stigma), X


def test_each_part_reads_its_own_view():
    axes, X = two_view_axes(gate_reads_stigma=False)
    assert axes.views_ == (SENTENCE, STANCE) and axes.n_features_in_ == SENTENCE + STANCE
    changed_stance, changed_sentence = X.copy(), X.copy()
    changed_stance[:, SENTENCE:] = np.random.default_rng(1).normal(size=(len(X), STANCE))
    changed_sentence[:, :SENTENCE] = np.random.default_rng(2).normal(size=(len(X), SENTENCE))
    stigma = OUTPUT_COLUMNS.index(STIGMA_COLUMN)
    before, after_stance, after_sentence = (axes.measure(rows) for rows in (X, changed_stance, changed_sentence))
    np.testing.assert_array_equal(before[:, :stigma], after_stance[:, :stigma])  # SCM, gate, dimensions
    assert not np.allclose(before[:, stigma], after_stance[:, stigma])
    np.testing.assert_array_equal(before[:, stigma], after_sentence[:, stigma])
    with pytest.raises(ValueError, match="expect 10-dimensional"):
        axes.measure(X[:, :SENTENCE])


def test_the_gate_can_read_the_stigma_head_and_survives_save_and_load(tmp_path):
    axes, X = two_view_axes(gate_reads_stigma=True)
    assert axes.gate_reads_stigma
    probabilities = axes.stigma_head.predict_proba(X[:, SENTENCE:])
    gate = axes.gate_probabilities(X)
    np.testing.assert_allclose(gate.sum(axis=1), 1.0)
    np.testing.assert_allclose(gate[:, CATEGORIES.index(JUDGEMENT)],
                               probabilities[:, CATEGORIES.index(JUDGEMENT)] + probabilities[:, -1])
    np.testing.assert_allclose(gate, gate_from_stigma(probabilities))
    columns = [OUTPUT_COLUMNS.index(column) for column in CATEGORY_COLUMNS]
    np.testing.assert_allclose(axes.measure(X)[:, columns], gate, rtol=1e-6)
    axes.save(tmp_path / "axes.npz")
    loaded = SCMAxes.load(tmp_path / "axes.npz")
    assert loaded.gate_reads_stigma and loaded.views_ == (SENTENCE, STANCE)
    np.testing.assert_array_equal(loaded.measure(X), axes.measure(X))
    with pytest.raises(ValueError, match="without a gate of its own"):
        axes.attach_judgement(None, axes.judgement_["dimensions"],
                              ClassifierHead("logistic", STIGMA_TARGETS["binary"]).fit(X[:, SENTENCE:],
                                                                                         np.arange(len(X)) % 2))


def test_views_that_do_not_add_up_are_refused():
    X = np.random.default_rng(0).normal(size=(40, 10))
    with pytest.raises(ValueError, match="do not split rows of 10 values"):
        SCMAxes(head="logistic").fit(X, np.sign(X[:, :2]), views=(6, 5))


def test_a_sentence_scored_stigmatising_is_a_judgement_with_a_dimension():
    probabilities = np.array([[0.1, 0.6, 0.1, 0.1, 0.05, 0.05]] * 3)  # the gate's best: self-disclosure
    dimensions = np.zeros((3, 9))
    dimensions[:, 2] = 0.4
    categories, tops = label_sentences(probabilities, dimensions, np.array([0.2, 0.5, 0.9]))
    assert categories == ["self_disclosure", JUDGEMENT, JUDGEMENT]
    assert tops[0] is None and tops[1] == tops[2] is not None
    assert label_sentences(probabilities, dimensions)[0] == ["self_disclosure"] * 3
