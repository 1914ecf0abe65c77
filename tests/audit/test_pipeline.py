"""`corpus-audit audit`: outputs, resume from checkpoints, and the sentence selection helpers."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from corpus_audit.common.atomic import folder_lock
from corpus_audit.audit.score_parts import ScoreParts
from corpus_audit.corpus.matcher import IllnessMatcher
from corpus_audit.corpus.select import mask_mentions, select_sentences
from corpus_audit.languages import LANGUAGES
from corpus_audit.cli import main
from corpus_audit.score.scorer import LocalScorer
from corpus_audit.scm.columns import OUTPUT_COLUMNS, STIGMA_COLUMN

SAMPLE = str(Path(__file__).parents[1] / "data" / "corpus_reddit_sample_en.jsonl.gz")


def audit(outdir: Path, model: str, axes: str, *extra: str):
    return CliRunner().invoke(
        main, ["audit", SAMPLE, "--lang", "en", "-o", str(outdir), "--model", model, "--axes", axes, "--workers", "1",
               *extra])


@pytest.fixture(scope="module")
def finished(tiny_st_model, tiny_axes, tmp_path_factory):
    outdir = tmp_path_factory.mktemp("audit")
    result = audit(outdir, tiny_st_model, tiny_axes)
    assert result.exit_code == 0, result.output + result.stderr
    return outdir, result


def test_outputs_hold_every_distinct_kept_sentence(finished):
    outdir, result = finished
    filtered = pd.read_parquet(outdir / "filtered.parquet")
    sentences = pd.read_parquet(outdir / "sentences.parquet")
    assert len(sentences) == filtered["sentence"].nunique() > 0
    assert sentences[["warmth", "competence"]].notna().all().all()
    assert set(sentences["quadrant"]) <= {"warm-competent", "warm-incompetent", "cold-competent", "cold-incompetent"}
    summary = json.loads((outdir / "summary.json").read_text())
    assert summary["analysis"]["n_sentences"] == len(sentences)
    assert summary["score"]["duplicates_removed"] == len(filtered) - len(sentences)
    assert summary["filter"]["sentences_kept"] == len(filtered)
    assert set(summary["seconds"]) == {"filter", "score", "analyse", "plot"}
    for name in ("density", "density_by_illness", "quadrant_shares", "aq27"):
        assert (outdir / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert not (outdir / f"{name}.svg").exists()  # SVG copies: corpus-audit plot --svg
    aq27 = pd.read_csv(outdir / "aq27.csv")
    assert aq27["dimension"].tolist()[:3] == ["Anger", "Avoidance", "Blame"] and len(aq27) == 9
    assert "sentences scored" in result.output
    assert "<html" in (outdir / "report.html").read_text()


def test_rerun_resumes_without_recomputing(finished, tiny_st_model, tiny_axes):
    outdir, _ = finished
    names = ("filtered.parquet", "sentences.parquet", "summary.json", "report.html", "aq27.csv", "density.png")
    before = {name: (outdir / name).stat().st_mtime_ns for name in names}
    again = audit(outdir, tiny_st_model, tiny_axes)
    assert again.exit_code == 0, again.output + again.stderr
    assert "filter: up to date, skipped" in again.stderr and "score: up to date, skipped" in again.stderr
    assert "analysis, figures and report: up to date, skipped" in again.stderr
    assert {name: (outdir / name).stat().st_mtime_ns for name in before} == before
    assert "sentences scored" in again.output  # the summary of the finished run is reported again


def test_changed_bias_map_redraws_only_the_report(finished, tiny_st_model, tiny_axes, tmp_path):
    outdir = shutil.copytree(finished[0], tmp_path / "audit")
    bias_map = tmp_path / "bias_map.csv"
    bundled = (Path(__file__).parents[2] / "lexicons" / "bias_map.csv").read_text(encoding="utf-8")
    bias_map.write_text(bundled.replace("\n", "\n", 1) + "\n", encoding="utf-8")  # same map, other bytes
    again = audit(outdir, tiny_st_model, tiny_axes, "--bias-map", str(bias_map))
    assert again.exit_code == 0, again.output + again.stderr
    assert "score: up to date, skipped" in again.stderr
    assert "analysis, figures and report: running (bias map, options changed since the last run)" in again.stderr


def test_changed_options_rerun_only_the_stages_they_affect(tiny_st_model, tiny_axes, tmp_path):
    first = audit(tmp_path, tiny_st_model, tiny_axes)
    assert first.exit_code == 0
    second = audit(tmp_path, tiny_st_model, tiny_axes, "--max-sentences", "5")
    assert second.exit_code == 0, second.output + second.stderr
    assert "filter: up to date, skipped" in second.stderr
    assert "score: running (max_sentences changed since the last run)" in second.stderr
    counts = pd.read_parquet(tmp_path / "sentences.parquet")["illness_type"].value_counts()
    assert counts.max() <= 5


def test_mask_mentions_replaces_the_matched_spans_only():
    sentence = "My Depression and PTSD are worse; depressions aside."
    mask = LANGUAGES["en"].mask
    assert mask_mentions(sentence, [[3, 13], [18, 22]], mask) == f"My {mask} and {mask} are worse; depressions aside."
    assert mask_mentions("Tiene DEPRESIÓN y diabetes.", [[6, 15], [18, 26]], LANGUAGES["es"].mask) == \
        "Tiene esta afección y esta afección."


def test_masking_uses_the_matchers_offsets_not_every_occurrence_of_the_term():
    """The matcher rejects "depresión del segmento ST" (an ECG finding) by its context rule but accepts the
    depression of the same sentence: only the accepted mention is masked (re-finding the term by regex masked
    both, 7 of 13,593 sentences of the shared CodiEsp corpora)."""
    sentence = "Tiene depresión desde hace años y una depresión del segmento ST en el ECG."
    matches = IllnessMatcher.for_language("es").find(sentence)
    assert [m.surface for m in matches] == ["depresión"]
    masked = mask_mentions(sentence, [[m.start, m.end] for m in matches], LANGUAGES["es"].mask)
    assert masked == "Tiene esta afección desde hace años y una depresión del segmento ST en el ECG."


def select_with_pandas(frame: pd.DataFrame, max_sentences: int | None, seed: int) -> tuple[pd.DataFrame, int]:
    """The selection as the audit made it before it streamed the file (the reference for select_sentences)."""
    distinct = frame.drop_duplicates(subset="sentence", keep="first")
    if max_sentences is None:
        return distinct, len(frame) - len(distinct)
    shuffled = distinct.sample(frac=1.0, random_state=seed)
    return shuffled.groupby("illness_type").head(max_sentences).sort_index(), len(frame) - len(distinct)


def test_select_sentences_deduplicates_then_caps_each_type(tmp_path):
    path = tmp_path / "f.parquet"
    pd.DataFrame({"sentence": ["a", "a", "b", "c", "d", "e"], "terms": [["x"]] * 6,
                  "illness_type": ["mental", "mental", "mental", "mental", "physical", "physical"]}).to_parquet(path)
    distinct, duplicates = select_sentences(path, None, seed=0)
    assert duplicates == 1 and distinct["sentence"].tolist() == ["a", "b", "c", "d", "e"]
    capped, _ = select_sentences(path, 2, seed=0)
    assert capped["illness_type"].value_counts().to_dict() == {"mental": 2, "physical": 2}


def test_streamed_selection_equals_the_pandas_one(tmp_path):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    path = tmp_path / "f.parquet"
    rows = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "é", "f g", ""]) | st.text(max_size=3),
                              st.sampled_from(["mental", "physical", "both"])), max_size=60)

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(rows, st.none() | st.integers(1, 8), st.integers(0, 3), st.integers(1, 7))
    def check(data, max_sentences, seed, batch_rows):
        frame = pd.DataFrame({"doc_id": [str(i) for i in range(len(data))], "sentence": [r[0] for r in data],
                              "terms": [[r[0][:1]] for r in data], "illness_type": [r[1] for r in data]})
        frame.to_parquet(path, index=False)
        got, duplicates = select_sentences(path, max_sentences, seed, batch_rows=batch_rows)
        want, want_duplicates = select_with_pandas(pd.read_parquet(path), max_sentences, seed)
        assert duplicates == want_duplicates
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))

    check()


def test_custom_bias_map_changes_the_aq27_table(tiny_st_model, tiny_axes, tmp_path):
    custom = tmp_path / "map.csv"
    custom.write_text("dimension,warmth,competence,source_note\nKindness,high,any,test\nScorn,low,low,test\n")
    result = audit(tmp_path / "out", tiny_st_model, tiny_axes, "--bias-map", str(custom))
    assert result.exit_code == 0, result.output
    assert pd.read_csv(tmp_path / "out" / "aq27.csv")["dimension"].tolist() == ["Kindness", "Scorn"]
    bad = tmp_path / "bad.csv"
    bad.write_text("dimension,warmth,competence\nOdd,lukewarm,any\n")
    result = audit(tmp_path / "out", tiny_st_model, tiny_axes, "--bias-map", str(bad))
    assert result.exit_code == 1 and "line 2" in result.output


class _HashEmbedder:
    """Deterministic fake embedder: counts what it embeds and can crash after a number of calls."""

    model_id = "fake:hash@000000000000"
    dimension = 4

    def __init__(self, crash_after: int | None = None) -> None:
        self.crash_after, self.calls, self.embedded = crash_after, 0, 0

    def encode(self, texts, show_progress=None):
        if self.crash_after is not None and self.calls >= self.crash_after:
            raise KeyboardInterrupt  # the run dies in the middle of embedding
        self.calls += 1
        self.embedded += len(texts)
        return np.array([[zlib.crc32(t.encode()) % 1000 / 500 - 1, len(t) / 50 - 1, 0, 0] for t in texts], np.float32)


class _FirstTwoColumns:
    """Axes without a judgement gate: warmth and competence, the other instrument columns NaN."""

    def measure(self, vectors, texts=None, forms=None):
        return np.hstack([vectors[:, :2], np.full((len(vectors), len(OUTPUT_COLUMNS) - 2), np.nan, np.float32)])


def loaded(embedder, axes) -> SimpleNamespace:
    """A model loader (what LocalScorer takes) that hands over an embedder and axes made in the test."""
    return SimpleNamespace(load=lambda: (embedder, axes))


def test_score_parts_resume_after_a_crash_gives_the_uninterrupted_result(tmp_path, monkeypatch):
    monkeypatch.setattr(ScoreParts, "chunk", 10)
    texts = [f"sentence number {i} about something" for i in range(45)]
    logs: list[str] = []
    whole = ScoreParts(tmp_path / "a", "key", len(texts)).score(
        texts, LocalScorer(loaded(_HashEmbedder(), _FirstTwoColumns())), logs.append, False)
    crashing = _HashEmbedder(crash_after=2)
    with pytest.raises(KeyboardInterrupt):
        ScoreParts(tmp_path / "b", "key", len(texts)).score(texts, LocalScorer(loaded(crashing, _FirstTwoColumns())),
                                                             logs.append, False)
    resumed_embedder = _HashEmbedder()
    parts = ScoreParts(tmp_path / "b", "key", len(texts))
    resumed = parts.score(texts, LocalScorer(loaded(resumed_embedder, _FirstTwoColumns())), logs.append, False)
    np.testing.assert_array_equal(resumed, whole)
    assert resumed_embedder.embedded == 25  # only the three chunks the crash left unscored
    assert parts.model_id == _HashEmbedder.model_id
    assert "score: resumed, 20 of 45 sentences were already scored" in logs
    # Saved chunks of another configuration are never reused.
    other = _HashEmbedder()
    ScoreParts(tmp_path / "b", "other key", len(texts)).score(texts, LocalScorer(loaded(other, _FirstTwoColumns())),
                                                              logs.append, False)
    assert other.embedded == 45 and any(m.startswith("score: discarding saved chunks of another configuration")
                                        for m in logs)


class _FormsInStigma(_FirstTwoColumns):
    """Axes whose stigma column counts the forms each text was scored with (-1: none given)."""

    def measure(self, vectors, texts=None, forms=None):
        out = super().measure(vectors, texts)
        out[:, OUTPUT_COLUMNS.index(STIGMA_COLUMN)] = -1 if forms is None else [len(f) for f in forms]
        return out


def test_the_forms_of_each_sentence_reach_the_axes_chunk_by_chunk(tmp_path, monkeypatch):
    """The mask erases whether a mention was a slur or a diagnosis: each sentence's forms travel with it."""
    monkeypatch.setattr(ScoreParts, "chunk", 4)
    texts = [f"sentence {i} about this condition" for i in range(10)]
    forms = [("slang",) * (i % 3) + ("diagnosis",) for i in range(10)]  # one form per text, repeated i % 3 times
    forms[3] = ("slang", "diagnosis", "slang")
    scores = ScoreParts(tmp_path / "a", "key", len(texts)).score(
        texts, LocalScorer(loaded(_HashEmbedder(), _FormsInStigma())), lambda message: None, False, forms)
    stigma = scores[:, OUTPUT_COLUMNS.index(STIGMA_COLUMN)]
    # each text's forms reach the axes as a set: one or two distinct forms
    assert stigma.tolist() == [len(set(f)) for f in forms]
    unknown = ScoreParts(tmp_path / "b", "key", len(texts)).score(
        texts, LocalScorer(loaded(_HashEmbedder(), _FormsInStigma())), lambda message: None, False)
    assert (unknown[:, OUTPUT_COLUMNS.index(STIGMA_COLUMN)] == -1).all()


def test_guard_rails_fail_before_any_work(tmp_path, tiny_st_model, tiny_axes, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = audit(blocker / "out", tiny_st_model, tiny_axes)
    assert result.exit_code == 1 and "cannot write to" in result.output
    result = CliRunner().invoke(main, ["audit", SAMPLE, "--lang", "en", "-o", str(tmp_path / "m"), "--model",
                                       str(tmp_path / "no-model")])
    assert result.exit_code == 1 and "model folder not found" in result.output
    assert not (tmp_path / "m" / "filtered.parquet").exists()  # nothing was filtered first
    outdir = tmp_path / "busy"
    outdir.mkdir()
    with folder_lock(outdir):
        result = audit(outdir, tiny_st_model, tiny_axes)
    assert result.exit_code == 1 and "is in use by another run (pid" in result.output
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9 - 10**6, 10**6))
    result = audit(tmp_path / "full", tiny_st_model, tiny_axes)
    assert result.exit_code == 1 and "has only 1 MB free" in result.output
