"""ILNN: an intrinsic Lorentz neural network, every operation on the hyperboloid
    (ICLR 2026).

Conventions (see :mod:`.geometry`): curvature ``-k`` with ``k > 0``; a point is
``x = (x_0, x_s)`` with ``<x, x>_L = -1/k`` and ``x_0 > 0``, time coordinate first.

* :mod:`.geometry`: :func:`lorentz_inner`, :func:`lift`, :func:`dist`, :func:`expmap0`,
  :func:`logmap0`, hyperplanes (:func:`hyperplane_normal`, :func:`signed_distance`), the
  gyro-structure (:func:`lorentz_centroid`, :func:`boost_to_origin`, :func:`gyro_add`,
  :func:`gyro_scale`), :func:`karcher_mean` (step-controlled, raises if it does not
  converge), :func:`frechet_variance`, :func:`digamma_scale`;
* :mod:`.layers`: :class:`PLFC` (the paper's point-to-hyperplane FC), :class:`GyroLBN`,
  the baselines :class:`GyroBN` (Karcher mean) and :class:`LorentzBatchNorm`
  (HCNN's LBN), :class:`LFC` (HCNN's linear layer), :func:`lorentz_concat`,
  :class:`LorentzReLU`, :class:`LorentzDropout`, :class:`LorentzConv2d`;
* :mod:`.models`: :class:`LorentzCNN`, :class:`EuclideanCNN`, :class:`LorentzMLP`,
  :class:`EuclideanMLP`, :func:`tree_data`, :func:`train_classifier`;
* :mod:`.exercise`: :func:`check_boost_to_origin` for the chapter's coding exercise.
"""

from .exercise import check_boost_to_origin
from .geometry import (
    boost_to_origin,
    check_on_hyperboloid,
    digamma_scale,
    dist,
    dist0,
    expmap,
    expmap0,
    frechet_variance,
    gyro_add,
    gyro_neg,
    gyro_scale,
    hyperplane_normal,
    karcher_mean,
    lift,
    logmap,
    logmap0,
    lorentz_centroid,
    lorentz_inner,
    origin,
    signed_distance,
    transport,
)
from .layers import (
    LFC,
    PLFC,
    GyroBN,
    GyroLBN,
    LorentzBatchNorm,
    LorentzConv2d,
    LorentzDropout,
    LorentzReLU,
    lorentz_concat,
)
from .models import (
    EuclideanCNN,
    EuclideanMLP,
    FlatHead,
    LorentzCNN,
    LorentzMLP,
    train_classifier,
    tree_data,
)

__all__ = [
    "lorentz_inner",
    "lift",
    "origin",
    "dist",
    "dist0",
    "expmap0",
    "logmap0",
    "expmap",
    "logmap",
    "transport",
    "hyperplane_normal",
    "signed_distance",
    "lorentz_centroid",
    "boost_to_origin",
    "check_on_hyperboloid",
    "gyro_add",
    "gyro_neg",
    "gyro_scale",
    "frechet_variance",
    "karcher_mean",
    "digamma_scale",
    "PLFC",
    "LFC",
    "GyroLBN",
    "GyroBN",
    "LorentzBatchNorm",
    "lorentz_concat",
    "LorentzReLU",
    "LorentzDropout",
    "LorentzConv2d",
    "LorentzCNN",
    "EuclideanCNN",
    "LorentzMLP",
    "FlatHead",
    "EuclideanMLP",
    "tree_data",
    "train_classifier",
    "check_boost_to_origin",
]
