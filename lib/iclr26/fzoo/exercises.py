"""The exercise checker of chapter 03."""

from __future__ import annotations

from typing import Callable

import torch

from ..core import ExerciseVerdict, grade_exercise
from .estimators import fzoo_update_from_losses
from .optim import rademacher

# --------------------------------------------------------------------------------------
# Exercise checker
# --------------------------------------------------------------------------------------


def check_fzoo_update(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float], torch.Tensor],
) -> ExerciseVerdict:
    """Exercise check: a student's ``fn(l0, losses, directions, lr) -> Δ`` against
    FZOO's update rule.

    l0: () tensor, losses: (N,), directions: (N, d), lr: float; Δ: (d,).
    Tests random cases, the invariance under ``L → aL + b`` and the population std.
    Answers "not done yet" on the stub, "wrong: because ..." with a hint, or "correct".
    """
    gen = torch.Generator().manual_seed(1234)
    cases = []
    for k in range(5):
        n, d = 3 + k, 7 + 3 * k
        l0 = torch.rand((), generator=gen, dtype=torch.float64)
        losses = l0 + 0.1 * torch.randn(n, generator=gen, dtype=torch.float64)
        cases.append(
            (l0, losses, rademacher((n, d), gen, dtype=torch.float64), 0.01 * (k + 1))
        )

    def trial(fn):
        for l0, losses, u, lr in cases:
            d = u.shape[1]
            out = fn(l0.clone(), losses.clone(), u.clone(), lr)
            if not torch.is_tensor(out) or out.shape != (d,):
                raise AssertionError(
                    f"expected a tensor of shape ({d},), got "
                    f"{getattr(out, 'shape', type(out).__name__)}"
                )
            out = out.double()
            want = fzoo_update_from_losses(l0, losses, u, lr)
            if torch.allclose(out, -want, rtol=1e-6, atol=1e-12):
                raise AssertionError(
                    "the step points uphill: Δ is the change of θ, and "
                    "it should lower the loss"
                )
            sample = fzoo_update_from_losses(l0, losses, u, lr, std_mode="sample")
            if torch.allclose(out, sample, rtol=1e-6, atol=1e-12):
                raise AssertionError(
                    "close: the direction is right but the length is off "
                    "by a constant factor; compare your σ with the one in "
                    "the definition of the update"
                )
            if not torch.allclose(out, want, rtol=1e-6, atol=1e-12):
                raise AssertionError(
                    "Δ differs from FZOO's rule by up to "
                    f"{(out - want).abs().max():.3g} "
                    f"(N = {len(losses)}, d = {d}); reread the definition: "
                    "what is each "
                    "perturbed loss compared with, and what sets the step's scale?"
                )
            shifted = fn(3.0 * l0 + 5.0, 3.0 * losses + 5.0, u.clone(), lr)
            if not torch.allclose(shifted.double(), want, rtol=1e-6, atol=1e-12):
                raise AssertionError(
                    "Δ changed when the loss became 3·L + 5; FZOO's step "
                    "must not depend on the loss's scale or shift. Which "
                    "quantities in your update change with them?"
                )
        return "all 5 cases and the scale/shift invariance agree with FZOO's rule"

    return grade_exercise(fn, trial)
