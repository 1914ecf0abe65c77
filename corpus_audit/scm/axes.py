"""``SCMAxes``: a scikit-learn style estimator from sentence embeddings to (warmth, competence), and the file that
carries the whole instrument (the axes, and optionally the judgement gate and the AQ-27 dimension heads).

Heads (the ``head`` parameter):

- ``polar`` (the reference of Fraser et al. 2022, as used by the seed paper): PLS regression
  (``n_components``, scaled) from embeddings to the 2-D targets; in the PLS latent space (each vector
  L2-normalised) the normalised centroids of the four quadrant classes give d1 = warm_comp - cold_incomp
  and d2 = warm_incomp - cold_comp; a vector's coordinates in the pseudo-inverse basis of [d1; d2],
  rotated by 45 degrees, are (competence, warmth).
- ``logistic``, ``mlp``, ``mlp+logistic``: one :class:`~corpus_audit.scm.heads.ClassifierHead` per dimension,
  fitted on the sentences labelled for it; the score is p(high) - p(low), in [-1, 1]. With ``neutral=True`` the
  target 0 is a third class (a sentence that says nothing of the dimension), so that neutral text scores near 0
  and a score grows with how clearly a sentence places people high or low (without it, 2 p(high) - 1 saturates
  at +-1 for anything).

Targets are (warmth, competence) per sentence in {-1, 0, 1}; NaN (and 0 unless ``neutral``) marks a dimension the
sentence does not label. After ``fit`` the estimator keeps only plain arrays (``projection_``), so it saves to a
data-only ``.npz`` (no pickle) and reloads without scikit-learn objects; scikit-learn is imported only to fit (the
estimator has the ``get_params`` of one, not its base class, whose import alone costs seconds). :meth:`SCMAxes.attach_judgement` adds the
judgement gate and the dimension heads; :meth:`SCMAxes.measure` gives every output column (``OUTPUT_COLUMNS``).
"""

from __future__ import annotations

import inspect
import json
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from corpus_audit.common.version import __version__
from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.errors import UserError
from corpus_audit.embed.base import axes_apply
from corpus_audit.scm.heads import KINDS, ClassifierHead
from corpus_audit.scm.text_head import TextHead
from corpus_audit.scm.columns import AXES, DIMENSION_CLASSES, OUTPUT_COLUMNS, STIGMA_COLUMN
from corpus_audit.stigma.judgement import CATEGORIES, DIMENSION_COLUMNS, JUDGEMENT

HEADS = ("polar", *KINDS)
#: The one array of an axes file that holds strings: the stigma text head's n-grams.
#: The text heads' vocabularies: the arrays of strings of an axes file.
TEXT_VOCABULARIES = ("stigma_text__vocabulary", "triage__vocabulary")
#: The classes of a triage head of its own (score/cascade.py).
TRIAGE_CLASSES = ("other", "stigmatising")
#: The metadata key of the triage calibration (score/cascade.py).
TRIAGE_KEY = "triage"
#: Classes of the stigma head (scm/stigma.py) by its target: ``binary``, stigmatising or not; ``judgement``, with the
#: sentences that judge people without stigmatising them (supportive, counter-stereotypical, reported) a class of
#: their own, so that the head learns what sets them apart from stigma rather than from neutral text; ``category``,
#: every non-stigmatising sentence in the class of its gate category (self-disclosure, a question, a figure of
#: speech... each learnt apart from stigma). The score is the probability of the last class, ``stigmatising``.
STIGMA_TARGETS = {"binary": ("not_stigmatising", "stigmatising"),
                  "judgement": ("other", "judgement_not_stigmatising", "stigmatising"),
                  "category": (*CATEGORIES, "stigmatising")}
STIGMA_CLASSES = STIGMA_TARGETS["binary"]
FORMAT_VERSION = 2


