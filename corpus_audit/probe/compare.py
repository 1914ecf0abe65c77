"""``corpus-audit probe compare``: the same AQ-27 questionnaire put to several models, side by side, with the
differences between models tested (the seed papers' results are comparisons across models).

Each probe folder gives its per-dimension results (``dimensions.csv``) and its per-illness scores
(``illnesses.csv``: the mean over all items and over each dimension's items). The illness is the unit, as in the
probe: for two models A and B and each illness i, ``d_i = score_A(i) - score_B(i)``; the models' mental - physical
gaps differ when the mental illnesses' d differ from the physical ones', tested by a permutation test over the
illness labels with a bootstrap CI (:func:`corpus_audit.stigma.unit_stats.compare_units`), over the illnesses both
probes scored. Every pair of models, overall and per dimension, is one family: Holm over all of them.

The scores are log-probabilities of each model's own vocabulary; the controlled method's score (the illness's
log-probability in an item less that in neutral sentences) is a log-ratio, comparable across models, while the
paper's raw PLL is not (names split into other numbers of pieces), which the verdict says.

Writes, in the output folder: ``compare.json`` (models, the per-model table, the tests, the verdict),
``compare.csv`` (one row per model x dimension), ``compare.png``/``.svg`` and ``report.html``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from corpus_audit.common.atomic import atomic_path, check_output_location, folder_lock, write_text_atomic
from corpus_audit.common.errors import UserError
from corpus_audit.common.html import BASE_STYLE, esc, num, p_value, table
from corpus_audit.common.jsonable import jsonable
from corpus_audit.common.log import to_stderr
from corpus_audit.probe.folder import ProbeFolder, ProbeSummary
from corpus_audit.probe.results import AQ27Results
from corpus_audit.stigma.aq27 import DIMENSIONS
from corpus_audit.stigma.stats import holm
from corpus_audit.stigma.unit_stats import ALPHA, compare_units

COMPARE_JSON = "compare.json"
COMPARE_CSV = "compare.csv"
COMPARE_FIGURE = "compare"
COMPARE_CAPTION = ("Mean score difference, mental - physical illnesses, per model overall and per AQ-27 dimension, "
                   "with 95% bootstrap CIs over illnesses; a hatched bar: not significant after correction.")


class CompareError(UserError, ValueError):
    """The folders given to ``probe compare`` cannot be compared."""


def _label(summary: ProbeSummary, path: Path) -> str:
    return f"{summary.model_id} ({path.name})"


def _load(paths: Sequence[str | Path]) -> list[tuple[str, ProbeSummary, AQ27Results, pd.DataFrame]]:
    """(label, summary, its typed results, illnesses table) of each AQ-27 probe folder; CompareError where they do
    not match."""
    loaded = []
    for path in map(Path, paths):
        folder = ProbeFolder(path)
        summary = folder.read_summary()
        if summary.probe != "aq27":
            raise CompareError(f"{path}: a {summary.probe} probe; probe compare compares AQ-27 probes")
        loaded.append((_label(summary, path), summary, AQ27Results.of(summary, folder.summary),
                       folder.read_illnesses()))
    if len(loaded) < 2:
        raise CompareError("give at least two AQ-27 probe folders to compare")
    for name in ("lang", "method", "name scoring"):  # a name scored whole is another measure
        values = {s.lang if name == "lang" else r.method if name == "method" else
                  s.options.get("name_scoring", "pll") for _, s, r, _ in loaded}
        if len(values) > 1:
            raise CompareError(f"the probes differ in {name} ({', '.join(sorted(map(str, values)))}): probe each "
                               "model with the same options to compare them")
    labels = [label for label, _, _, _ in loaded]
    if len(set(labels)) < len(labels):
        raise CompareError("two folders hold the same model's probe: give each model once")
    return loaded


def _column(dimension: str | None) -> str:
    return "mean_score" if dimension is None else f"mean_{dimension.lower()}"


def compare(paths: Sequence[str | Path], outdir: str | Path, *, n_boot: int = 2000, permutations: int = 9999,
            seed: int = 0, log: Callable[[str], None] = to_stderr) -> dict[str, Any]:
    """Compare the AQ-27 probes of ``paths`` into ``outdir``; return what ``compare.json`` holds."""
    from corpus_audit.probe.figures import write_compare_figure

    loaded = _load(paths)
    out = Path(check_output_location(outdir))
    method = loaded[0][2].method
    per_model = pd.DataFrame([{"model": label, "dimension": record.dimension,
                               "mean_difference": record.mean_difference, "ci_low": record.mean_difference_ci[0],
                               "ci_high": record.mean_difference_ci[1], "p": record.p,
                               "significant": record.significant, "flagged": record.flagged}
                              for label, _, results, _ in loaded
                              for record in (results.overall, *results.dimensions)])
    tests = []
    for (label_a, _, _, ill_a), (label_b, _, _, ill_b) in itertools.combinations(loaded, 2):
        shared = ill_a.merge(ill_b, on=["illness", "illness_type"], suffixes=("_a", "_b"))
        if len(shared) < len(ill_a) or len(shared) < len(ill_b):
            log(f"{label_a} vs {label_b}: {len(shared)} illnesses in both probes (of {len(ill_a)} and {len(ill_b)})")
        for dimension in (None, *DIMENSIONS):
            column = _column(dimension)
            if f"{column}_a" not in shared.columns:
                continue
            gap = shared[f"{column}_a"] - shared[f"{column}_b"]
            result = compare_units(gap[shared["illness_type"] == "mental"], gap[shared["illness_type"] == "physical"],
                                   permutations=permutations, n_boot=n_boot, seed=seed)
            tests.append({"model_a": label_a, "model_b": label_b, "dimension": dimension or "ALL",
                          "difference_of_gaps": result.mean_difference, "ci": result.mean_difference_ci,
                          "permutation_p": result.permutation_p, "n_mental": result.n_a, "n_physical": result.n_b,
                          "warnings": result.warnings})
    adjusted = holm([float("nan") if t["permutation_p"] is None else t["permutation_p"] for t in tests])
    for record, p in zip(tests, adjusted):
        record["p_holm"] = float(p)
        record["significant"] = bool(p < ALPHA)
    verdict = _verdict(tests, method)
    result = jsonable({"models": [{"label": label, "model_id": s.model_id, "lang": s.lang,
                                   "folder": str(Path(p))} for (label, s, _, _), p in zip(loaded, paths)],
                       "method": method, "per_model": per_model.to_dict(orient="records"), "tests": tests,
                       "verdict": verdict, "n_boot": n_boot, "permutations": permutations, "seed": seed})
    with folder_lock(out):
        with atomic_path(out / COMPARE_CSV) as tmp:
            per_model.to_csv(tmp, index=False)
        figure = write_compare_figure(out, COMPARE_FIGURE, per_model)
        write_text_atomic(out / COMPARE_JSON, json.dumps(result, indent=2, allow_nan=False))
        write_text_atomic(out / "report.html", _report(result, figure))
    return result


def _verdict(tests: list[dict[str, Any]], method: str) -> list[str]:
    found = [t for t in tests if t["significant"]]
    lines = [f"{t['model_a']} vs {t['model_b']}, {t['dimension']}: the mental - physical gaps differ by "
             f"{t['difference_of_gaps']:+.3f} [95% CI {t['ci'][0]:+.3f}, {t['ci'][1]:+.3f}], Holm p "
             f"{t['p_holm']:.3g}." for t in found]
    if not found:
        lines.append(f"No evidence that the models' mental - physical gaps differ ({len(tests)} tests, Holm-adjusted).")
    if method == "paper":
        lines.append("These probes used --method paper: raw PLLs depend on how each model's tokenizer splits the "
                     "names, so a difference between models may be one of tokenizers, not of stigma.")
    return lines


def _report(result: dict[str, Any], figure: Path) -> str:
    from corpus_audit.probe.report import figure as figure_html

    models = result["models"]
    per_model = [(r["model"], r["dimension"], num(r["mean_difference"]),
                  f"[{num(r['ci_low'])}, {num(r['ci_high'])}]", p_value(r["p"]),
                  "yes" if r["significant"] else "no", "random copies too" if r["flagged"] else "")
                 for r in result["per_model"]]
    tests = [(t["model_a"], t["model_b"], t["dimension"], num(t["difference_of_gaps"]),
              f"[{num(t['ci'][0])}, {num(t['ci'][1])}]", p_value(t["permutation_p"]), p_value(t["p_holm"]),
              "yes" if t["significant"] else "no") for t in result["tests"]]
    body = ["<h1>AQ-27 probes compared</h1>",
            '<div class="verdict">' + "".join(f"<p>{esc(line)}</p>" for line in result["verdict"]) + "</div>",
            "<p>Models: " + "; ".join(f"{esc(m['label'])} = {esc(m['folder'])}" for m in models)
            + f". Method: {esc(result['method'])}.</p>",
            figure_html(figure, COMPARE_CAPTION),
            "<h2>Each model: mental - physical</h2>",
            table(["model", "dimension", "difference", "95% CI", "p (corrected)", "significant", "null check"],
                  per_model, numeric_from=2),
            ("<h2>Between models: do the gaps differ?</h2>"
             "<p>Per illness, model A's score less model B's; mental vs physical illnesses compared on that "
             "difference (permutation test over illness labels, bootstrap CI over illnesses); Holm over every pair "
             "and dimension.</p>"),
            table(["model A", "model B", "dimension", "gap A - gap B", "95% CI", "permutation p", "p (Holm)",
                   "significant"], tests, numeric_from=3)]
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>AQ-27 probes compared</title>'
            f"<style>{BASE_STYLE}.verdict {{ background: #eef4fb; border-left: 4px solid #3b73b9; padding: 0.6rem "
            f"1rem; }}</style></head><body>{''.join(body)}</body></html>\n")

