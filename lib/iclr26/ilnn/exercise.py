"""The checker for the ILNN chapter's coding exercise (a Lorentz boost)."""

from __future__ import annotations

from typing import Callable

import torch

from ..core import ExerciseVerdict, grade_exercise
from .geometry import dist, lift, lorentz_centroid, lorentz_inner, origin

# --------------------------------------------------------------------------------------
# exercise check
# --------------------------------------------------------------------------------------
_BoostFn = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]


def check_boost_to_origin(fn: _BoostFn) -> ExerciseVerdict:
    """Grade a student's ``fn(mu, x, k)``: it must send mu to the origin, keep points on
    the hyperboloid and preserve distances, for several curvatures.

    Returns an :class:`~iclr26.core.ExerciseVerdict`: "not done yet" on the stub,
    "wrong" with a hint naming the property that fails, "correct" when every case
    passes.
    """
    g = torch.Generator().manual_seed(0)
    cases = []
    for k in (0.3, 1.0, 2.5):
        x = lift(torch.randn(50, 4, generator=g, dtype=torch.float64), k)
        cases.append((k, x, lorentz_centroid(x, k)))

    def trial(fn):
        for k, x, mu in cases:
            y = fn(mu.clone(), x.clone(), k)
            if not isinstance(y, torch.Tensor) or y.shape != x.shape:
                got = tuple(getattr(y, "shape", ())) or type(y).__name__
                raise AssertionError(
                    f"fn(mu, x, k) must return a tensor of shape "
                    f"{tuple(x.shape)} (one boosted point per row of "
                    f"x), got {got}"
                )
            o = origin(4, k, dtype=torch.float64)
            m = fn(mu.clone(), mu[None].clone(), k)[0]
            if not torch.allclose(m, o, atol=1e-8):
                raise AssertionError(
                    f"k={k}: fn(mu, mu[None], k) should be the origin "
                    "(1/sqrt(k), 0, ..., 0); check which point your "
                    "map sends to the origin, and the rescaling by "
                    "sqrt(k)"
                )
            on_sheet = torch.full((50,), -1.0 / k, dtype=torch.float64)
            if not torch.allclose(lorentz_inner(y, y), on_sheet, atol=1e-8):
                raise AssertionError(
                    f"k={k}: outputs are not on the hyperboloid "
                    "<y,y>_L = -1/k; a boost is linear, so it must "
                    "keep the Minkowski form"
                )
            if not (y[:, 0] > 0).all():
                raise AssertionError(
                    f"k={k}: outputs must be on the upper sheet (y_0 > 0)"
                )
            d_before = dist(x[:, None], x[None], k)
            d_after = dist(y[:, None], y[None], k)
            if not torch.allclose(d_before, d_after, atol=1e-6):
                raise AssertionError(
                    f"k={k}: pairwise distances changed: not an isometry"
                )
        return "your boost is an isometry that sends mu to the origin, at 3 curvatures"

    return grade_exercise(fn, trial)
