"""What an engine is asked: which one, where, with how many workers; and its error."""

from __future__ import annotations

from dataclasses import dataclass

from corpus_audit.common.errors import UserError

ENGINES = ("local", "ray")
RAY_INSTALL_HINT = "pip install 'corpus-audit[ray]'"


class EngineError(UserError, RuntimeError):
    """The engine cannot run as asked (Ray missing, unreachable, or a request it cannot serve)."""


@dataclass(frozen=True)
class EngineOptions:
    """``name``: ``local`` or ``ray``. ``address``: a Ray cluster to connect to (``auto``, ``HOST:PORT`` or
    ``ray://HOST:PORT``); None starts Ray inside this process. ``concurrency``: Ray workers per stage (filter
    actors, embedding actors); None: one per CPU of the cluster for the filter, and one per GPU (``--device
    cuda``) or per CPU for embedding."""

    name: str = "local"
    address: str | None = None
    concurrency: int | None = None

    def __post_init__(self) -> None:
        if self.name not in ENGINES:
            raise EngineError(f"unknown engine {self.name!r}: use {' or '.join(ENGINES)}")

    @property
    def is_ray(self) -> bool:
        return self.name == "ray"
