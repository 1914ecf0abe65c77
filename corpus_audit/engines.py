"""Where the heavy stages run: ``local`` (this process and its worker processes) or ``ray`` (Ray Data).

This module never imports Ray: :mod:`corpus_audit.ray_engine` is imported only when ``--engine ray`` is
chosen, so the default install needs no Ray and the local engine pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from corpus_audit.scoring import Scorer

ENGINES = ("local", "ray")
RAY_INSTALL_HINT = "pip install 'corpus-audit[ray]'"


class EngineError(RuntimeError):
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


def make_scorer(load_model: Callable[[], tuple[Any, Any]], engine: EngineOptions | None = None,
                device: str = "cpu") -> Scorer:
    """The scorer of ``engine``: in this process, or Ray actors that each call ``load_model`` once.

    ``load_model`` returns (embedder, axes); for Ray it is pickled to the actors (a closure is fine). ``device``
    is the embedder's device: ``cuda`` gives every Ray embedding actor one GPU.
    """
    from corpus_audit.scoring import LocalScorer

    if engine is None or not engine.is_ray:
        return LocalScorer(load_model)
    from corpus_audit.ray_engine import RayScorer

    return RayScorer(load_model, engine, use_gpu=device.startswith("cuda"))
