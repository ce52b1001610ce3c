"""A tiny ViT whose blocks accept extra (prompt) tokens, and its label-free pretraining.

The backbone is pretrained by masked-patch reconstruction (an MAE-style pixel target) on
*unlabelled* images: it never sees a class label or a part mask, as DINOv2 (the paper's
backbone) never saw CUB's. Then it is frozen.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    """Pre-LN transformer block; ``forward`` also returns the attention [B, h, T, T]."""

    def __init__(self, d: int, heads: int, mlp: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(
            nn.Linear(d, mlp * d), nn.GELU(), nn.Linear(mlp * d, d)
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x: [B, T, D] -> (x' [B, T, D], attention [B, heads, T, T])."""
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, -1).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, h, T, D/h]
        att = torch.softmax(q @ k.transpose(-1, -2) / (D // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, D))
        return x + self.mlp(self.ln2(x)), att


class TinyViT(nn.Module):
    """Patch embedding + CLS + learned positions + ``depth`` blocks + final LayerNorm.

    ``forward(x, prompts)``: ``prompts[l]`` is None or a [B, P_l, D] tensor of tokens
    appended before block ``l`` and dropped after it (VPT-Deep's rule: each layer gets
    its own prompts). Returns the final tokens [B, 1 + N, D] (normed), the per-block
    inputs (list of [B, 1 + N, D], before prompts are appended) and the attentions.
    """

    def __init__(
        self,
        size: int = 24,
        patch: int = 4,
        d: int = 64,
        depth: int = 4,
        heads: int = 4,
    ) -> None:
        super().__init__()
        if size % patch:
            raise ValueError(f"patch {patch} must divide size {size}")
        self.size, self.patch, self.d, self.depth = size, patch, d, depth
        self.grid = size // patch
        self.embed = nn.Conv2d(3, d, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(0.02 * torch.randn(1, 1 + self.grid**2, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(d)

    def tokens(self, x: torch.Tensor) -> torch.Tensor:
        """images [B, 3, H, W] -> tokens [B, 1 + N, D] (N = grid**2 patches)."""
        if x.ndim != 4 or x.shape[1:] != (3, self.size, self.size):
            raise ValueError(
                f"images must be [B, 3, {self.size}, {self.size}], got {tuple(x.shape)}"
            )
        p = self.embed(x).flatten(2).transpose(1, 2)
        return torch.cat([self.cls.expand(len(x), -1, -1), p], 1) + self.pos

    def forward(self, x: torch.Tensor, prompts: list | None = None, tokens_in=None):
        h = self.tokens(x) if tokens_in is None else tokens_in
        T = h.shape[1]
        inputs, atts = [], []
        for i, blk in enumerate(self.blocks):
            inputs.append(h)
            p = None if prompts is None else prompts[i]
            h, att = blk(h if p is None else torch.cat([h, p], 1))
            h = h[:, :T]
            atts.append(att)
        return self.norm(h), inputs, atts


def pretrain(
    vit: TinyViT,
    view1: torch.Tensor,
    view2: torch.Tensor,
    steps: int,
    batch: int = 128,
    mask_ratio: float = 0.5,
    lr: float = 2e-3,
    tau: float = 0.2,
    generator: torch.Generator | None = None,
) -> list[float]:
    """Self-supervised pretraining on unlabelled pairs of views [n, 3, H, W] -> losses.

    Two losses, no labels and no part masks:

    * masked-patch reconstruction (MAE-style): a random ``mask_ratio`` of view 1's patch
      embeddings is replaced by a learned mask token and a linear decoder predicts the
      raw pixels of the masked patches (local features);
    * InfoNCE between the CLS token of masked view 1 and of view 2, two renderings of
      the same bird in another pose, size and background (global features, as DINO-style
      pretraining learns what two views share).
    """
    if view1.ndim != 4 or view1.shape != view2.shape or len(view1) < batch:
        raise ValueError(
            f"views must be two equal [n >= batch, 3, H, W] tensors, got "
            f"{tuple(view1.shape)} and {tuple(view2.shape)}"
        )
    dev = view1.device
    P, G = vit.patch, vit.grid
    mask_tok = nn.Parameter(torch.zeros(1, 1, vit.d, device=dev))
    dec = nn.Linear(vit.d, 3 * P * P).to(dev)
    proj = nn.Linear(vit.d, vit.d).to(dev)
    params = (
        list(vit.parameters())
        + [mask_tok]
        + list(dec.parameters())
        + list(proj.parameters())
    )
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, lr, total_steps=steps, pct_start=0.1
    )
    losses = []
    for _ in range(steps):
        idx = torch.randint(len(view1), (batch,), generator=generator).to(dev)
        x = view1[idx]
        tok = vit.tokens(x)
        m = torch.rand(batch, G * G, generator=generator).to(dev) < mask_ratio
        pt = torch.where(m[..., None], mask_tok + vit.pos[:, 1:], tok[:, 1:])
        out, _, _ = vit(x, tokens_in=torch.cat([tok[:, :1], pt], 1))
        target = x.unfold(2, P, P).unfold(3, P, P)  # [B, 3, G, G, P, P]
        target = target.permute(0, 2, 3, 1, 4, 5).reshape(batch, G * G, -1)
        mae = F.mse_loss(dec(out[:, 1:])[m], target[m])
        z1 = F.normalize(proj(out[:, 0]), dim=-1)
        z2 = F.normalize(proj(vit(view2[idx])[0][:, 0]), dim=-1)
        # InfoNCE: the other view of the same bird is the positive, the batch the rest
        nce = F.cross_entropy(z1 @ z2.T / tau, torch.arange(batch, device=dev))
        loss = mae + 0.1 * nce
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    opt.zero_grad(set_to_none=True)  # no pretraining gradient is left on the backbone
    vit.requires_grad_(False)
    return losses
