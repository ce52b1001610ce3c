"""The chapter's coding exercise: its checker."""

from __future__ import annotations

import torch

from ..core import ExerciseVerdict, grade_exercise
from .task import conditional_cov, make_trials


def check_cond_cov(fn) -> ExerciseVerdict:
    """Exercise check: ``fn(trials, noise)`` must return Cov[x0 | stimulus] of the
    surrogate behaviour, (B, 2, 2), for trials from ``make_trials`` (each trial's swap
    probability in ``trials.swap_p``, the guess probability in ``trials.guess_prob``).
    Answers "not done yet" on the stub, "wrong, because …" with a hint, or "correct".
    Cheap: no training, a few closed-form comparisons."""
    cases = [
        (0.2, 0.05, 0.15, "flat"),
        (0.0, 0.0, 0.3, "flat"),
        (0.3, 0.0, 0.1, "flat"),
        (0.0, 0.4, 0.1, "flat"),
        (0.2, 0.05, 0.15, "distance"),
    ]

    def trial(fn):
        for ps, pg, noise, kind in cases:
            tr = make_trials(
                6, ps, pg, noise, kind, generator=torch.Generator().manual_seed(11)
            )
            got = fn(tr, noise)
            if not isinstance(got, torch.Tensor):
                raise AssertionError(f"return a torch.Tensor, got {type(got).__name__}")
            got = got.to(torch.float64)
            want = conditional_cov(tr, noise).to(torch.float64)
            if got.shape != want.shape:
                raise AssertionError(
                    f"the answer must have shape {tuple(want.shape)} "
                    f"(one 2×2 matrix per trial); got "
                    f"{tuple(got.shape)}"
                )
            if not torch.allclose(got, got.transpose(1, 2), atol=1e-6):
                raise AssertionError(
                    "your matrices are not symmetric; a covariance matrix is"
                )
            if torch.allclose(got, want, rtol=1e-4, atol=1e-6):
                continue
            where = (
                f"with swap_prob = {ps}, guess_prob = {pg}, noise = {noise}"
                f"{' (distance-dependent swaps)' if kind == 'distance' else ''}"
            )
            diff = got - want
            iso = diff[:, 0, 0]
            if torch.allclose(
                diff, iso[:, None, None] * torch.eye(2, dtype=diff.dtype), atol=1e-6
            ) and torch.allclose(iso, iso[:1].expand(6), atol=1e-6):
                hint = (
                    f" Your matrices are off by the same multiple of the identity "
                    f"on every trial ({float(iso[0]):+.4g}·I). Which parts of the "
                    "response do not depend on the colours shown, and how large "
                    "is each one's contribution?"
                )
            else:
                hint = (
                    " Compare with a Monte Carlo estimate: draw many responses to "
                    "one of these trials (repeat it with br.repeat_stimuli) and "
                    "take their sample covariance."
                )
            raise AssertionError(
                f"{where} your covariance is off by up to "
                f"{float(diff.abs().max()):.3g}.{hint}"
            )
        return "your covariance matches on five generator settings"

    return grade_exercise(fn, trial)
