"""Baselines on the same windows (scikit-learn), the benchmark's metrics (the ``tsb-ad``
package), and the exercise's check function."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from ..core import ExerciseVerdict, grade_exercise
from ..validate import as_float, as_int
from .model import patch_scores_to_points, sliding_patches

# ---------------------------------------------------------------------------- baselines

BASELINES = ("iforest", "lof", "knn")


def sklearn_patch_detector(
    name: str, x_train, x_test, w: int, seed: int = 0, k: int = 3
) -> tuple[np.ndarray, int]:
    """A classical detector on the same stride-1 windows PaAno sees, fitted on the
    training windows.

    name: ``"iforest"`` (IsolationForest, 100 trees), ``"lof"`` (LocalOutlierFactor,
    novelty mode, 20 neighbours) or ``"knn"`` (mean Euclidean distance to the k nearest
    raw training patches).
    x_train: (n_train, C), x_test: (n, C). Returns (point scores (n,), stored numbers),
    where the stored numbers are the model's size: tree nodes for IForest,
    training-patch values for LOF/kNN.
    """
    from sklearn.ensemble import IsolationForest
    from sklearn.neighbors import LocalOutlierFactor, NearestNeighbors

    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; valid names are {BASELINES}")
    tr = (
        sliding_patches(torch.as_tensor(np.asarray(x_train, dtype=np.float32)), w)
        .flatten(1)
        .numpy()
    )  # (N, C·w)
    te = (
        sliding_patches(torch.as_tensor(np.asarray(x_test, dtype=np.float32)), w)
        .flatten(1)
        .numpy()
    )
    if name == "iforest":
        model = IsolationForest(n_estimators=100, random_state=seed).fit(tr)
        s, size = (
            -model.score_samples(te),
            sum(e.tree_.node_count for e in model.estimators_),
        )
    elif name == "lof":
        model = LocalOutlierFactor(n_neighbors=20, novelty=True).fit(tr)
        s, size = -model.score_samples(te), tr.size
    else:
        dist, _ = NearestNeighbors(n_neighbors=k).fit(tr).kneighbors(te)
        s, size = dist.mean(1), tr.size
    points = patch_scores_to_points(
        torch.as_tensor(s, dtype=torch.float64), len(te) + w - 1, w
    )
    return points.numpy(), int(size)


# ---------------------------------------------- TSB-AD's protocol: window and baselines


def _acf(x: np.ndarray, nlags: int) -> np.ndarray:
    """statsmodels' ``acf(x, nlags, fft=True)``: r(τ) = Σ_t (x_t − x̄)(x_{t+τ} − x̄) /
    Σ_t (x_t − x̄)², τ = 0..nlags (the biased estimator, denominator n at every lag)."""
    x = x - x.mean()
    n = len(x)
    f = np.fft.rfft(x, 2 * n)
    acov = np.fft.irfft(f * np.conj(f))[: nlags + 1]
    return acov / acov[0]


def find_length_rank(x, rank: int = 1) -> int:
    """TSB-AD's ``find_length_rank`` (``TSB_AD.utils.slidingWindows``), ported to numpy
    because the original imports statsmodels: the lag of the ``rank``-th best local
    maximum of the ACF over lags 3..400 of the first 20,000 steps; 125 when there is
    none or it lies outside [3, 300].

    x: (n,) or (n, 1). TSB-AD returns 0 for a multivariate array; we refuse it instead
    (pass the first channel, as the official PaAno ``main.py`` does).
    """
    from scipy.signal import argrelextrema

    x = np.asarray(x, dtype=np.float64).squeeze()
    if x.ndim != 1:
        raise ValueError(
            f"find_length_rank needs one channel, (n,) or (n, 1); got {np.shape(x)}"
        )
    if isinstance(rank, bool) or rank not in (0, 1, 2, 3):
        raise ValueError(f"rank must be 0, 1, 2 or 3, got {rank!r}")
    if not np.isfinite(x).all() or len(x) < 8:
        raise ValueError("x must be finite with at least 8 steps")
    if rank == 0:
        return 1
    x = x[: min(20000, len(x))]
    base = 3
    auto_corr = _acf(x, min(400, len(x) - 1))[base:]
    local_max = argrelextrema(auto_corr, np.greater)[0]
    if not len(local_max):
        return 125
    order = np.argsort(auto_corr[local_max])[::-1]  # positions in local_max, best first
    pick = order[0]
    # TSB-AD's rank 2 and 3 compare positions in ``local_max`` (later peaks),
    # ported as written
    if rank >= 2:
        later = [i for i in order[1:] if i > order[0]]
        if later:
            pick = later[0]
            if rank == 3:
                later3 = [i for i in order[pick:] if i > order[pick]]
                pick = later3[0] if later3 else pick
    lag = local_max[pick]
    if lag < 3 or lag > 300:
        return 125
    return int(lag + base)


def _tsb_windows(x: np.ndarray, w: int, univariate_axis0: bool) -> np.ndarray:
    """TSB-AD's ``Window(w).convert`` plus the z-scoring its IForest/LOF apply:
    (n−w+1, C·w)."""
    from numpy.lib.stride_tricks import sliding_window_view

    win = sliding_window_view(x, window_shape=w, axis=0).reshape(x.shape[0] - w + 1, -1)
    if (
        univariate_axis0
    ):  # one channel: z-score every column (TSB-AD's zscore(axis=0, ddof=0))
        out = (win - win.mean(0)) / win.std(0)
    else:  # z-score every window (zscore(axis=1, ddof=1))
        out = (win - win.mean(1, keepdims=True)) / win.std(1, ddof=1, keepdims=True)
    return np.nan_to_num(out)


def _tsb_pad(s: np.ndarray, n: int, w: int) -> np.ndarray:
    """TSB-AD's padding of window scores to n points: the first score ⌈(w−1)/2⌉ times
    before, the last ⌊(w−1)/2⌋ times after."""
    if len(s) >= n:
        return s
    return np.concatenate(
        [np.full(math.ceil((w - 1) / 2), s[0]), s, np.full((w - 1) // 2, s[-1])]
    )


TSB_BASELINES = ("Sub_IForest", "Sub_LOF", "Sub_KNN", "IForest", "LOF", "KNN", "Random")


def tsb_ad_baseline(name: str, x, seed: int = 0) -> np.ndarray:
    """A TSB-AD baseline run as the benchmark runs it: unsupervised, fitted on the whole
    series ``x`` (n, C), with TSB-AD's tuned hyper-parameters (``HP_list.py``) and
    window handling.

    The wrappers in ``TSB_AD.models`` import statsmodels (not installed here), so this
    re-states them with scikit-learn, line for line:
    - ``"Sub_IForest"`` (univariate; 150 trees, ``max_features=1``, window
      ``find_length_rank(rank=1)``), ``"Sub_LOF"`` (30 neighbours, window rank 2) and
      ``"Sub_KNN"`` (distance to the 50th neighbour, window rank 2, each
      window z-scored);
    - ``"IForest"`` (multivariate; 25 trees, ``max_features=0.8``, window 100),
      ``"LOF"`` (50 neighbours, one step per sample) and ``"KNN"`` (mean distance to 50
      neighbours);
    - ``"Random"``: i.i.d. uniform scores, the floor every metric should be
      read against.
    Returns (n,) scores, higher = more anomalous.
    """
    from sklearn.ensemble import IsolationForest
    from sklearn.neighbors import LocalOutlierFactor, NearestNeighbors

    if name not in TSB_BASELINES:
        raise ValueError(
            f"unknown TSB-AD baseline {name!r}; valid names are {TSB_BASELINES}"
        )
    x = np.asarray(
        x.detach().cpu() if isinstance(x, torch.Tensor) else x, dtype=np.float64
    )
    x = x[:, None] if x.ndim == 1 else x
    if x.ndim != 2 or not np.isfinite(x).all() or len(x) < 16:
        raise ValueError(
            f"x must be a finite (n >= 16, C) array, got shape {np.shape(x)}"
        )
    n, c = x.shape
    if name == "Random":
        return np.random.default_rng(seed).random(n)
    if name.startswith("Sub_") and c != 1:
        raise ValueError(
            f"{name} is TSB-AD's univariate baseline; use "
            f"{name[4:]} for a series of {c} channels"
        )
    if name == "Sub_IForest":
        w = find_length_rank(x[:, 0], rank=1)
        X = _tsb_windows(x, w, True)
        f = IsolationForest(n_estimators=150, max_features=1, random_state=seed).fit(X)
        s = -f.decision_function(X)
    elif name == "Sub_LOF":
        w = find_length_rank(x[:, 0], rank=2)
        X = _tsb_windows(x, w, True)
        s = -LocalOutlierFactor(n_neighbors=30).fit(X).negative_outlier_factor_
    elif name == "Sub_KNN":
        w = find_length_rank(x[:, 0], rank=2)
        # TSB-AD's KNN z-scores every window (axis=1, ddof=1)
        X = _tsb_windows(x, w, False)
        s = NearestNeighbors().fit(X).kneighbors(n_neighbors=50)[0][:, -1]
    elif name == "IForest":
        w = 100
        X = _tsb_windows(x, w, c == 1)
        f = IsolationForest(n_estimators=25, max_features=0.8, random_state=seed).fit(X)
        s = -f.decision_function(X)
    elif name == "LOF":
        w, X = 1, _tsb_windows(x, 1, c == 1)  # steps z-scored across channels (ddof=1)
        s = (
            -LocalOutlierFactor(n_neighbors=50, metric="euclidean")
            .fit(X)
            .negative_outlier_factor_
        )
    else:  # KNN on single steps, mean distance to 50 neighbours
        w, X = 1, _tsb_windows(x, 1, False) if c > 1 else x
        s = NearestNeighbors().fit(X).kneighbors(n_neighbors=50)[0].mean(1)
    return _tsb_pad(s, n, w)


# ------------------------------------------------------------------------------ metrics


def _tsb_ad():
    try:
        from TSB_AD.evaluation.basic_metrics import basic_metricor, generate_curve
    except (
        ImportError
    ) as err:  # pragma: no cover - exercised only where tsb-ad is missing
        raise ImportError(
            "VUS-PR comes from the TSB-AD benchmark's package: "
            "pip install --no-deps tsb-ad"
        ) from err
    return basic_metricor, generate_curve


def _check_metric_input(score, labels) -> tuple[np.ndarray, np.ndarray]:
    score = np.asarray(
        score.detach().cpu() if isinstance(score, torch.Tensor) else score,
        dtype=np.float64,
    )
    labels = np.asarray(
        labels.detach().cpu() if isinstance(labels, torch.Tensor) else labels
    )
    if score.ndim != 1 or labels.ndim != 1:  # was: silently flattened
        raise ValueError(
            f"score and labels must be 1-D (one value per time step), got shapes "
            f"{score.shape} and {labels.shape}"
        )
    if score.shape != labels.shape:
        raise ValueError(
            f"score and labels must have the same length, got {score.shape} and "
            f"{labels.shape}"
        )
    if not np.isin(labels, (0, 1)).all() or labels.sum() == 0 or labels.all():
        raise ValueError(
            "labels must be 0/1 with at least one anomaly and one normal step"
        )
    if not np.isfinite(score).all():
        raise ValueError("score contains NaN or infinite values")
    return score, labels.astype(int)


def vus_pr_reference(score, labels, window: int, thre: int = 250) -> float:
    """TSB-AD's VUS-PR, by its own code:
    ``generate_curve(..., version='opt', thre=250)``.

    score, labels: (n,) arrays or tensors; window: the largest label buffer (TSB-AD uses
    the series' period). The volume under the precision-recall surface over buffers
    0..window. Exact but slow (a Python loop over buffers x thresholds x ranges: about 2
    s for a 3,000-step series and a window of 40 on one CPU thread); :func:`vus_pr` is
    the same number, vectorised.
    """
    _, generate_curve = _tsb_ad()
    score, labels = _check_metric_input(score, labels)
    _check_window(window, thre, len(score))
    return float(generate_curve(labels, score, int(window), "opt", thre)[-1])


def _check_window(window, thre, n: int) -> None:
    for name, v in (("window", window), ("thre", thre)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
    if not 0 <= window < n:  # a buffer as long as the series labels everything
        raise ValueError(f"window must lie in [0, n={n}), got {window}")
    if thre < 2:
        raise ValueError(f"thre (the number of thresholds) must be >= 2, got {thre}")


def vus_pr(score, labels, window: int, thre: int = 250) -> float:
    """TSB-AD's VUS-PR (as :func:`vus_pr_reference`), with its loop over
    thresholds vectorised.

    TSB-AD's ``RangeAUC_volume_opt``, for each buffer length b = 0..window, softens the
    labels to ``ext`` (1 on an anomaly, sqrt(1 - j/b) j steps outside it, for j <= b//2)
    and, for each of ``thre`` thresholds, counts TP = Σ ext·pred, the soft positives
    P_new = P + Σ_{t outside the anomalies} ext·pred / 2, and how many extended ranges
    hold a prediction. Each count is a prefix sum over the scores sorted high to low, so
    one pass per buffer replaces thre passes. The range helpers are TSB-AD's own; the
    tests compare this function with :func:`vus_pr_reference` to 1e-9 on random and
    tied scores.
    """
    basic_metricor, _ = _tsb_ad()
    score, labels = _check_metric_input(score, labels)
    _check_window(window, thre, len(score))
    window, m, n = int(window), basic_metricor(), len(score)
    P = labels.sum()
    seq = m.range_convers_new(labels)  # the anomalies, [(s, e)]
    desc = np.argsort(-score, kind="stable")  # scores high to low
    # (thre,) thresholds
    thr = -np.sort(-score)[np.linspace(0, n - 1, thre).astype(int)]
    n_pred = n - np.searchsorted(np.sort(score), thr, side="left")  # #(score >= thr)
    lab_cum = np.cumsum(labels[desc])[n_pred - 1]  # Σ_anomaly pred
    ap = np.zeros(window + 1)
    for b in range(window + 1):
        ext = m.sequencing(labels, seq, b)  # soft labels, buffer b
        L = m.new_sequence(ext, seq, b)  # extended ranges, merged
        soft = np.cumsum((ext * (1 - labels))[desc])[n_pred - 1]  # Σ_outside ext·pred
        tp = soft + lab_cum  # TP = Σ ext·pred
        # a range is "found" when
        seg_max = np.array([score[a : e + 1].max() for a, e in L])
        found = (seg_max[None, :] >= thr[:, None]).sum(1) / len(L)  # its max clears thr
        tpr = np.minimum(tp / (P + soft / 2), 1) * found  # recall × existence
        precision = tp / n_pred
        ap[b] = np.dot(np.diff(tpr, prepend=0.0), precision)  # Σ ΔTPR · precision
    return float(ap.mean())


def auc_pr(score, labels) -> float:
    """TSB-AD's point-wise AUC-PR (its ``metric_PR``: scikit-learn's average
    precision)."""
    basic_metricor, _ = _tsb_ad()
    score, labels = _check_metric_input(score, labels)
    return float(basic_metricor().metric_PR(labels, score))


def correct_errors(score, labels, share: float, seed: int = 0) -> np.ndarray:
    """A detector made better by construction: ``score`` with its errors corrected on
    a ``share`` of the labelled anomalies (contiguous ranges of 1s, chosen at random
    from ``seed``; at least one): every step of a chosen range gets the highest score
    of the series, so the detector now ranks it first. The planted case of a claim
    "A beats B": B corrected, scored by the same metric code.

    score, labels: (n,). Returns the corrected (n,) float64 scores."""
    score, labels = _check_metric_input(score, labels)
    share = as_float(share, "share", lo=0.0, hi=1.0, open_lo=True)
    seed = as_int(seed, "seed", lo=0)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], labels, [0]])))
    ranges = list(zip(edges[::2], edges[1::2]))  # [start, end) of each anomaly
    k = max(1, round(share * len(ranges)))
    pick = np.random.default_rng(seed).choice(len(ranges), size=k, replace=False)
    out, top = score.copy(), score.max()
    for i in pick:
        a, b = ranges[i]
        out[a:b] = top
    return out


# ----------------------------------------------------------------------------- exercise


def check_patch_scores_to_points(
    fn: Callable[[torch.Tensor, int, int], torch.Tensor],
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
        assert isinstance(got, torch.Tensor), (
            f"{where}: return a torch.Tensor, not {type(got).__name__}"
        )
        assert got.shape == (n,), (
            f"{where}: return one score per time step, "
            f"shape ({n},), not {tuple(got.shape)}"
        )
        want = patch_scores_to_points(s, n, w)
        bad = ~torch.isclose(got.detach().to(want.dtype), want, atol=1e-9)
        if not bad.any():
            continue
        if w == 1:
            raise AssertionError(
                f"{where}: with w = 1 each step is covered by exactly "
                "one patch, the one that starts there"
            )
        inner = bad[w - 1 : n - w + 1]  # steps covered by all w patches
        if inner.any():
            raise AssertionError(
                f"{where}: steps far from both ends differ; step "
                "t is covered by the w patches that start at "
                "t-w+1, ..., t, and gets the mean of their scores"
            )
        raise AssertionError(
            f"{where}: only the first or last w-1 steps differ; those "
            "are covered by fewer than w patches, so divide by how "
            "many patches actually cover each step"
        )
    return "all cases agree with the library's patch_scores_to_points"
