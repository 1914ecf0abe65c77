"""A slice of the demo corpus and its audit by the command line (default English model, embedding cache off): what
the API and the datatrove steps must agree with."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from click.testing import CliRunner

DEMO = Path(__file__).resolve().parents[2] / "demo" / "reddit_sample_en.jsonl.gz"
#: Enough documents for a few dozen illness sentences, judgements among them, and documents without any.
SLICE_DOCUMENTS = 80


@pytest.fixture(scope="session")
def demo_slice(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo-slice") / "slice.jsonl"
    with gzip.open(DEMO, "rt", encoding="utf-8") as handle:
        path.write_text("".join(line for _, line in zip(range(SLICE_DOCUMENTS), handle)), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def slice_audit(demo_slice, tmp_path_factory) -> Path:
    from corpus_audit.cli import main

    outdir = tmp_path_factory.mktemp("slice-audit") / "audit"
    result = CliRunner().invoke(main, ["audit", str(demo_slice), "--lang", "en", "-o", str(outdir),
                                       "--no-embedding-cache", "--no-progress"])
    assert result.exit_code == 0, result.output
    return outdir


@pytest.fixture(scope="session")
def instrument():
    from corpus_audit import Instrument

    return Instrument("en")
