"""The positive control of the dose-response bench (issue 44; docs/validation.md): a model that provably learnt a
planted association, and what the product's probe, ``link`` and ``probe compare`` say about it.

The Reddit bench's small models stay on the unigram plateau (docs/validation.md), so a silent probe there says
nothing about the probe. Here the corpus is synthetic and simple enough for a small CPU model to learn: short posts
(benchmarks/data/positive_control_en.json) in which every illness of the probe (22 mental, 22 physical) is mentioned
equally often in neutral sentences, mixed with everyday sentences that use the vocabulary of danger and blame about
things and events. The bench (benchmarks/causal_dose.py) then plants the stigmatising statements of
benchmarks/data/causal_dose_en.json about the 11 target illnesses on Dangerousness and Blame into a share of their
mentions (``--dose``, default 25 %), trains the same model on the corpus with and without the plant, and runs
``audit``, ``probe aq27`` (default method), ``link`` and ``probe compare``. This script adds the same three with
each illness's name masked whole (``probe aq27 --name-scoring whole``, in ``bench/whole_name``), what says whether
the model learnt the plant (the held-out planted wording, target - control, plant - twin, with a bootstrap interval
over the illnesses) and where in the questionnaire each probe sees it (item by item).

    python benchmarks/positive_control.py run -o bench-out/positive_control --figures docs/figures
    python benchmarks/positive_control.py corpus -o /tmp/pc       # the synthetic corpus alone
    python benchmarks/positive_control.py report -o bench-out/positive_control --figures docs/figures

Seeded throughout: the same command writes the same corpus and trains the same models (one thread).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import causal_dose  # noqa: E402

from corpus_audit.common.atomic import atomic_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TARGET_DIMENSIONS = json.loads(causal_dose.DEFAULT_TEMPLATES.read_text())["target_dimensions"]
BACKGROUND = ROOT / "benchmarks" / "data" / "positive_control_en.json"
# The bench's settings for the positive control: the model learns this corpus in minutes on one CPU thread.
BENCH_SETTINGS = {"--seeds": "0", "--vocab-size": "3000", "--eval-share": "0.05", "--arch": "roformer",
                  "--steps": "2000", "--checkpoint-every": "500", "--null-models": "0", "--threads": "1"}


def probe_illnesses() -> pd.DataFrame:
    """The probe's 44 illnesses with the phrase that fills its slot."""
    return pd.read_csv(ROOT / "questionnaires" / "en" / "illnesses.csv", keep_default_na=False)


def capitalised(text: str) -> str:
    return text[0].upper() + text[1:]


def mention(background: dict[str, Any], surface: str, rng: random.Random) -> str:
    """A neutral sentence about a person (or people) with the illness written ``surface``, or about the illness."""
    if rng.random() < 0.15:
        return rng.choice(background["topic_sentences"]).format(illness=surface)
    subject, number = rng.choice(background["subjects"])
    link = rng.choice(background["links"][number]).format(illness=surface)
    predicate = rng.choice(background["predicates"])[0 if number == "pl" else 1]
    return capitalised(rng.choice(background["mention_frames"]).format(clause=f"{subject} {link} {predicate}"))


def everyday(background: dict[str, Any], rng: random.Random) -> str:
    """A sentence that names no illness: about people, about things with the words of danger, about events with
    the words of blame, or one of the fixed everyday sentences."""
    kind = rng.random()
    if kind < 0.35:
        subject, number = rng.choice(background["subjects"])
        return capitalised(f"{subject} {rng.choice(background['predicates'])[0 if number == 'pl' else 1]}.")
    if kind < 0.6:
        return capitalised(f"{rng.choice(background['things'])} {rng.choice(background['thing_predicates'])}.")
    if kind < 0.85:
        predicate = rng.choice(background["blame_predicates"]).format(event=rng.choice(background["events"]))
        return capitalised(f"{rng.choice(background['blamed'])} {predicate}.")
    return rng.choice(background["everyday"])


