"""ILNN layers: the point-to-hyperplane FC (PLFC), batch norms, concatenation,
activation, dropout and convolution, with the HCNN-style baselines (LFC,
LorentzBatchNorm)."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from ..validate import as_float, as_int
from .geometry import (
    _check_k,
    _check_points,
    _safe_norm,
    boost_to_origin,
    check_on_hyperboloid,
    digamma_scale,
    dist,
    dist0,
    expmap,
    expmap0,
    gyro_add,
    gyro_scale,
    hyperplane_normal,
    karcher_mean,
    lift,
    logmap,
    lorentz_centroid,
    origin,
    signed_distance,
    transport,
)


class PLFC(nn.Module):
    """Point-to-hyperplane fully connected layer: L^{n_in} -> L^{n_out}.

    For m = n_out hyperplanes H_i (normals w_i from (U, a)), the output's space
    coordinates are y_i = |w_i|_L sinh(sqrt k d(x, H_i)) / sqrt k, its time coordinate
    comes from the hyperboloid constraint, and an optional gyro-additive bias moves the
    result: out = exp_o(b) (+) lift(y). ``logits(x)`` returns the scaled signed
    distances |w_i|_L d(x, H_i) (an MLR head). Input (..., n_in+1) -> output
    (..., n_out+1); inputs off the hyperboloid raise ValueError.

    ``gain='norm'`` (default) keeps the factor |w_i|_L = |U_i|, so that y_i = <w_i, x>_L
    and the layer tends to U^T x_s - |U| a (an unconstrained affine map W x + b) as k ->
    0. ``gain='unit'`` drops it, y_i = sinh(sqrt k d_i)/sqrt k, whose k -> 0 limit is
    the weight-normalised map (U^T x_s - |U| a)/|U|: a different layer, kept for
    the ablation.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        k: float = 1.0,
        gyro_bias: bool = True,
        gain: str = "norm",
    ):
        super().__init__()
        in_dim = as_int(in_dim, "in_dim (a space dimension)", lo=1)
        out_dim = as_int(out_dim, "out_dim (a space dimension)", lo=1)
        self.k = _check_k(k)
        self.in_dim, self.out_dim = in_dim, out_dim
        self.U = nn.Parameter(torch.randn(in_dim, out_dim) / math.sqrt(in_dim))
        self.a = nn.Parameter(torch.zeros(out_dim))
        self.bias = nn.Parameter(torch.zeros(out_dim)) if gyro_bias else None
        if gain not in ("norm", "unit"):
            raise ValueError(f"gain must be 'norm' or 'unit', got {gain!r}")
        self.gain = gain

    def _check_input(self, x: torch.Tensor) -> None:
        _check_points(x)
        if x.shape[-1] != self.in_dim + 1:
            raise ValueError(
                f"PLFC expects (..., {self.in_dim + 1}) points, got {tuple(x.shape)}"
            )
        check_on_hyperboloid(x, self.k)

    def normals(self) -> torch.Tensor:
        return hyperplane_normal(self.U, self.a, self.k)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """|w|_L * signed distance to each hyperplane.
        (..., n_in+1) -> (..., n_out)."""
        self._check_input(x)
        W = self.normals()
        u_norm = _safe_norm(self.U.transpose(0, 1), keepdim=False)
        return u_norm * signed_distance(x, W, self.k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check_input(x)
        # y_i = |w_i|_L sinh(sqrt k d(x, H_i)) / sqrt k, and since d = asinh(sqrt k
        # <w,x>_L/|w|_L)/sqrt k this is exactly <w_i, x>_L: one matrix product, no
        # asinh/sinh round trip (see the chapter).
        W = self.normals()
        y = x @ torch.cat([-W[:1], W[1:]], dim=0)  # <w_i, x>_L, (..., n_out)
        if self.gain == "unit":
            # sinh(sqrt k d_i)/sqrt k
            y = y / _safe_norm(self.U.transpose(0, 1), keepdim=False)
        y = lift(y, self.k)  # (..., n_out+1)
        if self.bias is not None:
            y = gyro_add(expmap0(self.bias, self.k), y, self.k)  # exp_o(b) (+) y
        return y


class LFC(nn.Module):
    """HCNN-style Lorentz linear layer (baseline): space = W x + b on the ambient
    coordinates (time included), then the time coordinate from the constraint.
    (..., n_in+1) -> (..., n_out+1)."""

    def __init__(self, in_dim: int, out_dim: int, k: float = 1.0):
        super().__init__()
        self.k = _check_k(k)
        self.in_dim, self.out_dim = in_dim, out_dim
        self.linear = nn.Linear(in_dim + 1, out_dim)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_points(x)
        if x.shape[-1] != self.in_dim + 1:
            raise ValueError(
                f"LFC expects (..., {self.in_dim + 1}) points, got {tuple(x.shape)}"
            )
        return lift(self.linear(x), self.k)


# --------------------------------------------------------------------------------------
# batch normalisation: GyroLBN (closed form), GyroBN (Karcher),
# LorentzBatchNorm (log/PT/exp)
# --------------------------------------------------------------------------------------
class GyroLBN(nn.Module):
    """Gyro Lorentz batch norm: centre by the boost that sends the Lorentzian centroid
    to o, scale by gamma / sqrt(Frechet variance), then add a learned bias point:
    exp_o(b) (+) (.).

    Input (..., n+1) with the batch over all leading dims; output the same shape.
    Running mean: exponential average of centroids, renormalised onto the hyperboloid.
    """

    def __init__(
        self,
        dim: int,
        k: float = 1.0,
        momentum: float = 0.1,
        eps: float = 1e-5,
        gamma: float = 1.0,
    ):
        super().__init__()
        dim = as_int(dim, "dim (space dimension n)", lo=1)
        momentum = as_float(momentum, "momentum", lo=0.0, hi=1.0, open_lo=True)
        eps = as_float(eps, "eps", lo=0.0, open_lo=True)
        self.k, self.dim, self.momentum, self.eps = _check_k(k), dim, momentum, eps
        self.gamma = nn.Parameter(torch.tensor(float(gamma)))  # target Frechet std
        self.bias = nn.Parameter(torch.zeros(dim))
        self.register_buffer("running_mean", origin(dim, float(self.k)))
        self.register_buffer("running_var", torch.ones(()))

    def batch_mean(self, x: torch.Tensor) -> torch.Tensor:
        return lorentz_centroid(x, self.k, dim=0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_points(x)
        if x.shape[-1] != self.dim + 1:
            raise ValueError(
                f"expected (..., {self.dim + 1}) points, got {tuple(x.shape)}"
            )
        flat = x.reshape(-1, self.dim + 1)
        if self.training:
            mu = self.batch_mean(flat)
            centred = boost_to_origin(mu, flat, self.k)  # gyro-centering: (-mu) (+) x
            var = (dist0(centred, self.k) ** 2).mean()  # Frechet variance about mu
            with torch.no_grad():
                m = self.momentum
                run = (1 - m) * self.running_mean + m * mu.detach()
                self.running_mean.copy_(
                    lorentz_centroid(run.unsqueeze(0), self.k, dim=0)
                )
                self.running_var.mul_(1 - m).add_(m * var.detach())
        else:
            centred = boost_to_origin(self.running_mean, flat, self.k)
            var = self.running_var
        # gyro-scaling
        scaled = gyro_scale(self.gamma / torch.sqrt(var + self.eps), centred, self.k)
        out = gyro_add(expmap0(self.bias, self.k), scaled, self.k)  # gyro-bias
        return out.reshape(x.shape)


class GyroBN(GyroLBN):
    """GyroBN baseline: the same, but the batch mean is the iterative Karcher
    (Frechet) mean.

    ``karcher_iters``: an int caps the step-controlled iteration at that many steps
    (a fixed cost); ``None`` runs it to ``karcher_tol`` and raises if it does
    not converge.
    """

    def __init__(
        self,
        dim: int,
        k: float = 1.0,
        momentum: float = 0.1,
        eps: float = 1e-5,
        gamma: float = 1.0,
        karcher_iters: int | None = 10,
        karcher_tol: float | None = None,
    ):
        super().__init__(dim, k, momentum, eps, gamma)
        if karcher_iters is not None:
            karcher_iters = as_int(karcher_iters, "karcher_iters (or None)", lo=1)
        self.karcher_iters, self.karcher_tol = karcher_iters, karcher_tol

    def batch_mean(self, x: torch.Tensor) -> torch.Tensor:
        return karcher_mean(x, self.k, self.karcher_iters, tol=self.karcher_tol)


class LorentzBatchNorm(GyroLBN):
    """Lorentz batch norm as in HCNN (baseline): log at the centroid, parallel transport
    to o, rescale, transport to the bias point, exp there.

    ``dispersion='mean'`` (default) follows HCNN's published LorentzBatchNorm: the
    statistic is the *mean distance* to the centroid, s = mean_i |log_mu x_i|, and
    tangent vectors are multiplied by gamma / (s + eps), so the output's mean distance
    to the bias point is gamma. ``dispersion='rms'`` uses the Frechet variance v =
    mean_i d^2 and gamma / sqrt(v + eps), as GyroLBN does; with it, log/transport/exp
    and the gyro form are the same function.
    """

    def __init__(
        self,
        dim: int,
        k: float = 1.0,
        momentum: float = 0.1,
        eps: float = 1e-5,
        gamma: float = 1.0,
        dispersion: str = "mean",
    ):
        super().__init__(dim, k, momentum, eps, gamma)
        if dispersion not in ("mean", "rms"):
            raise ValueError(f"dispersion must be 'mean' or 'rms', got {dispersion!r}")
        self.dispersion = dispersion

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_points(x)
        if x.shape[-1] != self.dim + 1:
            raise ValueError(
                f"expected (..., {self.dim + 1}) points, got {tuple(x.shape)}"
            )
        flat = x.reshape(-1, self.dim + 1)
        o = origin(self.dim, float(self.k), dtype=x.dtype, device=x.device)
        if self.training:
            mu = self.batch_mean(flat)
            d = dist(mu, flat, self.k)
            var = d.mean() if self.dispersion == "mean" else (d**2).mean()
            with torch.no_grad():
                m = self.momentum
                run = (1 - m) * self.running_mean + m * mu.detach()
                self.running_mean.copy_(
                    lorentz_centroid(run.unsqueeze(0), self.k, dim=0)
                )
                self.running_var.mul_(1 - m).add_(m * var.detach())
        else:
            mu, var = self.running_mean, self.running_var
        v = transport(mu, o, logmap(mu, flat, self.k), self.k)  # log_mu x, moved to T_o
        scale = (
            var + self.eps if self.dispersion == "mean" else torch.sqrt(var + self.eps)
        )
        v = v * (self.gamma / scale)
        beta = expmap0(self.bias, self.k)
        out = expmap(beta, transport(o, beta, v, self.k), self.k)
        return out.reshape(x.shape)


# --------------------------------------------------------------------------------------
# concatenation, activation, dropout, convolution
# --------------------------------------------------------------------------------------
def lorentz_concat(
    blocks: torch.Tensor, k: float, align: str = "digamma"
) -> torch.Tensor:
    """Concatenate N points of L^d into one point of L^{N d}: concatenate space parts
    (times the digamma scale if ``align='digamma'``), then lift.
    (..., N, d+1) -> (..., N d + 1)."""
    _check_points(blocks, "blocks")
    if blocks.ndim < 2:
        raise ValueError(f"blocks must be (..., N, d+1), got {tuple(blocks.shape)}")
    if align not in ("digamma", "none"):
        raise ValueError(f"align must be 'digamma' or 'none', got {align!r}")
    N, d = blocks.shape[-2], blocks.shape[-1] - 1
    space = blocks[..., 1:].reshape(*blocks.shape[:-2], N * d)
    if align == "digamma":
        space = space * digamma_scale(d, N)
    return lift(space, k)


class LorentzReLU(nn.Module):
    """ReLU on the space coordinates, time from the constraint. (..., n+1) ->
    (..., n+1)."""

    def __init__(self, k: float = 1.0):
        super().__init__()
        self.k = _check_k(k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_points(x)
        return lift(F.relu(x[..., 1:]), self.k)


class LorentzDropout(nn.Module):
    """Dropout on the space coordinates, time from the constraint.
    (..., n+1) -> (..., n+1)."""

    def __init__(self, p: float = 0.1, k: float = 1.0):
        super().__init__()
        p = as_float(p, "p", lo=0.0, hi=1.0, open_hi=True)
        self.p, self.k = p, _check_k(k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_points(x)
        if not self.training or self.p == 0.0:
            return x
        return lift(F.dropout(x[..., 1:], self.p, training=True), self.k)


class LorentzConv2d(nn.Module):
    """Lorentz convolution: gather each kernel x kernel patch of points, concatenate
    them into one point (digamma-aligned), and apply a PLFC (or, for the HCNN baseline,
    plain concat + LFC).

    Input (B, H, W, in_dim+1) -> output (B, H', W', out_dim+1).
    Zero padding pads with the origin.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        kernel_size: int = 3,
        k: float = 1.0,
        stride: int = 1,
        padding: int = 0,
        variant: str = "ilnn",
    ):
        super().__init__()
        if variant not in ("ilnn", "hcnn"):
            raise ValueError(f"variant must be 'ilnn' or 'hcnn', got {variant!r}")
        self.k, self.in_dim, self.out_dim = _check_k(k), in_dim, out_dim
        self.kernel_size, self.stride, self.padding, self.variant = (
            kernel_size,
            stride,
            padding,
            variant,
        )
        n_cat = in_dim * kernel_size * kernel_size
        self.fc = (
            PLFC(n_cat, out_dim, k) if variant == "ilnn" else LFC(n_cat, out_dim, k)
        )
        self.scale = (
            digamma_scale(in_dim, kernel_size * kernel_size)
            if variant == "ilnn"
            else 1.0
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4 or x.shape[-1] != self.in_dim + 1:
            raise ValueError(
                f"expected (B, H, W, {self.in_dim + 1}), got {tuple(x.shape)}"
            )
        B, H, W, _ = x.shape
        space = x[..., 1:].permute(0, 3, 1, 2)  # (B, n, H, W)
        patches = F.unfold(
            space, self.kernel_size, padding=self.padding, stride=self.stride
        )  # (B, n*kk, L)
        Ho = (H + 2 * self.padding - self.kernel_size) // self.stride + 1
        Wo = (W + 2 * self.padding - self.kernel_size) // self.stride + 1
        # (B, L, n*kk+1): concat + lift
        cat = lift(patches.transpose(1, 2) * self.scale, self.k)
        return self.fc(cat).reshape(B, Ho, Wo, self.out_dim + 1)
