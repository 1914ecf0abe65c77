"""Shared fixtures: a tiny sentence-transformers model built on the fly, an isolated cache, and the scripts' loader."""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach the hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The embedding cache and trained axes of the tests' audits stay out of the user's cache (and tests start cold).
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="corpus-audit-tests-")

# Example counts of the fuzz tests (tests/test_fuzz_*.py), which set none themselves: "ci" keeps the suite fast
# and reproducible; CORPUS_AUDIT_FUZZ=thorough runs 10,000 generated inputs per test (per reader format).
# Tests that pass their own max_examples keep it.
_FUZZ_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True, suppress_health_check=_FUZZ_HEALTH)
settings.register_profile("thorough", max_examples=10_000, deadline=None, database=None,
                          suppress_health_check=_FUZZ_HEALTH)
settings.load_profile(os.environ.get("CORPUS_AUDIT_FUZZ", "ci"))


SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture(scope="session")
def load_script():
    """Import ``scripts/<name>.py`` (the scripts are not a package) as the module ``name``; scripts/ is on the
    import path, as when a script runs, so a script can import another."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    return load


@pytest.fixture(scope="session")
def tiny_st_model(tmp_path_factory) -> str:
    """A randomly initialised 2-layer BERT with mean pooling, saved as a sentence-transformers folder."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-st")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "these", "people", "are", "always", "never", "not",
             "they", "and", "kind", "cruel", "smart", "stupid", "warm", "cold", "."]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    transformer_dir = folder / "bert"
    BertModel(config).save_pretrained(transformer_dir)
    tokenizer.save_pretrained(transformer_dir)
    word_embedding = models.Transformer(str(transformer_dir), max_seq_length=64)
    pooling = models.Pooling(word_embedding.get_word_embedding_dimension(), pooling_mode="mean")
    model_dir = folder / "model"
    SentenceTransformer(modules=[word_embedding, pooling], device="cpu").save(str(model_dir))
    return str(model_dir)


@pytest.fixture()
def isolated_cache(tmp_path, monkeypatch):
    """Trained-on-demand axes go to a temporary cache, not the user's."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture(scope="session")
def tiny_axes(tiny_st_model, tmp_path_factory) -> str:
    """Axes for the tiny model, trained once through the CLI (reference recipe: small and fast)."""
    from click.testing import CliRunner

    from corpus_audit.cli import main

    path = tmp_path_factory.mktemp("axes") / "tiny.npz"
    result = CliRunner().invoke(main, ["axes", "train", "--model", tiny_st_model, "--recipe", "reference",
                                       "-o", str(path)])
    assert result.exit_code == 0, result.output
    return str(path)


@pytest.fixture(scope="session")
def forms_axes(tiny_st_model, tiny_axes, tmp_path_factory) -> str:
    """The tiny model's axes with a gate, dimension heads and a stigma head that reads the forms: it calls a
    sentence stigmatising when it has a slang mention, whatever its words."""
    import numpy as np

    from corpus_audit.corpus.matcher import FORMS
    from corpus_audit.scm.axes import STIGMA_CLASSES, form_indicators
    from corpus_audit.scm.columns import DIMENSION_CLASSES
    from corpus_audit.scm.heads import ClassifierHead
    from corpus_audit.score.scorer import ModelSpec
    from corpus_audit.stigma.judgement import CATEGORIES

    embedder, axes = ModelSpec("en", tiny_st_model, axes_path=tiny_axes).load()
    rng = np.random.default_rng(0)
    X = embedder.encode([f"sentence {i} about this condition and {rng.integers(1000)}" for i in range(120)])
    forms = [tuple(f for f in FORMS if rng.random() < 0.4) for _ in range(120)]
    slang = np.array(["slang" in f for f in forms], dtype=int)
    stigma = ClassifierHead("logistic", STIGMA_CLASSES).fit(np.hstack([X, form_indicators(forms, FORMS, 120)]), slang,
                                                            C=10.0)
    gate = ClassifierHead("logistic", CATEGORIES).fit(X, np.arange(120) % len(CATEGORIES))
    dimensions = ClassifierHead("logistic", DIMENSION_CLASSES).fit(X, np.arange(120) % len(DIMENSION_CLASSES))
    axes.attach_judgement(gate, dimensions, stigma, stigma_forms=FORMS)
    path = tmp_path_factory.mktemp("forms-axes") / "axes.npz"
    axes.save(path)
    return str(path)


@pytest.fixture()
def foreign_axes(tiny_axes, tmp_path) -> str:
    """The tiny model's axes, relabelled as trained on another model: every command must refuse them."""
    from corpus_audit.scm.axes import SCMAxes

    path = tmp_path / "other.npz"
    axes = SCMAxes.load(tiny_axes)
    axes.metadata_ = {**axes.metadata_, "embedder_id": "sentence-transformers:someone-else@000000000000"}
    axes.save(path)
    return str(path)


@pytest.fixture(scope="session")
def triage_axes(forms_axes, tmp_path_factory) -> str:
    """``forms_axes`` with the cascade's triage (score/cascade.py): a text head of their own that calls a sentence
    worth the encoder when it has "people", "they" or "i" in it, threshold 0.5."""
    import numpy as np

    from corpus_audit.scm.axes import TRIAGE_CLASSES, SCMAxes
    from corpus_audit.scm.text_head import TextHead

    texts = [f"{subject} {verb} this condition {tail}" for subject in ("people", "they", "i", "it", "doctors", "we")
             for verb in ("have", "hate", "treat", "discuss") for tail in ("today", "again", "often", "now")]
    flagged = np.array([text.split()[0] in ("people", "they", "i") for text in texts], dtype=int)
    axes = SCMAxes.load(forms_axes)
    axes.attach_triage({"threshold": 0.5, "target_recall": 0.99, "measured": {}},
                       TextHead(TRIAGE_CLASSES).fit(texts, flagged, C=10.0))
    path = tmp_path_factory.mktemp("triage-axes") / "axes.npz"
    axes.save(path)
    return str(path)
