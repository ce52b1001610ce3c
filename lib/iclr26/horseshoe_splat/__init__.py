"""Horseshoe splatting: Bayesian Gaussian splatting with a horseshoe prior on scales.

* ``prior``: inverse-gamma identities and KL, :class:`ScalePosterior` (the mean-field
  posterior of the log-scales under a horseshoe, Gaussian or Laplace prior, with the
  closed-form auxiliary updates), the half-Cauchy by augmentation.
* ``fit``: :func:`fit_splats` (deterministic or variational), :func:`mc_render` (the
  Monte Carlo predictive mean and variance), :func:`seen_mask`,
  :func:`predict_views`.
* ``metrics``: :func:`ause`, :func:`gaussian_nll`, :func:`spearman`.
* ``records``: :func:`calibration_table`, the calibration grid's committed records as
  a table.

Built on the shared splatting core :mod:`iclr26.splat`.
"""

from .fit import (
    LR,
    Predictions,
    SplatFit,
    fit_splats,
    gaussian_nll_terms,
    mc_render,
    predict_views,
    seen_mask,
)
from .metrics import (
    ause,
    check_ause,
    gaussian_nll,
    sparsification_curves,
    spearman,
)
from .prior import (
    PRIORS,
    ScalePosterior,
    expected_log_ig,
    half_cauchy_by_augmentation,
    ig_entropy,
    ig_expectations,
    kl_inverse_gamma,
    laplace_expected_abs,
)
from .records import calibration_table, load_records

__all__ = [
    "LR",
    "PRIORS",
    "Predictions",
    "ScalePosterior",
    "SplatFit",
    "ause",
    "calibration_table",
    "check_ause",
    "expected_log_ig",
    "fit_splats",
    "gaussian_nll",
    "gaussian_nll_terms",
    "half_cauchy_by_augmentation",
    "ig_entropy",
    "ig_expectations",
    "kl_inverse_gamma",
    "laplace_expected_abs",
    "load_records",
    "mc_render",
    "predict_views",
    "seen_mask",
    "sparsification_curves",
    "spearman",
]
