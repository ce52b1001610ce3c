"""GRPO's zero-advantage maths, PAD's selection rule (the paper's and the code's), and
the exercise's check. The advantage and the clipped surrogate live in
:mod:`iclr26.grpo`, which chapter 17 trains with too; the package re-exports them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..core import ExerciseVerdict, grade_exercise
from ..grpo import as_rewards, grpo_advantages


# ------------------------------------------------------------------------ GRPO maths
def zero_advantage_fraction(rewards: torch.Tensor) -> float:
    """Fraction of groups (rows of a (P, G) reward tensor) whose rewards all agree."""
    r = as_rewards(rewards)
    return (r == r[:, :1]).all(dim=1).float().mean().item()


def zero_advantage_theory(p_correct: torch.Tensor, group_size: int) -> torch.Tensor:
    """P(G Bernoulli(p) rewards are all equal) = p^G + (1-p)^G, elementwise."""
    if not isinstance(p_correct, torch.Tensor) or not p_correct.is_floating_point():
        raise TypeError(
            "p_correct must be a floating-point torch.Tensor of probabilities"
        )
    if (
        isinstance(group_size, bool)
        or not isinstance(group_size, int)
        or group_size < 2
    ):
        raise ValueError(f"group_size must be an int >= 2, got {group_size!r}")
    if ((p_correct < 0) | (p_correct > 1) | ~torch.isfinite(p_correct)).any():
        raise ValueError("p_correct must lie in [0, 1]")
    return p_correct**group_size + (1 - p_correct) ** group_size


# ----------------------------------------------------------------------------- PAD
def _finite_pos(x) -> bool:
    return (
        not isinstance(x, bool)
        and isinstance(x, (int, float))
        and math.isfinite(x)
        and x > 0
    )


@dataclass
class TauSchedule:
    """PAD's temperature, linear from ``start`` to ``end`` over ``steps`` steps."""

    start: float = 1.0
    end: float = 0.3
    steps: int = 100

    def __post_init__(self):
        if (
            isinstance(self.steps, bool)
            or not isinstance(self.steps, int)
            or self.steps < 1
        ):
            raise ValueError(f"TauSchedule needs an int steps >= 1, got {self.steps!r}")
        if not (_finite_pos(self.start) and _finite_pos(self.end)):
            raise ValueError("TauSchedule needs finite start > 0 and end > 0")

    def __call__(self, step: int) -> float:
        frac = min(max(step / max(self.steps - 1, 1), 0.0), 1.0)
        return self.start + (self.end - self.start) * frac


