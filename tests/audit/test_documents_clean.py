"""Per-document scores, `corpus-audit documents` and `clean`: rankings from hand-made audit folders, records
removed with every other one byte for byte, and the refusals."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from corpus_audit.audit.documents import STIGMA_SCORE, document_scores, ranked_documents
from corpus_audit.cli import main
from corpus_audit.common.errors import UserError
from corpus_audit.stigma.judgement import DIMENSION_COLUMNS

DIMENSIONS = list(DIMENSION_COLUMNS.values())


def scored(sentence: str, strength: float, category: str, stigma: float | None = None, **dimensions: float) -> dict:
    """A scored sentence; its stigma score is its judgement strength unless given."""
    row = {"sentence": sentence, "judgement_strength": strength, "stigma": strength if stigma is None else stigma,
           "category": category,
           "top_dimension": "Blame" if category == "judgement" else None, **dict.fromkeys(DIMENSIONS, 0.0)}
    row.update({f"dim_{name}": value for name, value in dimensions.items()})
    return row


@pytest.fixture()
def tables():
    filtered = pd.DataFrame({
        "doc_id": ["d1", "d1", "d2", "d3", "d3"],
        "sentence_index": [0, 3, 0, 1, 2],
        "sentence": ["s-judge", "s-plain", "s-judge", "s-help", "s-unscored"],
        "illnesses": [["depression"], ["flu"], ["depression"], ["ADHD"], ["ADHD"]],
        "illness_type": ["mental", "physical", "mental", "mental", "mental"],
        "subreddit": ["a", "a", "b", "c", "c"],
    })
    sentences = pd.DataFrame([scored("s-judge", 0.9, "judgement", blame=0.5, help=0.4),
                              scored("s-plain", 0.1, "clinical"),
                              scored("s-help", 0.6, "judgement", help=-0.5)])
    return filtered, sentences


def test_document_scores_take_each_documents_most_judging_sentence(tables):
    table = document_scores(*tables)
    assert table["doc_id"].tolist() == ["d1", "d2", "d3"]  # 0.9, 0.9 (fewer sentences: tie broken by id), 0.6
    d1 = table.set_index("doc_id").loc["d1"]
    assert d1[STIGMA_SCORE] == pytest.approx(0.9)
    assert (d1["top_sentence"], d1["top_sentence_index"], d1["n_sentences"], d1["n_mental"], d1["n_physical"],
            d1["n_judgements"], d1["illnesses"], d1["subreddit"]) == ("s-judge", 0, 2, 1, 1, 1, "depression; flu", "a")
    assert d1["dim_blame"] == pytest.approx(0.9 * 0.5)
    assert d1["dim_help"] == 0.0  # endorsing help is not stigma
    d3 = table.set_index("doc_id").loc["d3"]
    assert d3["dim_help"] == pytest.approx(0.6 * 0.5)  # rejecting help is
    assert (d3["n_sentences"], d3["n_scored"]) == (2, 1)
    assert table["rank"].tolist() == [1, 2, 3]


def test_documents_rank_by_the_stigma_score_not_the_judgement_strength():
    # A supportive judgement ("they deserve respect") judges people as surely as a slur does, but does not
    # stigmatise: its document must rank below the stigmatising one, and a neutral one below both.
    filtered = pd.DataFrame({"doc_id": ["support", "support", "stigma", "neutral"], "sentence_index": [0, 1, 0, 0],
                             "sentence": ["s-support", "s-story", "s-slur", "s-clinical"],
                             "illnesses": [["schizophrenia"]] * 4, "illness_type": ["mental"] * 4})
    sentences = pd.DataFrame([scored("s-support", 0.97, "judgement", stigma=0.04),
                              scored("s-story", 0.3, "self_disclosure", stigma=0.02),
                              scored("s-slur", 0.62, "judgement", stigma=0.81),
                              scored("s-clinical", 0.01, "clinical", stigma=0.03)])
    table = document_scores(filtered, sentences).set_index("doc_id")
    assert table.index.tolist() == ["stigma", "support", "neutral"]
    assert table.loc["support", STIGMA_SCORE] == pytest.approx(0.04)  # the max over its sentences
    assert table.loc["support", "top_sentence"] == "s-support"


def test_documents_of_axes_without_the_stigma_head_are_refused(tables):
    filtered, sentences = tables
    with pytest.raises(UserError, match="no stigma head"):
        document_scores(filtered, sentences.assign(stigma=np.nan))


def test_ranked_documents_choose_and_renumber(tables):
    table = document_scores(*tables)
    assert ranked_documents(table, min_score=0.7)["doc_id"].tolist() == ["d1", "d2"]
    assert ranked_documents(table, dimension="help")["doc_id"].tolist()[0] == "d3"
    chosen = ranked_documents(table, illness="adhd", top=5)
    assert chosen["doc_id"].tolist() == ["d3"] and chosen["rank"].tolist() == [1]
    assert ranked_documents(table, illness_type="physical")["doc_id"].tolist() == ["d1"]
    with pytest.raises(UserError, match="no document mentions the illness 'gout'; the audit has: ADHD"):
        ranked_documents(table, illness="gout")


def write_audit(folder: Path, tables, reading: dict | None = None, inputs: tuple = ("corpus.jsonl.gz",)) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    filtered, sentences = tables
    filtered.to_parquet(folder / "filtered.parquet")
    # as an audit writes it: each distinct sentence once, with the filter's columns (s-unscored left unscored)
    full = filtered.drop_duplicates("sentence").merge(sentences, on="sentence")
    full.assign(warmth=0.1, competence=0.1, quadrant="warm-competent").to_parquet(folder / "sentences.parquet")
    corpus = {"inputs": [str(path) for path in inputs], "reading": reading or {"text_field": "text", "id_field": "id"}}
    (folder / "summary.json").write_text(json.dumps({"options": {}, "score": {}, "corpus": corpus}))
    return folder


def test_documents_command_writes_ids_and_tables(tables, tmp_path):
    audit = write_audit(tmp_path / "audit", tables)
    ids = tmp_path / "ids.txt"
    result = CliRunner().invoke(main, ["documents", str(audit), "--top", "2", "-o", str(ids)])
    assert result.exit_code == 0, result.output
    assert ids.read_text() == "d1\nd2\n"
    csv = tmp_path / "docs.csv"
    assert CliRunner().invoke(main, ["documents", str(audit), "-o", str(csv)]).exit_code == 0
    assert pd.read_csv(csv)["illnesses"].tolist()[0] == "depression; flu"
    refused = CliRunner().invoke(main, ["documents", str(audit), "-o", str(tmp_path / "docs.xlsx")])
    assert refused.exit_code != 0 and "name the output .csv or .parquet or .jsonl or .txt" in refused.output


def corpus_lines() -> list[bytes]:
    records = [{"id": "d1", "text": "one"}, {"id": "d2", "text": "two  \u00e9"}, {"id": "d3", "text": "three"},
               {"id": "d4", "text": "four"}]
    lines = [json.dumps(record, ensure_ascii=False).encode() + b"\n" for record in records]
    lines.insert(2, b"not json at all\n")  # never a document: kept as it was
    lines.insert(3, b"\n")
    return lines


def test_clean_removes_chosen_documents_and_keeps_every_other_byte(tables, tmp_path):
    audit = write_audit(tmp_path / "audit", tables)
    source = tmp_path / "in" / "corpus.jsonl.gz"
    source.parent.mkdir()
    lines = corpus_lines()
    source.write_bytes(gzip.compress(b"".join(lines)))
    out = tmp_path / "clean"
    result = CliRunner().invoke(main, ["clean", str(source), "--audit", str(audit), "--top", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    kept = gzip.decompress((out / "corpus.jsonl.gz").read_bytes())
    assert kept == b"".join(line for line in lines if b'"d1"' not in line and b'"d2"' not in line)
    manifest = json.loads((out / "clean-manifest.json").read_text())
    assert manifest["records_removed"] == 2 and manifest["documents_read"] == 4
    assert [row["doc_id"] for row in manifest["removed"]] == ["d1", "d2"]
    assert manifest["removed"][0]["top_sentence"] == "s-judge"
    assert manifest["rule"] == "among the 2 highest-ranked documents"


def test_clean_with_an_id_file_reports_ids_not_in_the_corpus(tables, tmp_path):
    audit = write_audit(tmp_path / "audit", tables)
    source = tmp_path / "corpus.jsonl"
    source.write_bytes(b"".join(corpus_lines()))
    ids = tmp_path / "ids.txt"
    ids.write_text("d4\nnowhere\n")
    out = tmp_path / "clean"
    result = CliRunner().invoke(main, ["clean", str(source), "--audit", str(audit), "--ids", str(ids), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert b'"d4"' not in (out / "corpus.jsonl").read_bytes() and b'"d3"' in (out / "corpus.jsonl").read_bytes()
    assert "1 chosen id(s) are in no input file, e.g. 'nowhere'" in result.output


def test_clean_parquet_and_line_text(tables, tmp_path):
    from corpus_audit.corpus.clean import clean_corpus
    from corpus_audit.corpus.documents import ReaderOptions

    frame = pd.DataFrame({"id": ["d1", "d2", "d3"], "text": ["a", "b", "c"], "n": [1, 2, 3]})
    frame.to_parquet(tmp_path / "c.parquet")
    text = tmp_path / "c.txt"
    text.write_bytes(b"first\n\nsecond\r\nthird")
    result = clean_corpus([str(tmp_path / "c.parquet")], ReaderOptions(), {"d2"}, tmp_path / "out", log=lambda _: None)
    assert pd.read_parquet(tmp_path / "out" / "c.parquet").equals(frame.iloc[[0, 2]].reset_index(drop=True))
    assert result.records_removed == 1
    clean_corpus([str(text)], ReaderOptions(line_docs=True), {f"{text}:3"}, tmp_path / "out2", log=lambda _: None)
    assert (tmp_path / "out2" / "c.txt").read_bytes() == b"first\n\nthird"


def test_clean_refuses_what_it_cannot_rewrite(tables, tmp_path):
    audit = write_audit(tmp_path / "audit", tables)
    csv = tmp_path / "corpus.csv"
    csv.write_text("id,text\nd1,one\n")
    result = CliRunner().invoke(main, ["clean", str(csv), "--audit", str(audit), "--top", "1", "-o",
                                       str(tmp_path / "out")])
    assert result.exit_code != 0 and "clean rewrites jsonl, txt, parquet files" in result.output
    assert not (tmp_path / "out").exists()
    both = CliRunner().invoke(main, ["clean", str(csv), "--audit", str(audit), "--top", "1", "--min-score", "0.5",
                                     "-o", str(tmp_path / "out")])
    assert both.exit_code != 0 and "exactly one of --top, --min-score or --ids" in both.output
    source = tmp_path / "corpus.jsonl"
    source.write_bytes(b"".join(corpus_lines()))
    into_itself = CliRunner().invoke(main, ["clean", str(source), "--audit", str(audit), "--top", "1", "-o",
                                            str(tmp_path)])
    assert into_itself.exit_code != 0 and "holds the input itself" in into_itself.output


def test_documents_of_an_audit_without_the_gate_are_refused(tables, tmp_path):
    filtered, sentences = tables
    audit = write_audit(tmp_path / "audit", (filtered, sentences.drop(columns="judgement_strength")))
    result = CliRunner().invoke(main, ["documents", str(audit)])
    assert result.exit_code != 0 and "no judgement gate" in result.output
    assert np.isfinite(document_scores(*tables)[STIGMA_SCORE]).all()


def test_clean_refuses_a_corpus_the_audit_did_not_read(tables, tmp_path):
    audited = tmp_path / "in" / "corpus.jsonl"
    audited.parent.mkdir()
    audited.write_bytes(b"".join(corpus_lines()))
    audit = write_audit(tmp_path / "audit", tables, inputs=(audited,))
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x1", "text": "another corpus"}) + "\n")
    out = tmp_path / "clean"
    refused = CliRunner().invoke(main, ["clean", str(other), "--audit", str(audit), "--top", "2", "-o", str(out)])
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert f"{other} is not a file the audit in {audit} read ({audited})" in refused.output and not out.exists()
    copy = tmp_path / "copy" / "corpus.jsonl"  # the same corpus moved or copied: same name and size
    copy.parent.mkdir()
    copy.write_bytes(audited.read_bytes())
    moved = CliRunner().invoke(main, ["clean", str(copy), "--audit", str(audit), "--top", "2", "-o", str(out)])
    assert moved.exit_code == 0, moved.output


def test_clean_of_a_folder_keeps_its_tree_and_sums_up(tables, tmp_path):
    folder = tmp_path / "corpus"
    for index in range(30):
        part = folder / f"part-{index % 3}" / f"file-{index}.jsonl"
        part.parent.mkdir(parents=True, exist_ok=True)
        records = [{"id": f"d{index}-{n}", "text": "text"} for n in range(3)]
        if index == 7:
            records[1]["id"] = "d1"  # the one document the audit ranks first
        part.write_text("".join(json.dumps(record) + "\n" for record in records))
    audit = write_audit(tmp_path / "audit", tables, inputs=(folder,))
    out = tmp_path / "clean"
    result = CliRunner().invoke(main, ["clean", str(folder), "--audit", str(audit), "--top", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(path.relative_to(out) for path in out.rglob("*.jsonl")) == \
        sorted(path.relative_to(folder) for path in folder.rglob("*.jsonl"))
    assert b'"d1"' not in (out / "part-1" / "file-7.jsonl").read_bytes()
    lines = result.output.splitlines()
    assert len(lines) < 6, result.output  # not one line per file
    assert f"{folder / 'part-1' / 'file-7.jsonl'}: removed 1 record(s)" in result.output
    assert "30 files rewritten under" in result.output and "1 of them with records removed" in result.output
