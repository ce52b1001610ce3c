"""Small input checks and angle helpers shared by the chapter-07 modules."""

from __future__ import annotations

import math
import numbers

import torch

Tensor = torch.Tensor


def _int(x, name: str, lo: int = 1) -> int:
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(x).__name__}")
    if x < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {x}")
    return int(x)


def _prob(x, name: str, lo: float = 0.0, hi: float = 1.0) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x):
        raise TypeError(f"{name} must be a finite float, got {x!r}")
    if not lo <= x <= hi:
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {x}")
    return float(x)


def _tensor(x, name: str, last: int | None = None, ndim: int | None = None) -> Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dims, got shape {tuple(x.shape)}")
    if last is not None and (x.ndim == 0 or x.shape[-1] != last):
        raise ValueError(f"{name} must have shape (..., {last}), got {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name} is empty")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    return x


def wrap(angle: Tensor) -> Tensor:
    """Angles wrapped to [−π, π)."""
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def unit(angle: Tensor) -> Tensor:
    """(…,) angles → (…, 2) points on the unit circle."""
    return torch.stack([torch.cos(angle), torch.sin(angle)], -1)
