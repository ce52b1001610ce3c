"""EWA projection and depth-sorted alpha compositing, in plain differentiable PyTorch.

The pipeline of 3D Gaussian splatting (Kerbl et al., 2023), without the CUDA kernels:

1. ``project``: each Gaussian's mean goes to pixel coordinates, and its covariance to
   the image plane through the local affine approximation of EWA splatting (Zwicker et
   al., 2002): Σ' = J W Σ Wᵀ Jᵀ, with W the camera rotation and J the Jacobian of the
   perspective map at the mean. Gaussians at or behind the near plane are culled.
2. ``render``: Gaussians are sorted by camera depth (front to back, one global sort as
   in 3DGS) and, per pixel, composited as C = Σ_i c_i α_i T_i + T_N·bg, with
   α_i = o_i exp(−½ dᵀ Σ'_i⁻¹ d) and the transmittance T_i = Π_{j<i} (1 − α_j).

Work is dense over (pixels × Gaussians) inside a chunk of pixels: pixels (a whole
image's, or a batch's) are binned into square tiles, and each chunk only sees the
Gaussians whose cut-off ellipse meets the chunk's bounding box. The cut-off is part of
the model (α = 0 beyond ``cutoff`` Mahalanobis radii), so the culling is exact: tiles
and chunks change the cost, never the result.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..validate import as_tensor, check_positive
from .camera import Camera, pixel_grid
from .gaussians import Gaussians, check_gaussians, covariance_3d

Tensor = torch.Tensor

# The dilation added to every 2D covariance, in px²: the 3DGS reference adds 0.3 to the
# diagonal as a low-pass filter, so that a splat never gets thinner than about a pixel
# (no aliasing, no singular Σ'); gsplat calls it eps2d.
EPS2D = 0.3
# Opacity is capped below 1 (as 3DGS does with 0.99): log(1 − α) stays finite, so the
# transmittance and its gradient do too.
ALPHA_MAX = 0.99


class Projection(NamedTuple):
    """Gaussians projected into one camera (all N, culled ones flagged).

    mean2d (N, 2) pixel coordinates (u, v); cov2d (N, 2, 2) the dilated Σ';
    conic (N, 3) the entries (a, b, c) of Σ'⁻¹ = [[a, b], [b, c]]; depth (N,) camera z;
    valid (N,) bool, z > near; extent (N, 2) the half-widths in u and v of the
    cut-off ellipse (no gradient; used for culling).
    """

    mean2d: Tensor
    cov2d: Tensor
    conic: Tensor
    depth: Tensor
    valid: Tensor
    extent: Tensor


class RenderOutput(NamedTuple):
    """What ``render`` returns: for an image (H, W, C), (H, W), (H, W); for a pixel
    batch (P, C), (P,), (P,).

    color: composited colour, background included; alpha: accumulated opacity
    Σ_i α_i T_i = 1 − T_N in [0, 1]; depth: expected camera depth of the splats,
    Σ_i α_i T_i z_i / max(alpha, 1e-6) (about 0 where nothing was hit).
    """

    color: Tensor
    alpha: Tensor
    depth: Tensor


def project(
    gaussians: Gaussians,
    camera: Camera,
    *,
    near: float = 0.01,
    eps2d: float = EPS2D,
    cutoff: float = 3.5,
) -> Projection:
    """EWA projection of N Gaussians into ``camera`` (cast to the Gaussians' dtype)."""
    check_gaussians(gaussians)
    check_positive("near", near)
    check_positive("cutoff", cutoff)
    if not eps2d >= 0:
        raise ValueError(f"eps2d must be >= 0, got {eps2d}")
    cam = camera.to(gaussians.means)
    p = gaussians.means @ cam.R.T + cam.t  # p = R μ + t, (N, 3)
    valid = p[:, 2] > near
    # Culled Gaussians get a harmless depth of 1 so that no inf/NaN enters the graph
    # (a NaN there would poison the gradients of the others through the backward pass).
    z = torch.where(valid, p[:, 2], torch.ones_like(p[:, 2]))
    mean2d = torch.stack(
        [cam.fx * p[:, 0] / z + cam.cx, cam.fy * p[:, 1] / z + cam.cy], dim=-1
    )  # (u, v) = (fx x/z + cx, fy y/z + cy)
    # As in 3DGS, J is taken at x/z, y/z clamped to 1.3× the half field of view (15% of
    # the image size beyond each edge): far off-screen Gaussians would get huge,
    # meaningless footprints from the linearisation otherwise.
    mx, my = 0.15 * cam.width / cam.fx, 0.15 * cam.height / cam.fy
    tx = (p[:, 0] / z).clamp(-cam.cx / cam.fx - mx, (cam.width - cam.cx) / cam.fx + mx)
    ty = (p[:, 1] / z).clamp(-cam.cy / cam.fy - my, (cam.height - cam.cy) / cam.fy + my)
    zero = torch.zeros_like(z)
    J = torch.stack(
        [
            torch.stack([cam.fx / z, zero, -cam.fx * tx / z], dim=-1),
            torch.stack([zero, cam.fy / z, -cam.fy * ty / z], dim=-1),
        ],
        dim=-2,
    )  # J = ∂(u, v)/∂(x, y, z) = [[fx/z, 0, −fx x/z²], [0, fy/z, −fy y/z²]], (N, 2, 3)
    T = J @ cam.R  # J W, (N, 2, 3)
    Sigma = covariance_3d(gaussians.log_scales, gaussians.quats)
    eye = torch.eye(2, dtype=z.dtype, device=z.device)
    cov2d = T @ Sigma @ T.transpose(-1, -2) + eps2d * eye  # Σ' = J W Σ Wᵀ Jᵀ + ε I
    a, b, c = cov2d[:, 0, 0], cov2d[:, 0, 1], cov2d[:, 1, 1]
    det = (a * c - b * b).clamp_min(torch.finfo(z.dtype).tiny)
    conic = torch.stack([c / det, -b / det, a / det], dim=-1)  # Σ'⁻¹ = adj Σ' / det
    extent = cutoff * torch.stack([a, c], dim=-1).detach().sqrt()  # box of the ellipse
    return Projection(mean2d, cov2d, conic, p[:, 2], valid, extent)


def composite(
    alpha: Tensor, colors: Tensor, depths: Tensor, background: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Front-to-back compositing of sorted layers.

    alpha: (P, M) opacities in [0, 1) per pixel and layer, nearest layer first;
    colors: (M, C); depths: (M,); background: (C,) or None (black).
    Returns color (P, C), accumulated alpha (P,), expected depth (P,) and the
    transmittance T (P, M) in front of each layer.
    """
    log1m = torch.log1p(-alpha)  # log(1 − α_j), finite since α ≤ α_max < 1
    log_t = torch.cumsum(log1m, dim=1)  # log Π_{j≤i} (1 − α_j): a sum, no underflow
    zeros = log_t.new_zeros(log_t.shape[0], 1)  # (P, 1), also when M = 0
    T = torch.cat([zeros, log_t[:, :-1]], dim=1).exp()  # T_i = exp Σ_{j<i} log(1 − α_j)
    w = alpha * T  # w_i = α_i T_i
    color = w @ colors  # Σ_i w_i c_i
    acc = w.sum(dim=1)  # Σ_i w_i = 1 − T_N
    depth = (w @ depths) / acc.clamp_min(1e-6)  # E[z] = Σ_i w_i z_i / Σ_i w_i
    if background is not None:
        t_final = torch.cat([zeros, log_t], dim=1)[:, -1].exp()  # T_N
        color = color + t_final[:, None] * background  # + T_N · bg
    return color, acc, depth, T


def render(
    gaussians: Gaussians,
    camera: Camera,
    pixels: Tensor | None = None,
    *,
    background: Tensor | None = None,
    near: float = 0.01,
    eps2d: float = EPS2D,
    cutoff: float = 3.5,
    alpha_max: float = ALPHA_MAX,
    tile: int = 16,
    chunk: int = 4096,
) -> RenderOutput:
    """Render ``gaussians`` seen from ``camera``: a whole image, or a batch of pixels.

    Args:
        gaussians: N Gaussians; the output follows their device and dtype.
        camera: the camera (cast to the Gaussians' device and dtype).
        pixels: None for the whole (H, W) image, or (P, 2) pixel coordinates (u, v);
            pixel (i, j)'s centre is (j + ½, i + ½), see ``pixel_grid``.
        background: (C,) colour behind the splats, or None for black.
        near: Gaussians with camera depth z ≤ near are culled.
        eps2d: the dilation added to Σ' (px²), see ``EPS2D``.
        cutoff: α = 0 beyond this many Mahalanobis radii from a splat's centre.
        alpha_max: the cap on α, in (0, 1).
        tile: side (px) of the square tiles that pixels are binned into; chunk: the
            most pixels composited at once (both bound memory, neither the result).

    Returns:
        RenderOutput(color, alpha, depth), shaped (H, W, C), (H, W), (H, W) for an
        image and (P, C), (P,), (P,) for a pixel batch.
    """
    check_gaussians(gaussians)
    if not 0 < alpha_max < 1:
        raise ValueError(f"alpha_max must be in (0, 1), got {alpha_max}")
    for name, v in (("tile", tile), ("chunk", chunk)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    like = gaussians.means
    n_ch = gaussians.colors.shape[1]
    if background is not None:
        background = _like(background, "background", (n_ch,), like)
    if pixels is not None:
        pixels = _like(pixels, "pixels", None, like)
        if pixels.ndim != 2 or pixels.shape[1] != 2:
            raise ValueError(
                f"pixels must have shape (P, 2), got {tuple(pixels.shape)}"
            )
        if len(pixels) == 0:
            raise ValueError("pixels is empty: pass at least one (u, v)")
    proj = project(gaussians, camera, near=near, eps2d=eps2d, cutoff=cutoff)
    # One global front-to-back order over the Gaussians in front of the camera.
    idx = proj.valid.nonzero().squeeze(1)
    idx = idx[torch.argsort(proj.depth[idx], stable=True)]
    layers = (
        proj.mean2d[idx],
        proj.conic[idx],
        gaussians.opacities[idx],
        gaussians.colors[idx],
        proj.depth[idx],
        proj.extent[idx],
    )
    args = (layers, background, cutoff, alpha_max)
    H, W = camera.height, camera.width
    full = pixels is None
    if full:
        pixels = pixel_grid(W, H, dtype=like.dtype, device=like.device)
    # Bin the pixels by tile, so that each chunk covers a small box and meets few
    # splats; a random pixel batch then costs about what the same pixels of a whole
    # image cost. The loop runs over tiles and chunks, never over pixels or splats.
    n_tx, n_ty = -(-W // tile), -(-H // tile)
    tx = torch.floor(pixels[:, 0].detach() / tile).clamp(0, n_tx - 1)
    ty = torch.floor(pixels[:, 1].detach() / tile).clamp(0, n_ty - 1)
    order = torch.argsort((ty * n_tx + tx).long(), stable=True)
    counts = torch.unique_consecutive((ty * n_tx + tx)[order], return_counts=True)[1]
    outs, start = [], 0
    for count in counts.tolist():
        for s in range(start, start + count, chunk):
            sel = order[s : min(s + chunk, start + count)]
            outs.append(_render_chunk(pixels[sel], *args))
        start += count
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(len(order), device=order.device)
    out = [torch.cat(parts)[inverse] for parts in zip(*outs)]  # back to input order
    if full:
        out = [o.reshape(H, W, *o.shape[1:]) for o in out]
    return RenderOutput(*out)


def _render_chunk(xy, layers, background, cutoff, alpha_max):
    """Composite the sorted layers at pixels xy (P, 2) → color, alpha, depth."""
    mean2d, conic, opac, colors, depths, extent = layers
    lo, hi = xy.detach().amin(0), xy.detach().amax(0)
    # Exact culling: dᵀ Σ'⁻¹ d ≥ d_u² / Σ'_uu (and the same in v), so a pixel outside
    # a splat's box |d_u| ≤ cutoff·√Σ'_uu gets α = 0 from it; a splat whose box misses
    # the chunk's box can be left out without changing anything.
    margin = 1e-6 * (1 + extent)
    meets = (
        (mean2d.detach() + extent + margin >= lo)
        & (mean2d.detach() - extent - margin <= hi)
    ).all(1)
    k = meets.nonzero().squeeze(1)  # ascending, so still sorted by depth
    d = xy[:, None, :] - mean2d[k][None]  # d = x − μ', (P, M, 2)
    a, b, c = conic[k].unbind(-1)
    # −½ dᵀ Σ'⁻¹ d; ≤ 0 in exact arithmetic, clamped so round-off never makes exp > 1.
    power = (
        -0.5 * (a * d[..., 0] ** 2 + c * d[..., 1] ** 2) - b * d[..., 0] * d[..., 1]
    ).clamp(max=0.0)
    inside = power > -0.5 * cutoff**2  # the cut-off ellipse (Mahalanobis radius)
    alpha = opac[k] * power.exp()  # α = o exp(−½ dᵀ Σ'⁻¹ d)
    alpha = torch.where(inside, alpha, 0.0).clamp(max=alpha_max)  # 0 outside; ≤ α_max
    color, acc, depth, _ = composite(alpha, colors[k], depths[k], background)
    return color, acc, depth


def _like(t, name, shape, like: Tensor) -> Tensor:
    """Check a user tensor's type, shape, device and values; cast it to like's dtype."""
    as_tensor(t, name, shape=shape, empty=True)  # finite, the right shape
    if t.device != like.device:
        raise ValueError(
            f"{name} is on {t.device} but the Gaussians are on {like.device}"
        )
    return t.to(like.dtype)
