"""``corpus-audit probe aq27``: the AQ-27 put to a masked language model (seed paper §3.1), in checkpointed stages
(the :class:`AQ27Probe`, run by :func:`corpus_audit.probe.run.run_probe`).

* **score**: every item x noun phrase x illness filled (:mod:`corpus_audit.probe.questionnaires.aq27_items`), each
  distinct sentence scored with PLL in saved chunks (:mod:`corpus_audit.probe.models.parts`), one row per prompt in
  ``scores.parquet`` with the PLL of the whole sentence and of the illness's pieces and their numbers of pieces
  (``--name-scoring whole``: the illness's name alone, masked whole; the sentence's columns are then empty);
* **baseline** and **null**: the same of the neutral carrier sentences, and of the prompts and carriers by
  randomly initialised copies of the model (docs/probe.md);
* **report**: the statistics (:mod:`corpus_audit.probe.analysis`) over the chosen score (``scope`` x ``reduce``),
  ``dimensions.csv``, ``illnesses.csv``, the figures, ``summary.json`` and ``report.html``.

A rerun skips a stage whose inputs and outputs are unchanged (``checkpoints.json``) and resumes an interrupted
score stage at its first missing chunk. Changing only the score's scope or reduction, the bootstrap or the seed
reruns the report stage alone. Where the work runs (device, tokens per pass) is in no checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.resources import sha256_bytes, sha256_file
from corpus_audit.corpus.matcher import default_lexicon_path
from corpus_audit.probe.folder import ProbeFolder, ProbeOptionsError, ProbeSummary
from corpus_audit.probe.models.masked import MAX_TOKENS, METRICS, MaskedLM, ModelOnDemand
from corpus_audit.probe.models.parts import PLLParts
from corpus_audit.probe.questionnaires.aq27_items import in_vocabulary, load_questionnaire, prompts
from corpus_audit.probe.questionnaires.files import QuestionnaireError
from corpus_audit.probe.run import Probe, ProbeRun
from corpus_audit.probe.sections import aq27_header, aq27_illnesses, aq27_section

if TYPE_CHECKING:
    import pandas as pd

#: What is scored of each prompt, and how its pieces' log-probabilities are reduced (docs/probe.md).
SCOPES = ("sentence", "illness")
REDUCTIONS = ("sum", "mean")
ILLNESS_SETS = ("all", "in-vocabulary")
#: controlled: the illness's log-probability in the item less its log-probability in neutral carrier sentences,
#: the illness the unit; paper: the seed paper's raw PLL, prompts paired by item x noun phrase (docs/probe.md).
METHODS = ("controlled", "paper")
#: The reduction each method uses unless --reduce says otherwise: the controlled score per piece, so that a long
#: name does not weigh more; the paper's PLL summed, as minicons' sentence score of the seed paper.
DEFAULT_REDUCE = {"controlled": "mean", "paper": "sum"}
#: How the illness's name is scored (docs/probe.md): ``pll``, its pieces as the sentence's PLL scores them (--metric;
#: within-word l2r scores each word of a name of several words with the others visible); ``whole``, the name masked
#: as one unit, log P(name | rest of the sentence) left to right (:meth:`MaskedLM.span_log_probs`), summed by default
#: (the log-ratio of the name's probability in the item and in the carriers).
NAME_SCORINGS = ("pll", "whole")


@dataclass
class AQ27Options:
    """The options of ``corpus-audit probe aq27`` (defaults and why: docs/probe.md). ``scope`` and ``reduce``
    left None take the method's: controlled scores the illness's pieces per piece, paper the sentence's sum."""

    model: str
    lang: str = "en"
    method: str = "controlled"
    metric: str = "within_word_l2r"
    name_scoring: str = "pll"
    scope: str | None = None
    reduce: str | None = None
    period: bool = True
    illnesses: str = "all"
    questionnaire: str | None = None
    lexicon: str | None = None
    n_boot: int = 2000
    permutations: int = 9999
    null_models: int = 3
    seed: int = 0
    device: str = "cpu"
    max_tokens: int = MAX_TOKENS
    threads: int | None = None

    def __post_init__(self) -> None:
        for name, allowed in (("method", METHODS), ("metric", METRICS), ("name_scoring", NAME_SCORINGS),
                              ("scope", (None, *SCOPES)), ("reduce", (None, *REDUCTIONS)),
                              ("illnesses", ILLNESS_SETS)):
            if getattr(self, name) not in allowed:
                raise ProbeOptionsError(f"{name} must be one of {', '.join(map(str, allowed))}, not "
                                        f"{getattr(self, name)!r}")
        if self.method == "controlled" and self.scope == "sentence":
            raise ProbeOptionsError("--method controlled scores the illness's pieces against the same pieces in "
                                    "neutral carrier sentences: --scope sentence goes with --method paper only")
        if self.name_scoring == "whole" and self.method != "controlled":
            raise ProbeOptionsError("--name-scoring whole scores the illness's name alone, against the same name in "
                                    "the neutral carriers: it goes with --method controlled only")
        self.scope = self.scope or ("illness" if self.method == "controlled" else "sentence")
        self.reduce = self.reduce or ("sum" if self.name_scoring == "whole" else DEFAULT_REDUCE[self.method])
        if self.null_models < 0 or self.permutations < 99:
            raise ProbeOptionsError("--null-models must be at least 0 and --permutations at least 99")

    def score_label(self) -> str:
        if self.method == "controlled":
            masked = ", name masked whole" if self.name_scoring == "whole" else ""
            return f"log P(illness | item) - log P(illness | neutral), {self.reduce} over pieces{masked}"
        return f"PLL ({'sentence' if self.scope == 'sentence' else 'illness pieces'}, {self.reduce})"


