"""A per-stimulus test for a second response mode.

Each trained network is a *conditional* sampler: for one stimulus it gives a whole
response distribution. So the test repeats a stimulus M times, samples, and asks of that
one cloud of M points whether two 2-D Gaussians describe it better than one (by BIC),
and, if so, whether the smaller of the two sits at the other item's colour. Pooling
trials with different colours, as an angle histogram does, mixes many clouds and cannot
tell a second mode from a broad one."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..validate import as_float, as_int, as_tensor, check_positive
from ._base import Tensor, unit, wrap
from .task import Trials


def pick_stimuli(trials: Trials, K: int, min_sep: float = math.pi / 2) -> Tensor:
    """Indices (K,) of the first K trials whose two colours are at least ``min_sep``
    apart (so that a mode at each colour could be told apart)."""
    if not isinstance(trials, Trials):
        raise TypeError(f"trials must be a Trials batch, got {type(trials).__name__}")
    K = as_int(K, "K", lo=1)
    min_sep = as_float(min_sep, "min_sep", lo=0.0, hi=math.pi)
    ok = torch.nonzero(wrap(trials.nontarget - trials.target).abs() >= min_sep)[:, 0]
    if ok.numel() < K:
        raise ValueError(
            f"only {ok.numel()} trials have their colours at least "
            f"{min_sep:.3g} apart; K = {K} asked for"
        )
    return ok[:K]


def repeat_stimuli(
    trials: Trials, idx: Tensor, M: int, noise: float, generator=None
) -> Trials:
    """The stimuli ``trials[idx]`` (colours, locations, cue), each repeated M times
    (stimulus k occupies rows k·M … k·M + M − 1), with fresh surrogate responses x0:
    each row independently the cued colour, the other colour (probability the trial's
    π_s) or a uniform guess (``trials.guess_prob``), plus N(0, noise² I)."""
    if not isinstance(trials, Trials):
        raise TypeError(f"trials must be a Trials batch, got {type(trials).__name__}")
    if not isinstance(idx, torch.Tensor) or idx.dtype not in (torch.int64, torch.int32):
        raise TypeError("idx must be an integer tensor of trial indices")
    if idx.ndim != 1 or idx.numel() == 0:
        raise ValueError(f"idx must be 1-d and non-empty, got shape {tuple(idx.shape)}")
    if int(idx.min()) < 0 or int(idx.max()) >= len(trials):
        raise ValueError(f"idx must lie in 0 … {len(trials) - 1}")
    M = as_int(M, "M", lo=1)
    noise = as_float(noise, "noise", lo=0.0, hi=10.0)
    dev = trials.colours.device
    rep = idx.to(dev).repeat_interleave(M)
    colours, locations = trials.colours[rep], trials.locations[rep]
    cue, swap_p = trials.cue[rep], trials.swap_p[rep]
    B = rep.numel()
    u = torch.rand(B, generator=generator).to(dev)
    pg = trials.guess_prob
    component = torch.where(u < pg, 2, torch.where(u < pg + swap_p, 1, 0))
    target = colours.gather(1, cue[:, None])[:, 0]
    nontarget = colours.gather(1, 1 - cue[:, None])[:, 0]
    guess = ((torch.rand(B, generator=generator) * 2 - 1) * math.pi).to(dev)
    theta = torch.where(
        component == 0, target, torch.where(component == 1, nontarget, guess)
    )
    x0 = unit(theta) + noise * torch.randn(B, 2, generator=generator).to(dev)
    return Trials(colours, locations, cue, swap_p, component, x0, trials.visible, pg)


def second_mode(
    samples: Tensor,
    target: Tensor,
    nontarget: Tensor,
    min_weight: float = 0.05,
    n_init: int = 3,
    seed: int = 0,
) -> dict:
    """For each stimulus k, fit one and two full-covariance 2-D Gaussians to its
    samples[k] (M points) by maximum likelihood (scikit-learn's EM) and call it a
    **second mode at the other colour** when (i) BIC prefers two components, (ii) the
    smaller component has weight ≥ ``min_weight``, and (iii) its mean is nearer
    u(c_other) than u(c_cued).

    samples: (K, M, 2); target, nontarget: (K,) colour angles. Returns a dict:
    ``detected`` (K,) bool array, ``fraction`` (float, the share detected), ``llr`` (K,)
    mean log-likelihood gain per sample of two components over one, ``dbic`` (K,)
    BIC(1) − BIC(2) (> 0: two preferred), ``w_minor`` (K,) and ``d_other``,
    ``d_cued`` (K,) the minor mean's distances to the two colours' points."""
    from sklearn.mixture import GaussianMixture

    samples = as_tensor(samples, "samples", last=2, ndim=3, floating=True)
    for x, n in ((target, "target"), (nontarget, "nontarget")):
        as_tensor(x, n, ndim=1, floating=True)
    K, M = samples.shape[:2]
    if not target.shape[0] == nontarget.shape[0] == K:
        raise ValueError(
            f"target and nontarget must have shape ({K},), one per "
            f"stimulus; got {tuple(target.shape)}, {tuple(nontarget.shape)}"
        )
    if M < 20:
        raise ValueError(f"need at least 20 samples per stimulus, got M = {M}")
    min_weight = as_float(min_weight, "min_weight", lo=0.0, hi=0.5)
    n_init = as_int(n_init, "n_init", lo=1)
    seed = as_int(seed, "seed", lo=0)
    xs = samples.detach().double().cpu().numpy()
    u_t = unit(target.detach().double().cpu()).numpy()
    u_o = unit(nontarget.detach().double().cpu()).numpy()
    out = {k: np.zeros(K) for k in ("llr", "dbic", "w_minor", "d_other", "d_cued")}
    for k in range(K):
        g1 = GaussianMixture(1, covariance_type="full", random_state=seed).fit(xs[k])
        g2 = GaussianMixture(
            2, covariance_type="full", n_init=n_init, random_state=seed
        ).fit(xs[k])
        j = int(np.argmin(g2.weights_))
        out["llr"][k] = g2.score(xs[k]) - g1.score(xs[k])
        out["dbic"][k] = g1.bic(xs[k]) - g2.bic(xs[k])
        out["w_minor"][k] = g2.weights_[j]
        out["d_other"][k] = np.linalg.norm(g2.means_[j] - u_o[k])
        out["d_cued"][k] = np.linalg.norm(g2.means_[j] - u_t[k])
    det = (
        (out["dbic"] > 0)
        & (out["w_minor"] >= min_weight)
        & (out["d_other"] < out["d_cued"])
    )
    out["detected"] = det
    out["fraction"] = float(det.mean())
    return out


def gaussian_like(samples: Tensor, generator=None) -> Tensor:
    """A negative control: for each stimulus k, M draws from the single Gaussian with
    samples[k]'s own mean and covariance (same spread, one mode). (K, M, 2) → (K, M, 2).
    """
    samples = as_tensor(samples, "samples", last=2, ndim=3, floating=True)
    K, M = samples.shape[:2]
    mean = samples.mean(1, keepdim=True)
    d = samples - mean
    cov = d.transpose(1, 2) @ d / (M - 1) + 1e-9 * torch.eye(2, device=samples.device)
    z = torch.randn(K, M, 2, generator=generator, dtype=samples.dtype).to(samples)
    return mean + z @ torch.linalg.cholesky(cov).transpose(1, 2)


def two_mode_like(
    target: Tensor,
    nontarget: Tensor,
    M: int,
    w_swap: float,
    kappa: float,
    generator=None,
) -> Tensor:
    """A positive control: for each stimulus, M points, each at the other colour's
    point u(c_other) with probability ``w_swap`` and at u(c_cued) otherwise, plus
    isotropic N(0, I/κ) (angular spread ≈ 1/√κ, as a von Mises of concentration κ).
    target, nontarget: (K,) angles → (K, M, 2)."""
    for x, n in ((target, "target"), (nontarget, "nontarget")):
        as_tensor(x, n, ndim=1, floating=True)
    if target.shape != nontarget.shape:
        raise ValueError("target and nontarget must have the same shape (K,)")
    M = as_int(M, "M", lo=1)
    w_swap = as_float(w_swap, "w_swap", lo=0.0, hi=1.0)
    kappa = check_positive("kappa", kappa)
    K = target.shape[0]
    swap = (torch.rand(K, M, generator=generator) < w_swap).to(target.device)
    mu = torch.where(swap[..., None], unit(nontarget)[:, None], unit(target)[:, None])
    z = torch.randn(K, M, 2, generator=generator).to(mu)
    return mu + z / math.sqrt(kappa)


def smear_reach(mass: float) -> float:
    """The reach ρ of :func:`one_peak_smear` that puts the share ``mass`` of its points
    past the midpoint of the arc between the two colours: P(ρ|z| > ½) = mass for
    z ~ N(0, 1), so ρ = ½ / Φ⁻¹(1 − mass/2). mass in (0, 1)."""
    mass = as_float(mass, "mass", lo=0.0, hi=1.0, open_lo=True, open_hi=True)
    q = torch.special.ndtri(torch.tensor(1 - mass / 2, dtype=torch.float64))
    return float(0.5 / q)


def one_peak_smear(
    target: Tensor,
    nontarget: Tensor,
    M: int,
    reach: float,
    kappa: float,
    generator=None,
) -> Tensor:
    """A null case for a second-mode test: one peak, at the cued colour, smeared
    toward the other colour. For each stimulus, M points at the angle
    θ = c_cued + ρ·|z|·(c_other − c_cued) (the difference wrapped, z ~ N(0, 1): a
    half-normal, whose density falls monotonically from the cued colour toward the
    other one), on the unit circle, plus isotropic N(0, I/κ). No second mode by
    construction; with ``reach`` from :func:`smear_reach` as much of it lies past the
    arc's midpoint as a swap rate would put at the other colour.
    target, nontarget: (K,) angles → (K, M, 2)."""
    for x, n in ((target, "target"), (nontarget, "nontarget")):
        as_tensor(x, n, ndim=1, floating=True)
    if target.shape != nontarget.shape:
        raise ValueError("target and nontarget must have the same shape (K,)")
    M = as_int(M, "M", lo=1)
    reach = check_positive("reach", reach)
    kappa = check_positive("kappa", kappa)
    K = target.shape[0]
    z = torch.randn(K, M, generator=generator).abs().to(target)
    theta = target[:, None] + reach * z * wrap(nontarget - target)[:, None]
    noise = torch.randn(K, M, 2, generator=generator).to(target)
    return unit(theta) + noise / math.sqrt(kappa)
