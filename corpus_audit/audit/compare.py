"""Compare two finished audits: two corpora, or one corpus before and after filtering.

Each audit is an OUTDIR written by ``corpus-audit audit`` (``sentences.parquet``, ``aq27.csv``,
``summary.json``). The comparison follows the conventions of :mod:`corpus_audit.audit.analysis`: a "both"
sentence counts in the mental *and* in the physical group, unscored sentences are left out, a score ≥ 0
is high. Audits A and B are treated as independent samples; when B is a filtered subset of A they share
sentences, which the tests do not model (read their p-values as descriptive in that case).

One sign convention throughout: every difference and change is **B - A** (what changed from A to B), and a gap is
mental - physical; the change of a gap (B's gap - A's gap) has a bootstrap CI.

Scores from different embedding models or axes live on different axes, so comparing them is meaningless:
``compare_audits`` refuses such a pair (``ModelMismatchError``) unless ``allow_different_models``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from corpus_audit.audit.analysis import quadrant_shares
from corpus_audit.audit.folder import AuditFolder, AuditSummary
from corpus_audit.common.errors import UserError
from corpus_audit.common.formats import MISSING, num, p_value, percent, points, with_ci
from corpus_audit.common.jsonable import jsonable
from corpus_audit.stigma.judgement import CATEGORY_COLUMN, JUDGEMENT
from corpus_audit.stigma.quadrants import GROUPS, QUADRANTS, group_masks, region_quadrants, scored_rows
from corpus_audit.stigma.stats import MIN_GROUP_SIZE, compare_groups, gap_change, two_sample_2d


class ModelMismatchError(UserError, ValueError):
    """The two audits were scored with different models or axes, so their scores are not comparable."""


@dataclass
class AuditOutput:
    """The files of one finished audit that a comparison reads."""

    folder: AuditFolder
    sentences: pd.DataFrame
    aq27: pd.DataFrame
    summary: AuditSummary

    @classmethod
    def load(cls, outdir: str | Path, strict: bool = False, log: Callable[[str], None] | None = None) -> AuditOutput:
        """Read ``outdir``; raises ``AuditOutputError`` for a missing or unreadable file (bad rows of
        sentences.parquet: see :meth:`AuditFolder.read_sentences`)."""
        folder = AuditFolder(outdir)
        aq27 = folder.read_aq27()
        return cls(folder, folder.read_statistics_sentences(strict, log), aq27, folder.read_summary())

    @property
    def outdir(self) -> Path:
        return self.folder.path

    @property
    def model_id(self) -> str | None:
        return self.summary.model_id

    @property
    def axes_path(self) -> str | None:
        return self.summary.axes_path


def _check_same_model(a: AuditOutput, b: AuditOutput) -> None:
    for what, value_a, value_b in (("model", a.model_id, b.model_id), ("axes file", a.axes_path, b.axes_path)):
        if value_a != value_b:
            raise ModelMismatchError(
                f"the audits used different {what}s ({a.outdir}: {value_a}; {b.outdir}: {value_b}); their "
                "warmth/competence scores are on different axes and cannot be compared "
                "(--allow-different-models compares them anyway)")
    if a.model_id is None:
        raise ModelMismatchError(f"{a.folder.summary} and {b.folder.summary} name no score.model_id, so "
                                 "the models cannot be checked (--allow-different-models compares them anyway)")


def _group(sentences: pd.DataFrame, group: str) -> pd.DataFrame:
    """Scored sentences of one illness type ("both" sentences included, as in the analysis)."""
    scored = scored_rows(sentences)
    return scored[group_masks(scored)[group]]


def _difference(a: float, b: float) -> float:
    return b - a if math.isfinite(a) and math.isfinite(b) else float("nan")


def _compare_type(a: AuditOutput, b: AuditOutput, group: str, labels: tuple[str, str], seed: int) -> dict[str, Any]:
    part_a, part_b = _group(a.sentences, group), _group(b.sentences, group)
    # compare_groups gives first - second: B first, so that every difference reads B - A
    names = {"label_a": f"{labels[1]} ({group})", "label_b": f"{labels[0]} ({group})"}
    shares_a, shares_b = (quadrant_shares(frame).set_index("group").loc[group] for frame in (a.sentences, b.sentences))
    return {
        "n_a": len(part_a),
        "n_b": len(part_b),
        **{score: compare_groups(part_b[score], part_a[score], seed=seed, **names).to_dict()
           for score in ("warmth", "competence")},
        "joint": two_sample_2d(part_b[["warmth", "competence"]].to_numpy(dtype=float),
                               part_a[["warmth", "competence"]].to_numpy(dtype=float), seed=seed, **names).to_dict(),
        "quadrants": [{"quadrant": quadrant, "share_a": float(shares_a[quadrant]), "share_b": float(shares_b[quadrant]),
                       "change": _difference(float(shares_a[quadrant]), float(shares_b[quadrant]))}
                      for quadrant in QUADRANTS],
    }


def _gaps(a: AuditOutput, b: AuditOutput, seed: int) -> list[dict[str, Any]]:
    """The mental - physical gap of mean warmth and competence in A and in B and its change with a CI, over all
    sentences and (where both audits have the judgement gate) over the judgements."""
    parts = [("all sentences", a.sentences, b.sentences)]
    if all(CATEGORY_COLUMN in frame and frame[CATEGORY_COLUMN].notna().any() for frame in (a.sentences,
                                                                                             b.sentences)):
        parts.append(("judgements", *(frame[frame[CATEGORY_COLUMN] == JUDGEMENT] for frame in (a.sentences,
                                                                                             b.sentences))))
    rows = []
    for label, frame_a, frame_b in parts:
        groups = {side: {group: _group(frame, group) for group in GROUPS} for side, frame in (("a", frame_a),
                                                                                            ("b", frame_b))}
        for score in ("warmth", "competence"):
            values = [groups[side][group][score].to_numpy(dtype=float) for side in "ab" for group in GROUPS]
            change, low, high = gap_change(*values, seed=seed)
            sizes = {f"n_{group}_{side}": len(groups[side][group]) for side in "ab" for group in GROUPS}
            rows.append({"sentences": label, "score": score, **sizes,
                         "gap_a": _gap(values[0], values[1]), "gap_b": _gap(values[2], values[3]),
                         "gap_change": change, "gap_change_ci_low": low, "gap_change_ci_high": high})
    return rows


def _gap(mental: Any, physical: Any) -> float:
    return float(mental.mean() - physical.mean()) if len(mental) and len(physical) else float("nan")


def _compare_aq27(a: AuditOutput, b: AuditOutput, warnings: list[str], seed: int) -> list[dict[str, Any]]:
    """Per dimension: shares in A and B and the change of the mental - physical gap (B gap - A gap) with a CI."""
    regions = {side: {dim.dimension: [quadrant for quadrant, inside in zip(QUADRANTS, region_quadrants(
                          dim.warmth, dim.score_competence)) if inside]
                      for dim in audit.folder.read_bias_map()} for side, audit in (("a", a), ("b", b))}
    audits = {"a": a, "b": b}
    columns = ["dimension", "warmth", "competence", "share_mental", "share_physical"]
    merged = a.aq27[columns].merge(b.aq27[columns], on="dimension", how="outer", suffixes=("_a", "_b"), sort=False)
    rows = []
    for record in merged.to_dict(orient="records"):
        dimension = record["dimension"]
        region_a = (record["warmth_a"], record["competence_a"])
        region_b = (record["warmth_b"], record["competence_b"])
        if pd.isna(record["warmth_a"]) or pd.isna(record["warmth_b"]):
            warnings.append(f"AQ-27 dimension {dimension!r} is in only one of the two aq27.csv files")
        elif region_a != region_b:
            warnings.append(f"AQ-27 dimension {dimension!r} has different BIAS-map regions in the two audits "
                            f"({'/'.join(region_a)} vs {'/'.join(region_b)})")
        gap_a = record["share_mental_a"] - record["share_physical_a"]
        gap_b = record["share_mental_b"] - record["share_physical_b"]
        low = high = float("nan")
        if dimension in regions["a"] and dimension in regions["b"]:
            indicators = [_group(audits[side].sentences, group)["quadrant"].isin(regions[side][dimension])
                          .to_numpy(dtype=float) for side in "ab" for group in GROUPS]
            _, low, high = gap_change(*indicators, seed=seed)
        rows.append({"dimension": dimension, "warmth": record["warmth_a"], "competence": record["competence_a"],
                     **{key: record[key] for key in ("share_mental_a", "share_mental_b",
                                                     "share_physical_a", "share_physical_b")},
                     "gap_a": gap_a, "gap_b": gap_b, "gap_change": _difference(gap_a, gap_b),
                     "gap_change_ci_low": low, "gap_change_ci_high": high})
    return rows


def compare_audits(outdir_a: str | Path, outdir_b: str | Path, labels: tuple[str, str] = ("A", "B"), seed: int = 0,
                   allow_different_models: bool = False, strict: bool = False,
                   log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Compare two finished audits; returns plain Python (NaN -> None), ready for ``json.dumps``.

    Keys: ``labels``; ``audits`` (per side: outdir, model_id, axes_path, seed, sentences); ``seed``;
    ``by_type`` with, for ``mental`` and ``physical``: ``n_a``/``n_b`` (scored sentences), ``warmth`` and
    ``competence`` (:func:`corpus_audit.stigma.stats.compare_groups` of B vs A: ``mean_difference`` = B - A,
    rank-biserial positive when B scores lower), ``joint`` (2-D energy test) and ``quadrants`` (share in A,
    in B and the change B - A); ``gaps``: the mental - physical gap of mean warmth and competence in A and B and
    ``gap_change`` = gap B - gap A with a bootstrap CI, over all sentences and over judgements; ``aq27``: per
    dimension, the lenient-region shares of mental and physical sentences in A and B, ``gap_*`` = mental -
    physical share and ``gap_change`` = gap B - gap A with a CI (negative: B narrows a mental-over-physical
    excess); ``warnings``.

    Raises ``AuditOutputError`` (with the path) for a missing or unreadable file, ``ModelMismatchError`` when
    the models or axes files differ (unless ``allow_different_models``), ``ValueError`` for equal labels.
    Bad rows of sentences.parquet are left out, said in ``log`` (``strict``: the first one raises; see
    :meth:`AuditFolder.read_sentences`).
    """
    if len(labels) != 2 or labels[0] == labels[1]:
        raise ValueError(f"labels must be two different names, not {labels!r}")
    a, b = AuditOutput.load(outdir_a, strict, log), AuditOutput.load(outdir_b, strict, log)
    warnings: list[str] = []
    if allow_different_models and (a.model_id, a.axes_path) != (b.model_id, b.axes_path):
        warnings.append(f"the audits used different models or axes ({a.model_id} vs {b.model_id}); "
                        "their scores are not on the same axes")
    elif not allow_different_models:
        _check_same_model(a, b)
    by_type = {group: _compare_type(a, b, group, labels, seed) for group in GROUPS}
    for group in GROUPS:
        warnings += by_type[group]["warmth"]["warnings"]
    result = {
        "labels": list(labels),
        "audits": {side: {"outdir": str(audit.outdir), "model_id": audit.model_id, "axes_path": audit.axes_path,
                          "seed": audit.summary.options.get("seed"), **_counts(audit)}
                   for side, audit in (("a", a), ("b", b))},
        "seed": seed,
        "by_type": by_type,
        "gaps": _gaps(a, b, seed),
        "aq27": _compare_aq27(a, b, warnings, seed),
        "warnings": list(dict.fromkeys(warnings)),
    }
    result["answer"] = comparison_answer(result)
    return jsonable(result)


