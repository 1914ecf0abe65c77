"""Completions of an OpenAI-compatible chat endpoint (vLLM, llama.cpp server, Ollama, a hosted API), paid for once.

* :class:`ChatRequest`: one request (messages, temperature, length) and the repetition it is, whose
  :attr:`~ChatRequest.key` is the SHA-256 of all of it: the same request always has the same key, and repetitions of
  one prompt are distinct requests (a sampled completion is a draw);
* :class:`ResponseStore`: every completed request's response, appended to a JSONL file as soon as it arrives
  (written and flushed line by line, so that a killed run loses at most the line being written, which the next
  run drops and compacts away atomically). A rerun sends only the requests the store lacks: an interrupted run
  never pays twice for the same request;
* :class:`ChatClient`: sends the missing requests with at most ``concurrency`` in flight, retries rate limits (429),
  server errors (5xx), timeouts and dropped connections with exponential backoff that honours ``Retry-After``, and
  stops submitting once ``budget`` requests (retries included) have been sent by this run.

The API key is read from an environment variable when the client is made and only ever sent in the
``Authorization`` header: it is in no request key, store line, log message or output.
"""

from __future__ import annotations

import email.utils
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus_audit.common.atomic import write_text_atomic
from corpus_audit.common.checkpoints import fingerprint
from corpus_audit.common.errors import UserError

#: Statuses worth retrying: the server is busy, overloaded or briefly down; every other 4xx is the request's fault.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: The longest wait between two tries, whatever Retry-After asks (a server asking for an hour is better rerun later).
MAX_WAIT = 120.0


class EndpointError(UserError, RuntimeError):
    """The endpoint refused a request for good (a bad model name, a rejected key) or kept failing after the retries."""


