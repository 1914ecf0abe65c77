"""Fixtures of the probe tests: the three anchor models, saved once per session as safetensors folders."""

from __future__ import annotations

import pytest
import tiny_mlm  # tests/probe is on sys.path (pytest's prepend import mode)


@pytest.fixture(scope="session")
def anchor_models(tmp_path_factory) -> dict[str, str]:
    """Folder of each anchor model (bert, roberta, roberta_bpe), built from the closed formula."""
    root = tmp_path_factory.mktemp("anchor-models")
    return {kind: str(tiny_mlm.save(kind, root / kind)) for kind in tiny_mlm.KINDS}


@pytest.fixture(scope="session")
def long_model(tmp_path_factory) -> str:
    """The anchor BERT with 512 positions, for sentences of 300 words."""
    return str(tiny_mlm.save("bert", tmp_path_factory.mktemp("long-model") / "bert", max_positions=512))
