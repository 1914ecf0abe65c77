"""Figures for a corpus audit: they only *draw* what ``corpus_audit.audit.analysis`` computed.

* ``density_figure``: warmth x competence density of mental (red) vs physical (blue) sentences (the seed
  paper's Figure 3), Gaussian-KDE contours over a light scatter of the raw scores.
* ``small_multiples_figure``: one such panel per illness, coloured by the illness's type.
* ``quadrant_shares_figure``: grouped bars of ``analysis.quadrant_shares(df)``.
* ``aq27_figure``: ``analysis.bias_map_scores(df)`` per AQ-27 dimension, shares and difference with 95% CIs.
* ``save_figure``: write PNG/SVG atomically and close the figure; ``analyse_and_write_figures``: all of them into
  an audit folder (the small multiples in another process while the analysis runs); ``replot``: rebuild them from
  the folder's saved tables.

Conventions follow ``analysis``: unscored rows (NaN warmth/competence) are left out and "both" sentences
are drawn in the mental *and* the physical group. Nothing here raises on small groups: a group too small
or too degenerate for a KDE is drawn as a scatter and the legend says so.
"""

from __future__ import annotations

import math
import multiprocessing
import signal
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

# Audits run in batch jobs and CI without a display: select the file-only backend before pyplot is imported,
# so that creating figures never tries to open a window (and never needs Tk/Qt).
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (must follow the backend choice)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator, PercentFormatter  # noqa: E402
from scipy import stats  # noqa: E402

from corpus_audit.audit import analysis  # noqa: E402
from corpus_audit.audit.folder import FIGURE_FORMATS, FIGURES, AuditFolder  # noqa: E402
from corpus_audit.common.atomic import atomic_path  # noqa: E402
from corpus_audit.common.resources import usable_cpus  # noqa: E402
from corpus_audit.stigma.quadrants import GROUPS, QUADRANTS, explode_illnesses, group_masks, scored_rows  # noqa: E402

#: Colour per group (the seed paper's Figure 3: mental red, physical blue); "both"-only illnesses purple.
COLORS = {"mental": "tab:red", "physical": "tab:blue", "both": "tab:purple", "unknown": "tab:gray"}
#: Corner labels, keyed by the (x, y) corner in axes coordinates; warmth is x, competence is y.
QUADRANT_LABELS = {(1, 1): "warm · competent", (0, 1): "cold · competent",
                   (1, 0): "warm · incompetent", (0, 0): "cold · incompetent"}
#: Short readable names of the QUADRANTS for bar-chart ticks.
QUADRANT_TICKS = {"warm-competent": "warm ·\ncompetent", "warm-incompetent": "warm ·\nincompetent",
                  "cold-competent": "cold ·\ncompetent", "cold-incompetent": "cold ·\nincompetent"}
#: A KDE needs a non-singular 2x2 covariance: at least 3 points, not all on one line.
MIN_KDE_POINTS = 3
#: KDE grid resolution per axis: smooth enough at figure size, cheap (120^2 evaluations per group).
GRID_SIZE = 120
#: The KDE costs O(points x grid); above this many points a seeded subsample gives the same contours.
MAX_KDE_POINTS = 5000
#: Contours enclose these probability masses (highest-density regions), so that levels mean the same
#: thing in every group whatever its peak height.
HDR_MASSES = (0.25, 0.5, 0.75, 0.95)
SCORE_LIMITS = (-1.0, 1.0)


# --------------------------------------------------------------------------------------------- helpers


