"""``probe contextual`` on the command line: bad option combinations are usage errors, an endpoint that cannot be
reached or refuses the model is one message with exit status 1, and nothing is written but the response store."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from click.testing import CliRunner

from corpus_audit.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "probe"))  # the chat stub

from chat_stub import ChatStub  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_judge_coder_needs_a_judge_model(tmp_path):
    result = CliRunner().invoke(main, ["probe", "contextual", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
                                       "-o", str(tmp_path / "out"), "--coder", "judge"])
    assert result.exit_code == 2 and "coder judge needs a judge model" in result.output


def test_an_unreachable_endpoint_is_one_message_after_the_retries(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there
    result = CliRunner().invoke(main, ["probe", "contextual", "--endpoint", url, "--model", "m", "-o",
                                       str(tmp_path / "out"), "--retries", "1", "--backoff", "0", "--repetitions", "1",
                                       "--no-progress", "--api-key-env", "NO_SUCH_VARIABLE"])
    assert result.exit_code == 1 and "failed 2 times" in result.output and "ConnectError" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_model_the_endpoint_refuses_stops_at_once(tmp_path):
    with ChatStub() as stub:
        stub.faults = [(404, {})] * 4
        result = CliRunner().invoke(main, ["probe", "contextual", "--endpoint", stub.url, "--model", "no-such-model",
                                           "-o", str(tmp_path / "out"), "--concurrency", "1", "--no-progress",
                                           "--api-key-env", "NO_SUCH_VARIABLE"])
        assert stub.received == 1
    assert result.exit_code == 1 and "refused the request for model 'no-such-model': HTTP 404" in result.output
