"""Everything but embedding in `corpus-audit audit` (start-up, filter, analysis, figures, report), this source tree vs
a baseline source tree, alternated in one run (target: <= 5 s on the Reddit demo).

Each run is a fresh `python -m corpus_audit audit CORPUS --lang en -o OUTDIR` with PYTHONPATH set to one tree; the
overhead is the run's wall time minus the embedding seconds its score.json records (the scorer's whole call: model
load and encoding). The baseline is any checkout of the package, e.g. `git worktree add /tmp/base dcd0bdf`.

    python benchmarks/audit_overhead.py [--baseline /tmp/base] [--corpus demo/reddit_sample_en.jsonl.gz] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def audit(tree: Path, corpus: Path, outdir: Path) -> dict[str, float]:
    """Wall seconds, embedding seconds and stage seconds of one fresh audit with the package of ``tree``."""
    started = time.perf_counter()
    # Run from the tree: ``-m`` puts the working folder first on the import path.
    subprocess.run([sys.executable, "-m", "corpus_audit", "audit", str(corpus.resolve()), "--lang", "en", "-o",
                    str(outdir), "--no-progress"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)})
    wall = time.perf_counter() - started
    embedding = json.loads((outdir / "score.json").read_text())["embedding_seconds"]
    stages = json.loads((outdir / "summary.json").read_text())["seconds"]
    return {"wall": wall, "embedding": embedding, "overhead": wall - embedding,
            **{f"stage {name}": value for name, value in stages.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, default=None, help="another source tree of corpus-audit")
    parser.add_argument("--corpus", type=Path, default=HERE / "demo" / "reddit_sample_en.jsonl.gz")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs of each; the median counts")
    args = parser.parse_args()
    trees = {"this tree": HERE, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="corpus-audit-bench-") as folder:
        audit(HERE, args.corpus, Path(folder) / "warm")  # the page cache, the ONNX export and compiled pre-filter
        for repeat in range(args.repeats):
            for name, tree in trees.items():  # alternated, so that a busy spell hits both
                runs[name].append(audit(tree, args.corpus, Path(folder) / f"{name}-{repeat}".replace(" ", "-")))
    medians = {}
    for name, results in runs.items():
        medians[name] = {key: sorted(result[key] for result in results)[len(results) // 2] for key in results[0]}
        print(f"{name} ({trees[name]}): " + ", ".join(f"{key} {value:.2f} s" for key, value in medians[name].items()))
    if args.baseline:
        print(f"overhead baseline / this tree: {medians['baseline']['overhead'] / medians['this tree']['overhead']:.2f}x")


if __name__ == "__main__":
    main()
