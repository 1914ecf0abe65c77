"""The instrument's output columns, in the order :meth:`corpus_audit.scm.axes.SCMAxes.measure` returns them (a
module without heavy imports, so that the command line and the readers of outputs can name them cheaply)."""

from __future__ import annotations

from corpus_audit.stigma.judgement import CATEGORY_COLUMNS, DIMENSION_COLUMNS, STANCES

AXES = ("warmth", "competence")
#: The signed stigma score: the probability that the sentence stigmatises people with the illness (scm/stigma.py).
STIGMA_COLUMN = "stigma"
#: warmth, competence, the probability of each judgement category (that of a judgement is the judgement strength),
#: the nine AQ-27 dimension scores, the stigma score; the judgement columns are NaN for axes trained without the
#: gate, the stigma score for axes without the stigma head.
OUTPUT_COLUMNS = (*AXES, *CATEGORY_COLUMNS, *DIMENSION_COLUMNS.values(), STIGMA_COLUMN)
#: Classes of the dimension head: no dimension, then each dimension endorsed and rejected.
DIMENSION_CLASSES = ("none", *(f"{dimension}:{stance}" for dimension in DIMENSION_COLUMNS for stance in STANCES))
