"""Interest drift: the weighted Jensen-Shannon divergence, community streams with
rare-topic bursts, the drift detector, its development-only calibration, and the
exercise checker."""

from __future__ import annotations

import numpy as np

from ..core import ExerciseVerdict, grade_exercise
from ..validate import as_float, as_int
from .world import TOPICS, phase_changes, topic_phases


# ------------------------------------------------------------- interest-drift updates
def weighted_jsd(p, q, gamma: float = 0.0) -> np.ndarray:
    """Weighted Jensen-Shannon divergence (nats) between distributions on the last axis.

    With M = (P + Q) / 2 and the per-topic terms
    j_k = 1/2 P_k log(P_k / M_k) + 1/2 Q_k log(Q_k / M_k)  (each >= 0),
    WJSD = sum_k w_k j_k with w_k = K M_k^gamma / sum_l M_l^gamma: gamma = 0 gives w = 1
    (the plain JSD, at most log 2); gamma > 0 damps topics of low mixture mass. The
    weights are a softmax of gamma log M (computed in log space, so that a large gamma
    gives the limit, all weight on the heaviest topics, rather than 0 / 0)."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if p.shape != q.shape or p.ndim == 0 or p.shape[-1] == 0:
        raise ValueError(
            f"p and q must have the same non-empty shape, got {p.shape}, {q.shape}"
        )
    finite = np.isfinite(p).all() and np.isfinite(q).all()
    if not finite or (p < 0).any() or (q < 0).any():
        raise ValueError("p and q must be finite and non-negative")
    _gamma(gamma)
    sp_, sq = p.sum(-1, keepdims=True), q.sum(-1, keepdims=True)
    if (sp_ <= 0).any() or (sq <= 0).any():
        raise ValueError("each distribution must have positive total mass")
    p, q = p / sp_, q / sq
    return _wjsd(p, q, gamma)


def _weights(m: np.ndarray, gamma: float) -> np.ndarray:
    """w_k = K M_k^gamma / sum_l M_l^gamma = K softmax(gamma log M)_k
    (0 where M_k = 0)."""
    if gamma == 0:
        return np.ones_like(m)
    with np.errstate(divide="ignore"):
        z = gamma * np.log(m)  # -inf where M_k = 0
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return m.shape[-1] * e / e.sum(-1, keepdims=True)


def _gamma(gamma) -> float:
    if isinstance(gamma, bool) or not isinstance(
        gamma, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"gamma must be a number, got {type(gamma).__name__}")
    if not np.isfinite(gamma) or gamma < 0:
        raise ValueError(f"gamma must be a finite number >= 0, got {gamma}")
    return float(gamma)


def drift_stream(
    phases: np.ndarray,
    windows_per_phase: int,
    n_per_window: int,
    burst_rate: float,
    burst_size: float,
    seed: int = 0,
) -> np.ndarray:
    """(n_windows, 24) topic counts of a community stream: each window samples
    ``n_per_window`` questions from its phase's distribution, after rare-topic noise:
    each topic below the median mass bursts (mass x (1 + burst_size)) with prob
    ``burst_rate``."""
    phases = np.asarray(phases, dtype=float)
    if phases.ndim != 2 or phases.shape[1] != len(TOPICS):
        raise ValueError(
            f"phases must be (n_phases, {len(TOPICS)}), got {phases.shape}"
        )
    W = as_int(windows_per_phase, "windows_per_phase", lo=1)
    n = as_int(n_per_window, "n_per_window", lo=1)
    r = as_float(burst_rate, "burst_rate", lo=0.0, hi=1.0)
    if isinstance(burst_size, bool) or not isinstance(
        burst_size, (int, float, np.floating)
    ):
        raise TypeError(f"burst_size must be a number, got {type(burst_size).__name__}")
    if not np.isfinite(burst_size) or burst_size < 0:
        raise ValueError(
            f"burst_size must be a finite number >= 0 (a burst multiplies "
            f"a rare topic's mass by 1 + burst_size), got {burst_size}"
        )
    if (
        (phases < 0).any()
        or not np.isfinite(phases).all()
        or (phases.sum(1) <= 0).any()
    ):
        raise ValueError("phases must be finite, non-negative rows with positive mass")
    rng = np.random.default_rng(as_int(seed, "seed", lo=0))
    p = np.repeat(phases, W, axis=0)
    rare = p < np.median(p, axis=1, keepdims=True)
    p = p * np.where(rare & (rng.random(p.shape) < r), 1.0 + burst_size, 1.0)
    p /= p.sum(1, keepdims=True)
    return np.stack([rng.multinomial(n, row) for row in p])


def drift_streams(
    n_phases: int,
    drift: float,
    windows_per_phase: int,
    n_per_window: int,
    burst_rate: float,
    burst_size: float,
    seed0: int,
    n: int,
) -> np.ndarray:
    """``n`` community streams, (n, n_phases * windows_per_phase, 24) topic counts:
    stream s has its own phases (:func:`topic_phases` at seed ``seed0 + s``) and its
    own windows (:func:`drift_stream` at seed ``seed0 + 7919 + s``)."""
    seed0, n = as_int(seed0, "seed0", lo=0), as_int(n, "n", lo=1)
    return np.stack(
        [
            drift_stream(
                topic_phases(n_phases, drift, seed=seed0 + s),
                windows_per_phase,
                n_per_window,
                burst_rate,
                burst_size,
                seed=seed0 + 7919 + s,
            )
            for s in range(n)
        ]
    )


def _wjsd(p: np.ndarray, q: np.ndarray, gamma: float) -> np.ndarray:
    """weighted_jsd without input checks, for the detector's inner loop."""
    p = p / p.sum(-1, keepdims=True)
    q = q / q.sum(-1, keepdims=True)
    m = (p + q) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        j = 0.5 * np.where(p > 0, p * np.log(p / m), 0.0) + 0.5 * np.where(
            q > 0, q * np.log(q / m), 0.0
        )
    return (_weights(m, gamma) * j).sum(-1)


