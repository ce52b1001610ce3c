"""Baselines on the same windows (scikit-learn), the benchmark's metrics (the ``tsb-ad`` package), and
the exercise's check function."""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from ..core import ExerciseVerdict, grade_exercise
from .model import patch_scores_to_points, sliding_patches

# ------------------------------------------------------------------------------------ baselines

BASELINES = ("iforest", "lof", "knn")


def sklearn_patch_detector(name: str, x_train, x_test, w: int, seed: int = 0, k: int = 3) -> tuple[np.ndarray, int]:
    """A classical detector on the same stride-1 windows PaAno sees, fitted on the training windows.

    name: ``"iforest"`` (IsolationForest, 100 trees), ``"lof"`` (LocalOutlierFactor, novelty mode,
    20 neighbours) or ``"knn"`` (mean Euclidean distance to the k nearest raw training patches).
    x_train: (n_train, C), x_test: (n, C). Returns (point scores (n,), stored numbers), where the
    stored numbers are the model's size: tree nodes for IForest, training-patch values for LOF/kNN.
    """
    from sklearn.ensemble import IsolationForest
    from sklearn.neighbors import LocalOutlierFactor, NearestNeighbors

    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; valid names are {BASELINES}")
    tr = sliding_patches(torch.as_tensor(np.asarray(x_train, dtype=np.float32)), w).flatten(1).numpy()  # (N, C·w)
    te = sliding_patches(torch.as_tensor(np.asarray(x_test, dtype=np.float32)), w).flatten(1).numpy()
    if name == "iforest":
        model = IsolationForest(n_estimators=100, random_state=seed).fit(tr)
        s, size = -model.score_samples(te), sum(e.tree_.node_count for e in model.estimators_)
    elif name == "lof":
        model = LocalOutlierFactor(n_neighbors=20, novelty=True).fit(tr)
        s, size = -model.score_samples(te), tr.size
    else:
        dist, _ = NearestNeighbors(n_neighbors=k).fit(tr).kneighbors(te)
        s, size = dist.mean(1), tr.size
    points = patch_scores_to_points(torch.as_tensor(s, dtype=torch.float64), len(te) + w - 1, w)
    return points.numpy(), int(size)


# -------------------------------------------------------------------------------------- metrics


def _tsb_ad():
    try:
        from TSB_AD.evaluation.basic_metrics import basic_metricor, generate_curve
    except ImportError as err:  # pragma: no cover - exercised only where tsb-ad is missing
        raise ImportError("VUS-PR comes from the TSB-AD benchmark's package: pip install --no-deps tsb-ad") from err
    return basic_metricor, generate_curve


def _check_metric_input(score, labels) -> tuple[np.ndarray, np.ndarray]:
    score = np.asarray(score.detach().cpu() if isinstance(score, torch.Tensor) else score, dtype=np.float64).ravel()
    labels = np.asarray(labels.detach().cpu() if isinstance(labels, torch.Tensor) else labels).ravel()
    if score.shape != labels.shape:
        raise ValueError(f"score and labels must have the same length, got {score.shape} and {labels.shape}")
    if not np.isin(labels, (0, 1)).all() or labels.sum() == 0:
        raise ValueError("labels must be 0/1 with at least one anomaly")
    if not np.isfinite(score).all():
        raise ValueError("score contains NaN or infinite values")
    return score, labels.astype(int)


def vus_pr(score, labels, window: int, thre: int = 250) -> float:
    """TSB-AD's VUS-PR (``generate_curve(..., version='opt', thre=250)``, the benchmark's default).

    score, labels: (n,) arrays or tensors; window: the largest label buffer (TSB-AD uses the
    series' period). The volume under the precision-recall surface over buffers 0..window.
    """
    _, generate_curve = _tsb_ad()
    score, labels = _check_metric_input(score, labels)
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    return float(generate_curve(labels, score, int(window), "opt", thre)[-1])


def auc_pr(score, labels) -> float:
    """TSB-AD's point-wise AUC-PR (its ``metric_PR``: scikit-learn's average precision)."""
    basic_metricor, _ = _tsb_ad()
    score, labels = _check_metric_input(score, labels)
    return float(basic_metricor().metric_PR(labels, score))


# ------------------------------------------------------------------------------------- exercise


def check_patch_scores_to_points(fn: Callable[[torch.Tensor, int, int], torch.Tensor]
                                 ) -> ExerciseVerdict:
    """Grade a student's ``fn(s, n, w) -> (n,)`` against :func:`patch_scores_to_points`.

    Returns an :class:`~iclr26.core.ExerciseVerdict`: "not done yet" on the stub,
    "wrong: because ..." with a hint on the first case that differs, "correct: ..."
    otherwise.
    """
    return grade_exercise(fn, _trial_patch_scores_to_points)


def _trial_patch_scores_to_points(fn) -> str:
    gen = torch.Generator().manual_seed(0)
    for n, w in [(10, 1), (17, 4), (200, 33), (10, 10)]:
        s = torch.rand(n - w + 1, generator=gen, dtype=torch.float64)
        got = fn(s.clone(), n, w)
        where = f"n={n}, w={w} (N={n - w + 1} patch scores)"
        assert isinstance(got, torch.Tensor), \
            f"{where}: return a torch.Tensor, not {type(got).__name__}"
        assert got.shape == (n,), (f"{where}: return one score per time step, "
                                   f"shape ({n},), not {tuple(got.shape)}")
        want = patch_scores_to_points(s, n, w)
        bad = ~torch.isclose(got.detach().to(want.dtype), want, atol=1e-9)
        if not bad.any():
            continue
        if w == 1:
            raise AssertionError(f"{where}: with w = 1 each step is covered by exactly "
                                 "one patch, the one that starts there")
        inner = bad[w - 1: n - w + 1]  # steps covered by all w patches
        if inner.any():
            raise AssertionError(f"{where}: steps far from both ends differ; step "
                                 "t is covered by the w patches that start at "
                                 "t-w+1, ..., t, and gets the mean of their scores")
        raise AssertionError(f"{where}: only the first or last w-1 steps differ; those "
                             "are covered by fewer than w patches, so divide by how "
                             "many patches actually cover each step")
    return "all cases agree with the library's patch_scores_to_points"
