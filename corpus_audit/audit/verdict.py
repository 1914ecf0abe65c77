"""The audit's answer in plain words: is there a difference between mental and physical illness mentions, in which
direction, how large (with its CI), whether these group sizes could have seen a difference that small, and what to
look at next. Built from ``summary.json``'s analysis only, so the report and the command line say the same."""

from __future__ import annotations

import math
from typing import Any

from corpus_audit.stigma.quadrants import GROUPS
from corpus_audit.stigma.stats import MIN_GROUP_SIZE

ALPHA = 0.05


def _number(value: Any, digits: int = 2) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:+.{digits}f}"


def _score_sentence(score: str, comparison: dict[str, Any]) -> str:
    difference, (low, high) = comparison["mean_difference"], comparison["mean_difference_ci"]
    detectable, p = comparison.get("minimum_detectable_difference"), comparison["mann_whitney_p"]
    words = {"warmth": ("warmer", "colder"), "competence": ("more competent", "less competent")}[score]
    if difference is None or low is None or high is None or p is None:
        return f"on {score}, too few sentences to compare."
    interval = f"{_number(difference)} [95% CI {_number(low)} to {_number(high)}], Mann–Whitney p {p:.2g}"
    size = "" if detectable is None else f"; these group sizes detect differences of about {detectable:.2f} or more"
    # a direction is claimed only where the interval and the test agree (with tiny groups the bootstrap
    # interval alone is too narrow)
    if (low > 0 or high < 0) and p < ALPHA:
        return (f"on {score}, mental-illness mentions read {words[0] if difference > 0 else words[1]} than physical "
                f"ones: mental − physical {interval}{size}.")
    if low > 0 or high < 0:
        return (f"on {score}, no reliable difference: the bootstrap interval excludes 0 but the Mann–Whitney test "
                f"does not reject (with groups this unequal the interval alone is too narrow): mental − physical "
                f"{interval}{size}.")
    return f"on {score}, no difference shows: mental − physical {interval}{size} (a smaller one may exist unseen)."


def verdict(analysis: dict[str, Any], n_documents: int | None = None) -> list[str]:
    """The verdict as a few plain sentences (paragraph order)."""
    judgement = analysis.get("judgement")
    part = judgement["judgements"] if judgement else analysis
    what = "judgements about people" if judgement else "sentences"
    counts = {group: part["comparisons"]["warmth"][key] for group, key in zip(GROUPS, ("n_a", "n_b"))}
    lines = []
    if judgement:
        shares = {row["group"]: row for row in judgement["categories"]}
        lines.append("Of the sentences that mention an illness, "
                     + " and ".join(f"{shares[group]['judgement']:.1%} of {shares[group]['n']} {group}"
                                    for group in GROUPS if shares.get(group, {}).get("n"))
                     + " judge people; the rest disclose, describe, ask or use the illness as a figure of speech, "
                       "and are not read as stigma.")
    missing = [group for group in GROUPS if counts[group] < 2]
    if missing:
        lines.append(f"There are too few {' and '.join(missing)}-illness {what} (mental {counts['mental']}, physical "
                     f"{counts['physical']}) to compare mental with physical illness: read the per-group tables and "
                     "the ranked documents, which describe one group on its own.")
    else:
        comparisons = part["comparisons"]
        lines.append(f"Comparing {counts['mental']} mental with {counts['physical']} physical {what}: "
                     + " Then ".join(_score_sentence(score, comparisons[score]) for score in ("warmth", "competence")))
        small = [group for group in GROUPS if counts[group] < MIN_GROUP_SIZE]
        if small:
            lines.append(f"With fewer than {MIN_GROUP_SIZE} {' and '.join(small)} {what}, read these numbers as a "
                         "description, not as evidence of a difference.")
    if judgement:
        dimensions = [row for row in judgement["dimensions"] if row.get("top_share_mental") is not None]
        if dimensions:
            top = max(dimensions, key=lambda row: row["top_share_mental"])
            lines.append(f"The AQ-27 dimension mental-illness judgements are most often about is {top['dimension']} "
                         f"({top['top_share_mental']:.0%} of {top['n_mental']}).")
    documents = f" (of {n_documents})" if n_documents is not None else ""
    lines.append(f"Next: read the ranked documents{documents} below, most stigmatising first (`corpus-audit documents "
                 "OUTDIR`), and remove those you judge harmful with `corpus-audit clean`; the validity section says "
                 "how far the scores can be trusted on real text.")
    return lines
