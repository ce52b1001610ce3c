"""FZOO and MeZO: zeroth-order optimisers that learn from forward passes only
(chapter 03).

MeZO (Malladi et al., 2023) estimates a directional derivative from two forward passes,
``L(θ + εz)`` and ``L(θ − εz)`` with Gaussian ``z``, and steps along ``z``.
FZOO (Dang et al., ICLR 2026) draws ``N`` Rademacher directions ``u_i ∈ {±1}^d``, takes
one-sided differences against the unperturbed loss and divides by the standard deviation
of the ``N`` perturbed losses:

    l_0 = L(θ),  l_i = L(θ + ε u_i),  σ = std(l_1..l_N)
    θ ← θ − η Σ_i (l_i − l_0) / (N σ) · u_i                       (N + 1 forward passes)

which is the update rule of the official code (``DKmiyan/FZOO``, ``trainer.py``:
``zo_step`` and ``zo_update``; population std, no ``ε`` in the denominator because
``σ ∝ ε`` already).

Both optimisers are ``torch.optim.Optimizer`` subclasses driven by a closure that
returns the loss; both regenerate their perturbations from integer seeds instead of
storing them (MeZO's trick), so their extra memory is one parameter-sized temporary at a
time, and both count the closure calls (forward passes) in ``.forward_passes``.
:func:`batched_fzoo_step` evaluates the ``N`` perturbed losses in one
``torch.func.vmap`` call, the way to use a GPU.

The rest is what the chapter measures with: vectorised one-step estimators on a plain
function (:func:`fzoo_deltas`, :func:`mezo_deltas`), a flat-parameter MLP that makes
perturbing one tensor operation (:class:`FlatMLP`), a forward-pass-counting training
loop (:func:`train_counted`), and the exercise checker :func:`check_fzoo_update`.

Modules: ``optim`` (perturbations, FZOO, MeZO, the batched step), ``estimators``
(one-step estimators on a function), ``training`` (FlatMLP, batched multi-run training,
pass counting), ``exercises``.
"""

from .estimators import fzoo_deltas, fzoo_update_from_losses, mezo_deltas
from .exercises import check_fzoo_update
from .optim import (
    DISTS,
    FZOO,
    STD_MODES,
    MeZO,
    batched_fzoo_step,
    draw_seeds,
    perturb_,
    perturbations,
    rademacher,
)
from .training import (
    FlatMLP,
    flat_mlp_loss,
    fzoo_multi_step,
    mezo_multi_step,
    passes_to_reach,
    train_counted,
    train_many,
)

__all__ = [
    "DISTS",
    "FZOO",
    "FlatMLP",
    "MeZO",
    "STD_MODES",
    "batched_fzoo_step",
    "check_fzoo_update",
    "draw_seeds",
    "flat_mlp_loss",
    "fzoo_deltas",
    "fzoo_multi_step",
    "fzoo_update_from_losses",
    "mezo_deltas",
    "mezo_multi_step",
    "passes_to_reach",
    "perturb_",
    "perturbations",
    "rademacher",
    "train_counted",
    "train_many",
]
