"""Atomic file output: write to a temporary file beside the target, then rename over it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; on success it replaces ``target`` in one rename.

    A crash or an exception leaves any previous ``target`` untouched and removes the temporary file.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(handle)
    tmp_path = Path(tmp_name)
    try:
        yield tmp_path
        # mkstemp creates the file private (0600); give it the permissions a plain open() would.
        os.chmod(tmp_path, 0o666 & ~_umask())
        os.replace(tmp_path, target)
    finally:
        tmp_path.unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(target: str | os.PathLike, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
