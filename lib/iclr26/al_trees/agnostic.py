"""Noisy labels: disagreement-based active learning with multiplicative
confidence bounds.

The paper's second contribution is an active learner whose output has error at most
(1 + eps) OPT, a *multiplicative* guarantee, with polylogarithmic label complexity on
trees. Its text is not public (no code; only the abstract and the project page were
available), so this module builds the standard construction in that spirit, an analogue:
RobustCAL / A^2 (Hanneke's disagreement-based agnostic learner) on a finite
class, with either

* **relative-deviation** (Bernstein) bounds: h is dropped when its mistake count exceeds
  the leader's by more than sqrt(2 beta D) + beta, with D the number of labelled points
  where the two *disagree*. D is about dist(h, h_best) <= err(h) + err(h_best), so the
  radius shrinks with the error itself: this is what makes a (1 + eps) guarantee
  affordable when OPT is small (and an exact one, eps = 0, when OPT = 0);
* or **additive** (Hoeffding) bounds, radius sqrt(2 beta q) for q labels, which do not
  shrink with the error: the control.

The learner streams the pool once and asks for a label only inside DIS(V), V being the
hypotheses not yet dropped. Every pair of survivors agreed on every point skipped, so
their mistake counts on the *queried* points differ exactly as their pool errors do.

:func:`random_query_erm` is the passive control: the same number of labels, on random
points, and the empirical risk minimiser over the whole class.
"""

from __future__ import annotations

import math

import torch

from ..validate import as_float, as_int
from .core import VersionSpace, _check_labels, _space, hamming_to_columns

__all__ = ["noisy_labels", "pool_errors", "robust_cal", "random_query_erm"]


def noisy_labels(
    y: torch.Tensor, rate: float, generator: torch.Generator
) -> torch.Tensor:
    """y with exactly round(rate * n) labels flipped, at random points: (n,) bool."""
    if (
        not isinstance(y, torch.Tensor)
        or y.dtype != torch.bool
        or y.ndim != 1
        or y.numel() == 0
    ):
        raise TypeError("y must be a non-empty 1-D bool tensor")
    rate = as_float(rate, "rate", lo=0.0, hi=0.5, open_hi=True)
    n = y.numel()
    flip = torch.randperm(n, generator=generator)[: round(rate * n)].to(y.device)
    out = y.clone()
    out[flip] = ~out[flip]
    return out


def pool_errors(P: torch.Tensor | VersionSpace, y: torch.Tensor) -> torch.Tensor:
    """Pool error of every hypothesis against labels y: (H,) float64 fractions."""
    vs = P if isinstance(P, VersionSpace) else VersionSpace(P)
    n = vs.n_points
    if not isinstance(y, torch.Tensor) or y.dtype != torch.bool or y.shape != (n,):
        raise TypeError(f"y must be a bool tensor of shape ({n},)")
    return hamming_to_columns(vs.by_point, y).double() / n


def robust_cal(
    P: torch.Tensor | VersionSpace,
    y: torch.Tensor,
    order: torch.Tensor,
    delta: float = 0.05,
    bound: str = "relative",
    growth: float = 1.25,
) -> tuple[int, int, torch.Tensor]:
    """Disagreement-based agnostic active learning over a finite class, one pass
    over the pool.

    Stream ``order``; query x only if the surviving hypotheses disagree on x.
    After the q-th query, for q on a geometric schedule (q = 1, 2, ...
    growing by ``growth``; checking at every query would cost q * H each time), drop
    every survivor h whose mistakes on the queried points exceed the leader's
    (fewest mistakes) by more than the radius:

    * ``bound="relative"``: sqrt(2 beta D(h)) + beta, D(h) = queried points where h and
      the leader disagree (a Bernstein bound on the difference of two error counts);
    * ``bound="additive"``: sqrt(2 beta q) (Hoeffding on q differences in [-1, 1]).

    beta = ln(H * checks / delta), a union bound over hypotheses and checks, so with
    probability >= 1 - delta the best hypothesis is never dropped.
    At the end the survivors agree on every unqueried point, and the output is the
    survivor with fewest mistakes.

    P: (H, n) bool or a :class:`VersionSpace` (reset); y: (n,) bool labels, need not be
    realisable; order: (n,) permutation. Returns (labels asked, index of the output
    hypothesis, (n,) bool mask of queried points).
    """
    vs = _space(P)
    n, H = vs.n_points, vs.n_hypotheses
    _check_labels(n, y, order)
    delta = as_float(delta, "delta", lo=0.0, hi=1.0, open_lo=True, open_hi=True)
    if bound not in ("relative", "additive"):
        raise ValueError(f"bound must be 'relative' or 'additive', got {bound!r}")
    growth = as_float(growth, "growth", lo=1.0, open_lo=True)
    checks = math.ceil(math.log(max(n, 2)) / math.log(growth)) + 2
    beta = math.log(H * checks / delta)
    alive = torch.arange(H, device=vs.by_point.device)  # (H_alive,)
    # on queried pts
    mistakes = torch.zeros(H, dtype=torch.float32, device=vs.by_point.device)
    queried = torch.zeros(n, dtype=torch.bool, device=vs.by_point.device)
    q_list: list[int] = []
    next_check = 1.0
    for i in order.tolist():
        row = vs.by_point[i, alive]  # (H_alive,) what the survivors say
        if bool(row.all()) or not bool(row.any()):
            continue  # every survivor agrees: no label needed
        queried[i] = True
        q_list.append(i)
        mistakes[alive] += (row != y[i]).to(torch.float32)
        q = len(q_list)
        if q >= next_check:
            next_check = max(next_check * growth, q + 1)
            alive = _eliminate(vs, alive, mistakes, q_list, beta, bound)
    alive = _eliminate(vs, alive, mistakes, q_list, beta, bound) if q_list else alive
    best = alive[int(mistakes[alive].argmin())]
    return len(q_list), int(best), queried


def _eliminate(
    vs: VersionSpace,
    alive: torch.Tensor,
    mistakes: torch.Tensor,
    q_list: list[int],
    beta: float,
    bound: str,
) -> torch.Tensor:
    m = mistakes[alive]  # (H_alive,)
    lead = int(m.argmin())
    if bound == "relative":
        # (q, H_alive) survivors' labels on queried points
        L = vs.by_point[q_list][:, alive]
        D = (L != L[:, lead : lead + 1]).sum(0).to(torch.float32)  # (H_alive,)
        radius = torch.sqrt(2 * beta * D) + beta
    else:
        radius = torch.full_like(m, math.sqrt(2 * beta * len(q_list)))
    return alive[m - m[lead] <= radius]


def random_query_erm(
    P: torch.Tensor | VersionSpace, y: torch.Tensor, order: torch.Tensor, budget: int
) -> int:
    """Passive learning with a label budget: label the first ``budget`` points of
    ``order`` and return the index of an empirical risk minimiser over the whole class
    (ties go to the lowest index)."""
    vs = _space(P)
    n = vs.n_points
    _check_labels(n, y, order)
    budget = as_int(budget, "budget", lo=0, hi=n)
    idx = order[:budget].to(vs.by_point.device)
    L = vs.by_point[idx].to(torch.float32)  # (budget, H)
    target = y[idx].to(torch.float32)[:, None]  # (budget, 1)
    mistakes = (L - target).abs().sum(0)  # (H,)
    return int(mistakes.argmin())
