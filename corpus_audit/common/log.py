"""The default place for a library's messages when its caller gives no ``log`` function."""

from __future__ import annotations

import sys


def to_stderr(message: str) -> None:
    print(message, file=sys.stderr)
