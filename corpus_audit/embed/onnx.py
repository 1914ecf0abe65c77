"""A sentence-transformers model folder run by onnxruntime and ``tokenizers`` directly: neither torch nor
sentence-transformers is imported once the model has been exported.

Supported folders: ``modules.json`` lists a Transformer, a Pooling (mean or CLS token) and optionally a Normalize
module, no default prompt, the weights are ``model.safetensors`` and the tokenizer is ``tokenizer.json``; anything
else stays on the sentence-transformers backend. The pooling is read from the folder's Pooling configuration (either
file layout of sentence-transformers); the sequence length and the lower-casing are taken at export from the
sentence-transformers model itself (they come from several files, differently across its releases) and kept in
``meta.json``.

The first use exports the transformer to ONNX into the user cache (:func:`export`, the one function that imports
torch), keyed by the SHA-256 of the weights and configuration files (:meth:`SentenceModelConfig.identity`); the ONNX
file (a protobuf, nothing is unpickled) and then ``meta.json`` are written atomically, so that a killed export leaves
no half model behind. The export is checked
against the sentence-transformers model on probe sentences and records its weights hash
(:attr:`SentenceTransformerEmbedder.weights_sha256`): the ONNX embedder names the same weights, and its backend
``onnxruntime-fp32`` names how they run (see :func:`corpus_audit.embed.base.same_embeddings`).

``precision="int8"`` (``--backend onnx-int8``) runs a copy of the export whose matrix multiplications have int8
weights, one scale per output channel, and quantise their inputs on the fly, each token on its own, so that a
sentence's embedding does not depend on the sentences batched with it (:func:`quantised_model`, made once beside
the export). What that does to every score is measured against the fp32 path (``scripts/build_default_axes.py
--int8-only``, scm/quantised.py) and shown in the report; speed in docs/scaling.md. Its backend is
``onnxruntime-int8`` (:func:`corpus_audit.embed.base.quantises`).
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from corpus_audit.common.atomic import atomic_path, write_text_atomic
from corpus_audit.common.resources import sha256_bytes, sha256_files
from corpus_audit.embed.base import (ONNX_FP32_BACKEND, ONNX_INT8_BACKEND, Embedder, EmbedderError, branched_name,
                                     unit_rows)
from corpus_audit.embed.stance import StanceAdapter

if TYPE_CHECKING:
    from onnxruntime import InferenceSession, SessionOptions
    from tokenizers import Tokenizer

#: Bumped when the exported graph or meta.json changes, so that older exports are not reused.
EXPORT_FORMAT = 1
#: The module classes of a supported folder, in order (their module paths moved across sentence-transformers releases).
SUPPORTED_MODULES = (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"])
#: Pooling modes, as a Pooling config names them: ``pooling_mode`` (newer releases) or one true ``pooling_mode_*``.
POOLING_MODES = {"mean": "mean", "cls": "cls", "pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}


class UnsupportedModelError(EmbedderError):
    """A model folder that the onnxruntime backend cannot run (the sentence-transformers backend may)."""


@dataclass(frozen=True)
class SentenceModelConfig:
    """A supported sentence-transformers folder: its pooling, and where its files are."""

    folder: Path
    pooling: str  # "mean" or "cls"

    @property
    def weights(self) -> Path:
        return self.folder / "model.safetensors"

    @property
    def tokenizer(self) -> Path:
        return self.folder / "tokenizer.json"

    def identity(self) -> str:
        """SHA-256 of the weights and of the files that say how they run (tokenizer, sequence length, modules)."""
        names = ("config.json", "config_sentence_transformers.json", "modules.json", "sentence_bert_config.json",
                 "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json")
        return sha256_files([self.weights, *(self.folder / name for name in names if (self.folder / name).is_file())])


def read_config(folder: str | Path) -> SentenceModelConfig:
    """The module configuration of a sentence-transformers folder; ``UnsupportedModelError`` for a folder this
    backend cannot run exactly as sentence-transformers does."""
    folder = Path(folder)
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        kinds = [module["type"].rsplit(".", 1)[-1] for module in modules]
        if kinds not in SUPPORTED_MODULES or modules[0]["path"] != "" \
                or not all(module["type"].startswith("sentence_transformers.") for module in modules):
            raise UnsupportedModelError(f"{folder}: modules {kinds} (supported: Transformer in the folder itself, "
                                        "Pooling, optionally Normalize)")
        pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
        settings_file = folder / "config_sentence_transformers.json"
        settings = json.loads(settings_file.read_text(encoding="utf-8")) if settings_file.is_file() else {}
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        raise UnsupportedModelError(f"{folder}: not a readable sentence-transformers folder ({error})") from None
    modes = [pooling["pooling_mode"]] if "pooling_mode" in pooling else \
        [mode for mode, on in pooling.items() if mode.startswith("pooling_mode_") and on is True]
    if len(modes) != 1 or modes[0] not in POOLING_MODES:
        raise UnsupportedModelError(f"{folder}: pooling {modes} (supported: mean or cls)")
    if settings.get("default_prompt_name"):
        raise UnsupportedModelError(f"{folder}: a default prompt ({settings['default_prompt_name']!r})")
    config = SentenceModelConfig(folder, POOLING_MODES[modes[0]])
    for needed in (config.weights, config.tokenizer):
        if not needed.is_file():
            raise UnsupportedModelError(f"{folder}: no {needed.name}")
    return config


def export_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "corpus-audit" / "onnx"


def exported_model(config: SentenceModelConfig, log: Callable[[str], None],
                   adapter: StanceAdapter | None = None) -> tuple[Path, dict]:
    """The ONNX file of ``config``'s transformer (with ``adapter``'s stance branch: a second output) and its
    metadata, exported now if the cache has none."""
    identity = config.identity() if adapter is None else sha256_bytes(f"{config.identity()}:{adapter.sha256}".encode())
    target = export_cache_dir() / f"{identity[:32]}-v{EXPORT_FORMAT}"
    try:
        meta = json.loads((target / "meta.json").read_text(encoding="utf-8"))
        if (target / "model.onnx").is_file():
            return target / "model.onnx", meta
    except (OSError, ValueError):
        pass  # not exported yet, or an export was interrupted before its meta.json: export again
    log(f"exporting {config.folder}{' with its stance branch' if adapter else ''} to ONNX once, into {target} "
        "(needs torch; a minute at most)")
    return target / "model.onnx", export(config, target, adapter)


def quantised_model(model_file: Path, log: Callable[[str], None]) -> Path:
    """``model_file`` with the weights of its matrix multiplications in int8, one scale per output channel
    (onnxruntime's ``quantize_dynamic``), and their inputs quantised at run time one token at a time
    (:func:`_quantise_per_token`), made now beside it if not there yet (written atomically: a killed run leaves no
    half model)."""
    target = model_file.with_name(f"model.int8-v{INT8_FORMAT}.onnx")
    if target.is_file():
        return target
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    log(f"quantising {model_file} to int8 once, into {target}")
    quantiser_log = logging.getLogger()
    level = quantiser_log.level
    quantiser_log.setLevel(logging.ERROR)  # its advice to pre-process is for static quantisation of vision models
    try:
        with atomic_path(target) as tmp:
            quantize_dynamic(model_file, tmp, per_channel=True, weight_type=QuantType.QInt8,
                             op_types_to_quantize=["MatMul"])
            model = onnx.load(str(tmp))
            _quantise_per_token(model.graph)
            onnx.save(model, str(tmp))
    finally:
        quantiser_log.setLevel(level)
    return target


def _quantise_per_token(graph) -> None:
    """Replace each ``DynamicQuantizeLinear`` of ``graph`` (one scale for the whole batch, so that a sentence's
    embedding would depend on the sentences batched with it) by a symmetric quantisation of each row (token) of its
    input on its own: scale = max |x| / 127 over the row, q = round(x / scale) + 128 as uint8 with zero point 128
    (the u8s8 integer kernels). The products' outputs are then scaled per row by the rescaling already in the graph.
    Measured on 2,000 sentences of the cascade benchmark's corpus: cosine to fp32 0.997 (sentence view) and 0.999
    (stance branch) at the median, against 0.993 and 0.996 with one scale per batch."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    prefix = "per_token_"
    graph.initializer.extend([numpy_helper.from_array(np.array(value, dtype=dtype), f"{prefix}{name}")
                              for name, value, dtype in (("127", 127.0, np.float32), ("128", 128.0, np.float32),
                                                         ("tiny", 1e-12, np.float32), ("zero", 128, np.uint8))])
    nodes = []
    for node in graph.node:
        if node.op_type != "DynamicQuantizeLinear":
            nodes.append(node)
            continue
        (x,), (quantised, scale, zero_point), name = node.input, node.output, node.name
        nodes += [helper.make_node("Abs", [x], [f"{name}_abs"]),
                  helper.make_node("ReduceMax", [f"{name}_abs"], [f"{name}_max"], axes=[-1], keepdims=1),
                  helper.make_node("Max", [f"{name}_max", f"{prefix}tiny"], [f"{name}_range"]),
                  helper.make_node("Div", [f"{name}_range", f"{prefix}127"], [scale]),
                  helper.make_node("Div", [x, scale], [f"{name}_steps"]),
                  helper.make_node("Round", [f"{name}_steps"], [f"{name}_rounded"]),
                  helper.make_node("Add", [f"{name}_rounded", f"{prefix}128"], [f"{name}_shifted"]),
                  helper.make_node("Cast", [f"{name}_shifted"], [quantised], to=TensorProto.UINT8),
                  helper.make_node("Identity", [f"{prefix}zero"], [zero_point])]
    del graph.node[:]
    graph.node.extend(nodes)


#: Version of :func:`quantised_model`'s graph, in its file name (a file of another version is made again).
INT8_FORMAT = 1
#: ``OnnxEmbedder`` precisions and the backend each names.
PRECISIONS = {"fp32": ONNX_FP32_BACKEND, "int8": ONNX_INT8_BACKEND}


class OnnxEmbedder(Embedder):
    """A sentence-transformers folder (:func:`read_config`) run by onnxruntime, without importing torch, in batches
    of equal token counts. ``precision="fp32"``: the embeddings of the sentence-transformers backend up to float
    rounding (checked at export); ``"int8"``: the export quantised (:func:`quantised_model`)."""

    def __init__(self, name: str, folder: str | Path, batch_size: int = 64,
                 log: Callable[[str], None] = lambda message: None, adapter: StanceAdapter | None = None,
                 precision: str = "fp32") -> None:
        super().__init__(branched_name(name, adapter), batch_size)
        import onnxruntime

        if precision not in PRECISIONS:
            raise EmbedderError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        self.backend = PRECISIONS[precision]
        self.config = read_config(folder)
        model_file, meta = exported_model(self.config, log, adapter)
        # onnxruntime fuses an integer product and its rescaling into one kernel that takes a single scale for the
        # input: with the per-token scales of the int8 graph it would be silently wrong (tests/embed/test_onnx.py)
        disabled = ["MatMulIntegerToFloatFusion"] if precision == "int8" else None
        if precision == "int8":
            model_file = quantised_model(model_file, log)
        self._weights_sha256: str = meta["weights_sha256"]
        self.views = tuple(int(size) for size in meta.get("views") or [meta["dimension"]])
        self._lowercase = bool(meta["lowercase"])
        self.tokenizer = load_tokenizer(self.config, meta)
        self.tokenizer.no_padding()  # batches are padded here, after sorting by token count
        self._pad_id = int(meta["pad_id"])
        self.session = onnxruntime.InferenceSession(str(model_file), session_options(),
                                                    providers=["CPUExecutionProvider"], disabled_optimizers=disabled)
        self._inputs = {node.name for node in self.session.get_inputs()}

    @property
    def dimension(self) -> int:
        return sum(self.views)

    @property
    def weights_sha256(self) -> str:
        return self._weights_sha256

    def _batches(self, texts: list[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        # Each text is tokenised once (in Rust, one call), then run in batches of similar token counts whose padded
        # size stays under a token budget: short sentences go in large batches, long ones in small ones.
        encodings = self.tokenizer.encode_batch(_prepared(texts, self._lowercase))
        ids = [encoding.ids for encoding in encodings]
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        order = np.argsort(lengths, kind="stable")
        for rows in token_batches(lengths[order], TOKENS_PER_BATCH, self.batch_size):
            rows = order[rows]
            mask = np.arange(lengths[rows].max()) < lengths[rows, None]
            batch_ids = np.full(mask.shape, self._pad_id, dtype=np.int64)
            # row-major: the unmasked places of each row, in order, are its tokens
            batch_ids[mask] = np.fromiter(chain.from_iterable(ids[position] for position in rows), dtype=np.int64,
                                          count=int(lengths[rows].sum()))
            yield rows, self._pooled(batch_ids, mask.astype(np.int64))

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        for rows, batch in self._batches(texts):
            vectors[rows] = batch
        return vectors

    def _pooled(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return run_pooled(self.session, self._inputs, self.config.pooling, ids, mask)


#: Padded tokens per batch of the ONNX backend (at most ``batch_size`` texts), so that short sentences share large
#: batches and long ones small ones. Whole-process on 3,000 Reddit sentences this measured as fast as batches of
#: 64 texts (about 2,000 tokens), at the same scores (docs/performance.md, issue 32).
TOKENS_PER_BATCH = 1024


def token_batches(sorted_lengths: np.ndarray, budget: int, most: int) -> Iterator[slice]:
    """Consecutive slices of ``sorted_lengths`` (ascending token counts) of at most ``most`` rows whose padded size,
    rows times the longest, stays within ``budget`` (a text longer than the budget gets a batch of its own)."""
    start, total = 0, len(sorted_lengths)
    while start < total:
        # the largest end whose padded size fits: lengths ascend, so the last row sets the padding
        rows = min(most, budget // max(int(sorted_lengths[start]), 1))
        ends = np.arange(start + 1, min(total, start + rows) + 1)
        fits = (ends - start) * sorted_lengths[ends - 1] <= budget
        end = int(ends[fits][-1]) if fits.any() else start + 1
        yield slice(start, end)
        start = end


def session_options() -> SessionOptions:
    """One intra-op thread per CPU this process may use, every graph optimisation, and idle threads that sleep:
    on a busy machine (filter workers, other jobs) spinning threads took a third longer to embed the same
    sentences."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _prepared(texts: list[str], lowercase: bool) -> list[str]:
    # sentence-transformers strips each text, and lower-cases it when its Transformer module says so.
    return [text.strip().lower() if lowercase else text.strip() for text in texts]


def load_tokenizer(config: SentenceModelConfig, meta: dict) -> Tokenizer:
    """The folder's fast tokenizer, truncating and padding as sentence-transformers asks its tokenizer to."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(config.tokenizer))
    tokenizer.enable_truncation(max_length=int(meta["max_seq_length"]))
    tokenizer.enable_padding(pad_id=int(meta["pad_id"]), pad_token=meta["pad_token"])
    return tokenizer


def pooled_embeddings(session: InferenceSession, tokenizer: Tokenizer, config: SentenceModelConfig, lowercase: bool,
                      texts: list[str]) -> np.ndarray:
    """``texts`` through the ONNX transformer, pooled as the folder's Pooling module pools (not normalised)."""
    encodings = tokenizer.encode_batch(_prepared(texts, lowercase))
    ids = np.array([encoding.ids for encoding in encodings], dtype=np.int64)
    mask = np.array([encoding.attention_mask for encoding in encodings], dtype=np.int64)
    return run_pooled(session, {node.name for node in session.get_inputs()}, config.pooling, ids, mask)


def run_pooled(session: InferenceSession, inputs: set[str], pooling: str, ids: np.ndarray,
               mask: np.ndarray) -> np.ndarray:
    """Token ids and attention mask through the ONNX transformer, pooled as the folder's Pooling module pools
    (``mean`` over the unmasked tokens, or ``cls``; not normalised); a stance branch's token states (the graph's
    second output) follow, mean-pooled, in the same row."""
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    outputs = session.run(None, {name: value for name, value in feeds.items() if name in inputs})
    weights = mask[:, :, None].astype(np.float32)
    count = np.maximum(weights.sum(axis=1), 1e-9)
    pooled = [outputs[0][:, 0] if pooling == "cls" else (outputs[0] * weights).sum(axis=1) / count]
    pooled += [(stance * weights).sum(axis=1) / count for stance in outputs[1:]]
    return np.hstack(pooled) if len(pooled) > 1 else pooled[0]


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


def export(config: SentenceModelConfig, target: Path, adapter: StanceAdapter | None = None) -> dict:
    """Export ``config``'s transformer (with ``adapter``'s stance branch: a second output) to ``target/model.onnx``,
    check it on :data:`PROBE_SENTENCES` against the sentence-transformers model (and the branch against its torch
    module), and write ``target/meta.json`` (last: its presence marks a finished export). Returns the metadata."""
    import onnxruntime
    import torch

    from corpus_audit.embed.sbert import SentenceTransformerEmbedder

    reference = SentenceTransformerEmbedder(config.folder.name, path=str(config.folder), adapter=adapter)
    tokenizer = reference.model.tokenizer
    target.mkdir(parents=True, exist_ok=True)
    model_file = target / "model.onnx"
    example = tokenizer(["a b", "c"], padding=True, return_tensors="pt")
    module = reference.module
    outputs = ["last_hidden_state"] + (["stance_hidden_state"] if adapter else [])
    views = reference.views or (reference.dimension,)

    with atomic_path(model_file) as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and deprecation chatter of the exporter
        axes = {0: "batch", 1: "tokens"}
        # The TorchScript exporter writes one self-contained file (the dynamo one splits off the weights).
        torch.onnx.export(module, (example["input_ids"], example["attention_mask"]), str(tmp),
                          input_names=["input_ids", "attention_mask"], output_names=outputs,
                          dynamic_axes={name: axes for name in ["input_ids", "attention_mask", *outputs]},
                          opset_version=OPSET, dynamo=False)
    meta = {"format": EXPORT_FORMAT, "source": str(config.folder), "weights_sha256": reference.weights_sha256,
            "dimension": views[0], "views": list(views), "pad_id": tokenizer.pad_token_id, "pad_token": tokenizer.pad_token,
            "max_seq_length": reference.model.max_seq_length, "lowercase": bool(reference.model[0].do_lower_case),
            "stance": adapter.metadata() if adapter else None,
            "opset": OPSET, "versions": {package: metadata.version(package)
                                         for package in ("torch", "transformers", "sentence-transformers")}}
    session = onnxruntime.InferenceSession(str(model_file), providers=["CPUExecutionProvider"])
    ours = _unit_views(pooled_embeddings(session, load_tokenizer(config, meta), config, meta["lowercase"],
                                         PROBE_SENTENCES), views)
    theirs = reference.encode(PROBE_SENTENCES, show_progress=False)
    meta["max_abs_difference"] = float(np.abs(ours - theirs).max())
    if not meta["max_abs_difference"] <= EXPORT_TOLERANCE:
        shutil.rmtree(target, ignore_errors=True)
        raise EmbedderError(f"the ONNX export of {config.folder} differs from sentence-transformers by "
                            f"{meta['max_abs_difference']:.2g} (> {EXPORT_TOLERANCE}); use --backend torch")
    write_text_atomic(target / "meta.json", json.dumps(meta, indent=1))
    return meta


def _unit_views(vectors: np.ndarray, views: tuple[int, ...]) -> np.ndarray:
    return np.hstack([unit_rows(part) for part in np.split(vectors, np.cumsum(views)[:-1], axis=1)])