def _group_points(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """(n, 2) arrays of (warmth, competence) for the mental and physical groups.

    Uses analysis's own row selection so the plotted groups are exactly the analysed ones ("both" in
    each group, unscored rows dropped).
    """
    scored = scored_rows(df)
    masks = group_masks(scored)
    xy = scored[["warmth", "competence"]].to_numpy(dtype=float)
    return {group: xy[masks[group]] for group in GROUPS}


def _group_weights(df: pd.DataFrame) -> dict[str, np.ndarray | None]:
    """The design weights of :func:`_group_points`' rows, or None per group without a cascade."""
    scored = scored_rows(df)
    masks, weights = group_masks(scored), analysis.design_weights(scored)
    return {group: None if weights is None else weights[masks[group]] for group in GROUPS}


def _limits(points: Iterable[np.ndarray]) -> tuple[float, float]:
    """Common axis limits: [-1, 1], widened (with 5% padding) only if some score lies outside it."""
    arrays = [p for p in points if p.size]
    low, high = SCORE_LIMITS
    if arrays:
        data = np.concatenate([p.ravel() for p in arrays])
        d_low, d_high = float(data.min()), float(data.max())
        if d_low < low or d_high > high:
            pad = 0.05 * (max(high, d_high) - min(low, d_low))
            low, high = min(low, d_low - pad), max(high, d_high + pad)
    return low, high


def _kde_grid(points: np.ndarray, limits: tuple[float, float],
              weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """KDE of ``points`` (n, 2), each weighing ``weights`` (None: equal), on a square grid over ``limits``, or None
    when no KDE can be fitted.

    None for fewer than MIN_KDE_POINTS points or a singular covariance (identical or collinear points):
    ``gaussian_kde`` raises there (LinAlgError) or returns NaN/inf, and a density would be meaningless.
    """
    if len(points) < MIN_KDE_POINTS:
        return None
    if len(points) > MAX_KDE_POINTS:
        keep = np.random.default_rng(0).choice(len(points), MAX_KDE_POINTS, replace=False)
        points, weights = points[keep], None if weights is None else weights[keep]
    try:
        kde = stats.gaussian_kde(points.T, weights=weights)
    except (np.linalg.LinAlgError, ValueError):
        return None
    axis = np.linspace(limits[0], limits[1], GRID_SIZE)
    gx, gy = np.meshgrid(axis, axis)
    density = kde(np.vstack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
    if not np.all(np.isfinite(density)) or density.max() <= 0:
        return None
    return gx, gy, density


def _hdr_levels(density: np.ndarray) -> np.ndarray:
    """Density thresholds whose super-level sets hold HDR_MASSES of the grid mass, increasing, unique."""
    flat = np.sort(density.ravel())[::-1]
    cumulative = np.cumsum(flat) / flat.sum()
    levels = [flat[min(np.searchsorted(cumulative, mass), flat.size - 1)] for mass in HDR_MASSES]
    levels = np.unique(levels)  # contour() needs strictly increasing levels
    return levels[levels > 0]


def _draw_group(ax: Axes, points: np.ndarray, color: str, limits: tuple[float, float], *,
                marker_size: float = 4.0, weights: np.ndarray | None = None) -> bool:
    """Scatter ``points`` lightly and overlay KDE contours (of the points weighing ``weights``, None: equal); True
    if the contours could be drawn."""
    if len(points):
        # Light and small: the raw scores stay visible without hiding the contours (or the other group).
        ax.scatter(points[:, 0], points[:, 1], s=marker_size, color=color, alpha=0.15, linewidths=0,
                   rasterized=len(points) > 2000)  # rasterise big scatters: SVGs stay small
    grid = _kde_grid(points, limits, weights)
    if grid is None:
        return False
    gx, gy, density = grid
    levels = _hdr_levels(density)
    if levels.size == 0:
        return False
    # Filled bands (very light) give the mass, lines give the shape; both in the group's single colour so
    # overlapping groups stay distinguishable.
    ax.contourf(gx, gy, density, levels=[*levels, density.max() * 1.001], colors=[color], alpha=0.08)
    ax.contour(gx, gy, density, levels=levels, colors=[color], linewidths=np.linspace(0.6, 1.6, levels.size))
    return True


def _decorate_plane(ax: Axes, limits: tuple[float, float], *, corner_labels: bool = True,
                    fontsize: float = 8.0) -> None:
    """Quadrant lines at 0, square limits, ticks every 0.5 on [-1, 1] and (optionally) quadrant names in the corners."""
    ax.axhline(0, color="0.4", linewidth=0.7, zorder=0)
    ax.axvline(0, color="0.4", linewidth=0.7, zorder=0)
    ax.set_xlim(limits)
    ax.set_ylim(limits)
    # Five ticks say where the scores lie; the default nine per axis crowd the small panels and, with their
    # labels laid out twice per save, are a third of the drawing time.
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(nbins=4))
    ax.set_aspect("equal", adjustable="box")
    if corner_labels:
        for (x, y), text in QUADRANT_LABELS.items():
            ax.text(0.02 + 0.96 * x, 0.02 + 0.96 * y, text, transform=ax.transAxes, fontsize=fontsize,
                    color="0.35", ha="right" if x else "left", va="top" if y else "bottom")


# --------------------------------------------------------------------------------------------- figures


def density_figure(df: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Warmth (x) x competence (y) density of mental (red) vs physical (blue) sentences.

    Each group: a light scatter of its scores and Gaussian-KDE contours enclosing 25/50/75/95% of its
    mass. Groups too small or degenerate for a KDE are drawn as a scatter only, noted in the legend.
    ``df`` needs ``illness_type``, ``warmth`` and ``competence``; "both" sentences are in both groups.
    """
    points, weights = _group_points(df), _group_weights(df)
    limits = _limits(points.values())
    fig, ax = plt.subplots(figsize=(6.0, 6.4))
    handles = []
    for group in GROUPS:
        color = COLORS[group]
        has_kde = _draw_group(ax, points[group], color, limits, weights=weights[group])
        n = len(points[group])
        label = f"{group} (n={n:,})" + ("" if has_kde else ", too few/degenerate for density: points only")
        # Proxy handles: contour sets have no legend entry of their own, and an empty group has no artist.
        handles.append(Line2D([], [], color=color, marker="o", markersize=5, linewidth=1.2 if has_kde else 0,
                              label=label))
    _decorate_plane(ax, limits)
    ax.set_xlabel("warmth")
    ax.set_ylabel("competence")
    ax.set_title(title or "Warmth and competence of illness mentions")
    # Below the plot: inside it, the legend would cover a quadrant label or the data.
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.11), ncol=1, frameon=False,
              fontsize=9)
    fig.tight_layout()
    return fig


def comparison_figure(a: pd.DataFrame, b: pd.DataFrame, labels: tuple[str, str]) -> Figure:
    """Two audits overlaid, one panel per illness type: A's density in grey, B's in the group's colour."""
    points = {label: _group_points(frame) for label, frame in zip(labels, (a, b))}
    limits = _limits([p for groups in points.values() for p in groups.values()])
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 6.0))
    for ax, group in zip(axes, GROUPS):
        handles = []
        for label, color in zip(labels, ("0.35", COLORS[group])):
            has_kde = _draw_group(ax, points[label][group], color, limits)
            n = len(points[label][group])
            handles.append(Line2D([], [], color=color, marker="o", markersize=5, linewidth=1.2 if has_kde else 0,
                                  label=f"{label} (n={n:,})" + ("" if has_kde else ", points only")))
        _decorate_plane(ax, limits)
        ax.set_xlabel("warmth")
        ax.set_ylabel("competence")
        ax.set_title(f"{group} illness mentions")
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.11), frameon=False, fontsize=9)
    fig.tight_layout()
    return fig


