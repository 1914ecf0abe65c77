"""What the fill-mask probes (``probe gender``, ``probe social-distance``) share: the run options, the model
loader and the fill stage with its saved chunks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from corpus_audit.probe.models.masked import (
    MASK,
    MAX_TOKENS,
    Fill,
    MaskedLM,
    ModelOnDemand,
)
from corpus_audit.probe.models.parts import FillParts


@dataclass
class FillRun:
    """Where and how a fill-mask probe runs (none of it changes a number)."""

    model: str
    device: str = "cpu"
    max_tokens: int = MAX_TOKENS
    threads: int | None = None


class FillStage:
    """The fill stage of a probe: the model loaded on first need, fills saved in chunks under ``folder``."""

    def __init__(self, run: FillRun, log: Callable[[str], None], progress: bool) -> None:
        self.run, self.log, self.progress = run, log, progress
        self.load = ModelOnDemand(run.model, run.device, run.threads, log)

    def fill(self, prompts: list[str], folder: Path, key: object, top_k: int) -> tuple[dict[str, list[Fill]], str]:
        """The ``top_k`` fills of each distinct prompt (written with ``MASK``) and the id of the model."""
        distinct = list(dict.fromkeys(prompts))
        parts = FillParts(folder, [key, top_k])

        def work(model: MaskedLM, chunk: list[str]) -> list[list[Fill]]:
            return model.fill([prompt.replace(MASK, model.mask) for prompt in chunk], top_k, self.run.max_tokens)

        results = parts.run(distinct, self.load, work, self.log, self.progress, unit="fill")
        return dict(zip(distinct, results)), parts.model_id or self.run.model
