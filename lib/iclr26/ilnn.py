"""ILNN: an intrinsic Lorentz neural network, every operation on the hyperboloid (ICLR 2026).

Conventions. Curvature is ``-k`` with ``k > 0``. A point of the Lorentz model is a vector
``x = (x_0, x_s)`` in ``R^{n+1}`` (time coordinate first) with ``<x, x>_L = -1/k`` and ``x_0 > 0``,
where ``<x, y>_L = -x_0 y_0 + x_s . y_s``. The origin is ``o = (1/sqrt(k), 0, ..., 0)``.
Tangent vectors at the origin have time coordinate 0; :func:`expmap0` and :func:`logmap0` take and
return only their ``n`` space coordinates. (geoopt's ``Lorentz(k=K)`` uses ``<x, x>_L = -K``,
i.e. ``K = 1/k`` here.)

Pieces, all vectorised over leading dimensions:

* primitives: :func:`lorentz_inner`, :func:`lift`, :func:`dist`, :func:`expmap0`, :func:`logmap0`;
* hyperplanes: :func:`hyperplane_normal`, :func:`signed_distance`, and the point-to-hyperplane
  fully connected layer :class:`PLFC` (with its gyro-additive bias);
* gyro-structure: :func:`lorentz_centroid`, :func:`boost_to_origin`, :func:`gyro_add`,
  :func:`gyro_scale`, :func:`karcher_mean`, :func:`frechet_variance`;
* batch norms: :class:`GyroLBN` (the paper's), :class:`GyroBN` (iterative Karcher mean) and
  :class:`LorentzBatchNorm` (log / parallel transport / exp, as in HCNN);
* :func:`digamma_scale`, :func:`lorentz_concat`, :class:`LorentzReLU`, :class:`LorentzDropout`,
  :class:`LorentzConv2d`, and the HCNN-style baseline layer :class:`LFC`;
* small models and data for the chapter: :class:`LorentzCNN`, :class:`EuclideanCNN`,
  :class:`LorentzMLP`, :class:`EuclideanMLP`, :func:`tree_data`, :func:`train_classifier`;
* :func:`check_boost_to_origin` for the chapter's coding exercise.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

from .core import ExerciseVerdict, grade_exercise

_TINY = 1e-30  # keeps sqrt differentiable at an exactly-zero vector (value ~1e-15, gradient 0)


# ----------------------------------------------------------------------------------------------
# primitives
# ----------------------------------------------------------------------------------------------
def _check_k(k) -> float | torch.Tensor:
    if isinstance(k, bool) or not isinstance(k, (int, float, torch.Tensor)):
        raise TypeError(f"curvature magnitude k must be a positive float (curvature is -k), got {type(k).__name__}")
    if isinstance(k, torch.Tensor):
        if k.numel() != 1 or not bool(k.detach() > 0):
            raise ValueError(f"k must be a single positive number, got {k}")
        return k
    if not (k > 0 and math.isfinite(k)):
        raise ValueError(f"k must be positive and finite (curvature is -k), got {k}")
    return float(k)


def _sqrt(k):
    return torch.sqrt(k) if isinstance(k, torch.Tensor) else math.sqrt(k)


def _check_points(x: torch.Tensor, name: str = "x") -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 1 or x.shape[-1] < 2:
        raise ValueError(f"{name} must have shape (..., n+1) with n >= 1 (time coordinate first), got {tuple(x.shape)}")


def _safe_norm(v: torch.Tensor, keepdim: bool = True) -> torch.Tensor:
    return torch.sqrt((v * v).sum(-1, keepdim=keepdim) + _TINY)


def lorentz_inner(x: torch.Tensor, y: torch.Tensor, keepdim: bool = False) -> torch.Tensor:
    """Minkowski inner product <x, y>_L = -x_0 y_0 + x_s . y_s.  x, y: (..., n+1) -> (...) or (..., 1)."""
    _check_points(x, "x")
    _check_points(y, "y")
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"x and y must have the same last dimension, got {x.shape[-1]} and {y.shape[-1]}")
    xy = x * y
    out = xy[..., 1:].sum(-1, keepdim=True) - xy[..., :1]
    return out if keepdim else out.squeeze(-1)


def lift(space: torch.Tensor, k: float) -> torch.Tensor:
    """Put space coordinates on the hyperboloid: (sqrt(1/k + |x_s|^2), x_s).  (..., n) -> (..., n+1)."""
    k = _check_k(k)
    if not isinstance(space, torch.Tensor) or space.ndim < 1:
        raise TypeError("space must be a torch.Tensor of shape (..., n)")
    time = torch.sqrt(1.0 / k + (space * space).sum(-1, keepdim=True))  # x_0 = sqrt(1/k + |x_s|^2)
    return torch.cat([time, space], dim=-1)


def origin(n: int, k: float, dtype=None, device=None) -> torch.Tensor:
    """The origin o = (1/sqrt(k), 0, ..., 0) of the n-dimensional hyperboloid.  -> (n+1,)."""
    k = _check_k(k)
    o = torch.zeros(n + 1, dtype=dtype, device=device)
    o[0] = 1.0 / _sqrt(float(k))
    return o


def dist(x: torch.Tensor, y: torch.Tensor, k: float) -> torch.Tensor:
    """Geodesic distance d(x, y) = (1/sqrt k) arccosh(-k <x, y>_L).  (..., n+1) x2 -> (...)."""
    k = _check_k(k)
    z = (-k * lorentz_inner(x, y)).clamp_min(1.0)
    return torch.acosh(z) / _sqrt(k)


def expmap0(v: torch.Tensor, k: float) -> torch.Tensor:
    """Exponential map at the origin.  v: (..., n) space part of a tangent vector -> (..., n+1).

    exp_o(v) = (cosh(sqrt k |v|)/sqrt k, sinh(sqrt k |v|)/(sqrt k |v|) v).
    """
    k = _check_k(k)
    sk = _sqrt(k)
    r = _safe_norm(v)                                    # |v|, (..., 1)
    z = sk * r
    return torch.cat([torch.cosh(z) / sk, torch.sinh(z) / z * v], dim=-1)


def logmap0(x: torch.Tensor, k: float) -> torch.Tensor:
    """Logarithm map at the origin.  x: (..., n+1) -> (..., n) (space part; time part is 0).

    |x_s| = sinh(sqrt k d)/sqrt k, so d = asinh(sqrt k |x_s|)/sqrt k, and log_o x = d x_s/|x_s|
    (written with asinh, not acosh(sqrt k x_0), so it is smooth at the origin).
    """
    k = _check_k(k)
    _check_points(x)
    sk = _sqrt(k)
    xs = x[..., 1:]
    z = sk * _safe_norm(xs)                              # sqrt(k) |x_s|
    return torch.asinh(z) / z * xs


def dist0(x: torch.Tensor, k: float) -> torch.Tensor:
    """Distance to the origin, asinh(sqrt k |x_s|)/sqrt k.  (..., n+1) -> (...)."""
    k = _check_k(k)
    sk = _sqrt(k)
    return torch.asinh(sk * _safe_norm(x[..., 1:], keepdim=False)) / sk


# ----------------------------------------------------------------------------------------------
# hyperplanes and the point-to-hyperplane FC layer
# ----------------------------------------------------------------------------------------------
def hyperplane_normal(U: torch.Tensor, a: torch.Tensor, k: float) -> torch.Tensor:
    """Spacelike normals of m Lorentz hyperplanes from (U, a).  U: (n, m), a: (m,) -> W: (n+1, m).

    w = (|U| sinh(sqrt k a), cosh(sqrt k a) U): |w|_L = |U|, and the hyperplane {x : <w, x>_L = 0}
    crosses the geodesic from o in direction U at signed distance a (as U.x = |U| a does in R^n).
    """
    k = _check_k(k)
    if not isinstance(U, torch.Tensor) or not isinstance(a, torch.Tensor):
        raise TypeError("U and a must be torch.Tensors")
    if U.ndim != 2 or a.shape != (U.shape[1],):
        raise ValueError(f"U must be (n, m) and a must be (m,), got {tuple(U.shape)} and {tuple(a.shape)}")
    sk = _sqrt(k)
    u_norm = _safe_norm(U.transpose(0, 1), keepdim=False)  # (m,)
    return torch.cat([(u_norm * torch.sinh(sk * a)).unsqueeze(0), torch.cosh(sk * a) * U], dim=0)


def signed_distance(x: torch.Tensor, W: torch.Tensor, k: float) -> torch.Tensor:
    """Signed distances from points to hyperplanes with normals W (columns).

    d(x, H_w) = asinh(sqrt k <w, x>_L / |w|_L) / sqrt k.   x: (..., n+1), W: (n+1, m) -> (..., m).
    """
    k = _check_k(k)
    _check_points(x)
    if W.ndim != 2 or W.shape[0] != x.shape[-1]:
        raise ValueError(f"W must be (n+1, m) with n+1 = {x.shape[-1]}, got {tuple(W.shape)}")
    sk = _sqrt(k)
    W_flip = torch.cat([-W[:1], W[1:]], dim=0)            # so that x @ W_flip = <x, w>_L
    inner = x @ W_flip                                     # (..., m)
    w_norm = torch.sqrt((-W[0] ** 2 + (W[1:] ** 2).sum(0)).clamp_min(_TINY))  # |w|_L, (m,)
    return torch.asinh(sk * inner / w_norm) / sk


class PLFC(nn.Module):
    """Point-to-hyperplane fully connected layer: L^{n_in} -> L^{n_out}.

    For m = n_out hyperplanes H_i (normals w_i from (U, a)), the output's space coordinates are
    y_i = |w_i|_L sinh(sqrt k d(x, H_i)) / sqrt k, its time coordinate comes from the hyperboloid
    constraint, and an optional gyro-additive bias moves the result: out = exp_o(b) (+) lift(y).
    ``logits(x)`` returns the scaled signed distances |w_i|_L d(x, H_i) (an MLR head).
    Input (..., n_in+1) -> output (..., n_out+1).
    """

    def __init__(self, in_dim: int, out_dim: int, k: float = 1.0, gyro_bias: bool = True):
        super().__init__()
        if not (isinstance(in_dim, int) and isinstance(out_dim, int) and in_dim >= 1 and out_dim >= 1):
            raise ValueError(f"in_dim and out_dim must be positive ints (space dimensions), got {in_dim}, {out_dim}")
        self.k = _check_k(k)
        self.in_dim, self.out_dim = in_dim, out_dim
        self.U = nn.Parameter(torch.randn(in_dim, out_dim) / math.sqrt(in_dim))
        self.a = nn.Parameter(torch.zeros(out_dim))
        self.bias = nn.Parameter(torch.zeros(out_dim)) if gyro_bias else None

    def normals(self) -> torch.Tensor:
        return hyperplane_normal(self.U, self.a, self.k)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """|w|_L * signed distance to each hyperplane.  (..., n_in+1) -> (..., n_out)."""
        W = self.normals()
        u_norm = _safe_norm(self.U.transpose(0, 1), keepdim=False)
        return u_norm * signed_distance(x, W, self.k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_points(x)
        if x.shape[-1] != self.in_dim + 1:
            raise ValueError(f"PLFC expects (..., {self.in_dim + 1}) points, got {tuple(x.shape)}")
        # y_i = |w_i|_L sinh(sqrt k d(x, H_i)) / sqrt k, and since d = asinh(sqrt k <w,x>_L/|w|_L)/sqrt k
        # this is exactly <w_i, x>_L: one matrix product, no asinh/sinh round trip (see the chapter).
        W = self.normals()
        y = lift(x @ torch.cat([-W[:1], W[1:]], dim=0), self.k)   # (..., n_out+1)
        if self.bias is not None:
            y = gyro_add(expmap0(self.bias, self.k), y, self.k)   # exp_o(b) (+) y
        return y


class LFC(nn.Module):
    """HCNN-style Lorentz linear layer (baseline): space = W x + b on the ambient coordinates
    (time included), then the time coordinate from the constraint.  (..., n_in+1) -> (..., n_out+1)."""

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
            raise ValueError(f"LFC expects (..., {self.in_dim + 1}) points, got {tuple(x.shape)}")
        return lift(self.linear(x), self.k)


# ----------------------------------------------------------------------------------------------
# gyro-structure: centroid, boosts, gyro-addition and scaling
# ----------------------------------------------------------------------------------------------
def lorentz_centroid(x: torch.Tensor, k: float, dim: int | tuple = 0, weights: torch.Tensor | None = None) -> torch.Tensor:
    """Closed-form Lorentzian centroid mu = S / (sqrt k |<S, S>_L|^{1/2}), S = sum_i w_i x_i.

    x: (..., n+1); the sum runs over ``dim`` (kept out of the result).  Returns a point (..., n+1).
    """
    k = _check_k(k)
    _check_points(x)
    S = (x * weights.unsqueeze(-1)).sum(dim) if weights is not None else x.mean(dim)
    norm_L = torch.sqrt((-lorentz_inner(S, S, keepdim=True)).clamp_min(_TINY))
    return S / (_sqrt(k) * norm_L)


def _boost(mu: torch.Tensor, x: torch.Tensor, k: float, sign: float) -> torch.Tensor:
    # Unit hyperboloid (multiply by sqrt k), boost, scale back. sign=-1 sends mu to o, +1 sends o to mu.
    sk = _sqrt(k)
    m, y = mu * sk, x * sk
    m0, ms = m[..., :1], m[..., 1:]
    y0, ys = y[..., :1], y[..., 1:]
    msys = (ms * ys).sum(-1, keepdim=True)
    out0 = m0 * y0 + sign * msys                                   # x'_0 = mu_0 x_0 -/+ mu_s.x_s
    outs = ys + (msys / (m0 + 1.0) + sign * y0) * ms               # x'_s = x_s + (mu_s.x_s/(mu_0+1) -/+ x_0) mu_s
    return torch.cat([out0, outs], dim=-1) / sk


def boost_to_origin(mu: torch.Tensor, x: torch.Tensor, k: float) -> torch.Tensor:
    """The Lorentz boost that sends mu to the origin, applied to x.  mu: (..., n+1) broadcast
    against x: (..., n+1) -> (..., n+1).  An isometry; equals (-mu) (+) x."""
    k = _check_k(k)
    _check_points(mu, "mu")
    _check_points(x)
    return _boost(mu, x, k, -1.0)


def gyro_add(a: torch.Tensor, x: torch.Tensor, k: float) -> torch.Tensor:
    """Gyro-addition a (+) x: the boost that sends the origin to a, applied to x.  (..., n+1)."""
    k = _check_k(k)
    _check_points(a, "a")
    _check_points(x)
    return _boost(a, x, k, +1.0)


def gyro_neg(x: torch.Tensor) -> torch.Tensor:
    """Gyro-inverse (-)x = (x_0, -x_s).  (..., n+1)."""
    _check_points(x)
    return torch.cat([x[..., :1], -x[..., 1:]], dim=-1)


def gyro_scale(t, x: torch.Tensor, k: float) -> torch.Tensor:
    """Gyro-scaling t (x) x = exp_o(t log_o x).  t: scalar or (..., 1); x: (..., n+1)."""
    return expmap0(t * logmap0(x, k), k)


def frechet_variance(x: torch.Tensor, mu: torch.Tensor, k: float) -> torch.Tensor:
    """Mean squared distance (1/N) sum_i d(mu, x_i)^2 over all leading dims.  x: (..., n+1), mu: (n+1,)."""
    return (dist0(boost_to_origin(mu, x, k), k) ** 2).mean()


def karcher_mean(x: torch.Tensor, k: float, iters: int = 10) -> torch.Tensor:
    """Frechet (Karcher) mean by ``iters`` Riemannian gradient steps, started at exp_o(mean log_o x).

    Each step: move to mu's frame by a boost, average the logs there, step, boost back.
    x: (N, n+1) -> (n+1,).
    """
    k = _check_k(k)
    _check_points(x)
    mu = expmap0(logmap0(x, k).mean(0), k)
    for _ in range(iters):
        step = logmap0(boost_to_origin(mu, x, k), k).mean(0)       # mean of log_mu x_i, seen from o
        mu = gyro_add(mu, expmap0(step, k), k)                     # mu <- exp_mu(step)
    return mu


# ----------------------------------------------------------------------------------------------
# batch normalisation: GyroLBN (closed form), GyroBN (Karcher), LorentzBatchNorm (log/PT/exp)
# ----------------------------------------------------------------------------------------------
class GyroLBN(nn.Module):
    """Gyro Lorentz batch norm: centre by the boost that sends the Lorentzian centroid to o,
    scale by gamma / sqrt(Frechet variance), then add a learned bias point: exp_o(b) (+) (.).

    Input (..., n+1) with the batch over all leading dims; output the same shape.
    Running mean: exponential average of centroids, renormalised onto the hyperboloid.
    """

    def __init__(self, dim: int, k: float = 1.0, momentum: float = 0.1, eps: float = 1e-5, gamma: float = 1.0):
        super().__init__()
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim (space dimension n) must be a positive int, got {dim}")
        if not 0.0 < momentum <= 1.0:
            raise ValueError(f"momentum must lie in (0, 1], got {momentum}")
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
            raise ValueError(f"expected (..., {self.dim + 1}) points, got {tuple(x.shape)}")
        flat = x.reshape(-1, self.dim + 1)
        if self.training:
            mu = self.batch_mean(flat)
            centred = boost_to_origin(mu, flat, self.k)                 # gyro-centering: (-mu) (+) x
            var = (dist0(centred, self.k) ** 2).mean()                  # Frechet variance about mu
            with torch.no_grad():
                m = self.momentum
                run = (1 - m) * self.running_mean + m * mu.detach()
                self.running_mean.copy_(lorentz_centroid(run.unsqueeze(0), self.k, dim=0))
                self.running_var.mul_(1 - m).add_(m * var.detach())
        else:
            centred = boost_to_origin(self.running_mean, flat, self.k)
            var = self.running_var
        scaled = gyro_scale(self.gamma / torch.sqrt(var + self.eps), centred, self.k)  # gyro-scaling
        out = gyro_add(expmap0(self.bias, self.k), scaled, self.k)                      # gyro-bias
        return out.reshape(x.shape)


class GyroBN(GyroLBN):
    """GyroBN baseline: the same, but the batch mean is the iterative Karcher (Frechet) mean."""

    def __init__(self, dim: int, k: float = 1.0, momentum: float = 0.1, eps: float = 1e-5, gamma: float = 1.0,
                 karcher_iters: int = 10):
        super().__init__(dim, k, momentum, eps, gamma)
        if not isinstance(karcher_iters, int) or karcher_iters < 1:
            raise ValueError(f"karcher_iters must be a positive int, got {karcher_iters}")
        self.karcher_iters = karcher_iters

    def batch_mean(self, x: torch.Tensor) -> torch.Tensor:
        return karcher_mean(x, self.k, self.karcher_iters)


def logmap(mu: torch.Tensor, x: torch.Tensor, k: float) -> torch.Tensor:
    """Logarithm map at mu (ambient tangent vector).  mu, x: (..., n+1) -> (..., n+1)."""
    k = _check_k(k)
    inner = lorentz_inner(mu, x, keepdim=True)
    u = x + k * inner * mu                                         # component of x orthogonal to mu
    u_norm = torch.sqrt(lorentz_inner(u, u, keepdim=True).clamp_min(_TINY))
    d = torch.acosh((-k * inner).clamp_min(1.0)) / _sqrt(k)
    return d * u / u_norm


def expmap(p: torch.Tensor, u: torch.Tensor, k: float) -> torch.Tensor:
    """Exponential map at p of the ambient tangent vector u.  (..., n+1) -> (..., n+1)."""
    k = _check_k(k)
    sk = _sqrt(k)
    r = torch.sqrt(lorentz_inner(u, u, keepdim=True).clamp_min(_TINY))
    return torch.cosh(sk * r) * p + torch.sinh(sk * r) / (sk * r) * u


def transport(x: torch.Tensor, y: torch.Tensor, v: torch.Tensor, k: float) -> torch.Tensor:
    """Parallel transport of v from T_x to T_y along the geodesic:
    v + <y, v>_L / (1/k - <x, y>_L) (x + y).  (..., n+1)."""
    k = _check_k(k)
    coef = lorentz_inner(y, v, keepdim=True) / (1.0 / k - lorentz_inner(x, y, keepdim=True))
    return v + coef * (x + y)


class LorentzBatchNorm(GyroLBN):
    """Lorentz batch norm as in HCNN (baseline): log at the centroid, parallel transport to o,
    rescale, transport to the bias point, exp there.  Same parameters and statistics as GyroLBN."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_points(x)
        if x.shape[-1] != self.dim + 1:
            raise ValueError(f"expected (..., {self.dim + 1}) points, got {tuple(x.shape)}")
        flat = x.reshape(-1, self.dim + 1)
        o = origin(self.dim, float(self.k), dtype=x.dtype, device=x.device)
        if self.training:
            mu = self.batch_mean(flat)
            var = (dist(mu, flat, self.k) ** 2).mean()
            with torch.no_grad():
                m = self.momentum
                run = (1 - m) * self.running_mean + m * mu.detach()
                self.running_mean.copy_(lorentz_centroid(run.unsqueeze(0), self.k, dim=0))
                self.running_var.mul_(1 - m).add_(m * var.detach())
        else:
            mu, var = self.running_mean, self.running_var
        v = transport(mu, o, logmap(mu, flat, self.k), self.k)          # log_mu x, moved to T_o
        v = v * (self.gamma / torch.sqrt(var + self.eps))
        beta = expmap0(self.bias, self.k)
        out = expmap(beta, transport(o, beta, v, self.k), self.k)
        return out.reshape(x.shape)


