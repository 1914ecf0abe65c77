"""The chat client against a real HTTP server on 127.0.0.1 (tests/probe/chat_stub.py): retries with backoff that
honours Retry-After, errors that are not retried, the request budget, resuming without paying twice (also after a
torn line), the concurrency limit, and the API key sent but never stored."""

from __future__ import annotations

import time

import pytest
from chat_stub import ChatStub

from corpus_audit.probe.models.chat import (
    BudgetExhausted,
    ChatClient,
    ChatRequest,
    EndpointError,
    ResponseStore,
    retry_after,
)


def _requests(n: int, model: str = "stub-model") -> list[ChatRequest]:
    return [ChatRequest(model, (("user", f"say {i}"),), 1.0, 20, repetition=0) for i in range(n)]


def _echo(body, seen):
    return f"{body['messages'][-1]['content']} #{seen}"


def _client(stub: ChatStub, waits: list[float] | None = None, **settings) -> ChatClient:
    sleep = waits.append if waits is not None else (lambda _: None)
    return ChatClient(stub.url, api_key_env=settings.pop("api_key_env", None), sleep=sleep, **settings)


def test_a_request_key_covers_what_changes_the_answer_and_repetitions_differ():
    base = ChatRequest("m", (("user", "hi"),), 1.0, 20)
    assert base.key == ChatRequest("m", (("user", "hi"),), 1.0, 20).key
    others = [ChatRequest("m", (("user", "hi"),), 1.0, 20, repetition=1), ChatRequest("m", (("user", "ho"),), 1.0, 20),
              ChatRequest("m2", (("user", "hi"),), 1.0, 20), ChatRequest("m", (("user", "hi"),), 0.5, 20),
              ChatRequest("m", (("user", "hi"),), 1.0, 20, attempt=1)]
    assert len({base.key, *(other.key for other in others)}) == 6
    assert base.payload() == {"model": "m", "temperature": 1.0, "max_tokens": 20,
                              "messages": [{"role": "user", "content": "hi"}]}


def test_rate_limits_and_server_errors_are_retried_with_backoff_honouring_retry_after(tmp_path):
    waits: list[float] = []
    with ChatStub(_echo) as stub:
        stub.faults = [(429, {"Retry-After": "0.7"}), (503, {}), (500, {})]
        client = _client(stub, waits, backoff=0.05, retries=3)
        store = ResponseStore(tmp_path / "responses.jsonl", print)
        stats = client.complete(_requests(1), store, print)
    assert waits == pytest.approx([0.7, 0.1, 0.2])  # Retry-After beats 0.05; then 0.05 x 2, 0.05 x 4
    assert stats.retries == 3 and stats.sent == 4 and stats.completed == 1
    assert store.get(_requests(1)[0].key).content == "say 0 #0"


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after("3") == 3.0
    assert retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == pytest.approx(10.0)
    assert retry_after("soon") is None and retry_after(None) is None


def test_a_bad_request_is_not_retried_and_a_rejected_key_says_where_the_key_comes_from(tmp_path, monkeypatch):
    with ChatStub(_echo) as stub:
        stub.faults = [(400, {})]
        with pytest.raises(EndpointError, match="HTTP 400"):
            _client(stub, retries=5).complete(_requests(1), ResponseStore(tmp_path / "a.jsonl", print), print)
        assert stub.received == 1
    monkeypatch.setenv("STUB_KEY", "sk-wrong-secret")
    with ChatStub(_echo, key="sk-right") as stub:
        with pytest.raises(EndpointError, match="api-key-env") as caught:
            _client(stub, api_key_env="STUB_KEY").complete(_requests(1), ResponseStore(tmp_path / "b.jsonl", print),
                                                           print)
    assert "sk-wrong-secret" not in str(caught.value)


def test_the_key_is_sent_as_a_bearer_token_and_written_nowhere(tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_KEY", "sk-test-0123456789")
    with ChatStub(_echo, key="sk-test-0123456789") as stub:
        store = ResponseStore(tmp_path / "responses.jsonl", print)
        _client(stub, api_key_env="STUB_KEY").complete(_requests(3), store, print)
    assert len(store) == 3
    assert "sk-test" not in (tmp_path / "responses.jsonl").read_text(encoding="utf-8")


def test_retries_run_out_with_an_error_after_saving_what_completed(tmp_path):
    def fail_after_first(body, seen):
        stub.faults = [(500, {})] * 3  # the next request fails on every try
        return _echo(body, seen)

    with ChatStub(fail_after_first) as stub:
        store = ResponseStore(tmp_path / "responses.jsonl", print)
        with pytest.raises(EndpointError, match="failed 3 times.*1 response.*saved this run, 2 still to get"):
            _client(stub, retries=2, concurrency=1).complete(_requests(3), store, print)
        assert stub.received == 4  # one answer, three failed tries; no new request after the failure
    assert len(store) == 1 and len(ResponseStore(tmp_path / "responses.jsonl", print)) == 1


def test_the_budget_stops_the_run_and_a_rerun_pays_only_for_the_rest(tmp_path):
    path = tmp_path / "responses.jsonl"
    with ChatStub(_echo) as stub:
        with pytest.raises(BudgetExhausted, match="budget of 4 reached"):
            _client(stub, budget=4, concurrency=2).complete(_requests(10), ResponseStore(path, print), print)
        assert stub.answered == 4
        store = ResponseStore(path, print)
        assert len(store) == 4
        stats = _client(stub).complete(_requests(10), store, print)
        assert stats.reused == 4 and stats.sent == 6
        assert stub.answered == 10  # every request answered exactly once over the two runs
        again = _client(stub).complete(_requests(10), ResponseStore(path, print), print)
        assert again.sent == 0 and stub.received == 10


def test_a_torn_last_line_is_dropped_compacted_and_sent_again(tmp_path):
    path = tmp_path / "responses.jsonl"
    logged: list[str] = []
    with ChatStub(_echo) as stub:
        _client(stub).complete(_requests(3), ResponseStore(path, print), print)
        lines = path.read_text(encoding="utf-8").splitlines()
        path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:15], encoding="utf-8")  # killed mid-write
        store = ResponseStore(path, logged.append)
        assert len(store) == 2 and "dropped 1 damaged line" in logged[0]
        assert len(path.read_text(encoding="utf-8").splitlines()) == 2
        stats = _client(stub).complete(_requests(3), store, print)
    assert stats.sent == 1 and len(ResponseStore(path, print)) == 3


@pytest.mark.parametrize("concurrency", [1, 4])
def test_no_more_than_the_concurrency_limit_is_in_flight(tmp_path, concurrency):
    with ChatStub(_echo, delay=0.15) as stub:
        started = time.perf_counter()
        stats = _client(stub, concurrency=concurrency).complete(_requests(8), ResponseStore(tmp_path / "r.jsonl",
                                                                                            print), print)
        elapsed = time.perf_counter() - started
    assert stub.max_in_flight == concurrency == stats.max_in_flight
    assert elapsed >= 8 / concurrency * 0.15 * 0.9
    if concurrency > 1:
        assert elapsed < 8 * 0.15  # faster than one at a time
