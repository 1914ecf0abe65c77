"""The Python API gives what the command line gives: the mentions of the matcher, the columns of `corpus-audit
score`, the document scores of `corpus-audit documents` (batched across documents, one model call per batch) and
the results of `corpus-audit audit`; and `import corpus_audit` stays cheap."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]


def test_import_corpus_audit_loads_no_api_until_asked():
    code = ("import sys, corpus_audit; assert corpus_audit.__version__; "
            "loaded = [name for name in ('corpus_audit.api', 'pandas', 'torch', 'numpy') if name in sys.modules]; "
            "assert not loaded, loaded; corpus_audit.Instrument; assert 'corpus_audit.api' in sys.modules")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False,
                            env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert result.returncode == 0, result.stderr
    import corpus_audit

    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        corpus_audit.Nothing  # noqa: B018


def test_mentions_give_illness_type_form_and_span():
    from corpus_audit import Instrument, Mention

    text = "My brother has schizophrenia and those psychos scare me."
    mentions = Instrument("en").mentions(text)
    assert mentions == [Mention("schizophrenia", 15, 28, "schizophrenia", "mental", "diagnosis"),
                        Mention("psychos", 39, 46, "mental illness (generic)", "mental", "slang")]
    assert [text[m.start:m.end] for m in mentions] == ["schizophrenia", "psychos"]
    paper = Instrument("en", terms="paper").mentions(text)
    assert [m.surface for m in paper] == ["schizophrenia"]  # the paper's term set has diagnoses only




@pytest.mark.slow
def test_score_sentences_has_the_score_commands_columns_and_values(instrument, tmp_path):
    from corpus_audit.cli import main

    texts = ["People with depression are lazy.", "I was diagnosed with asthma.", "   "]
    source = tmp_path / "in.csv"
    pd.DataFrame({"text": texts}).to_csv(source, index=False)
    output = tmp_path / "out.parquet"
    result = CliRunner().invoke(main, ["score", str(source), "-o", str(output), "--no-embedding-cache"])
    assert result.exit_code == 0, result.output
    by_cli = pd.read_parquet(output)
    by_api = instrument.score_sentences(texts)
    assert list(by_api.columns[1:]) == list(by_cli.columns[1:])
    pd.testing.assert_frame_equal(by_api.drop(columns="sentence"), by_cli.drop(columns="text"), atol=1e-6,
                                  check_dtype=False)
    assert by_api.loc[0, "category"] == "judgement" and by_api.loc[0, "stigma"] > by_api.loc[1, "stigma"]
    assert np.isnan(by_api.loc[2, "stigma"])  # a blank text has no score


@pytest.mark.slow
def test_document_scores_are_those_of_corpus_audit_documents(instrument, demo_slice, slice_audit):
    expected = pd.read_parquet(slice_audit / "documents.parquet")
    got = instrument.score_documents(instrument.read(demo_slice))
    assert got["doc_id"].tolist() == expected["doc_id"].tolist()  # the same documents, ranked the same
    pd.testing.assert_frame_equal(got, expected, atol=1e-6, check_dtype=False)
    assert instrument.read_stats.documents == 80


@pytest.mark.slow
def test_documents_are_batched_across_documents_one_model_call_per_batch(instrument, demo_slice, monkeypatch):
    records = [json.loads(line) for line in demo_slice.read_text().splitlines()]
    whole = instrument.score_documents(records)
    calls = []
    project = instrument._project
    monkeypatch.setattr(instrument, "_project",
                        lambda texts, forms=None: calls.append(len(texts)) or project(texts, forms))
    batches = list(instrument.iter_document_batches(records, batch_sentences=16))
    assert len(batches) > 2 and len(calls) == sum(1 for batch in batches if len(batch.sentences))
    assert sum(len(batch.documents) for batch in batches) == len(records)  # every document, in one batch each
    assert all(len(batch.mentions) == len(batch.documents) for batch in batches)
    from corpus_audit.score.documents import rank_documents

    rebuilt = rank_documents(pd.concat([batch.scores for batch in batches if len(batch.scores)]))
    # a batch without a judgement has no top dimension (None) where the others have text: the same missing value
    pd.testing.assert_frame_equal(rebuilt.astype(whole.dtypes.to_dict()), whole, atol=1e-6, check_dtype=False)
    mentioned = next(batch for batch in batches if len(batch.scores))
    counts = mentioned.mentions[[doc.id for doc in mentioned.documents].index(mentioned.scores["doc_id"].iloc[0])]
    assert sum(by_type["mental"] + by_type["physical"] for by_type in counts.values()) >= 1


@pytest.mark.slow
def test_records_without_text_are_skipped_and_counted(instrument):
    with pytest.warns(UserWarning, match="skipped 3 record"):
        table = instrument.score_documents([{"id": "a", "text": None}, {"id": "b"}, 42,
                                            ("c", "I have asthma and it is fine.")])
    assert table["doc_id"].tolist() == ["c"]
    assert instrument.skipped.counts == {"no text in 'text'": 2, "not a text, record or (id, text) pair: int": 1}


@pytest.mark.slow
def test_an_audit_of_records_gives_the_results_of_the_command_line(instrument, demo_slice, slice_audit, tmp_path):
    from corpus_audit.audit.folder import AuditFolder

    records = [json.loads(line) for line in demo_slice.read_text().splitlines()]
    results = instrument.audit(records, tmp_path / "api-audit")
    expected = AuditFolder(slice_audit).read_summary()
    assert results.summary.analysis.to_dict() == expected.analysis.to_dict()
    assert results.summary.filter["sentences_kept"] == expected.filter["sentences_kept"]
    pd.testing.assert_frame_equal(results.documents, pd.read_parquet(slice_audit / "documents.parquet"))
    assert results.outdir == tmp_path / "api-audit" and (results.outdir / "report.html").is_file()