# ----------------------------------------------------------------------------------------------
# concatenation, activation, dropout, convolution
# ----------------------------------------------------------------------------------------------
def digamma_scale(d: int, N: int) -> float:
    """c = exp((psi(d/2) - psi(N d/2)) / 2): rescales N concatenated d-dim blocks so that the
    expected log-radius of a Gaussian block is kept (E log|g| = (log 2 sigma^2 + psi(n/2))/2)."""
    from scipy.special import digamma  # scipy's digamma: a well-kept implementation

    if not (isinstance(d, int) and isinstance(N, int) and d >= 1 and N >= 1):
        raise ValueError(f"d and N must be positive ints, got {d}, {N}")
    return float(math.exp(0.5 * (digamma(d / 2) - digamma(N * d / 2))))


def lorentz_concat(blocks: torch.Tensor, k: float, align: str = "digamma") -> torch.Tensor:
    """Concatenate N points of L^d into one point of L^{N d}: concatenate space parts
    (times the digamma scale if ``align='digamma'``), then lift.  (..., N, d+1) -> (..., N d + 1)."""
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
    """ReLU on the space coordinates, time from the constraint.  (..., n+1) -> (..., n+1)."""

    def __init__(self, k: float = 1.0):
        super().__init__()
        self.k = _check_k(k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_points(x)
        return lift(F.relu(x[..., 1:]), self.k)


class LorentzDropout(nn.Module):
    """Dropout on the space coordinates, time from the constraint.  (..., n+1) -> (..., n+1)."""

    def __init__(self, p: float = 0.1, k: float = 1.0):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"p must lie in [0, 1), got {p}")
        self.p, self.k = p, _check_k(k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_points(x)
        if not self.training or self.p == 0.0:
            return x
        return lift(F.dropout(x[..., 1:], self.p, training=True), self.k)


class LorentzConv2d(nn.Module):
    """Lorentz convolution: gather each kernel x kernel patch of points, concatenate them into one
    point (digamma-aligned), and apply a PLFC (or, for the HCNN baseline, plain concat + LFC).

    Input (B, H, W, in_dim+1) -> output (B, H', W', out_dim+1). Zero padding pads with the origin.
    """

    def __init__(self, in_dim: int, out_dim: int, kernel_size: int = 3, k: float = 1.0, stride: int = 1,
                 padding: int = 0, variant: str = "ilnn"):
        super().__init__()
        if variant not in ("ilnn", "hcnn"):
            raise ValueError(f"variant must be 'ilnn' or 'hcnn', got {variant!r}")
        self.k, self.in_dim, self.out_dim = _check_k(k), in_dim, out_dim
        self.kernel_size, self.stride, self.padding, self.variant = kernel_size, stride, padding, variant
        n_cat = in_dim * kernel_size * kernel_size
        self.fc = PLFC(n_cat, out_dim, k) if variant == "ilnn" else LFC(n_cat, out_dim, k)
        self.scale = digamma_scale(in_dim, kernel_size * kernel_size) if variant == "ilnn" else 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4 or x.shape[-1] != self.in_dim + 1:
            raise ValueError(f"expected (B, H, W, {self.in_dim + 1}), got {tuple(x.shape)}")
        B, H, W, _ = x.shape
        space = x[..., 1:].permute(0, 3, 1, 2)                                   # (B, n, H, W)
        patches = F.unfold(space, self.kernel_size, padding=self.padding, stride=self.stride)  # (B, n*kk, L)
        Ho = (H + 2 * self.padding - self.kernel_size) // self.stride + 1
        Wo = (W + 2 * self.padding - self.kernel_size) // self.stride + 1
        cat = lift(patches.transpose(1, 2) * self.scale, self.k)                 # (B, L, n*kk+1): concat + lift
        return self.fc(cat).reshape(B, Ho, Wo, self.out_dim + 1)


# ----------------------------------------------------------------------------------------------
# models for the chapter
# ----------------------------------------------------------------------------------------------
class LorentzCNN(nn.Module):
    """Two Lorentz conv blocks + centroid pooling + hyperplane-logit head, for 8x8 images.

    variant='ilnn': PLFC convolutions (digamma concat, gyro-bias), ``bn`` ('gyrolbn' | 'gyrobn' |
    'lbn'), Lorentz ReLU and dropout, PLFC head.  variant='hcnn': plain concat + LFC, LBN, LFC head.
    Input (B, 1, 8, 8) pixels -> logits (B, classes).
    """

    def __init__(self, width: int = 16, classes: int = 10, k: float = 1.0, variant: str = "ilnn",
                 bn: str | None = None, dropout: float = 0.1, gamma: float = 1.0):
        super().__init__()
        bn = bn or ("gyrolbn" if variant == "ilnn" else "lbn")
        norms = {"gyrolbn": GyroLBN, "gyrobn": GyroBN, "lbn": LorentzBatchNorm}
        if bn not in norms:
            raise ValueError(f"bn must be one of {list(norms)}, got {bn!r}")
        self.k = _check_k(k)
        self.conv1 = LorentzConv2d(1, width, 3, k, padding=1, variant=variant)
        self.bn1 = norms[bn](width, k, gamma=gamma)
        self.conv2 = LorentzConv2d(width, 2 * width, 3, k, stride=2, padding=1, variant=variant)
        self.bn2 = norms[bn](2 * width, k, gamma=gamma)
        self.act = LorentzReLU(k)
        self.drop = LorentzDropout(dropout, k)
        self.head = PLFC(2 * width, classes, k) if variant == "ilnn" else LFC(2 * width, classes, k)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = lift(images.permute(0, 2, 3, 1), self.k)            # (B, 8, 8, 2): each pixel a point of L^1
        x = self.act(self.bn1(self.conv1(x)))                   # (B, 8, 8, w+1)
        x = self.act(self.bn2(self.conv2(x)))                   # (B, 4, 4, 2w+1)
        x = lorentz_centroid(x.flatten(1, 2), self.k, dim=1)    # (B, 2w+1): pool = centroid
        return self.head.logits(self.drop(x))                   # (B, classes)


class EuclideanCNN(nn.Module):
    """The Euclidean CNN of the same width: conv-BN-ReLU x2, average pool, dropout, linear."""

    def __init__(self, width: int = 16, classes: int = 10, dropout: float = 0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(dropout), nn.Linear(2 * width, classes))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images)


