"""Locate the editable data files (lexicons, templates, questionnaires) and the shipped axes; fingerprint files;
count the CPUs this process may use.

Data ships at the top level of the source tree (``lexicons/``, ``templates/``, ``questionnaires/``) so that users
can read and edit it; an installed wheel carries a copy under ``corpus_audit/_data/``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: Axes trained for each language's default model, and their measured validity, shipped inside the package.
SHIPPED_AXES_DIR = _PACKAGE_DIR / "axes"


def data_dir(kind: str) -> Path:
    """Return the directory holding ``kind`` data (``"lexicons"``, ``"templates"`` or ``"questionnaires"``)."""
    for candidate in (_PACKAGE_DIR / "_data" / kind, _PACKAGE_DIR.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"corpus-audit data folder {kind!r} not found (broken installation?)")


def data_file(kind: str, *parts: str) -> Path:
    """Path of a bundled data file, e.g. ``data_file("lexicons", "en", "scm_seed.csv")``."""
    path = data_dir(kind).joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"bundled data file not found: {path}")
    return path


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, chunk_size: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_files(paths: list[Path]) -> str:
    """One hash over several files (names and contents), order-independent."""
    digest = hashlib.sha256()
    for path in sorted(paths, key=lambda p: p.name):
        digest.update(path.name.encode())
        digest.update(sha256_file(path).encode())
    return digest.hexdigest()


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform has one, e.g. under a container's cpuset)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
