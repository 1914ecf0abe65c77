"""The contextual-judgement design (Wang et al. 2026) as editable data, and the requests it makes.

``questionnaires/<lang>/`` holds (README there):

* ``contextual.csv``: scenarios (``scenario``, ``domain``: work, school, public, family; ``theme``: the stigma type the
  scenario invites; ``context`` with the slot ``[condition]``; ``stem``, the unfinished sentence the model completes);
* ``contextual_conditions.csv``: the health conditions (``condition``, the same key in every language;
  ``category``: healthy, mental, physical-high, physical-low; ``illness``, the canonical name of the illness lexicon
  when it has the condition, for ``corpus-audit link``; ``clause``, what fills ``[condition]``; ``noun``, what fills
  the AQ-27 items' illness slot in the explicit arm, empty for the healthy baseline);
* ``contextual_prompts.csv``: the instructions (``instruction``, ``strategy``, ``explicit_instruction``,
  ``explicit_subject``, ``judge_instruction``, ``judge_text``).

The contextual arm asks for every scenario x condition x prompt arm (baseline; strategy: the system prompt gains
the strategy text) x repetition; the explicit arm puts the AQ-27 (``aq27.csv``, integer answers 1-9 in JSON) to
the model for every condition but the healthy baseline, and re-asks (a new attempt) when an answer is unusable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus_audit.probe.models.chat import ChatRequest
from corpus_audit.probe.questionnaires.aq27_items import Illness, Item, NounPhrase, fill, load_questionnaire
from corpus_audit.probe.questionnaires.files import QuestionnaireError, read_rows

FILES = ("contextual.csv", "contextual_conditions.csv", "contextual_prompts.csv")
SLOT = "[condition]"
HEALTHY = "healthy"
CATEGORIES = (HEALTHY, "mental", "physical-high", "physical-low")
DOMAINS = ("work", "school", "public", "family")
#: The six stigma types of Wang et al.'s codebook.
TYPES = ("danger", "incompetence", "blame", "social distance", "control", "pity")
ARMS = ("baseline", "strategy")
PROMPT_KEYS = ("instruction", "strategy", "explicit_instruction", "explicit_subject", "judge_instruction",
               "judge_text")
#: The AQ-27 answer scale (Corrigan et al. 2003: 1 "not at all" to 9 "very much").
LIKERT = (1, 9)


@dataclass(frozen=True)
class Scenario:
    id: str
    domain: str
    theme: str
    context: str
    stem: str

    def text(self, condition: Condition) -> str:
        """What the model reads: the context with the condition's clause, then the unfinished sentence."""
        return f"{self.context.replace(SLOT, condition.clause)}\n\n{self.stem}"


@dataclass(frozen=True)
class Condition:
    name: str
    category: str
    illness: str
    clause: str
    noun: str


@dataclass
class Design:
    """Scenarios, conditions, instructions and AQ-27 items of one language, read from ``folder``."""

    lang: str
    folder: Path
    scenarios: list[Scenario]
    conditions: list[Condition]
    prompts: dict[str, str]
    items: list[Item]
    subject: NounPhrase

    def files(self) -> list[Path]:
        return [self.folder / name for name in (*FILES, "aq27.csv", "noun_phrases.csv")]

    def condition(self, name: str) -> Condition:
        return next(c for c in self.conditions if c.name == name)

    def scenario(self, id: str) -> Scenario:
        return next(s for s in self.scenarios if s.id == id)


def load_design(lang: str, folder: Path) -> Design:
    """Read and check the design; :class:`QuestionnaireError` names the file and line of a problem."""
    scenarios = []
    for where, row in read_rows(folder / FILES[0], ("scenario", "domain", "theme", "context", "stem")):
        if row["domain"] not in DOMAINS or row["theme"] not in TYPES:
            raise QuestionnaireError(f"{where}: domain must be one of {', '.join(DOMAINS)} and theme one of "
                                     f"{', '.join(TYPES)}")
        if row["context"].count(SLOT) != 1 or not row["stem"] or not row["scenario"]:
            raise QuestionnaireError(f"{where}: a scenario has an id, a context holding {SLOT} once and a stem")
        scenarios.append(Scenario(row["scenario"], row["domain"], row["theme"], row["context"], row["stem"]))
    conditions = []
    for where, row in read_rows(folder / FILES[1], ("condition", "category", "illness", "clause", "noun")):
        if row["category"] not in CATEGORIES or not row["condition"] or not row["clause"]:
            raise QuestionnaireError(f"{where}: a condition has a name, a clause and a category of "
                                     f"{', '.join(CATEGORIES)}")
        if (row["category"] == HEALTHY) != (not row["noun"]):
            raise QuestionnaireError(f"{where}: every condition but the healthy baseline has a noun (the AQ-27 slot)")
        conditions.append(Condition(row["condition"], row["category"], row["illness"], row["clause"], row["noun"]))
    for name, values in (("scenario", [s.id for s in scenarios]), ("condition", [c.name for c in conditions])):
        if len(set(values)) != len(values):
            raise QuestionnaireError(f"{folder}: each {name} is named once")
    if [c.name for c in conditions if c.category == HEALTHY] != [HEALTHY]:
        raise QuestionnaireError(f"{folder / FILES[1]}: needs one condition named {HEALTHY!r} of category {HEALTHY}, "
                                 "the baseline of the odds ratios")
    prompts = {row["prompt"]: row["text"] for _, row in read_rows(folder / FILES[2], ("prompt", "text"))}
    missing = [key for key in PROMPT_KEYS if not prompts.get(key)]
    if missing:
        raise QuestionnaireError(f"{folder / FILES[2]}: lacks the prompt(s) {', '.join(missing)}")
    questionnaire = load_questionnaire(lang, folder)
    subject = next((np for np in questionnaire.noun_phrases if np.text == prompts["explicit_subject"]), None)
    if subject is None:
        raise QuestionnaireError(f"{folder / FILES[2]}: explicit_subject {prompts['explicit_subject']!r} is not a "
                                 "noun phrase of noun_phrases.csv")
    return Design(lang, folder, scenarios, conditions, prompts, questionnaire.items, subject)


