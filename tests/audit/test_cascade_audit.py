"""`corpus-audit audit --cascade`: the encoder reads the triage's band and the random sample, the statistics weigh
what it read, every document keeps a score, and the encoder's scores are the full path's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from corpus_audit.cli import main
from corpus_audit.corpus.select import mask_mentions
from corpus_audit.languages import LANGUAGES
from corpus_audit.scm.axes import SCMAxes
from corpus_audit.scm.columns import OUTPUT_COLUMNS
from corpus_audit.score.cascade import sample_draws, triage_stigma
from corpus_audit.score.scorer import prepare_text

SAMPLE = str(Path(__file__).parents[1] / "data" / "corpus_reddit_sample_en.jsonl.gz")
SHARE = 0.3


def audit(outdir: Path, model: str, axes: str, *extra: str):
    result = CliRunner().invoke(main, ["audit", SAMPLE, "--lang", "en", "-o", str(outdir), "--model", model,
                                       "--axes", axes, "--workers", "1", *extra])
    assert result.exit_code == 0, result.output + result.stderr
    return result


@pytest.fixture(scope="module")
def both(tiny_st_model, triage_axes, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cascade")
    full = audit(folder / "full", tiny_st_model, triage_axes, "--cascade", "off")
    cascade = audit(folder / "cascade", tiny_st_model, triage_axes, "--cascade", "on", "--cascade-sample", str(SHARE))
    return folder / "full", folder / "cascade", cascade


def test_the_encoder_reads_the_band_and_the_sample_and_its_scores_are_the_full_paths(both, triage_axes):
    full_dir, cascade_dir, _ = both
    full, cascade = (pd.read_parquet(folder / "sentences.parquet") for folder in (full_dir, cascade_dir))
    assert full["sentence"].tolist() == cascade["sentence"].tolist() and len(full) > 40
    filtered = pd.read_parquet(cascade_dir / "filtered.parquet").drop_duplicates("sentence").set_index("sentence")
    texts = [prepare_text(mask_mentions(s, filtered.loc[s, "term_offsets"], LANGUAGES["en"].mask))[0]
             for s in cascade["sentence"]]
    triage = triage_stigma(SCMAxes.load(triage_axes), texts)
    band, sample = triage >= 0.5, sample_draws(texts, 0) < SHARE
    assert 0 < band.sum() < len(band) and 0 < sample.sum() < len(sample) and (band | sample).sum() < len(band)
    assert cascade["in_sample"].tolist() == sample.tolist()
    assert cascade["scored_by"].tolist() == np.where(band | sample, "encoder", "triage").tolist()
    read = (band | sample)
    np.testing.assert_allclose(cascade.loc[read, list(OUTPUT_COLUMNS)].to_numpy(dtype=float),
                               full.loc[read, list(OUTPUT_COLUMNS)].to_numpy(dtype=float), atol=1e-5, rtol=0)
    assert pd.Series(cascade.loc[read, "category"]).equals(pd.Series(full.loc[read, "category"]))
    rest = cascade[~read]
    assert rest[["warmth", "competence"]].isna().all().all()
    np.testing.assert_allclose(rest["stigma"], triage[~read], rtol=1e-6)


def test_the_statistics_weigh_what_the_encoder_read_and_every_document_keeps_a_score(both):
    full_dir, cascade_dir, result = both
    summary = json.loads((cascade_dir / "summary.json").read_text())
    record = summary["score"]["cascade"]
    sentences = pd.read_parquet(cascade_dir / "sentences.parquet")
    read, sample = sentences["scored_by"].eq("encoder").to_numpy(), sentences["in_sample"].to_numpy()
    # the weight is how many sentences a row stands for: 1 in the band; outside it, per illness type, the sentences
    # there over those sampled, so each type's weights add up to its sentences
    in_band = read & sentences["design_weight"].eq(1.0).to_numpy()
    assert int(in_band.sum()) == record["band"] and read.sum() == record["encoded"] and not (~read & sample).any()
    for kind, rows_of_kind in sentences.groupby("illness_type"):
        band_of_kind = in_band[rows_of_kind.index]
        if (rows_of_kind["in_sample"] & ~band_of_kind).any():
            assert rows_of_kind["design_weight"].sum() == pytest.approx(len(rows_of_kind)), kind
    outside = sentences.loc[sample & ~in_band, "design_weight"]
    assert outside.between(1.5, 2 / SHARE).all() and abs(outside.mean() - 1 / SHARE) < 1.5
    assert record["encoded"] == summary["analysis"]["n_sentences"]
    # the analysis's means are the weighted means of every sentence the encoder read (hand computed)
    rows = sentences[read]
    mental = rows[rows["illness_type"].isin(["mental", "both"])]
    hand = float(np.sum(mental["warmth"] * mental["design_weight"]) / mental["design_weight"].sum())
    assert summary["analysis"]["comparisons"]["warmth"]["mean_a"] == pytest.approx(hand, abs=1e-9)
    assert summary["analysis"]["comparisons"]["warmth"]["n_a"] == len(mental)
    # the commands that recompute statistics from an audit (compare, link, cross-lingual) read the sample, unweighted;
    # plot reads what the audit's analysis reads
    from corpus_audit.audit.folder import AuditFolder

    unweighted = AuditFolder(cascade_dir).read_statistics_sentences()
    assert unweighted["sentence"].tolist() == sentences.loc[sample, "sentence"].tolist()
    assert "design_weight" not in unweighted
    assert AuditFolder(cascade_dir).read_statistics_sentences(weighted=True)["sentence"].tolist() == \
        rows["sentence"].tolist()
    assert len(AuditFolder(full_dir).read_statistics_sentences(weighted=True)) == len(sentences)
    assert record["encoded"] + record["triage_only"] == record["sentences"] == len(sentences)
    assert summary["options"]["cascade"] == "on" and summary["options"]["cascade_sample"] == SHARE
    documents = [pd.read_parquet(folder / "documents.parquet") for folder in (full_dir, cascade_dir)]
    assert sorted(documents[0]["doc_id"]) == sorted(documents[1]["doc_id"])
    assert documents[1]["stigma_score"].notna().all()
    assert "cascade: The encoder read" in result.output
    report = (cascade_dir / "report.html").read_text()
    assert "scored by the triage only" in report and "each weighted by how many sentences it stands for" in report
    assert json.loads((full_dir / "summary.json").read_text())["score"]["cascade"] is None
    assert "scored_by" not in pd.read_parquet(full_dir / "sentences.parquet")


def test_a_rerun_resumes_and_another_share_scores_again(both, tiny_st_model, triage_axes, tmp_path):
    cascade_dir = tmp_path / "cascade"  # a copy: the other tests read the module's audit
    shutil.copytree(both[1], cascade_dir)
    again = audit(cascade_dir, tiny_st_model, triage_axes, "--cascade", "on", "--cascade-sample", str(SHARE))
    assert "score: up to date, skipped" in again.stderr
    other = audit(cascade_dir, tiny_st_model, triage_axes, "--cascade", "on", "--cascade-sample", "0.5")
    assert "score: running" in other.stderr
    assert json.loads((cascade_dir / "summary.json").read_text())["score"]["cascade"]["sample_share"] == 0.5


def test_auto_runs_the_full_path_on_a_small_corpus_and_on_axes_without_a_triage(tiny_st_model, forms_axes,
                                                                                 triage_axes, tmp_path):
    for axes in (triage_axes, forms_axes):
        audit(tmp_path / "auto", tiny_st_model, axes, "--force")
        assert json.loads((tmp_path / "auto" / "summary.json").read_text())["score"]["cascade"] is None
    result = CliRunner().invoke(main, ["audit", SAMPLE, "--lang", "en", "-o", str(tmp_path / "on"), "--model",
                                       tiny_st_model, "--axes", forms_axes, "--workers", "1", "--cascade", "on"])
    assert result.exit_code != 0 and "no triage calibration" in result.output + result.stderr


def test_the_api_and_the_datatrove_annotator_give_the_audits_document_scores(both, tiny_st_model, triage_axes):
    from corpus_audit.api import Instrument
    from corpus_audit.audit.documents import read_documents

    _, cascade_dir, _ = both
    audited = read_documents(cascade_dir).set_index("doc_id")["stigma_score"]
    instrument = Instrument("en", tiny_st_model, axes=triage_axes, cascade=True, cascade_sample=SHARE)
    scored = instrument.score_documents(instrument.read(SAMPLE), batch_sentences=7).set_index("doc_id")
    assert sorted(scored.index) == sorted(audited.index)
    np.testing.assert_allclose(scored["stigma_score"].reindex(audited.index), audited, atol=1e-5, rtol=0)
    full = Instrument("en", tiny_st_model, axes=triage_axes).score_documents(instrument.read(SAMPLE))
    assert not np.allclose(full.set_index("doc_id")["stigma_score"].reindex(audited.index), audited, atol=1e-5)
    pytest.importorskip("datatrove")
    from datatrove.data import Document as DatatroveDocument

    from corpus_audit.api.datatrove import SCORE_KEY, StigmaAnnotator

    annotator = StigmaAnnotator("en", tiny_st_model, axes=triage_axes, cascade=True, cascade_sample=SHARE)
    documents = [DatatroveDocument(text=doc.text, id=doc.id) for doc in instrument.read(SAMPLE)]
    annotated = {doc.id: doc.metadata[SCORE_KEY] for doc in annotator.run(iter(documents))}
    np.testing.assert_allclose([annotated[doc_id] for doc_id in audited.index], audited, atol=1e-5, rtol=0)
