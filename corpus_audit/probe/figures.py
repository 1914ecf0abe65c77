"""Figures of the AQ-27 probe (the seed paper's Figures 1 and 2) and of the link, drawn with matplotlib's Agg
backend (no display) and written as PNG and SVG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (must follow the backend choice)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from corpus_audit.common.atomic import atomic_path  # noqa: E402
from corpus_audit.probe.folder import FIGURE_FORMATS, LINK_FIGURE, ProbeFolder  # noqa: E402
from corpus_audit.stigma.aq27 import DIMENSIONS, REVERSE_SCORED  # noqa: E402

COLORS = {"mental": "tab:red", "physical": "tab:blue"}


def _save(figure: Figure, folder: ProbeFolder, stem: str) -> list[Path]:
    written = []
    for fmt in FIGURE_FORMATS:
        path = folder.figure(stem, fmt)
        with atomic_path(path) as tmp:
            figure.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight")
        written.append(path)
    plt.close(figure)
    return written


def _label(dimension: str) -> str:
    return f"{dimension}\n(reversed)" if dimension in REVERSE_SCORED else dimension


def boxplots(scores: pd.DataFrame, score_label: str) -> Figure:
    """Figure 1: one pair of boxes (mental, physical) for all prompts and for each dimension."""
    groups = [("ALL", scores)] + [(dimension, scores[scores["dimension"] == dimension]) for dimension in DIMENSIONS]
    figure, axes = plt.subplots(figsize=(12, 4.5))
    for index, (_, part) in enumerate(groups):
        for offset, group in ((-0.2, "mental"), (0.2, "physical")):
            values = part.loc[part["illness_type"] == group, "score"].dropna().to_numpy()
            if values.size:
                box = axes.boxplot(values, positions=[index + offset], widths=0.35, patch_artist=True,
                                   showfliers=False)
                box["boxes"][0].set(facecolor=COLORS[group], alpha=0.5)
                box["medians"][0].set(color="black")
    axes.set_xticks(range(len(groups)), ["ALL"] + [_label(d) for d in DIMENSIONS], fontsize=8)
    axes.set_ylabel(score_label)
    axes.legend(handles=[Patch(facecolor=COLORS[g], alpha=0.5, label=g) for g in COLORS], loc="best")
    axes.grid(axis="y", alpha=0.3)
    return figure


def differences(dimensions: list[dict[str, Any]], score_label: str) -> Figure:
    """Figure 2: the mean mental - physical difference per dimension with its CI and Table 2's stars."""
    figure, axes = plt.subplots(figsize=(9, 4))
    means = np.array([d["mean_difference"] for d in dimensions], dtype=float)  # None (JSON's NaN) -> nan
    lows, highs = np.array([d["mean_difference_ci"] or (None, None) for d in dimensions], dtype=float).T
    positions = np.arange(len(dimensions))
    colors = [COLORS["mental"] if m > 0 else COLORS["physical"] for m in np.nan_to_num(means)]
    axes.bar(positions, means, color=colors, alpha=0.7)
    axes.errorbar(positions, means, yerr=[np.abs(means - lows), np.abs(highs - means)], fmt="none", ecolor="black",
                  capsize=3)
    for x, mean, high, low, record in zip(positions, means, highs, lows, dimensions):
        if np.isfinite(mean):
            axes.annotate(record.get("significance", ""), (x, high if mean >= 0 else low), ha="center",
                          va="bottom" if mean >= 0 else "top", fontsize=9)
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_xticks(positions, [_label(d["dimension"]) for d in dimensions], fontsize=8)
    axes.set_ylabel(f"mean difference of {score_label}\nmental - physical")
    axes.grid(axis="y", alpha=0.3)
    return figure


def write_probe_figures(folder: ProbeFolder, scores: pd.DataFrame, dimensions: list[dict[str, Any]],
                        score_label: str) -> list[Path]:
    return (_save(boxplots(scores, score_label), folder, "boxplots")
            + _save(differences(dimensions, score_label), folder, "differences"))


def write_link_figure(folder: ProbeFolder, dimensions: pd.DataFrame, illnesses: pd.DataFrame) -> list[Path]:
    """Per dimension, corpus vs model difference (one colour per audit); per illness, log corpus frequency vs the
    model's mean score (mental red, physical blue, one marker per audit)."""
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    markers = "osD^v<>"
    for index, (audit, part) in enumerate(dimensions.groupby("audit", sort=False)):
        left.scatter(part["corpus_difference"], part["model_difference"], marker=markers[index % len(markers)],
                     label=str(audit))
        for row in part.itertuples(index=False):
            left.annotate(row.dimension, (row.corpus_difference, row.model_difference), fontsize=7,
                          xytext=(3, 3), textcoords="offset points")
    left.axhline(0, color="gray", linewidth=0.6)
    left.axvline(0, color="gray", linewidth=0.6)
    left.set_xlabel("corpus: BIAS-map share, mental - physical")
    left.set_ylabel("model: mean score, mental - physical")
    left.legend(fontsize=8)
    for index, (audit, part) in enumerate(illnesses.groupby("audit", sort=False)):
        for group, color in COLORS.items():
            rows = part[part["illness_type"] == group]
            right.scatter(np.log10(rows["corpus_sentences"] + 1), rows["model_score"], color=color, alpha=0.7,
                          marker=markers[index % len(markers)], label=f"{audit}: {group}")
    right.set_xlabel("corpus: log10(sentences mentioning the illness + 1)")
    right.set_ylabel("model: mean score of the illness's prompts")
    right.legend(fontsize=8)
    for axes in (left, right):
        axes.grid(alpha=0.3)
    return _save(figure, folder, LINK_FIGURE)
