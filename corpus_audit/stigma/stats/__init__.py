"""Statistics shared by both wings, one module per concern; every public name is re-exported here, so
``from corpus_audit.stigma.stats import compare_groups`` reads the same as before the split.

* :mod:`.samples`: finite values and the small-group warning (``MIN_GROUP_SIZE``).
* :mod:`.intervals`: percentile-bootstrap intervals (``CI_LEVEL``).
* :mod:`.hypothesis_tests`: two-sample and paired comparisons of one score, t-tests, the 2-D energy test.
* :mod:`.power`: the minimum detectable effect and difference.
* :mod:`.effect_sizes`: pooled SD (Cohen's d) and the matched-pairs rank-biserial correlation.
* :mod:`.correlation`: Pearson's r, Spearman's rho with bootstrap and permutation.
* :mod:`.corrections`: Holm, Bonferroni, Benjamini-Hochberg.
* :mod:`.reliability`: Cronbach's alpha, coder agreement.
* :mod:`.mixed_model`: the binomial mixed model of the contextual probe.
* :mod:`.weighted`: weighted means, medians and shares with bootstrap intervals (the cascade's design).

Pure functions of arrays: no files, no plotting. **Small groups never raise.** Every result reports its ``n``; a
group smaller than ``MIN_GROUP_SIZE`` adds a warning string; a group with 0 or 1 values gives NaN statistics,
p-values and intervals. ``to_dict()`` returns plain Python (NaN and infinities become ``None``).
"""

from corpus_audit.stigma.stats.corrections import benjamini_hochberg, bonferroni, holm
from corpus_audit.stigma.stats.correlation import LinearCorrelation, RankCorrelation, pearson, rank_correlation
from corpus_audit.stigma.stats.effect_sizes import pooled_sd, rank_biserial_paired
from corpus_audit.stigma.stats.hypothesis_tests import (MAX_POINTS_2D, EnergyTest, GroupComparison, PairedComparison,
                                                        TTest, compare_groups, compare_paired, t_test, two_sample_2d)
from corpus_audit.stigma.stats.intervals import CI_LEVEL, gap_change, mean_ci, percentile_ci
from corpus_audit.stigma.stats.mixed_model import QUADRATURE_NODES, MixedLogit, mixed_logit
from corpus_audit.stigma.stats.power import minimum_detectable_difference, minimum_detectable_effect
from corpus_audit.stigma.stats.reliability import agreement, cronbach_alpha
from corpus_audit.stigma.stats.samples import MIN_GROUP_SIZE, finite, size_warnings
from corpus_audit.stigma.stats.weighted import (bootstrap_weighted_counts, bootstrap_weighted_means,
                                                compare_weighted_groups, weighted_mean,
                                                weighted_mean_ci, weighted_median)

__all__ = ["CI_LEVEL", "MAX_POINTS_2D", "MIN_GROUP_SIZE", "QUADRATURE_NODES", "EnergyTest", "GroupComparison",
           "LinearCorrelation", "MixedLogit", "PairedComparison", "RankCorrelation", "TTest", "agreement",
           "benjamini_hochberg", "bonferroni", "bootstrap_weighted_counts", "bootstrap_weighted_means",
           "compare_groups", "compare_paired", "compare_weighted_groups", "cronbach_alpha", "finite",
           "gap_change", "holm", "mean_ci", "minimum_detectable_difference", "minimum_detectable_effect",
           "mixed_logit", "pearson", "percentile_ci", "pooled_sd", "rank_biserial_paired", "rank_correlation",
           "size_warnings", "t_test", "two_sample_2d", "weighted_mean", "weighted_mean_ci", "weighted_median"]
