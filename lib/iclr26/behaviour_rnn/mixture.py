"""The three-component swap mixture model (Bays et al. 2009) fitted by EM, and the
response measures built on it or on the response plane."""

from __future__ import annotations

import math

import torch

from ..validate import as_float, as_int, as_tensor, check_positive
from ._base import Tensor, unit, wrap
from .task import Trials


def _a1inv(R: Tensor) -> Tensor:
    """κ with I1(κ)/I0(κ) = R: the standard three-piece approximation of Fisher (1993,
    *Statistical Analysis of Circular Data*, Sec. 4.5.5); within 1 % of the exact
    inverse over κ ∈ [0.1, 100] (the tests check it against a root finder)."""
    R = R.clamp(1e-6, 1 - 1e-6)
    low = 2 * R + R**3 + 5 * R**5 / 6
    mid = -0.4 + 1.39 * R + 0.43 / (1 - R)
    high = 1 / (R**3 - 4 * R**2 + 3 * R)
    return torch.where(R < 0.53, low, torch.where(R < 0.85, mid, high))


def vm_logpdf(err: Tensor, kappa: Tensor) -> Tensor:
    """log of the von Mises density with mean 0 and concentration κ at angle ``err``."""
    log_norm = torch.log(2 * math.pi * torch.special.i0e(kappa))  # i0e: no overflow
    return kappa * (torch.cos(err) - 1) - log_norm


def fit_swap_mixture(
    response: Tensor, target: Tensor, nontarget: Tensor, iters: int = 200
) -> dict:
    """Fit p(θ) = w_t VM(θ; θ_t, κ) + w_s VM(θ; θ_nt, κ) + w_g/(2π) by EM.

    response, target, nontarget: (B,) angles. Returns floats w_target, w_swap, w_guess,
    kappa, and loglik (mean per trial)."""
    for x, n in ((response, "response"), (target, "target"), (nontarget, "nontarget")):
        as_tensor(x, n, ndim=1, floating=True)
    if not response.shape == target.shape == nontarget.shape:
        raise ValueError("response, target and nontarget must all have shape (B,)")
    for x, n in ((response, "response"), (target, "target"), (nontarget, "nontarget")):
        if float(x.abs().max()) > 2 * math.pi + 1e-4:
            raise ValueError(
                f"{n} must hold angles in radians (|angle| <= 2π); got "
                f"values up to {float(x.abs().max()):.3g} -- degrees?"
            )
    if bool((wrap(target - nontarget).abs() < 1e-6).any()):
        raise ValueError(
            "target and nontarget coincide on some trials: the target and "
            "swap components cannot be told apart there"
        )
    iters = as_int(iters, "iters", lo=1)
    e_t, e_s = wrap(response - target), wrap(response - nontarget)
    dt = torch.float64
    e_t, e_s = e_t.to(dt), e_s.to(dt)
    w = torch.tensor([0.7, 0.15, 0.15], dtype=dt, device=e_t.device)
    kappa = torch.tensor(5.0, dtype=dt, device=e_t.device)

    def log_joint(w, kappa):  # (B, 3)
        logp = torch.stack(
            [
                vm_logpdf(e_t, kappa),
                vm_logpdf(e_s, kappa),
                torch.full_like(e_t, -math.log(2 * math.pi)),
            ],
            -1,
        )
        return logp + torch.log(w.clamp_min(1e-12))

    for _ in range(iters):
        resp = torch.softmax(log_joint(w, kappa), -1)  # (B, 3) responsibilities
        w = resp.mean(0)
        rt, rs = resp[:, 0], resp[:, 1]
        R = (rt * torch.cos(e_t) + rs * torch.cos(e_s)).sum() / (
            rt + rs
        ).sum().clamp_min(1e-12)
        kappa = _a1inv(R)
    # the log-likelihood of the parameters returned (after the last M-step)
    loglik = torch.logsumexp(log_joint(w, kappa), -1).mean()
    return dict(
        w_target=float(w[0]),
        w_swap=float(w[1]),
        w_guess=float(w[2]),
        kappa=float(kappa),
        loglik=float(loglik),
    )


def angle(x: Tensor) -> Tensor:
    """(B, 2) responses → (B,) angles."""
    x = as_tensor(x, "x", last=2, floating=True)
    return torch.atan2(x[..., 1], x[..., 0])


