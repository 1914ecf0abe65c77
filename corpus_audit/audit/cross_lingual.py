"""Cross-lingual consistency of audits of a parallel corpus (e.g. CodiEsp in Spanish and in English).

Audit A (e.g. the Spanish original) is compared with one or more audits B (e.g. the English translation
scored with the English default model, and with the same multilingual model as A, to separate the model
from the language). For each pair:

- per document (documents with scored illness sentences in both audits): the mean warmth and mean
  competence of its sentences in each audit, and (audits with the judgement gate) the mean judgement strength
  and the share of its sentences that are judgements, and their Pearson and Spearman correlations, for all
  sentences and per illness group (a sentence that mentions both kinds of illness counts in both groups, as in the
  audit's own analysis);
- the mental - physical differences of each audit side by side (mean difference with its CI, rank-biserial
  r, AQ-27 BIAS-map share differences, and the Pearson r of the nine AQ-27 differences between A and B);
- for each audit and group: the spread of the points (standard deviations, mean distance from the
  group's centre) and the share of high-warmth sentences, which is how the seed paper describes its
  densities ("mental more diffuse, physical dominating high warmth").

Run it with ``python scripts/cross_lingual.py OUTDIR_A OUTDIR_B [OUTDIR_B2 ...] [--json FILE]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from corpus_audit.audit.folder import AuditFolder
from corpus_audit.stigma.judgement import CATEGORY_COLUMN, JUDGEMENT, STRENGTH_COLUMN
from corpus_audit.stigma.quadrants import GROUPS, group_masks, scored_rows

SCORES = ("warmth", "competence")
#: Per-document measures correlated between audits: the mean scores, and where the gate ran, the judgements.
MEASURES = (*SCORES, STRENGTH_COLUMN, "judgement_share")
MIN_DOCUMENTS = 3  # fewer points give no meaningful correlation


def scored_sentences(outdir: Path) -> pd.DataFrame:
    return scored_rows(AuditFolder(outdir).read_statistics_sentences())


def document_means(frame: pd.DataFrame, group: str | None) -> pd.DataFrame:
    """Mean scores per ``doc_id`` of the sentences of ``group`` (None: every sentence), with the mean judgement
    strength and the share of judgements where the audit has them."""
    if group is not None:
        frame = frame[group_masks(frame)[group]]
    if CATEGORY_COLUMN in frame and frame[CATEGORY_COLUMN].notna().any():
        frame = frame.assign(judgement_share=(frame[CATEGORY_COLUMN] == JUDGEMENT).astype(float))
    return frame.groupby("doc_id")[[column for column in MEASURES if column in frame]].mean()


def correlations(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Pearson and Spearman r of the per-document mean scores of two audits, overall and per group."""
    result = {}
    for group in (None, *GROUPS):
        joined = document_means(a, group).merge(document_means(b, group), left_index=True, right_index=True,
                                                suffixes=("_a", "_b"))
        entry: dict[str, float] = {"documents": len(joined)}
        for score in MEASURES:
            if f"{score}_a" not in joined or f"{score}_b" not in joined:
                continue
            x, y = joined[f"{score}_a"], joined[f"{score}_b"]
            enough = len(joined) >= MIN_DOCUMENTS
            entry[f"{score}_pearson"] = float(stats.pearsonr(x, y).statistic) if enough else float("nan")
            entry[f"{score}_spearman"] = float(stats.spearmanr(x, y).statistic) if enough else float("nan")
        result[group or "all"] = entry
    return result