class AQ27Probe(Probe[AQ27Options]):
    """The AQ-27 put to a masked language model (module docstring): stages score, baseline (the carriers), null
    (the random copies), then the report."""

    options_type = AQ27Options
    name = "aq27"
    title = "AQ-27 probe"
    stigma_direction = 1  # the items raise the illness: 21 of 27 are worded with stigma (Help, Avoidance reversed)
    figures: ClassVar[dict[str, str]] = {
        "boxplots": "The model's scores of the prompts, mental (red) vs physical (blue) illnesses, overall and per "
                    "AQ-27 dimension (the seed paper's Figure 1).",
        "differences": "Mean score difference, mental - physical, per AQ-27 dimension, with 95% bootstrap CIs over "
                       "the illnesses (--method paper: over the item x noun phrase pairs) and the corrected "
                       "significance (the seed paper's Figure 2); above 0: the items make a mental illness more "
                       "likely.",
    }
    header = staticmethod(aq27_header)
    section = staticmethod(aq27_section)
    closing_section = staticmethod(aq27_illnesses)

    def prepare(self) -> None:
        options = self.options
        self.questionnaire = load_questionnaire(options.lang, options.questionnaire, options.lexicon)
        self.lexicon = Path(options.lexicon) if options.lexicon else default_lexicon_path(options.lang)
        if options.method == "controlled" and not self.questionnaire.carriers:
            raise QuestionnaireError(f"{self.questionnaire.carriers_file()}: missing; --method controlled needs the "
                                     "neutral carrier sentences (copy the bundled one) or use --method paper")

    def stages(self, run: ProbeRun) -> ProbeSummary:
        from corpus_audit.embed import model_identity  # names a local folder's weights by their files

        options, folder, questionnaire, log = self.options, run.folder, self.questionnaire, run.log
        # loaded when a chunk must be scored or the vocabulary is needed
        load = ModelOnDemand(options.model, options.device, options.threads, log)

        if options.illnesses == "in-vocabulary":
            questionnaire.illnesses = in_vocabulary(questionnaire.illnesses, load().tokenizer, options.lang)
            types = {illness.type for illness in questionnaire.illnesses}
            if types != {"mental", "physical"}:
                raise QuestionnaireError(f"{options.model}: with --illnesses in-vocabulary no "
                                         f"{' or '.join(sorted({'mental', 'physical'} - types))} illness is one "
                                         "token of the model's vocabulary; nothing to compare")
        table = prompts(questionnaire, options.period)
        # the carriers are scored whenever the questionnaire has them, so that switching --method reruns the
        # report only (they are a tenth of the prompts)
        carriers = prompts(questionnaire, options.period, carriers=True) if questionnaire.carriers else None
        score_inputs = {"model": [options.model, model_identity(options.model)], "metric": options.metric,
                        "questionnaire": [sha256_file(path) for path in questionnaire.files()],
                        "lexicon": sha256_file(self.lexicon), "period": options.period,
                        "illnesses": options.illnesses, "lang": options.lang, "sentences": _digest(table)}
        if options.name_scoring != "pll":  # keyed only when not the default: folders scored before stay fresh
            score_inputs["name_scoring"] = options.name_scoring
        # the sentences' digest: how the files become sentences (e.g. a name's non-defining clause) is code
        carrier_key = [sha256_file(questionnaire.carriers_file()), _digest(carriers)] if carriers is not None \
            else None
        baseline_inputs = {**score_inputs, "carriers": carrier_key}
        null_inputs = {**baseline_inputs, "null_models": options.null_models}
        report_inputs = {**null_inputs, "method": options.method, "scope": options.scope, "reduce": options.reduce,
                         "n_boot": options.n_boot, "permutations": options.permutations, "seed": options.seed}
        model_ids: list[str] = []

        def score_prompts() -> pd.DataFrame:
            scored, model_id = _score(table, PLLParts(folder.score_parts, score_inputs), load, options, log,
                                      run.progress)
            model_ids.append(model_id)
            return scored

        scored = run.table_stage("score", score_inputs, folder.scores, score_prompts)
        baselines = run.table_stage("baseline", baseline_inputs, folder.baselines, lambda: _score(
            carriers, PLLParts(folder.baseline_parts, baseline_inputs), load, options, log, run.progress)[0]) \
            if carriers is not None else None
        nulls = run.table_stage("null", null_inputs, folder.null_scores, lambda: _score_null(
            table, carriers, folder, null_inputs, load, options, log, run.progress)) if options.null_models else None
        # report.html is a view of these (``link`` adds a section to it): not a checkpointed output
        report_outputs = [folder.dimensions, folder.illnesses, *self.figure_files(folder)]
        return run.report(report_inputs, report_outputs, lambda: self._results(
            scored, baselines, nulls, folder, model_ids[0] if model_ids else folder.previous_model_id(options.model)))

    def _results(self, scored: pd.DataFrame, baselines: pd.DataFrame | None, nulls: pd.DataFrame | None,
                 folder: ProbeFolder, model_id: str) -> ProbeSummary:
        """The statistics (and the same of every null copy), tables and figures; the summary."""
        import pandas as pd

        from corpus_audit.probe.analysis import add_null_check, analyse_method, method_scores, verdict
        from corpus_audit.probe.figures import write_probe_figures

        options = self.options
        method = options.method
        scores = method_scores(scored, baselines, method, options.scope, options.reduce)  # type: ignore[arg-type]
        results = analyse_method(scores, method, options.n_boot, options.permutations, options.seed)
        copies = []
        if nulls is not None:
            for _, copy in nulls.groupby("null_model", sort=True):
                items = copy[copy["kind"] == "item"].drop(columns=["kind", "null_model"])
                carriers = copy[copy["kind"] == "carrier"].drop(columns=["kind", "null_model"])
                copy_scores = method_scores(items, carriers, method, options.scope,  # type: ignore[arg-type]
                                            options.reduce)  # type: ignore[arg-type]
                copies.append(analyse_method(copy_scores, method, options.n_boot, options.permutations,
                                             options.seed))
        add_null_check(results, copies)
        results["verdict"] = verdict(results)
        for path, records in ((folder.dimensions, results["dimensions"]), (folder.illnesses, results["illnesses"])):
            with atomic_path(path) as tmp:
                pd.DataFrame(records).to_csv(tmp, index=False)
        results["counts"] = {
            "prompts": int(len(scored)), "distinct_sentences": int(scored["sentence"].nunique()),
            "items": int(scored["item"].nunique()), "noun_phrases": int(scored["noun_phrase"].nunique()),
            "carriers": int(baselines["item"].nunique()) if baselines is not None else 0,
            "illnesses": {group: int(scored.loc[scored["illness_type"] == group, "illness"].nunique())
                          for group in ("mental", "physical")},
            "mean_tokens": {group: float(scored.loc[scored["illness_type"] == group,
                                                    f"n_tokens_{options.scope}"].mean())
                            for group in ("mental", "physical")}}
        write_probe_figures(folder, scores, results["dimensions"], options.score_label())
        return self.summary(model_id, results, questionnaire=str(self.questionnaire.folder))