def _illness_points(df: pd.DataFrame) -> tuple[dict[str, np.ndarray], dict[str, str],
                                                dict[str, np.ndarray | None]]:
    """Per illness: its (warmth, competence) points, its type (for the colour) and the points' design weights
    (None without a cascade).

    An illness's type is the most common non-"both" ``illness_type`` of its sentences (a "both" sentence
    says nothing about which of its illnesses is the mental one); "both" if it only occurs in such sentences.
    """
    scored = scored_rows(df)
    exploded = explode_illnesses(scored, "illnesses")
    points: dict[str, np.ndarray] = {}
    kinds: dict[str, str] = {}
    weights: dict[str, np.ndarray | None] = {}
    for illness, part in exploded.groupby("illnesses", sort=True):
        name = str(illness)
        points[name] = part[["warmth", "competence"]].to_numpy(dtype=float)
        weights[name] = analysis.design_weights(part)
        types = part["illness_type"][part["illness_type"].isin(GROUPS)]
        kinds[name] = str(types.mode().iloc[0]) if len(types) else (
            "both" if (part["illness_type"] == "both").any() else "unknown")
    return points, kinds, weights


def small_multiples_figure(df: pd.DataFrame, max_illnesses: int = 12, *, ncols: int = 4) -> Figure:
    """One density/scatter panel per illness (most frequent first, at most ``max_illnesses``).

    Panels share the score limits so they can be compared; colour = the illness's type; n in each title.
    The order and n are those of ``analysis.quadrant_shares(df, by="illnesses")``.
    """
    order = analysis.quadrant_shares(df, by="illnesses")
    names = [str(name) for name in order["group"].head(max(0, max_illnesses))]
    points, kinds, weights = _illness_points(df)
    if not names:
        fig = plt.figure(figsize=(4, 2))
        fig.text(0.5, 0.5, "no scored illness mentions", ha="center", va="center")
        return fig
    ncols = max(1, min(ncols, len(names)))
    nrows = math.ceil(len(names) / ncols)
    limits = _limits(points[name] for name in names)
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.6 * ncols, 2.7 * nrows + 0.6), sharex=True, sharey=True,
                             squeeze=False)
    flat = axes.ravel()
    for ax, name in zip(flat, names):
        kind = kinds.get(name, "unknown")
        has_kde = _draw_group(ax, points[name], COLORS[kind], limits, marker_size=3.0, weights=weights[name])
        _decorate_plane(ax, limits, corner_labels=False)
        # A long illness name would run into the next panel's title: the counts go to a second line.
        counts = f"({kind}, n={len(points[name]):,})"
        ax.set_title(f"{name}{chr(10) if len(name) > 20 else ' '}{counts}" + ("" if has_kde else "\npoints only"),
                     fontsize=8, color=COLORS[kind])
        ax.tick_params(labelsize=7)
    for ax in flat[len(names):]:
        fig.delaxes(ax)  # unused grid cells: the panel count equals the number of illnesses shown
    fig.supxlabel("warmth")
    fig.supylabel("competence")
    fig.suptitle(f"Warmth x competence per illness (top {len(names)} by sentence count)")
    fig.tight_layout()
    return fig


