"""Majority vote over simulated workers that exchange only gradient signs, and its fair
baseline: full-precision averaging of the same workers' gradients.

The message format is one bit per coordinate (:func:`pack_signs`): a worker cannot send
a zero, so a gradient entry that is exactly 0 travels as +1 (:func:`wire_signs`).
The simulation here and the real multi-process version in :mod:`.distributed` use the
same format, so the two agree bit for bit."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
from torch import nn

from .optim import ABSignSGD


def majority_vote(signs: torch.Tensor) -> torch.Tensor:
    """Server-side aggregation: ``sign(sum_m s_m)`` over the workers' sign vectors.

    signs: (M, ...) with entries in {-1, 0, +1}, one row per worker.
    Returns (...) in {-1, 0, +1} (0 only where the vote ties, which cannot happen for
    odd M and nonzero signs).
    """
    if not isinstance(signs, torch.Tensor):
        raise TypeError(
            f"signs must be a tensor of shape (M, ...), got {type(signs).__name__}"
        )
    if signs.ndim < 1 or signs.shape[0] < 1:
        raise ValueError(
            "signs must have a leading worker dimension M >= 1, got shape "
            f"{tuple(signs.shape)}"
        )
    if not torch.all((signs == 1) | (signs == -1) | (signs == 0)):
        raise ValueError("signs must contain only -1, 0 and +1")
    return torch.sign(signs.sum(dim=0))  # the majority's sign, per coordinate


def worker_block_gradients(
    model: nn.Module,
    block_params: Sequence[nn.Parameter],
    x: torch.Tensor,
    y: torch.Tensor,
    loss_fn: Callable = nn.functional.cross_entropy,
) -> list[torch.Tensor]:
    """Each worker's gradient of its own minibatch loss w.r.t. one block, in one
    vectorised call.

    x: (M, B, ...) -- M workers, B examples each; y: (M, B) (or (M, R, B) with x
    (M, R, B, d) for a :func:`replica_mlp` model and ``loss_fn=replica_loss``).
    Uses ``torch.func.vmap`` over workers and ``torch.func.grad`` w.r.t.
    the block's parameters only (the rest are constants, so nothing below the block is
    differentiated). Returns a list, one (M, *p.shape) tensor per parameter.
    """
    from torch.func import functional_call, grad, vmap

    if x.ndim < 2 or y.ndim < 2 or x.shape[: y.ndim] != y.shape:
        raise ValueError(
            "x must be (M, B, ...) and y (M, B) (y's shape a prefix of x's); "
            f"got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    ids = {id(p) for p in block_params}
    names = [n for n, p in model.named_parameters() if id(p) in ids]
    if len(names) != len(block_params):
        raise ValueError("every block parameter must be a parameter of model")
    frozen = {n: p.detach() for n, p in model.named_parameters() if id(p) not in ids}
    block = {n: p.detach() for n, p in model.named_parameters() if id(p) in ids}

    def loss_of_block(
        block_vals: dict, xb: torch.Tensor, yb: torch.Tensor
    ) -> torch.Tensor:
        return loss_fn(functional_call(model, {**frozen, **block_vals}, (xb,)), yb)

    # dict name -> (M, *shape)
    grads = vmap(grad(loss_of_block), in_dims=(None, 0, 0))(block, x, y)
    return [grads[n] for n in names]


def pack_signs(g: torch.Tensor) -> torch.Tensor:
    """A worker's message: one bit per coordinate (1 for g >= 0), packed 8 to a byte.

    g: any shape. Returns a uint8 tensor of ceil(numel/8) bytes -- what would go
        on the wire.
    """
    bits = (g.reshape(-1) >= 0).to(torch.uint8)  # (n,) 1 bit each
    pad = (-bits.numel()) % 8
    bits = torch.cat([bits, bits.new_zeros(pad)]).reshape(-1, 8)  # (ceil(n/8), 8)
    weights = torch.tensor(
        [128, 64, 32, 16, 8, 4, 2, 1], dtype=torch.uint8, device=g.device
    )
    return (bits * weights).sum(dim=1).to(torch.uint8)  # (ceil(n/8),) bytes


def wire_signs(g: torch.Tensor) -> torch.Tensor:
    """The signs a worker's 1-bit message carries: +1 where ``g >= 0``, -1 elsewhere.

    g: any shape; returns a tensor of g's shape and dtype with entries in {-1, +1}.
    This is exactly what :func:`unpack_signs` recovers from :func:`pack_signs`
    (0 travels as +1)."""
    return torch.where(g >= 0, 1.0, -1.0).to(g.dtype)


def unpack_signs(packed: torch.Tensor, numel: int) -> torch.Tensor:
    """Inverse of :func:`pack_signs`: (..., ceil(numel/8)) uint8 -> (..., numel) float32
    in {-1, +1}. Leading dimensions (e.g. one row per worker) are kept."""
    if not isinstance(packed, torch.Tensor) or packed.dtype != torch.uint8:
        raise TypeError("packed must be a uint8 tensor made by pack_signs")
    if isinstance(numel, bool) or not isinstance(numel, int) or numel < 0:
        raise ValueError(f"numel must be an int >= 0, got {numel!r}")
    if packed.shape[-1] != -(-numel // 8):
        raise ValueError(
            f"{numel} signs need {-(-numel // 8)} bytes, got {packed.shape[-1]}"
        )
    shifts = torch.arange(7, -1, -1, device=packed.device, dtype=torch.uint8)
    bits = (packed.unsqueeze(-1) >> shifts) & 1  # (..., bytes, 8)
    bits = bits.reshape(*packed.shape[:-1], -1)[..., :numel]  # (..., numel)
    return bits.to(torch.float32) * 2 - 1


def mv_step(
    opt: ABSignSGD,
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    loss_fn: Callable = nn.functional.cross_entropy,
) -> dict:
    """One step of ABSignSGD with majority vote over M simulated workers.

    Each worker computes the active block's gradient on its own minibatch (x:
    (M, B, ...), y: (M, B)) and sends only its signs, one bit each (:func:`wire_signs`);
    the server takes the majority and every worker applies
    ``x_block <- x_block - lr * vote`` (weight decay as in :class:`ABSignSGD`).
    Returns the bytes the workers upload: ``sign_bytes`` (all workers' packed signs) and
    ``fp32_bytes`` (the same gradients sent as float32, as :func:`average_step`
    sends them).
    """
    if not isinstance(opt, ABSignSGD):
        raise TypeError(f"opt must be an ABSignSGD, got {type(opt).__name__}")
    group = opt.param_groups[opt.active_block]
    params = group["params"]
    grads = worker_block_gradients(model, params, x, y, loss_fn)  # list of (M, *shape)
    sign_bytes = fp32_bytes = 0
    with torch.no_grad():
        for p, g in zip(params, grads):
            signs = wire_signs(g)  # (M, *shape) what workers send
            # count the packed bytes
            sign_bytes += sum(pack_signs(s).numel() for s in signs)
            fp32_bytes += g.to(torch.float32).numel() * 4
            p.grad = majority_vote(signs)  # the server's 1-bit reply
    opt.step()
    return {"sign_bytes": sign_bytes, "fp32_bytes": fp32_bytes}


def average_step(
    opt: ABSignSGD,
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    loss_fn: Callable = nn.functional.cross_entropy,
) -> dict:
    """The fair baseline for :func:`mv_step`: the same M workers and minibatches, but
    each sends its full fp32 block gradient; the server averages them and ABSignSGD
    steps on the sign of the average, ``x_block <- x_block - lr * sign(mean_m g_m)``.

    This is sign descent on the pooled batch of M*B samples: what the vote would do if
    communication were free. Returns ``fp32_bytes``, the bytes the workers upload.
    """
    if not isinstance(opt, ABSignSGD):
        raise TypeError(f"opt must be an ABSignSGD, got {type(opt).__name__}")
    params = opt.param_groups[opt.active_block]["params"]
    grads = worker_block_gradients(model, params, x, y, loss_fn)  # list of (M, *shape)
    fp32_bytes = 0
    with torch.no_grad():
        for p, g in zip(params, grads):
            fp32_bytes += g.to(torch.float32).numel() * 4
            p.grad = g.mean(0)  # the server's average
    opt.step()
    return {"fp32_bytes": fp32_bytes}


def sign_error_probability(p_wrong, n_workers: int) -> torch.Tensor:
    """P(majority of ``n_workers`` independent signs is wrong) when each is wrong w.p.
    ``p_wrong``.

    ``P = sum_{k > M/2} C(M, k) p^k (1-p)^(M-k)`` (ties for even M count half).
    p_wrong: float or tensor in [0, 1]; n_workers: int >= 1. Returns a float64 tensor
    shaped like p_wrong.
    """
    if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
        raise ValueError(f"n_workers must be an int >= 1, got {n_workers!r}")
    p = torch.as_tensor(p_wrong, dtype=torch.float64)
    if torch.any((p < 0) | (p > 1)):
        raise ValueError("p_wrong must lie in [0, 1]")
    m = n_workers
    total = torch.zeros_like(p)
    for k in range(m + 1):
        term = math.comb(m, k) * p**k * (1 - p) ** (m - k)
        if 2 * k > m:
            total = total + term
        elif 2 * k == m:
            total = total + 0.5 * term  # a tie is broken by a fair coin
    return total
