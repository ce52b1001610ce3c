"""Lorentz-model geometry for ILNN: points, distances, hyperplanes,
gyro-operations, means.

Conventions. Curvature is ``-k`` with ``k > 0``. A point is ``x = (x_0, x_s)`` in
``R^{n+1}`` (time coordinate first) with ``<x, x>_L = -1/k`` and ``x_0 > 0``, where
``<x, y>_L = -x_0 y_0 + x_s . y_s``. The origin is ``o = (1/sqrt(k), 0, ..., 0)``.
Tangent vectors at the origin have time coordinate 0; :func:`expmap0` and
:func:`logmap0` take and return only their ``n`` space coordinates.
(geoopt's ``Lorentz(k=K)`` uses ``<x, x>_L = -K``, i.e. ``K = 1/k`` here.)
"""

from __future__ import annotations

import math

import torch

from ..validate import as_float, as_int

# keeps sqrt differentiable at an exactly-zero vector (value ~1e-15, gradient 0)
_TINY = 1e-30


# --------------------------------------------------------------------------------------
# primitives
# --------------------------------------------------------------------------------------
def _check_k(k) -> float | torch.Tensor:
    if isinstance(k, bool) or not isinstance(k, (int, float, torch.Tensor)):
        raise TypeError(
            "curvature magnitude k must be a positive float (curvature is -k), got "
            f"{type(k).__name__}"
        )
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
        raise ValueError(
            f"{name} must have shape (..., n+1) with n >= 1 (time coordinate first), "
            f"got {tuple(x.shape)}"
        )


def _safe_norm(v: torch.Tensor, keepdim: bool = True) -> torch.Tensor:
    return torch.sqrt((v * v).sum(-1, keepdim=keepdim) + _TINY)


def lorentz_inner(
    x: torch.Tensor, y: torch.Tensor, keepdim: bool = False
) -> torch.Tensor:
    """Minkowski inner product <x, y>_L = -x_0 y_0 + x_s . y_s. x, y: (..., n+1) ->
    (...) or (..., 1)."""
    _check_points(x, "x")
    _check_points(y, "y")
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(
            f"x and y must have the same last dimension, got {x.shape[-1]} and "
            f"{y.shape[-1]}"
        )
    xy = x * y
    out = xy[..., 1:].sum(-1, keepdim=True) - xy[..., :1]
    return out if keepdim else out.squeeze(-1)


def lift(space: torch.Tensor, k: float) -> torch.Tensor:
    """Put space coordinates on the hyperboloid: (sqrt(1/k + |x_s|^2), x_s).
    (..., n) -> (..., n+1)."""
    k = _check_k(k)
    if not isinstance(space, torch.Tensor) or space.ndim < 1:
        raise TypeError("space must be a torch.Tensor of shape (..., n)")
    # x_0 = sqrt(1/k + |x_s|^2)
    time = torch.sqrt(1.0 / k + (space * space).sum(-1, keepdim=True))
    return torch.cat([time, space], dim=-1)


def origin(n: int, k: float, dtype=None, device=None) -> torch.Tensor:
    """The origin o = (1/sqrt(k), 0, ..., 0) of the n-dimensional hyperboloid.
    -> (n+1,)."""
    k = _check_k(k)
    o = torch.zeros(n + 1, dtype=dtype, device=device)
    o[0] = 1.0 / _sqrt(float(k))
    return o


