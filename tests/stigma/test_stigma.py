"""The shared domain: groups, quadrants and regions defined once, the BIAS map, the AQ-27 structure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from corpus_audit.stigma import aq27
from corpus_audit.stigma.bias_map import UnknownDimensionError, find_dimension, load_bias_map
from corpus_audit.stigma.quadrants import (GROUPS, ILLNESS_TYPES, QUADRANTS, illness_type_of, quadrant_index,
                                           quadrant_of, region_quadrants)

PACKAGE = Path(__file__).resolve().parents[2] / "corpus_audit"


def test_quadrant_index_and_labels_agree_and_zero_is_high():
    warmth = np.array([0.0, 0.0, -0.1, -0.1])
    competence = np.array([0.0, -0.1, 0.0, -0.1])
    assert quadrant_index(warmth, competence).tolist() == [0, 1, 2, 3]
    assert quadrant_of(warmth, competence).tolist() == list(QUADRANTS)
    assert quadrant_of(float("nan"), 0.5) is None


def test_regions_are_unions_of_quadrants():
    assert [q for q, inside in zip(QUADRANTS, region_quadrants("high", "low")) if inside] == ["warm-incompetent"]
    assert [q for q, inside in zip(QUADRANTS, region_quadrants("low", None)) if inside] == \
        ["cold-competent", "cold-incompetent"]


def test_illness_types_and_the_type_of_a_sentence():
    assert ILLNESS_TYPES == ("mental", "physical", "both") and GROUPS == ILLNESS_TYPES[:2]
    assert illness_type_of(["mental", "mental"]) == "mental"
    assert illness_type_of(["physical", "mental"]) == "both"
    assert illness_type_of([]) is None


def test_the_shared_names_are_defined_once_in_the_package():
    """GROUPS, ILLNESS_TYPES, QUADRANTS, LexiconError and the chunk size each have one definition."""
    definitions = {name: [] for name in ("GROUPS =", "ILLNESS_TYPES =", "QUADRANTS =", "class LexiconError",
                                         "CHUNK_SENTENCES =", "def quadrant_of")}
    for path in PACKAGE.rglob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            for name in definitions:
                if line.startswith(name):
                    definitions[name].append(path.relative_to(PACKAGE).as_posix())
    assert {name: len(paths) for name, paths in definitions.items()} == dict.fromkeys(definitions, 1), definitions


def test_aq27_has_nine_dimensions_of_three_items_covering_the_27():
    items = sorted(item for triple in aq27.DIMENSION_ITEMS.values() for item in triple)
    assert items == list(range(1, aq27.N_ITEMS + 1))
    assert aq27.dimension_of(8) == "Help" and aq27.dimension_of(26) == "Avoidance"
    assert aq27.REVERSE_SCORED == {"Help", "Avoidance"}
    with pytest.raises(ValueError, match="items 1 to 27"):
        aq27.dimension_of(28)


def test_the_bundled_bias_map_covers_the_aq27_dimensions():
    assert sorted(d.dimension for d in load_bias_map()) == sorted(aq27.DIMENSIONS)


def test_find_dimension_reads_the_given_map():
    bias_map = load_bias_map()
    pity = find_dimension(" pity ", bias_map)
    assert pity.quadrants() == ["warm-incompetent"]
    assert find_dimension("Fear", bias_map).quadrants() == ["cold-competent", "cold-incompetent"]
    with pytest.raises(UnknownDimensionError, match="valid: Anger"):
        find_dimension("Shame", bias_map)