def stigma_class_probabilities(head: ClassifierHead, text_head: TextHead | None, X: np.ndarray,
                               texts: Sequence[str] | None, forms: Sequence[Sequence[str]] | None,
                               form_names: Sequence[str] = ()) -> np.ndarray:
    """The stigma target's class probabilities, uncalibrated, of embeddings ``X`` of ``texts`` whose mentions
    have ``forms``: ``head``'s (reading the indicators of ``form_names`` after the embedding, where given),
    averaged with ``text_head``'s where there is one (which needs ``texts``)."""
    features = np.hstack([X, form_indicators(forms, form_names, len(X))]) if form_names else X
    probabilities = head.predict_proba(features)
    if text_head is None:
        return probabilities
    if texts is None or len(texts) != len(X):
        raise ValueError("these axes score the stigma of the text as well: pass the texts of the embeddings")
    return (probabilities + text_head.predict_proba(texts, forms)) / 2


def stigma_probability(head: ClassifierHead, text_head: TextHead | None, X: np.ndarray,
                       texts: Sequence[str] | None, forms: Sequence[Sequence[str]] | None,
                       form_names: Sequence[str] = ()) -> np.ndarray:
    """p(stigmatising), uncalibrated (:func:`stigma_class_probabilities`' last class)."""
    return stigma_class_probabilities(head, text_head, X, texts, forms, form_names)[:, -1]


def gate_from_stigma(probabilities: np.ndarray) -> np.ndarray:
    """The gate's category probabilities (``CATEGORIES``) from those of the ``category`` stigma target: a
    stigmatising sentence is a judgement about people, so that class adds to the judgement's."""
    gate = np.array(probabilities[:, :len(CATEGORIES)], dtype=np.float64)
    gate[:, CATEGORIES.index(JUDGEMENT)] += probabilities[:, -1]
    return gate


def calibrated(probability: np.ndarray, calibration: Sequence[float] | None) -> np.ndarray:
    """``probability`` through Platt scaling ``calibration`` = (slope, intercept): sigmoid(slope * logit(p) +
    intercept); unchanged without one. Monotone, so it never changes an order."""
    if calibration is None:
        return probability
    p = np.clip(probability, 1e-6, 1 - 1e-6)
    return 1.0 / (1.0 + np.exp(-(calibration[0] * np.log(p / (1 - p)) + calibration[1])))


def form_indicators(forms: Sequence[Sequence[str]] | None, names: Sequence[str], n: int) -> np.ndarray:
    """(n, len(names)) 0/1: whether each of ``n`` sentences has a mention of each form of ``names`` (``forms``: the
    forms of each sentence's mentions; None, or an empty entry, when no lexicon mention is known: all zeros)."""
    indicators = np.zeros((n, len(names)), dtype=np.float64)
    if forms is not None:
        if len(forms) != n:
            raise ValueError(f"{len(forms)} form lists for {n} sentences")
        column = {name: index for index, name in enumerate(names)}
        for row, sentence_forms in enumerate(forms):
            for form in sentence_forms:
                if form in column:
                    indicators[row, column[form]] = 1.0
    return indicators


class AxesMismatchError(UserError, ValueError):
    """Axes applied to embeddings of another model or dimension."""


class AxesFileError(UserError, ValueError):
    """An axes file is unreadable, tampered with, or not an axes file."""


#: What numpy, zipfile and json raise on a damaged or foreign .npz (a bad zip, a bad CRC, a truncated member,
#: an object array refused by allow_pickle=False, a header that is not the expected JSON, absurd shapes, a member
#: whose compression method byte was damaged: zipfile's NotImplementedError).
AXES_FILE_ERRORS = (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError,
                    MemoryError, NotImplementedError, zipfile.BadZipFile, zlib.error)


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def axis_classes(neutral: bool) -> tuple[str, ...]:
    return ("low", "neutral", "high") if neutral else ("low", "high")


