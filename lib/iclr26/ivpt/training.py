"""Training IVPT and VPT-Deep: the official code's losses and optimiser settings.

* the part-discovery losses (presence, background presence, entropy, total variation,
  orthogonality) and the cross-layer consistency KL (:func:`part_losses`);
* the **equivariance** loss: the concept maps of a randomly rotated, scaled and
  shifted image, warped back, must match the maps of the image
  (:func:`equivariance_loss`);
* :func:`train`: Adam with a one-cycle schedule, the prototypes at a 50 times smaller
  rate than the heads, gradients clipped to norm 2, as in the official optimiser.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .method import IVPT


def _radial(g: int, device, dtype) -> torch.Tensor:
    """[g, g] squared distance from the centre, scaled to max 1 (border weighting)."""
    c = torch.linspace(-1, 1, g, device=device, dtype=dtype)
    r = c[:, None] ** 2 + c[None, :] ** 2
    return r / r.max()


def part_losses(out: dict, grid: int, presence_type: str = "original") -> dict:
    """The part-discovery and cross-layer losses on an IVPT output (scalars).

    As in the official trainer, presence, background presence, entropy and total
    variation are averaged over every prototype layer's map (not the final one only):

    * presence of each foreground prototype k, from s_k = max over positions of its
      3 x 3-pooled map: ``"original"`` 1 - mean_k max_images s_k (the official
      default; its gradient vanishes once a prototype owns no patch anywhere) or
      ``"tanh"`` -log tanh(sum_images s_k) (an official option, after PIP-Net; its
      gradient does not vanish, so a dead prototype comes back);
    * background presence: -log max_n (3 x 3-pooled background map x squared distance
      from the centre), per image (the background must own some border);
    * entropy of each patch's assignment; total variation of the maps;
    * orthogonality of the final part features; the cross-layer consistency
      KL(A_last || G^T A_l) for each prompted layer.
    """
    maps = out["maps"]
    B, _, N = maps[-1].shape
    pres, bg, ent, tv = [], [], [], []
    for A in maps:
        Am = A.view(B, A.shape[1], grid, grid)
        pooled = F.avg_pool2d(Am, 3, stride=1)  # [B, K + 1, g - 2, g - 2]
        s_k = pooled[:, :-1].amax((2, 3))  # [B, K]
        if presence_type == "tanh":
            pres.append(-torch.log(torch.tanh(s_k.sum(0)).clamp_min(1e-6)).mean())
        elif presence_type == "original":
            pres.append(1 - s_k.amax(0).mean())
        else:
            raise ValueError(
                f"presence_type must be 'tanh' or 'original', got {presence_type!r}"
            )
        r = _radial(pooled.shape[-1], A.device, A.dtype)
        bg_max = (pooled[:, -1] * r).amax((1, 2)).clamp_min(1e-6)
        bg.append(-torch.log(bg_max).mean())  # BCE against 1
        ent.append(-(A * torch.log(A + 1e-8)).sum(1).mean())
        tv.append(
            (Am[..., 1:, :] - Am[..., :-1, :]).abs().mean()
            + (Am[..., :, 1:] - Am[..., :, :-1]).abs().mean()
        )
    mean = lambda v: sum(v) / len(v)
    f = F.normalize(out["parts"], dim=-1)
    gram = f @ f.transpose(1, 2)
    orth = (gram - torch.diag_embed(torch.diagonal(gram, dim1=1, dim2=2))).pow(2).mean()
    target = maps[-1].detach() + 1e-8
    cons = (
        sum(
            ((target * (target / (c + 1e-8)).log()).sum(1).mean())
            for c in out["coarse"]
        )
        / len(out["coarse"])
        if out["coarse"]
        else target.new_zeros(())
    )
    return dict(
        presence=mean(pres) + mean(bg),
        entropy=mean(ent),
        tv=mean(tv),
        orth=orth,
        consistency=cons,
    )


LOSS_WEIGHTS = dict(
    presence=1.0, entropy=1.0, tv=1.0, orth=1.0, consistency=1.0, equivariance=1.0
)
"""Every part loss at weight 1, as in the official ``configs/cub_default.yaml``."""

PROTO_LR_FACTOR = 1 / 50
"""Prototypes and their spatial biases learn 50 times slower than the heads: the
official optimiser gives ``p_token``/``p_bias`` the base rate times 200 and the
classifier, modulation and prompt projections the base rate times 10^4."""

EQUIV_AFFINE = dict(degrees=30.0, translate=0.11, scale=(0.8, 1.2))
"""The equivariance loss's random affine maps. The official code draws rotations up
to 90 degrees, shifts up to 0.11 of the side, scales 0.8-1.4; the chapter's tiny
backbone never saw a bird tilted by more than its pose jitter, so we keep the shifts
and narrow the rotations and scales."""


def random_affine(
    n: int,
    degrees: float = 30.0,
    translate: float = 0.11,
    scale: tuple[float, float] = (0.8, 1.2),
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """``n`` random rotation-scale-shift maps as ``affine_grid`` matrices [n, 2, 3].

    theta maps output coordinates (in [-1, 1]) to input coordinates; shifts are in
    fractions of the image side (a shift t moves by 2 t in these coordinates).
    """
    if n < 1 or degrees < 0 or translate < 0 or not 0 < scale[0] <= scale[1]:
        raise ValueError(
            f"need n >= 1, degrees >= 0, translate >= 0, 0 < scale[0] <= scale[1]; "
            f"got {n}, {degrees}, {translate}, {scale}"
        )
    u = torch.rand(n, 4, generator=generator)
    ang = torch.deg2rad(degrees * (2 * u[:, 0] - 1))
    s = scale[0] + (scale[1] - scale[0]) * u[:, 1]
    t = 2 * translate * (2 * u[:, 2:] - 1)  # [n, 2]
    rot = torch.stack(
        [torch.cos(ang), -torch.sin(ang), torch.sin(ang), torch.cos(ang)], -1
    ).view(n, 2, 2)
    return torch.cat([rot / s[:, None, None], t[..., None]], -1)


def invert_affine(theta: torch.Tensor) -> torch.Tensor:
    """Inverse of [n, 2, 3] affine maps: x = R y + t  <=>  y = R^-1 x - R^-1 t."""
    R_inv = torch.linalg.inv(theta[..., :2])
    return torch.cat([R_inv, -R_inv @ theta[..., 2:]], -1)


def warp(x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Resample x [n, C, H, W] at theta's coordinates (zeros outside), bilinear."""
    grid = F.affine_grid(theta.to(x), list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, align_corners=False, padding_mode="zeros")


