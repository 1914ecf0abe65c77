"""The examples of docs/api.md run as written: every ```python block (not those marked no-run), in order, in one
namespace, from a folder that holds the demo corpus."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_every_block_is_found():
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert len(BLOCK.findall(text)) == 6 and "```python no-run" in text


@pytest.mark.slow
def test_the_examples_of_docs_api_run(tmp_path, monkeypatch):
    pytest.importorskip("datatrove")
    (tmp_path / "demo").symlink_to(ROOT / "demo")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    for number, block in enumerate(BLOCK.findall((ROOT / "docs" / "api.md").read_text(encoding="utf-8")), start=1):
        try:
            exec(compile(block, f"docs/api.md block {number}", "exec"), namespace)  # noqa: S102
        except Exception as error:  # name the block that failed
            raise AssertionError(f"docs/api.md python block {number} failed: {error!r}\n{block}") from error
    assert len(namespace["table"]) > 10 and namespace["results"].summary.analysis.n_sentences > 0
    kept = list((tmp_path / "datatrove-out" / "kept").glob("*.jsonl.gz"))
    assert kept and os.path.getsize(kept[0]) > 0
