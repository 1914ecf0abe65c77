"""A small OpenAI-compatible chat server for the tests: a real HTTP server on 127.0.0.1 (a free port) in a thread of
the test process, with scripted answers, delays, queued failures (429 with Retry-After, 5xx) and an API key check.
No test reaches the network.

The scripted model (:func:`scripted_answer`) plays the probe's three roles from the system prompt it is given:

* **contextual**: a completion that is stigma-congruent with a probability per condition category (``RATES``; the
  strategy prompt multiplies it by ``STRATEGY``), drawn from the request's text and how many times that same
  request was answered before (repetitions are identical requests), so that the answers are reproducible;
* **explicit**: the 27 AQ-27 answers as JSON (2 everywhere: little explicit stigma), or, the first time a
  condition is asked, an unusable answer (a value out of the scale), so that re-asking is exercised;
* **judge**: codes a continuation by the scripted completions' words, as a perfect coder of this script would.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: Probability of a stigma-congruent completion per condition (the scripted truth), and the strategy's factor.
RATES = {"healthy": 0.15, "schizophrenia": 0.95, "bipolar": 0.9, "depression": 0.85, "anxiety": 0.85,
         "alcohol": 0.9, "HIV": 0.85, "hepatitis": 0.8, "back pain": 0.5, "hypertension": 0.45}
STRATEGY = 0.5
CONGRUENT = "refused to have anything to do with them and kept them away, since they seemed dangerous."
NEUTRAL = "carried on exactly as they would with anyone else."


def _condition(text: str) -> str:
    return next((name for name in RATES if name.lower() in text.lower()), "healthy")


def scripted_answer(body: dict[str, Any], seen: int) -> str:
    """The scripted model's answer to ``body``, the ``seen``-th time (0-based) it gets this same request."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if "code continuations" in system:
        continuation = user.rsplit("Continuation:", 1)[-1]
        congruent = "dangerous" in continuation
        return json.dumps({"stigma_congruent": congruent, "types": ["danger", "social distance"] if congruent else []})
    if "questionnaire" in system:
        if seen == 0 and "schizophrenia" in user:
            return 'Here you are:\n```json\n{"1": 12}\n```'
        return "```json\n" + json.dumps({str(n): 2 for n in range(1, 28)}) + "\n```"
    rate = RATES[_condition(user)] * (STRATEGY if "principles" in system else 1.0)
    draw = int(hashlib.sha256(f"{user}|{system}|{seen}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return CONGRUENT if draw < rate else NEUTRAL


class ChatStub:
    """The server; ``url`` is its base (``http://127.0.0.1:PORT/v1``). ``faults``: (status, headers) answered to the
    next requests, one each, before any scripted answer; ``delay``: seconds each answer takes; ``key``: the API key
    it demands (401 without it)."""

    def __init__(self, answer: Callable[[dict[str, Any], int], str] = scripted_answer, delay: float = 0.0,
                 key: str | None = None) -> None:
        self.answer, self.delay, self.key = answer, delay, key
        self.faults: list[tuple[int, dict[str, str]]] = []
        self.received = 0
        self.answered = 0
        self.bodies: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _reply(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with stub._lock:
                    stub.received += 1
                    stub.bodies.append(body)
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                    fault = stub.faults.pop(0) if stub.faults else None
                try:
                    if not self.path.endswith("/chat/completions"):
                        return self._reply(404, {"error": "not found"})
                    if stub.key and self.headers.get("Authorization") != f"Bearer {stub.key}":
                        return self._reply(401, {"error": {"message": "invalid api key"}})
                    if fault is not None:
                        return self._reply(fault[0], {"error": {"message": "scripted failure"}}, fault[1])
                    if stub.delay:
                        time.sleep(stub.delay)
                    identity = json.dumps(body, sort_keys=True)
                    with stub._lock:
                        seen = stub._seen[identity]
                        stub._seen[identity] += 1
                        stub.answered += 1
                    content = stub.answer(body, seen)
                    self._reply(200, {"id": f"stub-{seen}", "object": "chat.completion", "model": body["model"],
                                      "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant", "content": content}}],
                                      "usage": {"prompt_tokens": 10, "completion_tokens": len(content.split()),
                                                "total_tokens": 10 + len(content.split())}})
                finally:
                    with stub._lock:
                        stub.in_flight -= 1

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ChatStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
