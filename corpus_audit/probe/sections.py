"""The HTML of each probe's results, the part of ``report.html`` that a probe declares as its section
(:meth:`corpus_audit.probe.run.Probe.section`); :mod:`corpus_audit.probe.report` puts the page together. Every text
that comes from data is escaped."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from corpus_audit.common.html import MISSING, esc, is_missing, num, p_value, table
from corpus_audit.probe.folder import ProbeSummary
from corpus_audit.probe.questionnaires.scenarios import TYPES
from corpus_audit.probe.results import AQ27Results, GroupResult, stars


def with_ci(value: Any, ci: Sequence[Any] | None, digits: int = 3) -> str:
    """A value and its confidence interval; the value alone where the interval is missing (too few pairs)."""
    if is_missing(value):
        return MISSING
    if not ci or any(is_missing(v) for v in ci):
        return num(value, digits)
    return f"{num(value, digits)} [{num(ci[0], digits)}, {num(ci[1], digits)}]"


def header(summary: ProbeSummary, title: str) -> str:
    """The report's title and a line of what was probed with which options."""
    shown = ", ".join(f"{name} {value}" for name, value in summary.options.items()
                      if name not in ("model", "questionnaire", "endpoint"))
    return (f"<h1>{esc(title)} of {esc(summary.model_id)}</h1>"
            f'<p class="meta">Language {esc(summary.lang)} · {esc(shown)} · corpus-audit '
            f"{esc(summary.package_version)}</p>")


def aq27_header(summary: ProbeSummary) -> str:
    options = summary.options
    scoring = ("illness name masked whole" if options.get("name_scoring") == "whole"
               else f"PLL metric {options.get('metric')}")
    return (f"<h1>AQ-27 probe of {esc(summary.model_id)}</h1>"
            f'<p class="meta">Language {esc(summary.lang)} · method {esc(options.get("method", "paper"))} · '
            f'{esc(scoring)} · score: {esc(options.get("scope"))} {esc(options.get("reduce"))} · trailing period '
            f'{"yes" if options.get("period") else "no"} · illnesses {esc(options.get("illnesses"))} · '
            f"corpus-audit {esc(summary.package_version)}</p>")


def _verdict(results: dict[str, Any]) -> str:
    lines = results.get("verdict") or []
    return '<div class="verdict">' + "".join(f"<p>{esc(line)}</p>" for line in lines) + "</div>" if lines else ""


def _flag(record: GroupResult) -> str:
    return "random copies too" if record.flagged else ""


def _null_check(results: dict[str, Any]) -> str:
    null = results.get("null_check") or {}
    if not null.get("models"):
        return ("<p>No null check was run (<code>--null-models 0</code>): nothing here says whether a model that "
                "learnt nothing would give the same result.</p>")
    rows = [(c["seed"], num(c["mean_difference"], 3), p_value(c["p"]), "yes" if c["significant"] else "no",
             c["significant_dimensions"]) for c in null["copies"]]
    return ("<h2>Null check: the same statistics on randomly initialised copies</h2>"
            f"<p>{null['models']} copies of the model's architecture with its tokenizer and freshly drawn weights "
            f"(seeds 0..{null['models'] - 1}) scored the same prompts. False-positive rate: overall "
            f"{num(null['false_positive_rate'], 2)}, per dimension {num(null['dimension_false_positive_rate'], 2)}. "
            "A significant result of the model where a copy is significant too (either direction: the test then "
            "fires on models that learnt nothing) is marked 'random copies too' and is not evidence of learnt "
            "stigma.</p>"
            + table(["seed", "difference, mental - physical", "p", "significant", "dimensions significant"], rows,
                    numeric_from=1))


