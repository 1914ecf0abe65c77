"""A self-contained HTML report of a probe folder, in the audit report's style: figures embedded as base64 PNG, the
style inline, nothing fetched. It reads only the folder (``summary.json``, the figures and, once ``corpus-audit
link`` has run, ``link.json``); every text that comes from data (illness names, model names, paths) is escaped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.html import BASE_STYLE, MISSING, embedded_png, esc, is_missing, num, p_value, table
from corpus_audit.probe.folder import FIGURES, LINK_CAPTION, LINK_FIGURE, ProbeFolder, ProbeSummary

#: The shared base style, then the probe's own rule (the link's verdict box).
_STYLE = BASE_STYLE + """.verdict { background: #eef4fb; border-left: 4px solid #3b73b9; padding: 0.6rem 1rem; }
"""


def with_ci(value: Any, ci: Sequence[Any] | None, digits: int = 3) -> str:
    """A value and its confidence interval; the value alone where the interval is missing (too few pairs)."""
    if is_missing(value):
        return MISSING
    if not ci or any(is_missing(v) for v in ci):
        return num(value, digits)
    return f"{num(value, digits)} [{num(ci[0], digits)}, {num(ci[1], digits)}]"


def figure(path: Path, caption: str) -> str:
    """A figure embedded in the page, or a line saying it is missing (the report still renders without it)."""
    if not path.is_file():
        return f"<p><em>Figure missing: {esc(path.name)}</em></p>"
    return f"<figure>{embedded_png(path, caption)}<figcaption>{esc(caption)}</figcaption></figure>"


def _header(summary: ProbeSummary) -> str:
    options = summary.options
    return (f"<h1>AQ-27 probe of {esc(summary.model_id)}</h1>"
            f'<p class="meta">Language {esc(summary.lang)} · PLL metric {esc(options.get("metric"))} · score: '
            f'{esc(options.get("scope"))} {esc(options.get("reduce"))} · trailing period '
            f'{"yes" if options.get("period") else "no"} · illnesses {esc(options.get("illnesses"))} · '
            f"corpus-audit {esc(summary.package_version)}</p>")


def _results(summary: ProbeSummary) -> str:
    results = summary.results
    counts = results.get("counts", {})
    overall = results["overall"]
    rows = [("ALL", overall["n_pairs"], num(overall["mean_a"], 2), num(overall["mean_b"], 2),
             with_ci(overall["mean_difference"], overall["mean_difference_ci"], 2),
             with_ci(overall["rank_biserial"], overall["rank_biserial_ci"]), p_value(overall["wilcoxon_p"]),
             overall["significance"], MISSING)]
    rows += [(f"{d['dimension']}{' (reversed)' if d['reverse_scored'] else ''}", d["n_pairs"], num(d["mean_a"], 2),
              num(d["mean_b"], 2), with_ci(d["mean_difference"], d["mean_difference_ci"], 2),
              with_ci(d["rank_biserial"], d["rank_biserial_ci"]), p_value(d["p_bonferroni"]), d["significance"],
              num(d["alpha"], 2)) for d in results["dimensions"]]
    lengths = counts.get("mean_tokens", {})
    direction = "higher" if (overall["mean_difference"] or 0) > 0 else "lower"
    return ("<h2>Mental vs physical illnesses (the seed paper's Table 2)</h2>"
            f"<p>{counts.get('prompts', MISSING)} prompts ({counts.get('distinct_sentences', MISSING)} distinct "
            f"sentences): {counts.get('items', MISSING)} items × {counts.get('noun_phrases', MISSING)} noun phrases × "
            f"{esc(counts.get('illnesses', {}).get('mental', MISSING))} mental and "
            f"{esc(counts.get('illnesses', {}).get('physical', MISSING))} physical illnesses. Overall the model "
            f"scores the prompts <strong>{direction}</strong> with a mental illness (Wilcoxon p "
            f"{p_value(overall['wilcoxon_p'])}, rank-biserial r {num(overall['rank_biserial'], 2)}).</p>"
            + table(["dimension", "pairs", "mean mental", "mean physical", "difference [95% CI]",
                     "rank-biserial r [95% CI]", "p (Bonferroni)", "", "Cronbach's α (mental)"], rows)
            + "<p>Pairs: one per item × noun phrase, each side the mean score over that group's illnesses. Wilcoxon "
              "signed-rank test, two-sided; dimension p-values Bonferroni-adjusted over the dimensions. r > 0: the "
              "mental side tends to score higher. Help and Avoidance items are worded positively (reverse-scored in "
              "the questionnaire): there a higher score with a mental illness means <em>less</em> stigma. α: "
              "internal consistency of the dimension's three items over noun phrase × mental illness.</p>"
            + (f"<p>Mean pieces scored per prompt: mental {num(lengths.get('mental'), 1)}, physical "
               f"{num(lengths.get('physical'), 1)}. A summed PLL falls with every piece, so a gap in length shifts "
               "every comparison the same way: check it with <code>--reduce mean</code> "
               "(docs/probe.md).</p>" if lengths else ""))


def _illnesses(summary: ProbeSummary) -> str:
    records = sorted(summary.results.get("illnesses", []),
                     key=lambda r: -math.inf if r["mean_score"] is None else -r["mean_score"])
    rows = [(r["illness"], r["illness_type"], r["n_prompts"], num(r["mean_score"], 2), num(r["sd_score"], 2))
            for r in records]
    return "<h2>Per illness</h2>" + table(["illness", "type", "prompts", "mean score", "SD"], rows, numeric_from=2)


def link_section(link: dict[str, Any], folder: ProbeFolder) -> str:
    """The report section of ``corpus-audit link``: its verdict, tables and figure."""
    parts = ["<h2>How far the corpus explains the model</h2>",
             '<div class="verdict">' + "".join(f"<p>{esc(line)}</p>" for line in link["verdict"]) + "</div>"]
    rows = [(c["audit"], c["measure"], c["n"], with_ci(c["rho"], c["rho_ci"], 2), p_value(c["permutation_p"]))
            for c in link["correlations"]]
    parts.append(table(["audit", "corpus measure vs model measure", "n", "Spearman ρ [95% CI]", "permutation p"],
                       rows, numeric_from=2))
    parts.append(figure(folder.figure(LINK_FIGURE, "png"), LINK_CAPTION))
    dimension_rows = [(d["audit"], d["dimension"], num(d["corpus_difference"]), num(d.get("corpus_dim_difference")),
                       num(d["model_difference"], 2)) for d in link["dimensions"]]
    parts.append("<h3>Per dimension</h3>" + table(
        ["audit", "dimension", "corpus: BIAS-map share, mental - physical",
         "corpus: direct dimension score, mental - physical", "model: mean score, mental - physical"],
        dimension_rows, numeric_from=2))
    parts.append("<p>Audits: " + "; ".join(f"{esc(a['label'])} = {esc(a['path'])} ({esc(a['corpus'])}, "
                                          f"{a['sentences']} sentences)" for a in link["audits"]) + "</p>")
    return "".join(parts)


def render_report(folder: ProbeFolder, summary: ProbeSummary) -> str:
    body = [_header(summary)]
    warnings = [w for record in [summary.results["overall"], *summary.results["dimensions"]]
                for w in record.get("warnings", [])]
    if warnings:
        body.append('<div class="warnings"><h2>Warnings</h2><ul>'
                    + "".join(f"<li>{esc(w)}</li>" for w in sorted(set(warnings))) + "</ul></div>")
    body.append(_results(summary))
    body += [figure(folder.figure(stem, "png"), caption) for stem, caption in FIGURES.items()]
    if folder.link.is_file():
        body.append(link_section(json.loads(folder.link.read_text(encoding="utf-8")), folder))
    body.append(_illnesses(summary))
    body.append("<h2>Configuration</h2><pre>" + esc(json.dumps(summary.options, indent=2)) + "</pre>")
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>AQ-27 probe: '
            f"{esc(summary.model_id)}</title>"
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_STYLE}</style>'
            f"</head><body>{''.join(body)}</body></html>\n")


def write_report(folder: ProbeFolder) -> Path:
    """Write ``report.html`` (atomically) from the probe folder; return its path."""
    summary = folder.read_summary()
    with atomic_path(folder.report) as tmp:
        tmp.write_text(render_report(folder, summary), encoding="utf-8")
    return folder.report
