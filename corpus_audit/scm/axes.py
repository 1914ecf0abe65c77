"""``SCMAxes``: a scikit-learn style estimator from sentence embeddings to (warmth, competence).

Heads (the ``head`` parameter):

- ``polar`` (the reference of Fraser et al. 2022, as used by the seed paper): PLS regression
  (``n_components``, scaled) from embeddings to the 2-D targets; in the PLS latent space (each vector
  L2-normalised) the normalised centroids of the four quadrant classes give d1 = warm_comp - cold_incomp
  and d2 = warm_incomp - cold_comp; a vector's coordinates in the pseudo-inverse basis of [d1; d2],
  rotated by 45 degrees, are (competence, warmth).
- ``logistic``: one L2-regularised logistic regression per dimension, fitted on the sentences labelled
  for that dimension; the score is 2 p(high) - 1, in [-1, 1].
- ``mlp``: the same with a one-hidden-layer network (ReLU, ``hidden_units``, L2 penalty ``alpha``) per
  dimension, which can learn interactions such as negation x adjective that a linear head cannot.
- ``mlp+logistic``: the mean of the two scores: the network's grasp of negation, the linear model's
  smoother scale.

After ``fit`` the estimator keeps only plain arrays (``projection_``), so it saves to a data-only
``.npz`` (no pickle) and reloads without scikit-learn objects.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from corpus_audit import __version__
from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.errors import UserError

HEADS = ("polar", "logistic", "mlp", "mlp+logistic")
_CLASSIFIER_KINDS = {"logistic": ("logistic",), "mlp": ("mlp",), "mlp+logistic": ("mlp", "logistic")}
FORMAT_VERSION = 1


class AxesMismatchError(UserError, ValueError):
    """Axes applied to embeddings of another model or dimension."""


class AxesFileError(UserError, ValueError):
    """An axes file is unreadable, tampered with, or not an axes file."""


#: What numpy, zipfile and json raise on a damaged or foreign .npz (a bad zip, a bad CRC, a truncated member,
#: an object array refused by allow_pickle=False, a header that is not the expected JSON, absurd shapes).
AXES_FILE_ERRORS = (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError,
                    MemoryError, zipfile.BadZipFile, zlib.error)


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


class SCMAxes(TransformerMixin, BaseEstimator):
    """Project sentence embeddings onto the SCM warmth and competence axes.

    Parameters
    ----------
    head : {"polar", "logistic", "mlp", "mlp+logistic"}
        How embeddings map to the plane (see module docstring).
    n_components : int
        PLS components for the ``polar`` head.
    C : float
        Inverse regularisation strength for the ``logistic`` head.
    hidden_units, alpha : int, float
        Hidden layer width and L2 penalty of the ``mlp`` head.
    random_state : int
        Seed of the ``mlp`` head's initialisation.

    Attributes
    ----------
    projection_ : dict[str, np.ndarray]
        The fitted arrays; ``transform`` uses only these.
    n_features_in_ : int
        Embedding dimension seen in ``fit``.
    metadata_ : dict
        Free-form provenance (embedder id, lexicon/template hashes, recipe), saved with the arrays.
    """

    def __init__(self, head: str = "polar", n_components: int = 10, C: float = 1.0, hidden_units: int = 256,
                 alpha: float = 1e-3, random_state: int = 0) -> None:
        self.head = head
        self.n_components = n_components
        self.C = C
        self.hidden_units = hidden_units
        self.alpha = alpha
        self.random_state = random_state

    def fit(self, X: np.ndarray, y: np.ndarray, metadata: dict[str, Any] | None = None) -> "SCMAxes":
        """Fit on embeddings ``X`` (n, d) and targets ``y`` (n, 2) = (warmth, competence) in {-1, 0, 1}."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if X.ndim != 2 or y.shape != (X.shape[0], 2):
            raise ValueError(f"expected X of shape (n, d) and y of shape (n, 2); got {X.shape} and {y.shape}")
        if self.head == "polar":
            self.projection_ = self._fit_polar(X, y)
        elif self.head in _CLASSIFIER_KINDS:
            self.projection_ = {f"{kind}__{name}": value for kind in _CLASSIFIER_KINDS[self.head]
                                for name, value in self._fit_classifiers(X, y, kind).items()}
        else:
            raise ValueError(f"unknown head {self.head!r}; choose one of {HEADS}")
        self.n_features_in_ = X.shape[1]
        self.metadata_ = dict(metadata or {})
        return self

    def _fit_polar(self, X: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
        from sklearn.cross_decomposition import PLSRegression

        pls = PLSRegression(n_components=self.n_components, scale=True).fit(X, y)
        # PLS transform = ((X - mean) / std) @ rotations; keep the arrays, not the sklearn object.
        x_std = np.where(pls._x_std == 0, 1.0, pls._x_std)
        latent = _normalise_rows(((X - pls._x_mean) / x_std) @ pls.x_rotations_)
        centroid = {}
        for warmth in (-1, 1):
            for competence in (-1, 1):
                members = (y[:, 0] == warmth) & (y[:, 1] == competence)
                if not members.any():
                    raise ValueError("the polar head needs two-adjective sentences of all four quadrants")
                centroid[warmth, competence] = _unit(latent[members].mean(axis=0))
        d1 = _unit(centroid[1, 1] - centroid[-1, -1])  # warm & competent vs cold & incompetent
        d2 = _unit(centroid[1, -1] - centroid[-1, 1])  # warm & incompetent vs cold & competent
        basis = np.linalg.pinv(np.vstack([d1, d2]))  # (k, 2): latent -> (d1, d2) coordinates
        # (d1, d2) rotated by 45 degrees: warmth = (c1 + c2) / sqrt 2, competence = (c1 - c2) / sqrt 2.
        rotation = np.array([[1.0, 1.0], [1.0, -1.0]]) / np.sqrt(2.0)
        return {"x_mean": pls._x_mean, "x_std": x_std, "rotations": pls.x_rotations_, "basis": basis @ rotation}

    def _fit_classifiers(self, X: np.ndarray, y: np.ndarray, kind: str) -> dict[str, np.ndarray]:
        """One binary classifier per dimension, on the sentences labelled for it; keep only its arrays."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.neural_network import MLPClassifier

        arrays: dict[str, list[np.ndarray]] = {}
        for axis in range(2):
            labelled = y[:, axis] != 0
            if len(np.unique(y[labelled, axis])) < 2:
                raise ValueError(f"the {self.head} head needs high and low examples on both dimensions")
            if kind == "logistic":
                model = LogisticRegression(C=self.C, max_iter=2000).fit(X[labelled], y[labelled, axis] > 0)
                layers = {"weights": model.coef_[0], "bias": model.intercept_}
            else:
                model = MLPClassifier(hidden_layer_sizes=(self.hidden_units,), alpha=self.alpha, max_iter=300,
                                      early_stopping=True, random_state=self.random_state)
                model.fit(X[labelled], y[labelled, axis] > 0)
                layers = {"hidden_weights": model.coefs_[0], "hidden_bias": model.intercepts_[0],
                          "weights": model.coefs_[1][:, 0], "bias": model.intercepts_[1]}
            for name, value in layers.items():
                arrays.setdefault(name, []).append(value)
        return {name: np.stack(values, axis=-1) for name, values in arrays.items()}

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Embeddings (n, d) -> float32 array (n, 2): columns warmth, competence."""
        if not hasattr(self, "projection_"):
            raise ValueError("SCMAxes is not fitted; call fit() or SCMAxes.load()")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise AxesMismatchError(
                f"these axes expect {self.n_features_in_}-dimensional embeddings "
                f"(model {self.metadata_.get('embedder_id', 'unknown')}); got shape {X.shape}"
            )
        p = self.projection_
        if self.head == "polar":
            latent = _normalise_rows(((X - p["x_mean"]) / p["x_std"]) @ p["rotations"])
            return (latent @ p["basis"]).astype(np.float32)
        scores = [self._classifier_scores(X, kind) for kind in _CLASSIFIER_KINDS[self.head]]
        return np.mean(scores, axis=0).astype(np.float32)

    def _classifier_scores(self, X: np.ndarray, kind: str) -> np.ndarray:
        """2 p(high) - 1 per dimension from the stored arrays of one classifier kind, shape (n, 2)."""
        p = {name.split("__", 1)[1]: value for name, value in self.projection_.items() if name.startswith(f"{kind}__")}
        if kind == "mlp":  # hidden_weights (d, h, 2): one hidden layer per dimension
            hidden = np.maximum(np.einsum("nd,dha->nha", X, p["hidden_weights"]) + p["hidden_bias"], 0.0)
            logits = np.einsum("nha,ha->na", hidden, p["weights"]) + p["bias"][0]
        else:
            logits = X @ p["weights"] + p["bias"][0]
        return np.tanh(logits / 2.0)  # = 2 * sigmoid(logits) - 1

    def check_embedder(self, embedder_id: str) -> None:
        """Raise ``AxesMismatchError`` unless these axes were trained on ``embedder_id``."""
        trained_on = self.metadata_.get("embedder_id")
        if trained_on != embedder_id:
            raise AxesMismatchError(
                f"these axes were trained on embeddings of {trained_on!r}, not {embedder_id!r}; "
                "train axes for this model with `corpus-audit axes train --model ...`"
            )

    # ---- persistence: a data-only npz (arrays + one JSON string), loaded with allow_pickle=False ----

    def save(self, path: str | Path) -> None:
        if not hasattr(self, "projection_"):
            raise ValueError("cannot save unfitted SCMAxes")
        header = {
            "format": "corpus-audit-scm-axes",
            "format_version": FORMAT_VERSION,
            "package_version": __version__,
            "params": self.get_params(),
            "n_features_in": int(self.n_features_in_),
            "arrays": sorted(self.projection_),
            "metadata": self.metadata_,
        }
        arrays = {f"projection__{name}": np.asarray(value) for name, value in self.projection_.items()}
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as handle:
                np.savez(handle, header=np.array(json.dumps(header, sort_keys=True)), **arrays)

    @classmethod
    def load(cls, path: str | Path) -> "SCMAxes":
        """Axes saved by :meth:`save`. Anything else, or a damaged or tampered file, raises ``AxesFileError``
        (``FileNotFoundError`` for a missing one); nothing is ever unpickled."""
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as data:
                header = json.loads(str(data["header"]))
                if not isinstance(header, dict) or header.get("format") != "corpus-audit-scm-axes" \
                        or header.get("format_version") != FORMAT_VERSION:
                    raise AxesFileError(f"{path}: not a corpus-audit axes file of format version {FORMAT_VERSION}")
                arrays = {name: np.asarray(data[f"projection__{name}"], dtype=np.float64) for name in header["arrays"]}
            axes = cls(**header["params"])
            if axes.head not in HEADS:
                raise AxesFileError(f"{path}: unknown head {axes.head!r}")
            axes.projection_ = arrays
            axes.n_features_in_ = int(header["n_features_in"])
            axes.metadata_ = dict(header["metadata"])
            # A missing array, a wrong shape (some would even broadcast) or a NaN fails here, not in a projection.
            for name, shape in _array_shapes(axes.head, arrays, axes.n_features_in_).items():
                if arrays[name].shape != shape or not np.isfinite(arrays[name]).all():
                    raise ValueError(f"array {name!r} has shape {arrays[name].shape} (expected {shape}) or "
                                     "values that are not finite")
        except (FileNotFoundError, AxesFileError):
            raise
        except AXES_FILE_ERRORS as error:
            raise AxesFileError(f"{path}: not a readable corpus-audit axes file ({type(error).__name__}: {error})") \
                from None
        return axes


def _array_shapes(head: str, arrays: dict[str, np.ndarray], dimension: int) -> dict[str, tuple[int, ...]]:
    """The arrays a fitted head holds and their shapes, for embeddings of ``dimension`` (see ``fit``)."""
    if head == "polar":
        components = arrays["rotations"].shape[-1]
        return {"x_mean": (dimension,), "x_std": (dimension,), "rotations": (dimension, components),
                "basis": (components, 2)}
    shapes: dict[str, tuple[int, ...]] = {}
    for kind in _CLASSIFIER_KINDS[head]:
        if kind == "logistic":
            shapes.update({"logistic__weights": (dimension, 2), "logistic__bias": (1, 2)})
        else:
            hidden = arrays["mlp__hidden_bias"].shape[0]
            shapes.update({"mlp__hidden_weights": (dimension, hidden, 2), "mlp__hidden_bias": (hidden, 2),
                           "mlp__weights": (hidden, 2), "mlp__bias": (1, 2)})
    return shapes