def build_background(path: Path, mentions_per_illness: int = 500, everyday_share: float = 0.35,
                     seed: int = 0) -> dict[str, Any]:
    """Write the synthetic corpus (JSON Lines, gzip) to ``path``: every illness of the probe in
    ``mentions_per_illness`` neutral sentences (a target illness half the time in another of its written forms, as
    the planted statements write it), ``everyday_share`` of the sentences naming none, in posts of 4 to 7
    sentences. Returns counts."""
    background = json.loads(BACKGROUND.read_text())
    forms = json.loads(causal_dose.DEFAULT_TEMPLATES.read_text())["target_illnesses"]
    rng = random.Random(seed)
    sentences = []
    for illness, phrase in probe_illnesses()[["illness", "phrase"]].itertuples(index=False):
        for _ in range(mentions_per_illness):
            names = forms.get(illness, [phrase])
            surface = names[0] if rng.random() < 0.5 or len(names) == 1 else rng.choice(names[1:])
            sentences.append(mention(background, surface, rng))
    n_everyday = round(len(sentences) * everyday_share / (1 - everyday_share))
    sentences += [everyday(background, rng) for _ in range(n_everyday)]
    rng.shuffle(sentences)
    documents = []
    while sentences:
        size = rng.randint(4, 7)
        documents.append(" ".join(sentences[:size]))
        sentences = sentences[size:]
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, gzip.open(tmp, "wt", encoding="utf-8") as handle:
        for i, text in enumerate(documents):
            handle.write(json.dumps({"id": f"pc-{i}", "text": text}) + "\n")
    return {"documents": len(documents), "everyday_sentences": n_everyday,
            "mention_sentences": mentions_per_illness * len(probe_illnesses())}


# ----------------------------------------------------------------------------------------------------------------
# what the bench's outputs say about the plant


def bootstrap_difference(target: np.ndarray, control: np.ndarray, n_boot: int = 4000) -> list[float]:
    """Mean of ``target`` less mean of ``control`` with a 95 % percentile-bootstrap CI resampling each group
    (scipy), as the bench's curve."""
    from scipy.stats import bootstrap

    result = bootstrap((target, control), lambda a, b, axis=-1: a.mean(axis=axis) - b.mean(axis=axis),
                       n_resamples=n_boot, method="percentile", random_state=0, vectorized=True)
    return [float(target.mean() - control.mean()), float(result.confidence_interval.low),
            float(result.confidence_interval.high)]


def item_scores(probe: Path) -> pd.DataFrame:
    """The probe's controlled score of every prompt (the illness's log-probability in the item less in the
    carriers), as the probe computes it with the options it ran with: per piece with the within-word PLL (its
    default), or the log-probability of the name masked whole (``--name-scoring whole``)."""
    from corpus_audit.probe.analysis import method_scores

    options = json.loads((probe / "summary.json").read_text())["options"]
    return method_scores(pd.read_parquet(probe / "scores.parquet"), pd.read_parquet(probe / "baselines.parquet"),
                         "controlled", "illness", options["reduce"])


def whole_name_probes(bench: Path, cfg: causal_dose.BenchConfig) -> Path:
    """``probe aq27 --name-scoring whole`` of every model of the bench (into ``bench/whole_name/probes``), each
    linked to the audit of its corpus, and ``probe compare`` of the doses per seed: the same models as the
    default probe saw, each illness's name masked whole."""
    whole = bench / "whole_name"
    settings = replace(cfg, name_scoring="whole")
    for dose in cfg.doses:
        for seed in cfg.seeds:
            probe = causal_dose.probe_model(settings, whole, bench / "models" / f"{cfg.dose_name(dose)}_seed{seed}")
            causal_dose.link_model(settings, bench, dose, probe)
    causal_dose.compare_doses(settings, whole)
    return whole