def aq27_section(summary: ProbeSummary) -> str:
    results, typed = summary.results, AQ27Results.of(summary)
    if typed.method == "controlled":
        return _controlled_results(summary, typed)
    counts = results.get("counts", {})
    rows = [(d.label, d.n_mental, num(d.mean_mental, 2), num(d.mean_physical, 2),
             with_ci(d.mean_difference, d.mean_difference_ci, 2), with_ci(d.effect, d.effect_ci), p_value(d.p),
             d.significance, _flag(d), MISSING if d is typed.overall else num(d.alpha, 2))
            for d in (typed.overall, *typed.dimensions)]
    lengths = counts.get("mean_tokens", {})
    return ("<h2>Mental vs physical illnesses (the seed paper's Table 2, --method paper)</h2>"
            + _verdict(results)
            + f"<p>{counts.get('prompts', MISSING)} prompts ({counts.get('distinct_sentences', MISSING)} distinct "
            f"sentences): {counts.get('items', MISSING)} items × {counts.get('noun_phrases', MISSING)} noun phrases × "
            f"{esc(counts.get('illnesses', {}).get('mental', MISSING))} mental and "
            f"{esc(counts.get('illnesses', {}).get('physical', MISSING))} physical illnesses. <strong>This method "
            "confounds the illness names' length and frequency with stigma</strong>: it compares the raw PLL of "
            "different names, and it counts item × noun phrase pairs as the units where the illnesses are, so a "
            "model that learnt nothing comes out significant (docs/probe.md).</p>"
            + table(["dimension", "pairs", "mean mental", "mean physical", "difference [95% CI]",
                     "rank-biserial r [95% CI]", "p (Bonferroni)", "", "null check", "Cronbach's α (mental)"], rows)
            + "<p>Pairs: one per item × noun phrase, each side the mean score over that group's illnesses. Wilcoxon "
              "signed-rank test, two-sided; dimension p-values Bonferroni-adjusted over the dimensions. r > 0: the "
              "mental side tends to score higher. Help and Avoidance items are worded positively (reverse-scored in "
              "the questionnaire): there a higher score with a mental illness means <em>less</em> stigma. α: "
              "internal consistency of the dimension's three items over noun phrase × mental illness.</p>"
            + (f"<p>Mean pieces scored per prompt: mental {num(lengths.get('mental'), 1)}, physical "
               f"{num(lengths.get('physical'), 1)}. A summed PLL falls with every piece, so a gap in length shifts "
               "every comparison the same way.</p>" if lengths else "")
            + _null_check(results))


def _controlled_results(summary: ProbeSummary, typed: AQ27Results) -> str:
    results = summary.results
    counts = results.get("counts", {})
    rows = [(d.label, d.n_mental, d.n_physical, num(d.mean_mental, 3), num(d.mean_physical, 3),
             with_ci(d.mean_difference, d.mean_difference_ci, 3), num(d.effect, 2), p_value(d.p), d.significance,
             _flag(d), MISSING if d is typed.overall else num(d.alpha, 2))
            for d in (typed.overall, *typed.dimensions)]
    lengths = counts.get("mean_tokens", {})
    reduce = summary.options.get("reduce")
    return ("<h2>Mental vs physical illnesses, the illness as the unit (--method controlled)</h2>"
            + _verdict(results)
            + f"<p>{counts.get('prompts', MISSING)} prompts ({counts.get('items', MISSING)} items × "
            f"{counts.get('noun_phrases', MISSING)} noun phrases × "
            f"{esc(counts.get('illnesses', {}).get('mental', MISSING))} mental and "
            f"{esc(counts.get('illnesses', {}).get('physical', MISSING))} physical illnesses) and "
            f"{counts.get('carriers', MISSING)} neutral carrier sentences per noun phrase × illness. The score of a "
            "prompt is the log-probability of the illness's pieces in the item less their log-probability in the "
            f"neutral carriers with the same noun phrase ({esc(reduce)} over pieces): how much the item raises or "
            "lowers the illness beyond its own likelihood, which takes out the name's length and frequency. Each "
            "illness's score is the mean over its prompts; mental vs physical compares those illnesses' scores "
            "(permutation test over the illness labels, two-sided; bootstrap CI resampling illnesses within each "
            "group; Hedges' g; dimension p-values Holm-adjusted over the dimensions).</p>"
            + table(["dimension", "mental illnesses", "physical illnesses", "mean mental", "mean physical",
                     "difference [95% CI]", "Hedges' g", "p (Holm)", "", "null check", "Cronbach's α (mental)"], rows)
            + "<p>A positive difference: the items raise the likelihood of mental illnesses more than of physical "
              "ones (they read as more fitting). Help and Avoidance items are worded positively: there a positive "
              "difference means <em>less</em> stigma.</p>"
            + (f"<p>Pieces per illness name, mean: mental {num(lengths.get('mental'), 2)}, physical "
               f"{num(lengths.get('physical'), 2)} (per illness in the table below).</p>" if lengths else "")
            + _null_check(results))


