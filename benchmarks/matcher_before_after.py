"""Matcher time at a git ref vs the working tree, in one run on the same sentences (the ratio is what counts).

Times the two calls the filter makes: ``has_candidate`` on every document and ``find`` on every sentence of the
documents that pass it. The ref's matcher module and lexicon are taken with ``git show`` into a temporary
folder; rounds alternate between the two so that a busy machine slows both alike.

    python benchmarks/matcher_before_after.py --ref dcd0bdf --lang en CORPUS.jsonl.gz [--rounds 5]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from corpus_audit.corpus.matcher import IllnessMatcher
from corpus_audit.corpus.segment import Segmenter

ROOT = Path(__file__).resolve().parents[1]


def matcher_at(ref: str, lang: str, folder: Path) -> object:
    """The IllnessMatcher of ``ref``, built from that ref's module and lexicon."""
    for source, target in ((f"{ref}:corpus_audit/corpus/matcher.py", "matcher.py"),
                           (f"{ref}:lexicons/{lang}/illnesses.csv", "illnesses.csv")):
        (folder / target).write_bytes(subprocess.run(["git", "show", source], cwd=ROOT, check=True,
                                                     capture_output=True).stdout)
    spec = importlib.util.spec_from_file_location("matcher_at_ref", folder / "matcher.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.IllnessMatcher.from_csv(folder / "illnesses.csv")


def seconds(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="JSONL(.gz) with a text field")
    parser.add_argument("--ref", required=True, help="git ref of the baseline matcher")
    parser.add_argument("--lang", choices=["en", "es"], required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    texts = [json.loads(line)["text"] for line in gzip.open(args.corpus, "rt", encoding="utf-8")]
    current = IllnessMatcher.for_language(args.lang)
    segmenter = Segmenter(args.lang)
    sentences = [s for text in texts if current.has_candidate(text) for s in segmenter.sentences(text)]
    with tempfile.TemporaryDirectory() as folder:
        baseline = matcher_at(args.ref, args.lang, Path(folder))
    totals = {"baseline": [0.0, 0.0], "current": [0.0, 0.0]}
    for _ in range(args.rounds):
        for name, matcher in (("baseline", baseline), ("current", current)):
            totals[name][0] += seconds(lambda m=matcher: [m.has_candidate(text) for text in texts])
            totals[name][1] += seconds(lambda m=matcher: [m.find(sentence) for sentence in sentences])
    found = {name: sum(len(m.find(s)) > 0 for s in sentences) for name, m in (("baseline", baseline), ("current", current))}
    print(f"{len(texts)} documents, {len(sentences)} sentences in the documents that pass the pre-filter")
    for name, (prefilter, find) in totals.items():
        print(f"{name}: has_candidate {prefilter / args.rounds:.3f} s, find {find / args.rounds:.3f} s per round,"
              f" {found[name]} sentences matched")
    base, cur = (sum(totals[name]) for name in ("baseline", "current"))
    print(f"current / baseline time: find {totals['current'][1] / totals['baseline'][1]:.3f},"
          f" has_candidate + find {cur / base:.3f}")


if __name__ == "__main__":
    main()
