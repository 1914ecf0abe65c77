"""The stance branch of a sentence encoder: tuned copies of its top layers, which the stigma score reads.

A frozen, mean-pooled sentence embedding places "people with X are not Y" next to "people with X are Y": it reads
topic and tone, not stance. The branch is the encoder's top ``layers`` layers tuned on labelled stigma data
(``scripts/train_stance_branch.py``); it reads the hidden states the frozen encoder computes after its first
``cut`` layers, so one pass computes both the sentence embedding (the frozen top layers: the SCM axes, unchanged)
and the stance features (the tuned copies, mean-pooled), at the cost of ``layers`` more layers, not of a second
encoder.

The tuned weights ship inside the package (``corpus_audit/axes/<lang>-stance-<model>.safetensors``) as a LoRA
adapter: per tuned linear layer the low-rank factors of its change (``A`` (rank x in), ``B`` (out x rank), the
change being ``alpha / rank * B @ A``), and any other tuned tensor (layer norms) whole. They are merged into copies
of the base model's top layers when the model is loaded or exported (:func:`merged_layers`); the adapter names the
base weights it was tuned from (their SHA-256) and is refused on any other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from corpus_audit.common.resources import SHIPPED_AXES_DIR, sha256_file
from corpus_audit.embed.base import EmbedderError

if TYPE_CHECKING:
    import torch

#: Bumped when the adapter file's layout changes.
ADAPTER_FORMAT = 1
LORA_A, LORA_B = ".lora_A", ".lora_B"


@dataclass(frozen=True)
class StanceAdapter:
    """A stance branch: where it is read from, how it attaches to its base model, and its tensors."""

    path: Path
    base: str  # the base model's name (e.g. all-MiniLM-L6-v2)
    base_sha256: str  # SHA-256 of the base model's weights file it was tuned from
    lang: str
    cut: int  # the branch reads the hidden states after this many layers
    layers: int  # tuned layers (the base's layers cut, cut + 1, ...)
    rank: int
    alpha: float
    tensors: dict[str, np.ndarray]  # "<layer>.<parameter path>" and its ".lora_A"/".lora_B" factors
    sha256: str

    @property
    def scale(self) -> float:
        """What multiplies a LoRA change (an adapter of whole tensors, rank 0, has none)."""
        return self.alpha / self.rank if self.rank else 0.0

    def metadata(self) -> dict[str, Any]:
        """What names the branch in an embedder's identity and in axes trained on it."""
        return {"base": self.base, "lang": self.lang, "cut": self.cut, "layers": self.layers, "rank": self.rank,
                "sha256": self.sha256}


def adapter_path(model: str, lang: str, folder: Path = SHIPPED_AXES_DIR) -> Path:
    return folder / f"{lang}-stance-{model}.safetensors"


def shipped_adapter(model: str, lang: str) -> StanceAdapter | None:
    """The shipped stance branch of named model ``model`` for ``lang``, or None (that model and language have
    none: their stigma head reads the sentence embedding)."""
    path = adapter_path(model, lang)
    return read_adapter(path) if path.is_file() else None


