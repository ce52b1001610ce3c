"""Small numerics that several chapters use: a model's parameter count and the slope
of a log-log fit."""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn


def n_params(model: nn.Module, trainable_only: bool = False) -> int:
    """The number of parameters of ``model`` (only those with ``requires_grad`` when
    ``trainable_only``)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    return sum(
        p.numel() for p in model.parameters() if p.requires_grad or not trainable_only
    )


def loglog_slope(
    x: torch.Tensor | Sequence[float], y: torch.Tensor | Sequence[float]
) -> float:
    """The least-squares slope of log y against log x: the exponent b of y ≈ a·x^b.

    x, y: (n,) positive and finite, n >= 2, x not all equal.
    """
    x = torch.as_tensor(x, dtype=torch.float64).flatten()
    y = torch.as_tensor(y, dtype=torch.float64).flatten()
    if x.numel() != y.numel() or x.numel() < 2:
        raise ValueError(
            f"x and y need the same length, at least 2, got {x.numel()} and {y.numel()}"
        )
    if not (torch.isfinite(x).all() and torch.isfinite(y).all()):
        raise ValueError("x and y must be finite")
    if (x <= 0).any() or (y <= 0).any():
        raise ValueError("x and y must be positive to take logs")
    lx, ly = x.log(), y.log()
    lx_c = lx - lx.mean()
    denom = (lx_c**2).sum().item()
    if denom <= 0 or not math.isfinite(denom):
        raise ValueError("x must take at least two different values")
    return float((lx_c * (ly - ly.mean())).sum().item() / denom)
