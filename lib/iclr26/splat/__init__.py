"""A small 3D Gaussian splatting core in plain PyTorch, shared by chapters 09 and 10.

* ``gaussians``: :class:`Gaussians` (means, log-scales, quaternions, colours, opacity
  logits) and the covariance Σ = R S Sᵀ Rᵀ (:func:`covariance_3d`).
* ``camera``: pinhole :class:`Camera` (OpenCV axes: x right, y down, z forward),
  :func:`look_at`, :func:`orbit_cameras`, :func:`pixel_grid`, :func:`camera_rays`.
* ``render``: EWA :func:`project` (Σ' = J W Σ Wᵀ Jᵀ + 0.3 I), front-to-back
  :func:`composite` with the transmittance from a cumulative sum of log(1 − α), and
  :func:`render` of a whole image or of a batch of pixels.
* ``scene``: :class:`ProceduralScene` (ellipsoids over a checkered ground, exact colour
  and depth by ray casting) and :func:`init_gaussians` from it.
* ``metrics``: :func:`psnr`, :func:`ssim`.

Shapes: N Gaussians, C colour channels, P pixels, images (H, W, C) channel-last.
Everything follows the Gaussians' device and dtype (float32 or float64).
"""

from .camera import (
    Camera,
    camera_rays,
    focal_from_fov,
    look_at,
    orbit_cameras,
    pixel_grid,
)
from .gaussians import Gaussians, check_gaussians, covariance_3d, quat_to_rotmat
from .metrics import psnr, ssim
from .render import (
    ALPHA_MAX,
    EPS2D,
    Projection,
    RenderOutput,
    composite,
    project,
    render,
)
from .scene import ProceduralScene, SceneView, backproject, init_gaussians

__all__ = [
    "ALPHA_MAX",
    "EPS2D",
    "Camera",
    "Gaussians",
    "ProceduralScene",
    "Projection",
    "RenderOutput",
    "SceneView",
    "backproject",
    "camera_rays",
    "check_gaussians",
    "composite",
    "covariance_3d",
    "focal_from_fov",
    "init_gaussians",
    "look_at",
    "orbit_cameras",
    "pixel_grid",
    "project",
    "psnr",
    "quat_to_rotmat",
    "render",
    "ssim",
]
