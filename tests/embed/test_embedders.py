"""The embedder interface: order, normalisation, batching, identity; loading errors."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_audit.embed import Embedder, EmbedderError, check_model, load_embedder
from corpus_audit.embed.sbert import SentenceTransformerEmbedder


class LengthEmbedder(Embedder):
    """Vector (len, 1, 0): easy to predict; records batch sizes."""

    backend = "toy"

    def __init__(self, batch_size: int) -> None:
        super().__init__("length", batch_size)
        self.batches: list[int] = []

    @property
    def dimension(self) -> int:
        return 3

    @property
    def weights_sha256(self) -> str:
        return "ab" * 32

    def _encode_batch(self, texts):
        self.batches.append(len(texts))
        return np.array([[len(t), 1.0, 0.0] for t in texts])


def test_rows_come_back_in_input_order_normalised_and_batched():
    texts = ["ccc", "a", "bbbbbbbbbb", "dd", "e"]
    embedder = LengthEmbedder(batch_size=2)
    vectors = embedder.encode(texts)
    assert vectors.shape == (5, 3) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    expected = np.array([[len(t), 1.0, 0.0] for t in texts])
    np.testing.assert_allclose(vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6)
    assert embedder.batches == [2, 2, 1]
    assert embedder.model_id == "toy:length@" + "ab" * 6
    assert embedder.encode([]).shape == (0, 3)


def test_sentence_transformers_backend_identity(tiny_st_model):
    first = SentenceTransformerEmbedder("tiny", path=tiny_st_model)
    second = SentenceTransformerEmbedder("tiny", path=tiny_st_model)
    assert first.model_id == second.model_id and first.dimension == 32
    with_other_weights = SentenceTransformerEmbedder("tiny", path=tiny_st_model)
    with_other_weights.model[0].auto_model.embeddings.word_embeddings.weight.data += 1.0
    with_other_weights._sha256 = None
    assert with_other_weights.model_id != first.model_id  # the id follows the weights, not the name
    vectors = first.encode(["these people are kind", "they are cruel"], show_progress=False)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_load_errors_are_clear(tmp_path, monkeypatch):
    with pytest.raises(EmbedderError, match="model folder not found"):
        check_model(str(tmp_path / "missing"))
    with pytest.raises(EmbedderError, match="cannot load sentence-transformers model"):
        load_embedder(str(tmp_path))  # a folder, but not a model
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(EmbedderError, match="not in the Hugging Face cache"):
        check_model("someone/no-such-model")
    assert check_model(None, lang="en") == "minilm"
    with pytest.raises(EmbedderError, match="unknown device"):
        load_embedder("minilm", device="tpu")
    with pytest.raises(EmbedderError, match="no default model"):
        load_embedder(None, lang="fr")
    with pytest.raises(EmbedderError, match="at least 1"):
        load_embedder("minilm", batch_size=0)