def detect_drift(counts, gamma: float, lam) -> tuple[np.ndarray, np.ndarray]:
    """The drift detector over streams of topic counts, for many thresholds at once.

    counts: (n_streams, n_windows, K) or (n_windows, K); lam: a float or (L,)
    thresholds. The reference is the pooled topic distribution since the last alarm;
    window w is compared to it; an alarm (WJSD > lam) triggers topic resampling in the
    paper and, here, restarts the reference at window w. Window 0 never alarms.
    Returns (divergence, alarm), each of shape (L?, n_streams?, n_windows)."""
    c = np.asarray(counts, dtype=float)
    if (
        c.ndim not in (2, 3)
        or c.shape[-2] < 2
        or (c < 0).any()
        or not np.isfinite(c).all()
    ):
        raise ValueError(
            f"counts must be (n_streams, n_windows >= 2, K) or "
            f"(n_windows, K), "
            f"non-negative, got shape {c.shape}"
        )
    if (c.sum(-1) <= 0).any():
        raise ValueError(
            "every window must hold at least one question (a window of "
            "all-zero counts has no topic distribution)"
        )
    gamma = _gamma(gamma)
    lam_arr = np.asarray(lam, dtype=float)
    if lam_arr.ndim > 1 or np.isnan(lam_arr).any():
        raise ValueError(f"lam must be a number or a 1-d array of numbers, got {lam!r}")
    single_stream, c = c.ndim == 2, (c[None] if c.ndim == 2 else c)
    L = lam_arr.reshape(-1, 1)  # (L, 1)
    S, n_w, _ = c.shape
    div = np.zeros((len(L), S, n_w))
    alarm = np.zeros((len(L), S, n_w), bool)
    ref = np.broadcast_to(c[:, 0], (len(L), *c[:, 0].shape)).copy()  # (L, S, K)
    for w in range(1, n_w):
        cur = np.broadcast_to(c[:, w], ref.shape)
        div[:, :, w] = _wjsd(cur, ref, gamma)
        fire = div[:, :, w] > L
        alarm[:, :, w] = fire
        ref = np.where(fire[..., None], cur, ref + cur)
    if single_stream:
        div, alarm = div[:, 0], alarm[:, 0]
    if lam_arr.ndim == 0:
        div, alarm = div[0], alarm[0]
    return div, alarm


