"""Any sentence-transformers model, by hub name (needs the hub or its cache) or local folder, optionally with a
stance branch (:mod:`corpus_audit.embed.stance`)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

from corpus_audit.embed.base import SENTENCE_TRANSFORMERS_BACKEND, Embedder, EmbedderError, branched_name

if TYPE_CHECKING:
    import torch

    from corpus_audit.embed.stance import StanceAdapter


class SentenceTransformerEmbedder(Embedder):
    """Any sentence-transformers model, by hub name (needs the hub or its cache) or local folder."""

    backend = SENTENCE_TRANSFORMERS_BACKEND

    def __init__(self, name: str, path: str | None = None, device: str = "cpu", batch_size: int = 64,
                 adapter: StanceAdapter | None = None) -> None:
        super().__init__(branched_name(name, adapter), batch_size)
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # a weight-loading bar per run is noise in a CLI
        location = path or name
        try:
            self.model = SentenceTransformer(location, device=device)
        except Exception as error:  # the library raises many kinds (OSError, HTTP, value errors)
            raise EmbedderError(
                f"cannot load sentence-transformers model {location!r} on {device}: {error}. "
                "Give a local model folder, or a hub name that is in the local Hugging Face cache."
            ) from error
        self._sha256: str | None = None
        self.adapter = adapter
        self._branched: torch.nn.Module | None = None
        if adapter is not None:
            modules = [type(module).__name__ for module in self.model]
            if modules[:2] != ["Transformer", "Pooling"] or not set(modules[2:]) <= {"Normalize"}:
                raise EmbedderError(f"a stance branch needs a Transformer and a Pooling module; {name} has {modules}")
            self.views = (self._sentence_dimension(),) * 2

    def _sentence_dimension(self) -> int:
        # sentence-transformers renamed the accessor; support releases on both sides of the rename.
        getter = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def dimension(self) -> int:
        return sum(self.views) if self.views else self._sentence_dimension()

    @property
    def module(self) -> torch.nn.Module:
        """The transformer as a module from (token ids, attention mask) to its last hidden state, and with a stance
        branch to the branch's too (what the ONNX export traces)."""
        import torch

        transformer = self.model[0].auto_model.eval()
        if self.adapter is not None:
            from corpus_audit.embed.stance import branch_module

            return branch_module(transformer, self.adapter)

        class LastHiddenState(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.transformer = transformer

            def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
                return self.transformer(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

        return LastHiddenState()

    @property
    def weights_sha256(self) -> str:
        # Hash the parameters themselves: independent of file format, hub cache layout or local path; a stance
        # branch's adapter file is part of the weights.
        if self._sha256 is None:
            digest = hashlib.sha256()
            for key, tensor in sorted(self.model.state_dict().items()):
                digest.update(key.encode())
                digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
            if self.adapter is not None:
                digest.update(f"stance:{self.adapter.sha256}".encode())
            self._sha256 = digest.hexdigest()
        return self._sha256

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        if self.adapter is None:
            return self.model.encode(texts, batch_size=len(texts), convert_to_numpy=True, show_progress_bar=False)
        import torch

        if self._branched is None:
            self._branched = self.module
        # sentence-transformers renamed tokenize to preprocess; support releases on both sides of the rename.
        features = (getattr(self.model, "preprocess", None) or self.model.tokenize)([text.strip() for text in texts])
        device = self.model.device
        ids, mask = features["input_ids"].to(device), features["attention_mask"].to(device)
        with torch.inference_mode():
            tokens, stance = self._branched(ids, mask)
        weights = mask[:, :, None].to(tokens.dtype)
        count = weights.sum(dim=1).clamp(min=1e-9)
        pooling = self.model[1]
        mode = getattr(pooling, "pooling_mode", None) or pooling.get_pooling_mode_str()
        sentence = tokens[:, 0] if mode in ("cls", "pooling_mode_cls_token") else (tokens * weights).sum(1) / count
        return torch.cat([sentence, (stance * weights).sum(1) / count], dim=1).float().cpu().numpy()
