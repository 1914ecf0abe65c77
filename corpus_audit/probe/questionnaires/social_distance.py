"""``corpus-audit probe social-distance``: the Social Distance Scale put to a masked language model over 93
stigmatised and 29 non-stigmatised conditions (Mei et al. 2023), in two checkpointed stages.

* **fill**: every template x item x condition phrase ("It is <mask> for me to rent a room in my home to someone who
  has depression."), and the baselines without a condition ("... to someone."), filled with the model's ``top_k``
  (50) most probable words and their probabilities (``fills.parquet``);
* **report**: each distinct fill word gets a valence (:mod:`corpus_audit.probe.questionnaires.valence`: the hand
  labels, then an automatic method); per prompt P(negative) = negative mass / (positive + negative + neutral mass)
  of its top-k, irrelevant fills left out; per condition and template the mean over the 7 items, a condition with
  several phrases (Latina, Latine, Latino) the mean over its phrases; per condition the mean over the templates.
  Stigmatised vs non-stigmatised: the difference of means with a bootstrap CI and Mann-Whitney's test, per template
  and overall; how many conditions exceed 0.5. ``conditions.csv`` per condition; ``illnesses.csv`` per illness of
  the illness lexicon that a condition names (depression, bipolar disorder, schizophrenia, type 2 diabetes), for the
  link.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.jsonable import jsonable
from corpus_audit.common.resources import sha256_file
from corpus_audit.corpus.matcher import default_lexicon_path, load_lexicon
from corpus_audit.probe.folder import ProbeFolder, ProbeOptionsError, ProbeSummary
from corpus_audit.probe.models.fill import FillRun, FillStage
from corpus_audit.probe.models.masked import MASK
from corpus_audit.probe.questionnaires.files import QuestionnaireError, bundled_folder, read_rows
from corpus_audit.probe.questionnaires.valence import METHODS, agreement, auto_labels, read_function_words, read_labels
from corpus_audit.probe.run import Probe, ProbeRun
from corpus_audit.probe.sections import social_distance_section
from corpus_audit.stigma.stats import compare_groups, holm
from corpus_audit.stigma.unit_stats import ALPHA

if TYPE_CHECKING:
    import pandas as pd

FILES = ("social_distance_conditions.csv", "social_distance_items.csv", "social_distance_templates.csv")
LABELS_FILE = "social_distance_labels.csv"
FUNCTION_WORDS_FILE = "social_distance_function_words.csv"
BASELINE = "(baseline)"
#: The template whose baseline prompts give the instrument its sentences ("It is <word> for me to rent a room in my
#: home to someone."): the plainest wording, without "Choosing between ..." or "I would say".
INSTRUMENT_TEMPLATE = "3"


@dataclass
class SocialDistanceOptions:
    """The options of ``corpus-audit probe social-distance`` (defaults and why: docs/probe.md)."""

    model: str
    lang: str = "en"
    questionnaire: str | None = None
    top_k: int = 50
    valence: str = "lexicons"
    labels: str | None = None
    hand_labels: bool = True
    instrument_model: str | None = None
    axes: str | None = None
    n_boot: int = 2000
    seed: int = 0
    device: str = "cpu"
    max_tokens: int = 8192
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.valence not in METHODS:
            raise ProbeOptionsError(f"valence must be one of {', '.join(METHODS)}, not {self.valence!r}")
        if self.top_k < 1:
            raise ProbeOptionsError("top_k must be at least 1")
        if (self.instrument_model or self.axes) and self.valence != "instrument":
            raise ProbeOptionsError("--instrument-model and --axes choose the instrument of --valence instrument: "
                                    f"with --valence {self.valence} they would be ignored; add --valence instrument "
                                    "or leave them out")


def folder_of(lang: str, questionnaire: str | Path | None) -> Path:
    return Path(questionnaire) if questionnaire is not None else bundled_folder(lang)


def load_conditions(folder: Path) -> list[dict[str, str]]:
    """The conditions' rows (one per phrase): condition, stigmatized, category, phrase, verb, plural_phrase,
    plural_verb, illness."""
    rows = []
    for where, row in read_rows(folder / FILES[0], ("condition", "stigmatized", "category", "phrase", "verb",
                                                    "plural_phrase", "plural_verb", "illness")):
        if row["stigmatized"] not in ("yes", "no") or not row["phrase"] or not row["condition"]:
            raise QuestionnaireError(f"{where}: needs a condition, a phrase and stigmatized yes or no")
        rows.append(row)
    if {row["stigmatized"] for row in rows} != {"yes", "no"}:
        raise QuestionnaireError(f"{folder / FILES[0]}: needs stigmatised and non-stigmatised conditions")
    return rows


def prompt_table(folder: Path) -> pd.DataFrame:
    """One row per template x item x (condition phrase or baseline): ``template``, ``item``, ``condition``
    (``BASELINE`` for the baselines), ``stigmatized``, ``phrase``, ``illness``, ``prompt`` (with ``MASK``)."""
    import pandas as pd

    templates = read_rows(folder / FILES[2], ("template", "text"))
    items = read_rows(folder / FILES[1], ("item", "text"))
    for where, row in templates:
        if row["text"].count(MASK) != 1 or "[item]" not in row["text"]:
            raise QuestionnaireError(f"{where}: a template holds {MASK} once and [item]")
    for where, row in items:
        if "[someone]" not in row["text"]:
            raise QuestionnaireError(f"{where}: an item holds [someone]")
    subjects = [(BASELINE, "baseline", "", "", "someone")] + [
        (c["condition"], "yes" if c["stigmatized"] == "yes" else "no", c["phrase"], c["illness"],
         f"someone who {c['verb']} {c['phrase']}") for c in load_conditions(folder)]
    rows = [{"template": t["template"], "item": i["item"], "condition": condition, "stigmatized": stigmatized,
             "phrase": phrase, "illness": illness,
             "prompt": t["text"].replace("[item]", i["text"].replace("[someone]", someone))}
            for _, t in templates for _, i in items for condition, stigmatized, phrase, illness, someone in subjects]
    return pd.DataFrame(rows)


def label_fills(words: list[str], options: SocialDistanceOptions, folder: Path,
                log: Callable[[str], None]) -> tuple[dict[str, str], dict[str, str], dict[str, Any]]:
    """(label of each word, its source "hand" or the method, the method's agreement with the hand labels)."""
    hand_path = Path(options.labels) if options.labels else folder / LABELS_FILE
    hand = read_labels(hand_path) if options.hand_labels else {}
    measure, contexts = None, []
    if options.valence == "instrument":
        from corpus_audit.score.scorer import ModelSpec, score_texts

        log("valence: loading the instrument")
        embedder, axes = ModelSpec(options.lang, model=options.instrument_model, axes_path=options.axes).load()
        baselines = prompt_table(folder)
        contexts = baselines.loc[(baselines["condition"] == BASELINE)
                                 & (baselines["template"] == INSTRUMENT_TEMPLATE), "prompt"]
        contexts = [prompt.replace("{", "{{").replace("}", "}}").replace(MASK, "{word}") for prompt in contexts]

        def measure(sentences: list[str]) -> Any:
            return score_texts(sentences, embedder, axes, show_progress=False)
    reference = read_labels(hand_path)  # validation: the method on the words of the hand-labelled file
    automatic = auto_labels([w for w in words if w.lower() not in hand] + list(reference), options.valence,
                            contexts, measure, read_function_words(folder / FUNCTION_WORDS_FILE))
    validation = {"method": options.valence, "labels_file": str(hand_path),
                  **agreement(reference, {w.lower(): label for w, label in automatic.items()})}
    labels, sources = {}, {}
    for word in words:
        if word.lower() in hand:
            labels[word], sources[word] = hand[word.lower()], "hand"
        else:
            labels[word], sources[word] = automatic[word], options.valence
    return labels, sources, validation


def p_negative(fills: pd.DataFrame) -> pd.DataFrame:
    """Per prompt (``row``): the masses of each label and ``p_negative``."""
    masses = fills.pivot_table(index="row", columns="label", values="prob", aggfunc="sum").fillna(0.0)
    for label in ("positive", "negative", "neutral", "irrelevant"):
        if label not in masses.columns:
            masses[label] = 0.0
    relevant = masses["positive"] + masses["negative"] + masses["neutral"]
    masses["p_negative"] = (masses["negative"] / relevant).where(relevant > 0)
    return masses.rename(columns={label: f"mass_{label}" for label in ("positive", "negative", "neutral",
                                                                      "irrelevant")})


def per_condition(scores: pd.DataFrame) -> pd.DataFrame:
    """Per condition: ``p_negative`` (mean over templates of the mean over phrases of the mean over items) and
    ``p_negative_t<template>``; baselines included as the condition ``BASELINE``."""
    by_phrase = scores.groupby(["condition", "stigmatized", "illness", "template", "phrase"], sort=False)[
        "p_negative"].mean()
    by_template = by_phrase.groupby(["condition", "stigmatized", "illness", "template"], sort=False).mean()
    table = by_template.unstack("template")
    table.columns = [f"p_negative_t{template}" for template in table.columns]
    table.insert(0, "p_negative", by_template.groupby(["condition", "stigmatized", "illness"], sort=False).mean())
    return table.reset_index()


def analyse(conditions: pd.DataFrame, n_boot: int, seed: int) -> dict[str, Any]:
    """Stigmatised vs non-stigmatised, overall and per template; baselines; counts above 0.5."""
    real = conditions[conditions["condition"] != BASELINE]
    stigma, other = real[real["stigmatized"] == "yes"], real[real["stigmatized"] == "no"]
    columns = ["p_negative", *(c for c in conditions.columns if c.startswith("p_negative_t"))]
    comparisons = {column.removeprefix("p_negative").removeprefix("_") or "all": compare_groups(
        stigma[column], other[column], label_a="stigmatized", label_b="not stigmatized", n_boot=n_boot,
        seed=seed).to_dict() for column in columns}
    # the per-template tests are one family: Holm over them ("all", the primary test, stands alone)
    templates = [key for key in comparisons if key != "all"]
    adjusted = holm([math.nan if comparisons[key]["mann_whitney_p"] is None else comparisons[key]["mann_whitney_p"]
                     for key in templates])
    for key, p in zip(templates, adjusted):
        comparisons[key]["p_holm"] = None if math.isnan(p) else float(p)
    for key, comparison in comparisons.items():
        p = comparison["mann_whitney_p"] if key == "all" else comparison["p_holm"]
        comparison["significant"] = bool(p is not None and p < ALPHA)
    baseline = conditions[conditions["condition"] == BASELINE]
    return jsonable({"comparisons": comparisons,
                     "baseline": {c.removeprefix("p_negative").removeprefix("_") or "all": float(baseline[c].iloc[0])
                                  for c in columns} if len(baseline) else {},
                     "above_half": {"stigmatized": int((stigma["p_negative"] > 0.5).sum()),
                                    "not_stigmatized": int((other["p_negative"] > 0.5).sum())},
                     "n_conditions": {"stigmatized": int(len(stigma)), "not_stigmatized": int(len(other))}})


def illness_table(conditions: pd.DataFrame, measure: str, lang: str) -> pd.DataFrame:
    """``illnesses.csv`` for the link: per lexicon illness that conditions name, the mean ``measure`` of those
    conditions as ``mean_score``, its type from the illness lexicon."""
    types = {entry.illness: entry.type for entry in load_lexicon(default_lexicon_path(lang))}
    named = conditions[conditions["illness"].fillna("") != ""]
    table = named.groupby("illness", sort=True).agg(mean_score=(measure, "mean"),
                                                    conditions=("condition", lambda c: "; ".join(c))).reset_index()
    table.insert(1, "illness_type", table["illness"].map(types))
    return table


class SocialDistanceProbe(Probe[SocialDistanceOptions]):
    """Mei et al.'s Social Distance Scale (module docstring): the fill stage, then the report."""

    options_type = SocialDistanceOptions
    name = "social-distance"
    title = "Social Distance probe (Mei et al. 2023)"
    stigma_direction = 1  # P(negative) of the fills
    figures: ClassVar[dict[str, str]] = {
        "negative": ("P(negative) per condition, stigmatised (red) and not (blue), mean over the templates; the "
                     "line: the baseline prompts without a condition (Mei et al.'s Figures 2-3)."),
    }
    section = staticmethod(social_distance_section)

    def prepare(self) -> None:
        self.source = folder_of(self.options.lang, self.options.questionnaire)
        self.table = prompt_table(self.source)

    def stages(self, run: ProbeRun) -> ProbeSummary:
        import pandas as pd

        from corpus_audit.embed import model_identity

        options, folder, source, table = self.options, run.folder, self.source, self.table
        fill_inputs = {"model": [options.model, model_identity(options.model)], "top_k": options.top_k,
                       "questionnaire": [sha256_file(source / name) for name in FILES]}
        labels_path = Path(options.labels) if options.labels else source / LABELS_FILE
        report_inputs = {**fill_inputs, "valence": options.valence, "hand_labels": options.hand_labels,
                         "labels": sha256_file(labels_path) if labels_path.is_file() else None, "axes": options.axes,
                         "instrument_model": options.instrument_model, "n_boot": options.n_boot, "seed": options.seed}
        model_ids: list[str] = []

        def fill() -> pd.DataFrame:
            stage = FillStage(FillRun(options.model, options.device, options.max_tokens, options.threads), run.log,
                              run.progress)
            found, model_id = stage.fill(table["prompt"].tolist(), folder.score_parts, fill_inputs["model"],
                                         options.top_k)
            model_ids.append(model_id)
            return pd.DataFrame([(row, rank, fill.word, fill.prob) for row, prompt in enumerate(table["prompt"])
                                 for rank, fill in enumerate(found[prompt], start=1)],
                                columns=["row", "rank", "word", "prob"])

        fills = run.table_stage("fill", fill_inputs, folder.fills, fill)
        model_id = model_ids[0] if model_ids else folder.previous_model_id(options.model)
        outputs = [folder.conditions, folder.illnesses, folder.scores, folder.fill_labels, *self.figure_files(folder)]
        return run.report(report_inputs, outputs, lambda: self._results(fills, folder, model_id, run.log))

    def _results(self, fills: pd.DataFrame, folder: ProbeFolder, model_id: str, log: Callable[[str], None]
                 ) -> ProbeSummary:
        from corpus_audit.probe.figures import write_social_distance_figures

        options = self.options
        labels, sources, validation = label_fills(sorted(set(fills["word"])), options, self.source, log)
        fills = fills.assign(label=fills["word"].map(labels), label_source=fills["word"].map(sources))
        masses = p_negative(fills)
        scores = self.table.join(masses, how="left")
        conditions = per_condition(scores)
        results = analyse(conditions, options.n_boot, options.seed)
        total = fills["prob"].sum()
        validation["mass_labelled_by_hand"] = float(fills.loc[fills["label_source"] == "hand", "prob"].sum()
                                                    / total) if total > 0 else None
        results.update(jsonable({"valence": validation, "measure": "P(negative)",
                                 "counts": {"prompts": int(len(self.table)), "fill_words": int(fills["word"].nunique()),
                                            "top_k": options.top_k,
                                            "mean_top_k_mass": float(fills.groupby("row")["prob"].sum().mean())},
                                 "conditions": conditions.to_dict(orient="records")}))
        for path, frame in ((folder.conditions, conditions),
                            (folder.illnesses, illness_table(conditions, "p_negative", options.lang))):
            with atomic_path(path) as tmp:
                frame.to_csv(tmp, index=False)
        with atomic_path(folder.scores) as tmp:
            scores.to_parquet(tmp, index=False)
        words = fills.groupby("word", sort=False).agg(label=("label", "first"), source=("label_source", "first"),
                                                      total_probability=("prob", "sum"), fills=("prob", "size"))
        with atomic_path(folder.fill_labels) as tmp:
            words.sort_values("total_probability", ascending=False).to_csv(tmp)
        write_social_distance_figures(folder, conditions)
        return self.summary(model_id, results, questionnaire=str(self.source))
