"""The chain rule under any order, on an exact distribution, and the exercise's check.

``chain_rule_product`` multiplies the conditionals of a joint table in a chosen order;
for every order it returns the joint again, which is why one model trained on random
orders can answer every conditional query (the sigma-GPT / XLNet argument).
"""

from __future__ import annotations

from typing import Sequence

import torch

from ..core import ExerciseVerdict, grade_exercise
from .geometry import depth_from_flow


def chain_rule_product(p: torch.Tensor, sigma: Sequence[int]) -> torch.Tensor:
    """``prod_k p(x_sigma(k) | x_sigma(<k))`` for a joint table ``p`` (one axis per
    variable, entries > 0, summing to 1), as a table in ``p``'s own axis order."""
    if not isinstance(p, torch.Tensor):
        raise TypeError(f"p must be a torch.Tensor, got {type(p).__name__}")
    D = p.ndim
    if sorted(sigma) != list(range(D)):
        raise ValueError(f"sigma must be a permutation of range({D}), got {sigma}")
    if (p <= 0).any() or abs(p.sum().item() - 1) > 1e-9:
        raise ValueError("p must be positive and sum to 1")
    q = p.permute(*sigma)  # axis k is variable sigma(k)
    out = torch.ones_like(q)
    prev = torch.ones(())
    for k in range(D):  # marginal of the first k + 1 variables, kept broadcastable
        m = q.sum(dim=tuple(range(k + 1, D)), keepdim=True) if k < D - 1 else q
        out = out * (m / prev)  # p(x_sigma(k) | x_sigma(<k)) = m_k / m_(k-1)
        prev = m
    inv = [sigma.index(i) for i in range(D)]
    return out.permute(*inv)


def _trial_depth(fn) -> str:
    g = torch.Generator().manual_seed(0)
    for case in range(6):
        f = [12.0, 16.0, 20.0][case % 3]
        Z = 1 + 7 * torch.rand(4, 16, generator=g, dtype=torch.float64)
        t = torch.tensor([0.3, -0.4, 0.5, -0.6], dtype=torch.float64)[:, None]
        u = f * t / Z
        want = depth_from_flow(u, t, f)
        got = fn(u.clone(), t.clone(), f)
        if not isinstance(got, torch.Tensor):
            raise AssertionError(f"return a torch.Tensor, not {type(got).__name__}")
        if got.shape != want.shape:
            raise AssertionError(
                f"the depth map must have the flow's shape {tuple(want.shape)}, "
                f"got {tuple(got.shape)}"
            )
        if (got <= 0).any():
            raise AssertionError(
                "some depths are negative or zero: a scene shifted left (t < 0) "
                "moves pixels left (u < 0), and depth is positive either way"
            )
        if not torch.allclose(got.double(), want, rtol=1e-6):
            r = (got.double() / want).median().item()
            raise AssertionError(
                f"case {case} (f = {f}): your depths are off by a factor of about "
                f"{r:.3g}; the pinhole projects x = f X / Z, so what does a sideways "
                "shift of X by t do to x?"
            )
    return "your depths match Z = f |t| / |u| on every case"


def check_depth_from_flow(fn) -> ExerciseVerdict:
    """Grade a student's ``fn(u, t, f) -> Z`` (flow (B, N) px, shift t (B, 1), focal
    length f) against :func:`~.geometry.depth_from_flow`."""
    return grade_exercise(fn, _trial_depth)
