"""Saved chunks of a long scoring stage (the audit's score parts, the probe's PLL parts): each chunk is saved as
soon as it is scored, so that an interrupted run resumes at the first missing chunk, and is trusted again only if
its bytes still have the SHA-256 recorded when it was saved.

The bookkeeping lives here once; what a chunk holds (``.npy`` arrays, Parquet tables) and how a stage scores the
missing ones stay with each stage.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from corpus_audit.common.atomic import write_bytes_atomic, write_text_atomic
from corpus_audit.common.checkpoints import fingerprint
from corpus_audit.common.resources import sha256_bytes

T = TypeVar("T")


class SavedChunks:
    """A folder of chunk files ``part-NNNNNN<suffix>`` and ``meta.json``.

    ``meta.json`` holds the configuration key (a fingerprint of the caller's key and the chunk size), the model
    that scored the chunks and each chunk's SHA-256. An unreadable ``meta.json`` or another key discards every
    chunk; a chunk that is missing, unrecorded or damaged is scored again; the log says why each time.

    Subclasses set ``chunk`` (sentences per chunk, a class attribute so that tests can make it small), ``suffix``
    (the chunk files' extension) and ``configuration`` (what a key is made of, named in the discard message).
    """

    chunk: int
    suffix: str
    configuration: str

    def __init__(self, folder: Path, key: Any) -> None:
        self.folder = folder
        self.key = fingerprint([key, self.chunk])  # another chunk size would cut (and batch) the sentences differently
        self.meta_path = folder / "meta.json"
        self.model_id: str | None = None
        self.digests: dict[str, str] = {}

    def chunk_path(self, index: int) -> Path:
        return self.folder / f"part-{index:06d}{self.suffix}"

    def spans(self, total: int) -> list[tuple[int, int]]:
        """The (start, end) of each chunk of ``total`` sentences: they depend only on the count, so a resumed run
        cuts the sentences exactly as an uninterrupted one."""
        return [(start, min(start + self.chunk, total)) for start in range(0, total, self.chunk)]

    def load_meta(self, log: Callable[[str], None]) -> None:
        """Read ``meta.json``; when it is unreadable or of another key, empty the folder and start again."""
        if self.meta_path.exists():
            try:
                meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
                if not (isinstance(meta, dict) and isinstance(meta.get("parts", {}), dict)):
                    raise ValueError("not a score-parts table")
            except (OSError, ValueError) as error:
                log(f"score: {self.meta_path} is unreadable ({error}); scoring every chunk again")
            else:
                if meta.get("key") == self.key:
                    self.model_id, self.digests = meta.get("model_id"), dict(meta.get("parts", {}))
                    return
                log(f"score: discarding saved chunks of another configuration ({self.configuration})")
        self.remove()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.model_id, self.digests = None, {}

    def load_chunk(self, index: int, decode: Callable[[bytes], T], log: Callable[[str], None]) -> T | None:
        """Chunk ``index`` decoded by ``decode``, or None when it must be scored again: missing, unrecorded, or
        damaged (its digest differs, or ``decode`` raises ``ValueError``, ``KeyError`` or ``OSError``)."""
        path = self.chunk_path(index)
        recorded = self.digests.get(path.name)
        if recorded is None or not path.exists():  # never finished, or killed between saving and recording
            return None
        try:
            data = path.read_bytes()
            if sha256_bytes(data) != recorded:
                raise ValueError("its SHA-256 differs from the one recorded")
            return decode(data)
        except (OSError, ValueError, KeyError) as error:
            log(f"score: {path.name} is damaged ({error}); scoring its sentences again")
            return None

    def save_chunk(self, index: int, data: bytes) -> None:
        """Save chunk ``index`` and record its digest, only once saved: a kill in between leaves it unrecorded."""
        path = self.chunk_path(index)
        write_bytes_atomic(path, data)
        self.digests[path.name] = sha256_bytes(data)
        write_text_atomic(self.meta_path, json.dumps({"key": self.key, "model_id": self.model_id,
                                                      "parts": self.digests}))

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
