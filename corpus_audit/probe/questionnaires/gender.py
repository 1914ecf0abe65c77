"""``corpus-audit probe gender``: gendered fill-mask (Lin et al. 2022), in two checkpointed stages.

* **fill**: every prompt of ``gender_prompts.csv`` x diagnosis of ``gender_diagnoses.csv`` has its subject masked;
  the model's fills above ``threshold`` (0.01, as the paper) are female, male or unspecified by the editable
  ``gender_words.csv`` (pronouns and gendered nouns in any case, given names as written). Prompts marked
  ``recursive`` (the 27 AQ-27 prompts) fill noun phrases step by step: an unspecified word w of probability p
  becomes the prompt "... a <mask> w ...", whose fills m extend the phrase to "m w" with probability p x P(m),
  up to ``steps`` steps over the ``branch`` most probable fills of each step (the paper: 3 steps, top 10).
  A phrase stops at its first gendered word and takes its gender; an unspecified phrase counts as unspecified
  when it can grow no further (last step, or not a word). P(female), P(male) and P(unspecified) of a prompt are
  the sums over its phrases, so they never exceed 1. ``fills.parquet`` keeps every phrase.
* **report**: paired t-tests of P(female) vs P(male) over the prompts of each set (the health-action phases and
  each AQ-27 dimension, and all of a family) and diagnosis group, Cohen's d_z; independent t-tests of the
  disparity P(female) - P(male) between mental and non-mental diagnoses, Cohen's d; Bonferroni over each table;
  per diagnosis means (``diagnoses.csv``; those of the illness lexicon also in ``illnesses.csv`` for the link).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.jsonable import jsonable
from corpus_audit.common.resources import sha256_file
from corpus_audit.probe.folder import ProbeFolder, ProbeOptionsError, ProbeSummary
from corpus_audit.probe.models.fill import FillRun, FillStage
from corpus_audit.probe.models.masked import MASK
from corpus_audit.probe.questionnaires.files import QuestionnaireError, bundled_folder, read_rows
from corpus_audit.probe.questionnaires.valence import is_word
from corpus_audit.probe.run import Probe, ProbeRun
from corpus_audit.probe.sections import gender_section
from corpus_audit.stigma.aq27 import DIMENSIONS
from corpus_audit.stigma.stats import bonferroni, t_test

if TYPE_CHECKING:
    import pandas as pd

GENDERS = ("female", "male", "unspecified")
DIAGNOSIS_TYPES = ("mental", "non-mental")
#: The health-action phases of Lin et al.'s RQ1, in order; AQ-27 prompts form the set ``aq27``.
PHASES = ("diagnosis", "intention", "action")
FAMILIES = {"health action": PHASES, "AQ-27": ("aq27",)}
DIAGNOSIS = "[diagnosis]"
FILES = ("gender_prompts.csv", "gender_diagnoses.csv", "gender_words.csv")


@dataclass
class GenderOptions:
    """The options of ``corpus-audit probe gender`` (defaults and why: docs/probe.md)."""

    model: str
    lang: str = "en"
    questionnaire: str | None = None
    threshold: float = 0.01
    top_k: int = 100
    steps: int = 3
    branch: int = 10
    device: str = "cpu"
    max_tokens: int = 8192
    threads: int | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.threshold < 1:
            raise ProbeOptionsError(f"threshold must be in [0, 1), not {self.threshold}")
        if min(self.top_k, self.steps, self.branch) < 1:
            raise ProbeOptionsError("--top-k, --steps and --branch must be at least 1")
        if self.branch > self.top_k:
            raise ProbeOptionsError(f"--branch ({self.branch}: fills followed at each recursive step) cannot exceed "
                                    f"--top-k ({self.top_k}: fills asked of the model); lower --branch or raise "
                                    "--top-k")


@dataclass
class GenderQuestionnaire:
    folder: Path
    prompts: list[dict[str, Any]]
    diagnoses: list[dict[str, str]]
    any_case: dict[str, str]
    exact: dict[str, str]

    def files(self) -> list[Path]:
        return [self.folder / name for name in FILES]

    def gender_of(self, word: str) -> str:
        """female, male or unspecified: names as written, other words in any case."""
        return self.exact.get(word) or self.any_case.get(word.lower()) or "unspecified"


def load_gender_questionnaire(lang: str = "en", folder: str | Path | None = None) -> GenderQuestionnaire:
    """The prompts, diagnoses and gender words of ``folder`` (default: the bundled ``questionnaires/<lang>/``)."""
    folder = Path(folder) if folder is not None else bundled_folder(lang)
    prompts = []
    for where, row in read_rows(folder / FILES[0], ("set", "item", "dimension", "recursive", "text")):
        if row["set"] not in (*PHASES, "aq27"):
            raise QuestionnaireError(f"{where}: set must be one of {', '.join((*PHASES, 'aq27'))}")
        if row["set"] == "aq27" and row["dimension"] not in DIMENSIONS:
            raise QuestionnaireError(f"{where}: an aq27 prompt needs an AQ-27 dimension, not {row['dimension']!r}")
        if row["text"].count(MASK) != 1 or row["text"].count(DIAGNOSIS) != 1:
            raise QuestionnaireError(f"{where}: the text must hold {MASK} and {DIAGNOSIS} once each")
        if row["recursive"] not in ("yes", "no"):
            raise QuestionnaireError(f"{where}: recursive must be yes or no")
        prompts.append({"set": row["set"], "item": row["item"], "dimension": row["dimension"] or row["set"],
                        "recursive": row["recursive"] == "yes", "template": row["text"]})
    diagnoses = []
    for where, row in read_rows(folder / FILES[1], ("diagnosis", "type", "illness")):
        if row["type"] not in DIAGNOSIS_TYPES:
            raise QuestionnaireError(f"{where}: type must be mental or non-mental, not {row['type']!r}")
        diagnoses.append(row)
    if {row["type"] for row in diagnoses} != set(DIAGNOSIS_TYPES):
        raise QuestionnaireError(f"{folder / FILES[1]}: needs mental and non-mental diagnoses to compare")
    any_case, exact = {}, {}
    for where, row in read_rows(folder / FILES[2], ("word", "gender", "kind", "case")):
        if row["gender"] not in ("female", "male") or row["case"] not in ("any", "exact"):
            raise QuestionnaireError(f"{where}: gender must be female or male and case any or exact")
        if row["case"] == "exact":
            exact[row["word"]] = row["gender"]
        else:
            any_case[row["word"].lower()] = row["gender"]
    return GenderQuestionnaire(folder, prompts, diagnoses, any_case, exact)


def prompt_table(questionnaire: GenderQuestionnaire) -> pd.DataFrame:
    """One row per prompt x diagnosis, with the prompt written with ``MASK``."""
    import pandas as pd

    rows = [{**prompt, "diagnosis": diagnosis["diagnosis"],
             "diagnosis_type": diagnosis["type"], "illness": diagnosis["illness"],
             "prompt": prompt["template"].replace(DIAGNOSIS, diagnosis["diagnosis"])}
            for prompt in questionnaire.prompts for diagnosis in questionnaire.diagnoses]
    return pd.DataFrame(rows)


def grow(table: pd.DataFrame, questionnaire: GenderQuestionnaire, options: GenderOptions, stage: FillStage,
         parts: Path, key: object) -> tuple[pd.DataFrame, str]:
    """Every phrase of every prompt (module docstring): ``row`` (the prompt's row of ``table``), ``step``,
    ``phrase``, ``probability`` (the product of its steps), ``gender``."""
    import pandas as pd

    frontier = [(row, "", 1.0, prompt) for row, prompt in enumerate(table["prompt"])]
    recursive = table["recursive"].tolist()
    phrases, model_id = [], options.model
    for step in range(1, options.steps + 1):
        if not frontier:
            break
        fills, model_id = stage.fill([node[3] for node in frontier], parts / f"step-{step}", key, options.top_k)
        grown = []
        for row, phrase, probability, prompt in frontier:
            candidates = fills[prompt][:options.branch] if recursive[row] else fills[prompt]
            for fill in candidates:
                if fill.prob <= options.threshold:
                    continue
                text, p = (f"{fill.word} {phrase}".strip(), probability * fill.prob)
                gender = questionnaire.gender_of(fill.word)
                if gender == "unspecified" and recursive[row] and step < options.steps and is_word(fill.word):
                    grown.append((row, text, p, prompt.replace(MASK, f"{MASK} {fill.word}")))
                else:
                    phrases.append((row, step, text, p, gender))
        frontier = grown
    return pd.DataFrame(phrases, columns=["row", "step", "phrase", "probability", "gender"]), model_id


def probabilities(table: pd.DataFrame, phrases: pd.DataFrame) -> pd.DataFrame:
    """``table`` with ``p_female``, ``p_male``, ``p_unspecified`` and ``disparity`` = p_female - p_male."""
    sums = phrases.pivot_table(index="row", columns="gender", values="probability", aggfunc="sum")
    out = table.copy()
    for gender in GENDERS:
        column = sums[gender] if gender in sums.columns else None
        out[f"p_{gender}"] = column.reindex(range(len(table))).fillna(0.0).to_numpy() if column is not None else 0.0
    out["disparity"] = out["p_female"] - out["p_male"]
    return out


def _parts_of(scores: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(family, part, rows): each phase or AQ-27 dimension, and "all" of each family present."""
    out = []
    for family, sets in FAMILIES.items():
        rows = scores[scores["set"].isin(sets)]
        if rows.empty:
            continue
        column = "set" if family == "health action" else "dimension"
        order = PHASES if family == "health action" else DIMENSIONS
        out += [(family, part, rows[rows[column] == part]) for part in order if (rows[column] == part).any()]
        out.append((family, "all", rows))
    return out


def analyse(scores: pd.DataFrame) -> dict[str, Any]:
    """The paired F vs M tests (per part x diagnosis type), the disparity tests (per part), Bonferroni-adjusted
    within each table, and the per-diagnosis means."""
    paired, disparity = [], []
    for family, part, rows in _parts_of(scores):
        for group in DIAGNOSIS_TYPES:
            sample = rows[rows["diagnosis_type"] == group]
            test = t_test(sample["p_female"], sample["p_male"], paired=True, label_a="female", label_b="male")
            paired.append({"family": family, "part": part, "diagnosis_type": group, **test.to_dict(),
                           "mean_unspecified": float(sample["p_unspecified"].mean()) if len(sample) else None})
        test = t_test(rows.loc[rows["diagnosis_type"] == "mental", "disparity"],
                      rows.loc[rows["diagnosis_type"] == "non-mental", "disparity"], paired=False,
                      label_a="mental", label_b="non-mental")
        disparity.append({"family": family, "part": part, **test.to_dict()})
    for records in (paired, disparity):
        adjusted = bonferroni([r["p"] if r["p"] is not None else float("nan") for r in records])
        for record, p in zip(records, adjusted):
            record["p_bonferroni"] = float(p)
    per_diagnosis = scores.groupby(["diagnosis", "diagnosis_type", "illness"], sort=False)[
        ["p_female", "p_male", "p_unspecified", "disparity"]].mean().reset_index()
    return jsonable({"paired": paired, "disparity": disparity,
                     "diagnoses": per_diagnosis.to_dict(orient="records")})


class GenderProbe(Probe[GenderOptions]):
    """Lin et al.'s gendered fill-mask (module docstring): the fill stage, then the report."""

    options_type = GenderOptions
    name = "gender"
    title = "Gendered fill-mask probe (Lin et al. 2022)"
    figures: ClassVar[dict[str, str]] = {
        "gender": ("Mean probability of female, male and unspecified fills per set of prompts, mental (left) and "
                   "non-mental (right) diagnoses (Lin et al.'s Figures 3-4); stars: paired t-test F vs M, "
                   "Bonferroni-adjusted."),
    }
    section = staticmethod(gender_section)

    def prepare(self) -> None:
        self.questionnaire = load_gender_questionnaire(self.options.lang, self.options.questionnaire)

    def stages(self, run: ProbeRun) -> ProbeSummary:
        import pandas as pd

        from corpus_audit.embed import model_identity

        options, folder, questionnaire = self.options, run.folder, self.questionnaire
        table = prompt_table(questionnaire)
        fill_inputs = {"model": [options.model, model_identity(options.model)],
                       "questionnaire": [sha256_file(path) for path in questionnaire.files()],
                       **{name: getattr(options, name) for name in ("threshold", "top_k", "steps", "branch")}}
        model_ids: list[str] = []

        def fill() -> tuple[pd.DataFrame, pd.DataFrame]:
            stage = FillStage(FillRun(options.model, options.device, options.max_tokens, options.threads), run.log,
                              run.progress)
            phrases, model_id = grow(table, questionnaire, options, stage, folder.score_parts, fill_inputs["model"])
            model_ids.append(model_id)
            scores = probabilities(table, phrases)
            phrases = phrases.merge(table[["prompt", "set", "dimension", "diagnosis", "diagnosis_type"]],
                                    left_on="row", right_index=True)
            for path, frame in ((folder.scores, scores), (folder.fills, phrases)):
                with atomic_path(path) as tmp:
                    frame.to_parquet(tmp, index=False)
            return scores, phrases

        scores, phrases = run.stage("fill", fill_inputs, [folder.scores, folder.fills], fill,
                                    lambda: (pd.read_parquet(folder.scores), pd.read_parquet(folder.fills)))
        model_id = model_ids[0] if model_ids else folder.previous_model_id(options.model)
        outputs = [folder.tests, folder.diagnoses, folder.illnesses, *self.figure_files(folder)]
        return run.report(fill_inputs, outputs, lambda: self._results(scores, len(phrases), folder, model_id))

    def _results(self, scores: pd.DataFrame, n_phrases: int, folder: ProbeFolder, model_id: str) -> ProbeSummary:
        import pandas as pd

        from corpus_audit.probe.figures import write_gender_figures

        results = analyse(scores)
        diagnoses = pd.DataFrame(results["diagnoses"])
        linkable = diagnoses[diagnoses["illness"] != ""].rename(columns={"disparity": "mean_score"})
        linkable = linkable.assign(illness_type=linkable["diagnosis_type"].map({"mental": "mental",
                                                                                "non-mental": "physical"}))
        for path, frame in ((folder.tests, pd.DataFrame(results["paired"])), (folder.diagnoses, diagnoses),
                            (folder.illnesses, linkable[["illness", "illness_type", "mean_score", "diagnosis",
                                                         "p_female", "p_male", "p_unspecified"]])):
            with atomic_path(path) as tmp:
                frame.to_csv(tmp, index=False)
        results["counts"] = {"prompts": int(len(scores)), "templates": int(scores["template"].nunique()),
                             "phrases": int(n_phrases),
                             "diagnoses": {group: int(scores.loc[scores["diagnosis_type"] == group, "diagnosis"]
                                                      .nunique()) for group in DIAGNOSIS_TYPES}}
        results["measure"] = "P(female) - P(male)"
        write_gender_figures(folder, scores, results["paired"])
        return self.summary(model_id, results, questionnaire=str(self.questionnaire.folder))
