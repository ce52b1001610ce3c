"""3D Gaussians: the parameters, their checks, and the covariance Σ = R S Sᵀ Rᵀ.

A scene is N anisotropic Gaussians. Each has a mean μ ∈ R³, log-scales log s ∈ R³ (the
scales are exp of them, so they stay positive under any optimiser step), a rotation
given as a quaternion q = (w, x, y, z) (real part first, as in the 3DGS reference code
and gsplat; it need not be unit, it is normalised where it is used), a colour (any
number C of channels, used as given, no activation) and an opacity logit (the opacity
is its sigmoid).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

Tensor = torch.Tensor


@dataclass(eq=False)  # holds tensors: compare fields explicitly
class Gaussians:
    """N 3D Gaussians, checked on construction.

    Attributes:
        means: (N, 3) centres μ in world coordinates.
        log_scales: (N, 3) log of the standard deviations along the local axes.
        quats: (N, 4) rotations as (w, x, y, z); any non-zero norm.
        colors: (N, C) colours (or any per-Gaussian features), used as given.
        opacity_logits: (N,) opacity before the sigmoid.
    """

    means: Tensor
    log_scales: Tensor
    quats: Tensor
    colors: Tensor
    opacity_logits: Tensor

    def __post_init__(self) -> None:
        check_gaussians(self)

    @property
    def n(self) -> int:
        """The number of Gaussians N."""
        return self.means.shape[0]

    @property
    def scales(self) -> Tensor:
        """(N, 3) standard deviations s = exp(log s)."""
        return self.log_scales.exp()

    @property
    def opacities(self) -> Tensor:
        """(N,) opacities o = sigmoid(logit) in (0, 1)."""
        return torch.sigmoid(self.opacity_logits)

    def tensors(self) -> list[Tensor]:
        """The five tensors, in field order (for an optimiser or ``gradcheck``)."""
        return [
            self.means,
            self.log_scales,
            self.quats,
            self.colors,
            self.opacity_logits,
        ]

    def detach(self) -> Gaussians:
        """A copy of detached clones (a snapshot that later steps do not change)."""
        return Gaussians(*(t.detach().clone() for t in self.tensors()))

    def requires_grad_(self, flag: bool = True) -> Gaussians:
        """Turn gradients on (in place) for all five tensors; returns self."""
        for t in self.tensors():
            t.requires_grad_(flag)
        return self

    def to(self, *args, **kwargs) -> Gaussians:
        """Move or cast all five tensors, as ``Tensor.to``."""
        return Gaussians(*(t.to(*args, **kwargs) for t in self.tensors()))


def check_gaussians(g: Gaussians) -> None:
    """Raise TypeError/ValueError unless ``g`` holds consistent, finite parameters."""
    if not isinstance(g, Gaussians):
        raise TypeError(f"expected a Gaussians, got {type(g).__name__}")
    names = ["means", "log_scales", "quats", "colors", "opacity_logits"]
    for name, t in zip(names, g.tensors()):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be floating point, got {t.dtype}")
    m = g.means
    if m.ndim != 2 or m.shape[1] != 3:
        raise ValueError(f"means must have shape (N, 3), got {tuple(m.shape)}")
    n = m.shape[0]
    if n == 0:
        raise ValueError("need at least one Gaussian (N = 0)")
    want = {"log_scales": (n, 3), "quats": (n, 4), "opacity_logits": (n,)}
    for name, t in zip(names, g.tensors()):
        if name in want and tuple(t.shape) != want[name]:
            raise ValueError(
                f"{name} must have shape {want[name]} for N={n}, got {tuple(t.shape)}"
            )
    if g.colors.ndim != 2 or g.colors.shape[0] != n or g.colors.shape[1] < 1:
        raise ValueError(
            f"colors must have shape (N, C) with N={n}, C >= 1, "
            f"got {tuple(g.colors.shape)}"
        )
    for name, t in zip(names, g.tensors()):
        if t.dtype != m.dtype or t.device != m.device:
            raise ValueError(
                f"{name} is {t.dtype} on {t.device} but means is {m.dtype} on "
                f"{m.device}: all five tensors must share dtype and device"
            )
        if not torch.isfinite(t).all():
            raise ValueError(f"{name} contains NaN or inf")
    zero = g.quats.detach().norm(dim=1) == 0
    if zero.any():
        i = int(zero.nonzero()[0, 0])
        raise ValueError(
            f"quats must have non-zero norm to give a rotation; row {i} is zero"
        )


def quat_to_rotmat(quats: Tensor) -> Tensor:
    """Rotation matrices from quaternions (w, x, y, z). quats: (..., 4) → (..., 3, 3).

    The quaternion is normalised first, so any non-zero multiple gives the same R.
    """
    if quats.shape[-1] != 4:
        raise ValueError(f"quats must have shape (..., 4), got {tuple(quats.shape)}")
    norm = quats.norm(dim=-1, keepdim=True)
    if (norm == 0).any():
        raise ValueError("quats must have non-zero norm to give a rotation")
    w, x, y, z = (quats / norm).unbind(-1)  # q ← q / ‖q‖
    r0 = [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)]
    r1 = [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)]
    r2 = [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]
    rows = r0 + r1 + r2  # the rotation matrix of a unit quaternion, row by row
    return torch.stack(rows, dim=-1).reshape(*quats.shape[:-1], 3, 3)


def covariance_3d(log_scales: Tensor, quats: Tensor) -> Tensor:
    """World-space covariances. log_scales: (N, 3), quats: (N, 4) → (N, 3, 3).

    Built from a factor M = R S, so Σ is symmetric positive definite by construction.
    """
    M = quat_to_rotmat(quats) * log_scales.exp()[..., None, :]  # M = R S
    return M @ M.transpose(-1, -2)  # Σ = R S Sᵀ Rᵀ
