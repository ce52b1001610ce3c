"""PaAno: patch-based representation learning for time-series anomaly detection (ICLR 2026).

The method in one breath: cut the training series into stride-1 patches, normalise each patch,
embed it with a small 1D CNN trained by a triplet loss (positive = the same patch shifted by a few
steps, negative = the hardest other patch in the batch) plus a briefly-used temporal-adjacency
pretext loss; keep a k-means coreset of the normal embeddings as a memory bank; score a new patch by
the mean of its top-k cosine distances to the bank, and a time step by the mean score of the
patches that cover it.

Layout of the package, in reading order:
    data.py      make_synthetic_series, load_tsb_ad_csv, load_tsb_ad_folder, acf_period
    model.py     sliding_patches, revin, patch_scores_to_points; PatchEncoder, PretextHead;
                 triplet_hardest_negative, pretext_loss, pretext_weight; build_memory_bank, knn_cosine_score
    detector.py  PaAnoConfig, PaAno (fit / score / embed)
    evaluate.py  sklearn_patch_detector (IsolationForest, LOF, raw-patch kNN on the same windows);
                 vus_pr, auc_pr (the TSB-AD benchmark's own code, package ``tsb-ad``);
                 check_patch_scores_to_points (the exercise)

VUS-PR and AUC-PR come from TSB-AD's package (``pip install --no-deps tsb-ad``); this package does not
re-implement them.
"""
from .data import ANOMALY_KINDS, Series, acf_period, load_tsb_ad_csv, load_tsb_ad_folder, make_synthetic_series
from .detector import PaAno, PaAnoConfig
from .evaluate import BASELINES, auc_pr, check_patch_scores_to_points, sklearn_patch_detector, vus_pr
from .model import (PatchEncoder, PretextHead, build_memory_bank, knn_cosine_score, n_parameters,
                    patch_scores_to_points, pretext_loss, pretext_weight, revin, sliding_patches,
                    triplet_hardest_negative)

__all__ = [
    "ANOMALY_KINDS", "Series", "acf_period", "load_tsb_ad_csv", "load_tsb_ad_folder", "make_synthetic_series",
    "PaAno", "PaAnoConfig", "BASELINES", "auc_pr", "check_patch_scores_to_points", "sklearn_patch_detector",
    "vus_pr", "PatchEncoder", "PretextHead", "build_memory_bank", "knn_cosine_score", "n_parameters",
    "patch_scores_to_points", "pretext_loss", "pretext_weight", "revin", "sliding_patches",
    "triplet_hardest_negative",
]