def _counts(audit: AuditOutput) -> dict[str, Any]:
    """What one side holds, for the before -> after line: sentences, judgements (None without the gate) and
    documents (read, and with an illness mention)."""
    sentences = audit.sentences
    judged = CATEGORY_COLUMN in sentences and sentences[CATEGORY_COLUMN].notna().any()
    return {"sentences": len(sentences),
            "judgements": int((sentences[CATEGORY_COLUMN] == JUDGEMENT).sum()) if judged else None,
            "documents_read": audit.summary.filter.get("documents_read"),
            "documents_matched": audit.summary.filter.get("documents_matched")}


#: How a change of the mental − physical gap reads, per score: (the gap grew, the gap shrank) from A to B.
_CHANGE_WORDS = {"warmth": ("warmer", "colder"), "competence": ("more competent", "less competent")}


def comparison_answer(result: dict[str, Any]) -> str:
    """One sentence: did mental-illness talk become more or less stigmatising relative to physical-illness talk from
    A to B, by how much (the change of the mental − physical gap with its 95% CI), and how sure (too few to tell,
    or a CI that excludes 0)."""
    label_a, label_b = result["labels"]
    rows = [row for row in result["gaps"] if row["sentences"] == "judgements"] or result["gaps"]
    what = "judgements" if rows[0]["sentences"] == "judgements" else "sentences"
    sizes = rows[0]
    small = [f"{sizes[f'n_{group}_{side}']} {group}-illness {what} in {label}"
             for label, side in ((label_a, "a"), (label_b, "b")) for group in GROUPS
             if sizes.get(f"n_{group}_{side}", 0) < MIN_GROUP_SIZE]
    if small:
        return (f"Too few to tell whether mental-illness talk became more or less stigmatising relative to "
                f"physical-illness talk from {label_a} to {label_b}: only {' and '.join(small)} (under "
                f"{MIN_GROUP_SIZE}).")
    moves = {}
    for row in rows:
        low, high = row["gap_change_ci_low"], row["gap_change_ci_high"]
        if low is not None and high is not None and (low > 0 or high < 0):
            moves[row["score"]] = row
    if not moves:
        changes = ", ".join(f"{row['score']} {num(row['gap_change'], 2, True)} [95% CI "
                            f"{num(row['gap_change_ci_low'], 2, True)}, {num(row['gap_change_ci_high'], 2, True)}]"
                            for row in rows)
        return (f"No reliable change from {label_a} to {label_b} in how mental-illness {what} compare with "
                f"physical-illness {what} (change of the mental − physical gap: {changes}).")
    parts = [f"{_CHANGE_WORDS[score][0 if row['gap_change'] > 0 else 1]} by {abs(row['gap_change']):.2f} (95% CI "
             f"{num(row['gap_change_ci_low'], 2, True)} to {num(row['gap_change_ci_high'], 2, True)})"
             for score, row in moves.items()]
    better = all(row["gap_change"] > 0 for row in moves.values())
    worse = all(row["gap_change"] < 0 for row in moves.values())
    head = "Less stigmatising" if better else "More stigmatising" if worse else "Mixed"
    return (f"{head} in {label_b} than in {label_a}: relative to physical-illness {what}, mental-illness {what} "
            f"became {' and '.join(parts)} on a −1 to 1 scale.")


