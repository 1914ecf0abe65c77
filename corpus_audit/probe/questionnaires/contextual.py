"""``corpus-audit probe contextual``: stigma in what a chat model does, not only in what it says (Wang et al. 2026).

Three stages over one OpenAI-compatible endpoint, every response kept in ``responses.jsonl`` by request key, so
that a rerun (after a kill, a budget, a failure) sends only what is missing:

* **requests**: the contextual arm (scenario x condition x prompt arm x repetition, a free completion of an
  unfinished sentence) and the explicit arm (the AQ-27 per condition x repetition, integer answers in JSON, asked
  again when unusable); a judge model's codes of every completion when ``judge_model`` is given;
* **code** (checkpointed): each completion coded stigma-congruent or not, with its types, by the instrument
  (:mod:`corpus_audit.probe.questionnaires.coding`) and the judge; ``completions.parquet``, ``explicit.parquet``;
* **report** (checkpointed): per condition and arm the share of stigma-congruent completions; a binomial mixed model
  (condition and prompt arm fixed, scenario random) with odds ratios vs the healthy baseline, Benjamini-Hochberg
  over the conditions; the same by category; stigma types per condition; the explicit AQ-27 scores beside the
  contextual shares (the dissociation); the coders' agreement with each other and with the hand-labelled sample;
  ``conditions.csv``, ``illnesses.csv`` (for ``corpus-audit link``), the figure, ``summary.json`` and
  ``report.html``.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.checkpoints import fingerprint
from corpus_audit.common.jsonable import jsonable
from corpus_audit.common.resources import sha256_file
from corpus_audit.common.version import __version__
from corpus_audit.corpus.matcher import default_lexicon_path, load_lexicon
from corpus_audit.probe.folder import ProbeFolder, ProbeOptionsError, ProbeSummary
from corpus_audit.probe.models.chat import ChatClient, ChatRequest, ResponseStore
from corpus_audit.probe.questionnaires.coding import instrument_codes, type_agreement
from corpus_audit.probe.questionnaires.files import QuestionnaireError, bundled_folder, read_rows
from corpus_audit.probe.questionnaires.scenarios import (
    ARMS,
    HEALTHY,
    TYPES,
    Design,
    completion_requests,
    explicit_messages,
    judge_messages,
    load_design,
    parse_judgement,
    parse_likert,
    score_likert,
)
from corpus_audit.probe.run import Probe, ProbeRun
from corpus_audit.probe.sections import contextual_section
from corpus_audit.stigma.aq27 import DIMENSIONS
from corpus_audit.stigma.stats import mixed_logit, rank_correlation

if TYPE_CHECKING:
    import pandas as pd

LABELS_FILE = "contextual_labels.csv"
CODERS = ("instrument", "judge")
#: The judge codes with greedy decoding: one fixed reading per completion.
JUDGE_TEMPERATURE = 0.0
JUDGE_TOKENS = 200
#: Room for 27 answers in JSON, with a model's habit of wrapping them in a code fence.
EXPLICIT_TOKENS = 400


@dataclass
class ContextualOptions:
    """The options of ``corpus-audit probe contextual`` (defaults and why: docs/probe.md)."""

    endpoint: str
    model: str
    lang: str = "en"
    questionnaire: str | None = None
    repetitions: int = 10
    temperature: float = 1.0
    max_new_tokens: int = 120
    strategy: bool = True
    explicit: bool = True
    json_mode: bool = False
    parse_retries: int = 3
    judge_model: str | None = None
    coder: str = "instrument"
    instrument_model: str | None = None
    axes: str | None = None
    labels: str | None = None
    permutations: int = 9999
    seed: int = 0
    api_key_env: str | None = "OPENAI_API_KEY"
    concurrency: int = 4
    retries: int = 5
    backoff: float = 1.0
    timeout: float = 120.0
    budget: int | None = None

    def __post_init__(self) -> None:
        if self.coder not in CODERS:
            raise ProbeOptionsError(f"coder must be one of {', '.join(CODERS)}, not {self.coder!r}")
        if self.coder == "judge" and not self.judge_model:
            raise ProbeOptionsError("coder judge needs a judge model")
        if self.repetitions < 1 or self.parse_retries < 0 or self.max_new_tokens < 1:
            raise ProbeOptionsError("repetitions >= 1, parse_retries >= 0 and max_new_tokens >= 1 are needed")

    @property
    def arms(self) -> tuple[str, ...]:
        return ARMS if self.strategy else ARMS[:1]


def public_endpoint(url: str) -> str:
    """The endpoint as outputs record it: scheme, host, port and path; any user, password or query dropped."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    return urllib.parse.urlunsplit((parts.scheme, f"{host}:{parts.port}" if parts.port else host, parts.path, "", ""))


