"""`--engine ray` gives the local engine's outputs: the same kept sentences, tags, order and counts, and
scores within 1e-5. Ray runs in this process (``num_cpus=2``), started once for the module."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from corpus_audit.cli import main
from corpus_audit.corpus.documents import CorpusError, ReaderOptions
from corpus_audit.corpus.filter import CorpusSpec
from corpus_audit.engines import EngineError, EngineOptions, filter_corpus
from test_local_engine import write_tricky

DATA = Path(__file__).parents[1] / "data"
REDDIT = str(DATA / "corpus_reddit_sample_en.jsonl.gz")
RAY = EngineOptions("ray", concurrency=2)
VOLATILE = ("seconds", "megabytes_per_second", "output", "engine", "ray_workers")
SCORE_TOLERANCE = 1e-5


#: How long the module's teardown waits for ``ray.shutdown()`` (it takes a second or two when it returns).
SHUTDOWN_SECONDS = 60


@pytest.fixture(scope="module")
def ray_session():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield ray
    shutdown_or_go_on(ray)


def shutdown_or_go_on(ray, seconds: float = SHUTDOWN_SECONDS) -> None:
    """``ray.shutdown()``, which now and then never returns from closing its GCS error subscriber (seen once in
    CI here, after every test of the module had passed; ray-project/ray#29431 and #44836 report such hangs). After
    ``seconds`` the session goes on without it, and Ray's exit hook, which would wait on the same lock, is dropped:
    a hang in Ray's teardown must not hang the test run. No later test starts Ray."""
    import atexit
    import threading
    import warnings

    closing = threading.Thread(target=ray.shutdown, name="ray-shutdown", daemon=True)
    closing.start()
    closing.join(seconds)
    if closing.is_alive():
        atexit.unregister(ray._private.worker.shutdown)
        warnings.warn(f"ray.shutdown() did not return in {seconds:.0f} s; going on without it", stacklevel=1)


def filtered(out: Path, files: list[str], lang: str, engine: EngineOptions | None, options: ReaderOptions | None = None,
             keep: tuple[str, ...] = ("source",)) -> tuple[list[dict], dict]:
    """(rows, summary without timings) of a filter run."""
    summary = filter_corpus(CorpusSpec(tuple(files), options or ReaderOptions()), out, lang, keep_fields=keep,
                            workers=1, engine=engine).to_dict()
    for key in VOLATILE:
        summary.pop(key, None)
    return pq.read_table(out).to_pylist(), summary


def test_filter_gives_the_local_rows_and_counts(ray_session, tmp_path, monkeypatch):
    from corpus_audit.engines import ray as ray_engine

    # Many batches per file, spread over both actors.
    monkeypatch.setattr(ray_engine, "batch_bytes", lambda files, workers: 4096)
    tricky = tmp_path / "tricky.jsonl"
    write_tricky(tricky, ensure_ascii=False)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    lines = b"".join(b'{"id": "t%d", "text": "asthma %d. Fine."}\n' % (i, i) for i in range(3000))
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(lines)[:8000])  # a truncated download
    pd.DataFrame({"id": ["c1", "c2"], "text": ["A csv row about epilepsy.", "Nothing."]}).to_csv(tmp_path / "t.csv",
                                                                                             index=False)
    pd.DataFrame({"id": ["p1"], "text": ["Parquet says: I have ADHD."]}).to_parquet(tmp_path / "t.parquet")
    files = [REDDIT, str(DATA / "corpus_codiesp_sample_en.jsonl.gz"), str(tricky), str(tmp_path / "empty.jsonl"),
             str(tmp_path / "cut.jsonl.gz"), str(tmp_path / "t.csv"), str(tmp_path / "t.parquet")]
    local = filtered(tmp_path / "local.parquet", files, "en", None, keep=("source", "meta"))
    ray = filtered(tmp_path / "ray.parquet", files, "en", RAY, keep=("source", "meta"))
    assert ray == local
    rows, summary = local
    assert len(rows) > 100 and {row["doc_id"] for row in rows} >= {"c1", "p1", "t0", "nl"}
    assert summary["files"] == 7 and summary["skipped_by_reason"]["empty file"] == 1
    assert any(reason.startswith("truncated or corrupt") for reason in summary["skipped_by_reason"])
    spanish = [str(DATA / "corpus_codiesp_sample_es.jsonl.gz")]
    assert filtered(tmp_path / "es-ray.parquet", spanish, "es", RAY) == filtered(tmp_path / "es.parquet", spanish, "es",
                                                                                 None)


