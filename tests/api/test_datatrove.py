"""The datatrove steps: a reader -> annotator -> filter -> writer pipeline on a slice of the demo gives the document
scores of `corpus-audit documents`; documents the annotator cannot score pass through, counted; the filter drops
by threshold or top share, keeps what it cannot read, and says why in datatrove's stats and exclusion writer."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

pytest.importorskip("datatrove")

from datatrove.data import Document

from corpus_audit.api.datatrove import (BAD_METADATA, DEFAULT_THRESHOLD, NO_TEXT, OTHER_LANGUAGE, SKIPPED_KEY,
                                        StigmaAnnotator, StigmaFilter)

SPANISH = " ".join(["El paciente de la consulta tiene una vida con muchos amigos y su familia que lo quiere."] * 20)


def read_jsonl_gz(folder) -> list[dict]:
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl.gz"))
            for line in gzip.open(path, "rt", encoding="utf-8")]


@pytest.mark.slow
def test_a_local_pipeline_gives_the_document_scores_of_corpus_audit_documents(demo_slice, slice_audit, tmp_path):
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    expected = pd.read_parquet(slice_audit / "documents.parquet").set_index("doc_id")
    threshold = round(float(expected["stigma_score"].quantile(0.8)), 3)  # drops about a fifth of the scored ones
    LocalPipelineExecutor([
        JsonlReader(str(demo_slice.parent), glob_pattern=demo_slice.name),
        StigmaAnnotator("en", batch_sentences=32),
        StigmaFilter(threshold=threshold, exclusion_writer=JsonlWriter(str(tmp_path / "removed"))),
        JsonlWriter(str(tmp_path / "kept")),
    ], tasks=1, logging_dir=str(tmp_path / "logs")).run()
    kept, removed = read_jsonl_gz(tmp_path / "kept"), read_jsonl_gz(tmp_path / "removed")
    assert len(kept) + len(removed) == 80
    scores = {record["id"]: record["metadata"]["stigma_score"] for record in kept + removed}
    scored = {doc: score for doc, score in scores.items() if score is not None}
    assert set(scored) == set(expected.index)  # documents without an illness sentence have None
    for doc, score in scored.items():
        assert score == pytest.approx(expected.loc[doc, "stigma_score"], abs=1e-6)
    assert {record["id"] for record in removed} == set(expected.index[expected["stigma_score"] >= threshold])
    assert removed and all(record["metadata"]["filter_reason"] == f"stigma_score>={threshold:g}"
                           for record in removed)
    top = expected.index[0]
    metadata = next(record["metadata"] for record in kept + removed if record["id"] == top)
    assert metadata["stigma_top_sentence"] == expected.loc[top, "top_sentence"]
    assert metadata["illness_sentences"] == expected.loc[top, "n_sentences"]
    assert sum(sum(by_type.values()) for by_type in metadata["illness_mentions"].values()) >= 1
    stats = json.loads((tmp_path / "logs" / "stats.json").read_text())
    annotator = next(step["stats"] for step in stats if "annotator" in step["name"])
    assert annotator["documents_annotated"] == 80 and annotator["batches"] >= 2  # counters: plain numbers
    dropped = next(step["stats"] for step in stats if "filter" in step["name"])
    assert dropped["dropped"] == len(removed)


def test_documents_the_annotator_cannot_score_pass_through_counted():
    annotator = StigmaAnnotator("en")
    documents = [Document("", "empty"), Document("I have asthma, it is fine.", "tagged", metadata={"language": "es"}),
                 Document("I have asthma, it is fine.", "fineweb2", metadata={"language": "spa_Latn"}),
                 Document(SPANISH, "spanish"), Document("No illness here.", "plain"),
                 Document("Nothing either.", "english", metadata={"language": "eng_Latn"}),
                 Document("text", "broken", metadata=None), Document("x", "odd", metadata={"language": 3})]
    passed = list(annotator.run(iter(documents)))
    assert [doc.id for doc in passed] == [doc.id for doc in documents]  # every one, in order
    reasons = {doc.id: doc.metadata.get(SKIPPED_KEY) if isinstance(doc.metadata, dict) else None for doc in passed}
    assert reasons == {"empty": NO_TEXT, "tagged": OTHER_LANGUAGE, "fineweb2": OTHER_LANGUAGE,
                       "spanish": OTHER_LANGUAGE, "plain": None, "english": None, "broken": None,
                       "odd": BAD_METADATA}
    stats = {name: annotator.stats[name].total for name in (NO_TEXT, OTHER_LANGUAGE, BAD_METADATA)}
    assert stats == {NO_TEXT: 1, OTHER_LANGUAGE: 3, BAD_METADATA: 2}
    plain = passed[4].metadata
    assert plain["stigma_score"] is None and plain["illness_sentences"] == 0 and plain["illness_mentions"] == {}


def test_the_filter_drops_a_top_share_and_keeps_what_it_cannot_read():
    documents = [Document(f"t{i}", str(i), metadata={"stigma_score": score})
                 for i, score in enumerate([0.9, 0.1, 0.8, None, "high", 0.5])]
    step = StigmaFilter(top_share=0.5)
    kept = [doc.id for doc in step.run(iter(documents))]
    assert kept == ["1", "3", "4", "5"]  # 4 scored, the top 2 (0.9, 0.8) dropped
    assert step.stats["unreadable_stigma_score"].total == 1 and step.stats["kept_unscored"].total == 1
    assert step.stats["dropped_stigma_score_top_50%"].total == 2
    by_threshold = StigmaFilter(threshold=0.5)
    assert [doc.id for doc in by_threshold.run(iter(documents))] == ["1", "3", "4"]
    for wrong in ({"threshold": 0.5, "top_share": 0.1}, {"threshold": 2.0}, {"top_share": 1.0}):
        with pytest.raises(ValueError):
            StigmaFilter(**wrong)


def test_the_steps_build_with_defaults_as_datatrove_steps_do():
    documents = [Document(f"t{i}", str(i), metadata={"stigma_score": score})
                 for i, score in enumerate([0.49, 0.5, 0.93, None])]
    default = StigmaFilter()
    assert default.threshold == DEFAULT_THRESHOLD == 0.5 and default.top_share is None
    assert [doc.id for doc in default.run(iter(documents))] == ["0", "3"]  # 0.5 and above dropped
    assert default.stats["dropped_stigma_score>=0.5"].total == 2
    annotator = StigmaAnnotator()
    assert (annotator.lang, annotator.model, annotator.language_key) == ("en", None, "language")


def test_the_annotator_refuses_an_unknown_option_when_the_pipeline_is_built():
    with pytest.raises(TypeError):
        StigmaAnnotator("en", modle="minilm")