class SCMAxes:
    """Project sentence embeddings onto the SCM warmth and competence axes.

    Parameters
    ----------
    head : {"polar", "logistic", "mlp", "mlp+logistic"}
        How embeddings map to the plane (see module docstring).
    n_components : int
        PLS components for the ``polar`` head.
    C : float
        Inverse regularisation strength of the logistic models.
    hidden_units, alpha : int, float
        Hidden layer width and L2 penalty of the networks.
    random_state : int
        Seed of the networks' initialisation.
    neutral : bool
        Classifier heads: target 0 is a neutral class (see module docstring).

    Attributes
    ----------
    projection_ : dict[str, np.ndarray]
        The fitted arrays; ``transform`` uses only these.
    judgement_ : dict[str, ClassifierHead | TextHead]
        ``gate`` and ``dimensions`` once :meth:`attach_judgement` was called, else empty.
    n_features_in_ : int
        Embedding dimension seen in ``fit``.
    metadata_ : dict
        Free-form provenance (embedder id, lexicon/template hashes, recipe), saved with the arrays.
    """

    def __init__(self, head: str = "polar", n_components: int = 10, C: float = 1.0, hidden_units: int = 256,
                 alpha: float = 1e-3, random_state: int = 0, neutral: bool = False) -> None:
        self.head = head
        self.n_components = n_components
        self.C = C
        self.hidden_units = hidden_units
        self.alpha = alpha
        self.random_state = random_state
        self.neutral = neutral

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters, as scikit-learn's ``get_params`` gives them."""
        return {name: getattr(self, name) for name in inspect.signature(type(self).__init__).parameters
                if name != "self"}

    def fit(self, X: np.ndarray, y: np.ndarray, metadata: dict[str, Any] | None = None,
            views: Sequence[int] = ()) -> SCMAxes:
        """Fit on embeddings ``X`` (n, d) and targets ``y`` (n, 2) = (warmth, competence) in {-1, 0, 1} or NaN.

        ``views``: the sizes of the views each row of ``X`` holds (an embedder's ``views``: the sentence embedding,
        then a stance branch's features); the axes, the gate and the dimension heads read the first, the stigma head
        the second where there is one. Empty: one view, the whole row."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if X.ndim != 2 or y.shape != (X.shape[0], 2):
            raise ValueError(f"expected X of shape (n, d) and y of shape (n, 2); got {X.shape} and {y.shape}")
        self.views_ = _checked_views(views, X.shape[1])
        X = X[:, :self.views_[0]]
        if self.head == "polar":
            self.projection_ = self._fit_polar(X, np.nan_to_num(y))
        elif self.head in KINDS:
            self.projection_ = {f"{axis}__{name}": value for index, axis in enumerate(AXES)
                                for name, value in self._fit_axis(X, y[:, index]).arrays.items()}
        else:
            raise ValueError(f"unknown head {self.head!r}; choose one of {HEADS}")
        self.n_features_in_ = sum(self.views_)
        self.metadata_ = dict(metadata or {})
        self.judgement_: dict[str, ClassifierHead] = {}
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

    def _fit_axis(self, X: np.ndarray, target: np.ndarray) -> ClassifierHead:
        """The classifier of one dimension, on the sentences labelled for it."""
        labelled = ~np.isnan(target) if self.neutral else np.nan_to_num(target) != 0
        classes = axis_classes(self.neutral)
        if set(np.unique(target[labelled])) != ({-1.0, 0.0, 1.0} if self.neutral else {-1.0, 1.0}):
            raise ValueError(f"the {self.head} head needs {' and '.join(classes)} examples on both dimensions")
        labels = np.searchsorted([-1.0, 0.0, 1.0] if self.neutral else [-1.0, 1.0], target[labelled])
        return ClassifierHead(self.head, classes).fit(
            X[labelled], labels, C=self.C, hidden_units=self.hidden_units, alpha=self.alpha,
            random_state=self.random_state)

    def _axis_head(self, axis: str) -> ClassifierHead:
        prefix = f"{axis}__"
        return ClassifierHead(self.head, axis_classes(self.neutral),
                              {name[len(prefix):]: value for name, value in self.projection_.items()
                               if name.startswith(prefix)})

    def _check_fitted(self, X: np.ndarray) -> np.ndarray:
        if not hasattr(self, "projection_"):
            raise ValueError("SCMAxes is not fitted; call fit() or SCMAxes.load()")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise AxesMismatchError(
                f"these axes expect {self.n_features_in_}-dimensional embeddings "
                f"(model {self.metadata_.get('embedder_id', 'unknown')}); got shape {X.shape}"
            )
        return X

    def sentence_view(self, X: np.ndarray) -> np.ndarray:
        """The sentence embeddings of rows ``X`` (what the axes, the gate and the dimension heads read)."""
        return X[:, :self._views[0]]

    def stance_view(self, X: np.ndarray) -> np.ndarray:
        """What the stigma head reads of rows ``X``: a stance branch's features, else the sentence embedding."""
        views = self._views
        return X[:, views[0]:] if len(views) > 1 else X

    @property
    def _views(self) -> tuple[int, ...]:
        return getattr(self, "views_", None) or (self.n_features_in_,)

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Embeddings (n, d) -> float32 array (n, 2): columns warmth, competence."""
        X = self.sentence_view(self._check_fitted(X))
        p = self.projection_
        if self.head == "polar":
            latent = _normalise_rows(((X - p["x_mean"]) / p["x_std"]) @ p["rotations"])
            return (latent @ p["basis"]).astype(np.float32)
        probabilities = [self._axis_head(axis).predict_proba(X) for axis in AXES]
        return np.stack([proba[:, -1] - proba[:, 0] for proba in probabilities], axis=1).astype(np.float32)

    # ---- the judgement gate and the AQ-27 dimension heads ----

    @property
    def judges(self) -> bool:
        """Whether these axes carry the judgement gate and the dimension heads."""
        return bool(getattr(self, "judgement_", None))

    def attach_judgement(self, gate: ClassifierHead | None, dimensions: ClassifierHead,
                         stigma: ClassifierHead | None = None, stigma_text: TextHead | None = None,
                         stigma_forms: Sequence[str] = (),
                         stigma_calibration: Sequence[float] | None = None) -> SCMAxes:
        """Carry ``gate`` (classes ``CATEGORIES``), ``dimensions`` (classes ``DIMENSION_CLASSES``) and optionally the
        stigma head (classes ``STIGMA_CLASSES``, scm/stigma.py) with the axes, and with it optionally its text head
        (scm/text_head.py), whose probability the stigma score averages with the embedding head's. ``gate`` None:
        the gate reads the stigma head, whose target must then be ``category`` (:attr:`gate_reads_stigma`).
        ``stigma_forms``: the mention forms whose indicators (:func:`form_indicators`) the stigma head reads after
        the embedding (the mask erases whether a mention was a slur or a diagnosis); empty for none.
        ``stigma_calibration``: (slope, intercept) of the Platt scaling of the stigma score (:func:`calibrated`),
        or None."""
        if (gate is not None and gate.classes != CATEGORIES) or dimensions.classes != DIMENSION_CLASSES:
            raise ValueError("the gate must have the classes CATEGORIES and the dimension head DIMENSION_CLASSES")
        if gate is None and (stigma is None or stigma.classes != STIGMA_TARGETS["category"]):
            raise ValueError("without a gate of its own, the gate reads a stigma head of the target 'category'")
        if stigma is not None and stigma.classes not in STIGMA_TARGETS.values():
            raise ValueError(f"a stigma head must have the classes of a target: {STIGMA_TARGETS}")
        if stigma_text is not None and stigma is not None and stigma_text.classes != stigma.classes:
            raise ValueError("a stigma text head must have the classes of its stigma head")
        if stigma_text is not None and stigma is None:
            raise ValueError("a stigma text head goes with a stigma head")
        if (stigma_forms or stigma_calibration is not None) and stigma is None:
            raise ValueError("stigma forms and calibration go with a stigma head")
        self.judgement_ = {**({"gate": gate} if gate else {}), "dimensions": dimensions,
                           **({"stigma": stigma} if stigma else {}),
                           **({"stigma_text": stigma_text} if stigma_text else {})}
        # a triage is calibrated against a score: a new score goes without the old one's (attach_triage)
        getattr(self, "metadata_", {}).pop(TRIAGE_KEY, None)
        self.stigma_forms_ = tuple(stigma_forms)
        self.stigma_calibration_ = None if stigma_calibration is None else tuple(map(float, stigma_calibration))
        return self

    @property
    def stigma_head(self) -> ClassifierHead | None:
        """The stigma head, or None (axes trained before it, or by a recipe without the gate)."""
        return getattr(self, "judgement_", {}).get("stigma")

    def attach_triage(self, calibration: dict[str, Any], head: TextHead | None = None) -> SCMAxes:
        """Carry the cascade's triage (score/cascade.py): its ``calibration`` (threshold and what measured it) and
        its text head, where it has one of its own (classes ``TRIAGE_CLASSES``; None: the stigma text head)."""
        if self.stigma_head is None:
            raise ValueError("a triage goes with a stigma head")
        if head is None and self.stigma_text_head is None:
            raise ValueError("axes without a stigma text head need a triage head of their own")
        if head is not None and head.classes != TRIAGE_CLASSES:
            raise ValueError(f"a triage head has the classes {TRIAGE_CLASSES}")
        self.judgement_.pop("triage", None)
        if head is not None:
            self.judgement_["triage"] = head
        self.metadata_[TRIAGE_KEY] = dict(calibration)
        return self

    @property
    def triage_head(self) -> TextHead | None:
        """The text head the cascade's triage reads: its own, else the stigma text head; None without a triage
        calibration."""
        if TRIAGE_KEY not in getattr(self, "metadata_", {}):
            return None
        return self.judgement_.get("triage") or self.stigma_text_head

    @property
    def stigma_text_head(self) -> TextHead | None:
        """The stigma score's text head, or None (the score is then the embedding head's alone)."""
        return getattr(self, "judgement_", {}).get("stigma_text")

    def stigma_score(self, X: np.ndarray, texts: Sequence[str] | None,
                     forms: Sequence[Sequence[str]] | None = None) -> np.ndarray:
        """p(stigmatising) of embeddings ``X`` of ``texts`` whose mentions have ``forms`` (one list per text; None:
        not known, read as no mention): :func:`stigma_probability` of the heads, through the axes' calibration."""
        return calibrated(self._stigma_classes(X, texts, forms)[:, -1], getattr(self, "stigma_calibration_", None))

    def _stigma_classes(self, X: np.ndarray, texts: Sequence[str] | None,
                        forms: Sequence[Sequence[str]] | None) -> np.ndarray:
        return stigma_class_probabilities(self.stigma_head, self.stigma_text_head,
                                          self.stance_view(self._check_fitted(X)), texts, forms,
                                          getattr(self, "stigma_forms_", ()))

    @property
    def gate_reads_stigma(self) -> bool:
        """Whether the gate's categories are the stigma head's (:func:`gate_from_stigma`): one model whose
        outputs agree, a stigmatising sentence being a judgement, instead of a gate of its own."""
        return getattr(self, "judgement_", {}).get("gate") is None and self.stigma_head is not None

    def gate_probabilities(self, X: np.ndarray, texts: Sequence[str] | None = None,
                           forms: Sequence[Sequence[str]] | None = None) -> np.ndarray:
        """The probability of each gate category (``CATEGORIES``) of embeddings ``X`` of ``texts``: the gate's, or
        the stigma head's where the gate reads it (:attr:`gate_reads_stigma`; the texts and forms as
        :meth:`stigma_score` takes them)."""
        if self.gate_reads_stigma:
            return gate_from_stigma(self._stigma_classes(X, texts, forms))
        return self.judgement_["gate"].predict_proba(self.sentence_view(self._check_fitted(X)))

    def measure(self, X: np.ndarray, texts: Sequence[str] | None = None,
                forms: Sequence[Sequence[str]] | None = None) -> np.ndarray:
        """Embeddings (n, d) of ``texts`` -> float32 array (n, len(OUTPUT_COLUMNS)): warmth, competence, the
        probability of each category (``CATEGORIES``; that of a judgement is the judgement strength), the nine
        dimension scores p(endorse) - p(reject) and the stigma score p(stigmatising) (:meth:`stigma_score`: axes
        with a stigma text head need ``texts``; ``forms``, the mention forms of each text, where known). The
        judgement columns are NaN when the axes carry no gate, the stigma score when they carry no stigma head."""
        X = self._check_fitted(X)
        out = np.full((len(X), len(OUTPUT_COLUMNS)), np.nan, dtype=np.float32)
        out[:, :2] = self.transform(X)
        if self.judges:
            out[:, 2:2 + len(CATEGORIES)] = self.gate_probabilities(X, texts, forms)
            proba = self.judgement_["dimensions"].predict_proba(self.sentence_view(X))[:, 1:].reshape(
                len(X), len(DIMENSION_COLUMNS), 2)
            out[:, 2 + len(CATEGORIES):2 + len(CATEGORIES) + len(DIMENSION_COLUMNS)] = proba[:, :, 0] - proba[:, :, 1]
        if self.stigma_head is not None:
            out[:, OUTPUT_COLUMNS.index(STIGMA_COLUMN)] = self.stigma_score(X, texts, forms)
        return out

    def check_embedder(self, embedder_id: str) -> None:
        """Raise ``AxesMismatchError`` unless these axes were trained on the embeddings of ``embedder_id``: the same
        model id, or the same weights run by a backend that computes the same embeddings
        (:func:`~corpus_audit.embed.base.same_embeddings`: the shipped minilm axes, trained with
        sentence-transformers, apply to the onnxruntime fp32 backend, whose export is checked against it), or those
        weights quantised to int8 (:func:`~corpus_audit.embed.base.axes_apply`)."""
        trained_on = self.metadata_.get("embedder_id")
        if not isinstance(trained_on, str) or not axes_apply(trained_on, embedder_id):
            raise AxesMismatchError(
                f"these axes were trained on embeddings of {trained_on!r}, not {embedder_id!r}; "
                "train axes for this model with `corpus-audit axes train --model ...`"
            )

    # ---- persistence: a data-only npz (arrays + one JSON string), loaded with allow_pickle=False ----

    def _all_arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"projection__{name}": np.asarray(value) for name, value in self.projection_.items()}
        for part, head in getattr(self, "judgement_", {}).items():
            arrays.update({f"{part}__{name}": np.asarray(value) for name, value in head.arrays.items()})
        return arrays

    def save(self, path: str | Path) -> None:
        if not hasattr(self, "projection_"):
            raise ValueError("cannot save unfitted SCMAxes")
        arrays = self._all_arrays()
        header = {
            "format": "corpus-audit-scm-axes",
            "format_version": FORMAT_VERSION,
            "package_version": __version__,
            "params": self.get_params(),
            "n_features_in": int(self.n_features_in_),
            "views": list(self._views),
            "arrays": sorted(arrays),
            "judgement": {part: head.kind for part, head in getattr(self, "judgement_", {}).items()},
            "stigma_forms": list(getattr(self, "stigma_forms_", ())),
            "stigma_classes": list(self.stigma_head.classes) if self.stigma_head else None,
            "stigma_calibration": list(getattr(self, "stigma_calibration_", None) or []) or None,
            "metadata": self.metadata_,
        }
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as handle:
                np.savez(handle, header=np.array(json.dumps(header, sort_keys=True)), **arrays)

    @classmethod
    def load(cls, path: str | Path) -> SCMAxes:
        """Axes saved by :meth:`save`. Anything else, or a damaged or tampered file, raises ``AxesFileError``
        (``FileNotFoundError`` for a missing one); nothing is ever unpickled."""
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as data:
                header = json.loads(str(data["header"]))
                if not isinstance(header, dict) or header.get("format") != "corpus-audit-scm-axes" \
                        or header.get("format_version") != FORMAT_VERSION:
                    raise AxesFileError(f"{path}: not a corpus-audit axes file of format version {FORMAT_VERSION}; "
                                        "train axes again with `corpus-audit axes train`")
                # Numbers as float64; the stigma text head's vocabulary is the one array of strings.
                arrays = {name: np.asarray(data[name]) if name in TEXT_VOCABULARIES
                          else np.asarray(data[name], dtype=np.float64) for name in header["arrays"]}
            axes = cls(**header["params"])
            if axes.head not in HEADS:
                raise AxesFileError(f"{path}: unknown head {axes.head!r}")
            axes.projection_ = {name.split("__", 1)[1]: value for name, value in arrays.items()
                                if name.startswith("projection__")}
            axes.n_features_in_ = int(header["n_features_in"])
            axes.views_ = _checked_views(header.get("views") or (), axes.n_features_in_)
            axes.metadata_ = dict(header["metadata"])
            axes.judgement_ = {}
            parts = header.get("judgement") or {}
            # files from before the three-class target hold a binary head and no "stigma_classes"
            stigma_classes = tuple(header.get("stigma_classes") or STIGMA_CLASSES)
            if stigma_classes not in STIGMA_TARGETS.values():
                raise AxesFileError(f"{path}: unknown stigma classes {list(stigma_classes)}")
            if parts:
                heads = {part: ClassifierHead(kind, classes, {name.split("__", 1)[1]: value
                                                              for name, value in arrays.items()
                                                              if name.startswith(f"{part}__")})
                         for (part, classes) in (("gate", CATEGORIES), ("dimensions", DIMENSION_CLASSES),
                                                 ("stigma", stigma_classes))
                         if part in parts for kind in [parts[part]]}
                text_arrays = {name.split("__", 1)[1]: value for name, value in arrays.items()
                               if name.startswith("stigma_text__")}
                if "stigma_text" in parts and parts["stigma_text"] != TextHead.kind:
                    raise AxesFileError(f"{path}: unknown stigma text head {parts['stigma_text']!r}")
                axes.attach_judgement(heads.get("gate"), heads["dimensions"], heads.get("stigma"),
                                      TextHead(stigma_classes, text_arrays) if "stigma_text" in parts else None,
                                      [str(form) for form in header.get("stigma_forms") or ()],
                                      _calibration(header.get("stigma_calibration")))
                axes.metadata_ = dict(header["metadata"])  # attach_judgement leaves out a triage calibration
                if "triage" in parts:
                    if parts["triage"] != TextHead.kind:
                        raise AxesFileError(f"{path}: unknown triage head {parts['triage']!r}")
                    axes.judgement_["triage"] = TextHead(TRIAGE_CLASSES, {
                        name.split("__", 1)[1]: value for name, value in arrays.items() if name.startswith("triage__")})
            # A missing array, a wrong shape (some would even broadcast) or a NaN fails here, not in a projection.
            for name, shape in _array_shapes(axes).items():
                text = name in TEXT_VOCABULARIES
                if arrays[name].shape != shape or (arrays[name].dtype.kind != "U" if text
                                                   else not np.isfinite(arrays[name]).all()):
                    raise ValueError(f"array {name!r} has shape {arrays[name].shape} (expected {shape}) or "
                                     "values that are not finite")
            if set(arrays) != set(_array_shapes(axes)):
                raise ValueError(f"unexpected arrays {sorted(set(arrays) - set(_array_shapes(axes)))}")
        except (FileNotFoundError, AxesFileError):
            raise
        except AXES_FILE_ERRORS as error:
            raise AxesFileError(f"{path}: not a readable corpus-audit axes file ({type(error).__name__}: {error})") \
                from None
        return axes


