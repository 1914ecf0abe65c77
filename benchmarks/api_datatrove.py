"""Scoring a corpus's documents through the Python API and through the datatrove steps, against `corpus-audit
audit` of the same corpus, side by side in one run (targets: the API at most 1.1x the audit's time; the datatrove
pipeline at least 0.8x the audit's throughput).

Each run is a fresh Python process with this tree on PYTHONPATH (model load included in each), the embedding
cache off, alternated so that a busy spell hits all three:

- ``cli``: ``python -m corpus_audit audit CORPUS --lang en -o OUTDIR --no-embedding-cache``;
- ``api``: ``Instrument("en").score_documents(instrument.read(CORPUS))``;
- ``datatrove``: ``JsonlReader -> StigmaAnnotator -> StigmaFilter(threshold=0.7) -> JsonlWriter`` with
  ``LocalPipelineExecutor(tasks=1)``.

The API and datatrove runs check that their document scores equal those of the audit's documents.parquet.

    python benchmarks/api_datatrove.py [--corpus demo/reddit_sample_en.jsonl.gz] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

API = """
import sys
from corpus_audit import Instrument
instrument = Instrument("en")
instrument.score_documents(instrument.read(sys.argv[1])).to_parquet(sys.argv[2])
"""

DATATROVE = """
import sys
from pathlib import Path
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter
from corpus_audit.api.datatrove import StigmaAnnotator, StigmaFilter

if __name__ == "__main__":
    corpus, out = Path(sys.argv[1]), Path(sys.argv[2])
    LocalPipelineExecutor([
        JsonlReader(str(corpus.parent), glob_pattern=corpus.name),
        StigmaAnnotator("en"),
        StigmaFilter(threshold=0.7, exclusion_writer=JsonlWriter(str(out / "removed"))),
        JsonlWriter(str(out / "kept")),
    ], tasks=1, logging_dir=str(out / "logs")).run()
"""


def run(arguments: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, *arguments], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=HERE, env={**os.environ, "PYTHONPATH": str(HERE)})
    return time.perf_counter() - started


def largest_difference(audit: Path, api: Path, datatrove: Path) -> tuple[float, float]:
    """The largest |score difference| of a document between the audit and the API, and the audit and datatrove."""
    import gzip
    import json

    import pandas as pd

    expected = pd.read_parquet(audit / "documents.parquet").set_index("doc_id")["stigma_score"]
    by_api = pd.read_parquet(api).set_index("doc_id")["stigma_score"]
    by_step = {}
    for path in datatrove.glob("*/*.jsonl.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                if record["metadata"].get("stigma_score") is not None:
                    by_step[record["id"]] = record["metadata"]["stigma_score"]
    assert set(by_api.index) == set(expected.index) == set(by_step), "the three disagree on which documents"
    return (float((by_api - expected[by_api.index]).abs().max()),
            float(max(abs(by_step[doc] - expected[doc]) for doc in expected.index)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=HERE / "demo" / "reddit_sample_en.jsonl.gz")
    parser.add_argument("--repeats", type=int, default=1, help="alternated runs of each; the median counts")
    args = parser.parse_args()
    corpus = str(args.corpus.resolve())
    times: dict[str, list[float]] = {"cli": [], "api": [], "datatrove": []}
    with tempfile.TemporaryDirectory(prefix="corpus-audit-bench-") as scratch:
        folder = Path(scratch)
        # the page cache, the ONNX export and the compiled pre-filter
        run(["-m", "corpus_audit", "audit", corpus, "--lang", "en", "-o", str(folder / "warm"), "--no-progress"])
        for repeat in range(args.repeats):
            audit, api, steps = folder / f"cli-{repeat}", folder / f"api-{repeat}.parquet", folder / f"dt-{repeat}"
            times["cli"].append(run(["-m", "corpus_audit", "audit", corpus, "--lang", "en", "-o", str(audit),
                                     "--no-progress", "--no-embedding-cache"]))
            times["api"].append(run(["-c", API, corpus, str(api)]))
            times["datatrove"].append(run(["-c", DATATROVE, corpus, str(steps)]))
            differences = largest_difference(audit, api, steps)
    medians = {name: sorted(values)[len(values) // 2] for name, values in times.items()}
    for name, seconds in medians.items():
        print(f"{name}: {seconds:.1f} s (runs: {', '.join(f'{value:.1f}' for value in times[name])})")
    print(f"API time / audit time: {medians['api'] / medians['cli']:.2f}x (target <= 1.1x)")
    print(f"datatrove throughput / audit throughput: {medians['cli'] / medians['datatrove']:.2f}x (target >= 0.8x)")
    print(f"largest document score difference from the audit: API {differences[0]:.2g}, "
          f"datatrove {differences[1]:.2g}")


if __name__ == "__main__":
    main()
