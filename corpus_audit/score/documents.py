"""A document's stigma score, by one rule for the audit (``documents.parquet``, ``corpus-audit documents``), the
Python API and the datatrove steps: they all import it from here.

A document's **stigma score** is the ``stigma`` score (the instrument's probability that a sentence stigmatises
people with the illness it mentions, learnt from labelled real text: scm/stigma.py) of its most stigmatising
illness sentence, the maximum: one slur or stereotype is what a reviewer has to see, and a mean would hide it in a
long supportive thread, whatever the document's length. Supportive, counter-stereotypical and anti-stigma
sentences score near 0, so they do not lift a document (the judgement strength, which has no sign, did). ``dim_<dimension>`` is, per dimension, the largest ``judgement strength x
stigmatising score`` of its sentences (the dimension score turned so that + is stigma, :data:`STIGMA_SIGN`, and
cut at 0): how strongly the document endorses that AQ-27 attitude in a judgement. The counts say how much of the
document is behind the score.

The table is built from ``filtered.parquet`` (every kept sentence of every document, duplicates included) and the
scores of ``sentences.parquet`` (each distinct sentence scored once): a document whose sentence repeats another
document's gets that sentence's score too. Sentences left unscored (``--max-sentences``) are counted, not scored.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from corpus_audit.common.errors import UserError
from corpus_audit.scm.columns import STIGMA_COLUMN
from corpus_audit.stigma.judgement import (CATEGORY_COLUMN, DIMENSION_COLUMNS, JUDGEMENT, STIGMA_SIGN,
                                           STRENGTH_COLUMN, TOP_DIMENSION_COLUMN)
from corpus_audit.stigma.quadrants import GROUPS

STIGMA_SCORE = "stigma_score"
#: The columns of the documents table before the keep-fields and the dimension columns.
DOCUMENT_COLUMNS = ("rank", "doc_id", STIGMA_SCORE, "top_sentence", "top_sentence_index", "top_category",
                    TOP_DIMENSION_COLUMN, "n_sentences", "n_scored", "n_mental", "n_physical", "n_judgements",
                    "illnesses")
#: Filter columns that are not keep-fields.
_FILTER_COLUMNS = {"doc_id", "sentence_index", "sentence", "terms", "term_offsets", "illnesses", "illness_type",
                   "forms"}


def sentence_dimension_stigma(sentences: pd.DataFrame) -> pd.DataFrame:
    """Per sentence and dimension: judgement strength x the dimension score turned towards stigma, cut at 0."""
    strength = sentences[STRENGTH_COLUMN].to_numpy(dtype=float)
    return pd.DataFrame({column: strength * np.clip(STIGMA_SIGN[dimension]
                                                    * sentences[column].to_numpy(dtype=float), 0, None)
                         for dimension, column in DIMENSION_COLUMNS.items()}, index=sentences.index)


def lacks_stigma_head(sentences: pd.DataFrame) -> bool:
    """Whether scored sentences come from axes with a gate but no stigma head (every stigma score NaN where some
    judgement strength is not)."""
    return bool(sentences[STIGMA_COLUMN].isna().all() and sentences[STRENGTH_COLUMN].notna().any())


def document_scores(filtered: pd.DataFrame, sentences: pd.DataFrame) -> pd.DataFrame:
    """One row per document of ``filtered`` (the filter's rows), ranked: stigma score descending, then more
    judgements first, then doc_id. Columns: DOCUMENT_COLUMNS, the keep-fields of the filter (a document's first
    value), then one ``dim_<dimension>`` per AQ-27 dimension."""
    if STRENGTH_COLUMN not in sentences or STIGMA_COLUMN not in sentences:
        raise UserError("this audit was scored with axes that have no judgement gate (e.g. --recipe reference): "
                        "documents are ranked by the stigma score, which they lack")
    if lacks_stigma_head(sentences):
        raise UserError("this audit was scored with axes that have no stigma head (trained before it existed): "
                        "audit again, or train axes again with `corpus-audit axes train`")
    keep_fields = [column for column in filtered.columns if column not in _FILTER_COLUMNS]
    scores = sentences.drop_duplicates("sentence").set_index("sentence")
    score_columns = [STIGMA_COLUMN, STRENGTH_COLUMN, CATEGORY_COLUMN, TOP_DIMENSION_COLUMN,
                     *DIMENSION_COLUMNS.values()]
    rows = filtered.join(scores[score_columns], on="sentence")
    stigma = sentence_dimension_stigma(rows)
    rows = rows.drop(columns=list(DIMENSION_COLUMNS.values())).join(stigma)
    rows = rows.assign(_stigma=rows[STIGMA_COLUMN].fillna(-1.0),  # unscored sentences never top a document
                       _judgement=rows[CATEGORY_COLUMN].eq(JUDGEMENT), _scored=rows[STIGMA_COLUMN].notna(),
                       **{f"_{group}": rows["illness_type"].isin([group, "both"]) for group in GROUPS})
    top = rows.sort_values(["doc_id", "_stigma", "sentence_index"], ascending=[True, False, True],
                           kind="stable").drop_duplicates("doc_id").set_index("doc_id")
    grouped = rows.groupby("doc_id", sort=True)
    table = pd.DataFrame({
        STIGMA_SCORE: top[STIGMA_COLUMN],
        "top_sentence": top["sentence"],
        "top_sentence_index": top["sentence_index"],
        "top_category": top[CATEGORY_COLUMN],
        TOP_DIMENSION_COLUMN: top[TOP_DIMENSION_COLUMN],
        "n_sentences": grouped.size(),
        "n_scored": grouped["_scored"].sum(),
        **{f"n_{group}": grouped[f"_{group}"].sum() for group in GROUPS},
        "n_judgements": grouped["_judgement"].sum(),
        "illnesses": grouped["illnesses"].agg(lambda lists: "; ".join(sorted({name for names in lists
                                                                            for name in names}))),
        **{field: grouped[field].first() for field in keep_fields},
        **{column: grouped[column].max() for column in DIMENSION_COLUMNS.values()},
    }).reset_index()
    return rank_documents(table)


def rank_documents(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (rows of :func:`document_scores`, e.g. of several batches of documents) ranked by the rule: stigma
    score descending, then more judgements first, then doc_id; ``rank`` (the first column) numbered 1, 2, ..."""
    table = table.drop(columns="rank", errors="ignore").sort_values(
        [STIGMA_SCORE, "n_judgements", "doc_id"], ascending=[False, False, True], kind="stable",
        na_position="last").reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    return table
