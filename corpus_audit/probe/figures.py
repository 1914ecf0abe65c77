"""Figures of the probes (AQ-27: the seed paper's Figures 1 and 2; gender: Lin et al.'s Figures 3-4; social
distance and sentiment: Mei et al.'s Figures 2-4) and of the link, drawn with matplotlib's Agg backend (no display)
and written as PNG and SVG."""

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
from corpus_audit.probe.results import stars  # noqa: E402
from corpus_audit.probe.folder import FIGURE_FORMATS, LINK_FIGURE, ProbeFolder  # noqa: E402
from corpus_audit.stigma.aq27 import DIMENSIONS, REVERSE_SCORED  # noqa: E402

COLORS = {"mental": "tab:red", "physical": "tab:blue"}
GENDER_COLORS = {"female": "tab:orange", "male": "tab:green", "unspecified": "tab:gray"}
STIGMA_COLORS = {"yes": "tab:red", "no": "tab:blue"}
CATEGORY_COLORS = {"healthy": "tab:gray", "mental": "tab:red", "physical-high": "tab:purple",
                   "physical-low": "tab:blue"}


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


def write_compare_figure(outdir: Path, stem: str, per_model: pd.DataFrame) -> Path:
    """Grouped bars: per dimension (and ALL), each model's mean mental - physical difference with its CI; a bar
    not significant after correction is hatched. Returns the PNG's path."""
    models = list(dict.fromkeys(per_model["model"]))
    dimensions = list(dict.fromkeys(per_model["dimension"]))
    width = 0.8 / len(models)
    figure, axes = plt.subplots(figsize=(max(9, len(dimensions) * len(models) * 0.35), 4.5))
    colors = plt.get_cmap("tab10")
    for index, model in enumerate(models):
        part = per_model[per_model["model"] == model].set_index("dimension").reindex(dimensions)
        means = part["mean_difference"].to_numpy(dtype=float)
        lows, highs = part["ci_low"].to_numpy(dtype=float), part["ci_high"].to_numpy(dtype=float)
        positions = np.arange(len(dimensions)) + (index - (len(models) - 1) / 2) * width
        bars = axes.bar(positions, means, width, color=colors(index % 10), alpha=0.75, label=model)
        for bar, significant in zip(bars, part["significant"].fillna(False)):
            if not significant:
                bar.set_hatch("//")
        axes.errorbar(positions, means, yerr=[np.abs(means - lows), np.abs(highs - means)], fmt="none",
                      ecolor="black", capsize=2)
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_xticks(range(len(dimensions)), [_label(d) for d in dimensions], fontsize=8)
    axes.set_ylabel("mean difference, mental - physical")
    axes.legend(fontsize=8, loc="best")
    axes.grid(axis="y", alpha=0.3)
    return _save(figure, ProbeFolder(outdir), stem)[0]


def write_probe_figures(folder: ProbeFolder, scores: pd.DataFrame, dimensions: list[dict[str, Any]],
                        score_label: str) -> list[Path]:
    return (_save(boxplots(scores, score_label), folder, "boxplots")
            + _save(differences(dimensions, score_label), folder, "differences"))


def write_gender_figures(folder: ProbeFolder, scores: pd.DataFrame, paired: list[dict[str, Any]]) -> list[Path]:
    """Mean P(female), P(male), P(unspecified) per part (phase or dimension, and all), one row of panels per
    family of prompts, mental and non-mental diagnoses side by side; stars from the paired tests."""
    families = list(dict.fromkeys(record["family"] for record in paired))
    figure, axes = plt.subplots(len(families), 2, figsize=(13, 4 * len(families)), squeeze=False,
                                layout="constrained")
    for row, family in enumerate(families):
        for column, group in enumerate(("mental", "non-mental")):
            records = [r for r in paired if r["family"] == family and r["diagnosis_type"] == group]
            ax = axes[row][column]
            positions = np.arange(len(records))
            for offset, gender, key in ((-0.27, "female", "mean_a"), (0.0, "male", "mean_b"),
                                        (0.27, "unspecified", "mean_unspecified")):
                values = np.array([r[key] for r in records], dtype=float)
                ax.bar(positions + offset, values, width=0.27, color=GENDER_COLORS[gender], label=gender)
            for x, record in zip(positions, records):
                top = np.nanmax(np.array([record["mean_a"], record["mean_b"]], dtype=float))
                ax.annotate(stars(record["p_bonferroni"]), (x - 0.13, top if np.isfinite(top) else 0),
                            ha="center", va="bottom", fontsize=9)
            ax.set_xticks(positions, [r["part"] for r in records], fontsize=8, rotation=30)
            ax.set_title(f"{family}: {group} diagnoses", fontsize=10)
            ax.set_ylabel("mean probability")
            ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    return _save(figure, folder, "gender")