def test_strict_error_is_the_first_in_input_order(ray_session, tmp_path, monkeypatch):
    from corpus_audit.engines import ray as ray_engine

    monkeypatch.setattr(ray_engine, "batch_bytes", lambda files, workers: 500)
    good = "".join(json.dumps({"id": str(i), "text": f"asthma {i}"}) + "\n" for i in range(200))
    path = tmp_path / "s.jsonl"
    path.write_text(good + "{bad\n" + good + '{"id": "x"}\n', encoding="utf-8")
    errors = []
    for engine in (None, RAY):
        with pytest.raises(CorpusError) as error:
            filtered(tmp_path / "o.parquet", [str(path)], "en", engine, ReaderOptions(strict=True))
        errors.append(str(error.value))
    assert errors[0] == errors[1] == f"{path}:201: malformed JSON (Expecting property name enclosed in double quotes)"


def scores_of(path: Path) -> np.ndarray:
    return pd.read_parquet(path)[["warmth", "competence"]].to_numpy()


def test_score_gives_the_local_scores(ray_session, tmp_path, tiny_st_model, tiny_axes):
    source = tmp_path / "in.csv"
    texts = ["They are kind.", "These people are never smart.", "", "They are kind.", "cold and cruel"] * 3
    pd.DataFrame({"text": texts, "n": range(len(texts))}).to_csv(source, index=False)
    outputs = []
    for engine in ("local", "ray"):
        out = tmp_path / f"{engine}.parquet"
        result = CliRunner().invoke(main, ["score", str(source), "-o", str(out), "--model", tiny_st_model, "--axes",
                                           tiny_axes, "--engine", engine])
        assert result.exit_code == 0, result.output
        assert "scored 12 of 15 rows (3 distinct texts) with sentence-transformers:" in result.output
        outputs.append(pd.read_parquet(out))
    local, ray = outputs
    scores = ["warmth", "competence"]
    pd.testing.assert_frame_equal(local.drop(columns=scores), ray.drop(columns=scores))
    assert np.isnan(scores_of(tmp_path / "ray.parquet")[2]).all()
    np.testing.assert_allclose(scores_of(tmp_path / "ray.parquet"), scores_of(tmp_path / "local.parquet"),
                               atol=SCORE_TOLERANCE, rtol=0)


def test_the_ray_actors_score_each_text_with_its_mention_forms(ray_session, tmp_path, tiny_st_model, forms_axes):
    """One masked text, a slur in one line and a diagnosis in the other: the actors get each line's forms."""
    source = tmp_path / "in.txt"
    source.write_text("Those lunatics are everywhere tonight.\nThose schizophrenics are everywhere tonight.\n",
                      encoding="utf-8")
    stigma = {}
    for engine in ("local", "ray"):
        out = tmp_path / f"{engine}.csv"
        result = CliRunner().invoke(main, ["score", str(source), "-o", str(out), "--model", tiny_st_model, "--axes",
                                           forms_axes, "--engine", engine])
        assert result.exit_code == 0, result.output
        stigma[engine] = pd.read_csv(out)["stigma"].to_numpy()
    np.testing.assert_allclose(stigma["ray"], stigma["local"], atol=SCORE_TOLERANCE, rtol=0)
    assert stigma["ray"][0] > 0.5 > stigma["ray"][1]


def test_worker_errors_reach_the_user_as_messages(ray_session, tmp_path, tiny_st_model, foreign_axes):
    source = tmp_path / "in.txt"
    source.write_text("They are kind.\n")
    result = CliRunner().invoke(main, ["score", str(source), "-o", str(tmp_path / "o.csv"), "--model", tiny_st_model,
                                       "--axes", foreign_axes, "--engine", "ray"])
    assert result.exit_code == 1 and "Error: " in result.output and "were trained on embeddings of" in result.output
    assert "Traceback" not in result.output


def test_audit_gives_the_local_outputs_and_either_engine_resumes(ray_session, tmp_path, tiny_st_model, tiny_axes):
    def audit(outdir: Path, *extra: str):
        result = CliRunner().invoke(main, ["audit", REDDIT, "--lang", "en", "-o", str(outdir), "--model", tiny_st_model,
                                           "--axes", tiny_axes, "--workers", "1", *extra])
        assert result.exit_code == 0, result.output + result.stderr
        return result

    audit(tmp_path / "local")
    audit(tmp_path / "ray", "--engine", "ray", "--ray-concurrency", "2")
    local, ray = (pd.read_parquet(tmp_path / name / "sentences.parquet") for name in ("local", "ray"))
    assert len(local) > 20
    pd.testing.assert_frame_equal(local.drop(columns=["warmth", "competence", "quadrant"]),
                                  ray.drop(columns=["warmth", "competence", "quadrant"]))
    np.testing.assert_allclose(ray[["warmth", "competence"]].to_numpy(), local[["warmth", "competence"]].to_numpy(),
                               atol=SCORE_TOLERANCE, rtol=0)
    tables = [pq.read_table(tmp_path / name / "filtered.parquet") for name in ("local", "ray")]
    assert tables[0].equals(tables[1])
    summaries = [json.loads((tmp_path / name / "summary.json").read_text()) for name in ("local", "ray")]
    for summary in summaries:
        for key in VOLATILE:
            summary["filter"].pop(key, None)
    assert summaries[0]["filter"] == summaries[1]["filter"]
    assert summaries[1]["options"]["engine"] == {"name": "ray", "address": None, "concurrency": 2}
    # The checkpoints do not depend on the engine: a local rerun of the Ray audit has nothing to redo.
    again = audit(tmp_path / "ray")
    assert "filter: up to date, skipped" in again.stderr and "score: up to date, skipped" in again.stderr


