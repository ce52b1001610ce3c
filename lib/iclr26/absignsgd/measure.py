"""Several seeds as one batched model, and what the experiments measure: blocks,
backward depth, saved activations and training-state bytes."""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import nn


class ReplicaLinear(nn.Module):
    """R independent linear layers applied in one batched matmul.

    weight: (R, d_out, d_in), bias: (R, d_out). Input (R, B, d_in) -> output
    (R, B, d_out). Element-wise optimisers (sign descent, Adam) treat each replica
    independently, so one optimiser over a ReplicaLinear is R independent runs.
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        super().__init__()
        if weight.ndim != 3 or bias.ndim != 2 or bias.shape != weight.shape[:2]:
            raise ValueError(
                "weight must be (R, d_out, d_in) and bias (R, d_out); "
                f"got {tuple(weight.shape)}, {tuple(bias.shape)}"
            )
        self.weight = nn.Parameter(weight.clone())
        self.bias = nn.Parameter(bias.clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (
            x.ndim != 3
            or x.shape[0] != self.weight.shape[0]
            or x.shape[2] != self.weight.shape[2]
        ):
            raise ValueError(
                f"x must be (R={self.weight.shape[0]}, B, "
                f"d_in={self.weight.shape[2]}), got {tuple(x.shape)}"
            )
        # y = x W^T + b
        return torch.baddbmm(self.bias.unsqueeze(1), x, self.weight.transpose(1, 2))


def replica_mlp(models: Sequence[nn.Sequential]) -> nn.Sequential:
    """Stack R same-shaped ``Linear``/activation ``nn.Sequential`` MLPs (e.g.
    ``harness.mlp`` with R seeds) into one model of :class:`ReplicaLinear` layers: input
    (R, B, d_in) -> (R, B, d_out), replica r computing exactly what ``models[r]``
    computes."""
    if not models:
        raise ValueError("give at least one model")
    layers = []
    for parts in zip(*[list(m) for m in models]):
        if isinstance(parts[0], nn.Linear):
            layers.append(
                ReplicaLinear(
                    torch.stack([l.weight.detach() for l in parts]),
                    torch.stack([l.bias.detach() for l in parts]),
                )
            )
        else:
            layers.append(type(parts[0])())
    return nn.Sequential(*layers)


def replica_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Sum over replicas of each replica's mean cross-entropy. logits (R, B, C), y
    (R, B) -> scalar.

    Summing keeps each replica's gradient equal to the gradient of its own mean loss."""
    r, b, c = logits.shape
    return (
        nn.functional.cross_entropy(
            logits.reshape(r * b, c), y.reshape(r * b), reduction="sum"
        )
        / b
    )


@torch.no_grad()
def replica_evaluate(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, n_replicas: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-replica (mean cross-entropy, accuracy) on one shared split x (n, d), y (n,):
    two (R,) tensors."""
    logits = model(x.unsqueeze(0).expand(n_replicas, *x.shape))  # (R, n, C)
    loss = nn.functional.cross_entropy(
        logits.transpose(1, 2), y.expand(n_replicas, -1), reduction="none"
    ).mean(1)
    acc = (logits.argmax(-1) == y).float().mean(1)
    return loss, acc


def linear_blocks(model: nn.Module) -> list[list[nn.Parameter]]:
    """One block per ``nn.Linear`` (or :class:`ReplicaLinear`) of ``model``, in forward
    order (block 0 nearest the input)."""
    blocks = [
        list(m.parameters())
        for m in model.modules()
        if isinstance(m, (nn.Linear, ReplicaLinear))
    ]
    if not blocks:
        raise ValueError("model has no nn.Linear layers to make blocks of")
    return blocks


def inner_blocks(model: nn.Module) -> list[list[nn.Parameter]]:
    """The fine-tuning blocks of the official code's setting: one block per linear layer
    *between* the first and the last, which are frozen.

    The official optimiser makes blocks of the transformer layers only; the embedding
    and the output head never get ``requires_grad``. Here the first linear layer plays
    the embedding and the last the head: both get ``requires_grad=False`` and belong
    to no block. Returns the blocks in forward order (block 0 nearest the input)."""
    blocks = linear_blocks(model)
    if len(blocks) < 3:
        raise ValueError(
            f"model has {len(blocks)} linear layers; inner_blocks needs at least 3 "
            "(a frozen first, one or more blocks, a frozen last)"
        )
    for p in blocks[0] + blocks[-1]:
        p.requires_grad_(False)
    return blocks[1:-1]


_LINEAR_NODES = ("AddmmBackward0", "MmBackward0", "BaddbmmBackward0", "BmmBackward0")


def backward_linear_ops(loss: torch.Tensor) -> int:
    """How many linear-layer backward nodes (``Addmm``/``Mm``/``Baddbmm``/``Bmm``)
    ``loss.backward()`` would run.

    Walks the autograd graph from ``loss.grad_fn``; each linear layer the backward pass
    must go through contributes one such node. Layers below the active block never
    enter the graph.
    """
    if not isinstance(loss, torch.Tensor) or loss.grad_fn is None:
        raise ValueError(
            "loss must be a tensor with a grad_fn (computed with some requires_grad "
            "input)"
        )
    seen, stack, count = set(), [loss.grad_fn], 0
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if type(node).__name__ in _LINEAR_NODES:
            count += 1
        stack.extend(fn for fn, _ in node.next_functions)
    return count


def saved_activation_bytes(
    forward: Callable[[], torch.Tensor],
) -> tuple[torch.Tensor, int]:
    """Run ``forward()`` and count the bytes autograd saves for the backward pass.

    Uses ``torch.autograd.graph.saved_tensors_hooks``; tensors saved twice
    (same storage) count once. Returns (the forward's output, bytes).
    Parameters saved by reference are not counted.
    """
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor):
        if not isinstance(t, nn.Parameter):
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = forward()
    return out, sum(storages.values())


def training_state_bytes(
    model: nn.Module, optimizer: torch.optim.Optimizer | None = None
) -> dict:
    """Bytes held right after a backward pass: parameters, gradients,
    optimiser state."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    grads = sum(
        p.grad.numel() * p.grad.element_size()
        for p in model.parameters()
        if p.grad is not None
    )
    state = 0
    if optimizer is not None:
        for st in optimizer.state.values():
            state += sum(
                t.numel() * t.element_size() for t in st.values() if torch.is_tensor(t)
            )
    return {"params": params, "grads": grads, "state": state}