def completion_requests(design: Design, model: str, arms: Sequence[str], repetitions: int, temperature: float,
                        max_tokens: int) -> list[tuple[dict[str, Any], ChatRequest]]:
    """(cell, request) for every scenario x condition x arm x repetition; a cell names its scenario, condition,
    arm and repetition."""
    out = []
    for scenario in design.scenarios:
        for condition in design.conditions:
            for arm in arms:
                system = design.prompts["instruction"]
                if arm == "strategy":
                    system = f"{system}\n\n{design.prompts['strategy']}"
                messages = (("system", system), ("user", scenario.text(condition)))
                for repetition in range(repetitions):
                    cell = {"scenario": scenario.id, "condition": condition.name, "arm": arm,
                            "repetition": repetition}
                    out.append((cell, ChatRequest(model, messages, temperature, max_tokens, repetition)))
    return out


def explicit_messages(design: Design, condition: Condition) -> tuple[tuple[str, str], ...]:
    """The AQ-27 about ``explicit_subject`` with the condition, items numbered, one per line."""
    illness = Illness(condition.illness or condition.name, condition.category, condition.noun)
    lines = [f"{item.number}. {fill(item, design.subject, illness, design.lang)[0]}" for item in design.items]
    return (("system", design.prompts["explicit_instruction"]), ("user", "\n".join(lines)))


def judge_messages(design: Design, scenario: Scenario, condition: Condition, completion: str
                   ) -> tuple[tuple[str, str], ...]:
    """What the judge model reads: the codebook, then the scenario (with its condition) and the continuation."""
    text = design.prompts["judge_text"].replace("[context]", scenario.text(condition)).replace(
        "[completion]", completion.strip())
    return (("system", design.prompts["judge_instruction"]), ("user", text))


_FENCE = re.compile(r"```(?:json)?", re.IGNORECASE)


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (code fences and surrounding words dropped), or None (the paper's tolerant
    parsing)."""
    cleaned = _FENCE.sub("", text)
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", cleaned):
        try:
            value, _ = decoder.raw_decode(cleaned, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    return None


def parse_likert(text: str, items: Sequence[Item]) -> dict[int, int] | None:
    """Item number -> answer when ``text`` holds a JSON object answering every item with an integer of the scale
    (keys may be "1" or "item 1"; other keys are ignored); None otherwise (the answer is asked again)."""
    found = first_json_object(text)
    if found is None:
        return None
    answers: dict[int, int] = {}
    for key, value in found.items():
        digits = re.sub(r"\D", "", str(key))
        number, answer = (int(digits) if digits else None), _integer(value)
        if number is not None and answer is not None:
            answers[number] = answer
    low, high = LIKERT
    wanted = [item.number for item in items]
    if any(number not in answers or not low <= answers[number] <= high for number in wanted):
        return None
    return {number: answers[number] for number in wanted}


def score_likert(answers: dict[int, int], items: Sequence[Item]) -> dict[str, float]:
    """The AQ-27 scores of one answer sheet: ``total`` (mean of the 27 items) and one mean per dimension, on the
    1-9 scale after reverse scoring (Help and Avoidance: 10 - answer), so that higher always means more stigma."""
    low, high = LIKERT
    scored = {item.number: (low + high - answers[item.number]) if item.reverse_scored else answers[item.number]
              for item in items}
    scores = {"total": sum(scored.values()) / len(scored)}
    for dimension in dict.fromkeys(item.dimension for item in items):
        values = [scored[item.number] for item in items if item.dimension == dimension]
        scores[dimension] = sum(values) / len(values)
    return scores


def parse_judgement(text: str) -> tuple[bool, tuple[str, ...]] | None:
    """(stigma-congruent, types) of a judge's JSON answer; None when it is unusable (asked again). Types are matched
    case-insensitively, "_" as a space; unknown types make the answer unusable."""
    found = first_json_object(text)
    if found is None or not isinstance(found.get("stigma_congruent"), bool):
        return None
    types = found.get("types", [])
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        return None
    named = [t.strip().lower().replace("_", " ") for t in types]
    if any(t not in TYPES for t in named):
        return None
    congruent = found["stigma_congruent"]
    return congruent, tuple(t for t in TYPES if t in named) if congruent else ()
