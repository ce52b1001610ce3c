"""Small models and data for the ILNN chapter: Lorentz and Euclidean CNNs and MLPs, a
seeded synthetic hierarchy, and a plain training loop."""

from __future__ import annotations

import contextlib
import math

import torch
from torch import nn
from torch.nn import functional as F

from ..core import seeded
from ..validate import as_float, as_int
from .geometry import _check_k, lift, lorentz_centroid
from .layers import (
    LFC,
    PLFC,
    GyroBN,
    GyroLBN,
    LorentzBatchNorm,
    LorentzConv2d,
    LorentzDropout,
    LorentzReLU,
)


# --------------------------------------------------------------------------------------
# models for the chapter
# --------------------------------------------------------------------------------------
def _init_from(seed: int | None):
    """Where a model's initial weights come from: a generator seeded with ``seed``
    (the same weights whatever ran before), or torch's global one when ``seed`` is
    None (as ``nn.Linear`` itself does)."""
    if seed is None:
        return contextlib.nullcontext()
    return seeded(as_int(seed, "seed", lo=0))


class LorentzCNN(nn.Module):
    """Two Lorentz conv blocks + centroid pooling + hyperplane-logit head,
    for 8x8 images.

    variant='ilnn': PLFC convolutions (digamma concat, gyro-bias), ``bn`` ('gyrolbn' |
    'gyrobn' | 'lbn'), Lorentz ReLU and dropout, PLFC head. variant='hcnn': plain concat
    + LFC, LBN, LFC head. Input (B, 1, 8, 8) pixels -> logits (B, classes).
    ``seed``: initial weights from a generator seeded with it (None: torch's global
    generator).
    """

    def __init__(
        self,
        width: int = 16,
        classes: int = 10,
        k: float = 1.0,
        variant: str = "ilnn",
        bn: str | None = None,
        dropout: float = 0.1,
        gamma: float = 1.0,
        seed: int | None = None,
    ):
        super().__init__()
        bn = bn or ("gyrolbn" if variant == "ilnn" else "lbn")
        norms = {"gyrolbn": GyroLBN, "gyrobn": GyroBN, "lbn": LorentzBatchNorm}
        if bn not in norms:
            raise ValueError(f"bn must be one of {list(norms)}, got {bn!r}")
        self.k = _check_k(k)
        with _init_from(seed):
            self.conv1 = LorentzConv2d(1, width, 3, k, padding=1, variant=variant)
            self.bn1 = norms[bn](width, k, gamma=gamma)
            self.conv2 = LorentzConv2d(
                width, 2 * width, 3, k, stride=2, padding=1, variant=variant
            )
            self.bn2 = norms[bn](2 * width, k, gamma=gamma)
            self.act = LorentzReLU(k)
            self.drop = LorentzDropout(dropout, k)
            self.head = (
                PLFC(2 * width, classes, k)
                if variant == "ilnn"
                else LFC(2 * width, classes, k)
            )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if (
            not isinstance(images, torch.Tensor)
            or images.ndim != 4
            or images.shape[1] != 1
        ):
            got = (
                tuple(images.shape)
                if isinstance(images, torch.Tensor)
                else type(images).__name__
            )
            raise ValueError(
                f"LorentzCNN expects images of shape (B, 1, H, W), got {got}; "
                "reshape flat 8x8 digits with x.reshape(-1, 1, 8, 8)"
            )
        # (B, 8, 8, 2): each pixel a point of L^1
        x = lift(images.permute(0, 2, 3, 1), self.k)
        x = self.act(self.bn1(self.conv1(x)))  # (B, 8, 8, w+1)
        x = self.act(self.bn2(self.conv2(x)))  # (B, 4, 4, 2w+1)
        # (B, 2w+1): pool = centroid
        x = lorentz_centroid(x.flatten(1, 2), self.k, dim=1)
        return self.head.logits(self.drop(x))  # (B, classes)


class EuclideanCNN(nn.Module):
    """The Euclidean CNN of the same width: conv-BN-ReLU x2, average pool,
    dropout, linear. ``seed`` as in :class:`LorentzCNN`."""

    def __init__(
        self,
        width: int = 16,
        classes: int = 10,
        dropout: float = 0.1,
        seed: int | None = None,
    ):
        super().__init__()
        with _init_from(seed):
            self.net = self._build(width, classes, dropout)

    @staticmethod
    def _build(width: int, classes: int, dropout: float) -> nn.Sequential:
        return nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Dropout(dropout),
            nn.Linear(2 * width, classes),
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images)