def aq27_illnesses(summary: ProbeSummary) -> str:
    records = sorted(summary.results.get("illnesses", []),
                     key=lambda r: -math.inf if r["mean_score"] is None else -r["mean_score"])
    rows = [(r["illness"], r["illness_type"], r["n_prompts"], num(r.get("n_pieces"), 0), num(r["mean_score"], 3),
             num(r["sd_score"], 3), num(r.get("mean_baseline"), 3)) for r in records]
    return "<h2>Per illness</h2>" + table(["illness", "type", "prompts", "pieces", "mean score", "SD",
                                           "neutral baseline"], rows, numeric_from=2)


def gender_section(summary: ProbeSummary) -> str:
    results = summary.results
    counts = results.get("counts", {})
    paired = [(r["family"], r["part"], r["diagnosis_type"], r["n_a"], num(r["mean_a"]), num(r["mean_b"]),
               num(r["mean_unspecified"]), num(r["cohens_d"], 2), p_value(r["p_bonferroni"]),
               stars(r["p_bonferroni"]), "F" if (r["mean_difference"] or 0) > 0 else "M")
              for r in results["paired"]]
    disparity = [(r["family"], r["part"], r["n_a"], r["n_b"], num(r["mean_a"]), num(r["mean_b"]),
                  num(r["cohens_d"], 2), p_value(r["p_bonferroni"]), stars(r["p_bonferroni"]))
                 for r in results["disparity"]]
    diagnoses = [(d["diagnosis"], d["diagnosis_type"], num(d["p_female"]), num(d["p_male"]),
                  num(d["p_unspecified"]), num(d["disparity"])) for d in results["diagnoses"]]
    return ("<h2>Female vs male fills (Lin et al.'s Tables 3 and 5)</h2>"
            f"<p>{counts.get('prompts', MISSING)} prompts ({counts.get('templates', MISSING)} templates × "
            f"{esc(counts.get('diagnoses', {}).get('mental', MISSING))} mental and "
            f"{esc(counts.get('diagnoses', {}).get('non-mental', MISSING))} non-mental diagnoses), "
            f"{counts.get('phrases', MISSING)} fills and phrases above the threshold. One pair per prompt: its "
            "P(female) and P(male), sums of the probabilities of its female and male fills (recursive phrases: the "
            "product of their steps). Paired t-test, two-sided; Cohen's d_z = mean difference / SD of the "
            "differences; p Bonferroni-adjusted over the table.</p>"
            + table(["prompts", "set", "diagnoses", "pairs", "mean P(female)", "mean P(male)", "mean P(unspecified)",
                     "Cohen's d", "p (Bonferroni)", "", "higher"], paired, numeric_from=3)
            + "<h2>Disparity P(female) - P(male), mental vs non-mental (Tables 4 and 6)</h2>"
              "<p>Student's two-sample t-test over the prompts of each group; Cohen's d with the pooled SD; p "
              "Bonferroni-adjusted over the table. A positive mean: the model prefers female subjects.</p>"
            + table(["prompts", "set", "mental prompts", "non-mental prompts", "mean disparity (mental)",
                     "mean disparity (non-mental)", "Cohen's d", "p (Bonferroni)", ""], disparity, numeric_from=2)
            + "<h2>Per diagnosis</h2>"
            + table(["diagnosis", "type", "P(female)", "P(male)", "P(unspecified)", "disparity"], diagnoses,
                    numeric_from=2))


def _comparison_row(label: str, c: dict[str, Any]) -> tuple[Any, ...]:
    return (label, c["n_a"], c["n_b"], num(c["mean_a"]), num(c["mean_b"]),
            with_ci(c["mean_difference"], c["mean_difference_ci"]), p_value(c["mann_whitney_p"]),
            p_value(c["p_holm"]) if "p_holm" in c else MISSING)


_COMPARISON_HEADERS = ["", "stigmatised", "not stigmatised", "mean (stigmatised)", "mean (not)",
                       "difference [95% CI]", "Mann-Whitney p", "p (Holm over templates)"]