def check_on_hyperboloid(x: torch.Tensor, k, name: str = "x") -> None:
    """Raise ValueError unless every point of x lies on the upper sheet of L^n_k.

    The test is relative to the size of the terms, |<x,x>_L + 1/k| <= tol (x_0^2 + 1/k),
    with tol 1e-4 in float32 / float16 and 1e-9 in float64, so far-out points (x_0 ~
    1e3, where float32 rounding alone is ~1e-7 x_0^2) are not rejected for rounding."""
    _check_points(x, name)
    k = _check_k(k)
    if x.numel() == 0:
        return
    with torch.no_grad():
        x0 = x[..., 0]
        if not bool((x0 > 0).all()):
            raise ValueError(
                f"{name} must lie on the upper sheet of the hyperboloid (x_0 > 0); "
                f"got min x_0 = {x0.min().item():.3g}"
            )
        tol = 1e-9 if x.dtype == torch.float64 else 1e-4
        err = (lorentz_inner(x, x) + 1.0 / k).abs() / (x0 * x0 + 1.0 / k)
        if not bool((err <= tol).all()):
            raise ValueError(
                f"{name} must lie on the hyperboloid <x,x>_L = -1/k = "
                f"{-1.0 / float(k):.4g}"
                f" (build points with lift or expmap0); worst relative error "
                f"{err.max().item():.2e} > {tol:g}"
            )


class _Arccosh(torch.autograd.Function):
    """arccosh(z) for z >= 1, with derivative 1/sqrt(z^2 - 1) where z > 1 and 0 at
    z = 1. A distance behaves like |x - y| where the points meet: z has its minimum
    there (dz/dx = 0), and torch's own derivative, inf, times that 0 is NaN. 0 is
    the subgradient of the kink. Bit for bit torch.acosh and its derivative elsewhere.
    (A batch point that lands exactly on its batch's centroid in float32 made a
    baseline's training NaN on one CPU and not on another.)"""

    @staticmethod
    def forward(ctx, z: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z)
        return torch.acosh(z)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (z,) = ctx.saved_tensors
        return torch.where(z > 1, grad * (z.pow(2) - 1).rsqrt(), 0.0)


def arccosh(z: torch.Tensor) -> torch.Tensor:
    """arccosh for z >= 1 (clamp first) with a finite derivative at 1
    (:class:`_Arccosh`)."""
    return _Arccosh.apply(z)


def dist(x: torch.Tensor, y: torch.Tensor, k: float) -> torch.Tensor:
    """Geodesic distance d(x, y) = (1/sqrt k) arccosh(-k <x, y>_L).
    (..., n+1) x2 -> (...).

    Both arguments must be on the upper sheet (x_0 > 0): for a point on the lower sheet
    -k<x, y>_L < 1 and the formula would silently return 0.
    """
    k = _check_k(k)
    for t, name in ((x, "x"), (y, "y")):
        _check_points(t, name)
        if t.numel() and not bool((t[..., 0].detach() > 0).all()):
            raise ValueError(
                f"{name} must lie on the upper sheet (x_0 > 0); got a point with "
                f"x_0 = {t[..., 0].min().item():.3g}"
            )
    z = (-k * lorentz_inner(x, y)).clamp_min(1.0)
    return arccosh(z) / _sqrt(k)


def expmap0(v: torch.Tensor, k: float) -> torch.Tensor:
    """Exponential map at the origin. v: (..., n) space part of a tangent vector
    -> (..., n+1).

    exp_o(v) = (cosh(sqrt k |v|)/sqrt k, sinh(sqrt k |v|)/(sqrt k |v|) v).
    """
    k = _check_k(k)
    sk = _sqrt(k)
    r = _safe_norm(v)  # |v|, (..., 1)
    z = sk * r
    return torch.cat([torch.cosh(z) / sk, torch.sinh(z) / z * v], dim=-1)


def logmap0(x: torch.Tensor, k: float) -> torch.Tensor:
    """Logarithm map at the origin. x: (..., n+1) -> (..., n) (space part;
    time part is 0).

    |x_s| = sinh(sqrt k d)/sqrt k, so d = asinh(sqrt k |x_s|)/sqrt k,
    and log_o x = d x_s/|x_s|
    (written with asinh, not acosh(sqrt k x_0), so it is smooth at the origin).
    """
    k = _check_k(k)
    _check_points(x)
    sk = _sqrt(k)
    xs = x[..., 1:]
    z = sk * _safe_norm(xs)  # sqrt(k) |x_s|
    return torch.asinh(z) / z * xs