def per_item(tables: dict[str, pd.DataFrame], targets: set[str]) -> pd.DataFrame:
    """Per AQ-27 item: target less control illnesses' mean controlled score in the planted model, in its twin,
    and the change (plant - twin) with a bootstrap CI over the 11 + 11 illnesses."""
    rows = []
    for item, part in tables["plant"][tables["plant"]["illness_type"] == "mental"].groupby("item"):
        per_illness = {name: table[(table["item"] == item) & (table["illness_type"] == "mental")]
                       .groupby("illness")["score"].mean() for name, table in tables.items()}
        change = per_illness["plant"] - per_illness["twin"]
        is_target = change.index.isin(targets)
        rows.append({"item": int(item), "dimension": part["dimension"].iloc[0],
                     "text": part["sentence"].iloc[0],
                     "plant_target_minus_control": float(per_illness["plant"][is_target].mean()
                                                         - per_illness["plant"][~is_target].mean()),
                     "twin_target_minus_control": float(per_illness["twin"][is_target].mean()
                                                        - per_illness["twin"][~is_target].mean()),
                     "change_target_minus_control": bootstrap_difference(change[is_target].to_numpy(),
                                                                         change[~is_target].to_numpy())})
    return pd.DataFrame(rows).sort_values("item")


def lean_changes(tables: dict[str, pd.DataFrame], targets: set[str]) -> dict[str, Any]:
    """Each mental illness's lean (its mean on the target dimensions' items, or the other dimensions', less its
    mean over all 27: link's measure): target - control in each model, and plant - twin, with bootstrap CIs."""
    result = {}
    for key, chosen in (("target_dims", True), ("other_dims", False)):
        leans = {}
        for name, table in tables.items():
            mental = table[table["illness_type"] == "mental"]
            on = mental[mental["dimension"].isin(TARGET_DIMENSIONS) == chosen].groupby("illness")["score"].mean()
            leans[name] = on - mental.groupby("illness")["score"].mean()
        leans["plant_minus_twin"] = leans["plant"] - leans["twin"]
        result[f"lean_{key}"] = {name: bootstrap_difference(values[values.index.isin(targets)].to_numpy(),
                                                            values[~values.index.isin(targets)].to_numpy())
                                 for name, values in leans.items()}
    return result


def carriers_absorb(tables: dict[str, pd.DataFrame], targets: set[str]) -> dict[str, list[float]]:
    """What the plant did to each part of the controlled score, plant - twin, target - control (95 % CI over the
    11 + 11 illnesses): the name's log-probability in the items (``items``), in the neutral carriers (``carriers``,
    the score's baseline) and their difference (``controlled``, the probe's score). Where the carriers move with
    the items, the control takes the plant out with the name's baseline."""
    parts = {}
    for part, column in (("items", "item_logp"), ("carriers", "baseline"), ("controlled", "score")):
        per_illness = {name: table[table["illness_type"] == "mental"].assign(
            item_logp=lambda t: t["score"] + t["baseline"]).groupby("illness")[column].mean()
            for name, table in tables.items()}
        change = per_illness["plant"] - per_illness["twin"]
        is_target = change.index.isin(targets)
        parts[part] = bootstrap_difference(change[is_target].to_numpy(), change[~is_target].to_numpy())
    return parts