def read_adapter(path: Path) -> StanceAdapter:
    """A stance adapter file; a damaged or foreign one raises ``EmbedderError`` naming it."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as handle:
            header = handle.metadata() or {}
            tensors = {name: handle.get_tensor(name).astype(np.float32) for name in handle.keys()}
        if header.get("format") != f"corpus-audit-stance-{ADAPTER_FORMAT}":
            raise ValueError(f"format {header.get('format')!r}")
        settings = json.loads(header["settings"])
        adapter = StanceAdapter(path=path, base=str(settings["base"]), base_sha256=str(settings["base_sha256"]),
                                lang=str(settings["lang"]), cut=int(settings["cut"]), layers=int(settings["layers"]),
                                rank=int(settings["rank"]), alpha=float(settings["alpha"]), tensors=tensors,
                                sha256=sha256_file(path))
    except (OSError, ValueError, KeyError, TypeError, SafetensorError) as error:
        raise EmbedderError(f"{path}: not a readable corpus-audit stance adapter ({error})") from None
    for name, value in tensors.items():
        if not np.isfinite(value).all():
            raise EmbedderError(f"{path}: tensor {name!r} holds values that are not finite")
    return adapter


def write_adapter(path: Path, tensors: dict[str, np.ndarray], *, base: str, base_sha256: str, lang: str, cut: int,
                  layers: int, rank: int, alpha: float, extra: dict[str, Any] | None = None) -> None:
    """Save a stance adapter (atomically): ``tensors`` named as :class:`StanceAdapter` says, the settings, and
    ``extra`` provenance (training data hashes, settings, measured numbers) in the header."""
    from safetensors.numpy import save_file

    from corpus_audit.common.atomic import atomic_path

    settings = {"base": base, "base_sha256": base_sha256, "lang": lang, "cut": cut, "layers": layers, "rank": rank,
                "alpha": alpha}
    with atomic_path(path) as tmp:
        save_file({name: np.ascontiguousarray(value, dtype=np.float32) for name, value in sorted(tensors.items())},
                  str(tmp), metadata={"format": f"corpus-audit-stance-{ADAPTER_FORMAT}",
                                      "settings": json.dumps(settings, sort_keys=True),
                                      "provenance": json.dumps(extra or {}, sort_keys=True)})


def merged_layers(base_layers: dict[str, np.ndarray], adapter: StanceAdapter) -> dict[str, np.ndarray]:
    """The tuned layers' state: ``base_layers`` (the base's top layers' parameters, named ``<layer>.<path>`` with
    layer 0 the first tuned one) with each LoRA change added and each whole tensor replaced."""
    merged = {name: np.array(value, dtype=np.float32) for name, value in base_layers.items()}
    for name, value in adapter.tensors.items():
        if name.endswith(LORA_B):
            continue
        if name.endswith(LORA_A):
            weight = name.removesuffix(LORA_A) + ".weight"
            factor_b = adapter.tensors.get(name.removesuffix(LORA_A) + LORA_B)
            if weight not in merged or factor_b is None:
                raise EmbedderError(f"{adapter.path}: LoRA factor {name!r} has no base weight or no B factor")
            merged[weight] = merged[weight] + adapter.scale * (factor_b @ value)
        elif name in merged and merged[name].shape == value.shape:
            merged[name] = value
        else:
            raise EmbedderError(f"{adapter.path}: tensor {name!r} matches no parameter of the base's top layers")
    return merged


def branch_module(transformer: torch.nn.Module, adapter: StanceAdapter) -> torch.nn.Module:
    """A module computing, from token ids and the attention mask, the frozen ``transformer``'s last hidden state
    and the stance branch's: the base's top layers copied and merged with ``adapter``, run on the hidden states
    after layer ``adapter.cut``. The frozen weights are shared, not copied."""
    import copy

    import torch

    layers = transformer.encoder.layer
    if adapter.cut + adapter.layers != len(layers):
        raise EmbedderError(f"{adapter.path}: a branch of layers {adapter.cut}-{adapter.cut + adapter.layers - 1} "
                            f"does not top a model of {len(layers)} layers")
    branch = torch.nn.ModuleList(copy.deepcopy(layers[adapter.cut:]))
    base_state = {name: value.detach().cpu().numpy() for name, value in branch.state_dict().items()}
    branch.load_state_dict({name: torch.from_numpy(value) for name, value in
                            merged_layers(base_state, adapter).items()})

    class Branched(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer, self.branch, self.cut = transformer, branch, adapter.cut

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            out = self.transformer(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
            hidden = out.hidden_states[self.cut]
            additive = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
            for layer in self.branch:
                result = layer(hidden, attention_mask=additive)
                hidden = result[0] if isinstance(result, tuple) else result
            return out.last_hidden_state, hidden

    return Branched().eval()