def quadrant_shares_figure(shares_df: pd.DataFrame) -> Figure:
    """Grouped bars: share of mental vs physical sentences in each quadrant.

    ``shares_df`` is ``analysis.quadrant_shares(df)`` (columns ``group``, ``n`` and one per quadrant);
    rows other than mental/physical are drawn too, in grey. A group with n = 0 (NaN shares) gets no bars.
    """
    quadrants = list(QUADRANTS)
    x = np.arange(len(quadrants))
    # Records, not itertuples: the quadrant names contain "-", which namedtuples would rename.
    rows = shares_df.to_dict(orient="records")
    width = 0.8 / max(1, len(rows))
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for i, record in enumerate(rows):
        group = str(record["group"])
        shares = np.array([record[q] for q in quadrants], dtype=float)
        offset = (i - (len(rows) - 1) / 2) * width
        label = f"{group} (n={int(record['n']):,})" + (" – no sentences" if not np.isfinite(shares).any() else "")
        bars = ax.bar(x + offset, np.nan_to_num(shares), width, color=COLORS.get(group, "tab:gray"), label=label)
        # Print the value on each bar: small differences are otherwise hard to read off the axis.
        ax.bar_label(bars, labels=[f"{s:.0%}" if np.isfinite(s) else "" for s in shares], fontsize=8, padding=2)
    ax.set_xticks(x, [QUADRANT_TICKS.get(q, q) for q in quadrants])
    ax.set_ylim(0, 1.08)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("share of sentences")
    ax.set_title("Quadrant shares (warmth x competence)")
    ax.legend(frameon=False, fontsize=9)
    fig.tight_layout()
    return fig