def before_after(result: dict[str, Any]) -> str:
    """The counts of the two audits, A -> B: documents read and with a mention, sentences, judgements."""
    a, b = result["audits"]["a"], result["audits"]["b"]
    pairs = [("documents read", "documents_read"), ("documents with an illness mention", "documents_matched"),
             ("sentences", "sentences"), ("judgements about people", "judgements")]
    def count(side: dict[str, Any], key: str) -> str:
        return MISSING if side.get(key) is None else str(side[key])

    return "; ".join(f"{name} {count(a, key)} -> {count(b, key)}" for name, key in pairs
                     if a.get(key) is not None or b.get(key) is not None)


def format_comparison(result: dict[str, Any]) -> str:
    """Readable text tables of a ``compare_audits`` result."""
    label_a, label_b = result["labels"]
    lines = [f"answer: {result['answer']}", f"{label_a} -> {label_b}: {before_after(result)}",
             f"A = {label_a}: {result['audits']['a']['outdir']}", f"B = {label_b}: {result['audits']['b']['outdir']}"]
    for group, part in result["by_type"].items():
        lines += ["", f"{group}: n A = {part['n_a']}, n B = {part['n_b']}",
                  f"  {'score':<11}{'mean A':>9}{'mean B':>9}{'B - A':>9}{'95% CI':>20}{'MW p':>9}{'r':>8}{'KS p':>9}"]
        for score in ("warmth", "competence"):
            c = part[score]
            low, high = c["mean_difference_ci"]
            ci = f"[{num(low, signed=True)}, {num(high, signed=True)}]" if low is not None else "-"
            lines.append(f"  {score:<11}{num(c['mean_b'], signed=True):>9}{num(c['mean_a'], signed=True):>9}"
                         f"{num(c['mean_difference'], signed=True):>9}{ci:>20}{p_value(c['mann_whitney_p']):>9}"
                         f"{num(c['rank_biserial'], 2, True):>8}{p_value(c['ks_p']):>9}")
        joint = part["joint"]
        lines.append(f"  2-D energy test: statistic {num(joint['statistic'], 4)}, p {p_value(joint['p_value'])}")
        lines.append(f"  {'quadrant':<19}{'A':>8}{'B':>8}{'B - A':>9}")
        for row in part["quadrants"]:
            lines.append(f"  {row['quadrant']:<19}{percent(row['share_a']):>8}{percent(row['share_b']):>8}"
                         f"{points(row['change']):>9}")
    lines += ["", "Mental - physical gap of the means, and its change B - A [95% CI]"]
    for row in result["gaps"]:
        ci = f"[{num(row['gap_change_ci_low'], signed=True)}, {num(row['gap_change_ci_high'], signed=True)}]"
        lines.append(f"  {row['sentences']:<15}{row['score']:<11} gap A {num(row['gap_a'], signed=True)}  gap B "
                     f"{num(row['gap_b'], signed=True)}  change {num(row['gap_change'], signed=True)} {ci}")
    lines += ["", "AQ-27 (share of sentences in the dimension's BIAS-map region; gap = mental - physical)",
              f"  {'dimension':<15}{'mental A':>9}{'mental B':>9}{'phys. A':>9}{'phys. B':>9}"
              f"{'gap A':>10}{'gap B':>10}{'change':>10}"]
    for row in result["aq27"]:
        lines.append(f"  {row['dimension']:<15}{percent(row['share_mental_a']):>9}{percent(row['share_mental_b']):>9}"
                     f"{percent(row['share_physical_a']):>9}{percent(row['share_physical_b']):>9}"
                     f"{points(row['gap_a']):>10}{points(row['gap_b']):>10}{points(row['gap_change']):>10}")
    lines += [f"warning: {warning}" for warning in result["warnings"]]
    return "\n".join(lines)


