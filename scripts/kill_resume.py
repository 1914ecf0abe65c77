"""Kill an audit with SIGKILL while it embeds, rerun it into the same folder, and compare with a clean run.

Runs one uninterrupted audit, then TRIALS audits each killed at a random moment of its embedding (uniform over
5-95% of the clean run's embedding time, counted as that time is, from the start of the score stage, when
score-parts/ appears, model loading included) and rerun to the end into the same OUTDIR. A trial passes when the rerun
exits 0 and its sentences.parquet equals the uninterrupted one (the same sentences in the same order, no
duplicate or missing row, bit-identical scores), and so do aq27.csv and the analysis in summary.json.

    python scripts/kill_resume.py CORPUS... --lang en [--model minilm] [--trials 5] [--seed 0] [--chunk N] [--json FILE]

``--chunk N`` scores in chunks of N sentences instead of the package's 4,096 (the same code, a smaller class
attribute), so that a kill on a small corpus lands after several saved chunks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd


def audit_command(corpus: list[str], lang: str, model: str, outdir: Path, chunk: int | None) -> list[str]:
    start = ["-m", "corpus_audit"] if chunk is None else [
        "-c", f"from corpus_audit import cli; from corpus_audit.audit.score_parts import ScoreParts; ScoreParts.chunk = {chunk}; cli.main()"]
    return [sys.executable, *start, "audit", *corpus, "--lang", lang, "--model", model, "-o", str(outdir),
            "--no-progress"]


def killed_run(command: list[str], outdir: Path, delay: float) -> dict:
    """Start the audit, wait until its score stage starts, kill it ``delay`` seconds later."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # score-parts/ appears when the score stage starts, before the model loads (the clean run's embedding time
    # counts from there too); its meta.json only once the first chunk is saved.
    while process.poll() is None and not (outdir / "score-parts").is_dir():
        time.sleep(0.02)
    started = time.monotonic()
    time.sleep(delay)
    if process.poll() is not None:
        raise SystemExit("the audit finished before it was killed: use a bigger corpus or a slower model")
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    return {"killed_after_embedding_began_s": round(time.monotonic() - started, 2),
            "chunks_saved": len(list((outdir / "score-parts").glob("part-*.npy")))}


def compare(outdir: Path, clean_dir: Path) -> dict:
    """What the rerun left, against the clean run."""
    frame, clean = (pd.read_parquet(folder / "sentences.parquet") for folder in (outdir, clean_dir))
    analysis = [json.loads((folder / "summary.json").read_text())["analysis"] for folder in (outdir, clean_dir)]
    return {"rows": len(frame), "duplicate_sentences": int(frame["sentence"].duplicated().sum()),
            "same_sentence_set": set(frame["sentence"]) == set(clean["sentence"]),
            "identical_sentences_parquet": frame.equals(clean),
            "identical_aq27": (outdir / "aq27.csv").read_bytes() == (clean_dir / "aq27.csv").read_bytes(),
            "identical_analysis": analysis[0] == analysis[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="+")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0, help="seed of the random kill points")
    parser.add_argument("--chunk", type=int, default=None, help="sentences per saved score chunk (default: the package's)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="kill-resume-") as tmp:
        clean_dir = Path(tmp) / "clean"
        started = time.monotonic()
        subprocess.run(audit_command(args.corpus, args.lang, args.model, clean_dir, args.chunk), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        summary = json.loads((clean_dir / "summary.json").read_text())
        embedding = summary["score"]["embedding_seconds"]
        results = {"corpus": args.corpus, "model": args.model, "seed": args.seed, "chunk": args.chunk,
                   "clean_run": {"seconds": round(time.monotonic() - started, 1), "embedding_seconds": round(embedding, 1),
                                 "sentences": summary["score"]["sentences_scored"]}, "trials": []}
        print(f"uninterrupted run: {results['clean_run']}")
        for trial in range(1, args.trials + 1):
            outdir = Path(tmp) / f"trial-{trial}"
            command = audit_command(args.corpus, args.lang, args.model, outdir, args.chunk)
            fraction = rng.uniform(0.05, 0.95)
            record = {"trial": trial, "kill_at_fraction_of_embedding": round(fraction, 3),
                      **killed_run(command, outdir, fraction * embedding)}
            rerun = subprocess.run(command, capture_output=True, text=True)
            resumed = [line for line in rerun.stderr.splitlines() if line.startswith("score: resumed")]
            record.update(rerun_exit=rerun.returncode, resumed=resumed[0] if resumed else None,
                          **(compare(outdir, clean_dir) if rerun.returncode == 0 else {}))
            record["passed"] = bool(rerun.returncode == 0 and record["identical_sentences_parquet"]
                                    and record["identical_aq27"] and record["identical_analysis"]
                                    and record["duplicate_sentences"] == 0)
            results["trials"].append(record)
            print(json.dumps(record))
        passed = sum(record["passed"] for record in results["trials"])
        results["passed"] = f"{passed} of {args.trials}"
        print(f"{passed} of {args.trials} trials identical to the uninterrupted run")
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
