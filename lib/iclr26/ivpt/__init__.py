"""IVPT (ICLR 2026) in miniature: visual prompts tied to concept prototypes.

Submodules: ``data`` (part-birds with part masks), ``vit`` (a tiny ViT that takes prompt
tokens, and its masked-patch pretraining), ``method`` (concept maps, region features,
cross-layer grouping, IVPT, VPT-Deep, training), ``metrics`` (part consistency read the
same way for every unit, k-means, NMI/ARI).
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
    LOSS_WEIGHTS,
    CrossLayerGrouping,
    LinearProbe,
    VPTDeep,
    concept_maps,
    evaluate,
    part_losses,
    region_features,
    rollout_to_cls,
    train,
)
from .metrics import (
    check_concept_maps,
    kmeans,
    nmi_ari,
    part_consistency,
    part_frequency,
    region_parts,
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
    "kmeans",
    "nmi_ari",
    "part_consistency",
    "part_frequency",
    "region_parts",
    "Block",
    "TinyViT",
    "pretrain",
]
