"""The audit's answer in plain words. :func:`answer` is one sentence for the question a user asks: is mental-illness
talk in this corpus more stigmatising than physical-illness talk, by how much, and how sure. :func:`verdict` puts it
first, then the details: what the sentences do, each score's difference with its CI, what these group sizes could
detect, and what to look at next. Built from ``summary.json``'s analysis only, so the report and the command line
say the same."""

from __future__ import annotations

from corpus_audit.audit.results import AnalysisSummary, GroupResults, ScoreComparison
from corpus_audit.common.formats import is_missing, num, p_value, percent
from corpus_audit.stigma.quadrants import GROUPS
from corpus_audit.stigma.stats import MIN_GROUP_SIZE

ALPHA = 0.05
SCORES = ("warmth", "competence")
#: How a mental − physical difference reads, per score: (mental lower, mental higher).
_WORDS = {"warmth": ("colder", "warmer"), "competence": ("less competent", "more competent")}


def _direction(comparison: ScoreComparison) -> int:
    """-1 when mental scores reliably lower, +1 reliably higher, 0 otherwise. A direction is claimed only where the
    bootstrap interval excludes 0 and Mann–Whitney rejects (with tiny or unequal groups the interval alone is too
    narrow)."""
    difference, (low, high), p = (comparison.mean_difference, comparison.mean_difference_ci,
                                  comparison.mann_whitney_p)
    if any(is_missing(value) for value in (difference, low, high, p)) or p >= ALPHA:
        return 0
    return -1 if high < 0 else 1 if low > 0 else 0


def _by(score: str, comparison: ScoreComparison) -> str:
    """'colder by 0.12 (95% CI 0.05 to 0.20, p < 0.001)' in the direction of the difference."""
    difference, (low, high) = comparison.mean_difference, comparison.mean_difference_ci
    word = _WORDS[score][0 if difference < 0 else 1]
    low, high = sorted((abs(low), abs(high)))
    p = comparison.mann_whitney_p
    return f"{word} by {abs(difference):.2f} (95% CI {low:.2f} to {high:.2f}, p {p_value(p)})"


def _part(analysis: AnalysisSummary) -> tuple[GroupResults, str]:
    """The results the answer reads (the judgements where the axes have the gate, else every sentence) and what
    its units are called."""
    return analysis.answered, "judgements about people" if analysis.judgement else "sentences"


def answer(analysis: AnalysisSummary) -> str:
    """One sentence: is mental-illness talk more stigmatising than physical-illness talk here, by how much (on the
    [-1, 1] warmth and competence scales, with the 95% CI), and how sure (p, or too few to tell)."""
    part, what = _part(analysis)
    comparisons = part.comparisons
    counts = {"mental": comparisons["warmth"].n_a, "physical": comparisons["warmth"].n_b}
    small = [group for group in GROUPS if counts[group] < MIN_GROUP_SIZE]
    if small:
        few = " and ".join(f"{counts[group]} {group}-illness" for group in small)
        return (f"Too few to tell: with only {few} {what} (under {MIN_GROUP_SIZE}), this corpus cannot show whether "
                "mental-illness talk is more stigmatising than physical-illness talk; read the figures below as a "
                "description only.")
    directions = {score: _direction(comparisons[score]) for score in SCORES}
    lower = [score for score in SCORES if directions[score] < 0]
    higher = [score for score in SCORES if directions[score] > 0]
    for moved, head, more in ((lower, "Yes", "more"), (higher, "No", "less")):
        if moved and not (higher if moved is lower else lower):
            rest = [score for score in SCORES if score not in moved]
            return (f"{head}: {what} about mental illness are {more} stigmatising here than about physical illness, "
                    + " and ".join(_by(score, comparisons[score]) for score in moved) + " on a −1 to 1 scale"
                    + (f", with no reliable difference in {rest[0]}" if rest else "")
                    + f" ({counts['mental']} mental vs {counts['physical']} physical).")
    if lower and higher:
        return (f"Mixed: {what} about mental illness are " + _by(lower[0], comparisons[lower[0]]) + " but "
                + _by(higher[0], comparisons[higher[0]]) + " than about physical illness, on a −1 to 1 scale "
                f"({counts['mental']} mental vs {counts['physical']} physical).")
    detectable = [comparisons[score].minimum_detectable_difference for score in SCORES]
    sizes = [value for value in detectable if not is_missing(value)]
    warmth, competence = (num(comparisons[score].mean_difference, 2, True) for score in SCORES)
    return (f"No reliable difference: {what} about mental illness are not shown to be more or less stigmatising "
            f"than about physical illness (mental − physical warmth {warmth}, competence {competence} on a −1 to 1 "
            "scale, "
            f"{counts['mental']} mental vs {counts['physical']} physical)"
            + (f"; a difference of about {max(sizes):.2f} or more would have shown." if sizes else "."))


def _score_detail(score: str, comparison: ScoreComparison) -> str:
    difference, (low, high) = comparison.mean_difference, comparison.mean_difference_ci
    p, detectable = comparison.mann_whitney_p, comparison.minimum_detectable_difference
    if any(is_missing(value) for value in (difference, low, high, p)):
        return f"{score}: too few to compare."
    text = (f"{score}: mental − physical {num(difference, 2, True)} [95% CI {num(low, 2, True)} to "
            f"{num(high, 2, True)}], Mann–Whitney p {p:.2g}")
    if _direction(comparison) == 0 and (low > 0 or high < 0):
        text += " (the interval excludes 0 but the test does not reject, so no direction is claimed)"
    if not is_missing(detectable):
        text += f"; these group sizes detect about {detectable:.2f} or more"
    return text + "."


def verdict(analysis: AnalysisSummary, n_documents: int | None = None) -> list[str]:
    """The verdict as a few plain sentences (paragraph order): :func:`answer` first, then the details."""
    judgement = analysis.judgement
    part, what = _part(analysis)
    lines = [answer(analysis)]
    if judgement:
        shares = {row["group"]: row for row in judgement.categories}
        lines.append("Of the sentences that mention an illness, "
                     + " and ".join(f"{percent(shares[group]['judgement'])} of "
                                    f"{shares[group].get('sentences', shares[group]['n'])} {group}"
                                    for group in GROUPS if shares.get(group, {}).get("n"))
                     + " judge people; the rest disclose, describe, ask or use the illness as a figure of speech, "
                       "and are not read as stigma.")
    counts = dict(zip(GROUPS, (part.comparisons["warmth"].n_a, part.comparisons["warmth"].n_b)))
    if all(counts[group] >= 2 for group in GROUPS):
        lines.append(f"Details over {counts['mental']} mental and {counts['physical']} physical {what}: "
                     + " ".join(_score_detail(score, part.comparisons[score]) for score in SCORES))
    if judgement:
        dimensions = [row for row in judgement.dimensions if row.get("top_share_mental") is not None]
        if dimensions:
            top = max(dimensions, key=lambda row: row["top_share_mental"])
            lines.append(f"The AQ-27 dimension mental-illness judgements are most often about is {top['dimension']} "
                         f"({percent(top['top_share_mental'], 0)} of {top['n_mental']}).")
    documents = f" (of {n_documents})" if n_documents is not None else ""
    lines.append(f"Next: read the ranked documents{documents}, most stigmatising first (`corpus-audit documents "
                 "OUTDIR`), and remove those you judge harmful with `corpus-audit clean`; the validity section says "
                 "how far the scores can be trusted on real text.")
    return lines