def equivariance_loss(
    maps: list[torch.Tensor], maps_t: list[torch.Tensor], theta: torch.Tensor, grid: int
) -> torch.Tensor:
    """1 - cos(A, T^-1 A_t), averaged over foreground prototypes, images and layers.

    maps: per layer [B, K + 1, N], the concept maps of the images; maps_t: the same
    for the images warped by theta [B, 2, 3]. Warping A_t back by the inverse map
    should give A again if the parts move with the image (the official loss, after
    PDiscoFormer, compares the maps by cosine similarity).
    """
    inv = invert_affine(theta)
    total = maps[0].new_zeros(())
    for A, At in zip(maps, maps_t):
        B, K1, N = A.shape
        back = warp(At.view(B, K1, grid, grid), inv).view(B, K1, N)
        total = (
            total + (1 - F.cosine_similarity(A[:, :-1], back[:, :-1], dim=-1)).mean()
        )
    return total / len(maps)


def train(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    steps: int,
    batch: int = 64,
    lr: float = 3e-3,
    weights: dict | None = None,
    generator: torch.Generator | None = None,
    proto_lr_factor: float = PROTO_LR_FACTOR,
    clip: float | None = 2.0,
    affine: dict | None = None,
    presence_type: str = "original",
    standardise: bool = True,
) -> list[float]:
    """Adam on the trainable parameters (the backbone stays frozen); returns losses.

    For an :class:`IVPT` the part losses are added with ``weights`` (default
    ``LOSS_WEIGHTS``; pass zeros to ablate), the prototypes and their biases learn at
    ``lr * proto_lr_factor`` (the official code's ratio), and a nonzero
    ``equivariance`` weight adds a second pass on randomly warped images (``affine``,
    default ``EQUIV_AFFINE``). Gradients are clipped to norm ``clip`` (the official
    ``grad_norm_clip``; None: no clipping) for every model alike.
    """
    if len(images) != len(labels):
        raise ValueError("images and labels differ in length")
    if not lr > 0 or not proto_lr_factor > 0:
        raise ValueError(
            f"lr and proto_lr_factor must be > 0, got {lr}, {proto_lr_factor}"
        )
    w = {
        **{k: 0.0 for k in LOSS_WEIGHTS},
        **(LOSS_WEIGHTS if weights is None else weights),
    }
    aff = EQUIV_AFFINE if affine is None else affine
    named = [(n, p) for n, p in model.named_parameters() if not n.startswith("vit.")]
    is_ivpt = isinstance(model, IVPT)
    slow = [p for n, p in named if is_ivpt and n.split(".")[0] in ("protos", "bias")]
    fast = [p for n, p in named if not any(p is q for q in slow)]
    groups = [dict(params=fast, lr=lr)]
    if slow:
        groups.append(dict(params=slow, lr=lr * proto_lr_factor))
    opt = torch.optim.Adam(groups, lr=lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, [g["lr"] for g in groups], total_steps=steps, pct_start=0.1
    )
    params = fast + slow
    if is_ivpt and standardise:
        model.fit_feature_stats(images)
    # The warps draw from their own stream, so the mini-batches depend only on
    # ``generator``: every model given the same seed sees the same batches, whether or
    # not it draws warps.
    warp_gen = (
        None
        if generator is None
        else torch.Generator().manual_seed(generator.initial_seed() + 1)
    )
    losses = []
    model.train()
    for _ in range(steps):
        idx = torch.randint(len(images), (batch,), generator=generator).to(
            images.device
        )
        x = images[idx]
        out = model(x)
        loss = F.cross_entropy(out["logits"], labels[idx])
        if is_ivpt:
            parts = part_losses(out, model.vit.grid, presence_type)
            if w["equivariance"]:
                theta = random_affine(batch, **aff, generator=warp_gen).to(x)
                out_t = model(warp(x, theta))
                parts["equivariance"] = equivariance_loss(
                    out["maps"], out_t["maps"], theta, model.vit.grid
                )
            loss = loss + sum(w[k] * v for k, v in parts.items())
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        sched.step()
        losses.append(loss.item())
    model.eval()
    return losses