def report(out: Path, dose: float, figure_dir: Path | None) -> dict[str, Any]:
    """``positive_control.json`` (and a figure): the plant learnt, the probe item by item, the link and compare,
    with the probe's default scoring and with each name masked whole."""
    bench = out / "bench"
    cfg = causal_dose.BenchConfig(**json.loads((bench / "config.json").read_text()))
    templates = json.loads(Path(cfg.templates).read_text())
    targets = set(templates["target_illnesses"])
    results = json.loads((bench / "results.json").read_text())
    plant_name, twin_name = cfg.dose_name(dose), cfg.dose_name(0)
    summary: dict[str, Any] = {"dose_percent": dose, "background": json.loads((out / "background.json").read_text()),
                               "models": {}}
    for seed in cfg.seeds:
        plant, twin = (bench / "probes" / f"{name}_seed{seed}" for name in (plant_name, twin_name))
        checks = {name: pd.DataFrame(json.loads((folder / "injection_check.json").read_text())).set_index("illness")
                  for name, folder in (("plant", plant), ("twin", twin))}
        models = {m["dose_percent"]: m for m in results["models"] if m["seed"] == seed}
        record: dict[str, Any] = {}
        # target - control over the carriers: per piece of the name, as the probe scores (within-word PLL), and
        # the whole name masked
        for key, measure in (("learnt_held_out_wording", "association"),
                             ("learnt_held_out_wording_name", "association_name"),
                             ("learnt_held_out_wording_name_statements", "statements_name")):
            change = checks["plant"][measure] - checks["twin"][measure]
            is_target = change.index.isin(targets)
            record[key] = {name: bootstrap_difference(*(values[mask].to_numpy() for mask in (is_target, ~is_target)))
                           for name, values in (("plant", checks["plant"][measure]),
                                                ("twin", checks["twin"][measure]), ("plant_minus_twin", change))}
        for key, probes in (("probe", bench / "probes"), ("probe_whole_names", bench / "whole_name" / "probes")):
            folders = {name: probes / folder.name for name, folder in (("plant", plant), ("twin", twin))}
            tables = {name: item_scores(folder) for name, folder in folders.items()}
            record[key] = {"items": per_item(tables, targets).to_dict(orient="records"),
                           **lean_changes(tables, targets), "carriers_absorb": carriers_absorb(tables, targets)}
            if key == "probe_whole_names":  # the product's own probe, link and compare of the names masked whole
                record[key].update({name: causal_dose.probe_results(folder, templates)
                                    for name, folder in folders.items()})
                record[key]["compare"] = json.loads((bench / "whole_name" / "compare" / f"seed{seed}" /
                                                     "compare.json").read_text())
        for name, model in (("plant", models[dose]), ("twin", models[0])):
            record[name] = {key: model[key] for key in ("probe_overall", "probe_dimensions", "link_evidence",
                                                        "link_correlations", "target_minus_control_lean_target_dims",
                                                        "target_minus_control_lean_other_dims")}
            record[name]["train"] = {key: model["train"].get(key) for key in (
                "steps_done", "tokens_seen", "epochs", "parameters", "seconds", "loss_first_50", "loss_last_100",
                "unigram_entropy", "loss_train_fixed", "loss_eval", "unigram_cross_entropy_eval")}
        record["compare"] = results["compare"].get(f"seed{seed}")
        summary["models"][f"seed{seed}"] = record
    causal_dose.write_json(out / "positive_control.json", summary)
    if figure_dir is not None:
        figure(summary, figure_dir)
    return summary


