"""``corpus-audit probe aq27``: the AQ-27 put to a masked language model (seed paper §3.1), in two checkpointed
stages.

* **score**: every item x noun phrase x illness filled (:mod:`corpus_audit.probe.questionnaire`), each distinct
  sentence scored with PLL in saved chunks (:mod:`corpus_audit.probe.parts`), one row per prompt in
  ``scores.parquet`` with the PLL of the whole sentence and of the illness's pieces and their numbers of pieces;
* **report**: the statistics (:mod:`corpus_audit.probe.analysis`) over the chosen score (``scope`` x ``reduce``),
  ``dimensions.csv``, ``illnesses.csv``, the figures, ``summary.json`` and ``report.html``.

A rerun skips a stage whose inputs and outputs are unchanged (``checkpoints.json``) and resumes an interrupted
score stage at its first missing chunk. Changing only the score's scope or reduction, the bootstrap or the seed
reruns the report stage alone. Where the work runs (device, tokens per pass) is in no checkpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corpus_audit import __version__
from corpus_audit.common.atomic import atomic_path, check_output_location, folder_lock, remove_temporaries
from corpus_audit.common.checkpoints import Checkpoints
from corpus_audit.common.log import to_stderr
from corpus_audit.common.resources import sha256_file
from corpus_audit.corpus.matcher import default_lexicon_path
from corpus_audit.probe.folder import FIGURE_FORMATS, FIGURES, RUN_OPTIONS, ProbeFolder, ProbeSummary
from corpus_audit.probe.parts import PLLParts
from corpus_audit.probe.pll import MAX_TOKENS, METRICS, MaskedLM
from corpus_audit.probe.questionnaire import QuestionnaireError, in_vocabulary, load_questionnaire, prompts

if TYPE_CHECKING:
    import pandas as pd

#: What is scored of each prompt, and how its pieces' log-probabilities are reduced (docs/probe.md).
SCOPES = ("sentence", "illness")
REDUCTIONS = ("sum", "mean")
ILLNESS_SETS = ("all", "in-vocabulary")


@dataclass
class AQ27Options:
    """The options of ``corpus-audit probe aq27`` (defaults and why: docs/probe.md)."""

    model: str
    lang: str = "en"
    metric: str = "within_word_l2r"
    scope: str = "sentence"
    reduce: str = "sum"
    period: bool = True
    illnesses: str = "all"
    questionnaire: str | None = None
    lexicon: str | None = None
    n_boot: int = 2000
    seed: int = 0
    device: str = "cpu"
    max_tokens: int = MAX_TOKENS
    threads: int | None = None

    def __post_init__(self) -> None:
        for name, allowed in (("metric", METRICS), ("scope", SCOPES), ("reduce", REDUCTIONS),
                              ("illnesses", ILLNESS_SETS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {getattr(self, name)!r}")

    def score_label(self) -> str:
        return f"PLL ({'sentence' if self.scope == 'sentence' else 'illness pieces'}, {self.reduce})"


def run_aq27(options: AQ27Options, outdir: str | Path, log: Callable[[str], None] = to_stderr,
             progress: bool = False) -> ProbeSummary:
    """Run (or resume) the AQ-27 probe of ``options.model`` into ``outdir``; return its summary."""
    from corpus_audit.embed import model_identity  # names a local folder's weights by their files

    folder = ProbeFolder(check_output_location(outdir))
    questionnaire = load_questionnaire(options.lang, options.questionnaire, options.lexicon)
    lexicon = Path(options.lexicon) if options.lexicon else default_lexicon_path(options.lang)
    with folder_lock(folder.path):
        remove_temporaries(folder.path)
        checkpoints = Checkpoints(folder.checkpoints, log)
        seconds: dict[str, float] = {}
        model: MaskedLM | None = None  # loaded when a chunk must be scored or the vocabulary is needed

        def load() -> MaskedLM:
            nonlocal model
            if model is None:
                log(f"loading {options.model} on {options.device}")
                model = MaskedLM.load(options.model, options.device, log, options.threads)
            return model

        if options.illnesses == "in-vocabulary":
            questionnaire.illnesses = in_vocabulary(questionnaire.illnesses, load().tokenizer, options.lang)
            types = {illness.type for illness in questionnaire.illnesses}
            if types != {"mental", "physical"}:
                raise QuestionnaireError(f"{options.model}: with --illnesses in-vocabulary no "
                                         f"{' or '.join(sorted({'mental', 'physical'} - types))} illness is one "
                                         "token of the model's vocabulary; nothing to compare")
        table = prompts(questionnaire, options.period)
        score_inputs = {"model": [options.model, model_identity(options.model)], "metric": options.metric,
                        "questionnaire": [sha256_file(path) for path in questionnaire.files()],
                        "lexicon": sha256_file(lexicon), "period": options.period, "illnesses": options.illnesses,
                        "lang": options.lang}
        report_inputs = {**score_inputs, "scope": options.scope, "reduce": options.reduce, "n_boot": options.n_boot,
                         "seed": options.seed, "version": __version__}
        # report.html is a view of these (``link`` adds a section to it): not a checkpointed output
        report_outputs = [folder.summary, folder.dimensions, folder.illnesses,
                          *(folder.figure(stem, fmt) for stem in FIGURES for fmt in FIGURE_FORMATS)]
        reason = checkpoints.fresh("score", score_inputs, folder.scores)
        if reason is None:
            import pandas as pd

            log("score: up to date, skipped")
            scored = pd.read_parquet(folder.scores)
            from corpus_audit.probe.report import report_up_to_date

            if (done := report_up_to_date(checkpoints, folder, report_inputs, report_outputs, log)) is not None:
                return done
            model_id = folder.previous_model_id(options.model)
        else:
            log(f"score: {reason}")
            started = time.perf_counter()
            scored, model_id = _score(table, folder, score_inputs, load, options, log, progress)
            checkpoints.mark("score", score_inputs, folder.scores)
            seconds["score"] = time.perf_counter() - started
        summary = _report(scored, folder, options, model_id, questionnaire.folder, seconds, log)
        checkpoints.mark("report", report_inputs, *report_outputs)
    return summary


def _score(table: pd.DataFrame, folder: ProbeFolder, key: dict[str, Any], load: Callable[[], MaskedLM],
           options: AQ27Options, log: Callable[[str], None], progress: bool) -> tuple[pd.DataFrame, str]:
    """scores.parquet: the prompts with the PLL of the sentence and of the illness's pieces; and the model's id."""
    sentences = table["sentence"].drop_duplicates().tolist()
    parts = PLLParts(folder.score_parts, key)
    results = parts.score(sentences, load, options.metric, options.max_tokens, log, progress)
    by_sentence = dict(zip(sentences, results))
    rows = [by_sentence[sentence] for sentence in table["sentence"]]
    spans = [row.span_scores(start, end) for row, start, end in zip(rows, table["illness_start"], table["illness_end"])]
    scored = table.assign(pll_sentence=[row.total for row in rows], n_tokens_sentence=[len(row.scores) for row in rows],
                          pll_illness=[float(sum(span)) for span in spans],
                          n_tokens_illness=[len(span) for span in spans])
    with atomic_path(folder.scores) as tmp:
        scored.to_parquet(tmp, index=False)
    return scored, parts.model_id or options.model


def _report(scored: pd.DataFrame, folder: ProbeFolder, options: AQ27Options, model_id: str, questionnaire: Path,
            seconds: dict[str, float], log: Callable[[str], None]) -> ProbeSummary:
    """The statistics, tables, figures, summary.json and report.html from the scored prompts."""
    import pandas as pd

    from corpus_audit.probe.analysis import analyse, score_column
    from corpus_audit.probe.figures import write_probe_figures
    from corpus_audit.probe.report import write_report

    started = time.perf_counter()
    folder.remove_link(log)
    scores = scored.assign(score=score_column(scored, options.scope, options.reduce))
    results = analyse(scores, options.n_boot, options.seed)
    for path, records in ((folder.dimensions, results["dimensions"]), (folder.illnesses, results["illnesses"])):
        with atomic_path(path) as tmp:
            pd.DataFrame(records).to_csv(tmp, index=False)
    results["counts"] = {"prompts": int(len(scored)), "distinct_sentences": int(scored["sentence"].nunique()),
                         "items": int(scored["item"].nunique()), "noun_phrases": int(scored["noun_phrase"].nunique()),
                         "illnesses": {group: int(scored.loc[scored["illness_type"] == group, "illness"].nunique())
                                       for group in ("mental", "physical")},
                         "mean_tokens": {group: float(scored.loc[scored["illness_type"] == group,
                                                                 f"n_tokens_{options.scope}"].mean())
                                         for group in ("mental", "physical")}}
    write_probe_figures(folder, scores, results["dimensions"], options.score_label())
    seconds["report"] = time.perf_counter() - started
    recorded = {name: value for name, value in asdict(options).items() if name not in RUN_OPTIONS}
    summary = ProbeSummary("aq27", model_id, options.lang, {**recorded, "questionnaire": str(questionnaire)},
                           results, __version__, seconds)
    folder.write_summary(summary)
    write_report(folder)
    return summary
