"""What running the encoder with int8 weights (``--backend onnx-int8``) does to the scores of axes trained on its
fp32 embeddings, measured on the same held-out sentences as the fp32 validity (scm/stigma.py, scm/suite.py).

The axes are not refitted for int8: they are the shipped fp32 axes applied to the quantised encoder's embeddings
(:func:`~corpus_audit.embed.base.quantises`), so what a user gets from ``--backend onnx-int8`` is exactly what is
measured here. The record sits in the axes' validity file under ``int8`` and the report shows it in place of the
fp32 numbers when an audit ran in int8.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from corpus_audit.scm.columns import OUTPUT_COLUMNS, STIGMA_COLUMN
from corpus_audit.scm.stigma import StigmaData, stigma_validity
from corpus_audit.scm.suite import suite_path, suite_validity

__all__ = ["INT8_KEY", "int8_validity", "score_agreement"]

#: The validity record's key for :func:`int8_validity`.
INT8_KEY = "int8"
#: The decision threshold whose flags are compared (the suite's and the report's).
FLAG_AT = 0.5


def score_agreement(fp32: np.ndarray, int8: np.ndarray) -> dict[str, Any]:
    """How far the scores (``OUTPUT_COLUMNS``, one row per sentence) of the same sentences move from fp32 to int8:
    the mean and largest absolute difference per column; for the stigma score the share of sentences whose flag
    (stigma >= ``FLAG_AT``) changes; for warmth and competence the share that keep their quadrant."""
    fp32, int8 = np.asarray(fp32, dtype=float), np.asarray(int8, dtype=float)
    if fp32.shape != int8.shape or fp32.shape[1:] != (len(OUTPUT_COLUMNS),):
        raise ValueError(f"scores of shape {fp32.shape} and {int8.shape}, not (n, {len(OUTPUT_COLUMNS)})")
    difference = np.abs(fp32 - int8)
    stigma = OUTPUT_COLUMNS.index(STIGMA_COLUMN)
    warmth, competence = OUTPUT_COLUMNS.index("warmth"), OUTPUT_COLUMNS.index("competence")
    measured = ~np.isnan(difference).all(axis=0)
    return {"n": len(fp32),
            "mean_abs_difference": {name: float(np.nanmean(difference[:, i]))
                                    for i, name in enumerate(OUTPUT_COLUMNS) if measured[i]},
            "max_abs_difference": {name: float(np.nanmax(difference[:, i]))
                                   for i, name in enumerate(OUTPUT_COLUMNS) if measured[i]},
            "stigma_flag_changed": float(np.mean((fp32[:, stigma] >= FLAG_AT) != (int8[:, stigma] >= FLAG_AT))),
            "same_quadrant": float(np.mean(((fp32[:, warmth] < 0) == (int8[:, warmth] < 0))
                                           & ((fp32[:, competence] < 0) == (int8[:, competence] < 0))))}


def int8_validity(encode_fp32: Callable[[list[str]], np.ndarray], encode_int8: Callable[[list[str]], np.ndarray],
                  int8_id: str, axes, lang: str, data: StigmaData) -> dict[str, Any]:
    """The stigma score's held-out and suite measures of ``axes`` with the int8 encoder (``encode_int8``, whose
    ``model_id`` is ``int8_id``), and :func:`score_agreement` of every score on the held-out real sentences."""
    rows = data.rows(("heldout",), ("real",))
    texts, forms = [data.texts[i] for i in rows], [data.mention_forms[i] for i in rows]
    return {"embedder_id": int8_id,
            "stigma": stigma_validity(encode_int8, axes, lang, data),
            "suite": suite_validity(encode_int8, axes, lang) if suite_path(lang).is_file() else None,
            "agreement": score_agreement(axes.measure(encode_fp32(texts), texts, forms),
                                         axes.measure(encode_int8(texts), texts, forms))}
