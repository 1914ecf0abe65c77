"""Audit a corpus with ``--engine local`` and ``--engine ray`` and compare what they wrote.

Passes when both keep the same sentences (filtered.parquet equal: rows, tags, doc ids, sentence indices,
order), report the same filter counts, score the same distinct sentences, and their scores differ by at most
1e-5. Prints the comparison as JSON, with the share of sentences and documents kept.

    python scripts/engine_equality.py CORPUS --lang en [--model M] [--backend onnx-int8] [--ray-concurrency N]
        [--keep DIR]
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
import pyarrow.parquet as pq

TOLERANCE = 1e-5
# Keys of the filter summary that depend on the run, not on the data.
VOLATILE = ("seconds", "megabytes_per_second", "output", "engine", "ray_workers")


def run_audit(corpus: str, lang: str, model: str | None, backend: str, outdir: Path, engine: list[str]) -> float:
    command = [sys.executable, "-m", "corpus_audit", "audit", corpus, "--lang", lang, "-o", str(outdir),
               "--no-progress", "--backend", backend, "--no-embedding-cache",  # each engine embeds for itself
               *(["--model", model] if model else []), *engine]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def filter_counts(outdir: Path) -> dict:
    summary = json.loads((outdir / "filtered.summary.json").read_text(encoding="utf-8"))
    return {key: value for key, value in summary.items() if key not in VOLATILE}


def compare(local: Path, ray: Path) -> dict:
    sentences = [pd.read_parquet(folder / "sentences.parquet") for folder in (local, ray)]
    scores = [frame[["warmth", "competence"]].to_numpy() for frame in sentences]
    rest = [frame.drop(columns=["warmth", "competence", "quadrant"]) for frame in sentences]
    counts = filter_counts(local)
    difference = float(np.abs(scores[0] - scores[1]).max()) if len(scores[0]) else 0.0
    report = {
        "filtered_equal": pq.read_table(local / "filtered.parquet").equals(pq.read_table(ray / "filtered.parquet")),
        "filter_counts_equal": counts == filter_counts(ray),
        "scored_sentences_equal": rest[0].equals(rest[1]),
        "max_score_difference": difference,
        "quadrants_equal": bool((sentences[0]["quadrant"] == sentences[1]["quadrant"]).all()),
        "megabytes": round(counts["bytes_read"] / 1e6, 1),
        "documents_read": counts["documents_read"],
        "documents_matched": counts["documents_matched"],
        "sentences_segmented": counts["sentences_segmented"],
        "sentences_kept": counts["sentences_kept"],
        "sentences_scored": len(sentences[0]),
    }
    report["passed"] = (report["filtered_equal"] and report["filter_counts_equal"] and report["scored_sentences_equal"]
                        and difference <= TOLERANCE)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--model", default=None)
    parser.add_argument("--backend", default="auto", help="the audits' --backend (e.g. onnx-int8)")
    parser.add_argument("--ray-concurrency", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None,
                        help="write the two audits here instead of a temporary folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corpus-audit-engines-") as tmp:
        root = args.keep or Path(tmp)
        ray_engine = ["--engine", "ray"]
        if args.ray_concurrency:
            ray_engine += ["--ray-concurrency", str(args.ray_concurrency)]
        seconds = {name: run_audit(args.corpus, args.lang, args.model, args.backend, root / name, engine)
                   for name, engine in (("local", []), ("ray", ray_engine))}
        report = {"corpus": args.corpus, **compare(root / "local", root / "ray"),
                  "seconds": {name: round(value, 1) for name, value in seconds.items()}}
    print(json.dumps(report, indent=2))
    sys.exit(0 if report["passed"] else 1)


if __name__ == "__main__":
    main()
