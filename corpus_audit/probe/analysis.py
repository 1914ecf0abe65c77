"""The statistics of the AQ-27 probe (seed paper §3.1, Table 2): mental vs physical illnesses, overall and per
stigma dimension, and the internal consistency of each dimension's items. Pure functions of the scores table.

Two analyses, one per ``--method`` (docs/probe.md):

* :func:`analyse_units` (the default, ``controlled``): **the illness is the unit**. Each illness's score is the
  mean of its prompts' scores (overall, or over one dimension's items); the 22 mental and 22 physical illnesses'
  scores are compared by a permutation test that shuffles the illness labels, with a bootstrap CI of the
  difference that resamples illnesses within each group (:func:`corpus_audit.stigma.unit_stats.compare_units`);
  dimension p-values Holm-adjusted over the nine dimensions;
* :func:`analyse` (``paper``): the seed paper's comparison, described below, which counts prompts as units.

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
from corpus_audit.probe.results import corrected_p, stars
from corpus_audit.stigma.aq27 import DIMENSIONS, REVERSE_SCORED
from corpus_audit.stigma.stats import bonferroni, compare_paired, cronbach_alpha, holm
from corpus_audit.stigma.unit_stats import ALPHA, compare_units


def score_column(scores: pd.DataFrame, scope: str = "sentence", reduce: str = "sum") -> pd.Series:
    """The score of each prompt: the PLL of the whole sentence (``scope`` "sentence") or of the illness's pieces
    ("illness"), summed or averaged per piece (``reduce`` "sum" or "mean"); ``scores`` has ``pll_<scope>`` and
    ``n_tokens_<scope>``."""
    total = scores[f"pll_{scope}"].astype(float)
    return total if reduce == "sum" else total / scores[f"n_tokens_{scope}"].astype(float)


def method_scores(scored: pd.DataFrame, baselines: pd.DataFrame | None, method: str, scope: str, reduce: str
                  ) -> pd.DataFrame:
    """``scored`` with the ``score`` each method tests and, given ``baselines`` (the carriers scored as the prompts
    are), ``baseline``: the illness's pieces' log-probability (reduced) averaged over the neutral carrier sentences
    with the same noun phrase. paper: :func:`score_column`. controlled: the illness's pieces' log-probability in
    the item (reduced) less ``baseline``."""
    table = scored
    if baselines is not None and len(baselines):  # the paper's method reports it too (per illness, for link)
        carrier = baselines.assign(baseline=score_column(baselines, "illness", reduce))
        table = scored.join(carrier.groupby(["noun_phrase", "illness"])["baseline"].mean(),
                            on=["noun_phrase", "illness"])
    if method == "paper":
        return table.assign(score=score_column(table, scope, reduce))
    if "baseline" not in table.columns:
        raise ValueError("the controlled method needs the carriers' scores")
    return table.assign(score=score_column(table, "illness", reduce) - table["baseline"])


def analyse_method(scores: pd.DataFrame, method: str, n_boot: int = 2000, permutations: int = 9999, seed: int = 0
                   ) -> dict[str, Any]:
    """The analysis of ``method``: :func:`analyse_units` (controlled) or :func:`analyse` (paper)."""
    if method == "paper":
        return analyse(scores, n_boot, seed)
    return analyse_units(scores, n_boot, permutations, seed)


def add_null_check(results: dict[str, Any], null_results: list[dict[str, Any]]) -> None:
    """Put the null check into ``results``: per copy, what the same statistics say of a randomly initialised copy
    of the model; the false-positive rates; and on every result ``null_significant`` (copies significant there, in
    either direction), ``null_agrees`` (those in the same direction) and ``flagged``: the result is significant and
    at least one copy is too. A test that fires on models that learnt nothing is no evidence, whichever way the
    copies point (a random copy's direction depends on its initialiser: the paper's method points one way on the
    anchor model and the other way on its copies, significant on all of them)."""
    n = len(null_results)

    def count(record: dict[str, Any], copies: list[dict[str, Any]], same: bool) -> int:
        sign = np.sign(record.get("mean_difference") or 0.0)
        return sum(bool(c["significant"]) and (not same or np.sign(c.get("mean_difference") or 0.0) == sign)
                   for c in copies)

    pairs = [(results["overall"], [r["overall"] for r in null_results])]
    pairs += [(record, [r["dimensions"][index] for r in null_results])
              for index, record in enumerate(results["dimensions"])]
    for record, copies in pairs:
        record["null_significant"] = count(record, copies, False) if n else None
        record["null_agrees"] = count(record, copies, True) if n else None
        record["flagged"] = bool(n and record["significant"] and record["null_significant"])
    overall_copies = pairs[0][1]
    dimension_hits = [sum(bool(d["significant"]) for d in r["dimensions"]) for r in null_results]
    results["null_check"] = {
        "models": n,
        "false_positive_rate": (sum(bool(c["significant"]) for c in overall_copies) / n) if n else None,
        "dimension_false_positive_rate": (sum(dimension_hits) / (n * len(DIMENSIONS))) if n else None,
        "copies": [{"seed": seed, "mean_difference": r["overall"]["mean_difference"], "p": corrected_p(r["overall"]),
                    "significant": r["overall"]["significant"], "significant_dimensions": hits}
                   for seed, (r, hits) in enumerate(zip(null_results, dimension_hits))]}


def verdict(results: dict[str, Any]) -> list[str]:
    """What the results say, in words that follow the ``significant`` and ``flagged`` booleans."""
    overall, method = results["overall"], results["method"]
    null = results.get("null_check") or {}
    difference, ci = overall.get("mean_difference"), overall.get("mean_difference_ci") or (None, None)
    interval = (f"{difference:+.3f} [95% CI {ci[0]:+.3f}, {ci[1]:+.3f}]" if difference is not None
                and None not in ci else "not computable")
    p = corrected_p(overall)
    p_text = "not computable" if p is None or not np.isfinite(p) else f"{p:.3g}"
    unit = (f"over {overall.get('n_a')} mental and {overall.get('n_b')} physical illnesses"
            if method == "controlled" else f"over {overall.get('n_pairs')} item x noun phrase pairs")
    measure = ("how much the items raise each illness's log-probability over neutral sentences"
               if method == "controlled" else "the PLL of the prompts")
    lines = []
    if overall["significant"]:
        direction = "more" if (difference or 0) > 0 else "less"
        lines.append(f"Mental vs physical illnesses: a difference in {measure}, mental - physical {interval} {unit} "
                     f"(p {p_text}): the model finds the AQ-27 prompts {direction} likely with a mental "
                     "illness.")
        if overall["flagged"]:
            same = overall["null_agrees"] == overall["null_significant"]
            lines.append(f"But {overall['null_significant']} of {null.get('models')} randomly initialised copies of "
                         "the same architecture come out significant too"
                         + (" in the same direction" if same else f" ({overall['null_agrees']} in the same "
                            "direction)")
                         + ": a model that learnt nothing produces this result, so it is not evidence of stigma the "
                           "model learnt.")
    else:
        lines.append(f"Mental vs physical illnesses: no evidence of a difference in {measure} (mental - physical "
                     f"{interval} {unit}, p {p_text}).")
    significant = [d for d in results["dimensions"] if d["significant"]]
    kept = [d["dimension"] for d in significant if not d["flagged"]]
    flagged = [d["dimension"] for d in significant if d["flagged"]]
    lines.append(f"Dimensions with a difference after correction: {', '.join(kept) or 'none'} of "
                 f"{len(results['dimensions'])}" + (f"; also produced by random copies (not evidence): "
                                                     f"{', '.join(flagged)}" if flagged else "") + ".")
    if null.get("models"):
        lines.append(f"Null check: {null['models']} random copies; false-positive rate overall "
                     f"{null['false_positive_rate']:.2f}, per dimension {null['dimension_false_positive_rate']:.2f}.")
    if method == "paper":
        lines.append("The paper's method compares raw PLLs of different illness names: it confounds each name's "
                     "length (pieces) and frequency with stigma, and pairs prompts rather than illnesses, so even a "
                     "random model comes out significant. Use the default --method controlled for conclusions.")
    return lines


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
        record["significant"] = bool(p < ALPHA)
    overall_record = {**overall.to_dict(), "significance": stars(overall.wilcoxon_p),
                      "significant": bool(overall.wilcoxon_p < ALPHA)}
    return jsonable({"method": "paper", "pairing": "item x noun phrase; mean score over the illnesses of each group",
                     "overall": overall_record, "dimensions": records, "illnesses": per_illness(scores)})


def analyse_units(scores: pd.DataFrame, n_boot: int = 2000, permutations: int = 9999, seed: int = 0
                  ) -> dict[str, Any]:
    """The same outputs as :func:`analyse` with the illness as the unit: ``overall`` and each dimension compare
    the per-illness mean scores of the mental and the physical illnesses (permutation test over illness labels;
    ``p_holm`` over the dimensions); ``significant`` after correction at :data:`ALPHA`."""
    per_dimension = scores.groupby(["illness", "illness_type", "dimension"])["score"].mean().reset_index()
    per_illness_score = scores.groupby(["illness", "illness_type"])["score"].mean().reset_index()

    def compare(table: pd.DataFrame) -> dict[str, Any]:
        groups = [table.loc[table["illness_type"] == group, "score"].to_numpy() for group in ("mental", "physical")]
        return compare_units(*groups, permutations=permutations, n_boot=n_boot, seed=seed).to_dict()

    overall = compare(per_illness_score)
    overall.update(significance=stars(overall["permutation_p"]),
                   significant=bool((overall["permutation_p"] or 1.0) < ALPHA))
    records = [{"dimension": dimension, "reverse_scored": dimension in REVERSE_SCORED,
                **compare(per_dimension[per_dimension["dimension"] == dimension]),
                "alpha": alpha_of(scores, dimension)} for dimension in DIMENSIONS]
    adjusted = holm([np.nan if record["permutation_p"] is None else record["permutation_p"] for record in records])
    for record, p in zip(records, adjusted):
        record["p_holm"] = float(p)
        record["significance"] = stars(float(p))
        record["significant"] = bool(p < ALPHA)
    return jsonable({"method": "controlled", "unit": "illness; its score is the mean over its prompts",
                     "overall": overall, "dimensions": records, "illnesses": per_illness(scores)})


def per_illness(scores: pd.DataFrame) -> list[dict[str, Any]]:
    """Per illness: its type, mean and SD of the score over every prompt, and the mean per dimension."""
    by_dimension = scores.pivot_table(index="illness", columns="dimension", values="score", aggfunc="mean")
    grouped = scores.groupby("illness", sort=False)
    rows = []
    for illness, part in grouped:
        record = {"illness": illness, "illness_type": part["illness_type"].iloc[0], "n_prompts": int(len(part)),
                  "mean_score": float(part["score"].mean()), "sd_score": float(part["score"].std(ddof=1))}
        if "n_tokens_illness" in part.columns:  # how many pieces the model splits the illness's name into
            record["n_pieces"] = float(part["n_tokens_illness"].median())
        if "baseline" in part.columns:  # the controlled method's neutral-carrier likelihood of the illness
            record["mean_baseline"] = float(part["baseline"].mean())
        record.update({f"mean_{dimension.lower()}": float(by_dimension.loc[illness, dimension])
                       for dimension in DIMENSIONS if dimension in by_dimension.columns})
        rows.append(record)
    return rows
