"""``ClassifierHead``: a multinomial classifier over sentence embeddings that keeps only plain arrays.

The instrument's parts (each SCM axis, the judgement gate, the AQ-27 dimensions) are classifiers of this one
kind: an L2-regularised logistic regression (``logistic``), a one-hidden-layer ReLU network (``mlp``), or the mean
of their class probabilities (``mlp+logistic``: the network's grasp of negation, the linear model's smoother
scale). scikit-learn fits them; only the weights are kept, so a head saves to a data-only ``.npz`` and
``predict_proba`` needs nothing but numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

KINDS = {"logistic": ("logistic",), "mlp": ("mlp",), "mlp+logistic": ("mlp", "logistic")}


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def _as_multinomial(weights: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's binary models keep one logit z for class 1: softmax([0, z]) = (1 - sigmoid(z), sigmoid(z))."""
    if weights.shape[-1] == 1:
        return (np.concatenate([np.zeros_like(weights), weights], axis=-1),
                np.concatenate([np.zeros_like(bias), bias]))
    return weights, bias


class ClassifierHead:
    """Class probabilities from embeddings, with classes named by ``classes`` (in the order of the columns).

    ``arrays`` maps ``<kind>__<name>`` to the fitted weights; :meth:`fit` fills it, :meth:`from_arrays` restores it.
    """

    def __init__(self, kind: str, classes: Sequence[str], arrays: dict[str, np.ndarray] | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown classifier kind {kind!r}; choose one of {sorted(KINDS)}")
        self.kind, self.classes, self.arrays = kind, tuple(classes), dict(arrays or {})

    def fit(self, X: np.ndarray, labels: np.ndarray, *, C: float = 1.0, hidden_units: int = 256, alpha: float = 1e-3,
            random_state: int = 0, balanced: bool = False,
            sample_weight: np.ndarray | None = None) -> ClassifierHead:
        """Fit on embeddings ``X`` (n, d) and ``labels`` (n,) = indices into ``classes``; every class must occur.
        ``balanced`` weighs the logistic model's classes inversely to their frequency (the network is fitted on a
        resample with equal class counts instead, since scikit-learn's MLP takes no weights); ``sample_weight``
        (per row) is for the logistic model only."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.neural_network import MLPClassifier

        labels = np.asarray(labels)
        if sample_weight is not None and self.kind != "logistic":
            raise ValueError("sample weights need a logistic head (scikit-learn's MLP takes none)")
        present = np.unique(labels)
        if len(present) != len(self.classes) or not np.array_equal(present, np.arange(len(self.classes))):
            missing = sorted(set(range(len(self.classes))) - set(present.tolist()))
            raise ValueError(f"every class needs examples; none for {[self.classes[i] for i in missing]}")
        arrays: dict[str, np.ndarray] = {}
        for kind in KINDS[self.kind]:
            if kind == "logistic":
                model = LogisticRegression(C=C, max_iter=3000, class_weight="balanced" if balanced else None)
                model.fit(X, labels, sample_weight=sample_weight)
                weights, bias = _as_multinomial(model.coef_.T, model.intercept_)
                arrays.update({"logistic__weights": weights, "logistic__bias": bias})
            else:
                rows = _balanced_rows(labels, random_state) if balanced else np.arange(len(labels))
                model = MLPClassifier(hidden_layer_sizes=(hidden_units,), alpha=alpha, max_iter=300,
                                      early_stopping=True, random_state=random_state)
                model.fit(X[rows], labels[rows])
                weights, bias = _as_multinomial(model.coefs_[1], model.intercepts_[1])
                arrays.update({"mlp__hidden_weights": model.coefs_[0], "mlp__hidden_bias": model.intercepts_[0],
                               "mlp__weights": weights, "mlp__bias": bias})
        self.arrays = {name: np.asarray(value, dtype=np.float64) for name, value in arrays.items()}
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities, shape (n, len(classes)): the mean over the head's kinds."""
        probabilities = []
        for kind in KINDS[self.kind]:
            a = {name.split("__", 1)[1]: value for name, value in self.arrays.items() if name.startswith(f"{kind}__")}
            hidden = np.maximum(X @ a["hidden_weights"] + a["hidden_bias"], 0.0) if kind == "mlp" else X
            probabilities.append(_softmax(hidden @ a["weights"] + a["bias"]))
        return np.mean(probabilities, axis=0)

    def shapes(self, dimension: int) -> dict[str, tuple[int, ...]]:
        """The arrays a fitted head holds and their shapes, for embeddings of ``dimension``."""
        k = len(self.classes)
        shapes: dict[str, tuple[int, ...]] = {}
        for kind in KINDS[self.kind]:
            if kind == "logistic":
                shapes.update({"logistic__weights": (dimension, k), "logistic__bias": (k,)})
            else:
                hidden = self.arrays["mlp__hidden_bias"].shape[0] if "mlp__hidden_bias" in self.arrays else 0
                shapes.update({"mlp__hidden_weights": (dimension, hidden), "mlp__hidden_bias": (hidden,),
                               "mlp__weights": (hidden, k), "mlp__bias": (k,)})
        return shapes


def _balanced_rows(labels: np.ndarray, seed: int) -> np.ndarray:
    """Row indices with every class resampled (with replacement) to the size of the largest one."""
    rng = np.random.default_rng(seed)
    counts = np.bincount(labels)
    return np.concatenate([rng.choice(np.flatnonzero(labels == c), size=counts.max(), replace=counts[c] < counts.max())
                           if counts[c] < counts.max() else np.flatnonzero(labels == c) for c in range(len(counts))])
