"""Image metrics: PSNR, and SSIM with the usual 11×11 Gaussian window (σ = 1.5)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

Tensor = torch.Tensor


def psnr(pred: Tensor, target: Tensor, max_val: float = 1.0) -> Tensor:
    """PSNR in dB over all entries. pred, target: the same shape → ()."""
    _check_pair(pred, target)
    mse = ((pred - target) ** 2).mean()
    return 10 * torch.log10(max_val**2 / mse)  # PSNR = 10 log10(max² / MSE)


def ssim(
    pred: Tensor,
    target: Tensor,
    *,
    max_val: float = 1.0,
    window: int = 11,
    sigma: float = 1.5,
) -> Tensor:
    """Mean SSIM (Wang et al., 2004) of images (H, W, C) or (B, H, W, C) → ().

    Local statistics use a Gaussian window with 'valid' borders (no padding), which is
    what scikit-image's ``structural_similarity(gaussian_weights=True, sigma=1.5,
    use_sample_covariance=False, data_range=max_val)`` averages too.
    """
    _check_pair(pred, target)
    if pred.ndim not in (3, 4):
        raise ValueError(f"images must be (H, W, C) or (B, H, W, C), got {pred.ndim}-D")
    if min(pred.shape[-3:-1]) < window:
        raise ValueError(f"images must be at least {window} px on each side")
    x = pred.reshape(-1, *pred.shape[-3:]).permute(0, 3, 1, 2)  # (B, C, H, W)
    y = target.reshape(-1, *target.shape[-3:]).permute(0, 3, 1, 2)
    n_ch = x.shape[1]
    r = torch.arange(window, dtype=x.dtype, device=x.device) - (window - 1) / 2
    g = torch.exp(-(r**2) / (2 * sigma**2))
    g = g / g.sum()
    k = (g[:, None] * g[None, :]).expand(n_ch, 1, window, window)  # separable window
    blur = lambda t: F.conv2d(t, k, groups=n_ch)
    mx, my = blur(x), blur(y)
    vx = blur(x * x) - mx**2  # σ_x² = E[x²] − μ_x²
    vy = blur(y * y) - my**2
    cxy = blur(x * y) - mx * my  # σ_xy = E[xy] − μ_x μ_y
    c1, c2 = (0.01 * max_val) ** 2, (0.03 * max_val) ** 2
    num = (2 * mx * my + c1) * (2 * cxy + c2)
    den = (mx**2 + my**2 + c1) * (vx + vy + c2)
    return (
        num / den
    ).mean()  # SSIM = (2μxμy + c1)(2σxy + c2) / ((μx²+μy²+c1)(σx²+σy²+c2))


def _check_pair(pred, target) -> None:
    for name, t in (("pred", pred), ("target", target)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be floating point, got {t.dtype}")
    if pred.shape != target.shape:
        raise ValueError(f"shapes differ: {tuple(pred.shape)} vs {tuple(target.shape)}")
    if pred.numel() == 0:
        raise ValueError("images are empty")
    if not (torch.isfinite(pred).all() and torch.isfinite(target).all()):
        raise ValueError("images contain NaN or inf")


__all__ = ["psnr", "ssim"]
