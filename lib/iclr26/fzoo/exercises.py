"""The exercise checker of chapter 03."""
from __future__ import annotations

import math
from typing import Callable, Iterable

import torch
from torch import nn

from .estimators import fzoo_update_from_losses
from .optim import rademacher


# ----------------------------------------------------------------------------------------------
# Exercise checker
# ----------------------------------------------------------------------------------------------

def check_fzoo_update(fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float], torch.Tensor]) -> str:
    """Check a student's ``fn(l0, losses, directions, lr) -> Δ`` against FZOO's update rule.

    l0: () tensor, losses: (N,), directions: (N, d), lr: float; Δ: (d,). Tests random cases, the
    invariance under ``L → aL + b`` and the population std. Raises ``AssertionError`` with a hint;
    returns a short message when all pass.
    """
    gen = torch.Generator().manual_seed(1234)
    for trial in range(5):
        n, d = 3 + trial, 7 + 3 * trial
        l0 = torch.rand((), generator=gen, dtype=torch.float64)
        losses = l0 + 0.1 * torch.randn(n, generator=gen, dtype=torch.float64)
        u = rademacher((n, d), gen, dtype=torch.float64)
        lr = 0.01 * (trial + 1)
        out = fn(l0, losses, u, lr)
        if not torch.is_tensor(out) or out.shape != (d,):
            raise AssertionError(f"expected a tensor of shape ({d},), got {getattr(out, 'shape', type(out))}")
        want = fzoo_update_from_losses(l0, losses, u, lr)
        if torch.allclose(out, -want, rtol=1e-6, atol=1e-12):
            raise AssertionError("wrong sign: Δ is the change of θ, so it is −η·(estimate)")
        sample = fzoo_update_from_losses(l0, losses, u, lr, std_mode="sample")
        if torch.allclose(out.double(), sample, rtol=1e-6, atol=1e-12):
            raise AssertionError("close: use the population std (divide by N, correction=0), as the official code does")
        if not torch.allclose(out.double(), want, rtol=1e-6, atol=1e-12):
            raise AssertionError(f"Δ differs from FZOO's rule by up to {(out.double() - want).abs().max():.3g}; "
                                 "remember: one-sided differences l_i − l_0, divided by N·σ")
        shifted = fn(3.0 * l0 + 5.0, 3.0 * losses + 5.0, u, lr)
        if not torch.allclose(shifted.double(), want, rtol=1e-6, atol=1e-12):
            raise AssertionError("Δ changed when the loss became 3·L + 5; FZOO's step must not depend on scale or shift")
    return "check_fzoo_update: all 5 cases and the scale/shift invariance agree with FZOO's rule"