class FlatHead(nn.Module):
    """PLFC's k -> 0 limit as a logit head: |U_i| times the Euclidean signed distance of
    the space coordinates to U_i^T x_s = |U_i| a_i, i.e. U^T x_s - |U| a.
    (..., n+1) -> (..., m). Used in the chapter's head ablation: the same parameters as
    a PLFC head, no curvature."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.U = nn.Parameter(torch.randn(in_dim, out_dim) / math.sqrt(in_dim))
        self.a = nn.Parameter(torch.zeros(out_dim))

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return x[..., 1:] @ self.U - self.U.norm(dim=0) * self.a


class LorentzMLP(nn.Module):
    """in -> hidden -> bottleneck -> classes, every layer on the hyperboloid.
    (B, d) -> (B, classes).

    variant='ilnn': PLFC layers and GyroLBN; 'hcnn': LFC layers and HCNN's LBN.
    ``bn`` and ``head`` override the norm ('gyrolbn' | 'lbn' | 'gyrobn') and the logit
    head ('plfc' | 'lfc' | 'flat', the last being PLFC's Euclidean limit) for ablations.
    ``seed`` as in :class:`LorentzCNN`.
    """

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        bottleneck: int,
        classes: int,
        k: float = 1.0,
        variant: str = "ilnn",
        bn: str | None = None,
        head: str | None = None,
        seed: int | None = None,
    ):
        super().__init__()
        if variant not in ("ilnn", "hcnn"):
            raise ValueError(f"variant must be 'ilnn' or 'hcnn', got {variant!r}")
        self.k = _check_k(k)
        bn = bn or ("gyrolbn" if variant == "ilnn" else "lbn")
        head = head or ("plfc" if variant == "ilnn" else "lfc")
        norms = {"gyrolbn": GyroLBN, "lbn": LorentzBatchNorm, "gyrobn": GyroBN}
        if bn not in norms:
            raise ValueError(f"bn must be one of {list(norms)}, got {bn!r}")
        heads = {
            "plfc": lambda: PLFC(bottleneck, classes, k),
            "lfc": lambda: LFC(bottleneck, classes, k),
            "flat": lambda: FlatHead(bottleneck, classes),
        }
        if head not in heads:
            raise ValueError(f"head must be one of {list(heads)}, got {head!r}")
        FC, BN = (PLFC if variant == "ilnn" else LFC), norms[bn]
        with _init_from(seed):
            self.fc1, self.bn1, self.act = (
                FC(in_dim, hidden, k),
                BN(hidden, k),
                LorentzReLU(k),
            )
            self.fc2, self.bn2 = FC(hidden, bottleneck, k), BN(bottleneck, k)
            self.head = heads[head]()

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        if (
            not isinstance(x, torch.Tensor)
            or x.ndim != 2
            or x.shape[1] != self.fc1.in_dim
        ):
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(
                f"LorentzMLP expects (B, {self.fc1.in_dim}) features, got {got}"
            )
        h = self.act(self.bn1(self.fc1(lift(x, self.k))))
        return self.bn2(self.fc2(h))  # (B, bottleneck+1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head.logits(self.embed(x))


class EuclideanMLP(nn.Module):
    """in -> hidden -> bottleneck -> classes with BatchNorm and ReLU.
    (B, d) -> (B, classes). ``seed`` as in :class:`LorentzCNN`."""

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        bottleneck: int,
        classes: int,
        seed: int | None = None,
    ):
        super().__init__()
        with _init_from(seed):
            self.body = nn.Sequential(
                nn.Linear(in_dim, hidden),
                nn.BatchNorm1d(hidden),
                nn.ReLU(),
                nn.Linear(hidden, bottleneck),
                nn.BatchNorm1d(bottleneck),
            )
            self.head = nn.Linear(bottleneck, classes)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def tree_data(
    branching: int = 3,
    depth: int = 4,
    dim: int = 32,
    per_leaf: int = 20,
    noise: float = 0.5,
    decay: float = 0.7,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Samples from a random hierarchy: each node adds a Gaussian offset (scale
    ``decay**level``) to its parent's centre; samples are leaf centres plus noise,
    labelled by leaf.

    Returns x: (branching**depth * per_leaf, dim) float32 and y: (same,) int64 with
    branching**depth classes.
    """
    branching = as_int(branching, "branching", lo=2)
    depth, dim = as_int(depth, "depth", lo=1), as_int(dim, "dim", lo=1)
    per_leaf, seed = as_int(per_leaf, "per_leaf", lo=1), as_int(seed, "seed", lo=0)
    noise = as_float(noise, "noise", lo=0.0)
    decay = as_float(decay, "decay", lo=0.0)
    g = torch.Generator().manual_seed(seed)
    centres = torch.zeros(1, dim)
    for level in range(depth):
        kids = centres.repeat_interleave(branching, 0)
        # child = parent + offset
        centres = kids + decay**level * torch.randn(kids.shape, generator=g)
    n_leaves = centres.shape[0]
    y = torch.arange(n_leaves).repeat_interleave(per_leaf)
    x = centres[y] + noise * decay**depth * torch.randn(len(y), dim, generator=g)
    return x, y


def train_classifier(
    model: nn.Module,
    x_tr: torch.Tensor,
    y_tr: torch.Tensor,
    x_te: torch.Tensor,
    y_te: torch.Tensor,
    epochs: int = 20,
    batch_size: int = 64,
    lr: float = 1e-2,
    seed: int = 0,
) -> dict:
    """Adam on cross-entropy, minibatches drawn with a seeded generator, and every other
    draw of training (dropout masks) inside ``seeded(seed)``: the result depends on the
    model, the data and ``seed`` only, not on what ran before.
    Returns a dict with the test accuracy ``acc``, the test predictions ``pred`` ((n,)
    int64), the per-epoch training loss and the CPU seconds spent in training steps."""
    import time

    epochs, batch_size = (
        as_int(epochs, "epochs", lo=1),
        as_int(batch_size, "batch_size", lo=1),
    )
    lr, seed = as_float(lr, "lr", lo=0.0, open_lo=True), as_int(seed, "seed", lo=0)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    losses, cpu = [], 0.0
    n = len(x_tr)
    with seeded(seed):
        for _ in range(epochs):
            model.train()
            perm = torch.randperm(n, generator=g)
            total = 0.0
            t0 = time.process_time()
            for i in range(0, n - batch_size + 1, batch_size):
                idx = perm[i : i + batch_size]
                loss = F.cross_entropy(model(x_tr[idx]), y_tr[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item() * len(idx)
            cpu += time.process_time() - t0
            sched.step()
            losses.append(total / (n // batch_size * batch_size))
    model.eval()
    with torch.no_grad():
        pred = model(x_te).argmax(1)
    acc = (pred == y_te).float().mean().item()
    return {"acc": acc, "pred": pred, "losses": losses, "cpu_s": cpu}