def pad_select(
    adv: torch.Tensor,
    t_low: float = 0.05,
    t_high: float = float("inf"),
    tau: float = 0.3,
    rho: float = 1.0,
    mode: str = "paper",
    alpha: float = 1.5,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Indices (1-d long tensor into ``adv.flatten()``) of the samples PAD trains on.

    N = adv.numel().

    * ``mode="paper"`` (Sec. 4.1.1 / Algorithm 1): the effective set is
      E = {i : t_low <= |A_i| <= t_high}; draw k' = min(ceil(rho * N), |E|) distinct
      samples (no replacement) with P(i) = softmax(|A_i| / tau) over E.
      With rho >= 1, k' = |E|: every effective sample is taken and PAD is a pure filter.
      Returns an empty tensor when E is empty (the caller skips the step).
    * ``mode="code"`` (our reading of the official repository's
      ``verl/trainer/ray_trainer.py``): the band is strict, E = {i : t_low < |A_i| <
      t_high}; draw int(rho * N) indices of the *whole batch* with replacement,
      P(i) ~ |A_i|^alpha on E and 0 outside (no temperature); when E is empty it
      returns the full batch (arange(N)). Its config uses t_low=0.03, t_high=0.97,
      rho=1.5, alpha=1.5.
    """
    if not isinstance(adv, torch.Tensor) or not adv.is_floating_point():
        raise TypeError("adv must be a floating-point torch.Tensor of advantages")
    if adv.numel() == 0 or not torch.isfinite(adv).all():
        raise ValueError("adv must be non-empty and finite")
    if mode not in ("paper", "code"):
        raise ValueError(f"mode must be 'paper' or 'code', got {mode!r}")
    if not (
        isinstance(t_low, (int, float))
        and isinstance(t_high, (int, float))
        and 0 <= t_low <= t_high
    ):  # NaN fails every comparison
        raise ValueError(
            f"need 0 <= t_low <= t_high, got t_low={t_low}, t_high={t_high}"
        )
    if not (_finite_pos(tau) and _finite_pos(rho) and _finite_pos(alpha)):
        raise ValueError(
            f"tau, rho and alpha must be finite and positive, got "
            f"tau={tau!r}, rho={rho!r}, alpha={alpha!r}"
        )
    a = adv.flatten().abs()
    if mode == "code":
        eff = (a > t_low) & (a < t_high)
        if not eff.any():
            return torch.arange(a.numel(), device=adv.device)
        w = torch.where(eff, a, torch.zeros_like(a)) ** alpha
        k = int(rho * a.numel())
        if k < 1:
            raise ValueError(f"int(rho * N) = 0 draws (rho={rho}, N={a.numel()})")
        pick = torch.multinomial(w.cpu(), k, replacement=True, generator=generator)
        return pick.to(adv.device)
    eff = torch.nonzero((a >= t_low) & (a <= t_high)).flatten()
    if eff.numel() == 0:
        return eff
    if mode == "paper":
        k = min(math.ceil(rho * a.numel()), eff.numel())
        # Gumbel-top-k: the k largest of log w + Gumbel noise are an exact draw without
        # replacement with P ~ softmax(|A|/tau); in log space it never underflows
        # (tau -> 0 gives the top-k |A|)
        u = torch.rand(eff.numel(), generator=generator).clamp_min(1e-12)
        keys = a[eff].cpu() / tau - torch.log(-torch.log(u))
        pick = keys.topk(k).indices
    return eff[pick.to(eff.device)]


# ------------------------------------------------------------------------ exercise
def check_advantages(fn) -> ExerciseVerdict:
    """Grade a student's ``fn(rewards: (P, G) tensor) -> (P, G) advantages`` against
    GRPO's group normalisation (unbiased std, eps = 1e-6)."""
    return grade_exercise(fn, _trial_advantages)


def _trial_advantages(fn) -> str:
    g = torch.Generator().manual_seed(0)
    cases = [
        torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]),
        (torch.rand(5, 8, generator=g) < 0.3).float(),
        torch.randn(3, 6, generator=g),
    ]
    for r in cases:
        want = grpo_advantages(r.double())
        got = fn(r.clone())
        assert isinstance(got, torch.Tensor), (
            f"return a torch.Tensor, not {type(got).__name__}"
        )
        assert got.is_floating_point(), (
            f"return floating-point advantages, not {got.dtype}"
        )
        got = got.detach().double()  # compare in float64, whatever dtype was returned
        assert got.shape == want.shape, (
            f"for rewards of shape {tuple(r.shape)} return one advantage per sample, "
            f"not shape {tuple(got.shape)}"
        )
        assert torch.isfinite(got).all(), (
            "a group whose rewards are all equal gave NaN or inf: what keeps the "
            "denominator away from 0?"
        )
        if not torch.allclose(
            got.sum(1), torch.zeros(len(r), dtype=torch.float64), atol=1e-4
        ):
            raise AssertionError(
                "the advantages of a group should sum to 0: subtract "
                "each group's own mean, not the batch's"
            )
        rd = r.double()
        centred = rd - rd.mean(1, keepdim=True)
        std_b = centred / (rd.std(1, unbiased=False, keepdim=True) + 1e-6)
        if torch.allclose(got, std_b, atol=1e-4) and not torch.allclose(
            got, want, atol=1e-4
        ):
            raise AssertionError(
                "close, but the scale is off by sqrt(G/(G-1)): which "
                "std denominator does GRPO's code use?"
            )
        assert torch.allclose(got, want, atol=1e-4), (
            f"for rewards {r.tolist()[:2]}... the advantages' scale is wrong: "
            "divide by each group's own spread"
        )
    return "your advantages match GRPO's group normalisation on binary and real rewards"
