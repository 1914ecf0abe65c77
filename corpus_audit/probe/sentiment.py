"""``corpus-audit probe sentiment``: a text classifier (sentiment) on "They are people who have [are] CONDITION." and
"These are people who ...", and the baselines "They are people." and "These are people." (Mei et al. 2023 §4.2,
§5.2-5.3), over the conditions of the Social Distance probe.

Per prompt the label of highest probability and its valence; per condition the share of negative labels over its
prompts (all phrases of the condition pooled, as the paper counts Latina/Latino's four prompts); stigmatised vs
non-stigmatised compared as in the Social Distance probe. With ``social_distance`` (a finished Social Distance probe
folder), Pearson's r (the paper's 0.79 over 122 conditions) and Spearman's rho between that probe's P(negative) and
the share of negative labels, across the conditions both have.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corpus_audit.common.version import __version__
from corpus_audit.common.atomic import atomic_path, check_output_location, folder_lock, remove_temporaries
from corpus_audit.common.checkpoints import Checkpoints
from corpus_audit.common.errors import UserError
from corpus_audit.common.jsonable import jsonable
from corpus_audit.common.log import to_stderr
from corpus_audit.common.resources import sha256_file
from corpus_audit.probe.folder import RUN_OPTIONS, ProbeFolder, ProbeSummary
from corpus_audit.probe.questionnaire import QuestionnaireError, read_rows
from corpus_audit.probe.social_distance import BASELINE, FILES, folder_of, illness_table, load_conditions
from corpus_audit.stigma.stats import compare_groups, pearson, rank_correlation

if TYPE_CHECKING:
    import pandas as pd

TEMPLATES = "sentiment_templates.csv"


class SentimentProbeError(UserError, ValueError):
    """The sentiment probe cannot be compared with the folder given."""


@dataclass
class SentimentOptions:
    """The options of ``corpus-audit probe sentiment`` (docs/probe.md)."""

    model: str
    lang: str = "en"
    questionnaire: str | None = None
    negative_label: str | None = None
    social_distance: str | None = None
    n_boot: int = 2000
    seed: int = 0
    device: str = "cpu"
    threads: int | None = None


def prompt_table(folder: Path) -> pd.DataFrame:
    """One row per template x (condition phrase or baseline): ``template``, ``condition``, ``stigmatized``,
    ``phrase``, ``illness``, ``prompt``."""
    import pandas as pd

    templates = read_rows(folder / TEMPLATES, ("template", "text"))
    for where, row in templates:
        if "[people]" not in row["text"]:
            raise QuestionnaireError(f"{where}: a template holds [people]")
    subjects = [(BASELINE, "baseline", "", "", "people")] + [
        (c["condition"], c["stigmatized"], c["plural_phrase"], c["illness"],
         f"people who {c['plural_verb']} {c['plural_phrase']}") for c in load_conditions(folder)]
    return pd.DataFrame([{"template": t["template"], "condition": condition, "stigmatized": stigmatized,
                          "phrase": phrase, "illness": illness, "prompt": t["text"].replace("[people]", people)}
                         for _, t in templates for condition, stigmatized, phrase, illness, people in subjects])


def correlate(conditions: pd.DataFrame, social_distance: str | Path, n_boot: int, seed: int) -> dict[str, Any]:
    """Pearson's r and Spearman's rho between a Social Distance probe's P(negative) and the share of negative
    labels, over the conditions both hold (baselines left out)."""
    other = ProbeFolder(social_distance)
    if other.read_summary().probe != "social-distance":
        raise SentimentProbeError(f"{other.path} is not a social-distance probe folder")
    fill_mask = other.read_table(other.conditions, ("condition", "p_negative"))[["condition", "p_negative"]]
    merged = conditions.merge(fill_mask, on="condition")
    merged = merged[merged["condition"] != BASELINE]
    return jsonable({"folder": str(other.path), "n": int(len(merged)),
                     "pearson": pearson(merged["p_negative"], merged["share_negative"]).to_dict(),
                     "spearman": rank_correlation(merged["p_negative"], merged["share_negative"], n_boot=n_boot,
                                                  seed=seed).to_dict(),
                     "points": merged[["condition", "stigmatized", "p_negative", "share_negative"]]
                     .to_dict(orient="records")})


def run_sentiment(options: SentimentOptions, outdir: str | Path, log: Callable[[str], None] = to_stderr) -> ProbeSummary:
    """Classify every prompt with ``options.model`` into ``outdir`` (or reuse the labels); return the summary."""
    import pandas as pd

    from corpus_audit.embed import model_identity
    from corpus_audit.probe.classifier import TextClassifier

    folder = ProbeFolder(check_output_location(outdir))
    source = folder_of(options.lang, options.questionnaire)
    table = prompt_table(source)
    with folder_lock(folder.path):
        remove_temporaries(folder.path)
        checkpoints = Checkpoints(folder.checkpoints, log)
        inputs = {"model": [options.model, model_identity(options.model)], "negative_label": options.negative_label,
                  "questionnaire": [sha256_file(source / name) for name in (FILES[0], TEMPLATES)]}
        seconds: dict[str, float] = {}
        reason = checkpoints.fresh("classify", inputs, folder.scores)
        if reason is None:
            log("classify: up to date, skipped")
            scores = pd.read_parquet(folder.scores)
            previous = folder.read_summary() if folder.summary.is_file() else None
            model_id = previous.model_id if previous else options.model
        else:
            log(f"classify: {reason}")
            started = time.perf_counter()
            log(f"loading {options.model} on {options.device}")
            classifier = TextClassifier.load(options.model, options.device, log, options.threads,
                                             options.negative_label)
            found = classifier.classify(table["prompt"].tolist())
            scores = table.assign(label=[c.label for c in found], valence=[c.valence for c in found],
                                  p_negative_label=[c.probabilities.get("negative", 0.0) for c in found])
            with atomic_path(folder.scores) as tmp:
                scores.to_parquet(tmp, index=False)
            checkpoints.mark("classify", inputs, folder.scores)
            model_id = classifier.model_id
            seconds["classify"] = time.perf_counter() - started
        summary = _report(scores, folder, options, model_id, source, seconds, log)
    return summary


def _report(scores: pd.DataFrame, folder: ProbeFolder, options: SentimentOptions, model_id: str, source: Path,
            seconds: dict[str, float], log: Callable[[str], None]) -> ProbeSummary:
    from corpus_audit.probe.figures import write_sentiment_figures
    from corpus_audit.probe.report import write_report

    started = time.perf_counter()
    folder.remove_link(log)
    conditions = scores.assign(negative=scores["valence"] == "negative").groupby(
        ["condition", "stigmatized", "illness"], sort=False).agg(share_negative=("negative", "mean"),
                                                                 prompts=("negative", "size")).reset_index()
    real = conditions[conditions["condition"] != BASELINE]
    comparison = compare_groups(real.loc[real["stigmatized"] == "yes", "share_negative"],
                                real.loc[real["stigmatized"] == "no", "share_negative"], label_a="stigmatized",
                                label_b="not stigmatized", n_boot=options.n_boot, seed=options.seed)
    baselines = scores[scores["condition"] == BASELINE]
    results: dict[str, Any] = jsonable({
        "comparison": comparison.to_dict(), "measure": "share of negative labels",
        "baselines": baselines[["prompt", "label", "valence"]].to_dict(orient="records"),
        "labels": scores["label"].value_counts().to_dict(),
        "all_negative": {group: int(((real["stigmatized"] == flag) & (real["share_negative"] == 1.0)).sum())
                         for group, flag in (("stigmatized", "yes"), ("not_stigmatized", "no"))},
        "counts": {"prompts": int(len(scores)), "conditions": int(len(real))},
        "conditions": conditions.to_dict(orient="records")})
    if options.social_distance:
        results["correlation"] = correlate(conditions, options.social_distance, options.n_boot, options.seed)
    for path, frame in ((folder.conditions, conditions),
                        (folder.illnesses, illness_table(conditions, "share_negative", options.lang))):
        with atomic_path(path) as tmp:
            frame.to_csv(tmp, index=False)
    write_sentiment_figures(folder, conditions, results.get("correlation"))
    seconds["report"] = time.perf_counter() - started
    recorded = {name: value for name, value in asdict(options).items() if name not in RUN_OPTIONS}
    summary = ProbeSummary("sentiment", model_id, options.lang, {**recorded, "questionnaire": str(source)},
                           results, __version__, seconds)
    folder.write_summary(summary)
    write_report(folder)
    return summary
