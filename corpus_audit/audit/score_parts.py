"""The score stage of an audit in fixed chunks of sentences, each saved as soon as it is scored, so that an
interrupted audit resumes at the first missing chunk."""

from __future__ import annotations

import io
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from corpus_audit.common.atomic import write_bytes_atomic, write_text_atomic
from corpus_audit.common.checkpoints import fingerprint
from corpus_audit.common.resources import sha256_bytes
from corpus_audit.scm.columns import OUTPUT_COLUMNS
from corpus_audit.score.scorer import CHUNK_SENTENCES, Scorer


class ScoreParts:
    """The score stage in fixed chunks of sentences, each saved (data-only ``.npy``) as soon as it is scored.

    An interrupted audit resumes at the first missing chunk. Chunk boundaries depend only on the sentence
    list, so a resumed run embeds exactly the batches an uninterrupted one would, and gives the same scores.
    ``meta.json`` holds the configuration (``key``), the model that scored the chunks and each chunk's
    SHA-256: chunks of another configuration or model, and damaged or unrecorded chunks, are scored again,
    saying why.
    """

    #: Sentences per chunk (the tests make it small to get several chunks from a small corpus).
    chunk = CHUNK_SENTENCES

    def __init__(self, folder: Path, key: str, n_texts: int) -> None:
        self.folder, self.n_texts = folder, n_texts
        self.key = fingerprint([key, self.chunk])  # another chunk size would batch the embedding differently
        self.meta_path = folder / "meta.json"
        self.model_id: str | None = None
        self.digests: dict[str, str] = {}

    def _chunk_path(self, index: int) -> Path:
        return self.folder / f"part-{index:06d}.npy"

    def _load_meta(self, log: Callable[[str], None]) -> None:
        meta = None
        if self.meta_path.exists():
            try:
                meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
                if not (isinstance(meta, dict) and isinstance(meta.get("parts", {}), dict)):
                    raise ValueError("not a score-parts table")
            except (OSError, ValueError) as error:
                log(f"score: {self.meta_path} is unreadable ({error}); scoring every chunk again")
                meta = None
            else:
                if meta.get("key") == self.key:
                    self.model_id, self.digests = meta.get("model_id"), dict(meta.get("parts", {}))
                    return
                log("score: discarding saved chunks of another configuration (input, lexicon, model or options)")
        self.remove()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.model_id, self.digests = None, {}

    def _write_meta(self) -> None:
        write_text_atomic(self.meta_path, json.dumps({"key": self.key, "model_id": self.model_id,
                                                      "parts": self.digests}))

    def _saved(self, index: int, rows: int, log: Callable[[str], None]) -> np.ndarray | None:
        """The saved scores of chunk ``index``, or None when it must be scored (missing, damaged, unrecorded)."""
        path = self._chunk_path(index)
        recorded = self.digests.get(path.name)
        if recorded is None or not path.exists():  # never finished, or killed between saving and recording
            return None
        try:
            data = path.read_bytes()
            if sha256_bytes(data) != recorded:
                raise ValueError("its SHA-256 differs from the one recorded")
            scores = np.load(io.BytesIO(data), allow_pickle=False)
            if scores.shape != (rows, len(OUTPUT_COLUMNS)) or scores.dtype != np.float32:
                raise ValueError(f"shape {scores.shape} {scores.dtype}, expected ({rows}, {len(OUTPUT_COLUMNS)}) "
                                 "float32")
        except (OSError, ValueError) as error:
            log(f"score: {path.name} is damaged ({error}); scoring its sentences again")
            return None
        return scores

    def score(self, texts: list[str], scorer: Scorer, log: Callable[[str], None], progress: bool) -> np.ndarray:
        """The instrument's ``OUTPUT_COLUMNS`` per text, shape (n, len(OUTPUT_COLUMNS)): saved chunks are reused, missing ones scored by ``scorer``
        (which loads its model only if a chunk is missing) and saved as each arrives."""
        from tqdm.auto import tqdm

        self._load_meta(log)
        out = np.empty((len(texts), len(OUTPUT_COLUMNS)), dtype=np.float32)
        spans = [(start, min(start + self.chunk, len(texts))) for start in range(0, len(texts), self.chunk)]
        missing = []
        for index, (start, end) in enumerate(spans):
            scores = self._saved(index, end - start, log)
            if scores is None:
                missing.append(index)
            else:
                out[start:end] = scores
        if not missing:
            return out
        reused = len(texts) - sum(spans[index][1] - spans[index][0] for index in missing)
        if reused:
            log(f"score: resumed, {reused} of {len(texts)} sentences were already scored")
        with tqdm(total=len(texts), desc="scoring", unit="sent", disable=not progress, file=sys.stderr) as bar:
            bar.update(reused)
            stale: list[int] = []
            fresh = scorer.score_chunks(texts[spans[index][0]:spans[index][1]] for index in missing)
            for index, scores in zip(missing, fresh):
                if scorer.model_id != self.model_id:  # the model is known once it has scored a chunk
                    if self.model_id is not None and reused:
                        log(f"score: the saved chunks were scored with {self.model_id}, not {scorer.model_id}; "
                            "scoring them again")
                        stale = sorted(set(range(len(spans))) - set(missing))
                        bar.update(-reused)
                    self.model_id = scorer.model_id
                self._save(index, scores, out, spans, bar)
            for index, scores in zip(stale, scorer.score_chunks(texts[spans[i][0]:spans[i][1]] for i in stale)):
                self._save(index, scores, out, spans, bar)
        return out

    def _save(self, index: int, scores: np.ndarray, out: np.ndarray, spans: list[tuple[int, int]], bar: Any) -> None:
        """Save chunk ``index`` and record its digest, only once saved: a kill in between leaves it unrecorded."""
        buffer = io.BytesIO()
        np.save(buffer, scores, allow_pickle=False)
        path = self._chunk_path(index)
        write_bytes_atomic(path, buffer.getvalue())
        self.digests[path.name] = sha256_bytes(buffer.getvalue())
        self._write_meta()
        start, end = spans[index]
        out[start:end] = scores
        bar.update(end - start)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
