"""An embedding cache shared by every audit and score run of this user: vectors keyed by the model's identity and a
digest of the text embedded, so that auditing a corpus again after ``corpus-audit clean`` (or any corpus sharing
sentences with one audited before) embeds only the sentences that model has never seen.

Format (data only, never pickled): a folder per model (its ``model_id``, made safe as a file name) holding shards,
each a pair of ``.npy`` files written atomically, ``<name>.vectors.npy`` (float32, one row per text) then
``<name>.keys.npy`` (uint8, one 16-byte BLAKE2b digest of the UTF-8 text per row). A shard counts once its keys file exists, so an
interrupted write leaves nothing that is read; every writer names its shards afresh, so several processes can
share a cache. A shard that cannot be read, or whose two files disagree, is ignored (and its texts embedded again).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from corpus_audit.common.atomic import write_bytes_atomic
from corpus_audit.embed.base import Embedder

KEYS = ".keys.npy"
DIGEST_BYTES = 16
VECTORS = ".vectors.npy"


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/corpus-audit/embeddings`` (default ``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "corpus-audit" / "embeddings"


def text_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


class CachedEmbedder:
    """``embedder`` with the vectors of texts it has embedded before (in ``cache_dir``) taken from the cache.

    Every attribute but ``encode`` is ``embedder``'s (``model_id``, ``dimension``, ...); ``reused`` and ``embedded``
    count the texts of this process.
    """

    def __init__(self, embedder: Embedder, cache_dir: str | Path) -> None:
        self.inner = embedder
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", embedder.model_id)
        self.folder = Path(cache_dir) / safe
        self.reused = 0
        self.embedded = 0
        self._index: dict[bytes, tuple[Path, int]] | None = None
        self._vectors: dict[Path, np.ndarray] = {}

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def _load_index(self) -> dict[bytes, tuple[Path, int]]:
        index: dict[bytes, tuple[Path, int]] = {}
        for keys_path in sorted(self.folder.glob(f"*{KEYS}")) if self.folder.is_dir() else ():
            vectors_path = keys_path.with_name(keys_path.name.removesuffix(KEYS) + VECTORS)
            try:
                keys = np.load(keys_path, allow_pickle=False)
                vectors = np.load(vectors_path, allow_pickle=False, mmap_mode="r")
            except (OSError, ValueError):
                continue
            if keys.dtype != np.uint8 or keys.ndim != 2 or keys.shape[1] != DIGEST_BYTES \
                    or vectors.shape != (len(keys), self.dimension) or vectors.dtype != np.float32:
                continue
            self._vectors[vectors_path] = vectors
            for row, key in enumerate(keys):
                index.setdefault(key.tobytes(), (vectors_path, row))
        return index

    def encode(self, texts: Sequence[str], show_progress: bool | None = None) -> np.ndarray:
        """The cached vectors of texts seen before, the embedder's for the others (then saved as one shard)."""
        texts = list(texts)
        if self._index is None:
            self._index = self._load_index()
        digests = [text_digest(text) for text in texts]
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        missing = []
        for position, digest in enumerate(digests):
            found = self._index.get(digest)
            if found is None:
                missing.append(position)
            else:
                out[position] = self._vectors[found[0]][found[1]]
        self.reused += len(texts) - len(missing)
        if missing:
            fresh = self.inner.encode([texts[position] for position in missing], show_progress)
            out[missing] = fresh
            self._save([digests[position] for position in missing], fresh)
            self.embedded += len(missing)
        return out

    def _save(self, digests: list[bytes], vectors: np.ndarray) -> None:
        # uint8 rows, not numpy's "S16", which drops a digest's trailing zero bytes
        keys = np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(-1, DIGEST_BYTES)
        unique = np.sort(np.unique(keys, axis=0, return_index=True)[1])  # a text repeated in one call: saved once
        self.folder.mkdir(parents=True, exist_ok=True)
        name = uuid.uuid4().hex
        vectors_path = self.folder / f"{name}{VECTORS}"
        write_bytes_atomic(vectors_path, _npy_bytes(np.ascontiguousarray(vectors[unique], dtype=np.float32)))
        write_bytes_atomic(self.folder / f"{name}{KEYS}", _npy_bytes(keys[unique]))  # last: the shard now counts
        self._vectors[vectors_path] = vectors[unique]
        for row, key in enumerate(keys[unique]):
            self._index.setdefault(key.tobytes(), (vectors_path, row))
