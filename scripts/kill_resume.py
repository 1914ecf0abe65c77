"""Kill an audit with SIGKILL while it embeds, rerun it into the same folder, and compare with a clean run.

Runs one uninterrupted audit, then TRIALS audits each killed at a random moment of its score stage (uniform
over 10-90% of the clean run's score time) and rerun to the end.
A trial passes when its sentences.parquet equals the uninterrupted one: the same sentences in the same
order, no duplicate or missing rows, identical scores.

    python scripts/kill_resume.py CORPUS --lang en [--model e5-small] [--trials 5] [--seed 0]
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


def audit_command(corpus: str, lang: str, model: str, outdir: Path) -> list[str]:
    return [sys.executable, "-m", "corpus_audit", "audit", corpus, "--lang", lang, "--model", model, "-o", str(outdir),
            "--no-progress"]


def killed_run(command: list[str], outdir: Path, delay: float) -> float:
    """Start the audit, wait until its score stage has begun, kill it ``delay`` seconds later."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    while process.poll() is None and not (outdir / "score-parts").exists():
        time.sleep(0.05)
    time.sleep(delay)
    if process.poll() is not None:
        raise SystemExit("the audit finished before it was killed: use a bigger corpus or a slower model")
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--model", default="e5-small")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        clean_dir = Path(tmp) / "clean"
        subprocess.run(audit_command(args.corpus, args.lang, args.model, clean_dir), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        clean = pd.read_parquet(clean_dir / "sentences.parquet")
        score_seconds = json.loads((clean_dir / "summary.json").read_text())["seconds"]["score"]
        print(f"uninterrupted run: {len(clean)} sentences, score stage {score_seconds:.1f} s")
        passed = 0
        for trial in range(1, args.trials + 1):
            outdir = Path(tmp) / f"trial-{trial}"
            command = audit_command(args.corpus, args.lang, args.model, outdir)
            killed_after = killed_run(command, outdir, rng.uniform(0.1, 0.9) * score_seconds)
            saved = len(list((outdir / "score-parts").glob("part-*.npy")))
            rerun = subprocess.run(command, capture_output=True, text=True)
            resumed = [line for line in rerun.stderr.splitlines() if line.startswith("score: resumed")]
            frame = pd.read_parquet(outdir / "sentences.parquet")
            same = rerun.returncode == 0 and frame.equals(clean) and not frame["sentence"].duplicated().any()
            passed += same
            print(f"trial {trial}: killed after {killed_after:.1f} s with {saved} chunk(s) saved; "
                  f"{resumed[0] if resumed else 'no chunk reused'}; identical to the clean run: {same}")
        print(f"{passed} of {args.trials} trials identical")


if __name__ == "__main__":
    main()