def alarm_rates(alarms: np.ndarray, windows_per_phase: int, horizon: int = 2):
    """(hit rate, false alarms per window) of alarms (..., n_streams, n_windows) on
    streams of :func:`topic_phases` phases, ``windows_per_phase`` windows each: a change
    point (the first window of a phase that differs from the one before, see
    :func:`phase_changes`) is hit when an alarm falls within ``horizon`` windows from
    it; every other alarm is false, counted per window that can alarm (window 0
    cannot). Leading axes give arrays."""
    a = np.asarray(alarms)
    if a.dtype != bool:
        raise TypeError(f"alarms must be a boolean array, got {a.dtype}")
    W, h = (
        as_int(windows_per_phase, "windows_per_phase", lo=1),
        as_int(horizon, "horizon", lo=1),
    )
    if a.ndim < 2 or a.shape[-1] <= W or a.shape[-1] % W:
        raise ValueError(
            f"alarms must be (..., n_streams, n_windows), n_windows a "
            f"multiple of windows_per_phase = {W} and > {W}, got "
            f"{a.shape}"
        )
    if h > W:
        raise ValueError(
            f"horizon ({h}) must be <= windows_per_phase ({W}): a longer "
            "horizon would let one alarm count for two change points"
        )
    changes = phase_changes(a.shape[-1] // W)
    starts = np.arange(W, a.shape[-1], W)[changes]
    near = np.zeros(a.shape[-1], bool)
    near[0] = True  # window 0 never alarms: not a window where a false alarm can fall
    for c in starts:
        near[c : c + h] = True
    # (..., S, changes)
    hits = np.stack([a[..., c : c + h].any(-1) for c in starts], -1)
    return hits.mean((-2, -1)), a[..., ~near].mean((-2, -1))


def false_alarm_rate(alarms: np.ndarray) -> np.ndarray:
    """Alarms per window (window 0 excluded) of streams with no drift, where every
    alarm is false: (..., n_streams, n_windows) -> (...)."""
    a = np.asarray(alarms)
    if a.dtype != bool or a.ndim < 2 or a.shape[-1] < 2:
        raise ValueError(
            f"alarms must be a boolean (..., n_streams, n_windows >= 2) "
            f"array, got {a.dtype} {a.shape}"
        )
    return a[..., 1:].mean((-2, -1))


def calibrate_lambda(
    quiet_counts, gamma: float, fa_budget: float = 0.05, n_grid: int = 60
) -> float:
    """The smallest lambda (most sensitive detector) whose false-alarm rate on
    *development* streams without drift stays within ``fa_budget`` alarms per window,
    searched over quantiles of their divergences. No change points and no drift
    strength are needed: on a quiet stretch of the community's history every alarm is
    false. It never sees the streams it is later evaluated on."""
    b = as_float(fa_budget, "fa_budget", lo=0.0, hi=1.0)
    if not 0 < b < 1:
        raise ValueError(f"fa_budget must be in (0, 1) alarms per window, got {b}")
    div, _ = detect_drift(quiet_counts, gamma, np.inf)
    # a budget of a few alarms per hundred windows puts lambda in the top fifth
    grid = np.quantile(div[..., 1:], np.linspace(0.8, 1.0, n_grid))  # small -> large
    grid = np.append(grid, np.nextafter(grid[-1], np.inf))  # above every divergence
    fa = false_alarm_rate(detect_drift(quiet_counts, gamma, grid)[1])
    return float(grid[np.flatnonzero(fa <= b)[0]])


# ---------------------------------------------------------------------------- exercise
def check_weighted_jsd(fn) -> ExerciseVerdict:
    """Grade a student's ``fn(p, q, gamma) -> float`` (1-d distributions) against
    :func:`weighted_jsd` on random cases."""
    return grade_exercise(fn, _trial_wjsd)


def _close(a: float, b: float) -> bool:
    """Agreement to float32 precision: relative 1e-5 (absolute 1e-8 near 0)."""
    return abs(a - b) <= 1e-8 + 1e-5 * abs(b)


def _trial_wjsd(fn) -> str:
    rng = np.random.default_rng(0)
    for case in range(20):
        K = int(rng.integers(3, 12))
        p, q = rng.dirichlet(np.ones(K) * 0.7), rng.dirichlet(np.ones(K) * 0.7)
        if case % 5 == 0:  # a topic absent from p
            p[rng.integers(K)] = 0.0
            p /= p.sum()
        if case % 5 == 1:  # a topic absent from q
            q[rng.integers(K)] = 0.0
            q /= q.sum()
        if case % 5 == 2:  # a topic absent from both: M_k = 0
            k = rng.integers(K)
            p[k] = q[k] = 0.0
            p, q = p / p.sum(), q / q.sum()
        gamma = [0.0, 0.5, 1.0, 2.0][case % 4]
        where = f"case {case} (K={K}, gamma={gamma})"
        got = float(fn(p.copy(), q.copy(), gamma))
        swapped = float(fn(q.copy(), p.copy(), gamma))
        same = float(fn(p.copy(), p.copy(), gamma))
        want = float(weighted_jsd(p, q, gamma))
        for name, v in (
            ("WJSD(p, q)", got),
            ("WJSD(q, p)", swapped),
            ("WJSD(p, p)", same),
        ):
            if not np.isfinite(v):
                raise AssertionError(
                    f"{where}: {name} = {v}; p or q has a zero entry "
                    "there, and 0 log 0 counts as 0 (on either side)"
                )
        if abs(same) > 1e-8:
            raise AssertionError(
                f"{where}: the divergence of a distribution from "
                f"itself must be 0, got {same:.3g}"
            )
        if not _close(got, swapped):
            raise AssertionError(
                f"{where}: swapping p and q changed the value "
                f"({got:.6g} vs {swapped:.6g}); the divergence is "
                "symmetric"
            )
        if not _close(got, want):
            plain = float(weighted_jsd(p, q, 0.0))
            p2, q2 = (p + 0.01) / (p + 0.01).sum(), (q + 0.01) / (q + 0.01).sum()
            zeros = bool((p == 0).any() or (q == 0).any()) and _close(
                float(fn(p2.copy(), q2.copy(), gamma)),
                float(weighted_jsd(p2, q2, gamma)),
            )
            hint = (
                "this case has a zero in p or q (right without it): only the term of "
                "the side that is 0 "
                "vanishes (0 log 0 = 0); the other side's term at that topic does "
                "not, and it must not be zeroed or dropped"
                if zeros
                else "with gamma = 0 every weight is 1, so this is the plain JSD: "
                "check "
                "the natural log and the mixture M = (P+Q)/2"
                if gamma == 0.0
                else "check the weights: they use the mixture's mass M_k and sum to K"
                if _close(float(fn(p.copy(), q.copy(), 0.0)), plain)
                else "check the plain JSD first (gamma = 0): natural log, mixture "
                "M = (P+Q)/2"
            )
            raise AssertionError(f"{where}: got {got:.6g}, expected {want:.6g}; {hint}")
    return (
        "all 20 cases match the weighted JSD to 1e-5 relative (float32 is fine), "
        "including zeros in p, in q and in both, and gamma = 0"
    )
