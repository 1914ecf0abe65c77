"""The filter against grep over exactly the same terms (issue 43): MB/s of `corpus-audit filter` and of
`LC_ALL=C.UTF-8 grep -c -i -E` whose pattern is built from the same lexicon rows, on the same input, in one run.

Inputs, written uncompressed to a temporary folder (never the repository): the shared corpora of ``--lang``
concatenated as they are (``--shared``: every ``*_<lang>.jsonl.gz``), and a larger synthetic corpus built from them
(``--synthetic-megabytes``; their records in turn, each with a fresh id, as ``scale.py`` builds its corpora). For each
input and each term set (``--terms``: paper, extended), these commands alternate, ``--repeats`` times each (the best
run counts):

- ``grep -c -i -E`` with the lexicon's terms as one pattern with word boundaries (``filter_throughput.grep_pattern``);
- ``corpus-audit filter --terms SET`` with its default workers, and with each ``--workers`` count of
  ``--also-workers``; every filter run gets a fresh, empty cache folder (``XDG_CACHE_HOME``), so that the pre-filter
  compiles its database as on a first run: no cache is reused;
- the same filter from another source tree (``--baseline DIR``, e.g. ``git archive BASE | tar -x -C DIR``).

Prints each command's wall seconds, MB/s and CPU seconds (user + system of the process and its children, workers
included: on a busy machine CPU seconds say more than wall time), the ratios filter / grep (MB/s, the target is >= 1,
and CPU), and whether every filter wrote the rows and summary counts of the first one; with ``--memory``, the peak
resident memory of the default filter's largest process and of its whole process tree (``scale.measured``).

    python benchmarks/filter_vs_grep.py [--lang en] [--synthetic-megabytes 200] [--terms paper extended]
        [--repeats 2] [--also-workers 1 2] [--baseline DIR] [--shared /work/shared/corpora] [--only-synthetic]
        [--memory]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

from filter_throughput import grep_pattern, timed
from scale import build, measured

SHARED = Path("/work/shared/corpora")
FILTER = "from corpus_audit.cli import main; main()"
GREP = "grep -c -i -E"
#: Summary fields that differ between runs of the same filter on the same input.
VOLATILE = ("seconds", "megabytes_per_second", "lexicon", "output")


def concatenate(sources: list[Path], target: Path) -> None:
    """``sources`` (JSON Lines, gzip) one after the other into ``target``, uncompressed."""
    with open(target, "wb") as out:
        for source in sources:
            with gzip.open(source, "rb") as handle:
                shutil.copyfileobj(handle, out)


def filter_command(corpus: Path, lang: str, terms: str, output: Path, workers: int | None) -> list[str]:
    return [sys.executable, "-c", FILTER, "filter", str(corpus), "--lang", lang, "--terms", terms, "-o", str(output),
            "--no-progress", *(["--workers", str(workers)] if workers else [])]


def outputs(parquet: Path) -> tuple[list[dict], dict]:
    """The rows and the summary (less its timings and the lexicon's path) a filter run wrote."""
    summary = json.loads(parquet.with_suffix(".summary.json").read_text())
    return pq.read_table(parquet).to_pylist(), {key: value for key, value in summary.items() if key not in VOLATILE}


def compare(corpus: Path, lang: str, terms: str, folder: Path, repeats: int, also_workers: list[int],
            baseline: Path | None, memory: bool = False) -> None:
    size = corpus.stat().st_size / 1e6
    pattern = grep_pattern(lang, terms)
    runs: dict[str, dict] = {GREP: {"command": ["grep", "-c", "-i", "-E", pattern, str(corpus)],
                                    "env": {"LC_ALL": "C.UTF-8"}}}
    trees = {"": None, **({" (baseline)": baseline} if baseline else {})}
    for suffix, tree in trees.items():
        for workers in [None, *also_workers] if not suffix else [None]:
            name = f"filter{suffix}" + (f" --workers {workers}" if workers else "")
            output = folder / f"{terms}-{len(runs)}.parquet"
            runs[name] = {"command": filter_command(corpus, lang, terms, output, workers), "output": output,
                          "env": {"PYTHONPATH": str(tree)} if tree else {}, "cwd": tree,
                          "memory": memory and name == "filter"}
    results: dict[str, list[tuple[float, float, str]]] = {name: [] for name in runs}
    peaks: list[str] = []
    for _ in range(repeats):
        for name, run in runs.items():  # alternated, so that a busy spell hits every one
            cache = Path(tempfile.mkdtemp(prefix="cache-", dir=folder))
            environment = {**os.environ, "XDG_CACHE_HOME": str(cache), **run["env"]}
            if run.get("memory"):  # under /usr/bin/time -v, the process tree's memory sampled (scale.py)
                os.environ["XDG_CACHE_HOME"] = str(cache)
                found = measured(run["command"])
                del os.environ["XDG_CACHE_HOME"]
                results[name].append((found["seconds"], found["cpu_seconds"], ""))
                peaks.append(f"{found['max_rss_mb']:.0f} MB / {found['tree_rss_mb']:.0f} MB")
            else:
                results[name].append(timed(run["command"], environment, run.get("cwd")))
            shutil.rmtree(cache)
    best = {name: min(found) for name, found in results.items()}
    grep_seconds, grep_cpu, matching = best[GREP]
    print(f"\n{corpus.name}: {size:.1f} MB, terms {terms}: grep counts {matching} matching lines")
    reference = None
    for name, (seconds, cpu, _) in best.items():
        line = f"  {name:32s} {seconds:7.2f} s {size / seconds:7.1f} MB/s {cpu:7.2f} CPU s"
        if name != GREP:
            line += f"   ratio to grep: {grep_seconds / seconds:.2f} (MB/s), {grep_cpu / cpu:.2f} (CPU)"
            found = outputs(runs[name]["output"])
            reference = reference or found
            line += f", {len(found[0])} rows" + ("" if found == reference else ", OUTPUT DIFFERS from the first filter")
        print(line + "   runs: " + ", ".join(f"{s:.2f}/{c:.2f}" for s, c, _ in results[name]))
    if peaks:
        print(f"  filter peak resident memory, largest process / whole tree: {', '.join(peaks)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", default="en", choices=["en", "es"])
    parser.add_argument("--shared", type=Path, default=SHARED, help="folder of the shared *_<lang>.jsonl.gz corpora")
    parser.add_argument("--synthetic-megabytes", type=float, default=200, help="0: no synthetic corpus")
    parser.add_argument("--terms", nargs="+", default=["paper", "extended"], choices=["paper", "extended"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--also-workers", type=int, nargs="*", default=[], help="also run filter --workers N")
    parser.add_argument("--baseline", type=Path, default=None, help="another source tree of corpus-audit")
    parser.add_argument("--only-synthetic", action="store_true", help="skip the shared corpora as they are")
    parser.add_argument("--memory", action="store_true",
                        help="run this tree's default filter under /usr/bin/time -v: peak memory (wall and CPU seconds "
                             "then from there, to 0.1 s)")
    args = parser.parse_args()
    sources = sorted(args.shared.glob(f"*_{args.lang}.jsonl.gz"))
    if not sources:
        sys.exit(f"no *_{args.lang}.jsonl.gz in {args.shared}")
    print(f"sources: {', '.join(source.name for source in sources)}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="corpus-audit-grep-") as tmp:
        folder = Path(tmp)
        corpora = [folder / f"shared_{args.lang}.jsonl"]
        concatenate(sources, corpora[0])
        if args.synthetic_megabytes:
            corpora.append(folder / f"synthetic_{args.synthetic_megabytes:g}mb_{args.lang}.jsonl")
            build(sources, corpora[-1], args.synthetic_megabytes)
        for corpus in corpora[1:] if args.only_synthetic else corpora:
            for terms in args.terms:
                compare(corpus, args.lang, terms, folder, args.repeats, args.also_workers,
                        args.baseline.resolve() if args.baseline else None, args.memory)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
