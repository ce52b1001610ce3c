"""Training and scoring the small spiking classifiers of the chapter (plain Adam,
cross-entropy)."""

from __future__ import annotations

import torch
from torch import nn

from ..validate import as_float, as_int


def train_classifier(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int,
    batch: int,
    lr: float,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` with Adam on random mini-batches of (x, y); return the
    loss per step.

    x: (T, n, d) events, time first, on the model's device; y: (n,) int64 labels.
    The batches are drawn from a generator seeded with ``seed`` (on the CPU, so runs
    agree across devices).
    """
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError("x and y must be tensors")
    if x.ndim != 3 or y.shape != (x.shape[1],):
        raise ValueError(
            f"x must be (T, n, d) and y (n,), got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    steps, batch = as_int(steps, "steps", lo=1), as_int(batch, "batch", lo=1)
    lr = as_float(lr, "lr", lo=0.0, open_lo=True)
    seed = as_int(seed, "seed", lo=0)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, x.shape[1], (batch,), generator=g).to(x.device)
        loss = nn.functional.cross_entropy(model(x[:, idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def predict(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The class ``model`` predicts for each sample of ``x`` (T, n, d): (n,) int64."""
    if not isinstance(x, torch.Tensor) or x.ndim != 3:
        raise ValueError(
            f"x must be a (T, n, d) tensor, got {tuple(getattr(x, 'shape', ()))}"
        )
    return model(x).argmax(1)


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Percent of (x, y) that ``model`` classifies correctly (x: (T, n, d), y: (n,))."""
    if x.ndim != 3 or y.shape != (x.shape[1],):
        raise ValueError(
            f"x must be (T, n, d) and y (n,), got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    return 100.0 * float((predict(model, x) == y).float().mean())
