"""The pieces the audit and probe reports share: the base style, escaping, number formats, tables and embedded
figures, so that both reports look alike and escape every text the same way (the audit and probe wings never
import each other, so the shared part lives here).
"""

from __future__ import annotations

import base64
import html
import itertools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from corpus_audit.common.formats import MISSING, is_missing, num, p_value, percent, points, with_ci

__all__ = ["BASE_STYLE", "MISSING", "embedded_png", "esc", "is_missing", "num", "p_value", "percent", "points",
           "soft_wrap", "table", "with_ci"]

#: The style both reports start from; each appends its own rules. ``tr.small`` and ``tr.strict`` are row classes of
#: :func:`table` (a group too small for the tests, a result on a stricter definition).
BASE_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto; max-width: 1100px;
       padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2rem; } h2 { border-bottom: 2px solid #ddd; padding-bottom: 0.2rem; margin-top: 2.2rem; }
.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.small td { color: #8a6d00; } tr.strict td { color: #555; font-style: italic; }
.warnings { background: #fff4e5; border: 2px solid #e69500; border-radius: 6px; padding: 0.6rem 1rem; }
.warnings h2 { border: none; margin: 0; color: #a35f00; } .ok { color: #2a7a2a; }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9rem; }
"""


def esc(value: Any) -> str:
    """``value`` as HTML text: reports show sentences from arbitrary corpora, which may contain markup."""
    return html.escape(str(value), quote=True)


#: A token longer than this (an id, a URL) may wrap inside a narrow cell, at the places :func:`soft_wrap` marks.
LONG_TOKEN = 24
_ZERO_WIDTH_SPACE = "\u200b"
_LONG_TOKEN = re.compile(rf"\S{{{LONG_TOKEN + 1},}}")
_BREAK_AFTER = re.compile(r"([/_.:?&=-]+)")


def soft_wrap(text: str) -> str:
    """``text`` with a zero-width space after each separator (``/ _ . : ? & = -``) of its long tokens, and every
    ``LONG_TOKEN`` characters of a long run without one: a cell may wrap there and nowhere inside a word."""
    def breakable(match: re.Match[str]) -> str:
        pieces = _BREAK_AFTER.sub(rf"\1{_ZERO_WIDTH_SPACE}", match.group(0)).split(_ZERO_WIDTH_SPACE)
        return _ZERO_WIDTH_SPACE.join(_ZERO_WIDTH_SPACE.join(piece[i:i + LONG_TOKEN]
                                                             for i in range(0, len(piece), LONG_TOKEN))
                                      for piece in pieces)

    return _LONG_TOKEN.sub(breakable, text)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric_from: int = 1,
          row_classes: Iterable[str] | None = None) -> str:
    """An HTML table of plain-text cells (all escaped); columns from ``numeric_from`` on are right-aligned and
    ``row_classes`` (one CSS class or "" per row) marks rows."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row, css in zip(rows, row_classes or itertools.repeat("")):
        cells = "".join(f'<td class="num">{esc(c)}</td>' if i >= numeric_from else f"<td>{esc(c)}</td>"
                        for i, c in enumerate(row))
        body.append(f'<tr class="{css}">{cells}</tr>' if css else f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def embedded_png(path: Path, alt: str) -> str:
    """An ``<img>`` holding the PNG at ``path`` as a base64 data URI: the report is one file that fetches nothing."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{esc(alt)}">'
