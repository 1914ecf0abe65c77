"""The rough edges of a first hour: a JSON Lines progress bar with its share and time left, a Ctrl-C in `filter`
ending in one line (no worker tracebacks), and a write error naming the path as typed."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from corpus_audit.cli import main

REDDIT = Path(__file__).parents[1] / "data" / "corpus_reddit_sample_en.jsonl.gz"


def test_json_lines_progress_shows_the_share_read_and_the_time_left(tmp_path):
    result = CliRunner().invoke(main, ["filter", str(REDDIT), str(REDDIT), "--lang", "en", "-o",
                                       str(tmp_path / "out.parquet"), "--progress", "--workers", "2"])
    assert result.exit_code == 0, result.output
    bars = result.stderr.replace("\r", "\n")
    size = 2 * REDDIT.stat().st_size  # bytes on disk, compressed as stored
    assert f"reading: 100%|██████████| {size / 1000:.0f}k/{size / 1000:.0f}k [" in bars and "<00:00" in bars, bars
    assert "324 docs]" in bars


def test_ctrl_c_in_filter_is_one_line_and_exit_130(tmp_path, monkeypatch):
    from corpus_audit import engines

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(engines, "filter_corpus", interrupted)
    output = tmp_path / "out.parquet"
    result = CliRunner().invoke(main, ["filter", str(REDDIT), "--lang", "en", "-o", str(output)])
    assert result.exit_code == 130 and "Traceback" not in result.output
    assert result.output.strip() == (f"Error: interrupted: nothing written ({output} is written once the whole corpus "
                                     "is read); run the same command again to start over")


def test_filter_workers_ignore_ctrl_c_so_only_the_parent_reports_it():
    import os
    import signal

    from corpus_audit.engines.local import _init_worker

    previous = signal.getsignal(signal.SIGINT)
    pid = os.fork()
    if pid == 0:  # a worker as the pool starts it: set up, then Ctrl-C reaches it
        try:
            _init_worker(*_worker_state())
            os.kill(os.getpid(), signal.SIGINT)
            os._exit(0)  # reached only when SIGINT was ignored
        except BaseException:  # KeyboardInterrupt: the worker would have printed a traceback
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert signal.getsignal(signal.SIGINT) == previous  # the parent's handler untouched


def _worker_state() -> tuple:
    from corpus_audit.corpus.documents import ReaderOptions
    from corpus_audit.corpus.matcher import IllnessMatcher, default_lexicon_path
    from corpus_audit.corpus.segment import Segmenter

    return ReaderOptions(), IllnessMatcher.from_csv(default_lexicon_path("en")), Segmenter("en", None), "en", ()


def test_a_write_error_names_the_path_not_a_tuple(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a folder")
    audit = tmp_path / "audit"
    audit.mkdir()
    result = CliRunner().invoke(main, ["compare", str(audit), str(audit), "-o", str(blocker / "x.html")])
    assert result.exit_code != 0
    assert "('" not in result.output, result.output
