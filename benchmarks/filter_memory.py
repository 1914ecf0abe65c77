"""Peak RSS of `corpus-audit filter` on a 50 MB and a 500 MB JSONL input (constant-memory check).

Both inputs are the Reddit sample repeated with fresh ids, written to a temporary folder (never the
repository). Each run is a separate process; its peak RSS comes from getrusage(RUSAGE_CHILDREN).

    python benchmarks/filter_memory.py [--source reddit.jsonl.gz] [--small 50] [--large 500]
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_SOURCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpus_reddit_sample_en.jsonl.gz"


def build(source: Path, target: Path, megabytes: float) -> int:
    records = [json.loads(line) for line in gzip.open(source, "rt", encoding="utf-8")]
    written = 0
    with open(target, "w", encoding="utf-8") as handle:
        while handle.tell() < megabytes * 1e6:
            record = dict(records[written % len(records)], id=f"mem-{written}")
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            written += 1
    return written


def peak_rss_mb(corpus: Path, output: Path) -> tuple[float, float]:
    """Run the filter in a child process; return (peak RSS in MB, seconds)."""
    start = time.perf_counter()
    # A fresh interpreter per run: RUSAGE_CHILDREN reports the largest child so far, so run small first.
    subprocess.run([sys.executable, "-c", "from corpus_audit.cli import main; main()", "filter", str(corpus),
                    "--lang", "en", "-o", str(output), "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--small", type=float, default=50)
    parser.add_argument("--large", type=float, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corpus-audit-mem-") as tmp:
        results = []
        for megabytes in (args.small, args.large):
            corpus = Path(tmp) / f"in_{megabytes:g}.jsonl"
            docs = build(args.source, corpus, megabytes)
            rss, seconds = peak_rss_mb(corpus, Path(tmp) / f"out_{megabytes:g}.parquet")
            corpus.unlink()
            results.append(rss)
            print(f"{megabytes:g} MB ({docs} documents): peak RSS {rss:.0f} MB, {seconds:.1f} s")
        print(f"peak RSS ratio large/small: {results[1] / results[0]:.3f} (target <= 1.10)")


if __name__ == "__main__":
    main()
