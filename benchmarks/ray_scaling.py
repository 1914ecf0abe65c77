"""Scaling of the Ray engine on this machine: the filter stage with 1 and 2 workers, and embedding per worker.

Filter: a JSON Lines corpus of about ``--megabytes`` MB, the ``--source`` corpus repeated with fresh ids
(written to a temporary folder, never the repository), filtered by ``--engine ray`` with 1 and then 2 filter
actors, ``--repeats`` times in alternation. Speed-up: 1-worker time over 2-worker time, per repeat and for
the best times (other processes on the machine slow runs close in time alike). Every run must keep the same
rows. ``--compare-local`` times the local engine's 1 and 2 worker processes in the same alternation (a
`corpus-audit filter` command each, so its times include about 2 s of start-up).

Embedding: ``--sentences`` distinct sentences of the filtered corpus (illness mention masked as in the audit)
scored by 1 and then 2 Ray actors of one CPU each (one GPU each with ``--device cuda``; ``minilm`` unless
``--model``), in chunks of ``--chunk`` sentences; the rate counts the sentences after each actor's first
chunk, from the first result to the last, so actor start-up and model loading are left out.

CPU seconds of all processes (the driver, Ray's own and the workers) are printed beside the wall times: on a
machine shared with other work they give the cost per MB or per sentence that wall times cannot. Ray starts
in this process as the commands start it (all CPUs of the machine). The load average is printed before each
measurement; measure when it is low.

    python benchmarks/ray_scaling.py --source /work/shared/corpora/reddit_mh_27subs_en.jsonl.gz --megabytes 200
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import ray

from corpus_audit.corpus.filter import CorpusSpec
from corpus_audit.corpus.select import mask_mentions
from corpus_audit.engines import EngineOptions, filter_corpus
from corpus_audit.engines.ray import RayScorer, connect
from corpus_audit.languages import LANGUAGES
from corpus_audit.score.scorer import ModelSpec

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


class CpuMeter:
    """CPU seconds of this process and its descendants (Ray's raylet and workers, the local engine's commands)
    while the meter runs, read from /proc every ``interval`` seconds: Ray's workers are not reaped into their
    parent's counts, so their time is read while they live (up to one interval of a process that ends is lost)."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.seconds = 0.0

    def __enter__(self) -> CpuMeter:
        self.started = float(Path("/proc/uptime").read_text().split()[0])
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self._sample()
        self.seconds = sum(self.last[pid] - self.first[pid] for pid in self.last)

    def _run(self) -> None:
        while not self.stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        ticks = os.sysconf("SC_CLK_TCK")
        parents, times = {}, {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # fields after the command name: state, ppid, ... utime, stime (14, 15 of proc(5)) ... starttime (22)
            pid = int(entry.name)
            parents[pid] = int(fields[1])
            times[pid] = ((int(fields[11]) + int(fields[12])) / ticks, int(fields[19]) / ticks)
        tree = [os.getpid()]
        while tree:
            pid = tree.pop()
            cpu, start = times[pid]
            self.first.setdefault(pid, 0.0 if start >= self.started else cpu)  # born while metering: all its time
            self.last[pid] = cpu
            tree.extend(child for child, parent in parents.items() if parent == pid and child in times)


def time_filter(corpus: Path, out: Path, lang: str, engine: str, workers: int) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of this process (with Ray: the driver), CPU seconds of all processes)."""
    started, cpu = time.perf_counter(), time.process_time()
    with CpuMeter() as meter:
        if engine == "ray":  # in this process, where Ray is running already
            filter_corpus(CorpusSpec((str(corpus),)), out, lang, engine=EngineOptions("ray", concurrency=workers))
        else:  # in a command of its own: its worker processes must not be forks of a process running Ray
            command = [sys.executable, "-m", "corpus_audit", "filter", str(corpus), "--lang", lang, "-o", str(out),
                       "--workers", str(workers), "--no-progress"]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started, time.process_time() - cpu, meter.seconds


def bench_filter(corpus: Path, folder: Path, lang: str, repeats: int, engines: tuple[str, ...]) -> Path:
    size = corpus.stat().st_size / 1e6
    times: dict[tuple[str, int], list[float]] = {(engine, workers): [] for engine in engines for workers in (1, 2)}
    reference = None
    for repeat in range(repeats):
        for engine in engines:
            for workers in (1, 2):
                print(f"  filter, {engine}, {workers} worker(s), run {repeat + 1}: {load()}", flush=True)
                out = folder / f"filtered-{engine}-{workers}.parquet"
                seconds, driver, cpu = time_filter(corpus, out, lang, engine, workers)
                table = pq.read_table(out)
                reference = reference or table
                assert table.equals(reference), "runs kept different rows"
                merged = ""
                if engine == "ray":
                    merged = f", driver {driver:.1f} CPU s ({table.num_rows / driver:.0f} rows/s)"
                print(f"    {seconds:.1f} s, {size / seconds:.2f} MB/s, {table.num_rows} sentences kept; all processes "
                      f"{cpu:.1f} CPU s ({size / cpu:.2f} MB per CPU s){merged}", flush=True)
                times[engine, workers].append(seconds)
    for engine in engines:
        one, two = min(times[engine, 1]), min(times[engine, 2])
        per_run = ", ".join(f"{a / b:.2f}x" for a, b in zip(times[engine, 1], times[engine, 2]))
        print(f"filter ({engine}) of {size:.0f} MB: 1 worker {one:.1f} s ({size / one:.2f} MB/s), "
              f"2 workers {two:.1f} s ({size / two:.2f} MB/s); speed-up {one / two:.2f}x (per repeat: {per_run})")
    return folder / "filtered-ray-1.parquet"


def bench_embedding(filtered: Path, lang: str, model: str | None, sentences: int, chunk: int, device: str) -> None:
    frame = pq.read_table(filtered).to_pandas().drop_duplicates("sentence").head(sentences)
    texts = [mask_mentions(s, o, LANGUAGES[lang].mask) for s, o in zip(frame["sentence"], frame["term_offsets"])]
    chunks = [texts[start:start + chunk] for start in range(0, len(texts), chunk)]

    for workers in (1, 2):
        print(f"  embedding, {workers} worker(s): {load()}", flush=True)
        scorer = RayScorer(ModelSpec(lang, model, device), EngineOptions("ray", concurrency=workers))
        with CpuMeter() as startup:  # start-up alone: the actors start and load the model
            list(scorer.score_chunks([texts[:1]] * workers))
        started = time.perf_counter()
        with CpuMeter() as meter:
            stamps = [time.perf_counter() for _ in scorer.score_chunks(chunks)]
        embedding = meter.seconds - startup.seconds
        # Each actor's first chunk includes its start-up; count from the first result on, less the chunks that
        # came with it (one per actor).
        counted = len(texts) - sum(len(c) for c in chunks[:workers])
        rate = counted / (stamps[-1] - stamps[workers - 1])
        unit = "1 GPU" if device == "cuda" else "1 CPU"
        print(f"embedding ({scorer.model_id}), {workers} worker(s) of {unit}: {len(texts)} sentences in "
              f"{stamps[-1] - started:.1f} s (first result after {stamps[0] - started:.1f} s); "
              f"steady {rate:.0f} sentences/s, {rate / workers:.0f} per worker; "
              f"{embedding:.1f} CPU s after start-up ({startup.seconds:.1f} CPU s): "
              f"{len(texts) / embedding:.0f} sentences per CPU s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="JSON Lines corpus (.jsonl or .jsonl.gz)")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--megabytes", type=float, default=150)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=6000)
    parser.add_argument("--chunk", type=int, default=256)
    parser.add_argument("--model", default=None)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cuda: one GPU per embedding worker")
    parser.add_argument("--skip-embedding", action="store_true")
    parser.add_argument("--compare-local", action="store_true", help="also time the local engine's 1 and 2 workers")
    args = parser.parse_args()
    connect(EngineOptions("ray"))  # once for all runs, as `corpus-audit filter --engine ray` starts it
    print(f"Ray {ray.__version__}, {int(ray.cluster_resources()['CPU'])} CPUs", flush=True)
    with tempfile.TemporaryDirectory(prefix="corpus-audit-ray-bench-") as tmp:
        folder = Path(tmp)
        corpus = folder / "corpus.jsonl"
        documents = build_corpus(args.source, corpus, args.megabytes)
        size = corpus.stat().st_size / 1e6
        print(f"corpus: {size:.0f} MB, {documents} documents from {args.source.name}", flush=True)
        engines = ("ray", "local") if args.compare_local else ("ray",)
        filtered = bench_filter(corpus, folder, args.lang, args.repeats, engines)
        if not args.skip_embedding:
            bench_embedding(filtered, args.lang, args.model, args.sentences, args.chunk, args.device)


if __name__ == "__main__":
    main()
