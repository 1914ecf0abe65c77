"""Scaling of the Ray engine on this machine: the filter stage with 1 and 2 workers, and embedding per worker.

Filter: a JSON Lines corpus of about ``--megabytes`` MB, the ``--source`` corpus repeated with fresh ids
(written to a temporary folder, never the repository), filtered by ``--engine ray`` with 1 and then 2 filter
actors, ``--repeats`` times in alternation; the speed-up is the best 1-worker time over the best 2-worker
time of this run (other processes on the machine slow both alike). Every run must keep the same rows.
``--compare-local`` times the local engine's 1 and 2 worker processes in the same alternation (a
`corpus-audit filter` command each, so its times include about 2 s of start-up).

Embedding: ``--sentences`` distinct sentences of the filtered corpus (illness mention masked as in the audit)
scored by 1 and then 2 Ray actors of one CPU each (``minilm`` unless ``--model``), in chunks of
``--chunk`` sentences; the rate counts the sentences after each actor's first chunk, from the first result to
the last, so actor start-up and model loading are left out (they are printed apart).

Ray starts in this process as the commands start it (all CPUs of the machine). Prints the machine's load
average before each measurement; measure when it is low.

    python benchmarks/ray_scaling.py --source /work/shared/corpora/reddit_mh_27subs_en.jsonl.gz --megabytes 150
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import ray

from corpus_audit.audit import MASKS, mask_mentions
from corpus_audit.engines import EngineOptions
from corpus_audit.filtering import CorpusSpec, filter_corpus
from corpus_audit.ray_engine import RayScorer, connect

DEFAULT_SOURCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpus_reddit_sample_en.jsonl.gz"


def build_corpus(source: Path, target: Path, megabytes: float) -> int:
    """Write ``source``'s records again and again, each with a fresh id, until ``megabytes``; return the count."""
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    written = 0
    with open(target, "w", encoding="utf-8") as out:
        while out.tell() < megabytes * 1e6:
            record = records[written % len(records)]
            out.write(json.dumps({**record, "id": f"{record.get('id', 'doc')}-{written}"}, ensure_ascii=False) + "\n")
            written += 1
    return written


def load() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def time_filter(corpus: Path, out: Path, lang: str, engine: str, workers: int) -> float:
    started = time.perf_counter()
    if engine == "ray":  # in this process, where Ray is running already
        filter_corpus(CorpusSpec((str(corpus),)), out, lang, engine=EngineOptions("ray", concurrency=workers))
    else:  # in a command of its own: its worker processes must not be forks of a process running Ray
        subprocess.run([sys.executable, "-m", "corpus_audit", "filter", str(corpus), "--lang", lang, "-o", str(out),
                        "--workers", str(workers), "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def bench_filter(corpus: Path, folder: Path, lang: str, repeats: int, engines: tuple[str, ...]) -> Path:
    size = corpus.stat().st_size / 1e6
    best: dict[tuple[str, int], float] = {}
    reference = None
    for repeat in range(repeats):
        for engine in engines:
            for workers in (1, 2):
                print(f"  filter, {engine}, {workers} worker(s), run {repeat + 1}: {load()}", flush=True)
                out = folder / f"filtered-{engine}-{workers}.parquet"
                seconds = time_filter(corpus, out, lang, engine, workers)
                table = pq.read_table(out)
                reference = reference or table
                assert table.equals(reference), "runs kept different rows"
                print(f"    {seconds:.1f} s, {size / seconds:.2f} MB/s, {table.num_rows} sentences kept", flush=True)
                best[engine, workers] = min(best.get((engine, workers), seconds), seconds)
    for engine in engines:
        one, two = best[engine, 1], best[engine, 2]
        print(f"filter ({engine}) of {size:.0f} MB: 1 worker {one:.1f} s ({size / one:.2f} MB/s), "
              f"2 workers {two:.1f} s ({size / two:.2f} MB/s); speed-up {one / two:.2f}x")
    return folder / "filtered-ray-1.parquet"


def bench_embedding(filtered: Path, lang: str, model: str | None, sentences: int, chunk: int) -> None:
    from corpus_audit.embedders import load_embedder
    from corpus_audit.scm.store import axes_for

    frame = pq.read_table(filtered).to_pandas().drop_duplicates("sentence").head(sentences)
    texts = [mask_mentions(s, list(t), MASKS[lang]) for s, t in zip(frame["sentence"], frame["terms"])]
    chunks = [texts[start:start + chunk] for start in range(0, len(texts), chunk)]

    def load_model():
        embedder = load_embedder(model, lang=lang)
        return embedder, axes_for(embedder, lang)

    for workers in (1, 2):
        print(f"  embedding, {workers} worker(s): {load()}", flush=True)
        scorer = RayScorer(load_model, EngineOptions("ray", concurrency=workers))
        started = time.perf_counter()
        stamps = [time.perf_counter() for _ in scorer.score_chunks(chunks)]
        # Each actor's first chunk includes its start-up; count from the first result on, less the chunks that
        # came with it (one per actor).
        counted = len(texts) - sum(len(c) for c in chunks[:workers])
        rate = counted / (stamps[-1] - stamps[workers - 1])
        print(f"embedding ({scorer.model_id}), {workers} worker(s) of 1 CPU: {len(texts)} sentences in "
              f"{stamps[-1] - started:.1f} s (first result after {stamps[0] - started:.1f} s); "
              f"steady {rate:.0f} sentences/s, {rate / workers:.0f} per worker", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="JSON Lines corpus (.jsonl or .jsonl.gz)")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--megabytes", type=float, default=150)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=6000)
    parser.add_argument("--chunk", type=int, default=256)
    parser.add_argument("--model", default=None)
    parser.add_argument("--skip-embedding", action="store_true")
    parser.add_argument("--compare-local", action="store_true", help="also time the local engine's 1 and 2 workers")
    args = parser.parse_args()
    connect(EngineOptions("ray"))  # once for all runs, as `corpus-audit filter --engine ray` starts it
    print(f"Ray {ray.__version__}, {int(ray.cluster_resources()['CPU'])} CPUs", flush=True)
    with tempfile.TemporaryDirectory(prefix="corpus-audit-ray-bench-") as tmp:
        folder = Path(tmp)
        corpus = folder / "corpus.jsonl"
        documents = build_corpus(args.source, corpus, args.megabytes)
        print(f"corpus: {corpus.stat().st_size / 1e6:.0f} MB, {documents} documents from {args.source.name}", flush=True)
        engines = ("ray", "local") if args.compare_local else ("ray",)
        filtered = bench_filter(corpus, folder, args.lang, args.repeats, engines)
        if not args.skip_embedding:
            bench_embedding(filtered, args.lang, args.model, args.sentences, args.chunk)


if __name__ == "__main__":
    main()
