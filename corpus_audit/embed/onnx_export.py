"""The one-time export of a sentence-transformers folder's transformer to ONNX, checked against the
sentence-transformers model itself (the only module of the onnxruntime backend that imports torch)."""

from __future__ import annotations

import json
import shutil
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np

from corpus_audit.common.atomic import atomic_path, write_text_atomic
from corpus_audit.embed.base import EmbedderError
from corpus_audit.embed.onnx import EXPORT_FORMAT, SentenceModelConfig, load_tokenizer, pooled_embeddings

#: Largest difference allowed between an exported model's unit embeddings and sentence-transformers' (fp32 noise
#: is about 1e-6; the scores of the shipped axes move less than 1e-4 within it).
EXPORT_TOLERANCE = 2e-5
OPSET = 17
#: Probe sentences of many lengths, batched together (padding) and one past any sequence limit (truncation).
PROBE_SENTENCES = [
    "ok", "They are kind.", "  These people are cruel, hostile and cold.  ", "Ich bin müde; él está cansado.",
    "People with this condition are lazy and should just try harder, my uncle says.",
    "I was diagnosed last year and honestly the worst part is how my coworkers treat me now.",
    " ".join(["word"] * 600),
]


def export(config: SentenceModelConfig, target: Path) -> dict:
    """Export ``config``'s transformer to ``target/model.onnx``, check it on :data:`PROBE_SENTENCES` against the
    sentence-transformers model, and write ``target/meta.json`` (last: its presence marks a finished export).
    Returns the metadata."""
    import onnxruntime
    import torch

    from corpus_audit.embed.sbert import SentenceTransformerEmbedder

    reference = SentenceTransformerEmbedder(config.folder.name, path=str(config.folder))
    transformer = reference.model[0].auto_model.eval()
    tokenizer = reference.model.tokenizer
    target.mkdir(parents=True, exist_ok=True)
    model_file = target / "model.onnx"
    example = tokenizer(["a b", "c"], padding=True, return_tensors="pt")

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.transformer(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    with atomic_path(model_file) as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and deprecation chatter of the exporter
        axes = {0: "batch", 1: "tokens"}
        # The TorchScript exporter writes one self-contained file (the dynamo one splits off the weights).
        torch.onnx.export(LastHiddenState(), (example["input_ids"], example["attention_mask"]), str(tmp),
                          input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
                          opset_version=OPSET, dynamo=False)
    meta = {"format": EXPORT_FORMAT, "source": str(config.folder), "weights_sha256": reference.weights_sha256,
            "dimension": reference.dimension, "pad_id": tokenizer.pad_token_id, "pad_token": tokenizer.pad_token,
            "max_seq_length": reference.model.max_seq_length, "lowercase": bool(reference.model[0].do_lower_case),
            "opset": OPSET, "versions": {package: metadata.version(package)
                                         for package in ("torch", "transformers", "sentence-transformers")}}
    session = onnxruntime.InferenceSession(str(model_file), providers=["CPUExecutionProvider"])
    ours = _unit(pooled_embeddings(session, load_tokenizer(config, meta), config, meta["lowercase"], PROBE_SENTENCES))
    theirs = _unit(reference.model.encode(PROBE_SENTENCES, convert_to_numpy=True, show_progress_bar=False))
    meta["max_abs_difference"] = float(np.abs(ours - theirs).max())
    if not meta["max_abs_difference"] <= EXPORT_TOLERANCE:
        shutil.rmtree(target, ignore_errors=True)
        raise EmbedderError(f"the ONNX export of {config.folder} differs from sentence-transformers by "
                            f"{meta['max_abs_difference']:.2g} (> {EXPORT_TOLERANCE}); use --backend torch")
    write_text_atomic(target / "meta.json", json.dumps(meta, indent=1))
    return meta


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
