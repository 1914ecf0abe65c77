"""benchmarks/scale.py's corpus: repeats of a record made distinct keep its text in copy 0 and mark every sentence
of the others, so the audit's de-duplication scores them again."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

from corpus_audit.corpus.segment import Segmenter

BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "scale.py"


def load():
    spec = importlib.util.spec_from_file_location("scale_benchmark", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_distinct_copies_mark_every_sentence(tmp_path):
    scale = load()
    text = "I have depression. People are kind! Is it bad? Yes"
    assert scale.distinct_copy(text, 0) == text
    marked = scale.distinct_copy(text, 7)
    sentences = list(Segmenter("en").sentences(marked))
    original = set(Segmenter("en").sentences(text))
    assert len(sentences) == len(original) == 4 and all("(copy 7)" in s for s in sentences)
    source = tmp_path / "a.jsonl.gz"
    with gzip.open(source, "wt") as handle:
        handle.write(json.dumps({"id": "x", "text": text}) + "\n")
    target = tmp_path / "out.jsonl"
    written = scale.build([source], target, 0.0005, distinct=True)
    records = [json.loads(line) for line in target.read_text().splitlines()]
    assert written == len(records) > 2 and len({r["text"] for r in records}) == len(records)
    assert records[0]["text"] == text and len({r["id"] for r in records}) == len(records)
