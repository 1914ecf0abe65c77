"""Filter throughput vs `grep -c -i -E` with the same terms, on ~100 MB of JSONL (about 5% matching).

The corpus is the Reddit sample's control subreddits repeated with fresh ids, plus a few mental-health
posts, written to a temporary folder (never the repository). Prints both timings and their ratio, and the
CPU seconds of each (user + system, worker processes included), which stay meaningful on a busy machine.
grep runs in the caller's locale (the machine's default here is C.UTF-8) and, for reference, in the C locale.

    python benchmarks/filter_throughput.py [--source reddit.jsonl.gz] [--megabytes 100] [--workers N]
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

from corpus_audit.corpus.matcher import IllnessMatcher, default_lexicon_path, load_lexicon

DEFAULT_SOURCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpus_reddit_sample_en.jsonl.gz"
CONTROL_SUBREDDITS = {"conspiracy", "divorce", "guns", "legaladvice", "mindfulness", "personalfinance", "teaching",
                      "ukpersonalfinance", "ukpolitics", "unitedkingdom", "foreveralone"}


def build_corpus(source: Path, target: Path, megabytes: float, matching_share: float) -> tuple[int, int]:
    """Write the benchmark JSONL; return (documents, documents with an illness term)."""
    matcher = IllnessMatcher.for_language("en")
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


def grep_pattern(lang: str) -> str:
    """The lexicon's terms as one extended regex with word boundaries."""
    terms = sorted({entry.term for entry in load_lexicon(default_lexicon_path(lang))}, key=len, reverse=True)
    return r"\b(" + "|".join(re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", t) for t in terms) + r")\b"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Run ``command``; return (wall seconds, CPU seconds, stdout)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1):
        sys.exit(f"{command[0]} failed: {result.stderr}")
    return elapsed, _children_cpu() - cpu, result.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="Reddit JSONL(.gz) with a subreddit field")
    parser.add_argument("--megabytes", type=float, default=100)
    parser.add_argument("--matching-share", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=None, help="passed to filter --workers (default: its own)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corpus-audit-bench-") as tmp:
        corpus = Path(tmp) / "bench.jsonl"
        docs, hits = build_corpus(args.source, corpus, args.megabytes, args.matching_share)
        size = corpus.stat().st_size / 1e6
        print(f"corpus: {size:.1f} MB, {docs} documents, {hits} ({hits / docs:.1%}) with an illness term")
        subprocess.run(["cat", str(corpus)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        grep = ["grep", "-c", "-i", "-E", grep_pattern("en"), str(corpus)]
        # grep's speed depends on the locale: -i in a UTF-8 locale folds the case of every character (as the
        # filter does), in the C locale only ASCII bytes, several times faster. The first is the comparison.
        locale = os.environ.get("LC_ALL") or os.environ.get("LC_CTYPE") or os.environ.get("LANG") or "C"
        grep_s, grep_cpu, grep_out = timed(grep)
        print(f"grep -c -i -E ({locale}): {grep_s:.2f} s ({size / grep_s:.1f} MB/s, {grep_cpu:.2f} CPU s), "
              f"{grep_out} matching lines")
        byte_s, _, _ = timed(grep, env={**os.environ, "LC_ALL": "C"})
        print(f"grep -c -i -E (LC_ALL=C, byte-wise, ASCII-only case folding): {byte_s:.2f} s")
        workers = ["--workers", str(args.workers)] if args.workers else []
        filter_s, filter_cpu, _ = timed([sys.executable, "-c", "from corpus_audit.cli import main; main()", "filter", str(corpus),
                                         "--lang", "en", "-o", str(Path(tmp) / "out.parquet"), "--no-progress", *workers])
        summary = json.loads((Path(tmp) / "out.summary.json").read_text())
        print(f"corpus-audit filter: {filter_s:.2f} s ({size / filter_s:.1f} MB/s, {filter_cpu:.2f} CPU s), "
              f"{summary['documents_matched']} documents matched, {summary['sentences_kept']} sentences kept")
        print(f"throughput ratio filter/grep ({locale}): {grep_s / filter_s:.2f} (target >= 0.5); "
              f"filter/grep (LC_ALL=C): {byte_s / filter_s:.2f}")


if __name__ == "__main__":
    main()
