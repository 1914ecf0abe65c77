"""The embedder interface: texts in, L2-normalised float32 vectors out, in batches, with a progress bar for
long inputs. ``model_id`` names backend, model and a hash of the weights, so that axes trained on one model are
never applied to another."""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence

import numpy as np
from tqdm.auto import tqdm

from corpus_audit.common.errors import UserError

PROGRESS_MIN_TEXTS = 512  # shorter inputs finish too fast for a progress bar to help
SENTENCE_TRANSFORMERS_BACKEND = "sentence-transformers"
ONNX_FP32_BACKEND = "onnxruntime-fp32"
#: Backends that compute the same fp32 function of the same weights: the ONNX export is checked against the
#: sentence-transformers model when it is made (corpus_audit.embed.onnx.export), so that axes trained on either
#: apply to the other. A backend that rounds differently (bf16, int8) is never in this set.
SAME_EMBEDDINGS_BACKENDS = frozenset({SENTENCE_TRANSFORMERS_BACKEND, ONNX_FP32_BACKEND})
#: The ONNX export with its matrix weights quantised to int8 (``--backend onnx-int8``): not the same embeddings
#: (cosine about 0.99 to the fp32 ones), so it is never in the set above. Axes trained on the fp32 embeddings apply
#: to it because a user asked for it, and the report then shows the validity measured with it (:func:`quantises`).
ONNX_INT8_BACKEND = "onnxruntime-int8"


class EmbedderError(UserError, RuntimeError):
    """A model cannot be loaded or used as asked."""


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors of shape (n, dimension).

    A model with a stance branch (:mod:`corpus_audit.embed.stance`) gives two views of each text in one row: the
    sentence embedding, then the stance features; ``views`` holds their sizes, and each is normalised on its own.
    """

    #: backend name, e.g. "sentence-transformers"
    backend: str = ""
    #: sizes of the views each row holds, in order (one view: the sentence embedding); set by models with a branch
    views: tuple[int, ...] = ()

    def __init__(self, name: str, batch_size: int = 64) -> None:
        self.name = name
        self.batch_size = batch_size

    @property
    @abstractmethod
    def dimension(self) -> int: ...

    @property
    @abstractmethod
    def weights_sha256(self) -> str: ...

    @abstractmethod
    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        """Embed one batch; may return unnormalised vectors."""

    @property
    def model_id(self) -> str:
        """``backend:name@sha12``: the identity recorded in outputs and checked when axes are applied."""
        return f"{self.backend}:{self.name}@{self.weights_sha256[:12]}"

    def _lengths(self, texts: list[str]) -> list[int]:
        """What a batch of ``texts`` is padded to: characters here."""
        return [len(text) for text in texts]

    def _batches(self, texts: list[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(rows of ``texts``, their unnormalised vectors) batch by batch, every row once: here ``batch_size`` texts
        at a time in order of :meth:`_lengths`, so that each batch pads little."""
        order = np.argsort(self._lengths(texts), kind="stable")
        for start in range(0, len(texts), self.batch_size):
            rows = order[start:start + self.batch_size]
            yield rows, self._encode_batch([texts[i] for i in rows])

    def encode(self, texts: Sequence[str], show_progress: bool | None = None) -> np.ndarray:
        """Embed ``texts`` -> float32 array (len(texts), dimension), rows L2-normalised.

        ``show_progress``: True/False forces the progress bar (stderr) on or off; None shows it for long
        inputs when stderr is a terminal.

        Texts are processed in batches of similar lengths (:meth:`_batches`); rows come back in input order.
        """
        texts = list(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        # None: a bar for long inputs, and only on a terminal (tqdm's disable=None).
        disable = (None if len(texts) >= PROGRESS_MIN_TEXTS else True) if show_progress is None else not show_progress
        bounds = np.cumsum(self.views)[:-1] if self.views else []
        with tqdm(total=len(texts), desc=f"embedding ({self.name})", unit="sent", disable=disable, leave=False,
                  file=sys.stderr) as bar:
            for rows, batch in self._batches(texts):
                out[rows] = np.hstack([unit_rows(part) for part in
                                       np.split(np.asarray(batch, dtype=np.float32), bounds, axis=1)])
                bar.update(len(rows))
        return out


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row of ``vectors`` divided by its L2 norm (a zero row stays zero)."""
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def branched_name(name: str, adapter) -> str:
    """The name of model ``name`` run with the stance branch ``adapter`` (a
    :class:`~corpus_audit.embed.stance.StanceAdapter`, or None: ``name`` itself)."""
    return name if adapter is None else f"{name}+stance-{adapter.lang}"


def same_embeddings(trained_on: str, model_id: str) -> bool:
    """Whether embeddings of ``model_id`` are those that ``trained_on`` names (both ``backend:name@sha12``): the
    same id, or the same weights (``name@sha12``) run by two backends of ``SAME_EMBEDDINGS_BACKENDS``."""
    if trained_on == model_id:
        return True
    trained_backend, _, trained_weights = trained_on.partition(":")
    backend, _, weights = model_id.partition(":")
    return trained_weights == weights and {trained_backend, backend} <= SAME_EMBEDDINGS_BACKENDS


def quantises(trained_on: str, model_id: str) -> bool:
    """Whether ``model_id`` runs the weights that ``trained_on`` names (both ``backend:name@sha12``) on
    ``ONNX_INT8_BACKEND``, ``trained_on`` being one of ``SAME_EMBEDDINGS_BACKENDS``."""
    trained_backend, _, trained_weights = trained_on.partition(":")
    backend, _, weights = model_id.partition(":")
    return backend == ONNX_INT8_BACKEND and trained_backend in SAME_EMBEDDINGS_BACKENDS and trained_weights == weights


def axes_apply(trained_on: str, model_id: str) -> bool:
    """Whether axes trained on the embeddings of ``trained_on`` may score those of ``model_id``:
    :func:`same_embeddings`, or :func:`quantises` (asked for by name)."""
    return same_embeddings(trained_on, model_id) or quantises(trained_on, model_id)