class BudgetExhausted(UserError, RuntimeError):
    """This run has sent as many requests as its budget allows; what completed is saved and a rerun goes on."""


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to ask for. ``repetition`` (and ``attempt``, a re-ask after an unusable answer) make
    draws of one prompt distinct requests; ``purpose`` says what the answer is for (completion, explicit, judge)."""

    model: str
    messages: tuple[tuple[str, str], ...]
    temperature: float
    max_tokens: int
    repetition: int = 0
    attempt: int = 0
    purpose: str = "completion"
    json_mode: bool = False

    @property
    def key(self) -> str:
        return fingerprint({"model": self.model, "messages": self.messages, "temperature": self.temperature,
                            "max_tokens": self.max_tokens, "repetition": self.repetition, "attempt": self.attempt,
                            "purpose": self.purpose, "json_mode": self.json_mode})

    def payload(self) -> dict[str, Any]:
        """The body of the POST to ``/chat/completions``."""
        body: dict[str, Any] = {"model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens,
                                "messages": [{"role": role, "content": content} for role, content in self.messages]}
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body


@dataclass
class Response:
    """What the store keeps of an answer: the text, why generation stopped, the token counts, the seconds it took."""

    content: str
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


class ResponseStore:
    """Responses by request key in an append-only JSONL file (one object per line: key, purpose, response)."""

    def __init__(self, path: Path, log: Callable[[str], None]) -> None:
        self.path = path
        self.responses: dict[str, Response] = {}
        self._lock = threading.Lock()
        if not path.exists():
            return
        good, damaged = [], 0
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
                response = Response(str(record["content"]), record.get("finish_reason"), record.get("usage") or {},
                                    float(record.get("seconds", 0.0)))
                key = str(record["key"])
            except (ValueError, KeyError, TypeError):
                damaged += 1
                continue
            self.responses[key] = response
            good.append(line)
        if damaged:
            log(f"requests: dropped {damaged} damaged line(s) of {path.name} (a run killed while writing); "
                "those requests are sent again")
            write_text_atomic(path, "".join(f"{line}\n" for line in good))

    def __contains__(self, key: str) -> bool:
        return key in self.responses

    def __len__(self) -> int:
        return len(self.responses)

    def get(self, key: str) -> Response | None:
        return self.responses.get(key)

    def add(self, request: ChatRequest, response: Response) -> None:
        """Append one response (thread-safe); the line is flushed to the disk before this returns."""
        line = json.dumps({"key": request.key, "purpose": request.purpose, "content": response.content,
                           "finish_reason": response.finish_reason, "usage": response.usage,
                           "seconds": round(response.seconds, 4)}, ensure_ascii=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            self.responses[request.key] = response


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date), None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass
class RunStats:
    """What one :meth:`ChatClient.complete` call did: requests sent (tries, retries included), completions saved,
    retries, the largest number in flight at once, and seconds."""

    sent: int = 0
    completed: int = 0
    reused: int = 0
    retries: int = 0
    max_in_flight: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class ChatClient:
    """An OpenAI-compatible endpoint: ``url`` is its base (``http://host:8000/v1``), to which
    ``/chat/completions`` is added unless it already ends so. The key comes from the environment variable
    ``api_key_env`` (no key: no Authorization header, as local servers expect)."""

    def __init__(self, url: str, api_key_env: str | None = "OPENAI_API_KEY", concurrency: int = 4, retries: int = 5,
                 backoff: float = 1.0, timeout: float = 120.0, budget: int | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if concurrency < 1 or retries < 0 or backoff < 0 or timeout <= 0 or (budget is not None and budget < 0):
            raise ValueError("concurrency >= 1, retries >= 0, backoff >= 0, timeout > 0 and budget >= 0 are needed")
        base = url.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else f"{base}/chat/completions"
        key = os.environ.get(api_key_env) if api_key_env else None
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.concurrency, self.retries, self.backoff, self.timeout = concurrency, retries, backoff, timeout
        self.budget = budget
        self._sleep = sleep
        self._lock = threading.Lock()
        self._in_flight = 0
        self.stats = RunStats()

    def _take_budget(self) -> bool:
        with self._lock:
            if self.budget is not None and self.stats.sent >= self.budget:
                return False
            self.stats.sent += 1
            self._in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self._in_flight)
            return True

    def _wait(self, attempt: int, asked: float | None) -> float:
        """Exponential backoff (``backoff`` x 2^attempt), or longer when the server asked for it; at most MAX_WAIT."""
        return min(MAX_WAIT, max(self.backoff * 2 ** attempt, asked or 0.0))

    def _send(self, http: Any, request: ChatRequest) -> Response:
        """One request with its retries; :class:`EndpointError` when it cannot be had, :class:`BudgetExhausted` when
        the budget ends first."""
        import httpx

        last = "no try"
        for attempt in range(self.retries + 1):
            if not self._take_budget():
                raise BudgetExhausted(f"request budget of {self.budget} reached")
            started = time.perf_counter()
            asked = None
            try:
                answer = http.post(self.url, json=request.payload(), headers=self._headers, timeout=self.timeout)
            except httpx.TransportError as error:  # refused, reset, timed out: worth another try
                last = f"{type(error).__name__}: {error}"
            else:
                if answer.status_code == 200:
                    try:
                        body = answer.json()
                        choice = body["choices"][0]
                        content = choice["message"]["content"]
                    except (ValueError, KeyError, IndexError, TypeError):
                        raise EndpointError(f"{self.url} answered 200 without a chat completion: "
                                            f"{answer.text[:200]!r}") from None
                    return Response(content or "", choice.get("finish_reason"), body.get("usage") or {},
                                    time.perf_counter() - started)
                last = f"HTTP {answer.status_code}: {answer.text[:200]}"
                if answer.status_code not in RETRY_STATUSES:
                    hint = " (is the key in the right environment variable? see --api-key-env)" \
                        if answer.status_code in (401, 403) else ""
                    raise EndpointError(f"{self.url} refused the request for model {request.model!r}: {last}{hint}")
                asked = retry_after(answer.headers.get("retry-after"))
            finally:
                with self._lock:
                    self._in_flight -= 1
            if attempt < self.retries:
                with self._lock:
                    self.stats.retries += 1
                self._sleep(self._wait(attempt, asked))
        raise EndpointError(f"{self.url} failed {self.retries + 1} times for one request ({last})")

    def complete(self, requests: Iterable[ChatRequest], store: ResponseStore, log: Callable[[str], None],
                 progress: bool = False, unit: str = "request") -> RunStats:
        """Send the requests the store lacks (each distinct request once), saving each response as it arrives.

        Raises :class:`BudgetExhausted` or :class:`EndpointError` after the requests in flight have finished and been
        saved, so that a rerun resumes with only the rest."""
        import httpx
        from tqdm.auto import tqdm

        started = time.perf_counter()
        distinct = list({request.key: request for request in requests}.values())
        missing = [request for request in distinct if request.key not in store]
        self.stats.reused += len(distinct) - len(missing)
        if not missing:
            return self.stats
        log(f"requests: {len(missing)} {unit}(s) to send, {len(distinct) - len(missing)} already saved")
        failure: BaseException | None = None
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        with httpx.Client(limits=limits) as http, ThreadPoolExecutor(self.concurrency) as pool, \
                tqdm(total=len(missing), desc=unit, unit="req", disable=not progress, file=sys.stderr) as bar:
            queue = iter(missing)
            running: dict[Future, ChatRequest] = {}

            def submit() -> None:
                request = next(queue, None)
                if request is not None:
                    running[pool.submit(self._send, http, request)] = request

            for _ in range(self.concurrency):
                submit()
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    request = running.pop(future)
                    try:
                        store.add(request, future.result())
                    except (BudgetExhausted, EndpointError) as error:
                        failure = failure or error
                        continue
                    self.stats.completed += 1
                    bar.update(1)
                    if failure is None:
                        submit()
        self.stats.seconds += time.perf_counter() - started
        if failure is not None:
            left = len(missing) - sum(request.key in store for request in missing)
            raise type(failure)(f"{failure}; {self.stats.completed} response(s) saved this run, {left} still to get: "
                                "rerun to go on (saved requests are not sent again)")
        return self.stats
