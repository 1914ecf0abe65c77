"""Select the sentences of a finished audit that fall in a quadrant or in an AQ-27 dimension's region.

A dimension's region is the one the audit scored, read from the audit's own ``aq27.csv`` (so a BIAS map edited
or passed with ``--bias-map`` is the one used): the warmth level, and the competence level when the map fixes it
(``low``/``high``). For ``any``, ``any_or_low`` and ``any_or_high`` competence is free (the lenient region), so
e.g. Fear (low warmth, any_or_high) selects every cold sentence and Pity (high warmth, low competence) the
warm-incompetent ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from corpus_audit.audit.folder import SENTENCE_COLUMNS, AuditFolder
from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.errors import UserError
from corpus_audit.scm.columns import STIGMA_COLUMN
from corpus_audit.stigma.bias_map import find_dimension
from corpus_audit.stigma.judgement import CATEGORIES, CATEGORY_COLUMN, JUDGEMENT, STRENGTH_COLUMN
from corpus_audit.stigma.quadrants import GROUPS, QUADRANTS

#: Columns of an export, in this order; then, where the audit's axes have the judgement gate, GATE_COLUMNS.
EXPORT_COLUMNS = SENTENCE_COLUMNS
GATE_COLUMNS = (CATEGORY_COLUMN, STRENGTH_COLUMN)
#: What an export keeps unless told otherwise: the judgements about people. Self-disclosures, clinical
#: descriptions, questions and figures of speech judge no one; listing them as "flagged" would be noise.
DEFAULT_CATEGORIES = (JUDGEMENT,)
#: Output formats by file extension.
FORMATS = {".csv": "csv", ".parquet": "parquet", ".jsonl": "jsonl"}
#: CSV cells cannot hold lists: the ``illnesses`` of a sentence are joined with this separator.
CSV_LIST_SEPARATOR = "; "


class OutputFormatError(UserError, ValueError):
    """An output file name whose extension names no format this command writes."""


def flagged_sentences(outdir: str | Path, quadrant: str | None = None, dimension: str | None = None,
                      illness_type: str | None = None, strict: bool = False,
                      log: Callable[[str], None] | None = None,
                      categories: Sequence[str] | None = DEFAULT_CATEGORIES) -> pd.DataFrame:
    """Sentences of the audit in ``outdir`` matching every given criterion (none given: every scored judgement).

    ``categories``: the judgement gate's categories to keep (default: judgements about people; None: every
    category). An audit whose axes have no gate has no categories: every sentence is kept and the export has no
    ``category`` column.

    ``quadrant``: one of QUADRANTS. ``dimension``: an AQ-27 dimension of the audit's BIAS map; its lenient region
    is selected. ``illness_type``: ``mental`` or ``physical``; as in the analysis, a sentence naming both kinds
    ("both") belongs to each. Unscored sentences (no quadrant) are never flagged. Returns the EXPORT_COLUMNS (and
    the ``stigma`` score where the audit has it) in the audit's row order.

    Raises ``AuditOutputError`` when ``sentences.parquet`` (or, with ``dimension``, ``aq27.csv``) is missing or
    unreadable, ``UnknownDimensionError`` for an unknown dimension and ``ValueError`` for an unknown quadrant or
    illness type. Bad rows of
    sentences.parquet are left out, said in ``log`` (``strict``: the first one raises; see
    :meth:`AuditFolder.read_sentences`).
    """
    if quadrant is not None and quadrant not in QUADRANTS:
        raise ValueError(f"unknown quadrant {quadrant!r}; valid: {', '.join(QUADRANTS)}")
    if illness_type is not None and illness_type not in GROUPS:
        raise ValueError(f"unknown illness type {illness_type!r}; valid: {', '.join(GROUPS)}")
    unknown = sorted(set(categories or ()) - set(CATEGORIES))
    if unknown:
        raise ValueError(f"unknown categor{'ies' if len(unknown) > 1 else 'y'} {', '.join(map(repr, unknown))}; "
                         f"valid: {', '.join(CATEGORIES)}")
    folder = AuditFolder(outdir)
    # Resolve the dimension before reading the (possibly large) table, so a typo fails fast.
    allowed = set(find_dimension(dimension, folder.read_bias_map()).quadrants()) if dimension is not None \
        else set(QUADRANTS)
    if quadrant is not None:
        allowed &= {quadrant}
    sentences = folder.read_sentences(strict, log)
    gated = CATEGORY_COLUMN in sentences and sentences[CATEGORY_COLUMN].notna().any()
    # the stigma score where the audit has it (audits scored before the stigma head do not)
    sentences = sentences[[*EXPORT_COLUMNS, *(column for column in GATE_COLUMNS if gated and column in sentences),
                           *([STIGMA_COLUMN] if STIGMA_COLUMN in sentences else [])]]
    keep = sentences["quadrant"].isin(allowed)
    if gated and categories is not None:
        keep &= sentences[CATEGORY_COLUMN].isin(list(categories))
    if illness_type is not None:
        keep &= sentences["illness_type"].isin([illness_type, "both"])
    return sentences[keep].reset_index(drop=True)


def documents_summary(flagged: pd.DataFrame) -> pd.DataFrame:
    """Per ``doc_id``: number of flagged sentences (column ``flagged``) and, where the audit has it, the stigma score
    of its most stigmatising flagged sentence (``stigma``); ranked as the documents table ranks (highest stigma
    first), then most flagged first, ties by doc_id."""
    grouped = flagged.groupby("doc_id", sort=True)
    counts = grouped.size().rename("flagged").reset_index()
    if STIGMA_COLUMN not in flagged:
        return counts.sort_values("flagged", ascending=False, kind="stable").reset_index(drop=True)
    counts[STIGMA_COLUMN] = grouped[STIGMA_COLUMN].max().to_numpy()
    return counts.sort_values([STIGMA_COLUMN, "flagged"], ascending=False, kind="stable",
                              na_position="last").reset_index(drop=True)


def top_documents(flagged: pd.DataFrame, top: int | None) -> pd.DataFrame:
    """The rows of ``flagged`` whose documents are among the ``top`` first of :func:`documents_summary` (the most
    stigmatising first); all of them for ``top`` None. :class:`ValueError` for a ``top`` below 1."""
    if top is None:
        return flagged
    if top < 1:
        raise ValueError(f"top must be at least 1 document, not {top}")
    chosen = documents_summary(flagged)["doc_id"].head(top)
    return flagged[flagged["doc_id"].isin(chosen)].reset_index(drop=True)


def output_format(path: str | Path) -> str:
    """``csv``, ``parquet`` or ``jsonl`` from the extension of ``path``; :class:`OutputFormatError` for any other."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise OutputFormatError(f"{path}: unknown output format {suffix or '(no extension)'!r}; "
                         f"use one of {', '.join(FORMATS)}")
    return FORMATS[suffix]