def _checked_views(views: Sequence[int], width: int) -> tuple[int, ...]:
    """``views`` (sizes; empty: one view of ``width``) checked to be one or two positive sizes adding up to
    ``width``."""
    sizes = tuple(int(size) for size in views) or (int(width),)
    if not 1 <= len(sizes) <= 2 or min(sizes) < 1 or sum(sizes) != width:
        raise ValueError(f"views {list(sizes)} do not split rows of {width} values into a sentence embedding and "
                         "at most one stance view")
    return sizes


def _calibration(value: Any) -> tuple[float, float] | None:
    """A header's stigma calibration: None, or two finite numbers (anything else is a damaged file)."""
    if value is None:
        return None
    slope, intercept = (float(number) for number in value)  # a wrong length or type raises: a damaged file
    if not (np.isfinite(slope) and np.isfinite(intercept)):
        raise ValueError(f"stigma calibration {value!r} is not two finite numbers")
    return slope, intercept


def _array_shapes(axes: SCMAxes) -> dict[str, tuple[int, ...]]:
    """The arrays fitted axes hold (as saved) and their shapes (see ``fit`` and ``attach_judgement``)."""
    dimension, stance = axes._views[0], axes._views[-1]
    if axes.head == "polar":
        components = axes.projection_["rotations"].shape[-1]
        shapes = {"projection__x_mean": (dimension,), "projection__x_std": (dimension,),
                  "projection__rotations": (dimension, components), "projection__basis": (components, 2)}
    else:
        shapes = {f"projection__{axis}__{name}": shape for axis in AXES
                  for name, shape in axes._axis_head(axis).shapes(dimension).items()}
    for part, head in axes.judgement_.items():
        # The stigma head reads the embedding and then its form indicators.
        head_shapes = head.shapes() if isinstance(head, TextHead) else head.shapes(
            stance + len(axes.stigma_forms_) if part == "stigma" else dimension)
        shapes.update({f"{part}__{name}": shape for name, shape in head_shapes.items()})
    return shapes
