"""A procedural scene with analytic ground truth, and Gaussians initialised from it.

No files: a few coloured ellipsoids (spheres are the equal-axes case) stand on a
checkered square of ground (z = 0), under one directional light. The shading is
Lambertian, c = albedo·(a + (1 − a)·max(0, n·l)), which does not depend on the view, so
Gaussians with a plain colour per splat can represent the scene exactly in the limit.
Exact RGB and camera depth come from ray casting for any camera, pixel by pixel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from ..validate import as_int
from .camera import Camera, camera_rays, pixel_grid
from .gaussians import Gaussians

Tensor = torch.Tensor


class SceneView(NamedTuple):
    """Ground truth for one camera: color (H, W, 3) or (P, 3); depth (camera z, 0 on
    a miss) and mask (bool, True where a surface was hit), (H, W) or (P,)."""

    color: Tensor
    depth: Tensor
    mask: Tensor


@dataclass(eq=False)  # holds tensors: compare fields explicitly
class ProceduralScene:
    """K axis-aligned ellipsoids over a checkered ground square, in a z-up world.

    Attributes:
        centers: (K, 3) ellipsoid centres; axes: (K, 3) semi-axes; albedo: (K, 3).
        ground_half: the ground is the square [−h, h]² at z = 0.
        checker: side of a ground check. ground_colors: the two check colours.
        background: colour of rays that hit nothing. light: direction to the light.
        ambient: the ambient share a of the shading.
    """

    centers: Tensor
    axes: Tensor
    albedo: Tensor
    ground_half: float = 1.5
    checker: float = 0.25
    ground_colors: tuple = ((0.85, 0.82, 0.74), (0.42, 0.45, 0.50))
    background: tuple = (1.0, 1.0, 1.0)
    light: tuple = (0.45, 0.3, 0.84)
    ambient: float = 0.35

    def __post_init__(self) -> None:
        k = self.centers.shape[0] if self.centers.ndim == 2 else -1
        for name in ("centers", "axes", "albedo"):
            t = getattr(self, name)
            if not isinstance(t, torch.Tensor) or tuple(t.shape) != (k, 3) or k < 1:
                raise ValueError(f"{name} must be a (K, 3) tensor with K >= 1")
            if not torch.isfinite(t).all():
                raise ValueError(f"{name} contains NaN or inf")
        if not (self.axes > 0).all():
            raise ValueError("ellipsoid axes must be > 0")
        if not (self.ground_half > 0 and self.checker > 0 and 0 <= self.ambient <= 1):
            raise ValueError("need ground_half > 0, checker > 0 and 0 <= ambient <= 1")

    @classmethod
    def default(cls) -> ProceduralScene:
        """Three spheres and one flat ellipsoid in primary-ish colours."""
        t = lambda rows: torch.tensor(rows, dtype=torch.float64)
        centers = [[0.65, 0.1, 0.3], [-0.35, 0.5, 0.3], [-0.3, -0.55, 0.25]]
        axes = [[0.3, 0.3, 0.3], [0.3, 0.3, 0.3], [0.25, 0.25, 0.25]]
        albedo = [[0.85, 0.2, 0.15], [0.2, 0.65, 0.25], [0.2, 0.35, 0.85]]
        # ... and a flat yellow ellipsoid in the middle
        centers.append([0.05, -0.05, 0.12])
        axes.append([0.25, 0.15, 0.12])
        albedo.append([0.9, 0.75, 0.2])
        return cls(t(centers), t(axes), t(albedo))

    @classmethod
    def random(
        cls, n_objects: int = 4, seed: int = 0, *, checker: float = 0.25
    ) -> ProceduralScene:
        """A seeded random layout: ``n_objects`` ellipsoids resting on the ground."""
        if isinstance(n_objects, bool) or not isinstance(n_objects, int):
            raise ValueError(f"n_objects must be a positive int, got {n_objects!r}")
        if n_objects < 1:
            raise ValueError(f"n_objects must be a positive int, got {n_objects!r}")
        g = torch.Generator().manual_seed(seed)
        u = lambda *shape: torch.rand(*shape, generator=g, dtype=torch.float64)
        axes = (0.15 + 0.2 * u(n_objects, 1)) * (0.7 + 0.6 * u(n_objects, 3))
        xy = (2 * u(n_objects, 2) - 1) * 0.9
        centers = torch.cat([xy, axes[:, 2:]], dim=1)  # resting on z = 0
        hue = u(n_objects, 1)
        albedo = 0.15 + 0.75 * (0.5 + 0.5 * torch.cos(2 * math.pi * (hue + u(1, 3))))
        return cls(centers, axes, albedo, checker=checker)

    @property
    def extent(self) -> float:
        """Radius of a sphere around the origin that holds the whole scene."""
        top = float((self.centers[:, 2] + self.axes[:, 2]).max())
        return math.hypot(self.ground_half * math.sqrt(2), top)

    def cast(self, origins: Tensor, dirs: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Ray cast. origins, dirs: (P, 3) → parameter s (P,), colour (P, 3), hit (P,).

        The first intersection with s > 0 wins; s = 0 and the background on a miss.
        """
        like = dirs
        c, ax = self.centers.to(like), self.axes.to(like)
        o = (origins[:, None, :] - c) / ax  # in each ellipsoid's unit-sphere frame
        d = dirs[:, None, :] / ax
        A, B = (d * d).sum(-1), 2 * (o * d).sum(-1)
        disc = B * B - 4 * A * ((o * o).sum(-1) - 1)  # of |o + s d|² = 1
        s_ell = (-B - disc.clamp_min(0).sqrt()) / (2 * A)  # the nearer root
        s_ell = torch.where((disc >= 0) & (s_ell > 1e-9), s_ell, torch.inf)
        s_obj, k = s_ell.min(dim=1)
        s_gnd = -origins[:, 2] / dirs[:, 2]  # z(s) = 0
        p_gnd = origins + s_gnd[:, None] * dirs
        on_gnd = (dirs[:, 2] < 0) & (s_gnd > 1e-9)
        on_gnd &= (p_gnd[:, :2].abs() <= self.ground_half).all(1)
        s_gnd = torch.where(on_gnd, s_gnd, torch.inf)
        p_obj = origins + torch.where(torch.isfinite(s_obj), s_obj, 0)[:, None] * dirs
        col_obj = self._shade_object(p_obj, k)
        col_gnd = self._shade_ground(p_gnd)
        bg = torch.tensor(self.background, dtype=like.dtype, device=like.device)
        obj_first = s_obj <= s_gnd
        s = torch.minimum(s_obj, s_gnd)
        hit = torch.isfinite(s)
        color = torch.where(obj_first[:, None], col_obj, col_gnd)
        color = torch.where(hit[:, None], color, bg.expand_as(color))
        return torch.where(hit, s, 0), color, hit

    def _light(self, like: Tensor) -> Tensor:
        light = torch.tensor(self.light, dtype=like.dtype, device=like.device)
        return light / light.norm()

    def _shade_object(self, p: Tensor, k: Tensor) -> Tensor:
        """Colour at points p (P, 3) on ellipsoids k (P,) → (P, 3)."""
        c, ax = self.centers.to(p)[k], self.axes.to(p)[k]
        nrm = (p - c) / ax**2  # the gradient of |(p − c)/axes|², outward
        nrm = nrm / nrm.norm(dim=1, keepdim=True).clamp_min(1e-12)
        a = self.ambient
        shade = a + (1 - a) * (nrm @ self._light(p)).clamp_min(
            0
        )  # a + (1−a) max(0, n·l)
        return self.albedo.to(p)[k] * shade[:, None]

    def _shade_ground(self, p: Tensor) -> Tensor:
        """Colour at ground points p (P, 3) → (P, 3): checks by ⌊x/s⌋ + ⌊y/s⌋ parity."""
        parity = torch.floor(p[:, :2] / self.checker).sum(1).remainder(2).long()
        gc = torch.tensor(self.ground_colors, dtype=p.dtype, device=p.device)
        a = self.ambient
        shade = a + (1 - a) * self._light(p)[2].clamp_min(0)  # normal n = (0, 0, 1)
        return gc[parity.clamp(0, 1)] * shade

    def render(self, camera: Camera, pixels: Tensor | None = None) -> SceneView:
        """Exact colour, depth and hit mask, for the whole image or pixels (P, 2).

        Computed in the camera's dtype and on its device.
        """
        full = pixels is None
        if full:
            pixels = pixel_grid(
                camera.width,
                camera.height,
                dtype=camera.R.dtype,
                device=camera.R.device,
            )
        elif (
            not isinstance(pixels, torch.Tensor)
            or pixels.ndim != 2
            or pixels.shape[1] != 2
        ):
            raise ValueError("pixels must be a (P, 2) tensor of (u, v) coordinates")
        origins, dirs = camera_rays(camera, pixels.to(camera.R))
        s, color, hit = self.cast(
            origins, dirs
        )  # s is the camera depth: dirs have z = 1
        if full:
            H, W = camera.height, camera.width
            return SceneView(color.reshape(H, W, 3), s.reshape(H, W), hit.reshape(H, W))
        return SceneView(color, s, hit)

    def sample_surface(
        self, n: int, generator: torch.Generator | None = None
    ) -> tuple[Tensor, Tensor]:
        """n points on the surfaces with their shaded colours → (n, 3), (n, 3) float64.

        Points are split between surfaces in proportion to (approximate) area; on an
        ellipsoid they are uniform directions mapped by the axes (not area-uniform).
        """
        as_int(n, "n", lo=1)
        g = generator
        a, b, c = self.axes.unbind(1)
        p = 1.6075  # Thomsen's approximation of an ellipsoid's area
        area = (
            4 * math.pi * (((a * b) ** p + (a * c) ** p + (b * c) ** p) / 3) ** (1 / p)
        )
        area = torch.cat([area, torch.tensor([(2 * self.ground_half) ** 2])])
        which = torch.multinomial(area / area.sum(), n, replacement=True, generator=g)
        dirs = torch.randn(n, 3, generator=g, dtype=torch.float64)
        dirs = dirs / dirs.norm(dim=1, keepdim=True)
        k = which.clamp(max=len(self.centers) - 1)
        pts = self.centers[k] + self.axes[k] * dirs
        gnd = (
            2 * torch.rand(n, 2, generator=g, dtype=torch.float64) - 1
        ) * self.ground_half
        is_gnd = which == len(self.centers)
        pts[is_gnd] = torch.cat([gnd, torch.zeros(n, 1, dtype=torch.float64)], 1)[
            is_gnd
        ]
        col_obj = self._shade_object(pts, k)
        color = torch.where(is_gnd[:, None], self._shade_ground(pts), col_obj)
        return pts, color


