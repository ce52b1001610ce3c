"""Pinhole cameras: intrinsics, a world-to-camera pose, look-at and orbit rigs, rays.

Conventions (those of OpenCV, COLMAP and gsplat): the camera frame has x to the right,
y down and z forward (the viewing direction); a world point X maps to camera
coordinates p = R X + t, and to pixel coordinates u = fx p_x / p_z + cx,
v = fy p_y / p_z + cy. Pixel (row i, column j) covers [j, j+1) × [i, i+1), so its
centre is (u, v) = (j + ½, i + ½). The world is z-up (the procedural scene's ground is
the plane z = 0). Angles are in degrees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

Tensor = torch.Tensor


@dataclass(eq=False)  # holds tensors: compare fields explicitly
class Camera:
    """A pinhole camera.

    Attributes:
        R: (3, 3) world-to-camera rotation (rows: the camera's x, y, z axes in world).
        t: (3,) world-to-camera translation, so p = R X + t.
        fx, fy, cx, cy: focal lengths and principal point, in pixels.
        width, height: image size in pixels.
    """

    R: Tensor
    t: Tensor
    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    def __post_init__(self) -> None:
        if not isinstance(self.R, torch.Tensor) or not isinstance(self.t, torch.Tensor):
            raise TypeError("R and t must be torch tensors")
        if tuple(self.R.shape) != (3, 3) or tuple(self.t.shape) != (3,):
            raise ValueError(
                f"R must be (3, 3) and t (3,), got {tuple(self.R.shape)} and "
                f"{tuple(self.t.shape)}"
            )
        if not (torch.isfinite(self.R).all() and torch.isfinite(self.t).all()):
            raise ValueError("camera pose contains NaN or inf")
        for name in ("width", "height"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        for name in ("fx", "fy", "cx", "cy"):
            v = float(getattr(self, name))
            if not math.isfinite(v) or (name in ("fx", "fy") and v <= 0):
                raise ValueError(f"{name} must be finite (and > 0 for focals), got {v}")

    @property
    def K(self) -> Tensor:
        """(3, 3) intrinsic matrix."""
        K = torch.eye(3, dtype=self.R.dtype, device=self.R.device)
        K[0, 0], K[1, 1], K[0, 2], K[1, 2] = self.fx, self.fy, self.cx, self.cy
        return K

    @property
    def viewmat(self) -> Tensor:
        """(4, 4) world-to-camera matrix [[R, t], [0, 1]]."""
        V = torch.eye(4, dtype=self.R.dtype, device=self.R.device)
        V[:3, :3], V[:3, 3] = self.R, self.t
        return V

    @property
    def center(self) -> Tensor:
        """(3,) camera centre in world coordinates, C = −Rᵀ t."""
        return -self.R.T @ self.t

    def to(self, like: Tensor) -> Camera:
        """This camera with R, t on ``like``'s device and dtype."""
        return replace(self, R=self.R.to(like), t=self.t.to(like))


def focal_from_fov(fov: float, size: int) -> float:
    """Focal length (px) for a full field of view ``fov`` (degrees) over ``size`` px."""
    if not 0 < fov < 180:
        raise ValueError(f"fov must be in (0, 180) degrees, got {fov}")
    return 0.5 * size / math.tan(math.radians(fov) / 2)  # f = (size/2) / tan(fov/2)


def look_at(
    eye,
    target=(0.0, 0.0, 0.0),
    *,
    up=(0.0, 0.0, 1.0),
    width: int = 32,
    height: int = 32,
    fov: float = 50.0,
    dtype: torch.dtype = torch.float64,
) -> Camera:
    """A camera at ``eye`` (3,) looking at ``target`` (3,), principal point centred.

    ``fov`` is the horizontal field of view in degrees; pixels are square.
    """
    eye = torch.as_tensor(eye, dtype=dtype)
    target = torch.as_tensor(target, dtype=dtype)
    up = torch.as_tensor(up, dtype=dtype)
    if eye.shape != (3,) or target.shape != (3,) or up.shape != (3,):
        raise ValueError("eye, target and up must each have 3 entries")
    fwd = target - eye
    if fwd.norm() == 0:
        raise ValueError("eye and target coincide")
    fwd = fwd / fwd.norm()  # camera z: the viewing direction
    right = torch.linalg.cross(fwd, up)  # camera x = z × up
    if right.norm() < 1e-9 * up.norm().clamp_min(1e-300):
        raise ValueError("the viewing direction is parallel to up; pick another up")
    right = right / right.norm()
    down = torch.linalg.cross(fwd, right)  # camera y = z × x (y down, right-handed)
    R = torch.stack([right, down, fwd])
    f = focal_from_fov(fov, width)
    return Camera(R, -R @ eye, f, f, width / 2, height / 2, width, height)  # t = −R C


def orbit_cameras(
    n: int,
    radius: float,
    elevation: float,
    *,
    width: int = 32,
    height: int = 32,
    fov: float = 50.0,
    target=(0.0, 0.0, 0.0),
    azimuth_start: float = 0.0,
    azimuth_span: float = 360.0,
    dtype: torch.dtype = torch.float64,
) -> list[Camera]:
    """``n`` cameras on a circle of ``radius`` around ``target``, looking at it.

    Camera k sits at azimuth a_k = azimuth_start + azimuth_span·k/n (so a full 360°
    orbit has no duplicate) and ``elevation`` degrees above the target's horizontal
    plane (|elevation| < 90).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius}")
    if not abs(elevation) < 90:
        raise ValueError(f"elevation must be in (-90, 90) degrees, got {elevation}")
    tgt = torch.as_tensor(target, dtype=dtype)
    el = math.radians(elevation)
    cams = []
    for k in range(n):  # a handful of cameras, not a hot loop
        az = math.radians(azimuth_start + azimuth_span * k / n)
        offset = [
            math.cos(el) * math.cos(az),
            math.cos(el) * math.sin(az),
            math.sin(el),
        ]
        eye = tgt + radius * torch.tensor(offset, dtype=dtype)
        cams.append(look_at(eye, tgt, width=width, height=height, fov=fov, dtype=dtype))
    return cams


def pixel_grid(width: int, height: int, *, dtype=torch.float64, device=None) -> Tensor:
    """(H·W, 2) pixel centres (u, v) = (j + ½, i + ½) in row-major order.

    Row k of the result is pixel (i, j) = divmod(k, width), so ``image.reshape(-1, C)``
    and this grid index the same pixels.
    """
    v, u = torch.meshgrid(
        torch.arange(height, dtype=dtype, device=device) + 0.5,
        torch.arange(width, dtype=dtype, device=device) + 0.5,
        indexing="ij",
    )
    return torch.stack([u, v], dim=-1).reshape(-1, 2)


def camera_rays(camera: Camera, pixels: Tensor) -> tuple[Tensor, Tensor]:
    """Rays through pixel coordinates. pixels: (P, 2) as (u, v) → origins, dirs (P, 3).

    The directions are scaled so that their camera-z component is 1: a point at
    parameter s along the ray, origin + s·dir, has camera depth z = s.
    """
    cam = camera.to(pixels)
    d_cam = torch.stack(
        [
            (pixels[:, 0] - cam.cx) / cam.fx,  # x/z = (u − cx) / fx
            (pixels[:, 1] - cam.cy) / cam.fy,  # y/z = (v − cy) / fy
            torch.ones_like(pixels[:, 0]),
        ],
        dim=-1,
    )
    dirs = d_cam @ cam.R  # world direction Rᵀ d, row-wise
    return cam.center.expand_as(dirs), dirs
