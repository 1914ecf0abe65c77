"""Safe output: atomic writes (temporary file + rename), early checks of the output location, folder locks."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from corpus_audit.common.errors import UserError


# Temporary files of atomic writes: ".<target name>.<8 random characters>.tmp" beside the target.
_TEMPORARY = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; on success it replaces ``target`` in one rename.

    An exception leaves any previous ``target`` untouched and removes the temporary file; a killed process
    leaves the temporary file, which :func:`remove_temporaries` clears.
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


@contextlib.contextmanager
def atomic_folder(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a new temporary folder beside ``target``, to fill; on success it becomes ``target`` in one rename.

    An exception removes the temporary folder and leaves ``target`` as it was. If ``target`` exists when the block
    ends (another process finished the same folder first), it is kept and the temporary folder removed.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o777 & ~_umask())  # mkdtemp makes it private (0700)
        try:
            os.rename(tmp_path, target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(target: str | os.PathLike, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes_atomic(target: str | os.PathLike, data: bytes) -> None:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def remove_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Delete the temporary files that killed atomic writes left in ``folder``; return them.

    Call it only while holding :func:`folder_lock` on the folder: another process's write in progress would
    lose its temporary file.
    """
    folder = Path(folder)
    found = [path for path in folder.iterdir() if _TEMPORARY.fullmatch(path.name) and path.is_file()] \
        if folder.is_dir() else []
    for path in found:
        path.unlink(missing_ok=True)
    return found


#: Free space below which an output location is refused before any work starts.
MIN_FREE_BYTES = 50 * 1024 * 1024


class OutputLocationError(UserError, OSError):
    """The output location cannot take the run's outputs (not writable, full, or in use); the message says why."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def check_output_location(folder: str | os.PathLike, min_free_bytes: int = MIN_FREE_BYTES) -> Path:
    """Create ``folder`` if needed and make sure a file can be written there and the disk is not full."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check."):
            pass
    except OSError as error:
        raise OutputLocationError(errno.EACCES, f"cannot write to {folder}: {error.strerror or error}") from None
    free = shutil.disk_usage(folder).free
    if free < min_free_bytes:
        raise OutputLocationError(errno.ENOSPC, f"{folder} has only {free / 1e6:.0f} MB free "
                                                f"(at least {min_free_bytes / 1e6:.0f} MB needed)")
    return folder


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (file ``.lock``) for the block, or fail at once if another process
    holds it. The kernel releases the lock when the holder dies, even from SIGKILL, so no stale lock remains."""
    path = Path(folder) / ".lock"
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise OutputLocationError(errno.EBUSY, f"{folder} is in use by another run ({holder}); wait for it to "
                                                   "finish or choose another output folder") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)