def _xerr(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """(2, n) asymmetric error bars from CI bounds; NaN where unknown, never negative (errorbar forbids it)."""
    return np.vstack([np.clip(values - low, 0, None), np.clip(high - values, 0, None)])


def aq27_figure(bias_df: pd.DataFrame, *, alpha: float = 0.05) -> Figure:
    """AQ-27 dimensions: share of mental/physical sentences in each BIAS-map region, and their difference.

    ``bias_df`` is ``analysis.bias_map_scores(df)``. Left: the two shares (points) with 95% bootstrap CIs;
    right: mental - physical with its CI, marked ``*`` where the Holm-adjusted p-value < ``alpha``.
    One row per dimension, in map order from the top.
    """
    dims = bias_df["dimension"].astype(str).tolist()
    y = np.arange(len(dims))[::-1].astype(float)  # first dimension at the top
    region = [f"{d}\n({w} warmth, {c} comp.)" for d, w, c in
              zip(dims, bias_df["warmth"].astype(str), bias_df["competence"].astype(str).str.replace("_", " "))]
    fig, (ax_share, ax_diff) = plt.subplots(1, 2, figsize=(9.5, 0.55 * len(dims) + 1.6), sharey=True,
                                            gridspec_kw={"width_ratios": [3, 2]})
    for group, dy in (("mental", 0.15), ("physical", -0.15)):
        values = bias_df[f"share_{group}"].to_numpy(dtype=float)
        err = _xerr(values, bias_df[f"share_{group}_ci_low"].to_numpy(dtype=float),
                    bias_df[f"share_{group}_ci_high"].to_numpy(dtype=float))
        n = int(bias_df[f"n_{group}"].iloc[0]) if len(bias_df) else 0
        ax_share.errorbar(values, y + dy, xerr=err, fmt="o", color=COLORS[group], capsize=3, markersize=5,
                          label=f"{group} (n={n:,})")
    ax_share.set_xlim(-0.02, 1.02)
    ax_share.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax_share.set_xlabel("share of sentences in the dimension's region (95% CI)")
    ax_share.set_yticks(y, region, fontsize=8)
    ax_share.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False, fontsize=9)

    diff = bias_df["difference"].to_numpy(dtype=float)
    err = _xerr(diff, bias_df["difference_ci_low"].to_numpy(dtype=float),
                bias_df["difference_ci_high"].to_numpy(dtype=float))
    ax_diff.errorbar(diff, y, xerr=err, fmt="s", color="0.2", capsize=3, markersize=4)
    ax_diff.axvline(0, color="0.5", linewidth=0.8)
    p_holm = bias_df["p_holm"].to_numpy(dtype=float) if "p_holm" in bias_df else np.full(len(dims), np.nan)
    for yi, d, p in zip(y, diff, p_holm):
        if np.isfinite(d) and np.isfinite(p) and p < alpha:
            ax_diff.annotate("*", (d, yi), xytext=(0, 4), textcoords="offset points", ha="center", fontsize=12)
    bound = np.nanmax(np.abs(np.concatenate([diff, diff - err[0], diff + err[1]]))) if np.isfinite(diff).any() else 0
    bound = max(0.1, min(1.0, float(bound) * 1.15))
    ax_diff.set_xlim(-bound, bound)
    # More labels (e.g. "−20.0%−10.0%") run together; round steps (10%, not 15%).
    ax_diff.xaxis.set_major_locator(MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]))
    ax_diff.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax_diff.set_xlabel(f"mental − physical (95% CI; * Holm p < {alpha:g})")
    ax_diff.tick_params(axis="y", left=False)
    for ax in (ax_share, ax_diff):
        ax.set_ylim(-0.7, len(dims) - 0.3)
        ax.grid(axis="x", color="0.9")
        ax.set_axisbelow(True)
    fig.suptitle("AQ-27 dimensions on the BIAS map: mental vs physical")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------------- output


def save_figure(fig: Figure, path_without_suffix: str | Path, formats: Sequence[str] = ("png", "svg"), *,
                dpi: int = 150, **savefig_kwargs: Any) -> list[Path]:
    """Write ``fig`` as ``<path>.<fmt>`` for each format, each atomically; close the figure; return the paths.

    The suffix is appended (not substituted), so ``out/fig.v2`` gives ``out/fig.v2.png``. A failed write
    leaves any previous file untouched; the figure is closed even then (pyplot keeps open figures alive).
    """
    base = str(path_without_suffix)
    written: list[Path] = []
    try:
        for fmt in formats:
            fmt = fmt.lower().lstrip(".")
            target = Path(f"{base}.{fmt}")
            with atomic_path(target) as tmp:
                # The temporary file ends in ".tmp": name the format explicitly instead of letting
                # matplotlib guess it from the suffix.
                fig.savefig(tmp, format=fmt, dpi=dpi, bbox_inches="tight", **savefig_kwargs)
            written.append(target)
    finally:
        plt.close(fig)
    return written


