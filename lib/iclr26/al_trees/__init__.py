"""Active learning of decision trees (chapter 04): exact tree classes, the disagreement
coefficient, CAL, and an agnostic learner with multiplicative error bounds.

* :mod:`.core` -- pools, the enumerated tree class, rho and theta, CAL, passive
  labelling, the exercise checker.
* :mod:`.factored` -- rho of depth-<=2 trees without listing them (for pools whose every
  coordinate is distinct), and the non-grid pools used as controls.
* :mod:`.agnostic` -- noisy labels: a disagreement-based learner with relative-deviation
  (multiplicative) or additive confidence bounds, and random-query ERM.
"""

from .agnostic import (
    noisy_labels,
    pool_errors,
    random_query_erm,
    robust_cal,
)
from .core import (
    VersionSpace,
    antidiagonal_points,
    cal_active_learn,
    check_disagreement_coefficient,
    disagreement_coefficient,
    disagreement_radius,
    enumerate_trees,
    greedy_tree_pool_error,
    grid_points,
    hamming_to,
    hamming_to_columns,
    passive_labels_to_collapse,
    sample_target,
    theta_from_radius,
    threshold_splits,
    tree_count_formula,
)
from .factored import (
    jittered_grid_points,
    permutation_points,
    tree_disagreement_coefficient,
    tree_disagreement_radius,
)

__all__ = [
    "grid_points",
    "antidiagonal_points",
    "threshold_splits",
    "enumerate_trees",
    "tree_count_formula",
    "hamming_to",
    "hamming_to_columns",
    "disagreement_radius",
    "theta_from_radius",
    "disagreement_coefficient",
    "VersionSpace",
    "cal_active_learn",
    "passive_labels_to_collapse",
    "greedy_tree_pool_error",
    "sample_target",
    "check_disagreement_coefficient",
    "tree_disagreement_radius",
    "tree_disagreement_coefficient",
    "jittered_grid_points",
    "permutation_points",
    "noisy_labels",
    "pool_errors",
    "robust_cal",
    "random_query_erm",
]
