"""The optimisers: ABSignSGD (block sign descent, no state) and BlockAdam (the
block-wise Adam baseline)."""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import torch
from torch import nn

from ..validate import as_float
from .schedules import DepthBiasedSchedule


def _check_blocks(blocks) -> list[list[nn.Parameter]]:
    if not isinstance(blocks, (list, tuple)) or len(blocks) == 0:
        raise TypeError(
            "blocks must be a non-empty list of lists of parameters (one list per "
            f"block), got {type(blocks).__name__}"
        )
    if any(isinstance(b, torch.Tensor) for b in blocks):
        # A flat list of tensors would silently become one block per tensor (a weight
        # and its bias in different blocks): refuse it and say how to build blocks.
        raise TypeError(
            "blocks must be a list of lists of parameters, one inner list per "
            "block; got a flat list of tensors. Use [list(model.parameters())] "
            "for a single block, or linear_blocks(model) for one per layer"
        )
    out, seen = [], set()
    for b, block in enumerate(blocks):
        if not isinstance(block, (list, tuple)):
            raise TypeError(
                f"block {b} must be a list or tuple of parameters, got "
                f"{type(block).__name__}"
            )
        params = list(block)
        if not params:
            raise ValueError(f"block {b} is empty")
        for p in params:
            if not isinstance(p, torch.Tensor):
                raise TypeError(
                    f"block {b} holds a {type(p).__name__}, expected tensors/parameters"
                )
            if id(p) in seen:
                raise ValueError(
                    f"a parameter appears in more than one block (again in block {b})"
                )
            seen.add(id(p))
        out.append(params)
    return out


def _check_schedule(schedule, n_blocks: int):
    if not callable(schedule):
        raise TypeError(
            "schedule must be callable with no arguments, returning a block index"
        )
    if getattr(schedule, "n_blocks", n_blocks) != n_blocks:
        raise ValueError(
            f"schedule is for {schedule.n_blocks} blocks but {n_blocks} blocks were "
            "given"
        )
    return schedule


class _BlockOptimizer(torch.optim.Optimizer):
    """Shared machinery: one param group per block, one active block, gradients
    only there."""

    def __init__(self, blocks, defaults: dict, schedule):
        blocks = _check_blocks(blocks)
        defaults["lr"] = as_float(defaults["lr"], "lr", lo=0.0, open_lo=True)
        if schedule is None:
            schedule = DepthBiasedSchedule(len(blocks))
        self.schedule = _check_schedule(schedule, len(blocks))
        super().__init__([{"params": b} for b in blocks], defaults)
        self.active_block = -1
        self._activate(self._next_block())

    def _next_block(self) -> int:
        block = self.schedule()
        if not isinstance(block, int) or not 0 <= block < len(self.param_groups):
            raise ValueError(
                f"schedule returned {block!r}, expected an int in [0, "
                f"{len(self.param_groups)})"
            )
        return block

    def _activate(self, block: int) -> None:
        """Make ``block`` the only one with ``requires_grad``; drop every other block's
        gradient."""
        for b, group in enumerate(self.param_groups):
            for p in group["params"]:
                p.requires_grad_(b == block)
                if b != block:
                    p.grad = None
        self.active_block = block

    def _active_params_with_grad(self) -> list[nn.Parameter]:
        """The active block's parameters that have a gradient; none at all is an error,
        so that a ``step()`` without a backward pass cannot silently advance the
        schedule."""
        params = [
            p
            for p in self.param_groups[self.active_block]["params"]
            if p.grad is not None
        ]
        if not params:
            raise ValueError(
                f"step() found no gradient on the active block "
                f"{self.active_block}: call loss.backward() (or set .grad) "
                "before step(); the schedule was not advanced"
            )
        return params

    @property
    def n_blocks(self) -> int:
        return len(self.param_groups)


