"""SCMAxes: the math on synthetic embeddings with a known answer, persistence, and mismatch errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from corpus_audit.scm.axes import AxesFileError, AxesMismatchError, SCMAxes


def synthetic(n_per_class: int = 40, dim: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings whose first two coordinates are warmth and competence, plus noise.

    Classes: four quadrants (two-adjective sentences) and four single-dimension poles.
    """
    rng = np.random.default_rng(seed)
    labels = [(w, c) for w in (-1, 1) for c in (-1, 1)] + [(1, 0), (-1, 0), (0, 1), (0, -1)]
    X, y = [], []
    for w, c in labels:
        centre = np.zeros(dim)
        centre[:2] = (w, c)
        X.append(centre + rng.normal(scale=0.15, size=(n_per_class, dim)))
        y.append(np.tile((w, c), (n_per_class, 1)))
    return np.vstack(X), np.vstack(y).astype(float)


@pytest.mark.parametrize("head", ["polar", "logistic", "mlp", "mlp+logistic"])
def test_points_land_in_their_quadrant(head):
    X, y = synthetic()
    axes = SCMAxes(head=head, n_components=2).fit(X, y)
    probes = np.zeros((4, 8))
    probes[:, :2] = [(1, 1), (1, -1), (-1, 1), (-1, -1)]
    scores = axes.transform(probes)
    assert scores.shape == (4, 2) and scores.dtype == np.float32
    np.testing.assert_array_equal(np.sign(scores), [(1, 1), (1, -1), (-1, 1), (-1, -1)])


def test_polar_on_exact_quadrant_geometry_gives_rotated_diagonals():
    """Noise-free quadrant points: the 45-degree rotation of the (d1, d2) basis recovers (w, c) exactly up to scale."""
    corners = np.array([(1, 1), (1, -1), (-1, 1), (-1, -1)], dtype=float)
    X = np.hstack([np.repeat(corners, 10, axis=0), np.zeros((40, 1))])
    X[:, 2] = np.tile(np.linspace(-0.01, 0.01, 10), 4)  # a nuisance dimension PLS must ignore
    axes = SCMAxes(head="polar", n_components=2).fit(X, np.repeat(corners, 10, axis=0))
    scores = axes.transform(np.hstack([corners, np.zeros((4, 1))]))
    # Each corner maps to a point on its own diagonal: |warmth| == |competence| with the corner's signs.
    np.testing.assert_allclose(np.abs(scores[:, 0]), np.abs(scores[:, 1]), rtol=1e-4)
    np.testing.assert_array_equal(np.sign(scores), corners)


def test_logistic_scores_are_two_p_minus_one():
    X, y = synthetic()
    axes = SCMAxes(head="logistic", C=1.0).fit(X, y)
    scores = axes.transform(X)
    assert np.all(np.abs(scores) <= 1.0)
    from sklearn.linear_model import LogisticRegression

    labelled = y[:, 0] != 0
    reference = LogisticRegression(C=1.0, max_iter=2000).fit(X[labelled], y[labelled, 0] > 0)
    np.testing.assert_allclose(scores[:, 0], 2 * reference.predict_proba(X)[:, 1] - 1, atol=1e-5)


def test_mlp_forward_pass_matches_scikit_learn():
    X, y = synthetic()
    axes = SCMAxes(head="mlp", hidden_units=16, alpha=1e-2).fit(X, y)
    from sklearn.neural_network import MLPClassifier

    labelled = y[:, 1] != 0
    reference = MLPClassifier(hidden_layer_sizes=(16,), alpha=1e-2, max_iter=300, early_stopping=True,
                              random_state=0).fit(X[labelled], y[labelled, 1] > 0)
    np.testing.assert_allclose(axes.transform(X)[:, 1], 2 * reference.predict_proba(X)[:, 1] - 1, atol=1e-5)


def test_ensemble_is_the_mean_of_its_members():
    X, y = synthetic()
    members = [SCMAxes(head=head, hidden_units=16).fit(X, y).transform(X) for head in ("mlp", "logistic")]
    ensemble = SCMAxes(head="mlp+logistic", hidden_units=16).fit(X, y).transform(X)
    np.testing.assert_allclose(ensemble, np.mean(members, axis=0), atol=1e-6)


def test_polar_needs_all_four_quadrants():
    X, y = synthetic()
    keep = ~((y[:, 0] == 1) & (y[:, 1] == 1))
    with pytest.raises(ValueError, match="four quadrants"):
        SCMAxes(head="polar", n_components=2).fit(X[keep], y[keep])


def test_unknown_head_and_bad_shapes():
    X, y = synthetic()
    with pytest.raises(ValueError, match="unknown head"):
        SCMAxes(head="magic").fit(X, y)
    with pytest.raises(ValueError, match="shape"):
        SCMAxes().fit(X, y[:, :1])
    with pytest.raises(ValueError, match="not fitted"):
        SCMAxes().transform(X)


@pytest.mark.parametrize("head", ["polar", "logistic", "mlp", "mlp+logistic"])
def test_save_load_round_trip(tmp_path, head):
    X, y = synthetic()
    axes = SCMAxes(head=head, n_components=3).fit(X, y, metadata={"embedder_id": "toy:model@abc", "lang": "en"})
    path = tmp_path / "axes.npz"
    axes.save(path)
    loaded = SCMAxes.load(path)
    np.testing.assert_allclose(loaded.transform(X), axes.transform(X), atol=1e-6)
    assert loaded.get_params() == axes.get_params()
    assert loaded.metadata_["embedder_id"] == "toy:model@abc"
    loaded.check_embedder("toy:model@abc")
    with pytest.raises(AxesMismatchError, match="trained on embeddings of 'toy:model@abc'"):
        loaded.check_embedder("other:model@def")


def test_dimension_mismatch_is_a_clear_error():
    X, y = synthetic(dim=8)
    axes = SCMAxes(head="logistic").fit(X, y, metadata={"embedder_id": "toy"})
    with pytest.raises(AxesMismatchError, match="8-dimensional"):
        axes.transform(np.zeros((3, 5)))


def test_tampered_and_foreign_files_fail_clearly(tmp_path):
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip file at all")
    with pytest.raises(AxesFileError, match="not a readable"):
        SCMAxes.load(garbage)
    # An object array can only be stored pickled; loading must refuse it rather than unpickle.
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, header=np.array([{"format": "corpus-audit-scm-axes"}], dtype=object))
    with pytest.raises(AxesFileError):
        SCMAxes.load(pickled)
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, header=np.array(json.dumps({"format": "something-else", "format_version": 1})))
    with pytest.raises(AxesFileError, match="not a corpus-audit axes file"):
        SCMAxes.load(foreign)
