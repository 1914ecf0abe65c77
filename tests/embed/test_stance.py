"""The stance branch: adapter files, their merge into the base's top layers, and one pass giving both views (the
frozen sentence embedding unchanged, the tuned branch's features) on the ONNX and torch backends."""

from pathlib import Path

import numpy as np
import pytest

from corpus_audit.common.resources import sha256_file
from corpus_audit.embed import EmbedderError, StanceBase
from corpus_audit.embed.onnx import OnnxEmbedder
from corpus_audit.embed.sbert import SentenceTransformerEmbedder
from corpus_audit.embed.stance import merged_layers, read_adapter, write_adapter

TEXTS = ["these people are never kind .", "they are cruel", "not smart and not warm people", "cold ."]


@pytest.fixture()
def onnx_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def make_adapter(folder: str, path: Path, scale: float, seed: int = 0, rank: int = 2) -> Path:
    """An adapter for the tiny model's top layer: random LoRA factors (``scale`` 0: no change) on the attention's
    query and the feed-forward output, and a changed layer norm."""
    rng = np.random.default_rng(seed)
    hidden, inner = 32, 64
    tensors = {"0.attention.self.query.lora_A": rng.normal(size=(rank, hidden)),
               "0.attention.self.query.lora_B": scale * rng.normal(size=(hidden, rank)),
               "0.output.dense.lora_A": rng.normal(size=(rank, inner)),
               "0.output.dense.lora_B": scale * rng.normal(size=(hidden, rank)),
               "0.output.LayerNorm.weight": 1.0 + scale * rng.normal(size=hidden)}
    write_adapter(path, tensors, base="tiny", base_sha256=sha256_file(Path(folder) / "model.safetensors"), lang="en",
                  cut=1, layers=1, rank=rank, alpha=4.0)
    return path


def test_an_adapter_round_trips_and_merges_as_its_factors_say(tiny_st_model, tmp_path):
    adapter = read_adapter(make_adapter(tiny_st_model, tmp_path / "a.safetensors", 0.5))
    assert (adapter.cut, adapter.layers, adapter.rank, adapter.scale) == (1, 1, 2, 2.0)
    base = {"0.attention.self.query.weight": np.ones((32, 32)), "0.output.dense.weight": np.zeros((32, 64)),
            "0.output.LayerNorm.weight": np.ones(32), "0.output.LayerNorm.bias": np.zeros(32)}
    merged = merged_layers(base, adapter)
    expected = 1.0 + 2.0 * adapter.tensors["0.attention.self.query.lora_B"] @ adapter.tensors[
        "0.attention.self.query.lora_A"]
    np.testing.assert_allclose(merged["0.attention.self.query.weight"], expected, rtol=1e-6)
    np.testing.assert_allclose(merged["0.output.LayerNorm.weight"], adapter.tensors["0.output.LayerNorm.weight"])
    np.testing.assert_array_equal(merged["0.output.LayerNorm.bias"], 0.0)  # not in the adapter: the base's


def test_a_branch_that_changes_nothing_gives_the_sentence_embedding_twice(tiny_st_model, tmp_path):
    adapter = read_adapter(make_adapter(tiny_st_model, tmp_path / "zero.safetensors", 0.0))
    plain = SentenceTransformerEmbedder("tiny", path=tiny_st_model).encode(TEXTS)
    both = SentenceTransformerEmbedder("tiny", path=tiny_st_model, adapter=adapter).encode(TEXTS)
    assert both.shape == (len(TEXTS), 64)
    np.testing.assert_allclose(both[:, :32], plain, atol=1e-5)
    np.testing.assert_allclose(both[:, 32:], plain, atol=1e-5)


def test_onnx_and_torch_give_the_same_two_views(tiny_st_model, tmp_path, onnx_cache):
    adapter = read_adapter(make_adapter(tiny_st_model, tmp_path / "a.safetensors", 0.5))
    torch_views = SentenceTransformerEmbedder("tiny", path=tiny_st_model, adapter=adapter)
    onnx_views = OnnxEmbedder("tiny", tiny_st_model, adapter=adapter)
    assert onnx_views.views == torch_views.views == (32, 32)
    assert onnx_views.model_id.split(":", 1)[1] == torch_views.model_id.split(":", 1)[1]
    assert "+stance-en@" in onnx_views.model_id
    ours, theirs = onnx_views.encode(TEXTS), torch_views.encode(TEXTS)
    np.testing.assert_allclose(ours, theirs, atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(ours[:, :32], axis=1), 1.0, rtol=1e-5)  # each view normalised
    np.testing.assert_allclose(np.linalg.norm(ours[:, 32:], axis=1), 1.0, rtol=1e-5)
    plain = OnnxEmbedder("tiny", tiny_st_model).encode(TEXTS)
    np.testing.assert_allclose(ours[:, :32], plain, atol=2e-5)  # the frozen view is the model without a branch
    assert np.abs(ours[:, 32:] - plain).max() > 1e-2  # the branch changed something
    other = read_adapter(make_adapter(tiny_st_model, tmp_path / "b.safetensors", 0.5, seed=1))
    assert OnnxEmbedder("tiny", tiny_st_model, adapter=other).model_id != onnx_views.model_id


def test_an_adapter_for_other_weights_or_a_damaged_file_is_refused(tiny_st_model, tmp_path):
    path = make_adapter(tiny_st_model, tmp_path / "a.safetensors", 0.5)
    adapter = read_adapter(path)
    StanceBase("tiny", Path(tiny_st_model)).check(adapter)
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (elsewhere / "model.safetensors").write_bytes(b"other weights")
    with pytest.raises(EmbedderError, match="tuned from other weights"):
        StanceBase("tiny", elsewhere).check(adapter)
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(path.read_bytes()[:100])
    with pytest.raises(EmbedderError, match="not a readable corpus-audit stance adapter"):
        read_adapter(damaged)
