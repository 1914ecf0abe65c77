"""The AQ-27 statistics on synthetic scores (no model): the controlled score, the illness as the unit, the null
check's flags and the verdict's wording follow the booleans."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from corpus_audit.probe.analysis import add_null_check, analyse_units, method_scores, verdict
from corpus_audit.stigma.aq27 import DIMENSION_ITEMS


def synthetic(shift: float, pieces_gap: int = 0, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Prompts and carriers of 10 + 10 illnesses x 2 noun phrases: the illness's own log-probability varies with
    its number of pieces (mental names ``pieces_gap`` pieces longer), the items add ``shift`` to mental ones."""
    rng = np.random.default_rng(seed)
    rows, carriers = [], []
    for index in range(20):
        kind = "mental" if index < 10 else "physical"
        pieces = 1 + index % 3 + (pieces_gap if kind == "mental" else 0)
        own = -3.0 * pieces + rng.normal()
        for noun_phrase in ("A", "B"):
            for carrier in (1, 2):
                carriers.append({"item": carrier, "noun_phrase": noun_phrase, "illness": f"i{index}",
                                 "illness_type": kind, "pll_illness": own + rng.normal(0, 0.1),
                                 "n_tokens_illness": pieces})
            for dimension, items in DIMENSION_ITEMS.items():
                for item in items:
                    effect = shift if kind == "mental" else 0.0
                    rows.append({"item": item, "dimension": dimension, "noun_phrase": noun_phrase,
                                 "illness": f"i{index}", "illness_type": kind,
                                 "pll_illness": own + pieces * effect + rng.normal(0, 0.3),
                                 "n_tokens_illness": pieces, "pll_sentence": own - 20 + rng.normal(),
                                 "n_tokens_sentence": 10 + pieces})
    return pd.DataFrame(rows), pd.DataFrame(carriers)


def test_the_controlled_score_takes_out_the_names_length():
    scored, carriers = synthetic(shift=0.0, pieces_gap=2)
    results = analyse_units(method_scores(scored, carriers, "controlled", "illness", "mean"), n_boot=200,
                            permutations=999)
    assert not results["overall"]["significant"]  # the names' length alone: nothing
    raw = analyse_units(method_scores(scored, carriers, "paper", "illness", "sum"), n_boot=200, permutations=999)
    assert raw["overall"]["significant"] and raw["overall"]["mean_difference"] < -3  # raw PLL falls with length
    table = method_scores(scored, carriers, "controlled", "illness", "mean")
    first = table.iloc[0]
    mine = carriers[(carriers["illness"] == first["illness"]) & (carriers["noun_phrase"] == first["noun_phrase"])]
    baseline = (mine["pll_illness"] / mine["n_tokens_illness"]).mean()
    assert first["score"] == pytest.approx(first["pll_illness"] / first["n_tokens_illness"] - baseline)


def test_a_real_shift_is_found_and_the_null_check_flags_only_what_random_copies_share():
    scored, carriers = synthetic(shift=1.0)
    results = analyse_units(method_scores(scored, carriers, "controlled", "illness", "mean"), n_boot=200,
                            permutations=999)
    assert results["overall"]["significant"] and results["overall"]["mean_difference"] > 0.5
    assert results["overall"]["n_a"] == results["overall"]["n_b"] == 10
    null_scored, null_carriers = synthetic(shift=0.0, seed=1)
    copy = analyse_units(method_scores(null_scored, null_carriers, "controlled", "illness", "mean"), n_boot=200,
                         permutations=999)
    add_null_check(results, [copy])
    assert results["overall"]["null_agrees"] == 0 and not results["overall"]["flagged"]
    assert results["null_check"]["false_positive_rate"] == 0.0
    lines = verdict(results)
    assert lines[0].startswith("Mental vs physical illnesses: a difference") and "more likely" in lines[0]
    assert not any("learnt nothing" in line for line in lines)
    add_null_check(results, [results | {}])  # a copy that says the same thing
    assert results["overall"]["flagged"] and results["overall"]["null_agrees"] == 1
    assert any("a model that learnt nothing produces this result" in line for line in verdict(results))
    opposite = {"overall": {**results["overall"], "mean_difference": -1.0}, "dimensions": results["dimensions"]}
    add_null_check(results, [opposite])  # significant the other way: the test fires on a model that learnt nothing
    assert results["overall"]["flagged"] and results["overall"]["null_agrees"] == 0
    assert results["overall"]["null_significant"] == 1
    assert any("come out significant too (0 in the same direction)" in line for line in verdict(results))