class LorentzMLP(nn.Module):
    """in -> hidden -> bottleneck -> classes, every layer on the hyperboloid.  (B, d) -> (B, classes)."""

    def __init__(self, in_dim: int, hidden: int, bottleneck: int, classes: int, k: float = 1.0, variant: str = "ilnn"):
        super().__init__()
        self.k = _check_k(k)
        FC = PLFC if variant == "ilnn" else LFC
        BN = GyroLBN if variant == "ilnn" else LorentzBatchNorm
        self.fc1, self.bn1, self.act = FC(in_dim, hidden, k), BN(hidden, k), LorentzReLU(k)
        self.fc2, self.bn2 = FC(hidden, bottleneck, k), BN(bottleneck, k)
        self.head = FC(bottleneck, classes, k)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.bn1(self.fc1(lift(x, self.k))))
        return self.bn2(self.fc2(h))                              # (B, bottleneck+1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head.logits(self.embed(x))


class EuclideanMLP(nn.Module):
    """in -> hidden -> bottleneck -> classes with BatchNorm and ReLU.  (B, d) -> (B, classes)."""

    def __init__(self, in_dim: int, hidden: int, bottleneck: int, classes: int):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                  nn.Linear(hidden, bottleneck), nn.BatchNorm1d(bottleneck))
        self.head = nn.Linear(bottleneck, classes)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def tree_data(branching: int = 3, depth: int = 4, dim: int = 32, per_leaf: int = 20, noise: float = 0.5,
              decay: float = 0.7, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Samples from a random hierarchy: each node adds a Gaussian offset (scale ``decay**level``) to
    its parent's centre; samples are leaf centres plus noise, labelled by leaf.

    Returns x: (branching**depth * per_leaf, dim) float32 and y: (same,) int64 with
    branching**depth classes.
    """
    if branching < 2 or depth < 1 or per_leaf < 1 or dim < 1:
        raise ValueError("need branching >= 2, depth >= 1, per_leaf >= 1, dim >= 1")
    g = torch.Generator().manual_seed(seed)
    centres = torch.zeros(1, dim)
    for level in range(depth):
        kids = centres.repeat_interleave(branching, 0)
        centres = kids + decay ** level * torch.randn(kids.shape, generator=g)   # child = parent + offset
    n_leaves = centres.shape[0]
    y = torch.arange(n_leaves).repeat_interleave(per_leaf)
    x = centres[y] + noise * decay ** depth * torch.randn(len(y), dim, generator=g)
    return x, y


def train_classifier(model: nn.Module, x_tr: torch.Tensor, y_tr: torch.Tensor, x_te: torch.Tensor,
                     y_te: torch.Tensor, epochs: int = 20, batch_size: int = 64, lr: float = 1e-2,
                     seed: int = 0) -> dict:
    """Adam on cross-entropy, minibatches drawn with a seeded generator.  Returns a dict with the
    test accuracy, the per-epoch training loss and the CPU seconds spent in training steps."""
    import time

    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    losses, cpu = [], 0.0
    n = len(x_tr)
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(n, generator=g)
        total = 0.0
        t0 = time.process_time()
        for i in range(0, n - batch_size + 1, batch_size):
            idx = perm[i:i + batch_size]
            loss = F.cross_entropy(model(x_tr[idx]), y_tr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        cpu += time.process_time() - t0
        sched.step()
        losses.append(total / (n // batch_size * batch_size))
    model.eval()
    with torch.no_grad():
        acc = (model(x_te).argmax(1) == y_te).float().mean().item()
    return {"acc": acc, "losses": losses, "cpu_s": cpu}


# ----------------------------------------------------------------------------------------------
# exercise check
# ----------------------------------------------------------------------------------------------
_BoostFn = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]


def check_boost_to_origin(fn: _BoostFn) -> ExerciseVerdict:
    """Grade a student's ``fn(mu, x, k)``: it must send mu to the origin, keep points on
    the hyperboloid and preserve distances, for several curvatures.

    Returns an :class:`~iclr26.core.ExerciseVerdict`: "not done yet" on the stub,
    "wrong" with a hint naming the property that fails, "correct" when every case
    passes.
    """
    g = torch.Generator().manual_seed(0)
    cases = []
    for k in (0.3, 1.0, 2.5):
        x = lift(torch.randn(50, 4, generator=g, dtype=torch.float64), k)
        cases.append((k, x, lorentz_centroid(x, k)))

    def trial(fn):
        for k, x, mu in cases:
            y = fn(mu.clone(), x.clone(), k)
            if not isinstance(y, torch.Tensor) or y.shape != x.shape:
                got = tuple(getattr(y, "shape", ())) or type(y).__name__
                raise AssertionError(f"fn(mu, x, k) must return a tensor of shape "
                                     f"{tuple(x.shape)} (one boosted point per row of "
                                     f"x), got {got}")
            o = origin(4, k, dtype=torch.float64)
            m = fn(mu.clone(), mu[None].clone(), k)[0]
            if not torch.allclose(m, o, atol=1e-8):
                raise AssertionError(f"k={k}: fn(mu, mu[None], k) should be the origin "
                                     "(1/sqrt(k), 0, ..., 0); check which point your "
                                     "map sends to the origin, and the rescaling by "
                                     "sqrt(k)")
            on_sheet = torch.full((50,), -1.0 / k, dtype=torch.float64)
            if not torch.allclose(lorentz_inner(y, y), on_sheet, atol=1e-8):
                raise AssertionError(f"k={k}: outputs are not on the hyperboloid "
                                     "<y,y>_L = -1/k; a boost is linear, so it must "
                                     "keep the Minkowski form")
            if not (y[:, 0] > 0).all():
                raise AssertionError(f"k={k}: outputs must be on the upper sheet "
                                     "(y_0 > 0)")
            d_before = dist(x[:, None], x[None], k)
            d_after = dist(y[:, None], y[None], k)
            if not torch.allclose(d_before, d_after, atol=1e-6):
                raise AssertionError(f"k={k}: pairwise distances changed: not an "
                                     "isometry")
        return "your boost is an isometry that sends mu to the origin, at 3 curvatures"

    return grade_exercise(fn, trial)