def result_figures(result: analysis.AnalysisResult) -> dict[str, Figure]:
    """The figures drawn from the analysis (stem -> figure): quadrant shares and the AQ-27 dimensions."""
    return {"quadrant_shares": quadrant_shares_figure(result.quadrants_by_type), "aq27": aq27_figure(result.bias_map)}


def save_figures(figures: dict[str, Figure], folder: AuditFolder,
                 formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """:func:`save_figure` each of ``figures`` (stem -> figure) into ``folder``; return the paths."""
    return [path for stem, figure in figures.items() for path in save_figure(figure, folder.path / stem, formats)]


#: Seconds the forked drawer may still take once this process has drawn its figures (it takes a few).
DRAWER_TIMEOUT = 120.0


def analyse_and_write_figures(sentences: pd.DataFrame, analyse: Callable[[], analysis.AnalysisResult],
                              folder: AuditFolder, formats: Sequence[str] = FIGURE_FORMATS) -> analysis.AnalysisResult:
    """Call ``analyse`` and write every figure of an audit into ``folder`` in each of ``formats`` (the density, the
    seed paper's Figure 3; per-illness small multiples; quadrant shares; the AQ-27 dimensions); return the analysis.

    The per-illness small multiples, half of the drawing time, need only ``sentences``: where ``fork`` and a
    second CPU are available a forked process draws them while this one analyses and draws the others. If that
    process fails, or is still running :data:`DRAWER_TIMEOUT` seconds after the others are drawn, they are drawn
    again here, so that its error is raised in this process; if this process fails
    (Ctrl-C included) the other is stopped, and a figure it was writing is left as a temporary file only.
    """
    def draw_small_multiples() -> None:
        save_figures({"density_by_illness": small_multiples_figure(sentences)}, folder, formats)

    def draw_the_others() -> analysis.AnalysisResult:
        result = analyse()
        save_figures({"density": density_figure(sentences), **result_figures(result)}, folder, formats)
        return result

    if usable_cpus() < 2 or "fork" not in multiprocessing.get_all_start_methods():
        draw_small_multiples()
        return draw_the_others()
    # fork: the child has the frame, the imports and the Agg backend without pickling or importing anything.
    drawer = multiprocessing.get_context("fork").Process(target=_ignoring_ctrl_c, args=(draw_small_multiples,),
                                                         daemon=True)
    drawer.start()
    try:
        result = draw_the_others()
    except BaseException:
        drawer.terminate()
        drawer.join()
        raise
    # a forked child can hang on a lock another thread held at the fork (seen in a test process with torch loaded):
    # past a generous wait it is stopped and the figure drawn here
    drawer.join(DRAWER_TIMEOUT)
    if drawer.exitcode is None:
        drawer.terminate()
        drawer.join()
    if drawer.exitcode != 0:
        draw_small_multiples()
    return result


def _ignoring_ctrl_c(work: Callable[[], None]) -> None:
    # Ctrl-C reaches the whole process group: the parent, which knows what to report, stops this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    work()


def replot(folder: AuditFolder, strict: bool = False, log: Callable[[str], None] | None = None,
           formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Rebuild every figure from ``sentences.parquet`` in each of ``formats``, with the analysis recomputed with the
    audit's seed and its own BIAS map (as ``aq27.csv`` records it); return the paths. ``strict`` and ``log``: see
    :meth:`AuditFolder.read_sentences`."""
    sentences, summary = folder.read_statistics_sentences(strict, log, weighted=True), folder.read_summary()
    analyse_and_write_figures(sentences, lambda: analysis.analyse(sentences, bias_map=folder.read_bias_map(),
                                                                  seed=summary.seed), folder, formats)
    return [folder.figure(stem, fmt) for stem in FIGURES for fmt in formats]
