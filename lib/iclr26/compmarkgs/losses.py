"""The two explored options: the HSV colour loss and frequency-aware anchor growing
(FAG).

* HSV loss: the render goes to HSV; it is split into red, green and blue hue masks
  (saturation and value ≥ 0.2), and inside each the RGB squared error to the ground
  truth is averaged (as the official code does: the HSV only picks the pixels).
* FAG: a DFT high-pass of the gray images, then a local SSIM error map; anchors whose
  projected centres land where median + lo ≤ error ≤ median + hi may grow.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

Tensor = torch.Tensor


def _check_img(img: Tensor, name: str = "img") -> None:
    if not isinstance(img, Tensor) or not img.is_floating_point():
        raise TypeError(f"{name} must be a floating-point torch.Tensor")
    if img.ndim < 1 or img.shape[-1] != 3 or img.numel() == 0:
        raise ValueError(f"{name} must be (..., 3) RGB, got {tuple(img.shape)}")
    if not torch.isfinite(img).all():
        raise ValueError(f"{name} contains NaN or inf")


def rgb_to_hsv(img: Tensor, eps: float = 1e-8) -> Tensor:
    """RGB in [0, 1], (..., 3) → HSV (..., 3) with hue as a fraction of the circle
    in [0, 1), as ``colorsys.rgb_to_hsv``."""
    _check_img(img)
    r, g, b = img.unbind(-1)
    v, arg = img.max(-1)  # V = max(r, g, b)
    c = v - img.min(-1).values  # chroma C = max − min
    s = torch.where(v > eps, c / v.clamp_min(eps), torch.zeros_like(v))  # S = C/V
    cc = c.clamp_min(eps)
    # H = ((g − b)/C mod 6, (b − r)/C + 2, (r − g)/C + 4)/6 by which channel is max
    h = (
        torch.stack(
            [((g - b) / cc).remainder(6), (b - r) / cc + 2, (r - g) / cc + 4], -1
        ).gather(-1, arg[..., None])[..., 0]
        / 6
    )
    h = torch.where(c > eps, h, torch.zeros_like(h)).remainder(1.0)
    return torch.stack([h, s, v], -1)


def hsv_masks(img: Tensor, s_min: float = 0.2, v_min: float = 0.2) -> Tensor:
    """(..., 3) bool masks of the red, green and blue pixels of img (..., 3): hue in
    [0°, 60°) ∪ [300°, 360°), [60°, 180°), [180°, 300°), with S ≥ s_min, V ≥ v_min."""
    h, s, v = rgb_to_hsv(img).unbind(-1)
    deg = 360 * h
    ok = (s >= s_min) & (v >= v_min)
    red = (deg < 60) | (deg >= 300)
    green = (deg >= 60) & (deg < 180)
    blue = (deg >= 180) & (deg < 300)
    return torch.stack([red, green, blue], -1) & ok[..., None]


def hsv_masked_loss(img: Tensor, gt: Tensor) -> Tensor:
    """The HSV colour loss: for each of the red/green/blue masks of the render
    (no gradient through the masks), the MSE of mask·img against mask·gt over all
    entries; the mean of the three. img, gt: (..., 3) RGB → ()."""
    _check_img(img), _check_img(gt, "gt")
    if img.shape != gt.shape:
        raise ValueError(f"shapes differ: {tuple(img.shape)} vs {tuple(gt.shape)}")
    with torch.no_grad():
        m = hsv_masks(img).to(img.dtype)  # (..., 3 colours)
    d = (img - gt)[..., None, :] * m[..., :, None]  # (..., colour, channel)
    return (d**2).mean(dim=tuple(range(d.ndim - 2)) + (d.ndim - 1,)).mean()


def highpass(gray: Tensor, cutoff: float) -> Tensor:
    """Zero every DFT frequency of gray (H, W) with radius < cutoff·Nyquist."""
    if gray.ndim != 2:
        raise ValueError(f"gray must be (H, W), got {tuple(gray.shape)}")
    if not 0 <= cutoff <= math.sqrt(2):
        raise ValueError(f"cutoff must be in [0, √2], got {cutoff}")
    H, W = gray.shape
    fy = torch.fft.fftfreq(H, device=gray.device, dtype=gray.dtype)[:, None] * 2
    fx = torch.fft.fftfreq(W, device=gray.device, dtype=gray.dtype)[None, :] * 2
    keep = (fx**2 + fy**2).sqrt() >= cutoff  # radius in units of Nyquist
    return torch.fft.ifft2(torch.fft.fft2(gray) * keep).real


def ssim_map(x: Tensor, y: Tensor, window: int = 7, sigma: float = 1.5) -> Tensor:
    """Local SSIM of gray images (H, W), 'same' size (reflect padding) → (H, W)."""
    r = torch.arange(window, dtype=x.dtype, device=x.device) - (window - 1) / 2
    g = torch.exp(-(r**2) / (2 * sigma**2))
    k = (g[:, None] * g[None, :] / g.sum() ** 2)[None, None]
    p = window // 2
    blur = lambda t: F.conv2d(F.pad(t[None, None], (p, p, p, p), mode="reflect"), k)[
        0, 0
    ]
    mx, my = blur(x), blur(y)
    vx, vy, cxy = blur(x * x) - mx**2, blur(y * y) - my**2, blur(x * y) - mx * my
    c1, c2 = 0.01**2, 0.03**2
    return ((2 * mx * my + c1) * (2 * cxy + c2)) / (
        (mx**2 + my**2 + c1) * (vx + vy + c2)
    )


def highpass_ssim_error(img: Tensor, gt: Tensor, cutoff: float = 0.25) -> Tensor:
    """FAG's error map: 1 − SSIM between the DFT high-passes of the gray render and
    ground truth. img, gt: (H, W, 3) → (H, W)."""
    _check_img(img), _check_img(gt, "gt")
    if img.shape != gt.shape or img.ndim != 3:
        raise ValueError("img and gt must both be (H, W, 3)")
    w = torch.tensor([0.299, 0.587, 0.114], dtype=img.dtype, device=img.device)
    return 1 - ssim_map(highpass(img @ w, cutoff), highpass(gt @ w, cutoff))


def frequency_aware_grow(
    err_map: Tensor, uv: Tensor, lo: float = 0.1, hi: float = 0.3
) -> Tensor:
    """Which anchors may grow: those whose projected centre uv (A, 2) (pixel
    coordinates (u, v)) falls in a pixel with median + lo ≤ err ≤ median + hi.
    err_map (H, W) → (A,) bool (False off-screen)."""
    if err_map.ndim != 2 or uv.ndim != 2 or uv.shape[1] != 2:
        raise ValueError("err_map must be (H, W) and uv (A, 2)")
    if not lo <= hi:
        raise ValueError(f"need lo <= hi, got {lo}, {hi}")
    H, W = err_map.shape
    j, i = torch.floor(uv[:, 0]).long(), torch.floor(uv[:, 1]).long()
    on = (i >= 0) & (i < H) & (j >= 0) & (j < W)
    e = err_map[i.clamp(0, H - 1), j.clamp(0, W - 1)]
    med = err_map.median()
    return on & (e >= med + lo) & (e <= med + hi)
