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

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.jsonable import jsonable
from corpus_audit.common.resources import sha256_file
from corpus_audit.probe.folder import ProbeFolder, ProbeOptionsError, ProbeSummary
from corpus_audit.probe.questionnaires.files import QuestionnaireError, read_rows
from corpus_audit.probe.questionnaires.social_distance import BASELINE, FILES, folder_of, illness_table, load_conditions
from corpus_audit.probe.run import Probe, ProbeRun
from corpus_audit.probe.sections import sentiment_section
from corpus_audit.stigma.stats import compare_groups, pearson, rank_correlation

if TYPE_CHECKING:
    import pandas as pd

TEMPLATES = "sentiment_templates.csv"


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
    fill_mask = other.read_table(other.conditions, ("condition", "p_negative"))[["condition", "p_negative"]]
    merged = conditions.merge(fill_mask, on="condition")
    merged = merged[merged["condition"] != BASELINE]
    return jsonable({"folder": str(other.path), "n": int(len(merged)),
                     "pearson": pearson(merged["p_negative"], merged["share_negative"]).to_dict(),
                     "spearman": rank_correlation(merged["p_negative"], merged["share_negative"], n_boot=n_boot,
                                                  seed=seed).to_dict(),
                     "points": merged[["condition", "stigmatized", "p_negative", "share_negative"]]
                     .to_dict(orient="records")})


class SentimentProbe(Probe[SentimentOptions]):
    """Mei et al.'s sentiment classifier (module docstring): the classify stage, then the report."""

    options_type = SentimentOptions
    name = "sentiment"
    title = "Sentiment-classifier probe (Mei et al. 2023)"
    stigma_direction = 1  # the share of negative labels
    figures: ClassVar[dict[str, str]] = {
        "sentiment": ("Share of negative labels per condition, stigmatised (red) and not (blue); with a "
                      "social-distance probe, against its P(negative) (Mei et al. §5.3)."),
    }
    section = staticmethod(sentiment_section)

    def prepare(self) -> None:
        self.source = folder_of(self.options.lang, self.options.questionnaire)
        self.table = prompt_table(self.source)
        if self.options.social_distance:
            other = ProbeFolder(self.options.social_distance)
            probe = other.read_summary().probe
            if probe != "social-distance":
                raise ProbeOptionsError(f"--social-distance {other.path}: not a social-distance probe folder (it "
                                        f"holds a {probe} probe)")

    def stages(self, run: ProbeRun) -> ProbeSummary:
        from corpus_audit.embed import model_identity

        options, folder, table = self.options, run.folder, self.table
        inputs = {"model": [options.model, model_identity(options.model)], "negative_label": options.negative_label,
                  "questionnaire": [sha256_file(self.source / name) for name in (FILES[0], TEMPLATES)]}
        model_ids: list[str] = []

        def classify() -> pd.DataFrame:
            from corpus_audit.probe.models.classifier import TextClassifier

            run.log(f"loading {options.model} on {options.device}")
            classifier = TextClassifier.load(options.model, options.device, run.log, options.threads,
                                             options.negative_label)
            found = classifier.classify(table["prompt"].tolist())
            model_ids.append(classifier.model_id)
            return table.assign(label=[c.label for c in found], valence=[c.valence for c in found],
                                p_negative_label=[c.probabilities.get("negative", 0.0) for c in found])

        scores = run.table_stage("classify", inputs, folder.scores, classify)
        model_id = model_ids[0] if model_ids else folder.previous_model_id(options.model)
        # the other folder's conditions are an input of the correlation
        other = ProbeFolder(options.social_distance).conditions if options.social_distance else None
        report_inputs = {**inputs, "n_boot": options.n_boot, "seed": options.seed,
                         "social_distance": [str(other), sha256_file(other) if other.is_file() else None]
                         if other is not None else None}
        outputs = [folder.conditions, folder.illnesses, *self.figure_files(folder)]
        return run.report(report_inputs, outputs, lambda: self._results(scores, folder, model_id))

    def _results(self, scores: pd.DataFrame, folder: ProbeFolder, model_id: str) -> ProbeSummary:
        from corpus_audit.probe.figures import write_sentiment_figures

        options = self.options
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
        return self.summary(model_id, results, questionnaire=str(self.source))
