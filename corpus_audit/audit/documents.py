"""Per-document scores of an audit and the ranked list of documents to review or drop.

A document's score is :mod:`corpus_audit.score.documents`'s rule (shared with the Python API and the datatrove
steps); this module writes and reads the audit's table and chooses from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from corpus_audit.audit.folder import AuditFolder, AuditOutputError
from corpus_audit.common.errors import UserError
from corpus_audit.scm.columns import STIGMA_COLUMN
from corpus_audit.score.documents import DOCUMENT_COLUMNS, STIGMA_SCORE, document_scores, lacks_stigma_head
from corpus_audit.stigma.judgement import DIMENSION_COLUMNS, STRENGTH_COLUMN, dimension_named
from corpus_audit.stigma.quadrants import GROUPS

__all__ = ["DOCUMENT_COLUMNS", "STIGMA_SCORE", "document_scores", "ranked_documents", "read_documents",
           "write_documents", "write_ids"]


def ranked_documents(table: pd.DataFrame, top: int | None = None, min_score: float | None = None,
                     dimension: str | None = None, illness: str | None = None,
                     illness_type: str | None = None) -> pd.DataFrame:
    """The documents of ``table`` (:func:`document_scores`) chosen by the options, best first.

    ``dimension``: rank by that AQ-27 dimension's column instead of the stigma score (and ``min_score`` applies
    to it); ``illness``: documents with a sentence about that illness (canonical name, any letter case);
    ``illness_type``: documents with a ``mental`` (or ``physical``) sentence; ``min_score``: score at least this;
    ``top``: the first N after the other choices. ``rank`` is renumbered over the chosen documents.
    """
    score = STIGMA_SCORE if dimension is None else DIMENSION_COLUMNS[dimension_named(dimension)]
    chosen = table
    if illness is not None:
        wanted = illness.strip().lower()
        mentions = table["illnesses"].str.lower().str.split("; ").map(lambda listed: wanted in listed)
        if not mentions.any():
            known = sorted({name for listed in table["illnesses"] for name in listed.split("; ") if name})
            raise UserError(f"no document mentions the illness {illness!r}; the audit has: {', '.join(known)}")
        chosen = chosen[mentions]
    if illness_type is not None:
        if illness_type not in GROUPS:
            raise UserError(f"illness type must be one of {', '.join(GROUPS)}, not {illness_type!r}")
        chosen = chosen[chosen[f"n_{illness_type}"] > 0]
    if dimension is not None:
        chosen = chosen.sort_values([score, STIGMA_SCORE, "doc_id"], ascending=[False, False, True],
                                    kind="stable")
    if min_score is not None:
        chosen = chosen[chosen[score] >= min_score]
    if top is not None:
        chosen = chosen.head(top)
    return chosen.assign(rank=np.arange(1, len(chosen) + 1)).reset_index(drop=True)


def write_documents(folder: AuditFolder, sentences: pd.DataFrame | None = None) -> bool:
    """Write ``documents.parquet`` (atomically) from the audit's filtered and scored sentences; False (nothing
    written) when its axes have no judgement gate."""
    from corpus_audit.common.atomic import atomic_path

    sentences = pd.read_parquet(folder.existing(folder.sentences)) if sentences is None else sentences
    if STRENGTH_COLUMN not in sentences or STIGMA_COLUMN not in sentences or lacks_stigma_head(sentences):
        return False
    with atomic_path(folder.documents) as tmp:
        document_scores(pd.read_parquet(folder.existing(folder.filtered)), sentences).to_parquet(tmp, index=False)
    return True


def read_documents(outdir: str | Path, strict: bool = False,
                   log: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The documents table of the audit in ``outdir``: ``documents.parquet``, or (an audit written before it
    existed) built now from its filtered and scored sentences."""
    folder = AuditFolder(outdir)
    if folder.documents.is_file():
        try:
            return pd.read_parquet(folder.documents)
        except (OSError, ValueError) as error:
            raise AuditOutputError(folder.documents, f"not a readable Parquet file ({error})") from None
    return document_scores(pd.read_parquet(folder.existing(folder.filtered)), folder.read_sentences(strict, log))


def write_ids(ids: Sequence[str], path: str | Path) -> None:
    """``ids`` one per line (the ``--ids`` file of ``corpus-audit clean``)."""
    from corpus_audit.common.atomic import write_text_atomic

    write_text_atomic(path, "".join(f"{doc_id}\n" for doc_id in ids))