def ask_until_valid(client: ChatClient, store: ResponseStore, units: Sequence[Any],
                    build: Callable[[Any, int], ChatRequest], parse: Callable[[str], Any], attempts: int,
                    log: Callable[[str], None], progress: bool, unit: str) -> dict[Any, tuple[Any, int]]:
    """Ask each unit's request; re-ask (attempt 1, 2, ...: new requests) those whose answer ``parse`` rejects, up
    to ``attempts`` more times. Returns unit -> (parsed answer or None, the attempt it came from)."""
    results: dict[Any, tuple[Any, int]] = {}
    pending = list(units)
    for attempt in range(attempts + 1):
        requests = {unit_: build(unit_, attempt) for unit_ in pending}
        client.complete(requests.values(), store, log, progress, unit)
        pending = []
        for unit_, request in requests.items():
            parsed = parse(store.get(request.key).content)  # type: ignore[union-attr]
            results[unit_] = (parsed, attempt)
            if parsed is None:
                pending.append(unit_)
        if not pending:
            break
        if attempt < attempts:
            log(f"requests: {len(pending)} unusable {unit} answer(s); asking again (attempt {attempt + 1})")
    return results


def hand_labels(path: Path, design: Design) -> pd.DataFrame:
    """The hand-labelled completions: scenario, condition, completion, ``congruent`` (bool), ``types`` (tuple)."""
    import pandas as pd

    rows = []
    scenarios, conditions = {s.id for s in design.scenarios}, {c.name for c in design.conditions}
    for where, row in read_rows(path, ("scenario", "condition", "completion", "stigma_congruent", "types")):
        types = tuple(t.strip() for t in row["types"].split(";") if t.strip())
        if row["scenario"] not in scenarios or row["condition"] not in conditions:
            raise QuestionnaireError(f"{where}: unknown scenario or condition")
        if row["stigma_congruent"] not in ("yes", "no") or any(t not in TYPES for t in types) \
                or (row["stigma_congruent"] == "yes") != bool(types):
            raise QuestionnaireError(f"{where}: stigma_congruent is yes (with types of {', '.join(TYPES)}, separated "
                                     "by ';') or no (without types)")
        rows.append({"scenario": row["scenario"], "condition": row["condition"], "completion": row["completion"],
                     "congruent": row["stigma_congruent"] == "yes", "types": types})
    return pd.DataFrame(rows)


