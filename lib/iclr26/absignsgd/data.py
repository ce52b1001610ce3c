"""A validation split carved from the training split, for choosing learning rates.

The shared harness (:func:`iclr26.harness.digits_data`) gives a train and a test split;
the chapter picks every learning rate on a validation split taken from *train*, so the
test split is read only once, at the chosen rate."""

from __future__ import annotations

import torch

from ..harness import Split


def train_val_split(
    train: Split, val_fraction: float = 0.2, seed: int = 0
) -> tuple[Split, Split]:
    """Split ``train`` (x: (n, d), y: (n,)) into (fit, validation), stratified by label.

    Each class gives ``round(val_fraction * count)`` examples (at least one, and one
    stays in fit) to validation, chosen by a generator seeded with ``seed``.
    Tensors stay on ``train``'s device."""
    if not isinstance(train, Split):
        raise TypeError(f"train must be a harness.Split, got {type(train).__name__}")
    if (
        isinstance(val_fraction, bool)
        or not isinstance(val_fraction, (int, float))
        or not 0.0 < val_fraction < 1.0
    ):
        raise ValueError(f"val_fraction must lie in (0, 1), got {val_fraction!r}")
    gen = torch.Generator().manual_seed(seed)
    y = train.y.cpu()
    val = []
    for label in torch.unique(y):
        where = torch.nonzero(y == label).flatten()
        if where.numel() < 2:
            raise ValueError(
                f"class {int(label)} has {where.numel()} example(s); "
                "a stratified split needs at least 2"
            )
        k = min(max(1, round(val_fraction * where.numel())), where.numel() - 1)
        val.append(where[torch.randperm(where.numel(), generator=gen)[:k]])
    val = torch.cat(val).sort().values
    keep = torch.ones(len(y), dtype=torch.bool)
    keep[val] = False
    val, fit = val.to(train.y.device), torch.nonzero(keep).flatten().to(train.y.device)
    return Split(train.x[fit], train.y[fit]), Split(train.x[val], train.y[val])


def transposed_images(split: Split, side: int = 8) -> Split:
    """The same examples with each ``side`` x ``side`` image transposed (a shifted task
    with the same labels): x (n, side*side) -> (n, side*side)."""
    if not isinstance(split, Split):
        raise TypeError(f"split must be a harness.Split, got {type(split).__name__}")
    if split.x.ndim != 2 or split.x.shape[1] != side * side:
        raise ValueError(
            f"split.x must be (n, {side * side}) for {side}x{side} images, got "
            f"{tuple(split.x.shape)}"
        )
    x = split.x.reshape(-1, side, side).transpose(1, 2).reshape(-1, side * side)
    return Split(x.contiguous(), split.y)