def backproject(camera: Camera, pixels: Tensor, depth: Tensor) -> Tensor:
    """World points at camera depth ``depth`` (P,) through pixels (P, 2) → (P, 3)."""
    origins, dirs = camera_rays(camera, pixels)
    return origins + depth[:, None] * dirs  # X = C + z·Rᵀ K⁻¹ (u, v, 1)


def init_gaussians(
    scene: ProceduralScene,
    n: int,
    cameras: list[Camera] | None = None,
    *,
    generator: torch.Generator | None = None,
    opacity: float = 0.5,
    scale_mult: float = 1.0,
    k_neighbours: int = 3,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> Gaussians:
    """n isotropic Gaussians on the scene's surfaces, coloured by the ground truth.

    With ``cameras``, the points are back-projected from the exact depth of random hit
    pixels of those views (what a fit from those views could know); without, they are
    sampled on all surfaces. Each scale is ``scale_mult`` × the mean distance to the
    ``k_neighbours`` nearest other points (as 3DGS initialises from a point cloud);
    rotations are the identity and opacities all equal ``opacity``.
    """
    as_int(n, "n", lo=1)
    if not 0 < opacity < 1:
        raise ValueError(f"opacity must be in (0, 1), got {opacity}")
    if cameras is None:
        pts, col = scene.sample_surface(n, generator)
    else:
        if len(cameras) == 0:
            raise ValueError("cameras must be None or a non-empty list")
        views = [
            scene.render(cam.to(torch.zeros((), dtype=torch.float64)))
            for cam in cameras
        ]
        all_pts, all_col = [], []
        for cam, v in zip(cameras, views):  # a few views, not a hot loop
            pix = pixel_grid(cam.width, cam.height)[v.mask.reshape(-1)]
            cam64 = cam.to(pix)
            all_pts.append(
                backproject(cam64, pix, v.depth.reshape(-1)[v.mask.reshape(-1)])
            )
            all_col.append(v.color.reshape(-1, 3)[v.mask.reshape(-1)])
        pts, col = torch.cat(all_pts), torch.cat(all_col)
        if len(pts) == 0:
            raise ValueError("no camera sees any surface of the scene")
        pick = torch.randperm(len(pts), generator=generator)[:n]
        if len(pick) < n:
            pick = torch.randint(len(pts), (n,), generator=generator)
        pts, col = pts[pick], col[pick]
    knn = _knn_mean_distance(pts, k_neighbours)
    log_s = torch.log(scale_mult * knn.clamp_min(1e-4))[:, None].expand(n, 3)
    quats = torch.zeros(n, 4, dtype=torch.float64)
    quats[:, 0] = 1.0
    logit = torch.full((n,), math.log(opacity / (1 - opacity)), dtype=torch.float64)
    parts = (pts, log_s, quats, col, logit)
    return Gaussians(*(t.to(dtype=dtype, device=device).contiguous() for t in parts))


def _knn_mean_distance(pts: Tensor, k: int, block: int = 2048) -> Tensor:
    """Mean distance from each point (n, 3) to its k nearest others → (n,)."""
    n = len(pts)
    k = max(1, min(k, n - 1))
    if n == 1:
        return torch.ones(1, dtype=pts.dtype)
    out = []
    for s in range(0, n, block):  # blocks bound the (block × n) distance matrix
        dist = torch.cdist(pts[s : s + block], pts)
        out.append(dist.topk(k + 1, largest=False).values[:, 1:].mean(1))  # skip self
    return torch.cat(out)
