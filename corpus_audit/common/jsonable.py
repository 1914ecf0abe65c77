"""Plain-Python copies of results, for JSON."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd


def jsonable(value: Any) -> Any:
    """Plain-Python copy of ``value``: numpy scalars/arrays and DataFrames converted, NaN/inf -> None."""
    if isinstance(value, pd.DataFrame):
        return [jsonable(record) for record in value.to_dict(orient="records")]
    if hasattr(value, "to_dict") and not isinstance(value, (dict, pd.Series)):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: jsonable(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


class JsonRecord:
    """Mixin for a dataclass of results: ``to_dict`` gives its fields as plain Python (:func:`jsonable`)."""

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self.__dict__)