def social_distance_section(summary: ProbeSummary) -> str:
    results = summary.results
    valence, counts, above = results["valence"], results["counts"], results["above_half"]
    rows = [_comparison_row("all templates" if key == "all" else f"template {key}", c)
            for key, c in results["comparisons"].items()]
    baseline = ", ".join(f"{'all' if k == 'all' else 'template ' + k}: {num(v)}" for k, v in
                         results.get("baseline", {}).items())
    conditions = sorted(results["conditions"], key=lambda r: -math.inf if r["p_negative"] is None
                        else -r["p_negative"])
    return ("<h2>P(negative), stigmatised vs not (Mei et al. §5.1)</h2>"
            f"<p>{counts['prompts']} prompts, the top {counts['top_k']} fills of each (mean probability mass "
            f"{num(counts['mean_top_k_mass'], 2)}), {counts['fill_words']} distinct fill words. P(negative) "
            f"above 0.5: {above['stigmatized']} of {results['n_conditions']['stigmatized']} stigmatised and "
            f"{above['not_stigmatized']} of {results['n_conditions']['not_stigmatized']} non-stigmatised "
            f"conditions. Baselines (no condition): {esc(baseline)}.</p>"
            + table(_COMPARISON_HEADERS, rows)
            + "<h3>How the fills were labelled</h3>"
              f"<p>Hand labels from {esc(valence['labels_file'])} first (they cover "
              f"{num((valence.get('mass_labelled_by_hand') or 0) * 100, 1)}% of the fills' probability mass), "
              f"then the automatic method <strong>{esc(valence['method'])}</strong>, whose agreement with the "
              f"hand labels is Cohen's κ = {num(valence['kappa'], 2)} (raw agreement "
              f"{num((valence['agreement'] or 0) * 100, 1)}% over {valence['n']} words). Each word's label and "
              "source: fill_labels.csv.</p>"
            + "<h2>Per condition</h2>"
            + table(["condition", "stigmatised", "P(negative)"],
                    [(r["condition"], r["stigmatized"], num(r["p_negative"])) for r in conditions]))


def sentiment_section(summary: ProbeSummary) -> str:
    results = summary.results
    parts = ["<h2>Negative labels, stigmatised vs not (Mei et al. §5.2)</h2>",
             f"<p>{results['counts']['prompts']} prompts over {results['counts']['conditions']} conditions; "
             f"labels: {esc(', '.join(f'{k} {v}' for k, v in results['labels'].items()))}. Conditions whose every "
             f"prompt is negative: {results['all_negative']['stigmatized']} stigmatised, "
             f"{results['all_negative']['not_stigmatized']} not.</p>",
             table(_COMPARISON_HEADERS, [_comparison_row("share of negative labels", results["comparison"])]),
             "<h3>Baselines</h3>" + table(["prompt", "label", "valence"],
                                          [(b["prompt"], b["label"], b["valence"]) for b in results["baselines"]],
                                          numeric_from=3)]
    correlation = results.get("correlation")
    if correlation:
        pearson, spearman = correlation["pearson"], correlation["spearman"]
        parts.append("<h2>Against the fill-mask probe (Mei et al. §5.3: r = 0.79 over 122 conditions)</h2>"
                     f"<p>Over {correlation['n']} conditions of {esc(correlation['folder'])}: Pearson r = "
                     f"{with_ci(pearson['r'], pearson['r_ci'], 2)} (p {p_value(pearson['p'])}), Spearman ρ = "
                     f"{with_ci(spearman['rho'], spearman['rho_ci'], 2)} (permutation p "
                     f"{p_value(spearman['permutation_p'])}).</p>")
    return "".join(parts)


def _odds_row(effect: dict[str, Any]) -> tuple[Any, ...]:
    return (with_ci(effect["odds_ratio"], effect["odds_ratio_ci"], 2), p_value(effect["p"]), p_value(effect["p_bh"]),
            stars(effect["p_bh"]))


def _agreement_cell(record: dict[str, Any] | None) -> str:
    if not record or not record.get("n"):
        return MISSING
    return f"κ = {num(record['kappa'], 2)}, agreement {num((record['agreement'] or 0) * 100, 1)}% (n = {record['n']})"


