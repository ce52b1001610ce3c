"""Pinhole geometry, metrics and the classical baselines.

* flow and depth under an in-plane translation: ``u = f t / Z`` and back;
* ``abs_rel`` (median-aligned), ``psnr``;
* a classical flow estimator (per-patch horizontal block matching at sub-pixel shifts),
  the stand-in for OpenCV's Farneback flow in the "through RGB" depth pathway;
* a forward warp with a z-buffer (disocclusion leaves holes), used on the stereo pair,
  and the naive cut-and-paste edit of an object.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..validate import as_tensor, check_positive


def _shift(name: str, t, like: torch.Tensor) -> torch.Tensor:
    """A shift ``t`` (a number or a tensor that broadcasts to ``like``'s shape),
    finite, as a tensor of ``like``'s dtype and device."""
    if isinstance(t, torch.Tensor):
        as_tensor(t, name)
    elif isinstance(t, bool) or not isinstance(t, (int, float)):
        raise TypeError(f"{name} must be a number or a tensor, got {type(t).__name__}")
    t = torch.as_tensor(t, dtype=like.dtype, device=like.device)
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    try:
        shape = torch.broadcast_shapes(t.shape, like.shape)
    except RuntimeError:
        shape = None
    if shape != like.shape:
        raise ValueError(
            f"{name} of shape {tuple(t.shape)} must broadcast to the flow's shape "
            f"{tuple(like.shape)} (e.g. (B, 1) for (B, N))"
        )
    return t


def flow_from_depth(Z: torch.Tensor, t: torch.Tensor | float, f: float) -> torch.Tensor:
    """Horizontal flow (pixels) of points at depth ``Z`` when the scene shifts by ``t``
    across the optical axis: ``u = f t / Z``. ``Z`` any shape, positive; ``t``
    broadcasts."""
    as_tensor(Z, "Z")
    if (Z <= 0).any():
        raise ValueError("depth Z must be positive")
    f = check_positive("f", f)
    return f * _shift("t", t, Z) / Z  # pinhole: x = f X / Z, so dx = f dX / Z


def depth_from_flow(
    u: torch.Tensor, t: torch.Tensor | float, f: float, min_flow: float = 0.0
) -> torch.Tensor:
    """Depth from horizontal flow under a known shift ``t``: ``Z = f |t| / |u|``.

    ``u`` any shape; ``|u|`` is clamped below at ``min_flow`` (a predicted flow of 0
    would mean infinite depth); with ``min_flow = 0`` a zero flow is a ``ValueError``.
    """
    as_tensor(u, "u")
    f = check_positive("f", f)
    t = _shift("t", t, u)
    if (t == 0).any():
        raise ValueError("t must be non-zero: depth needs a camera translation")
    a = u.abs().clamp_min(min_flow)
    if (a == 0).any():
        raise ValueError("zero flow means infinite depth; pass min_flow > 0")
    return f * t.abs() / a  # Z = f |t| / |u|


def abs_rel(
    pred: torch.Tensor, gt: torch.Tensor, median_align: bool = True
) -> torch.Tensor:
    """Mean absolute relative error per image, ``mean |s pred - gt| / gt``.

    ``pred``, ``gt``: (B, ...) positive depths. With ``median_align`` each image's
    prediction is scaled by ``s = median(gt) / median(pred)`` first (monocular depth is
    known only up to scale). Returns (B,).
    """
    as_tensor(pred, "pred")
    as_tensor(gt, "gt")
    if pred.shape != gt.shape:
        raise ValueError(f"pred {tuple(pred.shape)} and gt {tuple(gt.shape)} differ")
    if (gt <= 0).any() or (pred <= 0).any():
        raise ValueError("depths must be positive")
    p, g = pred.flatten(1), gt.flatten(1)
    if median_align:
        p = p * (g.median(1).values / p.median(1).values)[:, None]
    return ((p - g).abs() / g).mean(1)


def psnr(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Peak signal-to-noise ratio (dB) of images in [0, 1]: (B, ...) -> (B,). Images
    outside [0, 1] (0-255 ones, say, which would score about -40 dB) are refused."""
    for name, x in (("a", a), ("b", b)):
        as_tensor(x, name, floating=True)
        if x.min() < -1e-4 or x.max() > 1 + 1e-4:
            raise ValueError(
                f"{name} must hold intensities in [0, 1], got values in "
                f"[{x.min().item():.3g}, {x.max().item():.3g}]"
            )
    if a.shape != b.shape:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} differ")
    mse = (a - b).pow(2).flatten(1).mean(1).clamp_min(1e-10)
    return 10 * torch.log10(1.0 / mse)


def patch_mean(x: torch.Tensor, P: int) -> torch.Tensor:
    """Mean over ``P x P`` patches: (B, H, W) -> (B, H/P * W/P), row-major patches."""
    B, H, W = x.shape
    if H % P or W % P:
        raise ValueError(f"H, W = {H}, {W} must be multiples of the patch size {P}")
    return x.reshape(B, H // P, P, W // P, P).mean((2, 4)).flatten(1)


def shift_rows(img: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """Sample ``img`` (B, C, H, W) at ``x + s`` with linear interpolation along rows
    (border values repeat). ``s`` broadcasts to (B, H, W)."""
    B, C, H, W = img.shape
    s = torch.as_tensor(s, dtype=img.dtype, device=img.device).expand(B, H, W)
    xs = (torch.arange(W, dtype=img.dtype, device=img.device) + s).clamp(0, W - 1)
    gx = 2 * (xs + 0.5) / W - 1
    gy = (2 * (torch.arange(H, dtype=img.dtype, device=img.device) + 0.5) / H - 1)[
        None, :, None
    ].expand(B, H, W)
    grid = torch.stack([gx, gy], -1)
    return F.grid_sample(img, grid, mode="bilinear", align_corners=False)


def block_matching_flow(
    rgb0: torch.Tensor, rgb1: torch.Tensor, P: int, lim: float = 8.0, step: float = 0.25
) -> torch.Tensor:
    """Classical per-patch horizontal flow: for each ``P x P`` patch of ``rgb0`` the
    shift ``s`` in ``[-lim, lim]`` (steps of ``step``) whose samples ``rgb1(x + s)``
    match the patch best in squared error. (B, 3, H, W) x 2 -> (B, n_patches)."""
    as_tensor(rgb0, "rgb0")
    as_tensor(rgb1, "rgb1")
    shifts = torch.arange(-lim, lim + step / 2, step, device=rgb0.device)
    err = []
    for s in shifts:  # a few dozen candidate shifts, each vectorised over the batch
        d = (shift_rows(rgb1, s) - rgb0).pow(2).sum(1)  # (B, H, W)
        err.append(patch_mean(d, P))
    err = torch.stack(err, -1)  # (B, n_patches, n_shifts)
    # ties (flat patches) go to the smallest |s|: add a tiny penalty on |s|
    err = err + 1e-6 * shifts.abs()
    return shifts[err.argmin(-1)]


def forward_warp(
    img: torch.Tensor, u: torch.Tensor, depth: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward-warp ``img`` (C, H, W) by integer-rounded horizontal flow ``u`` (H, W);
    where two pixels land on one, the nearer (smaller ``depth``) wins (a z-buffer).
    Returns the warped image (C, H, W) and the mask of pixels that received a value
    (False in disocclusions)."""
    C, H, W = img.shape
    x = torch.arange(W, device=img.device)[None].expand(H, W)
    xt = (x + u.round().long()).clamp(-1, W)
    ok = (xt >= 0) & (xt < W)
    ys = torch.arange(H, device=img.device)[:, None].expand(H, W)
    key = (ys * W + xt)[ok]  # target pixel of every source pixel that lands inside
    z = depth[ok]
    # z-buffer: the smallest depth landing on each target pixel wins
    zmin = torch.full((H * W,), float("inf"), dtype=z.dtype, device=img.device)
    zmin = zmin.scatter_reduce(0, key, z, reduce="amin")
    win = z <= zmin[key]
    out = torch.zeros(C, H * W, dtype=img.dtype, device=img.device)
    out[:, key[win]] = img[:, ok][:, win]
    filled = torch.zeros(H * W, dtype=torch.bool, device=img.device)
    filled[key] = True
    out, filled = out.reshape(C, H, W), filled.reshape(H, W)
    return out, filled


def cut_and_paste(
    rgb0: torch.Tensor, mask0: torch.Tensor, shift: torch.Tensor
) -> torch.Tensor:
    """The naive edit: cut the object (``mask0`` > 0.5, (B, H, W)) out of ``rgb0``
    (B, 3, H, W), fill its hole with the mean background colour, and paste it
    ``shift`` (B,) pixels (rounded) sideways. Returns (B, 3, H, W)."""
    B, _, H, W = rgb0.shape
    m = (mask0 > 0.5).float()[:, None]
    bg = ((1 - m) * rgb0).sum((2, 3)) / (1 - m).sum((2, 3)).clamp_min(1)
    out = rgb0 * (1 - m) + m * bg[:, :, None, None]
    k = shift.round().long()
    idx = (torch.arange(W, device=rgb0.device)[None] - k[:, None]).clamp(0, W - 1)
    valid = ((torch.arange(W, device=rgb0.device)[None] - k[:, None]) >= 0) & (
        (torch.arange(W, device=rgb0.device)[None] - k[:, None]) < W
    )
    moved = torch.gather(rgb0, 3, idx[:, None, None].expand(B, 3, H, W))
    mm = torch.gather(m, 3, idx[:, None, None].expand(B, 1, H, W))
    mm = mm * valid[:, None, None].float()
    return out * (1 - mm) + moved * mm


def depth_from_disparity(
    disp: torch.Tensor, f: float, baseline: float, doffs: float = 0.0
) -> torch.Tensor:
    """Stereo depth ``Z = f B / (d + doffs)``: the pinhole flow of a camera shifted by
    the baseline ``B`` (``doffs``: the principal points' x-offset, in pixels)."""
    return depth_from_flow(disp + doffs, baseline, f)


def disparity_from_depth(
    Z: torch.Tensor, f: float, baseline: float, doffs: float = 0.0
) -> torch.Tensor:
    """The inverse of :func:`depth_from_disparity`: ``d = f B / Z - doffs``."""
    return flow_from_depth(Z, baseline, f) - doffs


def stereo_warp_gain(
    left: torch.Tensor, right: torch.Tensor, disp: torch.Tensor
) -> tuple[float, float, float]:
    """Forward-warp the ``left`` image (3, H, W) in [0, 1] by its disparity ``disp``
    (H, W; NaN or inf where unknown) to the right view (``x_R = x_L - d``). Returns
    (PSNR of the warp, PSNR of the unwarped left image, share of right-view pixels
    filled), both PSNRs against ``right`` over the pixels the warp filled."""
    ok = torch.isfinite(disp)
    d = torch.where(ok, disp, torch.zeros_like(disp))
    # unknown disparities go nowhere: send them off the image
    u = torch.where(ok, -d, torch.full_like(d, -10.0 * left.shape[-1]))
    z = torch.where(ok, 1.0 / d.clamp_min(1e-3), torch.full_like(d, 1e9))
    warped, filled = forward_warp(left, u, z)
    m = filled[None].expand_as(right)
    mse = lambda a: (a - right)[m].pow(2).mean().clamp_min(1e-10)
    p_warp = (10 * torch.log10(1 / mse(warped))).item()
    p_id = (10 * torch.log10(1 / mse(left))).item()
    return p_warp, p_id, filled.float().mean().item()