class _Run:
    """One run's endpoint, store, design and options, shared by the stages."""

    def __init__(self, options: ContextualOptions, folder: ProbeFolder, design: Design, log: Callable[[str], None],
                 progress: bool) -> None:
        self.options, self.folder, self.design, self.log, self.progress = options, folder, design, log, progress
        self.store = ResponseStore(folder.responses, log)
        self.client = ChatClient(options.endpoint, options.api_key_env, options.concurrency, options.retries,
                                 options.backoff, options.timeout, options.budget)

    def completions(self) -> pd.DataFrame:
        """Every cell of the contextual arm with its completion (sent first when missing)."""
        import pandas as pd

        o = self.options
        cells = completion_requests(self.design, o.model, o.arms, o.repetitions, o.temperature, o.max_new_tokens)
        self.client.complete([request for _, request in cells], self.store, self.log, self.progress, "completion")
        rows = []
        for cell, request in cells:
            response = self.store.get(request.key)
            scenario, condition = self.design.scenario(cell["scenario"]), self.design.condition(cell["condition"])
            rows.append({**cell, "domain": scenario.domain, "theme": scenario.theme, "category": condition.category,
                         "illness": condition.illness, "key": request.key, "completion": response.content,
                         "finish_reason": response.finish_reason,
                         "text": response.content.strip()})
        return pd.DataFrame(rows)

    def explicit(self) -> pd.DataFrame:
        """One row per condition x repetition of the explicit arm: the answers, the scores, the attempt used."""
        import pandas as pd

        o, design = self.options, self.design
        units = [(c.name, r) for c in design.conditions if c.noun for r in range(o.repetitions)]

        def build(unit: tuple[str, int], attempt: int) -> ChatRequest:
            return ChatRequest(o.model, explicit_messages(design, design.condition(unit[0])), o.temperature,
                               EXPLICIT_TOKENS, unit[1], attempt, "explicit", o.json_mode)

        found = ask_until_valid(self.client, self.store, units, build, lambda text: parse_likert(text, design.items),
                                o.parse_retries, self.log, self.progress, "explicit")
        rows = []
        for (condition, repetition), (answers, attempt) in found.items():
            row = {"condition": condition, "category": design.condition(condition).category,
                   "repetition": repetition, "attempts": attempt + 1, "valid": answers is not None}
            if answers is not None:
                row.update({f"item_{n}": v for n, v in answers.items()})
                row.update({f"score_{k.lower()}": v for k, v in score_likert(answers, design.items).items()})
            rows.append(row)
        return pd.DataFrame(rows)

    def judge(self, items: Sequence[tuple[str, str, str]]) -> list[tuple[bool, tuple[str, ...]] | None]:
        """The judge model's code of each (scenario, condition, completion); None where it stayed unusable."""
        o, design = self.options, self.design

        def build(unit: tuple[str, str, str], attempt: int) -> ChatRequest:
            scenario, condition, completion = unit
            return ChatRequest(o.judge_model or "", judge_messages(design, design.scenario(scenario),
                                                                   design.condition(condition), completion),
                               JUDGE_TEMPERATURE, JUDGE_TOKENS, 0, attempt, "judge", o.json_mode)

        found = ask_until_valid(self.client, self.store, list(dict.fromkeys(items)), build, parse_judgement,
                                o.parse_retries, self.log, self.progress, "judge")
        return [found[item][0] for item in items]


def _instrument(options: ContextualOptions, log: Callable[[str], None]) -> Callable[[list[str]], Any]:
    from corpus_audit.score.scorer import ModelSpec, score_texts

    log("code: loading the instrument")
    embedder, axes = ModelSpec(options.lang, model=options.instrument_model, axes_path=options.axes).load()
    return lambda texts: score_texts(texts, embedder, axes, show_progress=False)


