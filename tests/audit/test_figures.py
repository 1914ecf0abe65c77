"""Tests of corpus_audit.audit.figures on seeded synthetic data (no model, no corpus)."""

from __future__ import annotations

import multiprocessing
import os
import time

import matplotlib
import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from corpus_audit.audit import analysis
from corpus_audit.stigma.quadrants import QUADRANTS
from corpus_audit.audit import figures as plots
from corpus_audit.audit.folder import AuditFolder

MENTAL = ["depression", "schizophrenia", "anxiety", "bipolar disorder", "anorexia", "ocd", "ptsd"]
PHYSICAL = ["cancer", "diabetes", "asthma", "arthritis", "epilepsy", "hiv", "flu"]


def make_df(n: int = 600, seed: int = 0, illnesses: list[str] | None = None) -> pd.DataFrame:
    """Mental sentences cold/incompetent-ish, physical warm/competent-ish, ~10% "both"."""
    rng = np.random.default_rng(seed)
    names = illnesses or MENTAL + PHYSICAL
    rows = []
    for _ in range(n):
        if rng.random() < 0.1:
            kind, ills = "both", [MENTAL[0], PHYSICAL[0]]
        else:
            name = names[rng.integers(len(names))]
            kind, ills = ("mental" if name in MENTAL else "physical"), [name]
        centre = (-0.3, -0.2) if kind == "mental" else (0.3, 0.2)
        warmth, competence = np.clip(rng.normal(centre, 0.3), -1, 1)
        rows.append({"illness_type": kind, "illnesses": ills, "warmth": warmth, "competence": competence})
    return pd.DataFrame(rows)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _legend_texts(ax) -> list[str]:
    return [text.get_text() for text in ax.get_legend().get_texts()]


def _colors_of(fig) -> set[tuple[float, ...]]:
    """RGB (no alpha) of every collection and line drawn on the figure's axes."""
    colors = set()
    for ax in fig.axes:
        for coll in ax.collections:
            for rgba in np.atleast_2d(coll.get_facecolor()).tolist() + np.atleast_2d(coll.get_edgecolor()).tolist():
                if len(rgba) == 4:
                    colors.add(tuple(np.round(rgba[:3], 3)))
        for line in ax.lines:
            colors.add(tuple(np.round(to_rgba(line.get_color())[:3], 3)))
    return colors


RED = tuple(np.round(to_rgba("tab:red")[:3], 3))
BLUE = tuple(np.round(to_rgba("tab:blue")[:3], 3))


def test_backend_is_non_interactive():
    assert matplotlib.get_backend().lower() == "agg"


def test_density_figure_axes_labels_limits_legend_and_colours():
    df = make_df()
    n_mental = int(df["illness_type"].isin(["mental", "both"]).sum())
    n_physical = int(df["illness_type"].isin(["physical", "both"]).sum())
    fig = plots.density_figure(df)
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_xlabel() == "warmth" and ax.get_ylabel() == "competence"
    assert ax.get_xlim() == pytest.approx((-1, 1)) and ax.get_ylim() == pytest.approx((-1, 1))
    legend = " | ".join(_legend_texts(ax))
    assert f"mental (n={n_mental:,})" in legend and f"physical (n={n_physical:,})" in legend
    assert "points only" not in legend  # both groups big enough for a KDE
    colors = _colors_of(fig)
    assert RED in colors and BLUE in colors
    # KDE contours were drawn for both groups (contour sets are collections in the group colour).
    texts = [t.get_text() for t in ax.texts]
    assert "warm · competent" in texts and "cold · incompetent" in texts


def test_density_limits_widen_for_out_of_range_scores():
    df = make_df(100)
    df.loc[0, "warmth"] = 1.6
    ax = plots.density_figure(df).axes[0]
    assert ax.get_xlim()[1] > 1.6 and ax.get_xlim()[0] <= -1


@pytest.mark.parametrize("physical_points", [
    [],                                          # empty group
    [(0.2, 0.3)],                                # one point
    [(0.2, 0.3), (0.4, -0.1)],                   # two points
    [(0.5, 0.5)] * 10,                           # identical points: singular covariance
    [(x, 2 * x - 0.5) for x in (0.1, 0.2, 0.3, 0.4)],  # collinear points: singular covariance
])
def test_density_degenerate_groups_do_not_raise(physical_points):
    mental = make_df(200, seed=1)
    mental = mental[mental["illness_type"] == "mental"]
    physical = pd.DataFrame([{"illness_type": "physical", "illnesses": ["flu"], "warmth": w, "competence": c}
                             for w, c in physical_points], columns=mental.columns)
    df = pd.concat([mental, physical], ignore_index=True)
    fig = plots.density_figure(df)
    legend = _legend_texts(fig.axes[0])
    physical_label = next(text for text in legend if text.startswith("physical"))
    assert f"n={len(physical_points)}" in physical_label
    assert "points only" in physical_label
    assert "points only" not in next(text for text in legend if text.startswith("mental"))