def dist0(x: torch.Tensor, k: float) -> torch.Tensor:
    """Distance to the origin, asinh(sqrt k |x_s|)/sqrt k.  (..., n+1) -> (...)."""
    k = _check_k(k)
    sk = _sqrt(k)
    return torch.asinh(sk * _safe_norm(x[..., 1:], keepdim=False)) / sk


# --------------------------------------------------------------------------------------
# hyperplanes and the point-to-hyperplane FC layer
# --------------------------------------------------------------------------------------
def hyperplane_normal(U: torch.Tensor, a: torch.Tensor, k: float) -> torch.Tensor:
    """Spacelike normals of m Lorentz hyperplanes from (U, a). U: (n, m), a: (m,) -> W:
    (n+1, m).

    w = (|U| sinh(sqrt k a), cosh(sqrt k a) U): |w|_L = |U|, and the hyperplane {x : <w,
    x>_L = 0} crosses the geodesic from o in direction U at signed distance a (as U.x =
    |U| a does in R^n).
    """
    k = _check_k(k)
    if not isinstance(U, torch.Tensor) or not isinstance(a, torch.Tensor):
        raise TypeError("U and a must be torch.Tensors")
    if U.ndim != 2 or a.shape != (U.shape[1],):
        raise ValueError(
            f"U must be (n, m) and a must be (m,), got {tuple(U.shape)} and "
            f"{tuple(a.shape)}"
        )
    sk = _sqrt(k)
    u_norm = _safe_norm(U.transpose(0, 1), keepdim=False)  # (m,)
    return torch.cat(
        [(u_norm * torch.sinh(sk * a)).unsqueeze(0), torch.cosh(sk * a) * U], dim=0
    )


def signed_distance(x: torch.Tensor, W: torch.Tensor, k: float) -> torch.Tensor:
    """Signed distances from points to hyperplanes with normals W (columns).

    d(x, H_w) = asinh(sqrt k <w, x>_L / |w|_L) / sqrt k. x: (..., n+1), W: (n+1, m)
    -> (..., m).
    """
    k = _check_k(k)
    _check_points(x)
    if W.ndim != 2 or W.shape[0] != x.shape[-1]:
        raise ValueError(
            f"W must be (n+1, m) with n+1 = {x.shape[-1]}, got {tuple(W.shape)}"
        )
    sk = _sqrt(k)
    W_flip = torch.cat([-W[:1], W[1:]], dim=0)  # so that x @ W_flip = <x, w>_L
    inner = x @ W_flip  # (..., m)
    # |w|_L, (m,)
    w_norm = torch.sqrt((-(W[0] ** 2) + (W[1:] ** 2).sum(0)).clamp_min(_TINY))
    return torch.asinh(sk * inner / w_norm) / sk


