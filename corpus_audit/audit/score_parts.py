"""The score stage of an audit in fixed chunks of sentences, each saved as soon as it is scored, so that an
interrupted audit resumes at the first missing chunk."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from corpus_audit.common.chunks import SavedChunks
from corpus_audit.scm.columns import OUTPUT_COLUMNS
from corpus_audit.score.scorer import CHUNK_SENTENCES, Forms, Scorer


class ScoreParts(SavedChunks):
    """The score stage in fixed chunks of sentences, each saved (data-only ``.npy``) as soon as it is scored.

    An interrupted audit resumes at the first missing chunk. Chunk boundaries depend only on the sentence
    list, so a resumed run embeds exactly the batches an uninterrupted one would, and gives the same scores.
    ``meta.json`` holds the configuration (``key``), the model that scored the chunks and each chunk's
    SHA-256: chunks of another configuration or model, and damaged or unrecorded chunks, are scored again,
    saying why (the bookkeeping: :class:`~corpus_audit.common.chunks.SavedChunks`).
    """

    #: Sentences per chunk (the tests make it small to get several chunks from a small corpus).
    chunk = CHUNK_SENTENCES
    suffix = ".npy"
    configuration = "input, lexicon, model or options"

    def __init__(self, folder: Path, key: str, n_texts: int) -> None:
        super().__init__(folder, key)
        self.n_texts = n_texts

    def _saved(self, index: int, rows: int, log: Callable[[str], None]) -> np.ndarray | None:
        """The saved scores of chunk ``index``, or None when it must be scored (missing, damaged, unrecorded)."""
        def decode(data: bytes) -> np.ndarray:
            scores = np.load(io.BytesIO(data), allow_pickle=False)
            if scores.shape != (rows, len(OUTPUT_COLUMNS)) or scores.dtype != np.float32:
                raise ValueError(f"shape {scores.shape} {scores.dtype}, expected ({rows}, {len(OUTPUT_COLUMNS)}) "
                                 "float32")
            return scores

        return self.load_chunk(index, decode, log)

    def score(self, texts: list[str], scorer: Scorer, log: Callable[[str], None], progress: bool,
              forms: Forms = None) -> np.ndarray:
        """The instrument's ``OUTPUT_COLUMNS`` per text (whose mentions have ``forms``, where known), shape
        (n, len(OUTPUT_COLUMNS)): saved chunks are reused, missing ones scored by ``scorer`` (which loads its model
        only if a chunk is missing) and saved as each arrives."""
        from tqdm.auto import tqdm

        self.load_meta(log)
        out = np.empty((len(texts), len(OUTPUT_COLUMNS)), dtype=np.float32)
        spans = self.spans(len(texts))
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
            fresh = scorer.score_chunks(*self._chunks(texts, forms, [spans[index] for index in missing]))
            for index, scores in zip(missing, fresh):
                if scorer.model_id != self.model_id:  # the model is known once it has scored a chunk
                    if self.model_id is not None and reused:
                        log(f"score: the saved chunks were scored with {self.model_id}, not {scorer.model_id}; "
                            "scoring them again")
                        stale = sorted(set(range(len(spans))) - set(missing))
                        bar.update(-reused)
                    self.model_id = scorer.model_id
                self._save(index, scores, out, spans, bar)
            rescored = scorer.score_chunks(*self._chunks(texts, forms, [spans[i] for i in stale]))
            for index, scores in zip(stale, rescored):
                self._save(index, scores, out, spans, bar)
        return out

    @staticmethod
    def _chunks(texts: list[str], forms: Forms, spans: list[tuple[int, int]]) -> tuple[Iterator[list[str]],
                                                                                        Iterator[Forms] | None]:
        """The texts of each span, and their forms (None where ``forms`` is None)."""
        return ((texts[start:end] for start, end in spans),
                None if forms is None else (forms[start:end] for start, end in spans))

    def _save(self, index: int, scores: np.ndarray, out: np.ndarray, spans: list[tuple[int, int]], bar: Any) -> None:
        """Save chunk ``index`` (then record its digest) and put its scores in ``out``."""
        buffer = io.BytesIO()
        np.save(buffer, scores, allow_pickle=False)
        self.save_chunk(index, buffer.getvalue())
        start, end = spans[index]
        out[start:end] = scores
        bar.update(end - start)
