"""The chapter's experiment, as functions: build the toy (data, pretrained model, exact
p*), run one fine-tuner from the pretrained model while recording its exact law, and
summarise a set of runs (reward, diversity, stability)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

from ..core import seeded
from .diffusion import MaskedDenoiser, StateSpace, exact_distribution, train_denoiser
from .methods import finetune_ddpo, finetune_vidd
from .toy import (
    all_sequences,
    distribution_stats,
    markov_chain,
    markov_logprob,
    motif_reward_fn,
    sample_markov,
    soft_optimal,
    tv_distance,
)

# What each method name means. "VIDD" is the paper's kernel (per-state normaliser);
# "VIDD (code)" the official DNA loss (raw exp(v/α)); "VIDD, no refresh" is VIDD with
# its teacher frozen, the control for annealing; "frozen VIDD" the paper's "standard
# fine-tuning" (frozen teacher, roll-in from the pretrained model) and "frozen, w = 1"
# the same with the tilt removed. "VIDD (z)" is the official reward_norm='normal'
# (z-scored values: effective temperature α·std v), which this chapter's first
# design used.
METHODS = (
    "frozen VIDD",
    "frozen, w = 1",
    "VIDD",
    "VIDD (code)",
    "VIDD (z)",
    "VIDD, no refresh",
    "DDPO",
)
WEIGHTING = {
    "VIDD": "state",
    "VIDD (code)": "none",
    "VIDD (z)": "z",
    "VIDD, no refresh": "state",
}


@dataclass
class Toy:
    """Everything about one problem instance: exact laws over all 4**L strings."""

    length: int
    alpha: float
    motifs: tuple
    reward_fn: Callable[[torch.Tensor], torch.Tensor]
    pre: nn.Module
    space: StateSpace
    X: torch.Tensor  # (4**L, L) every string
    r_all: torch.Tensor  # (4**L,) float64 rewards
    p_data: torch.Tensor  # (4**L,) the Markov chain's law
    p_pre: torch.Tensor  # (4**L,) the pretrained model's exact law
    p_star: torch.Tensor  # (4**L,) p* ∝ p_pre·exp(r/α)
    pre_losses: list

    @property
    def e_pre(self) -> float:
        return float((self.p_pre * self.r_all).sum())

    @property
    def e_star(self) -> float:
        return float((self.p_star * self.r_all).sum())

    @property
    def tv_pre(self) -> float:
        return float(tv_distance(self.p_pre, self.p_star))


def make_toy(
    length: int,
    alpha: float,
    motifs: Sequence[str] = ("GA", "TC"),
    seed: int = 0,
    concentration: float = 1.0,
    hidden: int = 64,
    n_data: int = 20_000,
    pre_steps: int = 400,
    pre_batch: int = 128,
    device: torch.device | str = "cpu",
    generator: torch.Generator | None = None,
) -> Toy:
    """Draw the "natural DNA" chain (seeded by ``seed``), pretrain a denoiser on
    ``n_data`` strings from it, and compute the exact laws p_data, p_pre and p* at
    ``alpha``."""
    reward_fn = motif_reward_fn(motifs)
    gen = generator if generator is not None else torch.Generator().manual_seed(seed)
    init, trans = markov_chain(seed, concentration)
    X = all_sequences(length)
    r_all = reward_fn(X).double()
    p_data = markov_logprob(X, init, trans).exp()
    data = sample_markov(n_data, length, init, trans, gen)
    with seeded(seed):  # the denoiser's initial weights, from the seed alone
        pre = MaskedDenoiser(length, hidden).to(device)
    losses = train_denoiser(
        pre, data.to(device), pre_steps, pre_batch, lr=3e-3, generator=gen
    )
    pre.requires_grad_(False)
    space = StateSpace(length, device=device)
    with torch.no_grad():
        p_pre = exact_distribution(pre, space).cpu()
    p_pre = p_pre / p_pre.sum()  # float32 softmaxes: renormalise the last 1e-7
    p_star = soft_optimal(p_pre, r_all, alpha)
    return Toy(
        length,
        alpha,
        tuple(motifs),
        reward_fn,
        pre,
        space,
        X,
        r_all,
        p_data,
        p_pre,
        p_star,
        losses,
    )


def exact_law(model: nn.Module, space: StateSpace) -> torch.Tensor:
    with torch.no_grad():
        p = exact_distribution(model, space).cpu()
    return p / p.sum()


def run_method(
    toy: Toy,
    method: str,
    seed: int,
    updates: int,
    batch: int,
    lr: float,
    frozen_updates: int,
    frozen_batch: int,
    frozen_lr: float,
    refresh_every: int = 5,
    eval_every: int = 15,
    grad_clip: float | None = 1.0,
    n_unique: int = 1000,
) -> dict:
    """Fine-tune a copy of ``toy.pre`` with ``method`` (one of :data:`METHODS`)
    at ``seed``.

    Returns the final exact law ``p`` with :func:`distribution_stats` and ``tv`` to p*,
    and ``curve``, an array with one row per evaluation: (update, trajectories drawn,
    reward calls, E[r], TV to p*, p_max, E[#distinct in n_unique draws]).
    Row 0 is the pretrained model.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    g = torch.Generator().manual_seed(seed)  # every draw of the run comes from g
    model = copy.deepcopy(toy.pre).requires_grad_(True)
    s0 = distribution_stats(toy.p_pre, toy.r_all, n_unique)
    curve = [(0, 0, 0, s0["reward"], toy.tv_pre, s0["p_max"], s0["unique"])]
    drawn = {"n": 0}

    def record(u, calls):
        if (u + 1) % eval_every == 0:
            p = exact_law(model, toy.space)
            s = distribution_stats(p, toy.r_all, n_unique)
            curve.append(
                (
                    u + 1,
                    drawn["per"] * (u + 1),
                    calls,
                    s["reward"],
                    float(tv_distance(p, toy.p_star)),
                    s["p_max"],
                    s["unique"],
                )
            )

    common = dict(generator=g, callback=record, grad_clip=grad_clip)
    if method in ("frozen VIDD", "frozen, w = 1"):
        # the paper's "standard fine-tuning": teacher frozen, roll-in from the
        # pretrained model
        reward = (
            toy.reward_fn
            if method == "frozen VIDD"
            else (lambda x: torch.zeros(len(x)))
        )
        drawn["per"] = frozen_batch
        finetune_vidd(
            model,
            toy.pre,
            reward,
            frozen_updates,
            toy.alpha,
            frozen_batch,
            frozen_lr,
            refresh_every=0,
            beta_pre=1.0,
            normalise="state",
            **common,
        )
    elif method in WEIGHTING:
        drawn["per"] = batch
        finetune_vidd(
            model,
            toy.pre,
            toy.reward_fn,
            updates,
            toy.alpha,
            batch,
            lr,
            refresh_every=0 if method == "VIDD, no refresh" else refresh_every,
            beta_pre=0.0,
            normalise=WEIGHTING[method],
            **common,
        )
    else:
        drawn["per"] = batch
        finetune_ddpo(model, toy.reward_fn, updates, batch, lr, inner_steps=1, **common)
    p = exact_law(model, toy.space)
    return {
        "p": p,
        "curve": np.array(curve, dtype=float),
        **distribution_stats(p, toy.r_all, n_unique),
        "tv": float(tv_distance(p, toy.p_star)),
    }


def first_reach(curve: np.ndarray, level: float, column: int = 1) -> float:
    """The value of ``column`` (1: trajectories drawn, 2: reward calls, 0: updates) at
    the first evaluation whose reward reaches ``level``; ``inf`` if none does."""
    hit = np.nonzero(curve[:, 3] >= level)[0]
    return float(curve[hit[0], column]) if len(hit) else float("inf")


def stability(runs: Sequence[dict], collapse_p_max: float = 0.5) -> dict[str, float]:
    """Training stability of a set of runs (one per seed) of one method.

    ``reward_sd`` / ``unique_sd``: the standard deviation across seeds of the final
    reward and of the final E[#distinct]; ``drawdown``: the mean over seeds of the
    largest fall of the reward from its running maximum during training (0 for a
    monotone curve); ``collapses``: the fraction of runs in which one string ever held
    more than ``collapse_p_max`` of the mass.
    """
    final_r = np.array([run["reward"] for run in runs])
    final_u = np.array([run["unique"] for run in runs])
    draw = [
        float(np.max(np.maximum.accumulate(run["curve"][:, 3]) - run["curve"][:, 3]))
        for run in runs
    ]
    coll = [bool((run["curve"][:, 5] > collapse_p_max).any()) for run in runs]
    return {
        "reward_sd": float(final_r.std(ddof=1)) if len(runs) > 1 else 0.0,
        "unique_sd": float(final_u.std(ddof=1)) if len(runs) > 1 else 0.0,
        "drawdown": float(np.mean(draw)),
        "collapses": float(np.mean(coll)),
    }