class ABSignSGD(_BlockOptimizer):
    """Arbitrary-order block SignSGD: per step, the active block moves by
    ``-lr * sign(grad)``.

    blocks: list of parameter lists, block 0 nearest the input (this is what the
        depth-biased schedule's ``tau`` assumes). schedule: callable returning the next
        block index (default :class:`DepthBiasedSchedule` with ``c = 10``).
        weight_decay: decoupled, applied before the sign step as in the official code.

    Use it like any optimiser -- ``loss.backward(); opt.step(); opt.zero_grad()`` -- but
    note that ``step`` also chooses the next block and sets ``requires_grad`` so that
    the *next* forward pass only builds the graph needed for that block.
    The optimiser state is empty, always.
    """

    def __init__(
        self,
        blocks: Sequence[Iterable[nn.Parameter]],
        lr: float = 1e-3,
        schedule=None,
        weight_decay: float = 0.0,
    ):
        weight_decay = as_float(weight_decay, "weight_decay", lo=0.0)
        super().__init__(blocks, dict(lr=lr, weight_decay=weight_decay), schedule)

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        group = self.param_groups[self.active_block]
        lr, wd = group["lr"], group["weight_decay"]
        for p in self._active_params_with_grad():
            if wd != 0:
                p.mul_(1 - lr * wd)  # x <- x - lr * wd * x
            p.add_(torch.sign(p.grad), alpha=-lr)  # x <- x - lr * sign(g)
        self._activate(self._next_block())
        return loss


class BlockSGD(_BlockOptimizer):
    """Block gradient descent without the sign: the active block moves by
    ``-lr * grad``.

    The control for the sign update: memoryless and on the same schedule as
    :class:`ABSignSGD`, but every coordinate moves in proportion to its gradient instead
    of by exactly ``lr``.
    """

    def __init__(
        self, blocks: Sequence[Iterable[nn.Parameter]], lr: float = 1e-2, schedule=None
    ):
        super().__init__(blocks, dict(lr=lr), schedule)

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        lr = self.param_groups[self.active_block]["lr"]
        for p in self._active_params_with_grad():
            p.add_(p.grad, alpha=-lr)  # x <- x - lr * g
        self._activate(self._next_block())
        return loss


class BlockAdam(_BlockOptimizer):
    """Block-wise Adam on the same schedule: the baseline the memoryless sign update is
    compared to.

    reset_on_switch=False keeps each block's moments (m, v) across visits, so they go
    stale while the block waits and, once every block has been visited, the state is as
    large as Adam's (8 bytes per fp32 parameter). reset_on_switch=True frees the moments
    whenever the active block changes (BAdam style): the state is at most 8 bytes per
    parameter of one block. Bias correction counts steps per block.
    The step counter is a Python int, so the state bytes are exactly the moments.

    BAdam (Luo et al., NeurIPS 2024; official code ``Ledzy/BAdam``, ``BlockOptimizer``)
    is ``BlockAdam(blocks, lr, schedule=BAdamSchedule(n, switch_every=K),
    reset_on_switch=True)``:
    K consecutive Adam steps on one block (``switch_block_every``, 50 in the code's
    default), the moments cleared at every switch, blocks in descending, ascending or
    random order.
    """

    def __init__(
        self,
        blocks: Sequence[Iterable[nn.Parameter]],
        lr: float = 1e-3,
        schedule=None,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        reset_on_switch: bool = False,
    ):
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"betas must lie in [0, 1), got {betas}")
        if not eps > 0:
            raise ValueError(f"eps must be > 0, got {eps}")
        self.reset_on_switch = bool(reset_on_switch)
        super().__init__(blocks, dict(lr=lr, betas=betas, eps=eps), schedule)

    def _activate(self, block: int) -> None:
        if self.reset_on_switch and block != self.active_block:
            # forget every moment: only the active block will hold any
            self.state.clear()
        super()._activate(block)

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        group = self.param_groups[self.active_block]
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        for p in self._active_params_with_grad():
            st = self.state[p]
            if not st:
                st["step"] = 0
                st["m"] = torch.zeros_like(p)
                st["v"] = torch.zeros_like(p)
            st["step"] += 1
            st["m"].mul_(b1).add_(p.grad, alpha=1 - b1)  # m <- b1 m + (1-b1) g
            # v <- b2 v + (1-b2) g^2
            st["v"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            m_hat = st["m"] / (1 - b1 ** st["step"])  # bias corrections
            v_hat = st["v"] / (1 - b2 ** st["step"])
            # x <- x - lr m^/(sqrt(v^)+eps)
            p.addcdiv_(m_hat, v_hat.sqrt().add_(eps), value=-lr)
        self._activate(self._next_block())
        return loss