def spread(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per group: standard deviation of each score, mean Euclidean distance from the group's centre, and the
    share of sentences with warmth > 0."""
    result = {}
    for group, mask in group_masks(frame).items():
        points = frame.loc[mask, list(SCORES)].to_numpy(dtype=float)
        centre = points.mean(axis=0)
        result[group] = {
            "n": int(len(points)),
            **{f"{score}_sd": float(points[:, i].std(ddof=1)) for i, score in enumerate(SCORES)},
            "mean_distance_from_centre": float(np.linalg.norm(points - centre, axis=1).mean()),
            "high_warmth_share": float((points[:, 0] > 0).mean()),
        }
    return result


def gaps(outdir: Path, frame: pd.DataFrame) -> dict[str, Any]:
    """The audit's own mental - physical comparisons (summary.json, aq27.csv) and the spread of its points."""
    folder = AuditFolder(outdir)
    summary = folder.read_summary(complete=True)
    analysis = summary.analysis
    aq27 = folder.read_aq27()
    return {
        "audit": str(outdir),
        "model_id": summary.model_id,
        "n_by_type": analysis.n_by_type,
        **{f"{score}_mental_minus_physical": {key: getattr(analysis.comparisons[score], key)
                                              for key in ("mean_difference", "mean_difference_ci", "rank_biserial",
                                                          "mann_whitney_p")}
           for score in SCORES},
        "aq27_difference": dict(zip(aq27["dimension"], aq27["difference"])),
        "spread": spread(frame),
    }


def compare(audit_a: Path, audits_b: list[Path]) -> dict[str, Any]:
    frame_a = scored_sentences(audit_a)
    report: dict[str, Any] = {"a": gaps(audit_a, frame_a), "b": []}
    aq_a = report["a"]["aq27_difference"]
    for audit_b in audits_b:
        frame_b = scored_sentences(audit_b)
        entry = {"audit": gaps(audit_b, frame_b), "correlations": correlations(frame_a, frame_b)}
        aq_b = entry["audit"]["aq27_difference"]
        shared = [dimension for dimension in aq_a if dimension in aq_b]
        entry["aq27_difference_pearson"] = float(stats.pearsonr([aq_a[d] for d in shared],
                                                                [aq_b[d] for d in shared]).statistic)
        report["b"].append(entry)
    return report


def _gap(entry: dict[str, Any]) -> str:
    low, high = entry["mean_difference_ci"]
    return f"{entry['mean_difference']:+.3f} [{low:+.3f}, {high:+.3f}] (r_rb {entry['rank_biserial']:+.2f})"


def format_report(report: dict[str, Any]) -> str:
    a = report["a"]
    lines = [f"A = {a['audit']} ({a['model_id']}, {a['n_by_type']})"]
    for index, entry in enumerate(report["b"], start=1):
        b = entry["audit"]
        lines += ["", f"B{index} = {b['audit']} ({b['model_id']}, {b['n_by_type']})",
                  f"{'documents':<10}{'n':>6}{'warmth r':>10}{'rho':>7}{'competence r':>14}{'rho':>7}"]
        for name, c in entry["correlations"].items():
            lines.append(f"{name:<10}{c['documents']:>6}{c['warmth_pearson']:>10.2f}{c['warmth_spearman']:>7.2f}"
                         f"{c['competence_pearson']:>14.2f}{c['competence_spearman']:>7.2f}" + "".join(
                             f"  {score} r {c[f'{score}_pearson']:.2f} rho {c[f'{score}_spearman']:.2f}"
                             for score in MEASURES[2:] if f"{score}_pearson" in c))
        for score in SCORES:
            key = f"{score}_mental_minus_physical"
            lines.append(f"{score} mental - physical: A {_gap(a[key])}; B {_gap(b[key])}")
        lines.append("AQ-27 mental - physical share, A/B: " + ", ".join(
            f"{d} {a['aq27_difference'][d]:+.2f}/{b['aq27_difference'][d]:+.2f}" for d in a["aq27_difference"]
            if d in b["aq27_difference"]))
        lines.append(f"AQ-27 differences, Pearson r between A and B: {entry['aq27_difference_pearson']:.2f}")
    lines += ["", f"{'audit':<6}{'group':<10}{'n':>6}{'sd warmth':>11}{'sd comp.':>10}{'dist.':>7}{'warm>0':>8}"]
    for label, audit in [("A", a)] + [(f"B{i}", e["audit"]) for i, e in enumerate(report["b"], start=1)]:
        for group, s in audit["spread"].items():
            lines.append(f"{label:<6}{group:<10}{s['n']:>6}{s['warmth_sd']:>11.3f}{s['competence_sd']:>10.3f}"
                         f"{s['mean_distance_from_centre']:>7.3f}{s['high_warmth_share']:>8.1%}")
    return "\n".join(lines)
