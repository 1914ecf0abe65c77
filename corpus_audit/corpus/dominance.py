"""Illnesses that dominate a group of kept sentences: a comparison of mental and physical illness is then mostly a
comparison with one illness (CodiEsp: "lesión/lesiones" is in 68 % of the Spanish physical sentences)."""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from corpus_audit.stigma.quadrants import GROUPS


class DominantIllness(NamedTuple):
    """``illness`` is mentioned in ``sentences`` of the ``group_sentences`` sentences of ``group``."""

    group: str
    illness: str
    share: float
    sentences: int
    group_sentences: int


def dominant_illnesses(sentences: pd.DataFrame, threshold: float = 0.5) -> list[DominantIllness]:
    """The illnesses mentioned in more than ``threshold`` of the sentences of their group, largest share first.

    ``sentences`` has the filter's columns ``illnesses`` (canonical names, one list per sentence) and
    ``illness_type`` (mental, physical or both). A "both" sentence belongs to each group, as in the analysis.
    Counting canonical illnesses, not surface terms, keeps "lesión" and "lesiones" together. An illness's group
    is the type of the single-type sentences that mention it; one that only occurs in "both" sentences is left out.
    """
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be between 0 and 1, not {threshold}")
    mentions = (
        sentences[["illnesses", "illness_type"]].explode("illnesses").dropna(subset=["illnesses"])
        .reset_index(names="sentence").drop_duplicates(["sentence", "illnesses"])
    )
    single_type = mentions[mentions["illness_type"].isin(GROUPS)]
    group_of = single_type.groupby("illnesses")["illness_type"].agg(lambda types: types.mode().iloc[0])
    found = []
    for group in GROUPS:
        members = sentences["illness_type"].isin([group, "both"])
        group_sentences = int(members.sum())
        in_group = mentions[mentions["illness_type"].isin([group, "both"])]
        counts = in_group[in_group["illnesses"].map(group_of) == group]["illnesses"].value_counts()
        found.extend(
            DominantIllness(group, str(illness), int(count) / group_sentences, int(count), group_sentences)
            for illness, count in counts.items()
            if int(count) / group_sentences > threshold
        )
    return sorted(found, key=lambda item: -item.share)