def write_comparison_report(result: dict[str, Any], path: str | Path, strict: bool = False,
                            log: Callable[[str], None] | None = None) -> Path:
    """Write a ``compare_audits`` result as one offline HTML page (atomically): the two audits' densities overlaid
    per illness type, the gap changes with CIs, the per-type comparisons and the AQ-27 table, every difference
    B - A."""
    import tempfile

    from corpus_audit.audit.figures import comparison_figure, save_figure
    from corpus_audit.common.atomic import atomic_path
    from corpus_audit.common.html import BASE_STYLE, embedded_png, esc, table

    label_a, label_b = result["labels"]
    frames = [AuditFolder(result["audits"][side]["outdir"]).read_statistics_sentences(strict, log)
              for side in "ab"]
    with tempfile.TemporaryDirectory() as scratch:
        png = save_figure(comparison_figure(*frames, labels=(label_a, label_b)), Path(scratch) / "compare",
                          ("png",))[0]
        figure = embedded_png(png, f"{label_a} and {label_b}: warmth x competence density per illness type")

    gaps = table(("sentences", "score", f"gap {label_a}", f"gap {label_b}", "change B − A [95% CI]"),
                 [(r["sentences"], r["score"], num(r["gap_a"]), num(r["gap_b"]),
                   with_ci(r["gap_change"], r["gap_change_ci_low"], r["gap_change_ci_high"]))
                  for r in result["gaps"]],
                 numeric_from=2)
    by_type = []
    for group, part in result["by_type"].items():
        rows = [(score, num(part[score]["mean_b"]), num(part[score]["mean_a"]),
                 with_ci(part[score]["mean_difference"], *part[score]["mean_difference_ci"]),
                 p_value(part[score]["mann_whitney_p"])) for score in ("warmth", "competence")]
        by_type.append(f"<h3>{esc(group)} (n {esc(label_a)} {part['n_a']}, n {esc(label_b)} {part['n_b']})</h3>"
                       + table(("score", f"mean {label_a}", f"mean {label_b}", "B − A [95% CI]", "Mann–Whitney p"),
                               rows))
    aq27 = table(("dimension", f"gap {label_a}", f"gap {label_b}", "change B − A [95% CI]"),
                 [(r["dimension"], points(r["gap_a"]), points(r["gap_b"]),
                   with_ci(r["gap_change"], r["gap_change_ci_low"], r["gap_change_ci_high"], points))
                  for r in result["aq27"]])
    warnings = "".join(f"<li>{esc(w)}</li>" for w in result["warnings"])
    body = (f"<h1>Comparison of two audits</h1><p>A = {esc(label_a)}: {esc(result['audits']['a']['outdir'])}<br>"
            f"B = {esc(label_b)}: {esc(result['audits']['b']['outdir'])}</p>"
            f'<p class="answer"><b>{esc(result["answer"])}</b></p><p>{esc(label_a)} → {esc(label_b)}: '
            f"{esc(before_after(result))}.</p>"
            "<p>Every difference is B − A; a gap is mental − physical, and its change is B's gap − A's gap, with a "
            "percentile-bootstrap 95% CI. A change whose CI excludes 0 is a change the data show.</p>"
            + (f'<section class="warnings"><h2>Warnings</h2><ul>{warnings}</ul></section>' if warnings else "")
            + f"<figure>{figure}</figure><h2>Mental − physical gap</h2>{gaps}<h2>Per illness type</h2>"
            + "".join(by_type) + f"<h2>AQ-27 dimensions (share in the BIAS-map region)</h2>{aq27}")
    with atomic_path(path) as tmp:
        Path(tmp).write_text(f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Audit comparison'
                             f"</title><style>{BASE_STYLE}</style></head><body>{body}</body></html>\n",
                             encoding="utf-8")
    return Path(path)
