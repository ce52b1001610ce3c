"""IVPT (ICLR 2026) in miniature: visual prompts tied to concept prototypes.

Submodules: ``data`` (part-birds with part masks), ``vit`` (a tiny ViT that takes prompt
tokens, and its masked-patch pretraining), ``method`` (concept maps, region features,
cross-layer grouping, IVPT, VPT-Deep), ``training`` (the losses, equivariance included,
and the optimiser), ``metrics`` (part consistency read the same way for every unit,
k-means, NMI/ARI, and the planted stand-ins of the chapter's power checks),
``experiment`` (the chapter's run) and ``records`` (its calibration tables, read from
the runner's records).
"""

from .data import (
    MAX_COLOURS,
    PARTS,
    class_table,
    make_part_birds,
    part_colours,
    patch_parts,
)
from .method import (
    IVPT,
    CrossLayerGrouping,
    LinearProbe,
    VPTDeep,
    concept_maps,
    evaluate,
    region_features,
    rollout_to_cls,
)
from .metrics import (
    check_concept_maps,
    corrected_predictions,
    corrected_units,
    degraded_predictions,
    fixed_windows,
    kmeans,
    largest_share,
    nmi_ari,
    part_consistency,
    part_frequency,
    position_only,
    region_parts,
)
from .training import (
    EQUIV_AFFINE,
    LOSS_WEIGHTS,
    PROTO_LR_FACTOR,
    equivariance_loss,
    invert_affine,
    part_losses,
    random_affine,
    train,
    warp,
)
from .vit import Block, TinyViT, pretrain

__all__ = [
    "MAX_COLOURS",
    "PARTS",
    "part_colours",
    "class_table",
    "make_part_birds",
    "patch_parts",
    "LOSS_WEIGHTS",
    "PROTO_LR_FACTOR",
    "EQUIV_AFFINE",
    "equivariance_loss",
    "random_affine",
    "invert_affine",
    "warp",
    "IVPT",
    "rollout_to_cls",
    "CrossLayerGrouping",
    "LinearProbe",
    "VPTDeep",
    "concept_maps",
    "evaluate",
    "part_losses",
    "region_features",
    "train",
    "check_concept_maps",
    "corrected_predictions",
    "corrected_units",
    "degraded_predictions",
    "fixed_windows",
    "kmeans",
    "largest_share",
    "nmi_ari",
    "position_only",
    "part_consistency",
    "part_frequency",
    "region_parts",
    "Block",
    "TinyViT",
    "pretrain",
]
