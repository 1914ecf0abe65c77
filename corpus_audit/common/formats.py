"""Numbers as text, written once for every report, table and console line: a missing value (None, NaN, infinite)
shows as :data:`MISSING` everywhere."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

#: What a number shows as when the value is missing (None, NaN or infinite).
MISSING = "—"


def is_missing(value: Any) -> bool:
    """True for a value that cannot be shown as a number (None, NaN, infinite)."""
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def num(value: Any, digits: int = 3, signed: bool = False) -> str:
    """A number with ``digits`` decimals (``signed``: always with its sign), or :data:`MISSING`."""
    return MISSING if is_missing(value) else f"{value:{'+' if signed else ''}.{digits}f}"


def percent(value: Any, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage."""
    return MISSING if is_missing(value) else f"{100 * value:.{digits}f}%"


def points(value: Any) -> str:
    """A difference of two shares, in percentage points."""
    return MISSING if is_missing(value) else f"{100 * value:+.1f} pp"


def p_value(value: Any) -> str:
    """A p-value: three decimals, "< 0.001" below that (more digits would claim a precision tests lack)."""
    return MISSING if is_missing(value) else "< 0.001" if value < 0.001 else f"{value:.3f}"


def with_ci(value: Any, low: Any, high: Any, fmt: Callable[[Any], str] = num) -> str:
    """A value and its interval, ``value [low, high]``."""
    return f"{fmt(value)} [{fmt(low)}, {fmt(high)}]"
