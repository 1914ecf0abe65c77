"""The statistics of the AQ-27 probe (seed paper §3.1, Table 2): mental vs physical illnesses, overall and per
stigma dimension, and the internal consistency of each dimension's items. Pure functions of the scores table.

**The pairing unit** (the paper leaves it unstated): one pair per item x noun phrase. Within a pair, the mental
score is the mean score of that prompt over the mental illnesses and the physical score its mean over the
physical illnesses, so both halves share the item's wording and the noun phrase and differ only in the illness
group. Overall: 27 x 34 = 918 pairs with the bundled questionnaire; per dimension: 3 x 34 = 102 pairs. Pairs by
item x noun phrase x illness are impossible (the illnesses are not matched one to one), and the mean over
illnesses keeps each pair one observation: the illnesses are the fixed levels compared, the prompts the sample.

**Wilcoxon signed-rank** (two-sided) on the pairs' differences, with the matched-pairs rank-biserial correlation
as effect size and percentile-bootstrap CIs (pairs resampled); per dimension, p-values Bonferroni-adjusted over
the dimensions (as the paper's Table 2).

**Cronbach's alpha** per dimension on the mental illnesses only (as the paper): its three items are the
"raters", each noun phrase x mental illness an observation.

**Per illness**: mean score over every item x noun phrase, and per dimension.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from corpus_audit.common.jsonable import jsonable
from corpus_audit.stigma.aq27 import DIMENSIONS, REVERSE_SCORED
from corpus_audit.stigma.stats import bonferroni, compare_paired, cronbach_alpha

#: Stars of Table 2 by adjusted p-value.
STARS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))


def score_column(scores: pd.DataFrame, scope: str = "sentence", reduce: str = "sum") -> pd.Series:
    """The score of each prompt: the PLL of the whole sentence (``scope`` "sentence") or of the illness's pieces
    ("illness"), summed or averaged per piece (``reduce`` "sum" or "mean"); ``scores`` has ``pll_<scope>`` and
    ``n_tokens_<scope>``."""
    total = scores[f"pll_{scope}"].astype(float)
    return total if reduce == "sum" else total / scores[f"n_tokens_{scope}"].astype(float)


def stars(p: float | None) -> str:
    if p is None or not np.isfinite(p):
        return ""
    return next((mark for limit, mark in STARS if p < limit), "n.s.")


def pairs(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per item x noun phrase: ``item``, ``dimension``, ``noun_phrase``, ``mental`` and ``physical`` (mean
    ``score`` over the illnesses of each group)."""
    means = scores.groupby(["item", "dimension", "noun_phrase", "illness_type"], sort=True)["score"].mean()
    table = means.unstack("illness_type").reset_index()
    for group in ("mental", "physical"):
        if group not in table.columns:
            table[group] = np.nan
    return table


def alpha_of(scores: pd.DataFrame, dimension: str) -> float:
    """Cronbach's alpha of one dimension's items over noun phrase x mental illness."""
    mental = scores[(scores["dimension"] == dimension) & (scores["illness_type"] == "mental")]
    matrix = mental.pivot_table(index=["noun_phrase", "illness"], columns="item", values="score", aggfunc="mean")
    return cronbach_alpha(matrix.to_numpy())


def analyse(scores: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """``overall``, ``dimensions`` (one record per AQ-27 dimension, in the questionnaire's order) and
    ``illnesses`` (one record per illness) from a table with ``item``, ``dimension``, ``noun_phrase``, ``illness``,
    ``illness_type`` and ``score``."""
    paired = pairs(scores)
    overall = compare_paired(paired["mental"], paired["physical"], n_boot=n_boot, seed=seed)
    records = []
    for dimension in DIMENSIONS:
        part = paired[paired["dimension"] == dimension]
        comparison = compare_paired(part["mental"], part["physical"], n_boot=n_boot, seed=seed)
        records.append({"dimension": dimension, "reverse_scored": dimension in REVERSE_SCORED,
                        **comparison.to_dict(), "alpha": alpha_of(scores, dimension)})
    adjusted = bonferroni([record["wilcoxon_p"] if record["wilcoxon_p"] is not None else np.nan
                           for record in records])
    for record, p in zip(records, adjusted):
        record["p_bonferroni"] = float(p)
        record["significance"] = stars(float(p))
    overall_record = {**overall.to_dict(), "significance": stars(overall.wilcoxon_p)}
    return jsonable({"pairing": "item x noun phrase; mean score over the illnesses of each group",
                     "overall": overall_record, "dimensions": records, "illnesses": per_illness(scores)})


def per_illness(scores: pd.DataFrame) -> list[dict[str, Any]]:
    """Per illness: its type, mean and SD of the score over every prompt, and the mean per dimension."""
    by_dimension = scores.pivot_table(index="illness", columns="dimension", values="score", aggfunc="mean")
    grouped = scores.groupby("illness", sort=False)
    rows = []
    for illness, part in grouped:
        record = {"illness": illness, "illness_type": part["illness_type"].iloc[0], "n_prompts": int(len(part)),
                  "mean_score": float(part["score"].mean()), "sd_score": float(part["score"].std(ddof=1))}
        record.update({f"mean_{dimension.lower()}": float(by_dimension.loc[illness, dimension])
                       for dimension in DIMENSIONS if dimension in by_dimension.columns})
        rows.append(record)
    return rows