def test_density_empty_table_does_not_raise():
    df = pd.DataFrame(columns=["illness_type", "illnesses", "warmth", "competence"])
    fig = plots.density_figure(df)
    assert all("n=0" in text for text in _legend_texts(fig.axes[0]))


def test_save_figure_writes_png_and_svg(tmp_path):
    fig = plots.density_figure(make_df(200))
    fig_number = fig.number
    paths = plots.save_figure(fig, tmp_path / "sub" / "density.v1")
    assert [p.name for p in paths] == ["density.v1.png", "density.v1.svg"]
    png = paths[0].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    height, width = mpimg.imread(paths[0]).shape[:2]
    assert width > 400 and height > 400
    svg = paths[1].read_text(encoding="utf-8")
    assert "<svg" in svg
    assert not plt.fignum_exists(fig_number)  # closed
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["density.v1.png", "density.v1.svg"]  # no temp left


def test_save_figure_closes_and_keeps_old_file_on_error(tmp_path):
    target = tmp_path / "fig.png"
    target.write_bytes(b"old")
    fig = plots.density_figure(make_df(50))
    with pytest.raises(ValueError):
        plots.save_figure(fig, tmp_path / "fig", formats=("png_nope",))
    assert not plt.fignum_exists(fig.number)
    assert target.read_bytes() == b"old"


@pytest.mark.parametrize("max_illnesses, expected", [(12, 12), (5, 5), (30, 14)])
def test_small_multiples_panel_count(max_illnesses, expected):
    df = make_df(700)
    fig = plots.small_multiples_figure(df, max_illnesses=max_illnesses)
    assert len(fig.axes) == expected == min(df["illnesses"].explode().nunique(), max_illnesses)
    # Most frequent first, n in the title, colour from the illness type.
    order = analysis.quadrant_shares(df, by="illnesses")
    first = fig.axes[0].get_title()
    assert first.startswith(order["group"].iloc[0]) and f"n={order['n'].iloc[0]:,}" in first
    for ax in fig.axes:
        name = ax.get_title().split(" (")[0]
        expected_color = "tab:red" if name in MENTAL else "tab:blue"
        assert to_rgba(ax.title.get_color()) == to_rgba(expected_color)


def test_small_multiples_tiny_illness_and_empty_table():
    df = make_df(100, illnesses=["depression", "cancer"])
    df = pd.concat([df, pd.DataFrame([{"illness_type": "physical", "illnesses": ["gout"], "warmth": 0.1,
                                       "competence": 0.1}])], ignore_index=True)
    fig = plots.small_multiples_figure(df)
    assert len(fig.axes) == 3
    assert "points only" in fig.axes[-1].get_title()
    empty = pd.DataFrame(columns=["illness_type", "illnesses", "warmth", "competence"])
    assert len(plots.small_multiples_figure(empty).axes) == 0


def test_quadrant_shares_figure_bars_match_analysis():
    shares = analysis.quadrant_shares(make_df(300))
    fig = plots.quadrant_shares_figure(shares)
    ax = fig.axes[0]
    heights = [patch.get_height() for patch in ax.patches]
    expected = [shares.loc[i, q] for i in range(2) for q in QUADRANTS]
    assert heights == pytest.approx(expected)
    assert {to_rgba(p.get_facecolor())[:3] for p in ax.patches} == {to_rgba("tab:red")[:3], to_rgba("tab:blue")[:3]}
    legend = " ".join(_legend_texts(ax))
    assert f"mental (n={shares.loc[0, 'n']:,})" in legend


def test_quadrant_shares_figure_empty_group():
    df = make_df(100)
    shares = analysis.quadrant_shares(df[df["illness_type"] == "mental"])
    fig = plots.quadrant_shares_figure(shares)
    assert any("no sentences" in text for text in _legend_texts(fig.axes[0]))


def test_aq27_figure_has_one_row_per_dimension():
    bias = analysis.bias_map_scores(make_df(400), n_boot=200)
    assert len(bias) == 9
    fig = plots.aq27_figure(bias)
    labels = [label.get_text() for label in fig.axes[0].get_yticklabels()]
    assert len(labels) == 9
    # Map order from the top: the highest tick is the first dimension.
    ticks = fig.axes[0].get_yticks()
    top_label = labels[int(np.argmax(ticks))]
    assert top_label.startswith(bias["dimension"].iloc[0])
    assert {label.split("\n")[0] for label in labels} == set(bias["dimension"])
    assert RED in _colors_of(fig) and BLUE in _colors_of(fig)


def test_aq27_figure_with_tiny_groups_does_not_raise():
    df = make_df(100)
    bias = analysis.bias_map_scores(df[df["illness_type"] == "mental"].head(1), n_boot=50)
    fig = plots.aq27_figure(bias)
    assert len(fig.axes[0].get_yticklabels()) == 9


