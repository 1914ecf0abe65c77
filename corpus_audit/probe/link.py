"""``corpus-audit link``: a probe of a model beside the audits of corpora, quantitatively (the seed paper explains
the model by the corpus densities by eye). Every probe links per illness (its ``illnesses.csv``: the AQ-27 probe's
mean score, the gender probe's P(female) - P(male), the Social Distance probe's P(negative), the sentiment probe's
share of negative labels); the AQ-27 probe also per dimension.

Two units are compared, each with Spearman's rho, a percentile-bootstrap CI and a permutation test
(:func:`corpus_audit.stigma.unit_stats.partial_rank_correlation`), for each audit separately; per illness the
ranks of the name's number of pieces and of the model's neutral likelihood of it (where the probe measured them)
are taken out of both sides first, since a model that learnt nothing tracks both and so does how often a corpus
names an illness. Holm's correction runs over every correlation reported, the intervals are at the Bonferroni
level 1 - 0.05 / m, and a correlation is evidence (``evidence``) only when its adjusted p is below 0.05 and its
corrected interval excludes 0. A link holds (``holds``; ``conclusion.evidence_of_link`` in link.json) when its
correlation is evidence in the direction expected of it (``expected_direction``), or in either direction where
none is expected:

* **AQ-27 dimensions** (9 points): the corpus's mental - physical difference, as the BIAS-map share of the audit's
  ``aq27.csv`` and, when ``sentences.parquet`` has the instrument's direct dimension scores (``dim_<dimension>``
  columns), as the difference of their means; beside the model's mean score difference (``dimensions.csv``).
  Expected: positive (the same gap on both sides);
* **illnesses** (up to 44 points): how many of the corpus's sentences mention the illness, their mean warmth and
  competence (and mean direct dimension scores), beside the model's mean score of the illness's prompts
  (``illnesses.csv``). For dimension scores the model's side is the illness's *lean* on that dimension: its mean on
  the dimension's items less its mean over all items, which takes out how likely the illness's name is by itself.
  Expected: warmth negative when the probe's measure rises with stigma (``Probe.stigma_direction``: a colder
  corpus, a higher measure), dimension scores positive; mentions and competence, and warmth for a measure without
  a stigma direction (the gender probe's), have no expected direction.

A sentence whose illness type is "both" counts in each group, as in the audit. Audit folders are read only through
:mod:`corpus_audit.audit.folder` (the one exception to the wings' independence).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from corpus_audit.audit.folder import AuditFolder
from corpus_audit.common.atomic import atomic_path, folder_lock, write_text_atomic
from corpus_audit.common.errors import UserError
from corpus_audit.common.jsonable import jsonable
from corpus_audit.common.log import to_stderr
from corpus_audit.probe.folder import ProbeFolder
from corpus_audit.stigma.aq27 import DIMENSIONS
from corpus_audit.stigma.judgement import CATEGORY_COLUMN, DIMENSION_COLUMNS, JUDGEMENT
from corpus_audit.stigma.quadrants import group_masks
from corpus_audit.stigma.stats import holm
from corpus_audit.stigma.unit_stats import ALPHA, partial_rank_correlation


class LinkError(UserError, ValueError):
    """The folders given to ``corpus-audit link`` cannot be linked."""


def _illness_lists(frame: pd.DataFrame) -> pd.Series:
    return frame["illnesses"].map(lambda v: [v] if isinstance(v, str) else list(v) if v is not None else [])


def corpus_dimensions(folder: AuditFolder, sentences: pd.DataFrame) -> pd.DataFrame:
    """Per dimension: ``corpus_difference`` (BIAS-map share, mental - physical) and ``corpus_dim_difference`` (mean
    direct dimension score of the judgements, as the audit reads it, mental - physical; NaN when the audit has
    none)."""
    aq27 = folder.read_aq27().set_index("dimension")
    if CATEGORY_COLUMN in sentences.columns and sentences[CATEGORY_COLUMN].notna().any():  # the gate ran
        sentences = sentences[sentences[CATEGORY_COLUMN] == JUDGEMENT]
    masks = group_masks(sentences)
    rows = []
    for dimension in DIMENSIONS:
        share = (float(aq27.loc[dimension, "share_mental"]) - float(aq27.loc[dimension, "share_physical"])
                 if dimension in aq27.index else np.nan)
        column = DIMENSION_COLUMNS[dimension]
        direct = np.nan
        if column in sentences.columns:
            values = pd.to_numeric(sentences[column], errors="coerce")
            direct = float(values[masks["mental"]].mean() - values[masks["physical"]].mean())
        rows.append({"dimension": dimension, "corpus_difference": share, "corpus_dim_difference": direct})
    return pd.DataFrame(rows)


def corpus_illnesses(sentences: pd.DataFrame) -> pd.DataFrame:
    """Per illness mentioned: ``corpus_sentences``, ``corpus_warmth``, ``corpus_competence`` and the mean of each
    direct dimension score column present (``corpus_dim_<dimension>``)."""
    present = [column for column in DIMENSION_COLUMNS.values() if column in sentences.columns]
    exploded = sentences.assign(illness=_illness_lists(sentences)).explode("illness").dropna(subset=["illness"])
    numeric = exploded[["warmth", "competence", *present]].apply(pd.to_numeric, errors="coerce")
    grouped = numeric.assign(illness=exploded["illness"].to_numpy()).groupby("illness")
    table = grouped.mean().rename(columns={"warmth": "corpus_warmth", "competence": "corpus_competence",
                                           **{column: f"corpus_{column}" for column in present}})
    table.insert(0, "corpus_sentences", grouped.size())
    return table.reset_index()


def _covariates(illnesses: pd.DataFrame) -> dict[str, pd.Series]:
    """What a per-illness link must take out (design.md §11): the number of pieces of the illness's name and the
    model's likelihood of it in neutral sentences, where the probe measured them. A random model's score tracks
    both, and so does how often a corpus mentions a name (short, common names)."""
    columns = {"n_pieces": "pieces of the illness's name", "mean_baseline": "the model's neutral likelihood of it"}
    return {name: illnesses[column] for column, name in columns.items()
            if column in illnesses.columns and illnesses[column].notna().any()}


def _holds(correlation: dict[str, Any]) -> bool:
    """A link holds when its correlation is evidence in the direction expected of it (either, where none is)."""
    expected = correlation["expected_direction"]
    return bool(correlation["evidence"]) and (expected is None or np.sign(correlation["rho"]) == expected)


def _plain(correlation: dict[str, Any], unit: str, corpus_side: str, model_side: str) -> str:
    """One sentence that says what a correlation means, without jargon, following its ``evidence`` and ``holds``
    booleans."""
    rho, p, n = correlation["rho"], correlation["p_holm"], correlation["n"]
    if rho is None:
        return f"{correlation['audit']}: {corpus_side} cannot be compared with {model_side} ({n} usable {unit})."
    low, high = correlation["rho_ci"] or (None, None)
    interval = (f" [{100 * correlation['confidence']:.1f}% CI corrected for {correlation['tests']} tests: "
                f"{low:+.2f} to {high:+.2f}]" if low is not None and high is not None else "")
    controls = (f" with {' and '.join(correlation['covariates'])} taken out" if correlation["covariates"] else "")
    head = (f"{correlation['audit']}: across {n} {unit}, {corpus_side} and {model_side}{controls} rank-correlate "
            f"at rho = {rho:+.2f}{interval}, Holm-adjusted p = {p:.3g}: ")
    if not correlation["evidence"]:
        return head + "no evidence of a link: on this evidence the corpus does not explain this side of the model" \
            + (" (with so few points only a strong link could show)." if n < 15 else ".")
    share = round(100 * rho * rho)
    expected = correlation["expected_direction"]
    if expected is None:
        return head + (f"the corpus explains about {share}% of the ranking (rho squared; no direction is expected "
                       f"of this pair, and {'more' if rho > 0 else 'less'} of the one goes with more of the other).")
    if correlation["holds"]:
        return head + (f"the corpus explains about {share}% of the ranking (rho squared), in the expected direction"
                       + (" (the lower the one, the higher the other)." if rho < 0 else "."))
    return head + (f"a link opposite to the expected direction (about {share}% of the ranking): the corpus does not "
                   "explain the model this way.")


def link(audits: Sequence[str | Path], probe: str | Path, labels: Sequence[str] | None = None, n_boot: int = 2000,
         permutations: int = 9999, seed: int = 0, log: Callable[[str], None] = to_stderr) -> dict[str, Any]:
    """Link the audits to the probe, write ``link.json``, ``link_dimensions.csv``, ``link_illnesses.csv`` and the
    link figure into the probe folder, re-render its ``report.html``, and return what ``link.json`` holds."""
    from corpus_audit.probe.figures import write_link_figure
    from corpus_audit.probe.probes import probe_class
    from corpus_audit.probe.report import write_report

    probe_folder = ProbeFolder(probe)
    summary = probe_folder.read_summary()
    kind = probe_class(summary.probe, probe_folder.summary)
    # a colder corpus goes with more stigma: warmth is expected against a measure that rises with stigma
    warmth_direction = None if kind.stigma_direction is None else -kind.stigma_direction
    aq27 = summary.probe == "aq27"  # other probes have no AQ-27 dimensions: the illnesses only
    model_measure = summary.results.get("measure", "mean score of the illness's prompts")
    model_dimensions = probe_folder.read_dimensions()[["dimension", "mean_difference"]].rename(
        columns={"mean_difference": "model_difference"}) if aq27 else None
    model_illnesses = probe_folder.read_illnesses()
    for dimension in DIMENSIONS:  # the illness's lean on a dimension: its mean there less its mean over all items
        column = f"mean_{dimension.lower()}"
        if column in model_illnesses.columns:
            model_illnesses[f"model_lean_{dimension.lower()}"] = model_illnesses[column] - model_illnesses["mean_score"]
    model_illnesses = model_illnesses.rename(columns={"mean_score": "model_score"})
    labels = list(labels) if labels else [Path(path).name or str(path) for path in audits]
    if len(labels) != len(audits) or len(set(labels)) != len(labels):
        raise LinkError(f"give one distinct label per audit ({len(audits)} audits, labels: {', '.join(labels)})")

    dimension_tables, illness_tables, correlations, verdict, audit_records = [], [], [], [], []
    pending: list[tuple[str, str, str, pd.Series, pd.Series, dict[str, pd.Series], str | None, str | None,
                        int | None]] = []
    for label, path in zip(labels, audits):
        folder = AuditFolder(path)
        audit_summary = folder.read_summary(complete=True)
        if audit_summary.lang != summary.lang:
            log(f"{label}: the audit is in {audit_summary.lang!r} and the probe in {summary.lang!r}; illnesses are "
                "matched by their canonical (English) names")
        sentences = folder.read_statistics_sentences(log=log)
        audit_records.append({"label": label, "path": str(path), "corpus": audit_summary.corpus_name,
                              "lang": audit_summary.lang, "sentences": int(len(sentences))})
        dimensions = corpus_dimensions(folder, sentences).merge(model_dimensions, on="dimension", how="left") \
            if aq27 else pd.DataFrame(columns=["dimension", "corpus_difference", "corpus_dim_difference",
                                               "model_difference"])
        dimensions.insert(0, "audit", label)
        illnesses = model_illnesses.merge(corpus_illnesses(sentences), on="illness", how="left")
        illnesses["corpus_sentences"] = illnesses["corpus_sentences"].fillna(0).astype(int)
        illnesses.insert(0, "audit", label)
        dimension_tables.append(dimensions)
        illness_tables.append(illnesses)

        # (unit, measure, corpus values, model values, corpus side and model side in words, expected direction);
        # the per-dimension correlations of the direct scores stay out of the verdict (link.json has them)
        model_side = "the model's score of its prompts" if aq27 else f"the model's {model_measure}"
        pairs = [("dimensions", "BIAS-map share difference (mental - physical) vs model score difference",
                  dimensions["corpus_difference"], dimensions["model_difference"],
                  "the corpus's mental - physical gaps (BIAS map)", "the model's gaps", 1)] if aq27 else []
        pairs += [("illnesses", f"sentences mentioning the illness vs model {model_measure}",
                   illnesses["corpus_sentences"], illnesses["model_score"],
                   "how often the corpus mentions an illness", model_side, None),
                  ("illnesses", f"mean warmth vs model {model_measure}", illnesses["corpus_warmth"],
                   illnesses["model_score"], "the warmth of the corpus's sentences about an illness", model_side,
                   warmth_direction),
                  ("illnesses", f"mean competence vs model {model_measure}", illnesses["corpus_competence"],
                   illnesses["model_score"], "the competence of the corpus's sentences about an illness",
                   model_side, None)]
        if aq27 and dimensions["corpus_dim_difference"].notna().any():
            pairs.insert(1, ("dimensions", "direct dimension score difference (mental - physical) vs model score "
                                           "difference", dimensions["corpus_dim_difference"],
                             dimensions["model_difference"], "the corpus's mental - physical gaps (direct scores)",
                             "the model's gaps", 1))
        for dimension in DIMENSIONS:
            corpus_column = f"corpus_{DIMENSION_COLUMNS[dimension]}"
            lean = f"model_lean_{dimension.lower()}"
            if corpus_column in illnesses.columns and lean in illnesses.columns:
                pairs.append(("illnesses", f"mean {dimension} score vs model's {dimension} lean",
                              illnesses[corpus_column], illnesses[lean], None, None, 1))
        covariates = _covariates(illnesses)
        pending += [(label, unit, measure, x, y, covariates if unit == "illnesses" else {}, corpus_side, model_side,
                     expected) for unit, measure, x, y, corpus_side, model_side, expected in pairs]

    # every correlation reported is one test: Holm over all, intervals at the Bonferroni level 1 - alpha / m
    confidence = 1 - ALPHA / max(1, len(pending))
    for label, unit, measure, x, y, covariates, _, _, expected in pending:
        result = partial_rank_correlation(x.to_numpy(dtype=float), y.to_numpy(dtype=float),
                                          {name: values.to_numpy(dtype=float) for name, values in covariates.items()},
                                          n_boot=n_boot, permutations=permutations, seed=seed, confidence=confidence)
        correlations.append({"audit": label, "unit": unit, "measure": measure, **result.to_dict(),
                             "tests": len(pending), "expected_direction": expected})
    adjusted = holm([np.nan if c["permutation_p"] is None else c["permutation_p"] for c in correlations])
    for record, p in zip(correlations, adjusted):
        low, high = record["rho_ci"] or (None, None)
        record["p_holm"] = None if np.isnan(p) else float(p)
        record["evidence"] = bool(record["p_holm"] is not None and record["p_holm"] < ALPHA and low is not None
                                  and high is not None and (low > 0 or high < 0))
        record["holds"] = _holds(record)
    evidence = False
    for label in labels:
        found, tested = [], 0
        for record, (_, unit, _, _, _, _, corpus_side, model_side, _) in zip(correlations, pending):
            if record["audit"] != label or corpus_side is None:
                continue
            tested += 1
            verdict.append(_plain(record, unit, corpus_side, model_side))
            if record["holds"]:
                found.append(f"{corpus_side} (rho {record['rho']:+.2f})")
        evidence = evidence or bool(found)
        verdict.append(f"{label} in short: " + (
            f"{len(found)} of {tested} links hold: the corpus explains the model through " + "; ".join(found) + "."
            if found else f"none of {tested} links holds: no evidence that the corpus explains the model."))
    verdict.append("A rank correlation is not a cause: the model also learnt from other text, and 9 dimensions give "
                   "a test little power. Dimension-by-dimension correlations of the direct scores are in "
                   "link.json." if aq27 else "A rank correlation is not a cause: the model also learnt from other "
                   f"text, and only {len(model_illnesses)} illnesses of the lexicon are in this probe, so only a "
                   "strong link can show.")

    dimensions_table = pd.concat(dimension_tables, ignore_index=True)
    illnesses_table = pd.concat(illness_tables, ignore_index=True)
    result = jsonable({"probe": str(probe_folder.path), "model_id": summary.model_id, "audits": audit_records,
                       "correlations": correlations, "verdict": verdict,
                       "conclusion": {"evidence_of_link": evidence, "alpha": ALPHA, "correction": "Holm over every "
                                      "correlation reported; intervals at the Bonferroni level"},
                       "probe_kind": summary.probe, "model_measure": model_measure,
                       "dimensions": dimensions_table.to_dict(orient="records"),
                       "illnesses": illnesses_table[[c for c in ("audit", "illness", "illness_type", "corpus_sentences",
                                                                 "corpus_warmth", "corpus_competence", "model_score")
                                                     if c in illnesses_table.columns]].to_dict(orient="records"),
                       "n_boot": n_boot,
                       "permutations": permutations, "seed": seed})
    with folder_lock(probe_folder.path):
        for path, table in ((probe_folder.link_dimensions, dimensions_table),
                            (probe_folder.link_illnesses, illnesses_table)):
            with atomic_path(path) as tmp:
                table.to_csv(tmp, index=False)
        write_link_figure(probe_folder, dimensions_table, illnesses_table)
        write_text_atomic(probe_folder.link, json.dumps(result, indent=2, allow_nan=False))
        write_report(probe_folder, kind)
    return result
