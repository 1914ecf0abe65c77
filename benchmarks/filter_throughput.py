"""Filter throughput vs grep with the same terms, on ~100 MB of JSONL (about 5% matching), with and without the
raw-line pre-filter.

The corpus is the Reddit sample's control subreddits repeated with fresh ids, plus a few mental-health
posts, written to a temporary folder (never the repository). Runs, alternated (``--repeats`` each, the best counts):
`LC_ALL=C grep -c -i -w -F -f TERMS` (the byte-wise reference of issue 19), `LC_ALL=C.UTF-8 grep -c -i -E` with
word boundaries (the reference of issue 32: target >= 1x), `corpus-audit filter` (with the pre-filter) and the filter with the pre-filter switched off (the
exact path alone). Prints wall seconds, MB/s and CPU seconds (user + system, worker processes included, meaningful
on a busy machine), the ratios, and whether both filters wrote the same rows.

    python benchmarks/filter_throughput.py [--source reddit.jsonl.gz] [--megabytes 100] [--workers N] [--repeats 2]
        [--matching-share 0.27] [--also-workers 2]
        [--corpus-terms paper|extended] [--terms paper|extended]

``--corpus-terms`` picks the term set that decides which documents mention an illness when the corpus is built
(default: ``--terms``); ``--corpus-terms paper --terms extended`` measures the extended lexicon on the corpus the
seed paper's terms would give (the benchmark as it was before issue 27), where control posts that say "crazy" or
"disability" become candidates. The candidate share (documents that reach the exact path) is printed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus_audit.corpus.matcher import DEFAULT_TERM_SET, TERM_SETS, IllnessMatcher, default_lexicon_path, load_lexicon

DEFAULT_SOURCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpus_reddit_sample_en.jsonl.gz"
CONTROL_SUBREDDITS = {"conspiracy", "divorce", "guns", "legaladvice", "mindfulness", "personalfinance", "teaching",
                      "ukpersonalfinance", "ukpolitics", "unitedkingdom", "foreveralone"}


def build_corpus(source: Path, target: Path, megabytes: float, matching_share: float,
                 terms: str = "extended") -> tuple[int, int]:
    """Write the benchmark JSONL; return (documents, documents with an illness term of the ``terms`` set)."""
    matcher = IllnessMatcher.for_language("en", terms)
    records = [json.loads(line) for line in gzip.open(source, "rt", encoding="utf-8")]
    control = [r for r in records if r.get("subreddit", "").lower() in CONTROL_SUBREDDITS]
    clean = [r for r in control if not matcher.has_candidate(r["text"])]
    dirty = [r for r in records if matcher.has_candidate(r["text"])]
    budget, written, hits, index = megabytes * 1e6, 0, 0, 0
    with open(target, "w", encoding="utf-8") as handle:
        while handle.tell() < budget:
            # Every 1/matching_share-th document mentions an illness, the rest are control posts without one.
            pick_dirty = hits < (written + 1) * matching_share
            pool = dirty if pick_dirty else clean
            record = dict(pool[index % len(pool)], id=f"bench-{written}")
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            written += 1
            hits += pick_dirty
            index += 1
    return written, hits


def grep_pattern(lang: str, term_set: str) -> str:
    """The lexicon's terms as one extended regex with word boundaries."""
    terms = sorted({entry.term for entry in load_lexicon(default_lexicon_path(lang), term_set)}, key=len, reverse=True)
    return r"\b(" + "|".join(re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", t) for t in terms) + r")\b"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, float, str]:
    """Run ``command`` (in ``cwd``); return (wall seconds, CPU seconds, stdout)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env, cwd=cwd)
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1):
        sys.exit(f"{command[0]} failed: {result.stderr}")
    return elapsed, _children_cpu() - cpu, result.stdout.strip()


FILTER = "from corpus_audit.cli import main; main()"
GREP_UTF8 = "grep -c -i -E (LC_ALL=C.UTF-8)"
#: The filter with the raw-line pre-filter switched off (as if Hyperscan were not installed): the exact path alone.
EXACT_FILTER = "from corpus_audit.corpus import prefilter; prefilter.hyperscan = None; " + FILTER


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="Reddit JSONL(.gz) with a subreddit field")
    parser.add_argument("--megabytes", type=float, default=100)
    parser.add_argument("--matching-share", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=None, help="passed to filter --workers (default: its own)")
    parser.add_argument("--repeats", type=int, default=2, help="alternated runs of each; the best time counts")
    parser.add_argument("--terms", choices=TERM_SETS, default=DEFAULT_TERM_SET, help="term set of the filter runs")
    parser.add_argument("--corpus-terms", choices=TERM_SETS, default=None,
                        help="term set that builds the corpus (default: --terms)")
    parser.add_argument("--also-workers", type=int, nargs="*", default=[],
                        help="also run the filter with these --workers counts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corpus-audit-bench-") as tmp:
        corpus = Path(tmp) / "bench.jsonl"
        docs, hits = build_corpus(args.source, corpus, args.megabytes, args.matching_share,
                                  args.corpus_terms or args.terms)
        size = corpus.stat().st_size / 1e6
        print(f"corpus: {size:.1f} MB, {docs} documents, {hits} ({hits / docs:.1%}) with an illness term")
        subprocess.run(["cat", str(corpus)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        terms = Path(tmp) / "terms.txt"
        terms.write_text("\n".join(sorted({entry.term for entry in load_lexicon(default_lexicon_path("en"), args.terms)}))
                         + "\n", encoding="utf-8")
        # grep's speed depends on the locale: -i in a UTF-8 locale folds the case of every character (as the
        # filter does), in the C locale only ASCII bytes, several times faster. The target is C.UTF-8.
        workers = ["--workers", str(args.workers)] if args.workers else []
        outputs = {name: Path(tmp) / f"{name}.parquet" for name in ("prefilter", "exact")}
        commands = {
            "grep -c -i -w -F (LC_ALL=C)": (["grep", "-c", "-i", "-w", "-F", "-f", str(terms), str(corpus)], {"LC_ALL": "C"}),
            GREP_UTF8: (["grep", "-c", "-i", "-E", grep_pattern("en", args.terms), str(corpus)], {"LC_ALL": "C.UTF-8"}),
            **{f"filter ({name})": ([sys.executable, "-c", code, "filter", str(corpus), "--lang", "en", "-o",
                                     str(outputs[name]), "--no-progress", "--terms", args.terms, *workers], {})
               for name, code in (("prefilter", FILTER), ("exact", EXACT_FILTER))},
            **{f"filter (prefilter, --workers {count})": (
                [sys.executable, "-c", FILTER, "filter", str(corpus), "--lang", "en", "-o",
                 str(Path(tmp) / f"workers{count}.parquet"), "--no-progress", "--terms", args.terms,
                 "--workers", str(count)], {}) for count in args.also_workers},
        }
        runs: dict[str, list[tuple[float, float, str]]] = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, (command, env) in commands.items():  # alternated, so that a busy spell hits every one
                runs[name].append(timed(command, env={**os.environ, **env}))
        best = {name: min(results) for name, results in runs.items()}
        for name, (seconds, cpu, out) in best.items():
            print(f"{name}: {seconds:.2f} s ({size / seconds:.1f} MB/s, {cpu:.2f} CPU s)"
                  + (f", {out} matching lines" if name.startswith("grep") else ""))
        import pandas as pd

        same = pd.read_parquet(outputs["prefilter"]).equals(pd.read_parquet(outputs["exact"]))
        summary = json.loads((Path(tmp) / "prefilter.summary.json").read_text())
        print(f"filter ({args.terms} terms): {summary['documents_with_candidates']} documents with a candidate term "
              f"({summary['documents_with_candidates'] / docs:.1%}), {summary['documents_matched']} matched, "
              f"{summary['sentences_kept']} sentences kept; identical rows with and without the pre-filter: {same}")
        seconds = {name: value[0] for name, value in best.items()}
        cpu = {name: value[1] for name, value in best.items()}
        for name in (name for name in seconds if name.startswith("filter (prefilter")):
            print(f"ratio {name} / {GREP_UTF8}: {seconds[GREP_UTF8] / seconds[name]:.2f} wall, "
                  f"{cpu[GREP_UTF8] / cpu[name]:.2f} CPU (target >= 1); / grep -F (LC_ALL=C): "
                  f"{seconds['grep -c -i -w -F (LC_ALL=C)'] / seconds[name]:.2f} wall")
        print(f"prefilter / exact: {seconds['filter (exact)'] / seconds['filter (prefilter)']:.2f}x wall, "
              f"{cpu['filter (exact)'] / cpu['filter (prefilter)']:.2f}x CPU")


if __name__ == "__main__":
    main()