def swap_mode_contrast(
    response: Tensor,
    target: Tensor,
    nontarget: Tensor,
    radius: float = 0.3,
    min_sep: float = math.pi / 2,
) -> float:
    """Is there a second *mode* at the other colour, in the response plane? On trials
    whose colours are at least ``min_sep`` apart, the fraction of responses within
    ``radius`` of the other colour's point u(c_other) minus the fraction within
    ``radius`` of the chord's midpoint (u(c_cued) + u(c_other))/2. A heuristic, not a
    test: a second peak at the other colour, tall enough to rise above the valley
    between the colours, makes it positive; a point mass or a narrow Gaussian at the
    conditional mean (nearer the cued colour) makes it ≤ 0; a broad unimodal cloud can
    land on either side of 0, and so can a two-peaked one with broad peaks. response:
    (B, 2) points; target, nontarget: (B,) colour angles."""
    radius = check_positive("radius", radius)
    min_sep = as_float(min_sep, "min_sep", lo=0.0, hi=math.pi)
    as_tensor(response, "response", last=2, ndim=2, floating=True)
    for x, n in ((target, "target"), (nontarget, "nontarget")):
        as_tensor(x, n, ndim=1, floating=True)
    if not response.shape[0] == target.shape[0] == nontarget.shape[0]:
        raise ValueError("response (B, 2), target (B,) and nontarget (B,) must share B")
    keep = wrap(nontarget - target).abs() >= min_sep
    if not bool(keep.any()):
        raise ValueError(
            f"no trial has its colours at least min_sep = {min_sep:.3g} apart"
        )
    other = unit(nontarget)
    mid = (unit(target) + other) / 2
    near_other = ((response - other).norm(dim=-1) < radius)[keep].double().mean()
    near_mid = ((response - mid).norm(dim=-1) < radius)[keep].double().mean()
    return float(near_other - near_mid)


def swap_by_distance(
    response: Tensor, trials: Trials, n_bins: int = 4
) -> tuple[Tensor, Tensor]:
    """The fitted swap weight in ``n_bins`` equal bins of location distance d ∈ [0, π].
    response: (B, 2). Returns (bin centres (n_bins,), swap weights (n_bins,))."""
    n_bins = as_int(n_bins, "n_bins", lo=2)
    if not isinstance(trials, Trials):
        raise TypeError(f"trials must be a Trials batch, got {type(trials).__name__}")
    response = as_tensor(response, "response", last=2, ndim=2, floating=True)
    if response.shape[0] != len(trials):
        raise ValueError(
            f"response must have shape ({len(trials)}, 2), one row per "
            f"trial; got {tuple(response.shape)}"
        )
    th = angle(response)
    d = trials.distance
    edges = torch.linspace(0, math.pi, n_bins + 1, device=d.device)
    centres, weights = [], []
    for i in range(n_bins):
        m = (d >= edges[i]) & (d <= edges[i + 1])
        if int(m.sum()) < 20:
            raise ValueError(
                f"distance bin {i} holds {int(m.sum())} trials; use fewer "
                "bins or more trials (at least 20 per bin)"
            )
        fit = fit_swap_mixture(th[m], trials.target[m], trials.nontarget[m])
        centres.append(float(edges[i : i + 2].mean()))
        weights.append(fit["w_swap"])
    return torch.tensor(centres), torch.tensor(weights)


def spearman(x, y) -> float:
    """Spearman rank correlation of two 1-d sequences of finite numbers (ties get
    average ranks, as in ``scipy.stats.spearmanr``). Raises on a constant sequence,
    where the correlation is undefined."""
    from scipy.stats import rankdata

    try:
        x = torch.as_tensor(x, dtype=torch.float64).cpu()
        y = torch.as_tensor(y, dtype=torch.float64).cpu()
    except (TypeError, ValueError, RuntimeError) as e:
        raise TypeError(f"x and y must be sequences of numbers: {e}") from None
    if x.ndim != 1 or x.shape != y.shape or x.numel() < 3:
        raise ValueError(
            "x and y must be 1-d with the same length >= 3, got shapes "
            f"{tuple(x.shape)} and {tuple(y.shape)}"
        )
    if not (torch.isfinite(x).all() and torch.isfinite(y).all()):
        raise ValueError("x and y must hold finite numbers (no NaN or inf)")
    if x.min() == x.max() or y.min() == y.max():
        raise ValueError(
            "x and y must not be constant: the rank correlation is undefined"
        )
    rx = torch.as_tensor(rankdata(x.numpy()), dtype=torch.float64)
    ry = torch.as_tensor(rankdata(y.numpy()), dtype=torch.float64)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float((rx * ry).sum() / (rx.norm() * ry.norm()))
