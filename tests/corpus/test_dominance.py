"""Illnesses that dominate a group of kept sentences (the warning of issue 16)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from corpus_audit.corpus.dominance import DominantIllness, dominant_illnesses


def kept(*rows: tuple[list[str], str]) -> pd.DataFrame:
    return pd.DataFrame({"illnesses": [illnesses for illnesses, _ in rows], "illness_type": [kind for _, kind in rows]})


def test_an_illness_in_more_than_half_of_its_group_is_reported() -> None:
    sentences = kept(
        (["lesions"], "physical"), (["lesions"], "physical"), (["lesions", "asthma"], "physical"),
        (["asthma"], "physical"), (["lesions", "depression"], "both"),
        (["depression"], "mental"), (["anxiety"], "mental"), (["schizophrenia"], "mental"),
    )
    # physical group: 4 physical + 1 both = 5 sentences, lesions in 4; mental: 3 + 1, depression in 2 (not > 0.5)
    assert dominant_illnesses(sentences) == [DominantIllness("physical", "lesions", 0.8, 4, 5)]
    assert dominant_illnesses(sentences, threshold=0.45) == [
        DominantIllness("physical", "lesions", 0.8, 4, 5), DominantIllness("mental", "depression", 0.5, 2, 4),
    ]


def test_a_mention_counts_once_per_sentence_and_both_sentences_belong_to_each_group() -> None:
    sentences = kept(
        (["flu", "flu"], "physical"), (["anxiety"], "mental"), (["flu", "anxiety"], "both"), (["asthma"], "physical"),
        (["asthma"], "physical"),
    )
    # flu: 2 of the 4 physical-group sentences (not more than half); anxiety: 2 of 2 mental-group sentences
    assert dominant_illnesses(sentences) == [DominantIllness("mental", "anxiety", 1.0, 2, 2)]


def test_parquet_arrays_and_illnesses_only_in_both_sentences() -> None:
    sentences = kept((np.array(["lesions"]), "physical"), (np.array(["lesions", "odd"]), "both"))
    # "odd" only occurs in a "both" sentence: its group is unknown, so it is never reported
    assert dominant_illnesses(sentences) == [DominantIllness("physical", "lesions", 1.0, 2, 2)]


def test_no_sentences_and_a_bad_threshold() -> None:
    assert dominant_illnesses(kept()) == []
    with pytest.raises(ValueError, match="threshold"):
        dominant_illnesses(kept(), threshold=1.0)
