"""What every statistic checks first: finite values and whether a group is large enough to read."""

from __future__ import annotations

from typing import Any

import numpy as np

#: Groups smaller than this get a warning: tests and intervals on fewer sentences are too unstable to read.
MIN_GROUP_SIZE = 30


def finite(values: Any) -> np.ndarray:
    """1-D float array without NaN/inf."""
    array = np.asarray(values, dtype=float).ravel()
    return array[np.isfinite(array)]


def size_warnings(label: str, n: int) -> list[str]:
    if n < 2:
        return [f"{label}: {n} sentence(s); tests and intervals need at least 2 and are not computed"]
    if n < MIN_GROUP_SIZE:
        return [f"{label}: only {n} sentences (< {MIN_GROUP_SIZE}); statistics are unreliable"]
    return []
