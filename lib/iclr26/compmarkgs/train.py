"""The two-stage experiment: fit a Scaffold scene, then embed a message, compress,
and measure.

Stage 1 (:func:`fit_scene`) fits features, offsets, scalings and MLPs to the training
views with fixed U(−½, ½)·q0 noise on the features, as a HAC-style compressible model
is trained. Stage 2 (:func:`embed`) starts from that checkpoint and trains the
watermark residual and the MLPs with the message loss, under one of the QDL modes.
:func:`compress` quantizes what a codec would store; :func:`evaluate` renders views
and decodes them.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .. import splat as sp
from .losses import hsv_masked_loss
from .model import QuantDistortionLayer, ScaffoldScene, quantize_uniform, voxel_anchors
from .watermark import KeyedDecoder, image_to_ll

Tensor = torch.Tensor
WHITE = (1.0, 1.0, 1.0)


@dataclass
class Views:
    """Cameras and their exact images: cams (V cameras), images (V, H, W, 3)."""

    cams: list
    images: Tensor

    def to(self, device) -> Views:
        """The same views with images and cameras on ``device``."""
        imgs = self.images.to(device)
        return Views([c.to(imgs) for c in self.cams], imgs)


def make_views(
    scene: sp.ProceduralScene,
    n: int,
    size: int,
    *,
    azimuth_start: float = 0.0,
    elevation: float = 20.0,
    radius: float = 4.0,
    fov: float = 50.0,
) -> Views:
    """``n`` orbit views of ``scene``, size × size px, with exact colours (float32)."""
    cams = sp.orbit_cameras(
        n,
        radius,
        elevation,
        width=size,
        height=size,
        fov=fov,
        azimuth_start=azimuth_start,
        target=(0.0, 0.0, 0.2),
    )
    imgs = torch.stack([scene.render(c).color for c in cams]).float()
    return Views([c.to(imgs) for c in cams], imgs)


def init_scene(
    scene: sp.ProceduralScene,
    train: Views,
    n_anchors: int,
    *,
    feat_dim: int,
    n_offsets: int,
    generator: torch.Generator,
) -> ScaffoldScene:
    """Anchors voxel-sampled from points back-projected from the training views'
    exact depth (what a fit from those views could know), then a fresh model."""
    pts = sp.init_gaussians(
        scene, 40 * n_anchors, train.cams, generator=generator, dtype=torch.float64
    ).means
    lo, hi = pts.amin(0), pts.amax(0)
    # a voxel that leaves about 1.5·A occupied cells on the surfaces (A ~ area/v²)
    voxel = float((hi - lo).norm()) / math.sqrt(1.5 * n_anchors)
    anchors = voxel_anchors(pts, voxel, n_anchors, generator)
    return ScaffoldScene(
        anchors.float(),
        voxel,
        feat_dim=feat_dim,
        n_offsets=n_offsets,
        generator=generator,
    )


def render_image(model: ScaffoldScene, cam, feat=None, centres=None) -> Tensor:
    """(H, W, 3) render on a white background."""
    g = model.gaussians(cam, feat, centres)
    bg = torch.tensor(WHITE, dtype=g.means.dtype, device=g.means.device)
    return sp.render(g, cam, background=bg).color


def fit_scene(
    model: ScaffoldScene,
    train: Views,
    steps: int,
    *,
    q0: float = 1.0,
    lr: float = 0.01,
    snap: bool = False,
    mode: str = "fixed",
    generator: torch.Generator,
    callback=None,
) -> ScaffoldScene:
    """Stage 1, in place: L1 to the training views, features noised by U(−½,½)·q0
    (``mode`` = "fixed", as HAC trains; "none" fits without noise, the noise-free
    pipeline's base). With ``snap`` the features end on the grid of step q0 (the
    base as a codec stores it)."""
    if mode not in ("fixed", "none"):
        raise ValueError(f"stage 1 mode must be 'fixed' or 'none', got {mode!r}")
    params = [model.feat, model.offsets, model.log_scaling]
    mlps = [*model.opacity_mlp.parameters(), *model.color_mlp.parameters()]
    mlps += list(model.cov_mlp.parameters())
    opt = torch.optim.Adam(
        [{"params": params, "lr": lr}, {"params": mlps, "lr": lr / 2}]
    )
    qdl = QuantDistortionLayer(model.D, q0, mode).to(model.feat.device).train()
    for it in range(steps):
        i = int(torch.randint(len(train.cams), (1,), generator=generator))
        f, _ = qdl(model.features(watermark=False), generator)
        img = render_image(model, train.cams[i], feat=f)
        loss = (img - train.images[i]).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if callback is not None:
            callback(it, loss.item())
    if snap:
        with torch.no_grad():  # f on the grid of step q0
            model.feat.copy_(quantize_uniform(model.feat, q0))
    return model


def embed(
    base: ScaffoldScene,
    train: Views,
    decoder: KeyedDecoder | None,
    bits: Tensor | None,
    steps: int,
    *,
    mode: str = "learned",
    where: str = "feat",
    lam: float = 0.1,
    logit_scale: float = 10.0,
    hsv_weight: float = 0.0,
    q0: float = 1.0,
    pos_grid: float | None = None,
    lr: float = 0.01,
    train_mlps: bool = True,
    generator: torch.Generator,
    callback=None,
) -> tuple[ScaffoldScene, QuantDistortionLayer, list]:
    """Stage 2 on a copy of ``base``: train the watermark residual (``where`` =
    "feat": f′ in the features; "pos": p′ in the anchor centres; "none": no
    watermark, decoder and bits unused), the QDL's step MLP and (``train_mlps``)
    the three MLPs with
    L = L1 + hsv_weight·L_hsv + lam·BCE(logit_scale·logits, bits), the features
    passed through a QDL of ``mode``. With where="pos" the centres also get
    U(−½,½)·pos_grid noise (the positions' quantization, simulated the same way).
    Returns the model, its QDL and the loss history."""
    if where not in ("feat", "pos", "none"):
        raise ValueError(f"where must be 'feat', 'pos' or 'none', got {where!r}")
    model = copy.deepcopy(base)
    # the learned step's MLP is drawn from the run's generator
    g_qdl = generator if mode == "learned" else None
    qdl = QuantDistortionLayer(model.D, q0, mode, generator=g_qdl)
    qdl = qdl.to(model.feat.device).train()
    mlps = [*model.opacity_mlp.parameters(), *model.color_mlp.parameters()]
    mlps += list(model.cov_mlp.parameters())
    groups = [{"params": qdl.parameters(), "lr": lr}]
    if train_mlps:
        groups.append({"params": mlps, "lr": lr / 2})
    if where == "feat":
        groups.append({"params": [model.wm_feat], "lr": lr})
    if where == "pos":
        groups.append({"params": [model.wm_pos], "lr": lr})
    opt = torch.optim.Adam(groups)
    hist = []
    for _ in range(steps):
        i = int(torch.randint(len(train.cams), (1,), generator=generator))
        f, _ = qdl(model.features(watermark=where == "feat"), generator)
        x = model.centres(watermark=where == "pos")
        if where == "pos" and pos_grid is not None:
            u = torch.rand(x.shape, generator=generator, dtype=x.dtype) - 0.5
            x = x + u.to(x.device) * pos_grid
        img = render_image(model, train.cams[i], feat=f, centres=x)
        loss = (img - train.images[i]).abs().mean()
        if hsv_weight > 0:
            loss = loss + hsv_weight * hsv_masked_loss(img, train.images[i])
        if where != "none":
            logits = decoder(image_to_ll(img))
            loss = loss + lam * F.binary_cross_entropy_with_logits(
                logit_scale * logits, bits[None].expand_as(logits)
            )
        opt.zero_grad()
        loss.backward()
        opt.step()
        hist.append(loss.item())
        if callback is not None:
            callback(len(hist) - 1, hist[-1])
    return model, qdl, hist


@torch.no_grad()
def compress(
    model: ScaffoldScene, delta: float = 1.0, pos_grid: float | None = None
) -> tuple[Tensor, Tensor]:
    """What a codec stores, dequantized: features f̂ = Δ·round((f + tanh f′)/Δ)
    and, if ``pos_grid``, centres rounded to that grid.
    → feat (A, D), centres (A, 3)."""
    f = quantize_uniform(model.features(), delta)
    x = model.centres()
    if pos_grid is not None:
        x = quantize_uniform(x, pos_grid)
    return f, x


@torch.no_grad()
def quantize_offsets(model: ScaffoldScene, step: float) -> ScaffoldScene:
    """A copy of ``model`` whose child offsets (A, K, 3) are rounded to ``step``, as
    HAC also quantizes offsets (the official code simulates it with U(−½,½)·0.2
    noise); pass the copy to :func:`compress` and :func:`evaluate` for the harsher
    codec."""
    if not (isinstance(step, (int, float)) and math.isfinite(step) and step > 0):
        raise ValueError(f"step must be a finite number > 0, got {step!r}")
    out = copy.deepcopy(model)
    out.offsets.copy_(quantize_uniform(out.offsets, step))
    return out


@torch.no_grad()
def evaluate(
    model: ScaffoldScene,
    views: Views,
    decoder: KeyedDecoder | None = None,
    bits: Tensor | None = None,
    feat: Tensor | None = None,
    centres: Tensor | None = None,
) -> dict:
    """Render every view: {"psnr": mean PSNR (dB), "images" (V, H, W, 3), and with a
    decoder "logits" (V, L) and "acc" (mean bit accuracy over views)}."""
    imgs = torch.stack([render_image(model, c, feat, centres) for c in views.cams])
    out = {
        "images": imgs,
        "psnr": float(
            torch.stack([sp.psnr(a, b) for a, b in zip(imgs, views.images)]).mean()
        ),
    }
    if decoder is not None:
        logits = decoder(image_to_ll(imgs))
        out["logits"] = logits
        out["acc"] = float(((logits > 0).float() == bits).float().mean())
    return out
