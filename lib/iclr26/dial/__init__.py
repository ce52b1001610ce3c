"""DIAL / DIAL+: find the spurious directions of an image-text model with a sparse
autoencoder, and remove their span by orthogonal projection, with no group labels.

The chapter's toy analogue, top to bottom:

* :func:`make_spurious_digits` -- scikit-learn's digits pasted on two procedural
  background types ("land": rough brown-green noise, "water": blue waves); the core
  label ``y`` is "low" (0-4) or "high" (5-9), the spurious label ``b`` is land (0) or
  water (1), and ``P(b = y) = p_corr``.
* :class:`ToyCLIP` -- a small CNN image encoder and a bag-of-words text encoder trained
  with the contrastive (InfoNCE) loss :func:`clip_loss` on captions.
* :class:`TopKSAE` -- a top-k sparse autoencoder on the image embeddings.
* DIAL: :func:`select_candidates` (zero-shot pseudo-labels, distance to the class
  centre, kNN inconsistency), :func:`attribution_scores` and :func:`select_by_mass`
  (which SAE features carry the attribute), :func:`spurious_basis` (QR of their decoder
  columns) and :func:`project_out` (``e - lam Q Q^T e``), applied to the
  candidates only.
* DIAL+: :func:`flip_frequencies` -- the SAE features whose ablation flips the zero-shot
  prediction most often among the candidates; no description of the attribute needed.
* Metrics: :func:`group_accuracies`, :func:`worst_group_acc`, and the two-group Gaussian
  model :func:`gaussian_group_accuracy`.

Shapes: ``e`` is ``(n, d)`` (rows are embeddings), ``Q`` is ``(d, r)`` with orthonormal
columns, SAE codes are ``(n, m)``, decoder columns ``(d, m)``.

The code lives in four short modules: ``data``, ``model`` (the CLIP and the SAE),
``metrics`` (with the projection) and ``method`` (DIAL, DIAL+ and the exercise checker).
"""

from __future__ import annotations

from .data import (
    ATTR_WORDS,
    CLASS_WORDS,
    GROUP_NAMES,
    TOK,
    VOCAB,
    backgrounds,
    captions,
    make_spurious_digits,
    prompt,
)
from .method import (
    apply_to,
    attribution_scores,
    check_project_out,
    dial_basis,
    dial_plus_basis,
    flip_frequencies,
    remove,
    select_by_mass,
    select_candidates,
    spurious_basis,
    zero_neurons,
)
from .metrics import (
    balanced_class_acc,
    gaussian_group_accuracy,
    group_accuracies,
    in_distribution_acc,
    orthonormal_basis,
    project_out,
    random_basis,
    selection_score,
    worst_group_acc,
    zero_shot,
)
from .model import (
    TopKSAE,
    ToyCLIP,
    clip_loss,
    embed_images,
    explained_variance,
    train_clip,
    train_sae,
)

__all__ = [
    "VOCAB",
    "TOK",
    "CLASS_WORDS",
    "ATTR_WORDS",
    "GROUP_NAMES",
    "backgrounds",
    "make_spurious_digits",
    "captions",
    "prompt",
    "ToyCLIP",
    "clip_loss",
    "train_clip",
    "embed_images",
    "TopKSAE",
    "train_sae",
    "explained_variance",
    "zero_shot",
    "group_accuracies",
    "worst_group_acc",
    "balanced_class_acc",
    "selection_score",
    "in_distribution_acc",
    "gaussian_group_accuracy",
    "orthonormal_basis",
    "project_out",
    "random_basis",
    "select_candidates",
    "attribution_scores",
    "select_by_mass",
    "spurious_basis",
    "zero_neurons",
    "apply_to",
    "flip_frequencies",
    "dial_basis",
    "dial_plus_basis",
    "remove",
    "check_project_out",
]
