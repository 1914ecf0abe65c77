"""A self-contained HTML report of a probe folder, in the audit report's style: figures embedded as base64 PNG, the
style inline, nothing fetched. It reads only the folder (``summary.json``, the figures and, once ``corpus-audit
link`` has run, ``link.json``); every text that comes from data (illness names, model names, paths) is escaped. The
page is the probe's header and section (:mod:`corpus_audit.probe.sections`, as its :class:`Probe` declares them),
its figures, the link's section, the probe's closing section and the configuration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.html import BASE_STYLE, embedded_png, esc, num, p_value, table
from corpus_audit.probe.folder import LINK_CAPTION, LINK_FIGURE, ProbeFolder, ProbeSummary
from corpus_audit.probe.sections import with_ci


class ReportSections(Protocol):
    """What the page needs of a probe (:class:`corpus_audit.probe.run.Probe` has it)."""

    title: str
    figures: dict[str, str]

    def header(self, summary: ProbeSummary) -> str: ...

    def section(self, summary: ProbeSummary) -> str: ...

    def closing_section(self, summary: ProbeSummary) -> str: ...

#: The shared base style, then the probe's own rule (the link's verdict box).
_STYLE = BASE_STYLE + """.verdict { background: #eef4fb; border-left: 4px solid #3b73b9; padding: 0.6rem 1rem; }
"""


def figure(path: Path, caption: str) -> str:
    """A figure embedded in the page, or a line saying it is missing (the report still renders without it)."""
    if not path.is_file():
        return f"<p><em>Figure missing: {esc(path.name)}</em></p>"
    return f"<figure>{embedded_png(path, caption)}<figcaption>{esc(caption)}</figcaption></figure>"


def link_section(link: dict[str, Any], folder: ProbeFolder) -> str:
    """The report section of ``corpus-audit link``: its verdict, tables and figure."""
    parts = ["<h2>How far the corpus explains the model</h2>",
             '<div class="verdict">' + "".join(f"<p>{esc(line)}</p>" for line in link["verdict"]) + "</div>"]
    expected = {1: "positive", -1: "negative", None: "either"}
    rows = [(c["audit"], c["measure"], ", ".join(c.get("covariates") or []) or "none", c["n"],
             with_ci(c["rho"], c["rho_ci"], 2), p_value(c["permutation_p"]), p_value(c.get("p_holm")),
             "yes" if c.get("evidence") else "no", expected.get(c.get("expected_direction"), "?"),
             "yes" if c.get("holds") else "no") for c in link["correlations"]]
    level = next((c["confidence"] for c in link["correlations"] if c.get("confidence")), 0.95)
    parts.append(table(["audit", "corpus measure vs model measure", "taken out", "n",
                        f"Spearman ρ [{100 * level:.1f}% CI]", "permutation p", "p (Holm)", "evidence",
                        "expected ρ", "link holds"], rows, numeric_from=3))
    parts.append(figure(folder.figure(LINK_FIGURE, "png"), LINK_CAPTION))
    dimension_rows = [(d["audit"], d["dimension"], num(d["corpus_difference"]), num(d.get("corpus_dim_difference")),
                       num(d["model_difference"], 2)) for d in link["dimensions"]]
    if dimension_rows:
        parts.append("<h3>Per dimension</h3>" + table(
            ["audit", "dimension", "corpus: BIAS-map share, mental - physical",
             "corpus: direct dimension score, mental - physical", "model: mean score, mental - physical"],
            dimension_rows, numeric_from=2))
    illness_rows = [(i["audit"], i["illness"], i["corpus_sentences"], num(i.get("corpus_warmth")),
                     num(i.get("corpus_competence")), num(i["model_score"])) for i in link.get("illnesses", [])]
    if illness_rows:
        parts.append("<h3>Per illness</h3>" + table(
            ["audit", "illness", "corpus: sentences", "corpus: mean warmth", "corpus: mean competence",
             f"model: {link.get('model_measure', 'mean score')}"], illness_rows, numeric_from=2))
    parts.append("<p>Audits: " + "; ".join(f"{esc(a['label'])} = {esc(a['path'])} ({esc(a['corpus'])}, "
                                          f"{a['sentences']} sentences)" for a in link["audits"]) + "</p>")
    return "".join(parts)


def _warnings(summary: ProbeSummary) -> list[str]:
    """The statistics' warnings (small groups, too few pairs) of any probe's results."""
    found: list[str] = []

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            found.extend(w for w in value.get("warnings", []) if isinstance(w, str))
            for key, inner in value.items():
                if key not in ("conditions", "diagnoses", "illnesses", "points"):
                    visit(inner)
        elif isinstance(value, list):
            for inner in value:
                visit(inner)

    visit(summary.results)
    return sorted(set(found))


def render_report(folder: ProbeFolder, summary: ProbeSummary, probe: ReportSections) -> str:
    """The page of ``folder``, whose summary is ``summary``, of the probe ``probe``."""
    body = [probe.header(summary)]
    warnings = _warnings(summary)
    if warnings:
        body.append('<div class="warnings"><h2>Warnings</h2><ul>'
                    + "".join(f"<li>{esc(w)}</li>" for w in warnings) + "</ul></div>")
    body.append(probe.section(summary))
    body += [figure(folder.figure(stem, "png"), caption) for stem, caption in probe.figures.items()]
    if folder.link.is_file():
        body.append(link_section(json.loads(folder.link.read_text(encoding="utf-8")), folder))
    body.append(probe.closing_section(summary))
    body.append("<h2>Configuration</h2><pre>" + esc(json.dumps(summary.options, indent=2)) + "</pre>")
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>'
            f"{esc(probe.title)}: {esc(summary.model_id)}</title>"
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_STYLE}</style>'
            f"</head><body>{''.join(body)}</body></html>\n")


def ensure_report(folder: ProbeFolder, probe: ReportSections) -> ProbeSummary:
    """The folder's summary, its ``report.html`` written first when missing (the report is a view)."""
    if not folder.report.is_file():
        write_report(folder, probe)
    return folder.read_summary()


def write_report(folder: ProbeFolder, probe: ReportSections) -> Path:
    """Write ``report.html`` (atomically) from the folder of a run of ``probe``; return its path."""
    summary = folder.read_summary()
    with atomic_path(folder.report) as tmp:
        tmp.write_text(render_report(folder, summary, probe), encoding="utf-8")
    return folder.report
