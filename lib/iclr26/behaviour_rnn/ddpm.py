"""The DDPM: noise schedule, forward process, one-step posterior, the oracle
mixture denoiser and the ancestral sampler."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import torch

from ..validate import as_float, as_int, as_tensor
from ._base import Tensor


@dataclass
class Schedule:
    """A DDPM noise schedule with T steps, indexed s = 1 … T (entry 0 is s = 0 where it
    applies). betas, alphas: (T + 1,) with betas[0] = 0; alpha_bar: (T + 1,),
    alpha_bar[0] = 1; post_var: (T + 1,) the posterior variance β̃_s (β̃_1 = 0)."""

    betas: Tensor
    alphas: Tensor
    alpha_bar: Tensor
    post_var: Tensor

    @property
    def T(self) -> int:
        return self.betas.shape[0] - 1


def ddpm_schedule(
    T: int,
    beta_min: float | None = None,
    beta_max: float | None = None,
    device=None,
    dtype=torch.float32,
) -> Schedule:
    """A linear schedule β_s from ``beta_min`` to ``beta_max`` (defaults 0.2/T and 8/T,
    so that ᾱ_T ≈ 0.01 whatever T: the chain ends close to N(0, I))."""
    T = as_int(T, "T", lo=2)
    beta_min = 0.2 / T if beta_min is None else beta_min
    beta_max = 8.0 / T if beta_max is None else beta_max
    for v, n in ((beta_min, "beta_min"), (beta_max, "beta_max")):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 < v < 1:
            raise ValueError(
                f"{n} must lie in (0, 1), got {v!r} (T={T}: the default "
                "8/T needs T >= 10; use T >= 10, or call ddpm_schedule "
                "with a smaller beta_max)"
            )
    if beta_min > beta_max:
        raise ValueError(f"beta_min ({beta_min}) must not exceed beta_max ({beta_max})")
    betas = torch.cat(
        [
            torch.zeros(1, dtype=torch.float64),
            torch.linspace(beta_min, beta_max, T, dtype=torch.float64),
        ]
    )
    alphas = 1 - betas
    alpha_bar = torch.cumprod(alphas, 0)
    post_var = torch.zeros_like(betas)
    post_var[1:] = (1 - alpha_bar[:-1]) / (1 - alpha_bar[1:]) * betas[1:]
    return Schedule(
        *(
            t.to(device=device, dtype=dtype)
            for t in (betas, alphas, alpha_bar, post_var)
        )
    )


def _step_index(s, sched: Schedule) -> Tensor:
    s = torch.as_tensor(s)
    if s.is_floating_point() or s.dtype == torch.bool:
        raise TypeError(f"s must hold integer diffusion steps, got dtype {s.dtype}")
    if (s < 1).any() or (s > sched.T).any():
        raise ValueError(f"s must lie in 1 … T = {sched.T}, got {s.min()} … {s.max()}")
    return s.to(sched.betas.device)


def q_sample(x0: Tensor, s, sched: Schedule, noise: Tensor) -> Tensor:
    """x_s = √ᾱ_s x0 + √(1 − ᾱ_s) ε (one jump from x0). x0, noise: (..., D); s: int or
    (...)."""
    x0, noise = (
        as_tensor(x0, "x0", floating=True),
        as_tensor(noise, "noise", floating=True),
    )
    if x0.shape != noise.shape:
        raise ValueError(
            "x0 and noise must have the same shape, got "
            f"{tuple(x0.shape)} "
            f"and {tuple(noise.shape)}"
        )
    s = _step_index(s, sched)
    ab = sched.alpha_bar[s]
    ab = ab[..., None] if ab.ndim else ab
    return ab.sqrt() * x0 + (1 - ab).sqrt() * noise


def forward_chain(x0: Tensor, sched: Schedule, generator=None) -> Tensor:
    """A forward-process trajectory x_0 → x_1 → … → x_T, each step x_s = √α_s x_{s−1} +
    √β_s ε_s. x0: (B, D) → (T + 1, B, D), entry s is x_s. This is the sequence the RNN
    is teacher-forced to (in reverse order)."""
    x0 = as_tensor(x0, "x0", floating=True)
    eps = torch.randn((sched.T,) + tuple(x0.shape), generator=generator).to(x0)
    xs = [x0]
    for s in range(1, sched.T + 1):
        xs.append(sched.alphas[s].sqrt() * xs[-1] + sched.betas[s].sqrt() * eps[s - 1])
    return torch.stack(xs)


def posterior(x0: Tensor, xs: Tensor, s, sched: Schedule) -> tuple[Tensor, Tensor]:
    """q(x_{s−1} | x_s, x_0) = N(μ̃, β̃ I) with
    μ̃ = √ᾱ_{s−1} β_s/(1 − ᾱ_s) · x_0 + √α_s (1 − ᾱ_{s−1})/(1 − ᾱ_s) · x_s,
    β̃ = (1 − ᾱ_{s−1})/(1 − ᾱ_s) · β_s.   x0, xs: (..., D); s: int or (...).
    Returns (μ̃ (..., D), β̃ (...) or a 0-d tensor)."""
    x0, xs = as_tensor(x0, "x0", floating=True), as_tensor(xs, "xs", floating=True)
    if x0.shape != xs.shape:
        raise ValueError(
            "x0 and xs must have the same shape, got "
            f"{tuple(x0.shape)} and "
            f"{tuple(xs.shape)}"
        )
    s = _step_index(s, sched)
    if s.ndim:
        try:
            ok = torch.broadcast_shapes(s.shape, x0.shape[:-1]) == x0.shape[:-1]
        except RuntimeError:
            ok = False
        if not ok:
            raise ValueError(
                f"s must be an int or broadcast to {tuple(x0.shape[:-1])} "
                f"(one step per row of x0), got shape {tuple(s.shape)}"
            )
    ab, ab_prev = sched.alpha_bar[s], sched.alpha_bar[s - 1]
    beta, alpha = sched.betas[s], sched.alphas[s]
    c0 = ab_prev.sqrt() * beta / (1 - ab)
    cs = alpha.sqrt() * (1 - ab_prev) / (1 - ab)
    if c0.ndim:
        c0, cs = c0[..., None], cs[..., None]
    return c0 * x0 + cs * xs, sched.post_var[s]


def gmm_posterior_mean(
    xs: Tensor, s: int, sched: Schedule, means: Tensor, weights: Tensor, sd: float
) -> Tensor:
    """The *oracle* reverse mean E[μ̃(x_s, x_0) | x_s] when x_0 ~ Σ_k w_k N(m_k, sd² I):
    the best any denoiser can do (it is what the DDPM loss is minimised by). xs: (B, D);
    means: (B, K, D) or (K, D); weights: (B, K) or (K,). Returns (B, D)."""
    s = int(_step_index(s, sched))
    xs, means, weights = (
        as_tensor(xs, "xs", ndim=2, floating=True),
        as_tensor(means, "means", floating=True),
        as_tensor(weights, "weights", floating=True),
    )
    if bool((weights < 0).any()) or not torch.allclose(
        weights.sum(-1),
        torch.ones((), dtype=weights.dtype, device=weights.device),
        atol=1e-5,
    ):
        raise ValueError(
            "weights must be non-negative and sum to 1 over the components"
        )
    if means.shape[-1] != xs.shape[-1] or means.ndim not in (2, 3):
        raise ValueError(
            f"means must have shape (B, K, {xs.shape[-1]}) or (K, "
            f"{xs.shape[-1]}) to match xs (B, D); got {tuple(means.shape)}"
        )
    if weights.shape[-1] != means.shape[-2]:
        raise ValueError(
            f"weights must have one entry per component (K = "
            f"{means.shape[-2]}); got shape {tuple(weights.shape)}"
        )
    sd = as_float(sd, "sd", lo=0.0, hi=1e3)
    ab = sched.alpha_bar[s]
    var = ab * sd**2 + (1 - ab)  # x_s | k ~ N(√ᾱ m_k, var I)
    if means.ndim == 2:
        means = means.expand(xs.shape[0], *means.shape)
    if weights.ndim == 1:
        weights = weights.expand(xs.shape[0], -1)
    diff = xs[:, None, :] - ab.sqrt() * means  # (B, K, D)
    logp = torch.log(weights.clamp_min(1e-30)) - (diff**2).sum(-1) / (2 * var)
    resp = torch.softmax(logp, -1)  # (B, K)
    x0_k = means + (ab.sqrt() * sd**2 / var) * diff
    x0_hat = (resp[..., None] * x0_k).sum(1)  # E[x0 | x_s]
    mu, _ = posterior(x0_hat, xs, s, sched)  # μ̃ is linear in x0
    return mu


def ancestral_sample(mean_fn, xT: Tensor, sched: Schedule, generator=None) -> Tensor:
    """Run x_{s−1} = mean_fn(x_s, s) + √β̃_s z from s = T down to 1.
    xT: (B, D) → x_0."""
    if not callable(mean_fn):
        raise TypeError(
            f"mean_fn must be callable (x_s, s) -> mean, got {type(mean_fn).__name__}"
        )
    x = as_tensor(xT, "xT", ndim=2, floating=True)
    for s in range(sched.T, 0, -1):
        z = torch.randn(tuple(x.shape), generator=generator).to(x)
        x = mean_fn(x, s) + sched.post_var[s].sqrt() * z
    return x