# ------------------------------------------------------------------ the audit's figures, two processes at once


def _recording_small_multiples(monkeypatch, pid_file, fail_in=None):
    """Make the small multiples write the drawing process's id to ``pid_file``; raise in ``fail_in`` ("child",
    "any") processes."""
    parent, draw = os.getpid(), plots.small_multiples_figure

    def recording(sentences, *args, **kwargs):
        pid_file.write_text(str(os.getpid()))
        if fail_in == "any" or (fail_in == "child" and os.getpid() != parent):
            raise ValueError("cannot draw")
        return draw(sentences, *args, **kwargs)
    monkeypatch.setattr(plots, "small_multiples_figure", recording)


def _analyse(df):
    return lambda: analysis.analyse(df, seed=0)


def test_analyse_and_write_figures_draws_the_small_multiples_in_another_process(tmp_path, monkeypatch):
    if plots.usable_cpus() < 2:
        pytest.skip("one CPU: the figures are drawn in this process")
    _recording_small_multiples(monkeypatch, tmp_path / "pid")
    folder = AuditFolder(tmp_path / "audit")
    folder.path.mkdir()
    df = make_df(300)
    result = plots.analyse_and_write_figures(df, _analyse(df), folder)
    assert result.quadrants_by_type.equals(analysis.analyse(df, seed=0).quadrants_by_type)
    assert sorted(path.name for path in folder.path.iterdir()) == sorted(
        f"{stem}.png" for stem in ("density", "density_by_illness", "quadrant_shares", "aq27"))
    assert int((tmp_path / "pid").read_text()) != os.getpid()
    assert mpimg.imread(folder.path / "density_by_illness.png").shape[1] > 400


def test_analyse_and_write_figures_on_one_cpu_draws_here(tmp_path, monkeypatch):
    monkeypatch.setattr(plots, "usable_cpus", lambda: 1)
    _recording_small_multiples(monkeypatch, tmp_path / "pid")
    folder = AuditFolder(tmp_path / "audit")
    folder.path.mkdir()
    df = make_df(200)
    plots.analyse_and_write_figures(df, _analyse(df), folder)
    assert int((tmp_path / "pid").read_text()) == os.getpid()
    assert (folder.path / "density_by_illness.png").is_file()


def test_a_failed_drawing_process_is_made_good_here(tmp_path, monkeypatch):
    if plots.usable_cpus() < 2:
        pytest.skip("one CPU: no drawing process")
    _recording_small_multiples(monkeypatch, tmp_path / "pid", fail_in="child")
    folder = AuditFolder(tmp_path / "audit")
    folder.path.mkdir()
    df = make_df(200)
    plots.analyse_and_write_figures(df, _analyse(df), folder)
    assert int((tmp_path / "pid").read_text()) == os.getpid()  # drawn again here, after the child failed
    assert (folder.path / "density_by_illness.png").is_file()


def test_a_hanging_drawing_process_is_stopped_and_made_good_here(tmp_path, monkeypatch):
    """A forked child can hang on a lock another thread held at the fork: after DRAWER_TIMEOUT it is stopped
    and the figure drawn here."""
    if plots.usable_cpus() < 2:
        pytest.skip("one CPU: no drawing process")
    parent, draw = os.getpid(), plots.small_multiples_figure

    def hanging(sentences, *args, **kwargs):
        if os.getpid() != parent:
            time.sleep(600)
        (tmp_path / "pid").write_text(str(os.getpid()))
        return draw(sentences, *args, **kwargs)
    monkeypatch.setattr(plots, "small_multiples_figure", hanging)
    monkeypatch.setattr(plots, "DRAWER_TIMEOUT", 1.0)
    folder = AuditFolder(tmp_path / "audit")
    folder.path.mkdir()
    df = make_df(200)
    plots.analyse_and_write_figures(df, _analyse(df), folder)
    assert int((tmp_path / "pid").read_text()) == os.getpid() and multiprocessing.active_children() == []
    assert (folder.path / "density_by_illness.png").is_file()


def test_a_drawing_error_is_raised_here(tmp_path, monkeypatch):
    _recording_small_multiples(monkeypatch, tmp_path / "pid", fail_in="any")
    folder = AuditFolder(tmp_path / "audit")
    folder.path.mkdir()
    df = make_df(200)
    with pytest.raises(ValueError, match="cannot draw"):
        plots.analyse_and_write_figures(df, _analyse(df), folder)


def test_a_failed_analysis_stops_the_drawing_process(tmp_path):
    folder = AuditFolder(tmp_path / "audit")
    folder.path.mkdir()

    def failing():
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        plots.analyse_and_write_figures(make_df(300), failing, folder)
    assert multiprocessing.active_children() == []
    assert not (folder.path / "aq27.png").exists()
