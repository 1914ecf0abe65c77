"""The parallel filter (worker processes over raw line batches) gives exactly the single-process result."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from corpus_audit.cli import main
from corpus_audit.corpus.filter import iter_kept_sentences
from corpus_audit.corpus.kept import FilterSummary
from corpus_audit.engines.local import iter_kept_sentences_parallel
from corpus_audit.corpus.matcher import IllnessMatcher
from corpus_audit.corpus.documents import CorpusError, ReaderOptions, ReadStats
from corpus_audit.corpus.readers import (iter_documents, iter_line_batches,
                                  line_batch_files, read_line_batch)
from corpus_audit.corpus.segment import Segmenter

DATA = Path(__file__).parents[1] / "data"
SAMPLES = ["corpus_reddit_sample_en.jsonl.gz", "corpus_codiesp_sample_en.jsonl.gz", "corpus_codiesp_sample_es.jsonl.gz"]


def sequential(files: list[str], lang: str, options: ReaderOptions, keep: tuple[str, ...] = ()) -> tuple[list, dict]:
    summary = FilterSummary(lang=lang)
    docs = iter_documents(files, options, summary.reading)
    rows = [r.to_row() for r in iter_kept_sentences(docs, IllnessMatcher.for_language(lang), Segmenter(lang), summary, keep)]
    return rows, summary.to_dict()


def parallel(files: list[str], lang: str, options: ReaderOptions, keep: tuple[str, ...] = (), batch_bytes: int = 2048,
             workers: int = 2) -> tuple[list, dict]:
    summary = FilterSummary(lang=lang)
    batches = iter_line_batches(files, summary.reading, batch_bytes)
    kept = iter_kept_sentences_parallel(batches, options, IllnessMatcher.for_language(lang), Segmenter(lang), summary,
                                        keep, workers)
    return [r.to_row() for r in kept], summary.to_dict()


@pytest.mark.parametrize("sample", SAMPLES)
def test_bundled_samples_identical(sample: str) -> None:
    lang = sample.rsplit("_", 1)[1].split(".")[0]
    files = [str(DATA / sample)]
    expected = sequential(files, lang, ReaderOptions(), ("source",))
    assert len(expected[0]) > 50
    # Small batches: many batch boundaries, several per worker, results merged out of completion order.
    assert parallel(files, lang, ReaderOptions(), ("source",), batch_bytes=4096) == expected


TRICKY = [
    {"id": "nl", "text": "First line\ndepression on the second line.\nAnd\tasthma after a tab."},
    {"id": "esc", "text": "caf\u00e9 anxiety. Alzheimer\u2019s disease runs in the family. \u00a0diabetes"},
    {"id": "quote", "text": 'He said "schizophrenia" and \\PTSD\\ / OCD.'},
    {"id": "add1", "text": "Please add sugar. I have ADD. I add that ADHD is different."},
    {"id": "add2", "text": "add and Add are verbs here."},
    {"id": "accent", "text": "Tiene depresión y diabetes. Sufre ANSIEDAD."},
    {"id": 7, "text": "Numeric id with the flu. A cold day.", "meta": {"nested": [1, 2]}},
    {"id": "none", "text": "Nothing to see here."},
    {"text": "No id: bipolar disorder.\r\nWindows line end with cancer."},
]


def write_tricky(path: Path, ensure_ascii: bool) -> None:
    lines = [json.dumps(r, ensure_ascii=ensure_ascii) + "\n" for r in TRICKY]
    bad = ['{"id": "broken", "text": "asthma"\n', "\n", '["not", "an", "object"]\n', '{"id": "notext"}\n',
           '{"id": "num", "text": 5}\n']
    data = "".join(lines[:4] + bad + lines[4:]).encode() + b'{"id": "latin", "text": "caf\xe9 asthma"}\n'
    path.write_bytes(data + b'{"id": "last", "text": "no newline, epilepsy"}')


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("batch_bytes", [1, 300, 1 << 20])
def test_tricky_inputs_identical(tmp_path: Path, ensure_ascii: bool, batch_bytes: int) -> None:
    tricky = tmp_path / "tricky.jsonl"
    write_tricky(tricky, ensure_ascii)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    truncated = gzip.compress(b"".join(b'{"id": "t%d", "text": "asthma %d. Fine."}\n' % (i, i) for i in range(3000)))
    (tmp_path / "cut.jsonl.gz").write_bytes(truncated[: len(truncated) // 2])
    files = [str(tricky), str(tmp_path / "empty.jsonl"), str(tmp_path / "cut.jsonl.gz"), str(tricky)]
    options = ReaderOptions()
    expected = sequential(files, "en", options, ("meta", "source"))
    got = parallel(files, "en", options, ("meta", "source"), batch_bytes=batch_bytes)
    assert got == expected
    rows, summary = expected
    kept = {(r["doc_id"], r["sentence"]) for r in rows}
    assert ("nl", "depression on the second line.") in kept and ("esc", "café anxiety.") in kept
    assert ("add1", "I have ADD.") in kept and not any(doc == "add2" for doc, _ in kept)
    assert ("esc", "Alzheimer’s disease runs in the family.") in kept and ("latin", "caf\ufffd asthma") in kept
    assert summary["skipped_by_reason"]["empty file"] == 1 and summary["repaired_by_reason"]["invalid UTF-8"] == 2
    assert any(k.startswith("truncated or corrupt") for k in summary["skipped_by_reason"])


def test_strict_error_is_the_first_in_input_order(tmp_path: Path) -> None:
    good = "".join(json.dumps({"id": str(i), "text": f"asthma {i}"}) + "\n" for i in range(200))
    path = tmp_path / "s.jsonl"
    path.write_text(good + "{bad\n" + good + '{"id": "x"}\n', encoding="utf-8")
    options = ReaderOptions(strict=True)
    with pytest.raises(CorpusError) as seq:
        sequential([str(path)], "en", options)
    with pytest.raises(CorpusError) as par:
        parallel([str(path)], "en", options, batch_bytes=500)
    assert str(par.value) == str(seq.value) == f"{path}:201: malformed JSON (Expecting property name enclosed in double quotes)"


def test_line_batches_read_like_read_file(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"id": "a", "text": "x"}\n\n{"id": "b", "text": "y"}\r\n{"text": "z"}')
    stats = ReadStats()
    batches = list(iter_line_batches([str(path)], stats, batch_bytes=10))
    docs = [d for b in batches for d in read_line_batch(b, ReaderOptions(), stats)]
    assert [(d.id, d.text, d.line) for d in docs] == [("a", "x", 1), ("b", "y", 3), (f"{path}:4", "z", 4)]
    assert stats.bytes_read == path.stat().st_size and stats.documents == 3 and stats.files == 1


def test_only_json_lines_inputs_are_batched(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("{}\n")
    (tmp_path / "b.csv").write_text("text\nx\n")
    assert line_batch_files([str(tmp_path / "a.jsonl")], ReaderOptions()) == [str(tmp_path / "a.jsonl")]
    assert line_batch_files([str(tmp_path)], ReaderOptions()) is None
    assert line_batch_files([str(tmp_path / "b.csv")], ReaderOptions(format="jsonl")) == [str(tmp_path / "b.csv")]
    assert line_batch_files([str(tmp_path / "a.jsonl")], ReaderOptions(format="json")) is None


def test_cli_workers_give_the_same_files(tmp_path: Path) -> None:
    tricky = tmp_path / "tricky.jsonl"
    write_tricky(tricky, ensure_ascii=True)
    outputs = []
    for workers in ("1", "2"):
        out = tmp_path / f"o{workers}.parquet"
        result = CliRunner().invoke(main, ["filter", str(tricky), str(DATA / SAMPLES[0]), "--lang", "en", "-o", str(out),
                                           "--keep-field", "source", "--workers", workers])
        assert result.exit_code == 0, result.output
        summary = json.loads(out.with_name(out.stem + ".summary.json").read_text())
        for volatile in ("seconds", "megabytes_per_second", "output"):
            summary.pop(volatile)
        outputs.append((pq.read_table(out).to_pylist(), summary))
    assert outputs[0] == outputs[1] and len(outputs[0][0]) > 20


def test_filter_imports_no_spacy_or_torch_until_needed() -> None:
    code = (
        "import sys\n"
        "from corpus_audit.corpus.filter import run_filter\n"
        "from corpus_audit.corpus.segment import Segmenter, import_spacy_without_torch\n"
        "s = Segmenter('en')\n"
        "assert 'spacy' not in sys.modules and 'torch' not in sys.modules\n"
        # the shipped tokenizer rules of the installed spaCy: sentences without importing it
        "assert not s.needs_spacy_blank\n"
        "assert list(s.sentences('I have asthma. Dr. Who?')) == ['I have asthma.', 'Dr. Who?']\n"
        "assert 'spacy' not in sys.modules and 'torch' not in sys.modules\n"
        "import_spacy_without_torch()\n"
        "assert list(s.nlp('I have asthma. Fine.').sents)[1].text == 'Fine.'\n"
        "assert 'torch' not in sys.modules\n"
        "import torch\n"  # still importable afterwards
        "print(torch.tensor([1, 2]).sum().item())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3"


@pytest.mark.parametrize("cpus, workers", [(1, 1), (2, 2), (6, 6), (64, 8)])
def test_the_default_starts_a_worker_on_every_cpu_and_keeps_none_for_the_prefilter(monkeypatch, cpus, workers):
    from corpus_audit.engines import local

    monkeypatch.setattr(local, "usable_cpus", lambda: cpus)
    assert local.default_workers() == workers