def write_social_distance_figures(folder: ProbeFolder, conditions: pd.DataFrame) -> list[Path]:
    """P(negative) per condition, sorted, coloured by stigma; the baselines' value as a line."""
    real = conditions[conditions["stigmatized"] != "baseline"].sort_values("p_negative")
    baseline = conditions.loc[conditions["stigmatized"] == "baseline", "p_negative"]
    figure, ax = plt.subplots(figsize=(8, 1.5 + 0.13 * len(real)), layout="constrained")
    ax.barh(np.arange(len(real)), real["p_negative"], color=[STIGMA_COLORS[s] for s in real["stigmatized"]])
    ax.set_yticks(np.arange(len(real)), real["condition"], fontsize=6)
    if len(baseline):
        ax.axvline(float(baseline.iloc[0]), color="black", linewidth=1, linestyle="--", label="baseline")
    ax.axvline(0.5, color="gray", linewidth=0.6)
    ax.set_xlabel("P(negative): negative / (positive + negative + neutral) mass of the top fills")
    ax.legend(handles=[Patch(color=STIGMA_COLORS["yes"], label="stigmatised"),
                       Patch(color=STIGMA_COLORS["no"], label="not stigmatised")], fontsize=8, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return _save(figure, folder, "negative")


def write_contextual_figure(folder: ProbeFolder, table: pd.DataFrame, effects: list[dict[str, Any]]) -> list[Path]:
    """Odds ratios vs healthy per condition (forest plot, log scale) and the share of stigma-congruent completions
    per condition and prompt arm."""
    categories = dict(zip(table["condition"], table["category"]))
    rows = [e for e in effects if e["factor"] == "condition"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 1.5 + 0.35 * len(table)), layout="constrained")
    for y, effect in enumerate(rows):
        # an interval that runs to infinity (separation; None in summary.json) is drawn to the plot's edge
        estimate, (low, high) = effect["odds_ratio"], effect["odds_ratio_ci"] or (None, None)
        low, high = (np.nan if v is None else float(v) for v in (low, high))
        color = CATEGORY_COLORS.get(categories.get(effect["level"], ""), "black")
        left.errorbar(estimate, y, xerr=[[estimate - low], [min(high, 1e4 * estimate) - estimate]], fmt="o",
                      color=color, capsize=3)
    left.set_yticks(range(len(rows)), [e["level"] for e in rows], fontsize=8)
    left.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
    left.set_xscale("log")
    left.set_xlabel("odds ratio vs healthy (95% CI)")
    left.grid(axis="x", alpha=0.3)
    arms = [c.removeprefix("rate_") for c in table.columns if c.startswith("rate_")]
    positions = np.arange(len(table))
    width = 0.8 / max(1, len(arms))
    for index, arm in enumerate(arms):
        right.barh(positions + (index - (len(arms) - 1) / 2) * width, table[f"rate_{arm}"].astype(float), height=width,
                   color=[CATEGORY_COLORS.get(c, "black") for c in table["category"]], alpha=1.0 - 0.5 * index,
                   label=arm)
    right.set_yticks(positions, table["condition"], fontsize=8)
    right.set_xlim(0, 1)
    right.set_xlabel("share of stigma-congruent completions (darker: baseline, lighter: strategy prompt)")
    right.legend(handles=[Patch(color=color, label=name) for name, color in CATEGORY_COLORS.items()], fontsize=8,
                 loc="lower right")
    right.grid(axis="x", alpha=0.3)
    return _save(figure, folder, "contextual")


def write_sentiment_figures(folder: ProbeFolder, conditions: pd.DataFrame,
                            correlation: dict[str, Any] | None) -> list[Path]:
    """With a Social Distance probe: share of negative labels against its P(negative) per condition; without: the
    shares, sorted."""
    if correlation:
        points = pd.DataFrame(correlation["points"])
        figure, ax = plt.subplots(figsize=(6.5, 5), layout="constrained")
        for flag, label in (("yes", "stigmatised"), ("no", "not stigmatised")):
            part = points[points["stigmatized"] == flag]
            ax.scatter(part["p_negative"], part["share_negative"], color=STIGMA_COLORS[flag], alpha=0.7, label=label)
        r = correlation["pearson"]["r"]
        ax.set_title(f"Pearson r = {r:.2f} over {correlation['n']} conditions" if r is not None else
                     "no correlation (too few or constant values)", fontsize=10)
        ax.set_xlabel("fill-mask probe: P(negative)")
        ax.set_ylabel("classifier: share of negative labels")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        return _save(figure, folder, "sentiment")
    real = conditions[conditions["stigmatized"] != "baseline"].sort_values("share_negative")
    figure, ax = plt.subplots(figsize=(8, 1.5 + 0.13 * len(real)), layout="constrained")
    ax.barh(np.arange(len(real)), real["share_negative"], color=[STIGMA_COLORS[s] for s in real["stigmatized"]])
    ax.set_yticks(np.arange(len(real)), real["condition"], fontsize=6)
    ax.set_xlabel("share of negative labels")
    ax.grid(axis="x", alpha=0.3)
    return _save(figure, folder, "sentiment")


def write_link_figure(folder: ProbeFolder, dimensions: pd.DataFrame, illnesses: pd.DataFrame) -> list[Path]:
    """Per dimension, corpus vs model difference (one colour per audit); per illness, log corpus frequency vs the
    model's mean score (mental red, physical blue, one marker per audit)."""
    markers = "osD^v<>"
    if dimensions.empty:  # a probe without AQ-27 dimensions: the illnesses only
        figure, right = plt.subplots(figsize=(6.5, 4.8), layout="constrained")
        _illness_panel(right, illnesses, markers)
        return _save(figure, folder, LINK_FIGURE)
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
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
    left.grid(alpha=0.3)
    _illness_panel(right, illnesses, markers)
    return _save(figure, folder, LINK_FIGURE)


def _illness_panel(right: Any, illnesses: pd.DataFrame, markers: str) -> None:
    for index, (audit, part) in enumerate(illnesses.groupby("audit", sort=False)):
        for group, color in COLORS.items():
            rows = part[part["illness_type"] == group]
            right.scatter(np.log10(rows["corpus_sentences"] + 1), rows["model_score"], color=color, alpha=0.7,
                          marker=markers[index % len(markers)], label=f"{audit}: {group}")
    right.set_xlabel("corpus: log10(sentences mentioning the illness + 1)")
    right.set_ylabel("model: the probe's measure of the illness")
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
