"""Any sentence-transformers model, by hub name (needs the hub or its cache) or local folder."""

from __future__ import annotations

import hashlib

import numpy as np

from corpus_audit.embed.base import SENTENCE_TRANSFORMERS_BACKEND, Embedder, EmbedderError


class SentenceTransformerEmbedder(Embedder):
    """Any sentence-transformers model, by hub name (needs the hub or its cache) or local folder."""

    backend = SENTENCE_TRANSFORMERS_BACKEND

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
