"""A flat-parameter MLP, many independent runs trained as one batched computation, and
forward-pass-counting training loops."""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from ..validate import as_int
from .estimators import fzoo_update_from_losses
from .optim import FZOO, MeZO, need_generator, rademacher

# --------------------------------------------------------------------------------------
# A flat-parameter MLP and a forward-pass-counting training loop
# --------------------------------------------------------------------------------------


class FlatMLP(nn.Module):
    """An MLP whose weights live in ONE parameter vector ``theta`` (d,), so that
    perturbing the whole network is one tensor operation. Built from a ``nn.Sequential``
    of ``nn.Linear`` and activation modules (e.g. ``iclr26.harness.mlp``), whose weights
    it copies."""

    def __init__(self, seq: nn.Sequential):
        super().__init__()
        if not isinstance(seq, nn.Sequential):
            raise TypeError(f"expected an nn.Sequential, got {type(seq).__name__}")
        # ("linear", w_slice, w_shape, b_slice) or ("act", module)
        self.layout: list = []
        chunks, offset = [], 0
        for m in seq:
            if isinstance(m, nn.Linear):
                w = m.weight.detach().reshape(-1)
                b = m.bias.detach() if m.bias is not None else None
                wsl = (offset, offset + w.numel())
                offset += w.numel()
                chunks.append(w)
                bsl = None
                if b is not None:
                    bsl = (offset, offset + b.numel())
                    offset += b.numel()
                    chunks.append(b)
                self.layout.append(("linear", wsl, tuple(m.weight.shape), bsl))
            elif len(list(m.parameters())) == 0:
                self.layout.append(("act", m))
            else:
                raise TypeError(
                    "FlatMLP supports Linear and parameter-free layers, got "
                    f"{type(m).__name__}"
                )
        self.theta = nn.Parameter(torch.cat(chunks).clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (n, d_in) → logits (n, d_out)."""
        for entry in self.layout:
            if entry[0] == "linear":
                _, (a, b), shape, bsl = entry
                bias = self.theta[bsl[0] : bsl[1]] if bsl is not None else None
                x = nn.functional.linear(x, self.theta[a:b].view(shape), bias)
            else:
                x = entry[1](x)
        return x


def train_counted(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    batches: torch.Tensor,
    budget: int,
    eval_every: int,
    backward_cost: int = 2,
    diverge_factor: float = 10.0,
) -> dict:
    """Train on minibatches until ``budget`` forward passes are spent; log the
    full-data loss.

    x: (n, d_in), y: (n,), batches: (steps, batch_size) indices
    (``harness.batch_indices``). A zeroth-order optimiser (:class:`FZOO`, :class:`MeZO`)
    is charged its closure calls; any other optimiser gets true gradients and is charged
    ``1 + backward_cost`` forward-pass equivalents per step. The full-data cross-entropy
    is logged every ``eval_every`` passes (those evaluations are measurement and are not
    charged). A run whose loss becomes non-finite or exceeds ``diverge_factor`` × its
    initial value stops and is marked diverged.

    Returns ``{"passes": (k,) int64, "loss": (k,) float64, "diverged": bool}``.
    """
    if budget < 1 or eval_every < 1:
        raise ValueError(
            f"budget and eval_every must be >= 1, got {budget}, {eval_every}"
        )
    ce = nn.functional.cross_entropy
    zeroth_order = isinstance(optimizer, (FZOO, MeZO))

    def full_loss() -> float:
        with torch.no_grad():
            return float(ce(model(x), y))

    passes, next_eval = 0, eval_every
    log_p, log_l = [0], [full_loss()]
    initial, diverged = log_l[0], False
    for idx in batches:
        xb, yb = x[idx], y[idx]
        if zeroth_order:
            optimizer.step(lambda: ce(model(xb), yb))  # noqa: B023 called this iteration
            passes = optimizer.forward_passes
        else:
            optimizer.zero_grad(set_to_none=True)
            ce(model(xb), yb).backward()
            optimizer.step()
            passes += 1 + backward_cost
        if passes >= next_eval or passes >= budget:
            loss = full_loss()
            log_p.append(passes)
            log_l.append(loss)
            next_eval += eval_every
            if not math.isfinite(loss) or loss > diverge_factor * initial:
                diverged = True
                break
        if passes >= budget:
            break
    return dict(
        passes=torch.tensor(log_p),
        loss=torch.tensor(log_l, dtype=torch.float64),
        diverged=diverged,
    )


def passes_to_reach(passes: torch.Tensor, loss: torch.Tensor, target: float) -> float:
    """The first logged forward-pass count at which ``loss <= target``
    (``inf`` if never).

    passes, loss: (k,) as returned by :func:`train_counted`.
    """
    if passes.shape != loss.shape or passes.dim() != 1:
        raise ValueError(
            f"passes and loss must be 1-d of equal length, got {tuple(passes.shape)}, "
            f"{tuple(loss.shape)}"
        )
    hit = torch.nonzero(loss <= target)
    return float(passes[hit[0, 0]]) if hit.numel() else math.inf


METHODS = ("fzoo", "fzoo-nostd", "mezo", "adam")


# --------------------------------------------------------------------------------------
# Many runs at once: R independent runs (seeds × learning rates) as one batched
# computation
# --------------------------------------------------------------------------------------


def flat_mlp_loss(
    model: FlatMLP, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """Mean cross-entropy of ``model``'s architecture at many parameter vectors at once.

    theta: (R, K, d) -- R runs, K parameter vectors each (e.g. K perturbations);
    x: (R or 1, B, d_in), y: (R or 1, B) -- each run's minibatch (or one shared batch).
    Returns (R, K): the loss of every vector on its run's batch.
    Same numbers as ``model`` itself.
    """
    if theta.dim() != 3 or theta.shape[-1] != model.theta.numel():
        raise ValueError(
            f"theta must be (R, K, d={model.theta.numel()}), got {tuple(theta.shape)}"
        )
    if x.dim() != 3 or y.shape != x.shape[:2]:
        raise ValueError(
            f"x must be (R, B, d_in) and y (R, B), got {tuple(x.shape)}, "
            f"{tuple(y.shape)}"
        )
    h = x.unsqueeze(1).to(theta.dtype)  # (R|1, 1, B, d_in)
    lead = theta.shape[:2]
    for entry in model.layout:
        if entry[0] == "linear":
            _, (a, b), (d_out, d_in), bsl = entry
            w = theta[..., a:b].reshape(*lead, d_out, d_in)  # (R, K, d_out, d_in)
            h = h @ w.transpose(-1, -2)  # (R, K, B, d_out)
            if bsl is not None:
                # + bias (R, K, 1, d_out)
                h = h + theta[..., bsl[0] : bsl[1]].unsqueeze(-2)
        else:
            h = entry[1](h)
    logp = torch.log_softmax(h, dim=-1)  # (R, K, B, C)
    idx = y.unsqueeze(1).unsqueeze(-1).expand(*h.shape[:-1], 1)  # (R, K, B, 1)
    return -logp.gather(-1, idx).squeeze(-1).mean(-1)  # (R, K)


def _check_runs(theta: torch.Tensor, lr: torch.Tensor, eps: float) -> None:
    if not torch.is_tensor(theta) or theta.dim() != 2:
        raise ValueError(
            f"theta must be a (R, d) tensor, got {getattr(theta, 'shape', type(theta))}"
        )
    if not torch.is_tensor(lr) or lr.shape != theta.shape[:1]:
        raise ValueError(
            f"lr must be a (R,) tensor for theta (R={theta.shape[0]}, d), got "
            f"{getattr(lr, 'shape', type(lr).__name__)}"
        )
    if not bool(torch.isfinite(lr).all()) or bool((lr < 0).any()):
        raise ValueError("lr must be finite and >= 0 for every run")
    if not (
        isinstance(eps, (int, float))
        and not isinstance(eps, bool)
        and eps > 0
        and math.isfinite(eps)
    ):
        raise ValueError(f"eps must be a finite number > 0, got {eps!r}")


def fzoo_multi_step(
    loss_fn: Callable[[torch.Tensor], torch.Tensor],
    theta: torch.Tensor,
    lr: torch.Tensor,
    eps: float,
    n_perturb: int,
    generator: torch.Generator | None = None,
    std_mode: str = "population",
    u: torch.Tensor | None = None,
    normalise: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One FZOO step for R independent runs. loss_fn: (R, K, d) → (R, K); theta: (R, d);
    lr: (R,).

    ``u`` (R, N, d) may be given (to replay :class:`FZOO`'s perturbations); else it is
    drawn. Costs ``N + 1`` forward passes per run. Returns (new theta (R, d), l_0 (R,)).

    ``normalise=False`` is the ablation of FZOO's σ: the same N one-sided differences
    averaged into a plain gradient estimate, ``Δ = −η Σ_i (l_i − l_0)/(N ε) · u_i`` (its
    step grows with the loss's scale, as MeZO's does).
    """
    _check_runs(theta, lr, eps)
    r, d = theta.shape
    if u is None:
        as_int(n_perturb, "n_perturb", lo=2)
        need_generator(generator, "fzoo_multi_step without u")
        # (R, N, d)
        u = rademacher((r, n_perturb, d), generator, theta.device, theta.dtype)
    if u.dim() != 3 or u.shape[0] != r or u.shape[2] != d or u.shape[1] < 2:
        raise ValueError(f"u must be (R={r}, N >= 2, d={d}), got {tuple(u.shape)}")
    losses = loss_fn(theta.unsqueeze(1) + eps * u)  # (R, N)  l_i
    l0 = loss_fn(theta.unsqueeze(1))[:, 0]  # (R,)    l_0
    if normalise:
        # (R, d)  −Σ c_i u_i
        step = fzoo_update_from_losses(l0, losses, u, 1.0, std_mode)
    else:
        coeffs = (losses - l0.unsqueeze(-1)) / (u.shape[1] * eps)  # (R, N)
        step = -torch.einsum("rn,rnd->rd", coeffs, u)  # (R, d)
    return theta + lr.unsqueeze(-1) * step, l0


def mezo_multi_step(
    loss_fn: Callable[[torch.Tensor], torch.Tensor],
    theta: torch.Tensor,
    lr: torch.Tensor,
    eps: float,
    generator: torch.Generator | None = None,
    z: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One MeZO step for R independent runs (2 forward passes each).
    Returns (new theta, L(θ+εz))."""
    _check_runs(theta, lr, eps)
    r, d = theta.shape
    if z is None:
        need_generator(generator, "mezo_multi_step without z")
        z = torch.randn(
            (r, d), generator=generator, device=theta.device, dtype=theta.dtype
        )  # (R, d)
    pm = loss_fn(torch.stack([theta + eps * z, theta - eps * z], dim=1))  # (R, 2)
    g = (pm[:, 0] - pm[:, 1]) / (2 * eps)  # (R,)
    return theta - (lr * g).unsqueeze(-1) * z, pm[:, 0]


def train_many(
    method: str,
    model: FlatMLP,
    theta0: torch.Tensor,
    lr: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int,
    budget: int,
    eval_every: int,
    generator: torch.Generator,
    eps: float = 1e-3,
    n_perturb: int = 8,
    backward_cost: int = 2,
    diverge_factor: float = 10.0,
    dev: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> dict:
    """Train R runs of ``method`` side by side, counting forward passes.

    ``method``: "fzoo", "mezo", "adam", or "fzoo-nostd" (FZOO's N one-sided differences
    without the division by σ: the ablation of FZOO's normalisation, same cost as FZOO).

    theta0: (R, d) initial parameters, lr: (R,), x: (n, d_in), y: (n,).
    Each run draws its own minibatches of ``batch_size`` (uniformly, with replacement).
    FZOO costs N + 1 passes per step, MeZO 2, Adam (true gradients) 1 +
    ``backward_cost``; ``budget`` must buy at least one step. The full-data loss of
    every run is logged every ``eval_every`` passes (not charged).
    A run whose loss turns non-finite or exceeds ``diverge_factor`` × its initial loss
    is frozen and marked diverged. ``generator`` must live on ``theta0``'s device (it
    draws the minibatches and the perturbations).

    ``dev = (x_dev (m, d_in), y_dev (m,))``, a validation split, adds the official
    scripts' checkpoint selection: at every logged point (not the initial one) each
    run's dev accuracy is measured and the parameters with the best one so far are
    kept (the first of equal ones, as a trainer that saves on improvement does).

    Returns ``{"passes": (k,), "loss": (k, R) float64 (inf after divergence),
    "diverged": (R,) bool, "theta": (R, d) final parameters}``, and with ``dev`` also
    ``"dev_acc": (k, R)`` (row 0: the initial parameters), ``"best_theta": (R, d)``,
    ``"best_dev": (R,)`` and ``"best_passes": (R,)`` (where each best one was logged).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not isinstance(model, FlatMLP):
        raise TypeError(f"model must be a FlatMLP, got {type(model).__name__}")
    _check_runs(theta0, lr, eps)
    if theta0.shape[1] != model.theta.numel():
        raise ValueError(
            f"theta0 must be (R, d={model.theta.numel()}), got {tuple(theta0.shape)}"
        )
    if x.dim() != 2 or y.shape != x.shape[:1] or x.shape[0] < 1:
        raise ValueError(
            f"x must be (n >= 1, d_in) and y (n,), got {tuple(x.shape)}, "
            f"{tuple(y.shape)}"
        )
    for name, value, low in [
        ("batch_size", batch_size, 1),
        ("budget", budget, 1),
        ("eval_every", eval_every, 1),
        ("n_perturb", n_perturb, 2),
        ("backward_cost", backward_cost, 0),
    ]:
        as_int(value, name, lo=low)  # n_perturb = 1: σ = 0 and a frozen run
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator, got {type(generator).__name__}"
        )
    if not (isinstance(diverge_factor, (int, float)) and diverge_factor > 0):
        raise ValueError(f"diverge_factor must be a number > 0, got {diverge_factor!r}")
    if dev is not None:
        if not isinstance(dev, (tuple, list)) or len(dev) != 2:
            raise TypeError("dev must be a pair (x_dev, y_dev) of tensors")
        x_dev, y_dev = dev
        if (
            not torch.is_tensor(x_dev)
            or not torch.is_tensor(y_dev)
            or x_dev.dim() != 2
            or x_dev.shape[1] != x.shape[1]
            or y_dev.shape != x_dev.shape[:1]
            or x_dev.shape[0] < 1
        ):
            raise ValueError(
                f"dev must be (x_dev (m >= 1, d_in={x.shape[1]}), y_dev (m,)), got "
                f"{tuple(getattr(x_dev, 'shape', ()))}, "
                f"{tuple(getattr(y_dev, 'shape', ()))}"
            )
    per_step = {
        "fzoo": n_perturb + 1,
        "fzoo-nostd": n_perturb + 1,
        "mezo": 2,
        "adam": 1 + backward_cost,
    }[method]
    steps = budget // per_step
    if steps < 1:
        raise ValueError(
            f"budget {budget} buys no step of {method} ({per_step} passes each)"
        )
    r, n = theta0.shape[0], x.shape[0]
    full = lambda th: flat_mlp_loss(
        model, th.unsqueeze(1), x.unsqueeze(0), y.unsqueeze(0)
    )[:, 0]  # (R,)
    theta = theta0.detach().clone()
    if (
        method == "adam"
    ):  # Adam is elementwise, so R runs in one (R, d) tensor stay independent
        if bool((lr == lr[0]).all()):
            rows = [theta0.detach().clone().requires_grad_(True)]  # one (R, d) tensor
            adam = torch.optim.Adam(rows, lr=float(lr[0]))
        else:  # different learning rates: one parameter group per run
            rows = [theta0[i].detach().clone().requires_grad_(True) for i in range(r)]
            adam = torch.optim.Adam(
                [{"params": [p], "lr": float(lr[i])} for i, p in enumerate(rows)]
            )

    def dev_accuracy(th: torch.Tensor) -> torch.Tensor:  # (R, d) → (R,)
        logits = torch.func.vmap(
            lambda t: torch.func.functional_call(model, {"theta": t}, (x_dev,))
        )(th)  # (R, m, C)
        return (logits.argmax(-1) == y_dev).double().mean(-1)

    with torch.no_grad():
        initial = full(theta)
        if dev is not None:
            log_dev = [dev_accuracy(theta)]
            best_dev = torch.full((r,), -math.inf, dtype=torch.float64)
            best_theta = theta.clone()
            best_passes = torch.zeros(r, dtype=torch.int64)
    log_p, log_l = [0], [initial.double()]
    alive = torch.ones(r, dtype=torch.bool)
    diverged = torch.zeros(r, dtype=torch.bool)
    next_eval = eval_every
    for step in range(1, steps + 1):
        idx = torch.randint(
            0, n, (r, batch_size), generator=generator, device=generator.device
        ).to(x.device)
        # (R, K, d) → (R, K)
        loss_fn = lambda th: flat_mlp_loss(model, th, x[idx], y[idx])  # noqa: B023 called this iteration
        if method == "adam":
            adam.zero_grad(set_to_none=True)
            stacked = rows[0] if len(rows) == 1 else torch.stack(rows)  # (R, d)
            loss_fn(stacked.unsqueeze(1)).sum().backward()
            adam.step()
            with torch.no_grad():
                new = (rows[0] if len(rows) == 1 else torch.stack(rows)).detach()
        else:
            with torch.no_grad():
                if method in ("fzoo", "fzoo-nostd"):
                    new, _ = fzoo_multi_step(
                        loss_fn,
                        theta,
                        lr,
                        eps,
                        n_perturb,
                        generator,
                        normalise=method == "fzoo",
                    )
                else:
                    new, _ = mezo_multi_step(loss_fn, theta, lr, eps, generator)
        with torch.no_grad():
            theta = torch.where(alive.unsqueeze(-1), new, theta)  # frozen once diverged
        passes = step * per_step
        if passes >= next_eval or step == steps:
            with torch.no_grad():
                cur = full(theta).double()
            bad = alive & (
                ~torch.isfinite(cur) | (cur > diverge_factor * initial.double())
            )
            diverged |= bad
            alive &= ~bad
            log_p.append(passes)
            log_l.append(torch.where(diverged, torch.full_like(cur, math.inf), cur))
            next_eval += eval_every
            if dev is not None:
                with torch.no_grad():
                    acc = dev_accuracy(theta)
                log_dev.append(acc)
                better = alive & (acc > best_dev)
                best_dev = torch.where(better, acc, best_dev)
                best_theta = torch.where(better.unsqueeze(-1), theta, best_theta)
                best_passes = torch.where(better, passes, best_passes)
    out = dict(
        passes=torch.tensor(log_p),
        loss=torch.stack(log_l),
        diverged=diverged,
        theta=theta.detach(),
    )
    if dev is not None:
        out.update(
            dev_acc=torch.stack(log_dev),
            best_theta=best_theta.detach(),
            best_dev=best_dev,
            best_passes=best_passes,
        )
    return out