def _digest(table: pd.DataFrame) -> str:
    return sha256_bytes("\n".join(table["sentence"]).encode("utf-8"))


def _score(table: pd.DataFrame, parts: PLLParts, load: Callable[[], MaskedLM], options: AQ27Options,
           log: Callable[[str], None], progress: bool) -> tuple[pd.DataFrame, str]:
    """The prompts of ``table`` with the PLL of the sentence and of the illness's pieces, and their numbers of
    pieces (``--name-scoring whole``: the name masked whole, the sentence not scored: NaN); and the id of the model
    that scored them."""
    unique = table.drop_duplicates("sentence")
    sentences = unique["sentence"].tolist()
    if options.name_scoring == "whole":
        spans = dict(zip(sentences, zip(unique["illness_start"], unique["illness_end"])))
        if table.drop_duplicates(["sentence", "illness_start", "illness_end"]).shape[0] != len(sentences):
            raise QuestionnaireError("a prompt names its illness at two places of the same sentence: --name-scoring "
                                     "whole needs one name per sentence")
        results = parts.score_spans(sentences, spans, load, options.max_tokens, log, progress)
    else:
        results = parts.score(sentences, load, options.metric, options.max_tokens, log, progress)
    by_sentence = dict(zip(sentences, results))
    rows = [by_sentence[sentence] for sentence in table["sentence"]]
    pieces = [row.span_scores(start, end) for row, start, end in zip(rows, table["illness_start"],
                                                                     table["illness_end"])]
    whole = options.name_scoring == "whole"  # the rows hold the name's pieces alone
    scored = table.assign(pll_sentence=[float("nan") if whole else row.total for row in rows],
                          n_tokens_sentence=[float("nan") if whole else len(row.scores) for row in rows],
                          pll_illness=[float(sum(span)) for span in pieces],
                          n_tokens_illness=[len(span) for span in pieces])
    return scored, parts.model_id or options.model


def _score_null(table: pd.DataFrame, carriers: pd.DataFrame | None, folder: ProbeFolder, key: dict[str, Any],
                load: Callable[[], MaskedLM], options: AQ27Options, log: Callable[[str], None], progress: bool
                ) -> pd.DataFrame:
    """null_scores.parquet: the prompts (``kind`` item) and carrier sentences (``kind`` carrier) scored by each of
    ``options.null_models`` randomly initialised copies of the model (``null_model`` = its seed)."""
    import pandas as pd

    frames = []
    for seed in range(options.null_models):
        def copy(seed: int = seed) -> MaskedLM:
            return load().random_copy(seed)

        for kind, prompts_table in (("item", table), ("carrier", carriers)):
            if prompts_table is None:
                continue
            parts = PLLParts(folder.null_parts / f"seed-{seed}-{kind}", {**key, "null_model": seed, "kind": kind})
            scored, _ = _score(prompts_table, parts, copy, options, log, progress)
            frames.append(scored.assign(kind=kind, null_model=seed))
    return pd.concat(frames, ignore_index=True)
