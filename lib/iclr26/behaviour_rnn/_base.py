"""Angle helpers shared by the chapter-07 modules (input checks come from
:mod:`iclr26.validate`)."""

from __future__ import annotations

import math

import torch

Tensor = torch.Tensor


def wrap(angle: Tensor) -> Tensor:
    """Angles wrapped to [−π, π)."""
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def unit(angle: Tensor) -> Tensor:
    """(…,) angles → (…, 2) points on the unit circle."""
    return torch.stack([torch.cos(angle), torch.sin(angle)], -1)