def write_table(frame: pd.DataFrame, path: str | Path) -> None:
    """Write ``frame`` atomically as CSV, Parquet or JSON Lines, by the extension of ``path``."""
    fmt = output_format(path)
    with atomic_path(path) as tmp:
        if fmt == "parquet":
            frame.to_parquet(tmp, index=False)
        elif fmt == "jsonl":
            frame.to_json(tmp, orient="records", lines=True, force_ascii=False, double_precision=15)
        else:
            lists = [column for column in frame.columns
                     if frame[column].map(lambda value: isinstance(value, (list, tuple, np.ndarray))).any()]
            frame.assign(**{column: frame[column].map(lambda names: CSV_LIST_SEPARATOR.join(map(str, names)))
                            for column in lists}).to_csv(tmp, index=False)


def export_flagged(outdir: str | Path, output: str | Path, quadrant: str | None = None, dimension: str | None = None,
                   illness_type: str | None = None, strict: bool = False,
                   log: Callable[[str], None] | None = None,
                   categories: Sequence[str] | None = DEFAULT_CATEGORIES,
                   top: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write the :func:`flagged_sentences` of ``outdir`` (of its ``top`` most stigmatising documents only:
    :func:`top_documents`) to ``output`` (.csv, .parquet or .jsonl).

    In CSV the lists (``illnesses``) are joined with CSV_LIST_SEPARATOR. Returns (flagged sentences,
    :func:`documents_summary`). The format is checked before anything is read.
    """
    output_format(output)
    flagged = top_documents(flagged_sentences(outdir, quadrant=quadrant, dimension=dimension,
                                              illness_type=illness_type, strict=strict, log=log,
                                              categories=categories), top)
    write_table(flagged, output)
    return flagged, documents_summary(flagged)
