"""The toy CLIP (image and text encoders, InfoNCE) and the top-k sparse autoencoder."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..core import seeded
from ..validate import as_int, as_tensor
from .data import VOCAB

# --------------------------------------------------------------------------------------
# the toy CLIP
# --------------------------------------------------------------------------------------


class ToyCLIP(nn.Module):
    """A tiny contrastive image-text model.

    ``encode_image``: (n, 3, S, S) -> (n, d) unit vectors, three stride-2 convolutions
    and a linear head. ``encode_text``: (n, L) token ids -> (n, d) unit vectors, the
    mean of token embeddings (padding 0 ignored) and a linear map. ``seed``: the
    initial weights come from it alone (``None``: from torch's global generator, as
    any ``nn.Module``'s do).
    """

    def __init__(
        self,
        vocab: int = len(VOCAB),
        d: int = 32,
        width: int = 16,
        size: int = 24,
        seed: int | None = None,
    ):
        super().__init__()
        if seed is None:
            self._build(vocab, d, width, size)
        else:
            with seeded(as_int(seed, "seed", lo=0)):
                self._build(vocab, d, width, size)

    def _build(self, vocab: int, d: int, width: int, size: int) -> None:
        vocab, d, width, size = (
            as_int(vocab, "vocab", lo=2),
            as_int(d, "d", lo=2),
            as_int(width, "width", lo=1),
            as_int(size, "size", lo=8),
        )
        self.image = nn.Sequential(
            nn.Conv2d(3, width, 3, 2, 1),
            nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, 2, 1),
            nn.ReLU(),
            nn.Conv2d(2 * width, 4 * width, 3, 2, 1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * width, d),
        )
        self.tok = nn.Embedding(vocab, d, padding_idx=0)
        self.text = nn.Linear(d, d)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(10.0)))

    def encode_image(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.image(x), dim=-1)

    def encode_text(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = (tokens != 0).float()[..., None]
        mean = (self.tok(tokens) * mask).sum(1) / mask.sum(1).clamp(min=1)
        return F.normalize(self.text(mean), dim=-1)


def clip_loss(
    img: torch.Tensor,
    txt: torch.Tensor,
    scale: torch.Tensor,
    same: torch.Tensor | None = None,
) -> torch.Tensor:
    """Symmetric InfoNCE on (n, d) unit image and text embeddings.

    ``same`` (n, n) bool marks pairs with identical captions: they are all positives (an
    image is not pushed away from its own caption's duplicates); ``None``: only
    the diagonal.
    """
    logits = scale * img @ txt.T
    target = torch.eye(len(img), device=img.device) if same is None else same.float()
    target = target / target.sum(1, keepdim=True)
    return 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target.T))


def train_clip(
    model: ToyCLIP,
    images: torch.Tensor,
    tokens: torch.Tensor,
    steps: int,
    batch: int = 128,
    lr: float = 3e-3,
    generator: torch.Generator | None = None,
) -> list[float]:
    """Adam on :func:`clip_loss` over random batches; returns the loss per step."""
    steps, batch = as_int(steps, "steps", lo=1), as_int(batch, "batch", lo=2)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        i = torch.randint(len(images), (batch,), generator=generator).to(images.device)
        t = tokens[i]
        same = (t[:, None, :] == t[None, :, :]).all(-1)
        loss = clip_loss(
            model.encode_image(images[i]),
            model.encode_text(t),
            model.logit_scale.exp().clamp(max=100),
            same,
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def embed_images(
    model: ToyCLIP, images: torch.Tensor, batch: int = 1024
) -> torch.Tensor:
    """(n, d) unit image embeddings, in batches."""
    model.eval()
    return torch.cat(
        [
            model.encode_image(images[i : i + batch])
            for i in range(0, len(images), batch)
        ]
    )


# --------------------------------------------------------------------------------------
# the sparse autoencoder
# --------------------------------------------------------------------------------------


class TopKSAE(nn.Module):
    """Top-k sparse autoencoder: ``z = TopK_k(ReLU(W_enc (e - b_dec) + b_enc))``,
    ``e_hat = W_dec z + b_dec``, unit-norm decoder columns ``f_j`` (``W_dec``
    is (d, m))."""

    def __init__(
        self, d: int, m: int, k: int, generator: torch.Generator | None = None
    ):
        super().__init__()
        d, m, k = as_int(d, "d", lo=1), as_int(m, "m", lo=1), as_int(k, "k", lo=1)
        if k > m:
            raise ValueError(f"k must be <= m, got k={k}, m={m}")
        self.k = k
        W = F.normalize(torch.randn(d, m, generator=generator), dim=0)
        self.W_dec = nn.Parameter(W)
        self.W_enc = nn.Parameter(W.T.clone())
        self.b_enc = nn.Parameter(torch.zeros(m))
        self.b_dec = nn.Parameter(torch.zeros(d))

    def encode(self, e: torch.Tensor) -> torch.Tensor:
        pre = F.relu((e - self.b_dec) @ self.W_enc.T + self.b_enc)
        top = pre.topk(self.k, dim=-1)
        return torch.zeros_like(pre).scatter_(-1, top.indices, top.values)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return z @ self.W_dec.T + self.b_dec

    def forward(self, e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.encode(e)
        return self.decode(z), z


def train_sae(
    sae: TopKSAE,
    e: torch.Tensor,
    steps: int,
    batch: int = 256,
    lr: float = 3e-3,
    generator: torch.Generator | None = None,
) -> list[float]:
    """Adam on the reconstruction error ``mean ||e - e_hat||^2`` (the top-k does the
    sparsity); decoder columns renormalised after each step. Returns the loss
    per step."""
    as_tensor(e, "e", ndim=2)
    steps, batch = as_int(steps, "steps", lo=1), as_int(batch, "batch", lo=1)
    with torch.no_grad():
        sae.b_dec.copy_(e.mean(0))  # start the decoder bias at the data's mean
    opt = torch.optim.Adam(sae.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        x = e[torch.randint(len(e), (batch,), generator=generator).to(e.device)]
        loss = (sae(x)[0] - x).pow(2).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            sae.W_dec.div_(sae.W_dec.norm(dim=0, keepdim=True).clamp(min=1e-8))
        losses.append(loss.item())
    return losses


@torch.no_grad()
def explained_variance(sae: TopKSAE, e: torch.Tensor) -> float:
    """1 - ||e - e_hat||^2 / ||e - mean e||^2 on ``e`` (n, d)."""
    as_tensor(e, "e", ndim=2)
    return float(1 - (sae(e)[0] - e).pow(2).sum() / (e - e.mean(0)).pow(2).sum())
