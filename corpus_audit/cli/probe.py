"""The model-probe commands: ``probe score`` and ``probe aq27`` (a masked language model's pseudo-log-likelihood
of sentences and of the AQ-27 prompts), ``probe gender`` and ``probe social-distance`` (its fill-mask
questionnaires), ``probe sentiment`` (a text classifier), ``probe contextual`` (a chat model's contextual judgements
through an OpenAI-compatible endpoint) and ``link`` (a probe beside the audits of corpora)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from corpus_audit.cli.errors import reports_errors
from corpus_audit.cli.options import (PROGRESS_OPTION, apply_options, log, output_extension, show_progress,
                                      text_field_from, text_field_options, warn)
from corpus_audit.languages import LANGUAGE_CODES
from corpus_audit.probe.folder import ProbeOptionsError
from corpus_audit.probe.models.masked import MAX_TOKENS, METRICS
from corpus_audit.probe.questionnaires.aq27 import ILLNESS_SETS, NAME_SCORINGS, REDUCTIONS, SCOPES
from corpus_audit.probe.questionnaires.aq27 import METHODS as AQ27_METHODS
from corpus_audit.probe.questionnaires.valence import METHODS

if TYPE_CHECKING:
    from corpus_audit.probe.folder import ProbeSummary
    from corpus_audit.probe.run import Probe

MODEL_HELP = ("Masked language model: a Hugging Face hub name (e.g. mental/mental-roberta-base; needs the hub or its "
              "local cache) or a local folder saved with save_pretrained. Safetensors weights only: pickled "
              "checkpoints (pytorch_model.bin) are refused.")
DEVICE_OPTION = click.option("--device", default="cpu", show_default=True, help="cpu, cuda or cuda:N.")
THREADS_OPTION = click.option("--threads", type=click.IntRange(min=1), default=None,
                              help="CPU threads of torch (default: torch's choice). Use 1 where other processes share "
                                   "the cores: it was 13 times faster than 2 on a busy 2-core machine.")
MAX_TOKENS_OPTION = click.option("--max-tokens", type=click.IntRange(min=1), default=MAX_TOKENS, show_default=True,
                                 help="Memory bound: at most this many tokens (masked copies x padded length) per "
                                      "forward pass. Lower it if a GPU runs out of memory; the scores do not change "
                                      "beyond float rounding.")
OUTDIR_OPTION = click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False),
                             help="Output folder (scores.parquet, summary.json, tables, figures, report.html). A "
                                  "rerun resumes or skips finished work.")
LANG_OPTION = click.option("--lang", type=click.Choice(["en"]), default="en", show_default=True,
                           help="Language of the prompts (English only: the papers' prompts are English).")
BOOT_OPTIONS = apply_options([
    click.option("--n-boot", type=click.IntRange(min=100), default=2000, show_default=True,
                 help="Bootstrap replicates of the confidence intervals."),
    click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap."),
])
#: The resampling options of the commands that test with permutations and bootstrap intervals (link, compare).
PERMUTATION_OPTIONS = apply_options([
    click.option("--n-boot", type=click.IntRange(min=100), default=2000, show_default=True,
                 help="Bootstrap replicates of the confidence intervals."),
    click.option("--permutations", type=click.IntRange(min=99), default=9999, show_default=True,
                 help="Shuffles of each permutation test."),
    click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and permutations."),
])

fill_model_options = apply_options([
    click.option("--model", required=True, help=MODEL_HELP), DEVICE_OPTION, MAX_TOKENS_OPTION, THREADS_OPTION,
    PROGRESS_OPTION,
])
masked_model_options = apply_options([
    click.option("--model", required=True, help=MODEL_HELP),
    click.option("--metric", type=click.Choice(METRICS), default="within_word_l2r", show_default=True,
                 help="PLL metric as minicons computes it: within_word_l2r (Kauf & Ivanova 2023; the seed paper's "
                      "PLL-word-l2r: later pieces of the scored token's word are masked too) or original (only the "
                      "scored token is masked)."),
    DEVICE_OPTION, MAX_TOKENS_OPTION, THREADS_OPTION, PROGRESS_OPTION,
])


@click.group("probe")
def probe_group() -> None:
    """Probe language models with questionnaires (pseudo-log-likelihood of masked language models)."""


@probe_group.command("score")
@click.argument("input_path", metavar="INPUT", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              callback=output_extension(".parquet", ".jsonl", ".csv", writes="probe score writes Parquet, JSON Lines "
                                        "or CSV"),
              help="Output file: .parquet, .jsonl or .csv (per-token values as lists, or JSON arrays in CSV).")
@text_field_options("sentence", "Column of the sentences in a .csv, .jsonl or .parquet INPUT (a .txt INPUT has one "
                    "per line).", old_name="--column")
@masked_model_options
@reports_errors("cannot write {output}")
def score_command(input_path: str, output: str, text_field: str | None, old_text_field: str | None, model: str,
                  metric: str, device: str, max_tokens: int, threads: int | None, progress: bool | None) -> None:
    """Score the sentences of INPUT with a masked language model's pseudo-log-likelihood.

    Writes, per sentence, the PLL (sum of the tokens' log-probabilities), the number of tokens and the per-token
    values. An interrupted run resumes from OUTPUT.parts/.
    """
    from corpus_audit.probe.sentences import score_file

    column = text_field_from(text_field, old_text_field, "sentence", "--column")
    table = score_file(model, input_path, output, metric=metric, column=column, device=device,
                       max_tokens=max_tokens, threads=threads, log=log, progress=show_progress(progress))
    click.echo(f"scored {len(table)} sentences (mean PLL {table['pll'].mean():.3f}); wrote {output}")


@probe_group.command("aq27")
@click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False),
              help="Output folder (scores.parquet, summary.json, dimensions.csv, illnesses.csv, figures, "
                   "report.html). A rerun resumes or skips finished work.")
@click.option("--lang", type=click.Choice(LANGUAGE_CODES), default="en", show_default=True,
              help="Language of the prompts: picks the bundled questionnaires/LANG/ and lexicons/LANG/illnesses.csv.")
@masked_model_options
@click.option("--method", type=click.Choice(AQ27_METHODS), default="controlled", show_default=True,
              help="controlled: how much each item raises the illness's log-probability over neutral carrier "
                   "sentences with the same noun phrase (questionnaires/LANG/aq27_carriers.csv), the 44 illnesses "
                   "the units (permutation test over illness labels, Holm over dimensions). paper: the seed paper's "
                   "raw PLL comparison paired by item x noun phrase; it confounds the names' length and frequency "
                   "with stigma (a random model comes out significant). See docs/probe.md.")
@click.option("--name-scoring", type=click.Choice(NAME_SCORINGS), default="pll", show_default=True,
              help="How the illness's name is scored. pll: its pieces as the sentence's PLL scores them (--metric; "
                   "minicons-compatible: each word of a name of several words is scored with the others visible, "
                   "which gives the name away whatever the item says). whole: the name masked as one unit, log "
                   "P(name | rest of the sentence), summed over its pieces unless --reduce says otherwise; only "
                   "the names are scored, not the sentences; --method controlled only. See docs/probe.md.")
@click.option("--scope", type=click.Choice(SCOPES), default=None,
              help="--method paper: what is scored, the whole filled sentence (default; the seed paper's minicons "
                   "sentence score) or only the illness's pieces in the context of the sentence. The controlled "
                   "method always scores the illness's pieces.")
@click.option("--reduce", type=click.Choice(REDUCTIONS), default=None,
              help="Sum of the pieces' log-probabilities or their mean per piece. Default: mean for --method "
                   "controlled (a long name weighs no more), sum for --method paper (the PLL as the paper used it).")
@click.option("--period/--no-period", default=True, show_default=True,
              help="End each prompt with a full stop (the items are written with one).")
@click.option("--illnesses", type=click.Choice(ILLNESS_SETS), default="all", show_default=True,
              help="all: the 22 mental and 22 physical illnesses of the seed paper's list; in-vocabulary: those "
                   "whose name (less an article) is one token of the model (the paper kept 18 'in the models' "
                   "vocabulary').")
@click.option("--questionnaire", type=click.Path(exists=True, file_okay=False), default=None,
              help="Folder with aq27.csv, noun_phrases.csv and illnesses.csv instead of the bundled "
                   "questionnaires/LANG/ (an edited copy).")
@click.option("--lexicon", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Illness lexicon that gives each illness its type (default: the bundled lexicons/LANG/"
                   "illnesses.csv).")
@click.option("--n-boot", type=click.IntRange(min=100), default=2000, show_default=True,
              help="Bootstrap replicates of the confidence intervals.")
@click.option("--permutations", type=click.IntRange(min=99), default=9999, show_default=True,
              help="Permutations of the illness labels per test (--method controlled).")
@click.option("--null-models", type=click.IntRange(min=0), default=3, show_default=True,
              help="Null check: score this many randomly initialised copies of the model (same architecture and "
                   "tokenizer, seeds 0..N-1) and run the same statistics; a result they also produce is flagged. "
                   "Each copy costs as much as the model's own scoring; 0 turns the check off.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and permutations.")
@reports_errors("cannot write to {outdir}")
def aq27_command(outdir: str, **settings: object) -> None:
    """Put the AQ-27 to a masked language model: items x noun phrases x illnesses, each filled prompt scored
    with PLL; mental vs physical illnesses compared overall and per stigma dimension (seed paper §3.1).

    Default (--method controlled): each illness's log-probability raised or lowered by the items over neutral
    carrier sentences, the illnesses the units (permutation test, bootstrap CI, Holm over dimensions), and a null
    check on randomly initialised copies of the model. --method paper: the paper's Wilcoxon tests paired by item x
    noun phrase. Cronbach's alpha per dimension, the paper's Figures 1 and 2, per-illness scores and
    report.html. See docs/probe.md.
    """
    from corpus_audit.probe.questionnaires.aq27 import AQ27Probe
    from corpus_audit.probe.results import AQ27Results

    summary = _run_probe(AQ27Probe, outdir, settings)
    results = AQ27Results.of(summary)
    click.echo(f"{results.prompts} prompts, method {results.method}")
    for line in results.verdict:
        click.echo(line)
    for record in results.dimensions:
        click.echo(f"  {record.dimension:<14} {_number(record.mean_difference, '+9.3f')}  {record.p_name} = "
                   f"{_number(record.p, '.3g'):<9} {record.significance:<4}"
                   f"{' (random copies too)' if record.flagged else '':<20} alpha = "
                   f"{_number(record.alpha, '.2f')}")
    click.echo(f"wrote {outdir}/report.html")


@probe_group.command("compare")
@click.argument("folders", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False),
              help="Output folder (compare.json, compare.csv, compare.png/.svg, report.html).")
@PERMUTATION_OPTIONS
@reports_errors("cannot write to {outdir}")
def compare_command(folders: tuple[str, ...], outdir: str, n_boot: int, permutations: int, seed: int) -> None:
    """Compare the AQ-27 probes of several models (FOLDERS: their output folders, probed with the same options):
    each model's mental - physical gap overall and per dimension in one table, figure and report, and whether
    the gaps differ between models (per-illness differences, permutation test over illness labels, Holm over
    every pair and dimension). See docs/probe.md.
    """
    from corpus_audit.probe.compare import compare

    result = compare(folders, outdir, n_boot=n_boot, permutations=permutations, seed=seed, log=log)
    for line in result["verdict"]:
        click.echo(line)
    click.echo(f"wrote {outdir}/report.html")


@probe_group.command("gender")
@OUTDIR_OPTION
@LANG_OPTION
@fill_model_options
@click.option("--questionnaire", type=click.Path(exists=True, file_okay=False), default=None,
              help="Folder with gender_prompts.csv, gender_diagnoses.csv and gender_words.csv instead of the bundled "
                   "questionnaires/LANG/ (an edited copy).")
@click.option("--threshold", type=click.FloatRange(0, 1, max_open=True), default=0.01, show_default=True,
              help="A fill counts when its probability exceeds this (Lin et al.: 0.01).")
@click.option("--top-k", type=click.IntRange(min=1), default=100, show_default=True,
              help="Fills asked of the model per prompt: 100 holds every fill above 0.01.")
@click.option("--steps", type=click.IntRange(min=1), default=3, show_default=True,
              help="Steps of the recursive fill of noun phrases (AQ-27 prompts; Lin et al.: 3).")
@click.option("--branch", type=click.IntRange(min=1), default=10, show_default=True,
              help="Fills followed at each recursive step (Lin et al.: the top 10).")
@reports_errors("cannot write to {outdir}")
def gender_command(outdir: str, **settings: object) -> None:
    """Gendered fill-mask (Lin et al. 2022): who does the model put in the subject's place of sentences about
    mental and non-mental diagnoses? Probabilities of female, male and unspecified fills, paired t-tests F vs M per
    set, disparity mental vs non-mental, Cohen's d, Bonferroni, figures and report.html. See docs/probe.md.
    """
    from corpus_audit.probe.questionnaires.gender import GenderProbe
    from corpus_audit.probe.results import GenderResults

    summary = _run_probe(GenderProbe, outdir, settings)
    for test in GenderResults.of(summary).tests:
        click.echo(f"{test.family:<14} {test.diagnosis_type:<10} P(female) {_number(test.p_female, '.3f')} vs "
                   f"P(male) {_number(test.p_male, '.3f')}, d = {_number(test.cohens_d, '+.2f')}, p_bonf = "
                   f"{_number(test.p_bonferroni, '.3g')}")
    click.echo(f"wrote {outdir}/report.html")


@probe_group.command("social-distance")
@OUTDIR_OPTION
@LANG_OPTION
@fill_model_options
@click.option("--questionnaire", type=click.Path(exists=True, file_okay=False), default=None,
              help="Folder with social_distance_conditions.csv, _items.csv, _templates.csv and _labels.csv instead of "
                   "the bundled questionnaires/LANG/ (an edited copy).")
@click.option("--top-k", type=click.IntRange(min=1), default=50, show_default=True,
              help="Fills kept per prompt, with their probabilities (Mei et al.: 50).")
@click.option("--valence", type=click.Choice(METHODS), default="lexicons", show_default=True,
              help="How fill words without a hand label get one: lexicons (VADER, then TextBlob where VADER says "
                   "neutral), vader, textblob, or instrument (this project's instrument on the word's baseline "
                   "prompts). Agreement with the hand labels: docs/probe.md.")
@click.option("--labels", type=click.Path(exists=True, dir_okay=False), default=None,
              help="CSV of hand labels (columns word, label: positive, negative, neutral or irrelevant) used before "
                   "the automatic method (default: the bundled social_distance_labels.csv).")
@click.option("--hand-labels/--no-hand-labels", default=True, show_default=True,
              help="Use the hand labels first; without, every word is labelled by --valence.")
@click.option("--instrument-model", default=None,
              help="Embedding model of the instrument (--valence instrument; default: the language's default).")
@click.option("--axes", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Axes file of the instrument (--valence instrument; default: the shipped or cached axes).")
@BOOT_OPTIONS
@reports_errors("cannot write to {outdir}")
def social_distance_command(outdir: str, **settings: object) -> None:
    """Social Distance Scale over 93 stigmatised and 29 non-stigmatised conditions (Mei et al. 2023): the top fills
    of each prompt, labelled by valence; P(negative) per condition; stigmatised vs not, per template and overall;
    figures and report.html. See docs/probe.md.
    """
    from corpus_audit.probe.questionnaires.social_distance import SocialDistanceProbe
    from corpus_audit.probe.results import SocialDistanceResults

    results = SocialDistanceResults.of(_run_probe(SocialDistanceProbe, outdir, settings))
    overall = results.overall
    click.echo(f"P(negative): stigmatised {_number(overall.mean_stigmatized, '.3f')}, not "
               f"{_number(overall.mean_not_stigmatized, '.3f')}, difference {_number(overall.mean_difference, '+.3f')}"
               f"; above 0.5: {results.above_half_stigmatized} of {results.stigmatized_conditions} stigmatised")
    click.echo(f"valence: {results.valence_method}, kappa vs hand labels {_number(results.valence_kappa, '.2f')}; "
               f"wrote {outdir}/report.html")


@probe_group.command("sentiment")
@OUTDIR_OPTION
@LANG_OPTION
@click.option("--model", required=True,
              help="Text-classification model (a sentiment classifier): hub name or local folder, safetensors only.")
@DEVICE_OPTION
@THREADS_OPTION
@click.option("--questionnaire", type=click.Path(exists=True, file_okay=False), default=None,
              help="Folder with social_distance_conditions.csv and sentiment_templates.csv (an edited copy).")
@click.option("--negative-label", default=None,
              help="The model's negative label, when its label names do not say (e.g. LABEL_0).")
@click.option("--social-distance", type=click.Path(exists=True, file_okay=False), default=None,
              help="A social-distance probe folder: correlate its P(negative) with the share of negative labels.")
@BOOT_OPTIONS
@reports_errors("cannot write to {outdir}")
def sentiment_command(outdir: str, **settings: object) -> None:
    """Sentiment classifier on "They are people who have [are] CONDITION." (Mei et al. 2023): share of negative labels
    per condition, stigmatised vs not, and the correlation with a Social Distance probe. See docs/probe.md.
    """
    from corpus_audit.probe.questionnaires.sentiment import SentimentProbe
    from corpus_audit.probe.results import SentimentResults

    results = SentimentResults.of(_run_probe(SentimentProbe, outdir, settings))
    click.echo(f"share of negative labels: stigmatised {_number(results.comparison.mean_stigmatized, '.3f')}, not "
               f"{_number(results.comparison.mean_not_stigmatized, '.3f')}")
    if results.correlated_conditions is not None:
        click.echo(f"against the fill-mask P(negative): Pearson r = {_number(results.pearson_r, '+.2f')} over "
                   f"{results.correlated_conditions} conditions")
    click.echo(f"wrote {outdir}/report.html")


@probe_group.command("contextual")
@click.option("--endpoint", required=True,
              help="Base URL of an OpenAI-compatible chat API, e.g. http://localhost:8000/v1 (vLLM, llama.cpp "
                   "server, Ollama's /v1, a hosted API); /chat/completions is added.")
@click.option("--model", required=True, help="Model name the endpoint serves (the probed chat model).")
@OUTDIR_OPTION
@click.option("--lang", type=click.Choice(LANGUAGE_CODES), default="en", show_default=True,
              help="Language of the scenarios, instructions and AQ-27 (questionnaires/LANG/).")
@click.option("--questionnaire", type=click.Path(exists=True, file_okay=False), default=None,
              help="Folder with contextual.csv, contextual_conditions.csv, contextual_prompts.csv, "
                   "contextual_labels.csv, aq27.csv and noun_phrases.csv (an edited copy of questionnaires/LANG/).")
@click.option("--repetitions", type=click.IntRange(min=1), default=10, show_default=True,
              help="Completions per scenario x condition x prompt arm, and answer sheets per condition (the paper: "
                   "10).")
@click.option("--temperature", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Sampling temperature of the probed model (the paper: 1.0).")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=120, show_default=True,
              help="Longest completion asked for (max_tokens of each request).")
@click.option("--strategy/--no-strategy", default=True, show_default=True,
              help="Ask every scenario also with the strategy system prompt (the second factor; doubles the "
                   "contextual requests).")
@click.option("--explicit/--no-explicit", default=True, show_default=True,
              help="Put the AQ-27 to the model per condition (integer answers 1-9 in JSON), beside the contextual "
                   "arm.")
@click.option("--json-mode/--no-json-mode", default=False, show_default=True,
              help="Ask for JSON-object mode (response_format) in the explicit and judge requests; not every server "
                   "supports it. Answers are parsed tolerantly either way.")
@click.option("--parse-retries", type=click.IntRange(min=0), default=3, show_default=True,
              help="Times an unusable JSON answer (explicit arm, judge) is asked again, each a new request.")
@click.option("--judge-model", default=None,
              help="Also code every completion by this model through the same endpoint (temperature 0, the "
                   "codebook in questionnaires/LANG/contextual_prompts.csv); agreement with the instrument is "
                   "reported.")
@click.option("--coder", type=click.Choice(["instrument", "judge"]), default="instrument", show_default=True,
              help="Whose codes the statistics use (judge needs --judge-model).")
@click.option("--instrument-model", default=None,
              help="Embedding model of the instrument that codes completions (default: the language's default).")
@click.option("--axes", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Axes file of the instrument, with its judgement gate (default: the shipped or cached axes).")
@click.option("--labels", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Hand-labelled completions that validate the coders (default: questionnaires/LANG/"
                   "contextual_labels.csv).")
@click.option("--permutations", type=click.IntRange(min=99), default=9999, show_default=True,
              help="Shuffles of the permutation test of explicit vs contextual across conditions.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and permutations.")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="Environment variable holding the API key, sent as a Bearer token and written nowhere; unset: "
                   "no key is sent (local servers).")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True,
              help="Requests in flight at once.")
@click.option("--retries", type=click.IntRange(min=0), default=5, show_default=True,
              help="Retries of a request after a rate limit (429), a server error (5xx), a timeout or a dropped "
                   "connection, with exponential backoff that honours Retry-After.")
@click.option("--backoff", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Seconds before the first retry, doubled at each next one (at most 120).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=120.0, show_default=True,
              help="Seconds one request may take.")
@click.option("--budget", type=click.IntRange(min=0), default=None,
              help="Send at most this many requests in this run (retries included); what completed is saved and a "
                   "rerun goes on without paying twice.")
@PROGRESS_OPTION
@reports_errors("cannot write to {outdir}")
def contextual_command(outdir: str, **settings: object) -> None:
    """Contextual judgements of a chat model (Wang et al. 2026): scenarios x health conditions (and a healthy
    baseline) completed by the model, coded stigma-congruent or not by the instrument (and a judge model); odds
    ratios vs healthy from a binomial mixed model (scenario random), the strategy prompt as a second factor, the
    explicit AQ-27 beside it, figures and report.html. See docs/probe.md.
    """
    from corpus_audit.probe.questionnaires.contextual import ContextualProbe
    from corpus_audit.probe.results import ContextualResults

    results = ContextualResults.of(_run_probe(ContextualProbe, outdir, settings))
    for effect in results.by_category:
        click.echo(f"{effect.factor} {effect.level:<14} OR {_number(effect.odds_ratio, '.2f')} "
                   f"[{_number(effect.ci[0], '.2f')}, {_number(effect.ci[1], '.2f')}], p_BH = "
                   f"{_number(effect.p_bh, '.3g')}")
    click.echo(f"requests: {results.requests_sent} sent this run, {results.requests_reused} reused; wrote "
               f"{outdir}/report.html")


def _run_probe(probe: type[Probe[Any]], outdir: str, settings: dict[str, Any]) -> ProbeSummary:
    """Run ``probe`` with the command's options: options that do not go together are a usage error (exit 2), as
    click's own checks."""
    from corpus_audit.probe.run import run_probe

    progress = show_progress(settings.pop("progress", False))
    try:
        return run_probe(probe(probe.options_type(**settings)), outdir, log=log, progress=progress)
    except ProbeOptionsError as error:
        raise click.UsageError(str(error)) from None


def _number(value: float | None, spec: str) -> str:
    """A statistic as text; None (a NaN in summary.json) as 'nan'."""
    return "nan" if value is None else format(value, spec)


@click.command("link")
@click.argument("folders", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False),
                metavar="AUDIT_OUTDIR... PROBE_OUTDIR")
