"""Anchor-based (Scaffold-GS style) Gaussians, uniform quantization and the
quantization distortion layer (QDL) of CompMarkGS.

Shapes: A anchors, D feature channels, K Gaussians ("children", offsets) per anchor, so
N = A·K Gaussians per render.

A Scaffold scene stores, per anchor, a fixed centre x_a (A, 3), a feature f_a (A, D),
K learned offsets o_a (A, K, 3) and a log-scaling l_a (A, 6). Three small MLPs map
[f_a, view direction] to the children's opacity logits (K), colours (3K) and scale/
rotation (7K); the children sit at x_a + o_a·exp(l_a[:3]) with scales
exp(l_a[3:])·sigmoid(s). CompMarkGS adds a watermark residual f′_a (A, D) to the
features, through tanh so that it stays in (−1, 1): f_a + tanh(f′_a).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .. import splat as sp
from ..core import seeded
from ..validate import as_int, check_positive

Tensor = torch.Tensor
MODES = ("none", "fixed", "learned")


def quantize_uniform(x: Tensor, step: float | Tensor) -> Tensor:
    """Uniform mid-tread quantization x̂ = Δ·round(x/Δ). x: any shape; step Δ > 0,
    a float or a tensor that broadcasts against x."""
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"x must be floating point, got {x.dtype}")
    if not torch.isfinite(x).all():
        raise ValueError("x contains NaN or inf")
    step_t = torch.as_tensor(step, dtype=x.dtype, device=x.device)
    if not torch.isfinite(step_t).all() or not (step_t > 0).all():
        raise ValueError(f"step must be finite and > 0, got {step}")
    return step_t * torch.round(x / step_t)  # x̂ = Δ·round(x/Δ)


def _mlp(n_in: int, hidden: int, n_out: int, gen: torch.Generator) -> nn.Sequential:
    # built inside seeded() so that the default init (overwritten just below) leaves
    # the caller's global random stream untouched
    with seeded(0):
        net = nn.Sequential(
            nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out)
        )
    with torch.no_grad():  # seeded init, independent of the global RNG
        for lin in (net[0], net[2]):
            bound = 1 / math.sqrt(lin.in_features)
            lin.weight.uniform_(-bound, bound, generator=gen)
            lin.bias.uniform_(-bound, bound, generator=gen)
    return net


class QuantDistortionLayer(nn.Module):
    """Noise that stands in for quantization during training: f̃ = f + u·q,
    u ~ U(−½, ½) elementwise.

    mode "none": f̃ = f (q = 0); "fixed": q = q0 everywhere; "learned" (the paper's
    QDL): q = q0·(1 + tanh(MLP(f))) ∈ [0, 2·q0], one step per anchor and channel,
    the MLP's last layer zero-initialised so that training starts at q = q0.
    Noise is drawn only in training mode; in eval mode f̃ = f (q is still returned).
    """

    def __init__(
        self,
        feat_dim: int,
        q0: float = 1.0,
        mode: str = "learned",
        hidden: int = 16,
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        feat_dim = as_int(feat_dim, "feat_dim", lo=1)
        hidden = as_int(hidden, "hidden", lo=1)
        q0 = check_positive("q0", q0)
        self.feat_dim, self.q0, self.mode = feat_dim, q0, mode
        # the step MLP's first layer from ``generator`` (default: a fixed seed), never
        # from the global random stream
        g = generator if generator is not None else torch.Generator().manual_seed(0)
        self.net = _mlp(feat_dim, hidden, feat_dim, g)
        nn.init.zeros_(self.net[2].weight)
        nn.init.zeros_(self.net[2].bias)

    def step(self, f: Tensor) -> Tensor:
        """The noise amplitude q (A, D) for features f (A, D)."""
        if self.mode == "none":
            return torch.zeros_like(f)
        if self.mode == "fixed":
            return torch.full_like(f, self.q0)
        return self.q0 * (1 + torch.tanh(self.net(f)))  # q = q0(1 + tanh MLP(f))

    def forward(
        self, f: Tensor, generator: torch.Generator | None = None
    ) -> tuple[Tensor, Tensor]:
        """f (A, D) → (f̃ (A, D), q (A, D))."""
        if not isinstance(f, Tensor) or f.ndim != 2 or f.shape[1] != self.feat_dim:
            shape = tuple(f.shape) if isinstance(f, Tensor) else type(f).__name__
            raise ValueError(f"f must be (A, {self.feat_dim}), got {shape}")
        q = self.step(f)
        if not self.training or self.mode == "none":
            return f, q
        # drawn where the generator lives (the CPU by default), then moved to f
        gdev = generator.device if generator is not None else f.device
        u = torch.rand(f.shape, generator=generator, dtype=f.dtype, device=gdev)
        u = u.to(f.device)
        return f + (u - 0.5) * q, q  # f̃ = f + U(−½, ½)·q


class ScaffoldScene(nn.Module):
    """A anchors with features; K Gaussians each, decoded by small MLPs.

    Args:
        anchors: (A, 3) fixed anchor centres (world).
        voxel: the anchor spacing (sets the initial offset and scale sizes).
        feat_dim: D; n_offsets: K; hidden: the MLPs' width.
        generator: seeds every initial value.
    Parameters: feat (A, D), offsets (A, K, 3), log_scaling (A, 6), wm_feat (A, D)
    (zero: no watermark), wm_pos (A, 3) (an explicit-attribute watermark p′, added
    to the anchor centres as voxel·tanh(p′); zero by default), and the three MLPs.
    """

    def __init__(
        self,
        anchors: Tensor,
        voxel: float,
        *,
        feat_dim: int = 16,
        n_offsets: int = 4,
        hidden: int = 16,
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        if (
            not isinstance(anchors, Tensor)
            or anchors.ndim != 2
            or anchors.shape[1] != 3
        ):
            raise ValueError("anchors must be an (A, 3) tensor")
        if len(anchors) == 0 or not torch.isfinite(anchors).all():
            raise ValueError("anchors must be non-empty and finite")
        voxel = check_positive("voxel", voxel)
        feat_dim = as_int(feat_dim, "feat_dim", lo=1)
        n_offsets = as_int(n_offsets, "n_offsets", lo=1)
        hidden = as_int(hidden, "hidden", lo=1)
        g = generator if generator is not None else torch.Generator().manual_seed(0)
        A, D, K = len(anchors), feat_dim, n_offsets
        self.A, self.D, self.K = A, D, K
        dt = torch.float32
        self.register_buffer("anchors", anchors.detach().to(dt).clone())
        self.feat = nn.Parameter(0.1 * torch.randn(A, D, generator=g))
        self.offsets = nn.Parameter(torch.randn(A, K, 3, generator=g))
        ls = torch.full((A, 6), math.log(voxel))
        ls[:, :3] += math.log(0.5)  # offsets span about half a voxel at first
        self.log_scaling = nn.Parameter(ls)
        self.wm_feat = nn.Parameter(torch.zeros(A, D))
        self.wm_pos = nn.Parameter(torch.zeros(A, 3))
        self.voxel = float(voxel)
        self.opacity_mlp = _mlp(D + 3, hidden, K, g)
        self.color_mlp = _mlp(D + 3, hidden, 3 * K, g)
        self.cov_mlp = _mlp(D + 3, hidden, 7 * K, g)

    def features(self, watermark: bool = True) -> Tensor:
        """(A, D) the features the MLPs read: f + tanh(f′) (or f without watermark)."""
        return self.feat + torch.tanh(self.wm_feat) if watermark else self.feat

    def centres(self, watermark: bool = True) -> Tensor:
        """(A, 3) anchor centres x_a, plus the explicit watermark residual
        voxel·tanh(p′_a) if asked (bounded as the feature residual is)."""
        if not watermark:
            return self.anchors
        return self.anchors + self.voxel * torch.tanh(self.wm_pos)

    def gaussians(
        self,
        camera: sp.Camera,
        feat: Tensor | None = None,
        centres: Tensor | None = None,
    ) -> sp.Gaussians:
        """The A·K Gaussians seen from ``camera``.

        feat: (A, D) features to decode (default: f + tanh f′, e.g. pass a noisy or
        quantized copy); centres: (A, 3) anchor centres (default: x_a + wm_pos).
        """
        f = self.features() if feat is None else feat
        x = self.centres() if centres is None else centres
        if f.shape != (self.A, self.D) or x.shape != (self.A, 3):
            raise ValueError(
                f"feat must be ({self.A}, {self.D}) and centres ({self.A}, 3), got "
                f"{tuple(f.shape)} and {tuple(x.shape)}"
            )
        view = x - camera.center.to(x)  # anchor minus camera centre
        view = view / view.norm(dim=1, keepdim=True).clamp_min(1e-9)
        h = torch.cat([f, view], dim=1)  # [f_a, d_a], (A, D + 3)
        A, K = self.A, self.K
        logit = self.opacity_mlp(h).reshape(A * K)
        color = torch.sigmoid(self.color_mlp(h).reshape(A * K, 3))
        sr = self.cov_mlp(h).reshape(A, K, 7)
        step = self.log_scaling[:, None, :3].exp()  # offset scaling, (A, 1, 3)
        means = (x[:, None, :] + self.offsets * step).reshape(A * K, 3)
        # s = exp(l[3:])·sigmoid(s_mlp), kept in log space: log s = l[3:] + logsig(.)
        log_s = self.log_scaling[:, None, 3:] + nn.functional.logsigmoid(sr[..., :3])
        quat = sr[..., 3:] + torch.tensor([1.0, 0, 0, 0], device=sr.device)
        return sp.Gaussians(
            means, log_s.reshape(A * K, 3), quat.reshape(A * K, 4), color, logit
        )


def voxel_anchors(
    points: Tensor, voxel: float, n_max: int, generator: torch.Generator | None = None
) -> Tensor:
    """Anchors from a point cloud: one per occupied voxel (the mean of its points),
    at most ``n_max`` of them (a seeded random subset). points (P, 3) → (A, 3)."""
    if not isinstance(points, Tensor) or points.ndim != 2 or points.shape[1] != 3:
        raise ValueError("points must be a (P, 3) tensor")
    if len(points) == 0:
        raise ValueError("points is empty")
    if not voxel > 0:
        raise ValueError(f"voxel must be > 0, got {voxel}")
    key = torch.floor(points / voxel).long()
    _, inv = torch.unique(key, dim=0, return_inverse=True)
    n = int(inv.max()) + 1
    sums = torch.zeros(n, 3, dtype=points.dtype).index_add_(0, inv, points)
    cnt = torch.bincount(inv, minlength=n).to(points.dtype)
    centres = sums / cnt[:, None]  # the mean point of each occupied voxel
    if n > n_max:
        centres = centres[torch.randperm(n, generator=generator)[:n_max]]
    return centres
