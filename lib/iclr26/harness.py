"""A small, shared training harness for the optimiser chapters (02 ABSignSGD, 03 FZOO).

Both chapters compare optimisers on the same problem: scikit-learn's bundled digits (8×8
images, 10 classes, no download) and a small MLP. Keeping data, model and evaluation
here means the two chapters' numbers are comparable and neither re-implements the
other's plumbing.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch import nn

from .core import seeded


@dataclass
class Split:
    """Tensors of one data split. x: (n, d) float, y: (n,) int64."""

    x: torch.Tensor
    y: torch.Tensor


def digits_data(
    seed: int = 0,
    test_fraction: float = 0.25,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
) -> tuple[Split, Split]:
    """scikit-learn's digits (1797 images, 64 pixels, 10 classes) as standardised
    torch tensors.

    The split is stratified and seeded; standardisation uses the training split's
    statistics only. Returns (train, test) with x of shape (n, 64) and y of shape (n,).
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y
    )
    mean, std = x_tr.mean(0), x_tr.std(0) + 1e-6  # some border pixels are always 0
    to = lambda a, t: torch.as_tensor(a, dtype=t, device=device)
    return (
        Split(to((x_tr - mean) / std, dtype), to(y_tr, torch.int64)),
        Split(to((x_te - mean) / std, dtype), to(y_te, torch.int64)),
    )


def mlp(
    sizes: list[int], activation: type[nn.Module] = nn.Tanh, seed: int | None = None
) -> nn.Sequential:
    """An MLP ``sizes[0] → sizes[1] → … → sizes[-1]`` with ``activation`` between
    Linear layers.

    With ``seed`` the initial weights are reproducible without touching the global RNG.
    """
    if len(sizes) < 2 or any((not isinstance(s, int)) or s < 1 for s in sizes):
        raise ValueError(f"sizes must be at least two positive ints, got {sizes}")
    # with a seed, the weights come from it alone and the global stream is untouched
    with seeded(seed) if seed is not None else contextlib.nullcontext():
        layers: list[nn.Module] = []
        for i, (d_in, d_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(d_in, d_out))
            if i < len(sizes) - 2:
                layers.append(activation())
        return nn.Sequential(*layers)


def batch_indices(
    n: int, batch_size: int, steps: int, generator: torch.Generator
) -> torch.Tensor:
    """``steps`` minibatches of ``batch_size`` indices into ``range(n)``, as a
    (steps, batch_size) tensor, drawn epoch by epoch without replacement (reshuffled
    each epoch)."""
    if not 0 < batch_size <= n:
        raise ValueError(f"batch_size must lie in [1, n={n}], got {batch_size}")
    per_epoch = n // batch_size
    epochs = -(-steps // per_epoch)
    perms = torch.stack(
        [
            torch.randperm(n, generator=generator)[: per_epoch * batch_size]
            for _ in range(epochs)
        ]
    )
    return perms.reshape(-1, batch_size)[:steps]


@torch.no_grad()
def evaluate(model: nn.Module, split: Split) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of ``model`` on ``split``."""
    logits = model(split.x)
    loss = nn.functional.cross_entropy(logits, split.y).item()
    acc = (logits.argmax(1) == split.y).float().mean().item()
    return loss, acc


def tensor_bytes(tensors) -> int:
    """Total bytes held by an iterable of tensors (e.g. an optimiser's state values)."""
    return sum(t.numel() * t.element_size() for t in tensors if torch.is_tensor(t))


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of tensor state an optimiser keeps between steps (Adam: two moments per
    parameter)."""
    return sum(tensor_bytes(state.values()) for state in optimizer.state.values())
