"""Input checks shared by the DIAL modules."""

from __future__ import annotations

import math

import numpy as np
import torch

# --------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------


def _tensor(x, name: str, ndim: int | None = None) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(
            f"{name} must have {ndim} dimensions, got shape {tuple(x.shape)}"
        )
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    if x.is_floating_point() and not torch.isfinite(x).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return x


def _int(x, name: str, lo: int = 1) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(x).__name__}")
    if x < lo:
        raise ValueError(f"{name} must be >= {lo}, got {x}")
    return int(x)


def _frac(x, name: str, lo: float = 0.0, hi: float = 1.0) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise TypeError(f"{name} must be a finite float, got {x!r}")
    if not lo <= x <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {x}")
    return float(x)
