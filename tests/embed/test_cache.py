"""The embedding cache: vectors come back equal, texts seen before are never embedded again, shards are data-only,
and a damaged or half-written shard is ignored."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from corpus_audit.cli import main

from corpus_audit.embed.base import Embedder
from corpus_audit.embed.cache import KEYS, VECTORS, CachedEmbedder, text_digest


class CountingEmbedder(Embedder):
    """Deterministic vectors from the text; counts the texts it embeds."""

    backend = "test"

    def __init__(self) -> None:
        super().__init__("counting", batch_size=4)
        self.seen: list[str] = []

    @property
    def dimension(self) -> int:
        return 8

    @property
    def weights_sha256(self) -> str:
        return "0" * 64

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        return np.stack([np.random.default_rng(abs(hash(text)) % 2**32).normal(size=8) for text in texts])


def test_texts_seen_before_come_from_the_cache(tmp_path):
    texts = [f"sentence {i}" for i in range(10)]
    first = CachedEmbedder(CountingEmbedder(), tmp_path)
    vectors = first.encode(texts)
    assert (first.reused, first.embedded) == (0, 10)
    second_inner = CountingEmbedder()
    second = CachedEmbedder(second_inner, tmp_path)  # another process: reads the shards written by the first
    again = second.encode(texts[5:] + ["new one"])
    assert second_inner.seen == ["new one"]
    assert (second.reused, second.embedded) == (5, 1)
    np.testing.assert_array_equal(again[:5], vectors[5:])
    assert second.model_id == CountingEmbedder().model_id and second.dimension == 8


def test_digests_ending_in_zero_bytes_are_found_again(tmp_path):
    # numpy's fixed-width bytes drop trailing zero bytes; about 1 text in 256 has such a digest
    texts = [text for text in (f"t{i}" for i in range(3000)) if text_digest(text).endswith(b"\0")][:3]
    assert len(texts) == 3
    CachedEmbedder(CountingEmbedder(), tmp_path).encode(texts)
    inner = CountingEmbedder()
    CachedEmbedder(inner, tmp_path).encode(texts)
    assert inner.seen == []


def test_shards_are_plain_arrays_and_bad_ones_are_ignored(tmp_path):
    cached = CachedEmbedder(CountingEmbedder(), tmp_path)
    cached.encode(["a", "b", "a"])
    [keys] = cached.folder.glob(f"*{KEYS}")
    assert np.load(keys, allow_pickle=False).shape == (2, 16)  # a text repeated in one call is saved once
    vectors = keys.with_name(keys.name.removesuffix(KEYS) + VECTORS)
    vectors.write_bytes(b"garbage")
    (cached.folder / f"orphan{VECTORS}").write_bytes(b"")  # a write interrupted before its keys: never read
    inner = CountingEmbedder()
    fresh = CachedEmbedder(inner, tmp_path).encode(["a", "b"])
    assert inner.seen == ["a", "b"]
    assert np.allclose(np.linalg.norm(fresh, axis=1), 1)


@pytest.mark.parametrize("option", [["--no-embedding-cache"], []])
def test_audit_twice_embeds_each_sentence_once(option, tiny_st_model, tiny_axes, tmp_path):
    sample = str(Path(__file__).parents[1] / "data" / "corpus_reddit_sample_en.jsonl.gz")
    cache = ["--embedding-cache", str(tmp_path / "cache")] if not option else option
    runs = [CliRunner().invoke(main, ["audit", sample, "--lang", "en", "-o", str(tmp_path / name), "--model",
                                      tiny_st_model, "--axes", tiny_axes, "--workers", "1", "--limit", "300", *cache])
            for name in ("one", "two")]
    assert all(run.exit_code == 0 for run in runs), runs[0].output + runs[1].output
    first, second = (json.loads((tmp_path / name / "score.json").read_text()) for name in ("one", "two"))
    if option:
        assert first["from_embedding_cache"] is None and not (tmp_path / "cache").exists()
    else:
        assert first["embedded"] > 0 and second["embedded"] == 0
        assert second["from_embedding_cache"] == first["embedded"] + first["from_embedding_cache"]
        assert "0 embedded" in runs[1].stderr
        one, two = (pd.read_parquet(tmp_path / name / "sentences.parquet") for name in ("one", "two"))
        np.testing.assert_allclose(one["warmth"], two["warmth"], atol=1e-6)
