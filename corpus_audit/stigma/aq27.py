"""The AQ-27 (Attribution Questionnaire, Corrigan et al. 2003): nine stigma dimensions of three items each.

Item numbers per dimension as in the seed paper (Mina et al., §3.1). Help and Avoidance are worded positively
("I would help ...", "I would share a car ...") and are reverse-scored in the questionnaire. The item texts, in
each language, are questionnaire data that users can edit; this module holds only the structure they share.
"""

from __future__ import annotations

#: Items of each dimension (1-based item numbers of the questionnaire).
DIMENSION_ITEMS: dict[str, tuple[int, int, int]] = {
    "Anger": (1, 4, 12),
    "Dangerousness": (2, 13, 18),
    "Fear": (3, 19, 24),
    "Coercion": (5, 14, 25),
    "Segregation": (6, 15, 17),
    "Avoidance": (7, 16, 26),
    "Help": (8, 20, 21),
    "Pity": (9, 22, 27),
    "Blame": (10, 11, 23),
}
DIMENSIONS = tuple(DIMENSION_ITEMS)
#: Dimensions whose items are worded positively, so that agreement means less stigma.
REVERSE_SCORED = frozenset({"Help", "Avoidance"})
N_ITEMS = 27
#: What a reviewer chooses when a stigmatising sentence fits none of the nine (docs/labelling.md, section 3).
OTHER_DIMENSION = "Other"
#: Other spellings of a dimension that older files use: docs/labelling.md and the labelled data name Help by its
#: stigma, withholding help.
DIMENSION_ALIASES = {"withholding_help": "Help"}


def dimension_label(name: str) -> str | None:
    """The one name (a dimension of :data:`DIMENSIONS`, or :data:`OTHER_DIMENSION`) of the dimension spelt ``name``
    in any letter case, or by an older name (:data:`DIMENSION_ALIASES`); None when it names none of them."""
    wanted = name.strip().lower()
    wanted = DIMENSION_ALIASES.get(wanted, wanted).lower()
    return next((known for known in (*DIMENSIONS, OTHER_DIMENSION) if known.lower() == wanted), None)


def dimension_of(item: int) -> str:
    """The dimension of item number ``item`` (1 to 27)."""
    for dimension, items in DIMENSION_ITEMS.items():
        if item in items:
            return dimension
    raise ValueError(f"the AQ-27 has items 1 to {N_ITEMS}, not {item!r}")
