"""Vectorised one-step FZOO and MeZO estimators on a plain (batched) function: the
derivation's checks."""

from __future__ import annotations

from typing import Callable

import torch

from .optim import STD_MODES, _check_hparams, need_generator, rademacher

# --------------------------------------------------------------------------------------
# Vectorised one-step estimators on a plain function (the derivation's checks)
# --------------------------------------------------------------------------------------


def fzoo_update_from_losses(
    l0: torch.Tensor,
    losses: torch.Tensor,
    directions: torch.Tensor,
    lr: float,
    std_mode: str = "population",
) -> torch.Tensor:
    """FZOO's update ``Δ = −η Σ_i (l_i − l_0)/(N σ) u_i`` from losses already computed.

    l0: (...,), losses: (..., N), directions: (..., N, d) → Δ: (..., d).
        Where σ = 0, Δ = 0.
    """
    if std_mode not in STD_MODES:
        raise ValueError(f"std_mode must be one of {STD_MODES}, got {std_mode!r}")
    if (
        directions.dim() < 2
        or losses.shape != directions.shape[:-1]
        or l0.shape != losses.shape[:-1]
    ):
        raise ValueError(
            f"expected l0 (...,), losses (..., N), directions (..., N, d); got "
            f"{tuple(l0.shape)}, {tuple(losses.shape)}, {tuple(directions.shape)}"
        )
    n = losses.shape[-1]
    if n < 2:  # the std of one loss is 0: the step would silently be zero
        raise ValueError(
            f"FZOO needs N >= 2 perturbed losses (a std needs two), got N = {n}"
        )
    sigma = losses.std(
        dim=-1, correction=0 if std_mode == "population" else 1, keepdim=True
    )  # (..., 1)
    coeffs = (losses - l0.unsqueeze(-1)) / (n * sigma)  # (..., N)
    coeffs = torch.where(sigma > 0, coeffs, torch.zeros_like(coeffs))
    return -lr * torch.einsum("...n,...nd->...d", coeffs, directions)  # (..., d)


def _check_fn_theta(f, theta):
    if not callable(f):
        raise TypeError(f"f must be callable (..., d) -> (...), got {type(f).__name__}")
    if not torch.is_tensor(theta) or theta.dim() != 1:
        raise ValueError(
            "theta must be a 1-d tensor (d,), got "
            f"{getattr(theta, 'shape', type(theta))}"
        )


def fzoo_deltas(
    f: Callable[[torch.Tensor], torch.Tensor],
    theta: torch.Tensor,
    n_perturb: int,
    eps: float,
    lr: float,
    draws: int,
    generator: torch.Generator | None = None,
    std_mode: str = "population",
) -> torch.Tensor:
    """``draws`` independent FZOO updates at ``theta`` on the batched function ``f``.

    f maps (..., d) → (...); theta: (d,). Returns Δ: (draws, d).
    All ``draws × N`` perturbed losses are one call to ``f``. ``generator`` (required)
    draws the perturbations.
    """
    need_generator(generator, "fzoo_deltas")
    _check_fn_theta(f, theta)
    _check_hparams(lr, eps)
    if n_perturb < 2 or draws < 1:
        raise ValueError(
            f"need n_perturb >= 2 and draws >= 1, got {n_perturb}, {draws}"
        )
    u = rademacher(
        (draws, n_perturb, theta.numel()), generator, theta.device, theta.dtype
    )  # (draws, N, d)
    losses = f(theta + eps * u)  # (draws, N)
    l0 = f(theta).expand(draws)  # (draws,)
    return fzoo_update_from_losses(l0, losses, u, lr, std_mode)


def mezo_deltas(
    f: Callable[[torch.Tensor], torch.Tensor],
    theta: torch.Tensor,
    eps: float,
    lr: float,
    draws: int,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """``draws`` independent MeZO updates ``Δ = −η (f(θ+εz) − f(θ−εz))/(2ε) z``
    at ``theta``.

    f maps (..., d) → (...); theta: (d,). Returns Δ: (draws, d). ``generator``
    (required) draws the directions.
    """
    need_generator(generator, "mezo_deltas")
    _check_fn_theta(f, theta)
    _check_hparams(lr, eps)
    z = torch.randn(
        (draws, theta.numel()),
        generator=generator,
        device=theta.device,
        dtype=theta.dtype,
    )
    g = (f(theta + eps * z) - f(theta - eps * z)) / (2 * eps)  # (draws,)
    return -lr * g.unsqueeze(-1) * z
