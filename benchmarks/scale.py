"""Throughput and peak memory of `corpus-audit filter` and `corpus-audit audit [--max-sentences N]` on generated
corpora of growing size (default 100 MB and 1 GB): memory must stay flat as the input grows.

Each corpus mixes the shared English corpora record by record, each record with a fresh id, into one
uncompressed JSON Lines file under a temporary folder (never the repository). Each command runs under
``/usr/bin/time -v`` ("Maximum resident set size": the largest single process, the parent or one worker)
while this script samples the summed RSS of the whole process tree every 0.2 s (workers included).

    python benchmarks/scale.py [--sizes 100 1000] [--max-sentences 50000] [--model minilm] [--json FILE]
        [--source A.jsonl.gz --source B.jsonl.gz] [--keep] [--no-embedding-cache] [--engine local|ray]
        [--distinct] [--cascade auto|on|off]

The 1 GB audit of docs/scaling.md (issue 43: every sentence scored, no --max-sentences, repeats made distinct):

    python benchmarks/scale.py --sizes 1000 --max-sentences 0 --distinct --cascade on --no-embedding-cache \
        --source SHARED/reddit_mh_27subs_en.jsonl.gz --source SHARED/civil_comments_toxic_spans_en.jsonl.gz \
        --source SHARED/codiesp_clinical_cases_en.jsonl.gz --json bench-out/scale_1gb.json

Each command's wall and CPU seconds (user + system, children included), the 1-minute load average at its end,
and the audit's own stage times (summary.json), with the filter's MB/s and the embedding's sentences/s.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from itertools import cycle
from pathlib import Path

SHARED = Path("/work/shared/corpora")
DEFAULT_SOURCES = [SHARED / "reddit_mh_27subs_en.jsonl.gz", SHARED / "codiesp_clinical_cases_en.jsonl.gz"]
PAGE = 4096


#: Sentence ends, where ``build(distinct=True)`` puts a copy's marker.
SENTENCE_END = re.compile(r"([.!?]+)(?=\s|$)")


def distinct_copy(text: str, copy: int) -> str:
    """``text`` as its ``copy``-th repeat (0: unchanged): the marker ``(copy N)`` before every sentence end and at
    the end of the text, so every sentence of a repeat is new to the audit's de-duplication and its encoder."""
    if copy == 0:
        return text
    marked = SENTENCE_END.sub(rf" (copy {copy})\1", text.rstrip())
    return marked if SENTENCE_END.search(text.rstrip()[-1:] or "") else f"{marked} (copy {copy})"


def build(sources: list[Path], target: Path, megabytes: float, distinct: bool = False) -> int:
    """Write ``megabytes`` of JSON Lines to ``target``, taking records from ``sources`` in turn, each with a fresh
    id; return the number of records. ``distinct``: the repeats of a record carry their copy's marker
    (:func:`distinct_copy`); else they repeat its text, which the audit scores once."""
    corpora = [[json.loads(line) for line in gzip.open(source, "rt", encoding="utf-8")] for source in sources]
    position = [0] * len(corpora)
    written = 0
    with open(target, "w", encoding="utf-8") as handle:
        for which in cycle(range(len(corpora))):
            if handle.tell() >= megabytes * 1e6:
                break
            copy, index = divmod(position[which], len(corpora[which]))
            record = dict(corpora[which][index], id=f"scale-{written}")
            if distinct and isinstance(record.get("text"), str):
                record["text"] = distinct_copy(record["text"], copy)
            position[which] += 1
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            written += 1
    return written


def tree_rss(root: int) -> int:
    """Summed resident memory (bytes) of ``root`` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except OSError:
            pass
    return total


def measured(command: list[str]) -> dict:
    """Run ``command`` under /usr/bin/time -v, sampling the process tree's RSS; return the measures."""
    process = subprocess.Popen(["/usr/bin/time", "-v", *command], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(process.pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = process.communicate()
    done.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{stderr[-3000:]}")
    maximum = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr).group(1))
    elapsed = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", stderr).group(1)
    seconds = sum(float(part) * 60 ** power for power, part in enumerate(reversed(elapsed.split(":"))))
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): (\S+)", stderr).group(1)) for kind in ("User", "System"))
    return {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), "max_rss_mb": round(maximum / 1024, 1),
            "tree_rss_mb": round(peak / 2**20, 1), "load_average": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[100, 1000], help="corpus sizes in MB")
    parser.add_argument("--source", type=Path, action="append", default=None)
    parser.add_argument("--max-sentences", type=int, default=50_000, help="0: no --max-sentences")
    parser.add_argument("--distinct", action="store_true",
                        help="make every repeat of a record's sentences new (a copy marker after each sentence end)")
    parser.add_argument("--cascade", default="auto", help="the audit's --cascade (auto, on, off)")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--backend", default="auto", help="the audit's --backend (auto, onnx, onnx-int8, torch)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the corpora and outputs (printed folder)")
    parser.add_argument("--no-embedding-cache", action="store_true",
                        help="audit without the embedding cache (every sentence embedded, as on a first audit)")
    parser.add_argument("--engine", default="local", help="audit and filter engine (local or ray)")
    args = parser.parse_args()
    cli = [sys.executable, "-m", "corpus_audit"]
    folder = Path(tempfile.mkdtemp(prefix="corpus-audit-scale-"))
    results = []
    try:
        for megabytes in args.sizes:
            corpus = folder / f"corpus_{megabytes:g}mb.jsonl"
            documents = build(args.source or DEFAULT_SOURCES, corpus, megabytes, args.distinct)
            size = corpus.stat().st_size / 1e6
            row = {"corpus_mb": round(size, 1), "documents": documents}
            engine = ["--engine", args.engine]
            row["filter"] = measured([*cli, "filter", str(corpus), "--lang", "en", "-o",
                                      str(folder / f"filtered_{megabytes:g}.parquet"), "--no-progress", *engine])
            row["filter"]["mb_per_s"] = round(size / row["filter"]["seconds"], 2)
            outdir = folder / f"audit_{megabytes:g}"
            row["audit"] = measured([*cli, "audit", str(corpus), "--lang", "en", "--model", args.model, "-o",
                                     str(outdir), *(["--max-sentences", str(args.max_sentences)] if args.max_sentences
                                                    else []), "--cascade", args.cascade, "--backend", args.backend,
                                     "--no-progress", *engine,
                                     *(["--no-embedding-cache"] if args.no_embedding_cache else [])])
            summary = json.loads((outdir / "summary.json").read_text())
            row["audit"].update(mb_per_s=round(size / row["audit"]["seconds"], 2),
                                sentences_kept=summary["filter"]["sentences_kept"],
                                sentences_scored=summary["score"]["sentences_scored"],
                                filter_mb_per_s=round(size / summary["seconds"]["filter"], 2)
                                if summary["seconds"].get("filter") else None,
                                sentences_per_s=round(summary["score"]["sentences_scored"]
                                                      / summary["score"]["embedding_seconds"], 1)
                                if summary["score"].get("embedding_seconds") else None,
                                stage_seconds={k: round(v, 1) for k, v in summary["seconds"].items()},
                                cascade=summary["score"].get("cascade"))
            print(json.dumps(row), flush=True)
            results.append(row)
            if not args.keep:
                corpus.unlink()
        for command in ("filter", "audit"):
            for measure in ("max_rss_mb", "tree_rss_mb"):
                ratio = results[-1][command][measure] / results[0][command][measure]
                print(f"{command} {measure}: {results[-1]['corpus_mb']:g} MB / {results[0]['corpus_mb']:g} MB = "
                      f"{ratio:.3f} (target <= 1.10)")
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n")
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