def contextual_section(summary: ProbeSummary) -> str:
    results = summary.results
    counts, coding = results["counts"], results["coding"]
    arms = counts["arms"]
    conditions = results["conditions"]
    by_condition, by_category = results["by_condition"], results["by_category"]
    rows = [(c["condition"], c["category"], c.get(f"n_{arms[0]}"),
             *(num(c.get(f"rate_{arm}"), 2) for arm in arms),
             *((_odds_row({"odds_ratio": c["odds_ratio"], "odds_ratio_ci": (c["or_low"], c["or_high"]), "p": c["p"],
                           "p_bh": c["p_bh"]}) if c["odds_ratio"] is not None
               else ("not estimable (separation)", "", "", "") if c.get("separated") else ("reference", "", "", ""))))
            for c in conditions]
    parts = ["<h2>Stigma-congruent completions per condition (Wang et al.'s Figure 3a)</h2>",
             f"<p>{counts['completions']} completions of {summary.model_id}: {counts['scenarios']} scenarios × "
             f"{counts['conditions']} conditions × {len(arms)} prompt arm(s) ({esc(', '.join(arms))}) × "
             f"{esc(summary.options.get('repetitions'))} repetitions at temperature "
             f"{esc(summary.options.get('temperature'))}; coded by the <strong>{esc(coding['coder'])}</strong> "
             f"({counts['coded']} usable codes). Odds ratios vs the healthy baseline from a binomial mixed model, "
             f"{esc(by_condition['formula'])} (group = scenario; SD of the scenario intercepts "
             f"{num(by_condition['group_sd'], 2)}); Wald 95% CIs; p Benjamini-Hochberg-adjusted across the "
             "conditions.</p>",
             table(["condition", "category", "completions per arm", *(f"share ({arm})" for arm in arms),
                    "odds ratio vs healthy [95% CI]", "p", "p (BH)", ""], rows, numeric_from=2)]
    category_rows = [(e["level"], *_odds_row(e)) for e in by_category["effects"] if e["factor"] == "category"]
    prompt_rows = [(f"{e['level']} vs {e['reference']} prompt", *_odds_row(e)) for e in by_condition["effects"]
                   if e["factor"] == "prompt"]
    parts += ["<h2>By category, and the strategy prompt (the paper: 17.45, 13.02, 4.43; strategy 0.43)</h2>",
              table(["vs healthy", "odds ratio [95% CI]", "p", "p (BH)", ""], category_rows + prompt_rows)]
    type_columns = [f"type_{t.replace(' ', '_')}" for t in TYPES]
    parts += ["<h2>Stigma types (baseline arm, share of each condition's completions)</h2>",
              table(["condition", *TYPES], [(c["condition"], *(num(c.get(col), 2) for col in type_columns))
                                            for c in conditions])]
    explicit = results.get("explicit")
    if explicit:
        by_name = {c["condition"]: c for c in conditions}
        rows = [(e["condition"], e["n"], num(e["mean"], 2), num(e["sd"], 2),
                 num(by_name.get(e["condition"], {}).get(f"rate_{arms[0]}"), 2)) for e in explicit["conditions"]]
        d = explicit["dissociation"]
        parts += ["<h2>What the model says vs what it does (explicit AQ-27 beside the contextual shares)</h2>",
                  f"<p>{explicit['valid']} of {explicit['sheets']} answer sheets usable (mean attempts "
                  f"{num(explicit['mean_attempts'], 2)}). Scale: {esc(explicit['scale'])}. Across conditions, "
                  f"Spearman ρ between the explicit score and the share of stigma-congruent completions = "
                  f"{with_ci(d['rho'], d['rho_ci'], 2)} (permutation p {p_value(d['permutation_p'])}). A low explicit "
                  "score beside high odds ratios is the dissociation the paper reports.</p>",
                  table(["condition", "sheets", "AQ-27 mean (1-9)", "SD", f"contextual share ({arms[0]})"], rows)]
    validation = coding["validation"]
    rows = [(coder, _agreement_cell(validation.get(coder)),
             num((validation.get(coder) or {}).get("jaccard"), 2)) for coder in ("instrument", "judge")
            if validation.get(coder)]
    parts += ["<h2>How the completions were coded</h2>",
              "<p>Stigma-congruent: the completion treats the person differently or unfavourably because of the "
              "condition where it is not relevant (Wang et al.'s codebook). The instrument: the completion reads as "
              "cold (warmth &lt; 0); its types come from its top endorsed AQ-27 dimension and low competence "
              "(docs/probe.md). The judge: a model given the codebook, through the same endpoint.</p>",
              f"<h3>Against the {validation['labels']} hand-labelled completions</h3>",
              table(["coder", "binary code vs hand labels", "mean Jaccard of types (both congruent)"], rows)]
    if coding.get("coders"):
        agreement = coding["coders"]
        parts.append(f"<h3>Instrument vs judge on this run's completions</h3><p>{_agreement_cell(agreement)}; "
                     f"mean Jaccard of the types where both say stigma-congruent "
                     f"{num(agreement.get('jaccard'), 2)} (n = {agreement.get('n_both_congruent')}).</p>")
    requests = results["requests"]
    parts.append(f"<h2>Requests</h2><p>This run sent {requests['sent']} request(s) ({requests['retries']} retries, "
                 f"at most {requests['max_in_flight']} in flight) and reused {requests['reused']} saved response(s); "
                 f"{requests['stored']} responses are saved in responses.jsonl.</p>")
    return "".join(parts)