def test_requests_the_ray_engine_cannot_serve_fail_before_any_work(tmp_path):
    with pytest.raises(EngineError, match="use --engine local for --hf-dataset, --limit"):
        filter_corpus(CorpusSpec((REDDIT,), limit=5), tmp_path / "o.parquet", "en", engine=RAY)
    result = CliRunner().invoke(main, ["filter", REDDIT, "--lang", "en", "-o", str(tmp_path / "o.parquet"),
                                       "--ray-concurrency", "2"])
    assert result.exit_code == 2 and "need --engine ray" in result.output
    assert not (tmp_path / "o.parquet").exists()


def test_without_ray_the_local_engine_works_and_ray_is_asked_for_by_name(tmp_path):
    """Ray hidden (a None entry in sys.modules makes its import fail): the local engine never imports it,
    and --engine ray says which extra to install."""
    code = (
        "import sys\n"
        "sys.modules['ray'] = None\n"
        "from corpus_audit.cli import main\n"
        "from click.testing import CliRunner\n"
        f"args = ['filter', {REDDIT!r}, '--lang', 'en', '-o', {str(tmp_path / 'o.parquet')!r}, '--workers', '1']\n"
        "assert CliRunner().invoke(main, args).exit_code == 0\n"
        "result = CliRunner().invoke(main, args + ['--engine', 'ray'])\n"
        "print(result.exit_code, result.output)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("1 Error: --engine ray needs Ray")
    assert "pip install 'corpus-audit[ray]'" in result.stdout


def test_a_clean_run_on_the_ray_it_starts_logs_no_error_line(ray_session, tmp_path, capfd):
    """Ray Data restarts actors by default, and Ray logs an error-level line for every such actor whose constructor
    arguments are in the object store (ray-project/ray#57733); on the Ray a command starts, actors are not restarted,
    so a clean run prints nothing of the kind."""
    from corpus_audit.engines.ray import _restarts

    assert _restarts(RAY) == {"max_restarts": 0}
    assert _restarts(EngineOptions(name="ray", address="auto")) == {}  # a cluster keeps Ray's default
    filtered(tmp_path / "ray.parquet", [REDDIT], "en", RAY)
    captured = capfd.readouterr()
    assert "max_restarts" not in captured.err and "core_worker" not in captured.err
    assert "RayDeprecationWarning" not in captured.err


def test_the_cascade_reads_the_same_sentences_on_either_engine(ray_session, tmp_path, tiny_st_model, triage_axes):
    def audit(outdir: Path, *extra: str) -> pd.DataFrame:
        result = CliRunner().invoke(main, ["audit", REDDIT, "--lang", "en", "-o", str(outdir), "--model", tiny_st_model,
                                           "--axes", triage_axes, "--workers", "1", "--cascade", "on",
                                           "--cascade-sample", "0.3", *extra])
        assert result.exit_code == 0, result.output + result.stderr
        return pd.read_parquet(outdir / "sentences.parquet")

    local, ray = audit(tmp_path / "local"), audit(tmp_path / "ray", "--engine", "ray", "--ray-concurrency", "2")
    assert local["scored_by"].eq("triage").any() and local["scored_by"].eq("encoder").any()
    assert local[["sentence", "scored_by", "in_sample"]].equals(ray[["sentence", "scored_by", "in_sample"]])
    np.testing.assert_allclose(ray[["warmth", "competence", "stigma"]].to_numpy(dtype=float),
                               local[["warmth", "competence", "stigma"]].to_numpy(dtype=float), atol=SCORE_TOLERANCE,
                               rtol=0)
    cascades = [json.loads((tmp_path / name / "summary.json").read_text())["score"]["cascade"]
                for name in ("local", "ray")]
    assert cascades[0] == cascades[1]


def test_a_shutdown_that_never_returns_does_not_hang_the_run(monkeypatch):
    import atexit
    import threading
    import types

    released = threading.Event()
    dropped = []
    monkeypatch.setattr(atexit, "unregister", dropped.append)
    stuck = types.SimpleNamespace(shutdown=lambda: released.wait(30),
                                  _private=types.SimpleNamespace(worker=types.SimpleNamespace(shutdown="exit hook")))
    with pytest.warns(UserWarning, match="did not return in 0 s"):
        shutdown_or_go_on(stuck, seconds=0.2)
    assert dropped == ["exit hook"]
    released.set()
    returning = types.SimpleNamespace(shutdown=lambda: None, _private=stuck._private)
    shutdown_or_go_on(returning, seconds=5)
    assert dropped == ["exit hook"]
