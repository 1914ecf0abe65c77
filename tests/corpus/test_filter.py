"""The filter pipeline and the `corpus-audit filter` command, end to end on small corpora."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from corpus_audit.cli import main
from corpus_audit.corpus.filter import iter_kept_sentences
from corpus_audit.corpus.kept import FilterSummary
from corpus_audit.corpus.matcher import IllnessMatcher
from corpus_audit.corpus.documents import ReaderOptions
from corpus_audit.corpus.readers import iter_documents
from corpus_audit.corpus.segment import Segmenter

DATA = Path(__file__).parents[1] / "data"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["filter", *args])
    return result.exit_code, result.output


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_filter_writes_rows_and_summary(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [
        {"id": "a", "text": "Hello there. I have depression and asthma.\nNothing here.", "sub": "x"},
        {"id": "b", "text": "It was a cold day. My flu is gone.", "sub": "y"},
        {"id": "c", "text": "No illness at all.", "sub": "z"},
    ])
    out = tmp_path / "out" / "kept.parquet"
    code, output = run(str(corpus), "--lang", "en", "-o", str(out), "--keep-field", "sub", "--keep-field", "source")
    assert code == 0, output
    rows = pq.read_table(out).to_pylist()
    assert rows == [
        {"doc_id": "a", "sentence_index": 1, "sentence": "I have depression and asthma.", "terms": ["depression", "asthma"],
         "term_offsets": [[7, 17], [22, 28]], "illnesses": ["asthma", "depression"], "illness_type": "both",
         "forms": ["diagnosis", "diagnosis"], "sub": "x", "source": str(corpus)},
        {"doc_id": "b", "sentence_index": 1, "sentence": "My flu is gone.", "terms": ["flu"], "term_offsets": [[3, 6]],
         "illnesses": ["flu"], "illness_type": "physical", "forms": ["diagnosis"], "sub": "y", "source": str(corpus)},
    ]
    summary = json.loads((tmp_path / "out" / "kept.summary.json").read_text())
    assert summary["documents_read"] == 3 and summary["documents_matched"] == 2
    assert summary["documents_with_candidates"] == 2  # "No illness at all." never reaches the segmenter
    assert summary["sentences_by_type"] == {"mental": 0, "physical": 1, "both": 1}
    assert summary["sentences_by_illness"] == {"asthma": 1, "depression": 1, "flu": 1}
    assert summary["records_skipped"] == 0 and len(summary["lexicon_sha256"]) == 64
    assert "sentences kept: 2 (mental 0, physical 1, both 1)" in output
    assert summary["terms"] == "extended" and summary["mentions_by_form"] == {"diagnosis": {"mental": 1, "physical": 2}}
    assert "mentions per form (mental/physical): diagnosis 1/2" in output


def test_bad_input_is_counted_not_fatal(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "good.jsonl", [{"id": "g", "text": "I have PTSD."}])
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": "1", "text": "My OCD."}\n{nope\n{"id": "2"}\n{"id": "3", "text": "caf\xe9 anxiety"}\n')
    (tmp_path / "empty.jsonl").write_bytes(b"")
    truncated = gzip.compress(b"".join(b'{"id": "t%d", "text": "asthma %d"}\n' % (i, i) for i in range(5000)))
    (tmp_path / "cut.jsonl.gz").write_bytes(truncated[: len(truncated) // 2])
    out = tmp_path / "o.parquet"
    code, output = run(str(tmp_path), "--lang", "en", "-o", str(out))
    assert code == 0, output
    assert "Traceback" not in output
    summary = json.loads(out.with_name("o.summary.json").read_text())
    assert summary["skipped_by_reason"]["empty file"] == 1
    assert summary["repaired_by_reason"]["invalid UTF-8"] == 1 and "invalid UTF-8" not in summary["skipped_by_reason"]
    assert summary["skipped_by_reason"]["missing text field 'text'"] == 1
    assert any(k.startswith("malformed JSON") for k in summary["skipped_by_reason"])
    assert any(k.startswith("truncated or corrupt") for k in summary["skipped_by_reason"])
    doc_ids = set(pq.read_table(out).column("doc_id").to_pylist())
    assert {"1", "3", "g", "t0"} <= doc_ids and len(doc_ids) > 100  # good records on both sides of the bad ones


def test_strict_fails_fast_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": "1", "text": "My OCD."}\n{nope\n')
    out = tmp_path / "o.parquet"
    code, output = run(str(bad), "--lang", "en", "-o", str(out), "--strict")
    assert code == 1
    assert f"{bad}:2: malformed JSON" in output and "Traceback" not in output
    assert not out.exists()  # atomic output: nothing half-written


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.jsonl", "--lang", "en", "-o", "o.parquet"], "no such file"),
        (["--lang", "en", "-o", "o.parquet"], "give at least one CORPUS"),
        (["x.jsonl", "--lang", "fr", "-o", "o.parquet"], "Invalid value for '--lang'"),
        (["x.jsonl", "--lang", "en", "-o", "o.parquet", "--sample", "0"], "Invalid value for '--sample'"),
        (["x.jsonl", "--lang", "en", "-o", "o.parquet", "--spacy-model", "no_such_model_xyz"], "not installed"),
    ],
)
def test_user_errors_are_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "x.jsonl", [{"text": "a"}])
    code, output = run(*args)
    assert code != 0 and message in output and "Traceback" not in output


def test_help_explains_every_option() -> None:
    code, output = run("--help")
    assert code == 0
    for option in ("--lang", "--output", "--format", "--text-field", "--id-field", "--line-docs", "--keep-field",
                   "--hf-dataset", "--hf-config", "--split", "--limit", "--sample", "--seed", "--lexicon",
                   "--spacy-model", "--strict", "--progress"):
        assert option in output


@pytest.mark.parametrize(
    ("sample", "lang", "minimum"),
    [("corpus_reddit_sample_en.jsonl.gz", "en", 20), ("corpus_codiesp_sample_en.jsonl.gz", "en", 40),
     ("corpus_codiesp_sample_es.jsonl.gz", "es", 40)],
)
def test_bundled_samples(tmp_path: Path, sample: str, lang: str, minimum: int) -> None:
    out = tmp_path / "o.parquet"
    code, output = run(str(DATA / sample), "--lang", lang, "-o", str(out), "--limit", "60")
    assert code == 0, output
    table = pq.read_table(out).to_pandas()
    assert len(table) >= minimum
    assert set(table.illness_type) <= {"mental", "physical", "both"}
    # every kept sentence really contains each reported surface form
    assert all(all(term in sentence for term in terms) for sentence, terms in zip(table.sentence, table.terms))


def test_pipeline_is_lazy_and_counts(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": str(i), "text": "I have asthma. Fine."} for i in range(100)])
    summary = FilterSummary(lang="en")
    docs = iter_documents([str(corpus)], ReaderOptions(), summary.reading)
    kept = iter_kept_sentences(docs, IllnessMatcher.for_language("en"), Segmenter("en"), summary)
    first = next(kept)
    assert first.doc_id == "0" and first.sentence == "I have asthma."
    assert summary.reading.documents == 1 and summary.sentences_kept == 1
    assert len(list(kept)) == 99 and summary.documents_matched == 100


def test_stdin_and_txt_line_docs(tmp_path: Path) -> None:
    out = tmp_path / "o.parquet"
    result = CliRunner().invoke(main, ["filter", "-", "--lang", "es", "-o", str(out)],
                                input='{"id": "s", "text": "Tiene diabetes."}\n')
    assert result.exit_code == 0, result.output
    assert pq.read_table(out).column("illnesses").to_pylist() == [["diabetes"]]
    txt = tmp_path / "notes.txt"
    txt.write_text("nada\nTiene asma.\n", encoding="utf-8")
    code, output = run(str(txt), "--lang", "es", "-o", str(out), "--line-docs")
    assert code == 0 and pq.read_table(out).column("doc_id").to_pylist() == [f"{txt}:2"]


def _filter_rows(files: list[str], lang: str, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list, dict]:
    """Rows and summary of the sequential pipeline, with the fast paths (orjson, the Rust pre-filter and its one
    search per document, word-level tokenizing, the one-sentence check) on, or all off."""
    from corpus_audit.corpus.readers import records

    with monkeypatch.context() as patch:
        matcher = IllnessMatcher.for_language(lang)
        segmenter = Segmenter(lang)
        if not fast:
            patch.setattr(records, "orjson", None)
            matcher._fast_prefilter = None
            patch.setattr(Segmenter, "_sentence_starts", Segmenter._sentence_starts_of_doc)
            patch.setattr(Segmenter, "_is_one_sentence",
                          lambda self, line: not any(char in self._punct_chars for char in line.rstrip(".!?")))
        summary = FilterSummary(lang=lang)
        docs = iter_documents(files, ReaderOptions(), summary.reading)
        rows = [row.to_row() for row in iter_kept_sentences(docs, matcher, segmenter, summary, ("source", "meta"))]
    return rows, summary.to_dict()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_fast_paths_give_the_same_rows_and_counts(tmp_path: Path, lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["I'm sure it's asthma. Dr. Smith said so!\nU.S. flu season :) ok", "EE. UU. tiene diabetes. ¿Y asma? Sí.",
             "caf\u00e9 anxiety... \u00bfdepresi\u00f3n?  Alzheimer\u2019s\tdisease.\u00a0Fine", "lone \ud800 asthma. x",
             "DEPRESIÓN y ANSIEDAD. Fin", "Please add sugar. I have ADD. The flu!!! (yes.) no"]
    records = [{"id": f"t{i}", "text": text, "meta": {"score": i / 3, "big": 2**70}} for i, text in enumerate(texts)]
    tricky = tmp_path / "tricky.jsonl"
    lines = [json.dumps(r, ensure_ascii=ascii_).encode("utf-8", "surrogatepass") for ascii_ in (True, False) for r in records]
    tricky.write_bytes(b"\n".join(lines + [b'{"id": "bad", "text": "asthma"', b'{"id": "nan", "text": "flu. Cold.", "v": NaN}',
                                           b'{"text": "caf\xe9 asthma"}', b'{"id": "x"}']) + b"\n")
    sample = {"en": "corpus_reddit_sample_en.jsonl.gz", "es": "corpus_codiesp_sample_es.jsonl.gz"}[lang]
    files = [str(tricky), str(DATA / sample)]
    fast = _filter_rows(files, lang, True, monkeypatch)
    slow = _filter_rows(files, lang, False, monkeypatch)
    assert fast == slow
    assert len(fast[0]) > 30 and fast[1]["records_skipped"] == 2  # truncated, no text
    assert fast[1]["records_repaired"] == 2  # bad UTF-8