def code(run: _Run, completions: pd.DataFrame, labels: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The instrument's (and the judge's) codes of the completions; their agreement with each other and with the
    hand labels."""
    import numpy as np

    from corpus_audit.scm.columns import OUTPUT_COLUMNS

    options = run.options
    measure = _instrument(options, run.log)
    label_texts = [completion.strip() for completion in labels["completion"]]
    scores = np.asarray(measure(completions["text"].tolist() + label_texts), dtype=float)
    codes = instrument_codes(scores)
    run_codes, label_codes = codes[:len(completions)], codes[len(completions):]
    completions = completions.assign(**{column: scores[:len(completions), i]
                                        for i, column in enumerate(OUTPUT_COLUMNS)})
    completions["instrument_congruent"] = [c[0] for c in run_codes]
    completions["instrument_types"] = [list(c[1]) for c in run_codes]
    hand = list(zip(labels["congruent"], labels["types"]))
    validation: dict[str, Any] = {"labels": len(labels), "instrument": type_agreement(label_codes, hand)}
    agreement: dict[str, Any] = {}
    if options.judge_model:
        judged = run.judge(list(zip(completions["scenario"], completions["condition"], completions["completion"])))
        completions["judge_valid"] = [c is not None for c in judged]
        completions["judge_congruent"] = [c[0] if c else None for c in judged]
        completions["judge_types"] = [list(c[1]) if c else [] for c in judged]
        agreement = type_agreement(run_codes, judged)
        label_judged = run.judge(list(zip(labels["scenario"], labels["condition"], labels["completion"])))
        validation["judge"] = type_agreement(label_judged, hand)
    primary = options.coder
    completions["congruent"] = completions[f"{primary}_congruent"].astype("boolean")
    completions["types"] = completions[f"{primary}_types"]
    warnings = [f"the {coder}'s codes agree with the hand labels no better than chance (Cohen's kappa "
                f"{'undefined' if record.get('kappa') is None else format(record['kappa'], '.2f')}): its "
                "stigma-congruent shares and odds ratios are not validated"
                for coder, record in validation.items() if isinstance(record, dict) and record.get("n")
                and not (record.get("kappa") or 0) > 0]
    return completions, {"validation": validation, "coders": agreement, "coder": primary, "warnings": warnings}


def separated(coded: pd.DataFrame, factor: str, level: str, reference: str) -> bool:
    """Whether ``level`` or ``reference`` of ``factor`` has every completion, or none, stigma-congruent: perfect
    separation, where a logistic odds ratio is not estimable (the fit returns a huge number with a degenerate
    interval)."""
    for name in (level, reference):
        outcome = coded.loc[coded[factor] == name, "congruent"].astype(bool)
        if len(outcome) and outcome.nunique() < 2:
            return True
    return False


def _rates(completions: pd.DataFrame, design: Design) -> pd.DataFrame:
    """Per condition: its category, per arm the completions coded and the share stigma-congruent, and the share of
    each type over all its coded completions of the baseline arm."""
    import pandas as pd

    coded = completions[completions["congruent"].notna()]
    rows = []
    for condition in design.conditions:
        mine = coded[coded["condition"] == condition.name]
        row: dict[str, Any] = {"condition": condition.name, "category": condition.category,
                               "illness": condition.illness}
        for arm in sorted(set(coded["arm"]), key=ARMS.index):
            part = mine[mine["arm"] == arm]["congruent"].astype(bool)
            row[f"n_{arm}"], row[f"rate_{arm}"] = int(part.size), float(part.mean()) if part.size else None
        baseline = mine[mine["arm"] == ARMS[0]]
        for stigma_type in TYPES:
            row[f"type_{stigma_type.replace(' ', '_')}"] = float(baseline["types"].map(
                lambda types, t=stigma_type: t in types).mean()) if len(baseline) else None
        rows.append(row)
    return pd.DataFrame(rows)


def analyse(completions: pd.DataFrame, explicit: pd.DataFrame | None, design: Design, arms: Sequence[str],
            permutations: int, seed: int) -> tuple[dict[str, Any], pd.DataFrame]:
    """The statistics (results of summary.json) and the per-condition table (conditions.csv)."""
    coded = completions[completions["congruent"].notna()]
    outcome = coded["congruent"].astype(bool).to_numpy()
    arm_factor = {"prompt": (coded["arm"].tolist(), ARMS[0])} if len(arms) > 1 else {}
    by_condition = mixed_logit(outcome, {"condition": (coded["condition"].tolist(), HEALTHY), **arm_factor},
                               coded["scenario"].tolist())
    by_category = mixed_logit(outcome, {"category": (coded["category"].tolist(), HEALTHY), **arm_factor},
                              coded["scenario"].tolist())
    table = _rates(completions, design)
    warnings = []
    for model, factor in ((by_condition, "condition"), (by_category, "category")):
        for effect in model.effects:
            if effect["factor"] == factor and separated(coded, factor, effect["level"], HEALTHY):
                warnings.append(f"{effect['level']} vs {HEALTHY}: every completion or none is stigma-congruent in "
                                "one of them (perfect separation): no odds ratio is given; compare the shares")
                effect.update(odds_ratio=None, odds_ratio_ci=None, log_odds_ratio=None, se=None, p=None, p_bh=None,
                              separated=True)
    effects = {e["level"]: e for e in by_condition.effects if e["factor"] == "condition"}
    for column in ("odds_ratio", "odds_ratio_ci", "p", "p_bh"):
        table[column] = table["condition"].map(lambda name, c=column: effects.get(name, {}).get(c))
    table["or_low"] = table["odds_ratio_ci"].map(lambda ci: ci[0] if ci else None)
    table["or_high"] = table["odds_ratio_ci"].map(lambda ci: ci[1] if ci else None)
    table = table.drop(columns="odds_ratio_ci")
    table["separated"] = table["condition"].map(lambda name: bool(effects.get(name, {}).get("separated")))
    results: dict[str, Any] = {"by_condition": by_condition.to_dict(), "by_category": by_category.to_dict(),
                               "warnings": warnings}
    if explicit is not None and len(explicit):
        valid = explicit[explicit["valid"]]
        scores = valid.groupby("condition")["score_total"].agg(["mean", "std", "size"])
        table["explicit_mean"] = table["condition"].map(scores["mean"])
        table["explicit_sd"] = table["condition"].map(scores["std"])
        dimensions = {d: valid.groupby("condition")[f"score_{d.lower()}"].mean().to_dict() for d in DIMENSIONS}
        paired = table.dropna(subset=["explicit_mean", f"rate_{ARMS[0]}"])
        results["explicit"] = {
            "sheets": int(len(explicit)), "valid": int(len(valid)),
            "mean_attempts": float(explicit["attempts"].mean()),
            "scale": "AQ-27, 1-9 after reverse scoring (higher: more stigma); midpoint 5",
            "conditions": [{"condition": name, "mean": row["mean"], "sd": row["std"], "n": int(row["size"]),
                            "dimensions": {d: dimensions[d].get(name) for d in DIMENSIONS}}
                           for name, row in scores.iterrows()],
            "dissociation": rank_correlation(paired["explicit_mean"], paired[f"rate_{ARMS[0]}"], n_boot=2000,
                                             permutations=permutations, seed=seed).to_dict()}
    results["counts"] = {"scenarios": len(design.scenarios), "conditions": len(design.conditions),
                         "arms": list(arms), "completions": int(len(completions)), "coded": int(len(coded)),
                         "domains": {d: int(n) for d, n in completions.groupby("domain")["scenario"].nunique().items()}}
    baseline = coded[coded["arm"] == ARMS[0]]
    results["by_domain"] = [{"domain": domain, "category": category, "n": int(len(part)),
                             "rate": float(part["congruent"].astype(bool).mean())}
                            for (domain, category), part in baseline.groupby(["domain", "category"])]
    results["conditions"] = jsonable(table)
    results["measure"] = "share of stigma-congruent completions"
    return jsonable(results), table


def illness_table(table: pd.DataFrame, lang: str) -> pd.DataFrame:
    """``illnesses.csv`` for the link: the conditions the illness lexicon names, their share of stigma-congruent
    completions (baseline arm) as ``mean_score``."""
    types = {entry.illness: entry.type for entry in load_lexicon(default_lexicon_path(lang))}
    named = table[table["illness"].fillna("") != ""]
    out = named[["illness", "condition", f"rate_{ARMS[0]}"]].rename(columns={f"rate_{ARMS[0]}": "mean_score"})
    out.insert(1, "illness_type", out["illness"].map(types))
    return out.sort_values("illness").reset_index(drop=True)


class ContextualProbe(Probe[ContextualOptions]):
    """Wang et al.'s contextual judgements (module docstring): the requests (kept by key in ``responses.jsonl``,
    not checkpointed: a rerun sends only what is missing), the code stage, then the report."""

    options_type = ContextualOptions
    name = "contextual"
    title = "Contextual-judgement probe (Wang et al. 2026)"
    stigma_direction = 1  # the share of stigma-congruent completions
    figures: ClassVar[dict[str, str]] = {
        "contextual": ("Left: odds ratio of a stigma-congruent completion vs the healthy baseline per condition "
                       "(binomial mixed model, scenario random; 95% CI, log scale), coloured by category. Right: "
                       "share of stigma-congruent completions per condition and prompt arm (Wang et al.'s Figures "
                       "3a and 4a)."),
    }
    section = staticmethod(contextual_section)

    def prepare(self) -> None:
        options = self.options
        self.source = Path(options.questionnaire) if options.questionnaire else bundled_folder(options.lang)
        self.design = load_design(options.lang, self.source)
        self.labels_path = Path(options.labels) if options.labels else self.source / LABELS_FILE
        self.labels = hand_labels(self.labels_path, self.design)

    def stages(self, run: ProbeRun) -> ProbeSummary:
        import pandas as pd

        options, folder = self.options, run.folder
        requests = _Run(options, folder, self.design, run.log, run.progress)
        started = time.perf_counter()
        completions = requests.completions()
        explicit = requests.explicit() if options.explicit else None
        run.seconds["requests"] = time.perf_counter() - started
        code_inputs = {"completions": fingerprint(completions[["key", "completion"]].values.tolist()),
                       "instrument": [options.instrument_model, options.lang,
                                      sha256_file(Path(options.axes)) if options.axes else None],
                       "judge": options.judge_model, "coder": options.coder, "json_mode": options.json_mode,
                       "parse_retries": options.parse_retries, "labels": sha256_file(self.labels_path),
                       "version": __version__}

        def coded() -> tuple[pd.DataFrame, dict[str, Any]]:
            table, coding = code(requests, completions, self.labels)
            with atomic_path(folder.completions) as tmp:
                table.to_parquet(tmp, index=False)
            return table, coding

        def saved() -> tuple[pd.DataFrame, dict[str, Any]] | None:
            # the coders' agreement is kept in summary.json only
            coding = folder.read_summary().results.get("coding") if folder.summary.is_file() else None
            return (pd.read_parquet(folder.completions), coding) if coding is not None else None

        completions, coding = run.stage("code", code_inputs, [folder.completions], coded, saved)
        report_inputs = {"completions": sha256_file(folder.completions), "coding": coding, "arms": options.arms,
                         "explicit": fingerprint(explicit.to_dict(orient="list")) if explicit is not None else None,
                         "permutations": options.permutations, "seed": options.seed}
        outputs = [folder.conditions, folder.illnesses, *([folder.explicit] if explicit is not None else []),
                   *self.figure_files(folder)]
        return run.report(report_inputs, outputs, lambda: self._results(completions, explicit, coding, requests))

    def _results(self, completions: pd.DataFrame, explicit: pd.DataFrame | None, coding: dict[str, Any],
                 requests: _Run) -> ProbeSummary:
        from corpus_audit.probe.figures import write_contextual_figure

        options, folder = self.options, requests.folder
        if explicit is not None:
            with atomic_path(folder.explicit) as tmp:
                explicit.to_parquet(tmp, index=False)
        results, table = analyse(completions, explicit, self.design, options.arms, options.permutations,
                                 options.seed)
        stats = requests.client.stats
        results["coding"] = coding
        results["requests"] = {**stats.to_dict(), "stored": len(requests.store),
                               "requests_per_second": stats.completed / stats.seconds if stats.seconds else None}
        for path, frame in ((folder.conditions, table), (folder.illnesses, illness_table(table, options.lang))):
            with atomic_path(path) as tmp:
                frame.to_csv(tmp, index=False)
        write_contextual_figure(folder, table, results["by_condition"]["effects"])
        return self.summary(options.model, jsonable(results), endpoint=public_endpoint(options.endpoint),
                            questionnaire=str(self.source))
