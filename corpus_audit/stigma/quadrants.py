"""The warmth/competence plane that both wings read: illness groups, quadrants and regions, each defined once.

A score < 0 is "low" (cold / incompetent) and a score >= 0 is "high": an exact 0 counts as high, so every scored
sentence has exactly one quadrant. A sentence that mentions a mental and a physical illness has the illness type
"both" and belongs to each group.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

# numpy and pandas are imported inside the functions: the command line reads the names above at start-up, and
# importing numpy would double its start-up time.

#: The two illness groups compared everywhere.
GROUPS = ("mental", "physical")
#: The illness types a sentence can have: a group, or "both" (it then counts in each group).
ILLNESS_TYPES = (*GROUPS, "both")
#: Order of the quadrant columns; index = 2 * (warmth < 0) + (competence < 0).
QUADRANTS = ("warm-competent", "warm-incompetent", "cold-competent", "cold-incompetent")


def illness_type_of(groups: Iterable[str]) -> str | None:
    """``mental``, ``physical`` or ``both`` for the groups of a sentence's illness mentions; None for none."""
    kinds = set(groups)
    if not kinds:
        return None
    return "both" if len(kinds) > 1 else kinds.pop()


def require_columns(df: pd.DataFrame, columns: Iterable[str]) -> None:
    missing = [name for name in columns if name not in df.columns]
    if missing:
        raise ValueError(f"the sentence table lacks column(s) {', '.join(missing)} "
                         f"(has: {', '.join(map(str, df.columns))})")


def illness_list(value: Any) -> list[Any]:
    """An ``illnesses`` cell as a list: Parquet gives arrays; hand-made tables may hold one name as a string, or
    None."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def explode_illnesses(df: pd.DataFrame, column: str = "illness") -> pd.DataFrame:
    """One row per row of ``df`` and illness it names, the illness in ``column`` (a sentence naming two illnesses
    counts for each); rows naming none are left out."""
    return df.assign(**{column: df["illnesses"].map(illness_list)}).explode(column).dropna(subset=[column])


def scored_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows whose warmth and competence are both finite."""
    import numpy as np
    import pandas as pd

    require_columns(df, ("warmth", "competence"))
    warmth = pd.to_numeric(df["warmth"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    competence = pd.to_numeric(df["competence"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return df[np.isfinite(warmth) & np.isfinite(competence)]


def group_masks(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """Boolean row masks of the mental and physical groups ("both" rows are in each)."""
    require_columns(df, ("illness_type",))
    return {group: df["illness_type"].isin([group, "both"]).to_numpy(dtype=bool) for group in GROUPS}


def quadrant_index(warmth: np.ndarray, competence: np.ndarray) -> np.ndarray:
    """Index into QUADRANTS of each (warmth, competence) point (NaN coordinates count as high: mask them)."""
    return 2 * (warmth < 0).astype(int) + (competence < 0).astype(int)


def quadrant_of(warmth: Any, competence: Any) -> Any:
    """Quadrant label(s) of (warmth, competence) points.

    Scalars give a ``str``; arrays (broadcast together) give an object array of the same shape. Labels are
    QUADRANTS; a score < 0 is low (cold / incompetent) and a score ≥ 0 is high, so 0 counts as high.
    A NaN coordinate gives ``None``.
    """
    import numpy as np

    w, c = np.broadcast_arrays(np.asarray(warmth, dtype=float), np.asarray(competence, dtype=float))
    labels = np.asarray(QUADRANTS, dtype=object)[quadrant_index(w, c).ravel()].reshape(w.shape)
    labels[np.isnan(w) | np.isnan(c)] = None
    return labels.item() if labels.ndim == 0 else labels


def region_quadrants(warmth: str, competence: str | None) -> np.ndarray:
    """Boolean selector over QUADRANTS of a region: ``warmth`` "low" or "high", ``competence`` "low", "high" or
    None (free)."""
    import numpy as np

    warm = np.array([label.startswith("warm") for label in QUADRANTS])
    competent = np.array([label.endswith("-competent") for label in QUADRANTS])
    selector = warm if warmth == "high" else ~warm
    if competence == "high":
        selector = selector & competent
    elif competence == "low":
        selector = selector & ~competent
    return selector