@click.option("--labels", default=None,
              help="Comma-separated names of the audits, in order (default: their folder names).")
@PERMUTATION_OPTIONS
@reports_errors("cannot write the link")
def link_command(folders: tuple[str, ...], labels: str | None, n_boot: int, permutations: int, seed: int) -> None:
    """Put the audits of one or more corpora beside a probe of a model: how far does the corpus explain the model?

    Per AQ-27 dimension: the corpus's mental - physical difference (BIAS-map share; the direct dimension score
    when the audit has one) beside the model's. Per illness: corpus frequency, warmth, competence (and dimension
    scores) beside the model's per-illness score. Spearman correlations with bootstrap CIs and permutation tests;
    link.json, tables and a figure go into PROBE_OUTDIR, and its report.html gains a section.
    """
    from corpus_audit.probe.link import link

    if len(folders) < 2:
        raise click.UsageError("give at least one audit folder and then the probe folder")
    names = [name.strip() for name in labels.split(",")] if labels else None
    if names is not None and len(names) != len(folders) - 1:
        raise click.BadParameter(f"{len(names)} label(s) for {len(folders) - 1} audit(s)", param_hint="--labels")
    result = link(list(folders[:-1]), folders[-1], labels=names, n_boot=n_boot, permutations=permutations, seed=seed,
                  log=warn)
    for line in result["verdict"]:
        click.echo(line)
    click.echo(f"wrote {folders[-1]}/link.json and the report section in {folders[-1]}/report.html")


COMMANDS = (probe_group, link_command)
