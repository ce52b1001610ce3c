"""PaAno: patch-based representation learning for time-series anomaly detection
    (ICLR 2026).

The method in one breath: cut the training series into stride-1 patches, normalise each
patch, embed it with a small 1D CNN trained by a triplet loss (positive = the same patch
shifted by a few steps, negative = the hardest other patch in the batch) plus a
briefly-used temporal-adjacency pretext loss; keep a k-means coreset of the normal
embeddings as a memory bank; score a new patch by the mean of its top-k cosine distances
to the bank, and a time step by the mean score of the patches that cover it.

Layout of the package, in reading order:
    data.py make_synthetic_series, load_tsb_ad_csv, load_tsb_ad_folder, acf_period
    model.py sliding_patches, revin, patch_scores_to_points; PatchEncoder, PretextHead;
                 triplet_hardest_negative, pretext_loss, pretext_weight;
                 build_memory_bank, knn_cosine_score
    detector.py PaAnoConfig, PaAno (fit / score / embed) evaluate.py
    sklearn_patch_detector (IsolationForest, LOF, raw-patch kNN on the same windows);
                 vus_pr (TSB-AD's VUS-PR, vectorised; vus_pr_reference calls its code),
                 auc_pr (the TSB-AD benchmark's own code, package ``tsb-ad``);
                 check_patch_scores_to_points (the exercise)

AUC-PR and VUS-PR come from TSB-AD's package (``pip install --no-deps tsb-ad``);
``vus_pr`` keeps TSB-AD's range helpers and replaces only its loop over thresholds by
prefix sums (tested equal to the package's own ``generate_curve`` to 1e-9).
"""

from .data import (
    ANOMALY_KINDS,
    KIND_CLASS,
    Series,
    acf_period,
    load_daphnet_s06r02e0,
    load_kdd_tsad_135,
    load_tsb_ad_csv,
    load_tsb_ad_folder,
    make_synthetic_series,
)
from .detector import LOSSES, PaAno, PaAnoConfig
from .evaluate import (
    BASELINES,
    TSB_BASELINES,
    auc_pr,
    check_patch_scores_to_points,
    correct_errors,
    find_length_rank,
    sklearn_patch_detector,
    tsb_ad_baseline,
    vus_pr,
    vus_pr_reference,
)
from .model import (
    NEGATIVES,
    PatchEncoder,
    PretextHead,
    TransformerPatchEncoder,
    build_memory_bank,
    knn_cosine_score,
    patch_scores_to_points,
    pretext_loss,
    pretext_weight,
    revin,
    sliding_patches,
    triplet_hardest_negative,
)

__all__ = [
    "LOSSES",
    "NEGATIVES",
    "TransformerPatchEncoder",
    "TSB_BASELINES",
    "find_length_rank",
    "tsb_ad_baseline",
    "load_daphnet_s06r02e0",
    "load_kdd_tsad_135",
    "ANOMALY_KINDS",
    "KIND_CLASS",
    "Series",
    "acf_period",
    "load_tsb_ad_csv",
    "load_tsb_ad_folder",
    "make_synthetic_series",
    "PaAno",
    "PaAnoConfig",
    "BASELINES",
    "auc_pr",
    "check_patch_scores_to_points",
    "correct_errors",
    "sklearn_patch_detector",
    "vus_pr",
    "vus_pr_reference",
    "PatchEncoder",
    "PretextHead",
    "build_memory_bank",
    "knn_cosine_score",
    "patch_scores_to_points",
    "pretext_loss",
    "pretext_weight",
    "revin",
    "sliding_patches",
    "triplet_hardest_negative",
]
