"""Which filtered sentences an audit scores, and the text it embeds for each.

:func:`select_sentences` keeps distinct sentences (at most ``max_sentences`` per illness type) in bounded
memory; :func:`mask_mentions` replaces each illness mention by a neutral phrase at the offsets where the matcher
found it, so that a point reflects what is said about the illness rather than the illness word itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


def mask_mentions(sentence: str, offsets: Iterable[Sequence[int]], mask: str) -> str:
    """``sentence`` with each [start, end) span of ``offsets`` (the matcher's, which never overlap) replaced by
    ``mask``."""
    for start, end in sorted((int(start), int(end)) for start, end in offsets)[::-1]:
        sentence = sentence[:start] + mask + sentence[end:]
    return sentence


class MentionMasker:
    """Replaces every illness mention the language's matcher (or ``lexicon``'s) finds in a text by the language's
    mask phrase: the masking of an audit, for texts that did not come through the filter. ``terms``: the term set
    whose mentions are masked (``extended``: every form, slang included; ``paper``: the diagnoses)."""

    def __init__(self, lang: str, lexicon: str | Path | None = None, terms: str = "extended") -> None:
        from corpus_audit.corpus.matcher import IllnessMatcher, default_lexicon_path
        from corpus_audit.languages import get_language

        self.matcher = IllnessMatcher.from_csv(lexicon or default_lexicon_path(lang), terms)
        self.mask = get_language(lang).mask

    def __call__(self, text: str) -> str:
        return self.with_forms(text)[0]

    def with_forms(self, text: str) -> tuple[str, tuple[str, ...]]:
        """``text`` masked, and what the stigma score reads of the mentions masked in it
        (:func:`~corpus_audit.corpus.matcher.mention_forms`)."""
        from corpus_audit.corpus.matcher import mention_forms

        matches = self.matcher.find(text)
        return (mask_mentions(text, [(match.start, match.end) for match in matches], self.mask),
                mention_forms([match.form for match in matches], [match.surface for match in matches]))


def select_sentences(filtered: Path, max_sentences: int | None, seed: int,
                     batch_rows: int = 65_536) -> tuple[pd.DataFrame, int]:
    """The rows of ``filtered`` (the filter's Parquet output) to score, and the number of duplicate rows.

    Distinct sentences (first occurrence kept), then at most ``max_sentences`` per illness type: the first ones
    of the seeded shuffle pandas' ``distinct.sample(frac=1, random_state=seed)`` makes, in file order. The file
    is streamed twice in row batches; between the passes only a 16-byte digest and a type code per row are
    held, so memory grows with the rows selected, not with the corpus.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(filtered)
    digests, codes, types = [], [], {}
    for batch in parquet.iter_batches(batch_size=batch_rows, columns=["sentence", "illness_type"]):
        digests.append(np.array([hashlib.blake2b(sentence.encode(), digest_size=16).digest()
                                 for sentence in batch.column(0).to_pylist()], dtype="S16"))
        # groupby leaves out rows without a type (the filter writes none)
        codes.append(np.array([-1 if kind is None else types.setdefault(kind, len(types))
                               for kind in batch.column(1).to_pylist()], dtype=np.int32))
    digest, code = (np.concatenate(parts) if parts else np.empty(0, dtype)
                    for parts, dtype in ((digests, "S16"), (codes, np.int32)))
    keep = np.sort(np.unique(digest, return_index=True)[1])  # first occurrence of each distinct sentence
    duplicates = len(digest) - len(keep)
    if max_sentences is not None:
        shuffled = keep[np.random.RandomState(seed).choice(len(keep), size=len(keep), replace=False)]
        keep = np.sort(np.concatenate([shuffled[code[shuffled] == kind][:max_sentences]
                                       for kind in range(len(types))] or [keep[:0]]))
    selected, offset = [], 0
    for batch in parquet.iter_batches(batch_size=batch_rows):
        low, high = np.searchsorted(keep, [offset, offset + batch.num_rows])
        selected.append(batch.take(pa.array(keep[low:high] - offset)))
        offset += batch.num_rows
    return pa.Table.from_batches(selected, schema=parquet.schema_arrow).to_pandas(), duplicates