# --------------------------------------------------------------------------------------
# gyro-structure: centroid, boosts, gyro-addition and scaling
# --------------------------------------------------------------------------------------
def lorentz_centroid(
    x: torch.Tensor, k: float, dim: int | tuple = 0, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Closed-form Lorentzian centroid mu = S / (sqrt k |<S, S>_L|^{1/2}), S =
    sum_i w_i x_i.

    x: (..., n+1); the sum runs over ``dim`` (kept out of the result).
        Returns a point (..., n+1).
    """
    k = _check_k(k)
    _check_points(x)
    S = (x * weights.unsqueeze(-1)).sum(dim) if weights is not None else x.mean(dim)
    norm_L = torch.sqrt((-lorentz_inner(S, S, keepdim=True)).clamp_min(_TINY))
    return S / (_sqrt(k) * norm_L)


def _boost(mu: torch.Tensor, x: torch.Tensor, k: float, sign: float) -> torch.Tensor:
    # Unit hyperboloid (multiply by sqrt k), boost, scale back. sign=-1 sends mu to o,
    # +1 sends o to mu.
    sk = _sqrt(k)
    m, y = mu * sk, x * sk
    m0, ms = m[..., :1], m[..., 1:]
    y0, ys = y[..., :1], y[..., 1:]
    msys = (ms * ys).sum(-1, keepdim=True)
    out0 = m0 * y0 + sign * msys  # x'_0 = mu_0 x_0 -/+ mu_s.x_s
    # x'_s = x_s + (mu_s.x_s/(mu_0+1) -/+ x_0) mu_s
    outs = ys + (msys / (m0 + 1.0) + sign * y0) * ms
    return torch.cat([out0, outs], dim=-1) / sk


def boost_to_origin(mu: torch.Tensor, x: torch.Tensor, k: float) -> torch.Tensor:
    """The Lorentz boost that sends mu to the origin, applied to x.
    mu: (..., n+1) broadcast against x: (..., n+1) -> (..., n+1).
    An isometry; equals (-mu) (+) x."""
    k = _check_k(k)
    _check_points(mu, "mu")
    _check_points(x)
    return _boost(mu, x, k, -1.0)


def gyro_add(a: torch.Tensor, x: torch.Tensor, k: float) -> torch.Tensor:
    """Gyro-addition a (+) x: the boost that sends the origin to a, applied to x.
    (..., n+1)."""
    k = _check_k(k)
    _check_points(a, "a")
    _check_points(x)
    return _boost(a, x, k, +1.0)


def gyro_neg(x: torch.Tensor) -> torch.Tensor:
    """Gyro-inverse (-)x = (x_0, -x_s).  (..., n+1)."""
    _check_points(x)
    return torch.cat([x[..., :1], -x[..., 1:]], dim=-1)


def gyro_scale(t, x: torch.Tensor, k: float) -> torch.Tensor:
    """Gyro-scaling t (x) x = exp_o(t log_o x). t: scalar or (..., 1); x: (..., n+1)."""
    return expmap0(t * logmap0(x, k), k)


def frechet_variance(x: torch.Tensor, mu: torch.Tensor, k: float) -> torch.Tensor:
    """Mean squared distance (1/N) sum_i d(mu, x_i)^2 over all leading dims.
    x: (..., n+1), mu: (n+1,)."""
    return (dist0(boost_to_origin(mu, x, k), k) ** 2).mean()


def karcher_mean(
    x: torch.Tensor,
    k: float,
    iters: int | None = None,
    tol: float | None = None,
    max_iters: int = 200,
    return_steps: bool = False,
):
    """Frechet (Karcher) mean by Riemannian gradient descent on F(mu) = mean
    d(mu, x_i)^2 / 2, started at exp_o(mean log_o x). x: (N, n+1) -> (n+1,) (and the
    step count if asked).

    A step moves mu along g = mean_i log_mu x_i (the negative gradient): boost x into
    mu's frame, average the logs there, step, boost back. The classical unit step
    diverges on spread batches: F's Hessian across the geodesic to x_i is z coth z with
    z = sqrt(k) d(mu, x_i) (it is 1 only in flat space), and gradient descent needs a
    step below 2 / (largest curvature). So the step is 1 / mean_i(z_i coth z_i) (a
    scalar Newton step), halved while F does not decrease.
    Stopping: |g| <= tol (1 + rms spread), tol defaulting to 1e-4 in float32 and 1e-9 in
    float64. ``iters=None`` runs until that holds and raises RuntimeError if it has not
    after ``max_iters`` steps; an integer ``iters`` runs at most that many steps
    (stopping early when converged), for a fixed-cost baseline.
    Non-finite values raise at once.
    """
    k = _check_k(k)
    _check_points(x)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"x must be (N, n+1) with N >= 1, got {tuple(x.shape)}")
    if iters is not None:
        iters = as_int(iters, "iters (or None)", lo=0)
    if tol is None:
        tol = 1e-9 if x.dtype == torch.float64 else 1e-4
    tol = as_float(tol, "tol", lo=0.0, open_lo=True)
    max_iters = as_int(max_iters, "max_iters", lo=1)
    sk = float(_sqrt(float(k)))
    slack = 8 * torch.finfo(x.dtype).eps  # F comparisons at rounding level

    def evaluate(m):
        logs = logmap0(boost_to_origin(m, x, k), k)  # log_mu x_i, seen from o
        d = _safe_norm(logs, keepdim=False)
        z = (sk * d).clamp_min(1e-6)
        return 0.5 * (d * d).mean(), logs.mean(0), (z / torch.tanh(z)).mean()

    mu = expmap0(logmap0(x, k).mean(0), k)
    f, g, curv = evaluate(mu)
    budget = max_iters if iters is None else iters
    steps = 0
    while True:
        gnorm, fv = float(g.detach().norm()), float(f.detach())
        if not (math.isfinite(gnorm) and math.isfinite(fv)):
            raise RuntimeError(
                f"karcher_mean: non-finite values after {steps} steps (k={float(k)})"
            )
        if gnorm <= tol * (1.0 + math.sqrt(2.0 * fv)):
            break
        if steps >= budget:
            if iters is None:
                raise RuntimeError(
                    f"karcher_mean did not converge in {max_iters} steps: "
                    f"|grad| = {gnorm:.2e} > tol = {tol:g} (1 + spread); "
                    "raise max_iters or tol, or use float64"
                )
            break
        eta = 1.0 / float(curv.detach())
        for _ in range(30):  # backtracking on F
            cand = gyro_add(mu, expmap0(eta * g, k), k)  # exp_mu(eta g)
            f_new, g_new, curv_new = evaluate(cand)
            if float(f_new.detach()) <= fv * (1 + slack):
                break
            eta *= 0.5
        else:
            raise RuntimeError(
                f"karcher_mean did not converge: no decreasing step after {steps} "
                f"steps (|grad| = {gnorm:.2e}); the batch is too spread for "
                f"{x.dtype} at k={float(k)}"
            )
        mu, f, g, curv = cand, f_new, g_new, curv_new
        steps += 1
    return (mu, steps) if return_steps else mu


def logmap(mu: torch.Tensor, x: torch.Tensor, k: float) -> torch.Tensor:
    """Logarithm map at mu (ambient tangent vector). mu, x: (..., n+1) -> (..., n+1)."""
    k = _check_k(k)
    inner = lorentz_inner(mu, x, keepdim=True)
    u = x + k * inner * mu  # component of x orthogonal to mu
    u_norm = torch.sqrt(lorentz_inner(u, u, keepdim=True).clamp_min(_TINY))
    d = arccosh((-k * inner).clamp_min(1.0)) / _sqrt(k)
    return d * u / u_norm


def expmap(p: torch.Tensor, u: torch.Tensor, k: float) -> torch.Tensor:
    """Exponential map at p of the ambient tangent vector u. (..., n+1) ->
    (..., n+1)."""
    k = _check_k(k)
    sk = _sqrt(k)
    r = torch.sqrt(lorentz_inner(u, u, keepdim=True).clamp_min(_TINY))
    return torch.cosh(sk * r) * p + torch.sinh(sk * r) / (sk * r) * u


def transport(
    x: torch.Tensor, y: torch.Tensor, v: torch.Tensor, k: float
) -> torch.Tensor:
    """Parallel transport of v from T_x to T_y along the geodesic:
    v + <y, v>_L / (1/k - <x, y>_L) (x + y).  (..., n+1)."""
    k = _check_k(k)
    coef = lorentz_inner(y, v, keepdim=True) / (
        1.0 / k - lorentz_inner(x, y, keepdim=True)
    )
    return v + coef * (x + y)


def digamma_scale(d: int, N: int) -> float:
    """c = exp((psi(d/2) - psi(N d/2)) / 2): rescales N concatenated d-dim blocks so
    that the expected log-radius of a Gaussian block is kept (E log|g| = (log 2 sigma^2
    + psi(n/2))/2)."""
    from scipy.special import digamma  # scipy's digamma: a well-kept implementation

    d, N = as_int(d, "d", lo=1), as_int(N, "N", lo=1)
    return float(math.exp(0.5 * (digamma(d / 2) - digamma(N * d / 2))))
