"""A self-contained HTML report of an audit folder.

``write_report(folder)`` reads what ``corpus-audit audit`` wrote (``summary.json``, ``sentences.parquet``
and the PNG figures) and writes ``report.html``: one file with the figures embedded as base64 data URIs and
the style inline, so it can be mailed, archived or opened offline and never fetches anything. Nothing is
embedded again: the scores come from ``sentences.parquet`` and the statistics from ``summary.json``.

Every piece of text from the corpus or the configuration (sentences, document ids, illness names, paths)
goes through ``html.escape``: sentences come from arbitrary user corpora and may contain markup.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from corpus_audit.audit.folder import FIGURES, AuditFolder, AuditSummary
from corpus_audit.audit.results import AnalysisSummary, GroupResults, JudgementResults
from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.html import (BASE_STYLE, MISSING, embedded_png, esc, is_missing, num, p_value, percent,
                                     points, soft_wrap, table, with_ci)
from corpus_audit.common.resources import SHIPPED_AXES_DIR
from corpus_audit.stigma.judgement import CATEGORIES, CATEGORY_COLUMN, JUDGEMENT
from corpus_audit.stigma.quadrants import GROUPS, QUADRANTS, explode_illnesses, illness_list, quadrant_of
from corpus_audit.stigma.stats import MIN_GROUP_SIZE

SIDE_BY_SIDE = ("density", "quadrant_shares")
#: Measured validity of shipped axes (``corpus-audit axes evaluate``), one JSON file per model and recipe.
VALIDITY_DIR = SHIPPED_AXES_DIR
#: What each cross-validation test of ``corpus-audit axes evaluate`` checks (docs/axes.md).
VALIDITY_TESTS = {
    "basic": "'These people are always X.': the pole of a held-out adjective",
    "negation": "'These people are never X.': the pole must flip",
    "composition": "two adjectives, one per dimension: the quadrant must be right",
    "syntax": "phrasings absent from training ('These are X people.', ...)",
}
#: Centre of each quadrant of the [-1, 1]^2 score plane: the "typical" sentence of a quadrant lies near it.
QUADRANT_CENTRES = {"warm-competent": (0.5, 0.5), "warm-incompetent": (0.5, -0.5),
                    "cold-competent": (-0.5, 0.5), "cold-incompetent": (-0.5, -0.5)}
EXAMPLES_PER_QUADRANT = 3
TOP_ILLNESSES = 8
EXAMPLES_PER_ILLNESS = 2
#: Longer sentences are cut for display (the full text is in sentences.parquet): keeps the report readable.
MAX_SENTENCE_CHARS = 400
TOP_DOCUMENTS = 20
#: What the ranking's precision was when measured by hand (docs/stigma_score.md, "Now: stance, not intensity").
RANKING_VALIDITY = ("on the bundled mixed demo (English, default model: forum posts, news comments, tweets, clinical "
                    "cases; docs/stigma_score.md) all 20 of the documents ranked first stigmatise when read by hand "
                    "(slurs and illness words aimed at people), none supports; inside one corpus of comments the "
                    "ranking is weaker (AUC 0.77-0.85 on held-out sentences), and negated stigma is still "
                    "scored as stigma in about a third of the functional suite's cases (the validity section gives "
                    "the share for each function).")

#: The shared base style, then the rules of the audit's own elements (example lists, document ids, two columns).
_STYLE = BASE_STYLE + """ul.examples { padding-left: 1.2rem; } ul.examples li { margin: 0.3rem 0; }
.doc { color: #666; font-size: 0.8rem; font-family: ui-monospace, monospace; }
.score { color: #666; font-size: 0.8rem; white-space: nowrap; }
.grid { display: grid; grid-template-columns: 1fr 1fr; gap: 0 1.5rem; }
.fit table { width: 100%; } .fit td { overflow-wrap: break-word; }
"""


def load_audit(folder: AuditFolder, strict: bool = False,
               log: Callable[[str], None] | None = None) -> tuple[pd.DataFrame, AuditSummary]:
    """The scored sentence table and the summary of an audit folder; ``AuditOutputError`` if either is missing or
    unreadable (bad rows of sentences.parquet: see :meth:`AuditFolder.read_sentences`)."""
    return folder.read_sentences(strict, log), folder.read_summary(complete=True)


def _axes_metadata(summary: AuditSummary) -> dict[str, Any] | None:
    """Metadata of the axes the audit used: the ``--axes`` file, else the shipped/cached default for the model."""
    from corpus_audit.scm.recipes import DEFAULT_RECIPE
    from corpus_audit.scm.store import find_axes, read_metadata

    if summary.axes_path:
        path = Path(summary.axes_path)
        return read_metadata(path) if path.is_file() else None
    model_id = summary.model_id
    found = find_axes(model_id, summary.lang, DEFAULT_RECIPE) if model_id else None
    return read_metadata(found) if found else None


def measured_validity(embedder_id: str | None, lang: str, recipe: str | None) -> dict[str, Any] | None:
    """The shipped cross-validation means for this model, language and recipe, or None if never measured. A record
    measured on one backend holds for every backend with the same embeddings (sentence-transformers and its ONNX
    export: :func:`~corpus_audit.embed.base.same_embeddings`), as the shipped axes do; for the int8 backend it is
    the record of its fp32 weights, whose ``int8`` entry (scm/quantised.py) measured the scores in int8."""
    from corpus_audit.embed.base import axes_apply

    if embedder_id is None:
        return None
    for path in sorted(VALIDITY_DIR.glob("*.validity.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if (axes_apply(str(record.get("embedder_id")), embedder_id)
                and (record.get("lang"), record.get("recipe")) == (lang, recipe)):
            return record
    return None


def estimate(n: int, value: Any, low: Any, high: Any, fmt: Callable[[Any], str] = num) -> str:
    """A value with its 95% CI, or "too few (n = k)" for a group under ``MIN_GROUP_SIZE``: with 2 sentences a
    bootstrap interval is [100%, 100%], which looks certain and says nothing."""
    return f"too few (n = {n})" if n < MIN_GROUP_SIZE else with_ci(value, low, high, fmt)


def _sentence_item(row: pd.Series) -> str:
    text = str(row["sentence"])
    if len(text) > MAX_SENTENCE_CHARS:
        text = text[:MAX_SENTENCE_CHARS].rstrip() + " …"
    illnesses = ", ".join(map(str, illness_list(row.get("illnesses"))))
    return (f'<li>{esc(text)} <span class="doc">[{esc(row["doc_id"])}; {esc(illnesses)}]</span> '
            f'<span class="score">warmth {row["warmth"]:+.2f}, competence {row["competence"]:+.2f}</span></li>')


def _examples(frame: pd.DataFrame) -> str:
    if frame.empty:
        return '<p class="meta">no sentences</p>'
    return f'<ul class="examples">{"".join(_sentence_item(row) for _, row in frame.iterrows())}</ul>'


# --------------------------------------------------------------------------------------------- sections


def _header(summary: AuditSummary) -> str:
    model_id = summary.model_id or "unknown model"
    return (f"<h1>Corpus audit: health-related stigma</h1>"
            f'<p class="meta">Corpus: <b>{esc(summary.corpus_name)}</b><br>Model: <b>{esc(model_id)}</b> · '
            f'corpus-audit {esc(summary.package_version)}</p>')


def _warnings(summary: AuditSummary) -> str:
    # the reading's warnings (language, repaired records) first: they say whether the rest can be read at all
    warnings = [*(summary.filter.get("warnings") or []), *(summary.analysis.warnings if summary.analysis else [])]
    if not warnings:
        return '<p class="ok">No warnings: every group has enough sentences for the tests.</p>'
    items = "".join(f"<li>{esc(w)}</li>" for w in warnings)
    return f'<section class="warnings" id="warnings"><h2>Warnings</h2><ul>{items}</ul></section>'


def _counts(summary: AuditSummary) -> str:
    filtered, score, analysis = summary.filter, summary.score, summary.analysis
    kept = filtered.get("sentences_by_type", {})
    scored = analysis.n_by_type if analysis else {}
    rows = [("documents read", filtered.get("documents_read", MISSING)),
            ("documents with an illness mention", filtered.get("documents_matched", MISSING)),
            ("sentences kept", filtered.get("sentences_kept", MISSING)),
            *((f"sentences kept: {kind}", kept.get(kind, 0)) for kind in ("mental", "physical", "both")),
            ("duplicate sentences removed", score.duplicates_removed),
            ("distinct sentences scored", score.sentences_scored),
            *((f"scored and analysed: {kind}", scored.get(kind, 0)) for kind in ("mental", "physical", "both")),
            ("left out (no finite score)", analysis.n_unscored if analysis else 0)]
    cascade = score.cascade
    if cascade is None:
        return "<h2>Counts</h2>" + table(("", "count"), rows)
    rows[rows.index(("distinct sentences scored", score.sentences_scored)) + 1:1] = [
        ("scored by the encoder", cascade.encoded),
        ("scored by the encoder: in the triage band", cascade.band),
        ("scored by the encoder: in the random sample (some also in the band), which the rank tests read",
         cascade.sample),
        ("scored by the triage only", cascade.triage_only)]
    return ("<h2>Counts</h2>" + table(("", "count"), rows)
            + f"<p><b>Cascade.</b> {esc(cascade.describe())} A document's "
              "score is its most stigmatising sentence's, by the encoder where it read the sentence; "
              "<code>--cascade off</code> reads every sentence with the encoder.</p>")


def _forms(summary: AuditSummary) -> str:
    """How the kept sentences name illness: the term set, and mentions per form and type (the share of slang is
    itself a finding)."""
    by_form = summary.filter.get("mentions_by_form") or {}
    total = sum(sum(counts.values()) for counts in by_form.values())
    rows = [(form, counts.get("mental", 0), counts.get("physical", 0), percent(sum(counts.values()) / total))
            for form, counts in by_form.items()] if total else []
    return (f"<h2>Mention forms</h2><p>Term set: <b>{esc(summary.filter.get('terms', 'paper'))}</b> (paper: the seed "
            "paper's illness names; extended: also generic terms, person nouns, adjectives, slang and treatment "
            "words; lexicons/README.md).</p>" + (table(("form", "mental", "physical", "share of mentions"), rows)
                                                 if rows else ""))


def _figure(folder: AuditFolder, stem: str) -> str:
    caption = FIGURES[stem]
    png = folder.figure(stem, "png")
    if png.is_file():
        body = embedded_png(png, caption)
    else:
        body = f'<p class="warnings">{esc(stem)}.png is missing: run corpus-audit plot</p>'
    return f'<figure id="fig-{stem}">{body}<figcaption>{esc(caption)}</figcaption></figure>'


def _figures(folder: AuditFolder) -> str:
    # The single-panel figures go side by side and the multi-panel ones full width: a shorter page.
    pair = "".join(_figure(folder, stem) for stem in SIDE_BY_SIDE)
    wide = "".join(_figure(folder, stem) for stem in FIGURES if stem not in SIDE_BY_SIDE)
    return f'<h2>Figures</h2><div class="grid">{pair}</div>{wide}'


def _comparisons(analysis: GroupResults, title: str = "Mental vs physical") -> str:
    rows = []
    for score, c in analysis.comparisons.items():
        low, high = c.mean_difference_ci
        rows.append((score, c.n_a, c.n_b, num(c.mean_a), num(c.mean_b),
                     estimate(min(c.n_a, c.n_b), c.mean_difference, low, high),
                     p_value(c.mann_whitney_p), num(c.rank_biserial),
                     f"{num(c.ks_statistic)} (p {p_value(c.ks_p)})"))
    results = table(("score", "n mental", "n physical", "mean mental", "mean physical",
                     "difference (mental − physical) [95% CI]", "Mann–Whitney p", "rank-biserial r", "KS D (p)"), rows)
    joint = analysis.joint
    energy = table(("test", "n mental (used)", "n physical (used)", "energy statistic", "p", "permutations"),
                   [("warmth and competence jointly", f"{joint.n_a} ({joint.n_used_a})",
                     f"{joint.n_b} ({joint.n_used_b})", num(joint.statistic, 4), p_value(joint.p_value),
                     joint.permutations)])
    return (f"<h2>{esc(title)}</h2>"
            "<p>Sentences mentioning both a mental and a physical illness count in both groups. Rank-biserial r "
            "is positive when mental sentences tend to score lower. The CI is a percentile bootstrap.</p>"
            f"{results}<h3>2-D energy test</h3><p>Permutation test of equal (warmth, competence) distributions "
            f"(groups larger than the cap are subsampled).</p>{energy}")


def _shares_table(records: list[dict[str, Any]], first: str) -> str:
    rows = [(r["group"], r["n"], *(percent(r[q]) for q in QUADRANTS)) for r in records]
    classes = ["small" if r.get("warning") else "" for r in records]
    return table((first, "n", *QUADRANTS), rows, row_classes=classes)


def _quadrants(analysis: GroupResults, title: str = "Quadrant shares") -> str:
    return (f"<h2>{esc(title)}</h2><h3>Per illness type</h3>"
            f"{_shares_table(analysis.quadrants_by_type, 'type')}"
            f"<h3>Per illness</h3><p>Rows in amber have fewer than {MIN_GROUP_SIZE} sentences.</p>"
            f"{_shares_table(analysis.quadrants_by_illness, 'illness')}")


def _region(warmth: str, competence: str | None) -> str:
    side = "cold" if warmth == "low" else "warm"
    return side if competence is None else f"{side} & {'competent' if competence == 'high' else 'incompetent'}"


def _aq27(analysis: GroupResults, title: str = "AQ-27 dimensions (BIAS map)") -> str:
    rows, classes, regions = [], [], {}
    # Dimensions tied to the same region have the same share by construction: keep them together and say so.
    records = sorted(analysis.bias_map, key=lambda r: (r["warmth"], r["competence"]))
    for r in records:
        strict = r["competence"].removeprefix("any_or_") if r["competence"].startswith("any_or_") else None
        lenient = r["competence"] if r["competence"] in ("low", "high") else None
        regions.setdefault(_region(r["warmth"], lenient), []).append(r["dimension"])
        for prefix, competence, css in (("", lenient, ""), ("strict_", strict, "strict")):
            if prefix and strict is None:
                continue
            label = r["dimension"] if not prefix else f"{r['dimension']} (strict region)"
            rows.append((label, _region(r["warmth"], competence),
                         estimate(r["n_mental"], r[f"{prefix}share_mental"], r[f"{prefix}share_mental_ci_low"],
                                  r[f"{prefix}share_mental_ci_high"], percent),
                         estimate(r["n_physical"], r[f"{prefix}share_physical"],
                                  r[f"{prefix}share_physical_ci_low"],
                                  r[f"{prefix}share_physical_ci_high"], percent),
                         estimate(min(r["n_mental"], r["n_physical"]), r[f"{prefix}difference"],
                                  r[f"{prefix}difference_ci_low"],
                                  r[f"{prefix}difference_ci_high"], points),
                         p_value(r[f"{prefix}p_value"]), p_value(r[f"{prefix}p_holm"])))
            classes.append(css)
    results = table(("AQ-27 dimension", "BIAS-map region", "mental share [95% CI]", "physical share [95% CI]",
                     "difference [95% CI]", "Fisher p", "Holm p"), rows, numeric_from=2, row_classes=classes)
    shared = [f"{', '.join(names)} ({region})" for region, names in regions.items() if len(names) > 1]
    note = (f"<p><b>Rows that share a region are one number, not several findings:</b> {esc('; '.join(shared))}. "
            "The BIAS map ties several dimensions to the same part of the plane, so only the dimension scores "
            "read directly ('AQ-27 dimensions read directly') tell them apart.</p>" if shared else "")
    return (f"<h2>{esc(title)}</h2><p>Share of each group's sentences in the region of the "
            "warmth/competence plane that the BIAS map links to the dimension (the seed paper's method). "
            "Dimensions whose competence is 'any, or low/high' are scored on the lenient region and shown again on "
            "the strict one (italics); Holm corrects over the dimensions of each kind of region.</p>" + note + results)


def _categories(analysis: AnalysisSummary) -> str:
    judgement = analysis.judgement
    if not judgement:
        return ("<h2>What the sentences do</h2><p><b>The axes of this audit have no judgement gate</b> (recipe "
                "'reference' or an older axes file): every sentence that mentions an illness is analysed as if it "
                "judged people, so clinical descriptions, questions and self-reports weigh as much as judgements. "
                "Audit with the default axes to separate them.</p>")
    # "sentences": the kept sentences the rows stand for (after a cascade more than the rows the encoder read)
    rows = [(r["group"], r.get("sentences", r["n"]), *(percent(r[category]) for category in CATEGORIES))
            for r in judgement.categories]
    return ("<h2>What the sentences do</h2><p>Each sentence is sorted by the judgement gate: a judgement about "
            "people (a group, or a person because of their illness), or a mention that judges no one "
            "(self-disclosure, clinical description, question, figurative use, information). Stigma can only sit in "
            "judgements: the statistics below are computed over them, with the figures over all sentences after "
            "them.</p>" + table(("group", "sentences", *CATEGORIES), rows))


def _dimensions(judgement: JudgementResults) -> str:
    rows = [(r["dimension"], r["n_mental"], r["n_physical"], num(r["mean_mental"]), num(r["mean_physical"]),
             estimate(min(r["n_mental"], r["n_physical"]), r["difference"], r["difference_ci_low"],
                      r["difference_ci_high"]), p_value(r["p_value"]),
             p_value(r["p_holm"]), percent(r["top_share_mental"]), percent(r["top_share_physical"]))
            for r in judgement.dimensions]
    return ("<h3>AQ-27 dimensions read directly</h3><p>Each judgement's score on every dimension, in [−1, 1]: "
            "+1 when it endorses the dimension's attitude ('they should be locked away': segregation), −1 when "
            "it rejects it ('they belong in the community'), 0 when it says nothing of it. Means per group, the "
            "difference with a bootstrap CI, Mann–Whitney p (Holm over the nine), and the share of each group's "
            "judgements whose strongest dimension it is.</p>"
            + table(("dimension", "n mental", "n physical", "mean mental", "mean physical",
                     "difference (mental − physical) [95% CI]", "Mann–Whitney p", "Holm p", "top dimension: mental",
                     "top dimension: physical"), rows))


def _judgements(analysis: AnalysisSummary) -> str:
    judgement = analysis.judgement
    if not judgement:
        return ""
    part = judgement.judgements
    return (_comparisons(part, "Judgements about people: mental vs physical") + _dimensions(judgement)
            + _quadrants(part, "Judgements: quadrant shares")
            + _aq27(part, "Judgements: AQ-27 dimensions through the BIAS map"))


def _scored_points(sentences: pd.DataFrame) -> pd.DataFrame:
    """Rows with finite scores, with their quadrant (recomputed: the rule is analysis's, not the stored column's)."""
    finite = np.isfinite(sentences["warmth"].astype(float)) & np.isfinite(sentences["competence"].astype(float))
    scored = sentences[finite]
    return scored.assign(quadrant=quadrant_of(scored["warmth"].to_numpy(float), scored["competence"].to_numpy(float)))


def quadrant_examples(sentences: pd.DataFrame, group: str, quadrant: str,
                      k: int = EXAMPLES_PER_QUADRANT) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``k`` sentences of ``group`` nearest the quadrant's centre, and the ``k`` farthest from the origin.

    "both" sentences belong to each group (as in the analysis). The extreme ones exclude the central ones, so
    a small quadrant shows each sentence once.
    """
    points = _scored_points(sentences)
    part = points[points["illness_type"].isin([group, "both"]) & (points["quadrant"] == quadrant)]
    warmth, competence = part["warmth"].to_numpy(float), part["competence"].to_numpy(float)
    cx, cy = QUADRANT_CENTRES[quadrant]
    central = part.iloc[np.argsort(np.hypot(warmth - cx, competence - cy), kind="stable")[:k]]
    rest = part.drop(index=central.index)
    extreme = rest.iloc[np.argsort(-np.hypot(rest["warmth"].to_numpy(float), rest["competence"].to_numpy(float)),
                                   kind="stable")[:k]]
    return central, extreme


def illness_examples(sentences: pd.DataFrame, top: int = TOP_ILLNESSES,
                     k: int = EXAMPLES_PER_ILLNESS) -> list[tuple[str, int, pd.DataFrame]]:
    """For the ``top`` most frequent illnesses: (illness, n, the ``k`` sentences nearest its mean score point)."""
    points = _scored_points(sentences)
    exploded = explode_illnesses(points)
    out = []
    for illness, n in exploded["illness"].value_counts().head(top).items():
        part = exploded[exploded["illness"] == illness]
        warmth, competence = part["warmth"].to_numpy(float), part["competence"].to_numpy(float)
        distance = np.hypot(warmth - warmth.mean(), competence - competence.mean())
        out.append((str(illness), int(n), part.iloc[np.argsort(distance, kind="stable")[:k]]))
    return out


def _examples_section(sentences: pd.DataFrame, judgements: bool = False) -> str:
    which = "judgements about people" if judgements else "sentences"
    parts = [f"<h2>Example {which}</h2><p>Per quadrant and group: the {which} nearest the quadrant's centre "
             "(±0.5, ±0.5), i.e. typical of it, then the most extreme (farthest from the origin). Document ids in "
             "brackets.</p>"]
    for quadrant in QUADRANTS:
        columns = []
        for group in GROUPS:
            central, extreme = quadrant_examples(sentences, group, quadrant)
            columns.append(f"<div><h4>{esc(group)}: typical</h4>{_examples(central)}"
                           f"<h4>{esc(group)}: most extreme</h4>{_examples(extreme)}</div>")
        parts.append(f'<h3>{esc(quadrant)}</h3><div class="grid">{"".join(columns)}</div>')
    parts.append("<h3>Per illness</h3><p>The most frequent illnesses, each with the sentences nearest its mean "
                 "(warmth, competence).</p>")
    for illness, n, frame in illness_examples(sentences):
        parts.append(f"<h4>{esc(illness)} ({n} sentences)</h4>{_examples(frame)}")
    return "".join(parts)


def _method(summary: AuditSummary) -> str:
    metadata = _axes_metadata(summary)
    recipe = (metadata or {}).get("recipe", {})
    validity = measured_validity(summary.model_id, summary.lang, recipe.get("name"))
    if metadata:
        axes = (f"Axes file: recipe <b>{esc(recipe.get('name', '?'))}</b>, head {esc(recipe.get('head', '?'))}, "
                f"templates '{esc(recipe.get('templates', '?'))}', "
                f"{esc(metadata.get('n_training_sentences', '?'))} training sentences, trained on "
                f"{esc(metadata.get('embedder_id', '?'))}.")
    else:
        axes = "The axes file of this audit was not found, so its recipe is not shown."
    if validity:
        rows = [(test, VALIDITY_TESTS.get(test, ""), f"{mean:.1f}%")
                for test, mean in validity["cross_validation_mean"].items()]
        accuracy = (f"<p>Measured functional accuracy of these axes ({esc(validity['source'])}; chance is 50% for "
                    f"basic, negation and syntax, 25% for composition):</p>"
                    + table(("test", "what it checks", "accuracy"), rows, numeric_from=2))
        from corpus_audit.scm.refit import REFIT_KEY

        refit = (metadata or {}).get(REFIT_KEY)
        stigma_record = _run_precision(summary.model_id, validity)
        accuracy += _judgement_validity(validity) + (_stigma_refit(refit) if refit
                                                     else _precision_note(summary.model_id, validity)
                                                     + _stigma_validity(stigma_record.get("stigma"))
                                                     + _suite_validity(stigma_record.get("suite")))
    else:
        accuracy = (f"<p><b>No validity was measured for this model ({esc(summary.model_id or 'unknown')}, "
                    f"{esc(summary.lang)}, recipe {esc(recipe.get('name', '?'))})</b>: the tool ships measurements "
                    "for its default models only. Until you run <code>corpus-audit axes evaluate --lang "
                    f"{esc(summary.lang)} --model M --labelled tests/data/labelled_{esc(summary.lang)}.csv</code> "
                    "for it, nobody knows how well its scores track warmth, competence and judgement: read them "
                    "as unchecked.</p>")
    return ("<h2>Method and validity</h2>"
            "<p>Each sentence is embedded and projected onto the two axes of the Stereotype Content Model (SCM): "
            "<i>warmth</i> (friendly, trustworthy vs cold, hostile) and <i>competence</i> (capable vs incapable). "
            "The axes are trained on sentences that put the SCM seed lexicon's adjectives into templates "
            "('These people are always X.', negated and two-adjective variants), labelled by the adjective's "
            "pole, and on written neutral sentences (clinical facts, questions, self-reports) as a third class, so "
            "that text which judges no one scores near 0 and a score grows with how clearly a sentence places "
            "people high or low; each dimension's score is p(high) − p(low), in [−1, 1]. A score ≥ 0 is high, "
            "so each sentence falls in one quadrant. The judgement gate sorts sentences into judgements about "
            "people and neutral mentions, and nine dimension heads read the AQ-27 dimensions directly; both are "
            "trained on sentences written for this project (templates/&lt;lang&gt;/neutral.csv and "
            "judgements.csv). The stigma score, which ranks the documents, is the probability that a sentence "
            "stigmatises people with the illness (supportive, counter-stereotypical and anti-stigma text near 0), "
            "learnt from real sentences labelled by this project and written hard cases "
            "(templates/&lt;lang&gt;/stigma_labelled.csv). The seed paper's route, AQ-27 dimensions through the BIAS map (Cuddy et al.), ties "
            f"each dimension to a region of the plane.</p><p>{axes}</p>{accuracy}"
            "<p>The scores say where the embedding model places a sentence, which is a proxy for stigma, not a "
            "human judgement; read the example sentences before the numbers.</p>")


def _ran_int8(model_id: str | None) -> bool:
    from corpus_audit.embed.base import ONNX_INT8_BACKEND

    return str(model_id).startswith(f"{ONNX_INT8_BACKEND}:")


def _run_precision(model_id: str | None, validity: dict[str, Any]) -> dict[str, Any]:
    """The part of ``validity`` measured with the encoder as this audit ran it: its ``int8`` entry for an audit run
    with int8 weights (empty where it has none), else the record itself."""
    from corpus_audit.scm.quantised import INT8_KEY

    return (validity.get(INT8_KEY) or {}) if _ran_int8(model_id) else validity


def _precision_note(model_id: str | None, validity: dict[str, Any]) -> str:
    """For an audit run with int8 weights: what that did to the scores, measured against fp32."""
    from corpus_audit.scm.quantised import INT8_KEY

    if not _ran_int8(model_id):
        return ""
    measured = validity.get(INT8_KEY)
    if not measured:
        return ("<p><b>This audit ran the encoder with int8 weights</b> (<code>--backend onnx-int8</code>), and what "
                "that does to these axes was never measured: the numbers below are missing; run without it.</p>")
    agreement = measured["agreement"]
    return (f"<p><b>This audit ran the encoder with int8 weights</b> (<code>--backend onnx-int8</code>). The axes "
            "are those trained on its fp32 embeddings; the functional accuracy and the judgement checks above were "
            "measured in fp32, the stigma measures below in int8. On the "
            f"{agreement['n']} held-out real sentences, against fp32: the stigma score moved by "
            f"{agreement['mean_abs_difference']['stigma']:.3f} on average, the flag (stigma ≥ 0.5) changed for "
            f"{percent(agreement['stigma_flag_changed'])} of them, warmth moved by "
            f"{agreement['mean_abs_difference']['warmth']:.3f} and competence by "
            f"{agreement['mean_abs_difference']['competence']:.3f} on average, and "
            f"{percent(agreement['same_quadrant'])} kept their quadrant (most sentences sit near the centre, where a "
            "small move changes the quadrant).</p>")


def _stigma_refit(refit: dict[str, Any]) -> str:
    """What `corpus-audit axes refit` measured for axes whose stigma head it refitted on a user's reviews."""
    rows = []
    cv = refit.get("cross_validation")
    if cv:
        low, high = cv["auc_difference"]["low"], cv["auc_difference"]["high"]
        rows += [(f"ROC AUC on the {cv['n']} reviewed sentences held out ({cv['folds']}-fold cross-validation over "
                  f"{cv['n_documents']} documents; {cv['n_stigmatising']} stigmatising): refitted; original",
                  f"{num(cv['refitted']['auc'])}; {num(cv['original']['auc'])}"),
                 ("difference, refitted − original (95% CI, documents resampled)",
                  f"{cv['auc_difference']['value']:+.3f} ({low:+.3f} to {high:+.3f})")]
    heldout = refit.get("labelled_heldout")
    if heldout:
        rows.append((f"ROC AUC on the {heldout['original']['n']} held-out sentences of the labelled data: refitted; "
                     "original", f"{num(heldout['refitted']['auc'])}; {num(heldout['original']['auc'])}"))
    return (f"<p><b>The stigma score of these axes was refitted</b> (<code>corpus-audit axes refit</code>) from "
            f"{esc(refit.get('base_axes', '?'))} on {refit.get('n_labelled', '?')} labelled sentences and "
            f"{refit.get('n_reviewed', '?')} reviewed ones "
            f"({esc(', '.join(source['file'] for source in refit.get('reviewed') or []) or 'their files')}), each "
            f"counting {refit.get('weight', '?')} times:</p>" + table(("measure", "value"), rows))


def _stigma_validity(measured: dict[str, Any] | None) -> str:
    """The stigma score's measured validity on held-out real sentences (scm/stigma.py), or a warning."""
    if not measured:
        return ("<p><b>Stigma score: not measured on held-out real sentences</b> for these axes; do not rank "
                "documents by it before `corpus-audit axes evaluate` has measured it.</p>")
    low, high = measured["auc_ci95"]
    rows = [("ROC AUC, stigmatising vs the rest (95% CI, documents resampled)",
             f"{num(measured['auc'])} ({num(low)}–{num(high)})"),
            *((f"precision of the top {k}", percent(value)) for k, value in measured["precision_at"].items()),
            ("share stigmatising (base rate)", percent(measured["base_rate"])),
            *((f"ROC AUC, mention form '{form}' ({value['n_stigmatising']} stigmatising, {value['n_other']} other)",
               num(value["auc"])) for form, value in measured["forms"].items() if value["auc"] is not None),
            *((f"ROC AUC within the corpus '{corpus}' ({value['n_stigmatising']} stigmatising, {value['n_other']} "
               "other)", num(value["auc"])) for corpus, value in measured.get("corpora", {}).items()
              if value["auc"] is not None)]
    documents = measured.get("documents")
    if documents:
        rows += [(f"documents ranked by their most stigmatising sentence ({documents['n_documents']}, "
                  f"{documents['n_stigmatising']} stigmatising): ROC AUC", num(documents["auc"])),
                 (f"a supportive document ranked above a stigmatising one on the same illness type "
                  f"({documents['n_pairs']} pairs)", percent(documents["supportive_above_stigmatising"]))]
    gate = measured.get("gate")
    if gate:
        gate_low, gate_high = gate["judgement_auc_ci95"]
        rows += [(f"judgement gate on the same sentences: ROC AUC of the judgement strength, judgements about people "
                  f"({gate['n_judgements']}) vs the rest (95% CI)",
                  f"{num(gate['judgement_auc'])} ({num(gate_low)}–{num(gate_high)})"),
                 ("judgement gate: category accuracy (six categories); macro-F1",
                  f"{percent(gate['category_accuracy'])}; {num(gate['category_macro_f1'])}")]
    return (f"<p>Stigma score (the probability that a sentence stigmatises people with the illness; documents are "
            f"ranked by it) on {measured['n']} held-out real sentences labelled with docs/labelling.md "
            f"({measured['n_stigmatising']} stigmatising), never used for training or selection:</p>"
            + table(("measure", "value"), rows))


def _suite_validity(measured: dict[str, Any] | None) -> str:
    """The stigma score on the functional suite's test cases (scm/suite.py), per function."""
    if not measured:
        return ""
    low, high = measured["auc_ci95"]
    rows = [(function.replace("_", " "), "stigmatising" if result["kind"] == "stigmatising" else "hard negative",
             result["n"], num(result["mean_score"], 2), percent(result["share_flagged"]),
             "yes" if result["meets_target"] else "no") for function, result in measured["functions"].items()]
    return (f"<p>Stigma score on the functional suite for health stigma ({measured['n']} test cases written and "
            "labelled by this project, split from the training cases by template, never trained on or used for "
            f"selection): ROC AUC stigmatising vs hard negatives {num(measured['auc'])} ({num(low)}–{num(high)}, "
            f"templates resampled). A stigmatising function should score at least {measured['threshold']:.1f} on "
            f"{percent(measured['recall_target'])} of its cases, a hard negative on at most "
            f"{percent(measured['flag_target'])}:</p>"
            + table(("function", "kind", "cases", "mean score", "at or above 0.5", "meets the target"), rows,
                    numeric_from=2))


def _judgement_validity(validity: dict[str, Any]) -> str:
    """The judgement gate's and the dimension heads' measured validity, on written and on real sentences."""
    parts = []
    measured = validity.get("judgement")
    if measured:
        rows = [("neutral sentences: mean distance from the centre", num(measured["neutral_distance"], 2)),
                ("judgements: mean distance from the centre", num(measured["judgement_distance"], 2)),
                ("judgement gate: ROC AUC, judgements vs neutral", num(measured["gate_auc"])),
                ("graded: rank correlation of written strength (1-3) and score", num(measured["strength_spearman"], 2)),
                ("AQ-27 dimensions: mean ROC AUC, endorsing sentences vs the rest",
                 num(measured["mean_dimension_auc"])),
                ("top dimension right", percent(measured["top_dimension_accuracy"]))]
        parts.append(f"<p>Held-out written sentences ({measured['n_judgements']} judgements, "
                     f"{measured['n_neutral']} neutral mentions; cross-validated):</p>"
                     + table(("measure", "value"), rows))
    for result in validity.get("labelled") or []:
        rows = [("judgement gate: ROC AUC, judgements vs the rest", num(result["gate_auc"])),
                ("sign of warmth/competence right on judgements", percent(result["sign_accuracy"])),
                ("non-judgements: mean distance from the centre", num(result["neutral_distance"], 2)),
                ("judgements: mean distance from the centre", num(result["judgement_distance"], 2)),
                ("category right", percent(result["category_accuracy"]))]
        parts.append(f"<p>Hand-labelled real sentences ({esc(result['file'])}: {result['n']} sentences, "
                     f"{result['n_judgements']} judgements):</p>" + table(("measure", "value"), rows))
    return "".join(parts)


def _configuration(summary: AuditSummary) -> str:
    rows = [(key, "default" if value is None else json.dumps(value) if isinstance(value, (list, dict)) else value)
            for key, value in summary.options.items()]
    return "<h2>Configuration</h2>" + table(("option", "value"), rows, numeric_from=2)


def _verdict(summary: AuditSummary, documents: pd.DataFrame | None) -> str:
    from corpus_audit.audit.verdict import verdict

    lines = verdict(summary.analysis, None if documents is None else len(documents))
    return (f'<section id="verdict"><h2>Verdict</h2><p class="answer"><b>{esc(lines[0])}</b></p><p>'
            + " ".join(esc(line) for line in lines[1:]) + "</p></section>")


def _documents(documents: pd.DataFrame | None, shown: int = TOP_DOCUMENTS) -> str:
    if documents is None:
        return ""
    from corpus_audit.audit.documents import DOCUMENT_COLUMNS, STIGMA_SCORE

    keep_fields = [column for column in documents.columns if column not in DOCUMENT_COLUMNS
                   and not column.startswith("dim_")]
    rows = []
    for row in documents.head(shown).to_dict(orient="records"):
        sentence = str(row["top_sentence"])
        if len(sentence) > MAX_SENTENCE_CHARS:
            sentence = sentence[:MAX_SENTENCE_CHARS].rstrip() + " …"
        rows.append((row["rank"], soft_wrap(str(row["doc_id"])),
                     *(MISSING if is_missing(row[field]) else soft_wrap(str(row[field])) for field in keep_fields),
                     num(row[STIGMA_SCORE], 2), *(MISSING if is_missing(row[field]) or not row[field]
                                                  else str(row[field]).replace("_", " ")
                                                  for field in ("top_category", "top_dimension")),
                     f'{row["n_judgements"]} / {row["n_sentences"]}', soft_wrap(str(row["illnesses"])),
                     soft_wrap(sentence)))
    return ("<h2>Documents to review, most stigmatising first</h2>"
            f"<p>The {min(shown, len(documents))} highest-ranked of {len(documents)} documents with an illness mention. "
            "A document's score is the stigma score of its most stigmatising sentence (shown): the instrument's "
            "probability that it stigmatises people with the illness. `corpus-audit documents OUTDIR` lists them all (with --dimension, "
            "--illness, -o ids.txt); `corpus-audit clean` removes the chosen ones from the corpus. How far to trust "
            f"the order: {RANKING_VALIDITY} Read before removing.</p>"
            # the table fits the page: words wrap whole, and long ids, field values and URLs only where
            # soft_wrap allows
            + '<div class="fit">'
            + table(("rank", "document", *keep_fields, "score", "category", "AQ-27 dimension",
                     "judgements / sentences", "illnesses", "most stigmatising sentence"), rows, numeric_from=99)
            + "</div>")


def _groups(analysis: AnalysisSummary) -> str:
    records = analysis.groups
    field = analysis.group_by
    if not field or records is None:
        return ""
    judged = bool(records) and "judgement_share" in records[0]
    rows = [(r["group"], r["illness_type"], r["n"],
             *((r["n_judgements"], percent(r["judgement_share"]), num(r["mean_judgement_strength"], 2))
               if judged else ()),
             *(estimate(r.get("n_judgements", r["n"]), r[f"{score}_mean"], r[f"{score}_ci_low"], r[f"{score}_ci_high"])
               for score in ("warmth", "competence"))) for r in records]
    of = "judgements" if judged else "sentences"
    header = (field, "illness type", "sentences",
              *(("judgements", "judgement share", "mean judgement strength") if judged else ()),
              f"warmth of {of} [95% CI]", f"competence of {of} [95% CI]")
    return (f"<h2>By {esc(field)}</h2><p>Where the stigma sits: per value of {esc(field)} (the largest "
            "groups; the rest pooled as (other)), mental and physical mentions apart.</p>" + table(header, rows))


def render_report(folder: AuditFolder, sentences: pd.DataFrame, summary: AuditSummary) -> str:
    """The report page as one HTML string (figures read from ``folder``)."""
    analysis = summary.analysis
    judged = analysis.judgement is not None and CATEGORY_COLUMN in sentences
    examples = sentences[sentences[CATEGORY_COLUMN] == JUDGEMENT] if judged else sentences
    every = " (all sentences)" if judged else ""
    documents = pd.read_parquet(folder.documents) if folder.documents.is_file() else None
    body = "".join((_header(summary), _verdict(summary, documents), _documents(documents), _warnings(summary),
                    _groups(analysis), _counts(summary), _forms(summary), _categories(analysis),
                    _judgements(analysis), _figures(folder), _comparisons(analysis, f"Mental vs physical{every}"),
                    _quadrants(analysis, f"Quadrant shares{every}"),
                    _aq27(analysis, f"AQ-27 dimensions through the BIAS map{every}"),
                    _examples_section(examples, judged), _method(summary), _configuration(summary)))
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Corpus audit report</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_STYLE}</style>'
            f"</head><body>{body}</body></html>\n")


def write_report(folder: AuditFolder, strict: bool = False, log: Callable[[str], None] | None = None) -> Path:
    """Write ``report.html`` (atomically) from the audit's outputs in ``folder``; return its path.

    ``strict`` and ``log``: see :func:`load_audit`."""
    sentences, summary = load_audit(folder, strict, log)
    with atomic_path(folder.report) as tmp:
        tmp.write_text(render_report(folder, sentences, summary), encoding="utf-8")
    return folder.report