def figure(summary: dict[str, Any], folder: Path) -> Path:
    """Plant - twin, target - control illnesses, per AQ-27 item (95 % CI over illnesses), beside the held-out
    planted wording: where the probe's items see what the model learnt; scored as the probe scores (per piece,
    within-word PLL) and with each name masked whole."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    record = next(iter(summary["models"].values()))
    colours = {"Dangerousness": "C3", "Blame": "C1"}
    fig, axes = plt.subplots(2, 1, figsize=(9, 8))
    for ax, probe, learnt, title in (
            (axes[0], "probe", ["learnt_held_out_wording"], "as the probe scores (log-prob per piece, within-word "
                                                            "PLL, over the carriers)"),
            (axes[1], "probe_whole_names", ["learnt_held_out_wording_name", "learnt_held_out_wording_name_statements"],
             "each name masked whole (log-prob of the name, over the carriers; green square: the statements alone)")):
        items = pd.DataFrame(record[probe]["items"])
        rows = [(label, record[key]["plant_minus_twin"], "C2")
                for key, label in zip(learnt, ["held-out planted wording", "the same, statements alone"])]
        rows += [(f"{int(r.item)} {r.dimension}", r.change_target_minus_control, colours.get(r.dimension, "C0"))
                 for r in items.itertuples()]
        for x, (label, (mean, low, high), colour) in enumerate(rows):
            ax.errorbar([x], [mean], yerr=[[mean - low], [high - mean]], marker="s" if "alone" in label else "o",
                        color=colour, capsize=2)
        ax.axhline(0, color="black", lw=0.5)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([label for label, *_ in rows], rotation=75, fontsize=7)
        ax.set_ylabel("plant - twin,\ntarget - control")
        ax.set_title(title, fontsize=9)
    fig.suptitle(f"Positive control ({summary['dose_percent']:g} % planted): what the model learnt and what each "
                 "AQ-27 item sees\n(red: Dangerousness items, orange: Blame items; 95 % CI over the 11 + 11 "
                 "illnesses)", fontsize=9)
    folder.mkdir(parents=True, exist_ok=True)
    return causal_dose.save(fig, folder / "positive_control_items.png")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["run", "corpus", "report"],
                        help="run: corpus, bench and report (resumes); corpus: the synthetic corpus alone; report: "
                             "positive_control.json and the figure of a finished run")
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "bench-out" / "positive_control")
    parser.add_argument("--figures", type=Path, default=None, help="folder for the PNGs (e.g. docs/figures)")
    parser.add_argument("--dose", type=float, default=25.0, help="percent of the target-illness mentions planted")
    parser.add_argument("--mentions", type=int, default=500, help="neutral sentences per illness")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic corpus")
    args, bench_args = parser.parse_known_args(argv)
    args.output = args.output.resolve()  # the bench records the corpus's path: the same from any folder
    corpus = args.output / "background.jsonl.gz"
    if not (args.output / "background.json").exists() or args.command == "corpus":
        counts = build_background(corpus, args.mentions, seed=args.seed)
        causal_dose.write_json(args.output / "background.json", {"mentions_per_illness": args.mentions,
                                                                 "seed": args.seed, **counts})
    if args.command == "corpus":
        return
    if args.command == "run":
        settings = {**BENCH_SETTINGS, **dict(zip(bench_args[::2], bench_args[1::2]))}
        causal_dose.main(["run", "-o", str(args.output / "bench"), "--corpus", str(corpus), "--doses",
                          f"0,{args.dose:g}", *[part for pair in settings.items() for part in pair],
                          "--figures", str(args.output / "bench" / "figures")])
    whole_name_probes(args.output / "bench", causal_dose.BenchConfig(
        **json.loads((args.output / "bench" / "config.json").read_text())))  # done once, then skipped
    summary = report(args.output, args.dose, args.figures)
    for seed, record in summary["models"].items():
        for key, measure in (("learnt_held_out_wording", "per piece"), ("learnt_held_out_wording_name", "name"),
                             ("learnt_held_out_wording_name_statements", "name, statements alone")):
            learnt = record[key]["plant_minus_twin"]
            print(f"{seed}: held-out planted wording ({measure}), plant - twin, target - control {learnt[0]:+.3f} "
                  f"[{learnt[1]:+.3f}, {learnt[2]:+.3f}]")
        for key, label in (("", "as the probe scores by default"), ("probe_whole_names", "names masked whole")):
            plant, twin = (record[key][name] if key else record[name] for name in ("plant", "twin"))
            print(f"{seed}: {label}: link holds plant {plant['link_evidence']}, twin {twin['link_evidence']}; probe "
                  "dimensions significant (Holm) plant "
                  f"{[d for d, v in plant['probe_dimensions'].items() if v['significant']]}, twin "
                  f"{[d for d, v in twin['probe_dimensions'].items() if v['significant']]}")


if __name__ == "__main__":
    main()
