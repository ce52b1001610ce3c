"""Fractional calculus for the f-LIF neuron: GL and ABM weights, the GL derivative, the
Mittag-Leffler function, the order's input check and the exercise check. (Tail fits
use :func:`iclr26.numerics.loglog_slope`; the other input checks come from
:mod:`iclr26.validate`.)"""

from __future__ import annotations

import math
from typing import Callable

import torch

from ..core import ExerciseVerdict, grade_exercise
from ..validate import as_int, check_positive

METHODS = ("gl", "abm")


# --------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------


def _check_alpha(alpha) -> None:
    """alpha may be a float or a 0-d / 1-element tensor, and must lie in (0, 1]."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, torch.Tensor)):
        raise TypeError(
            "alpha must be a float or a 0-d tensor in (0, 1], got "
            f"{type(alpha).__name__}"
        )
    if isinstance(alpha, torch.Tensor):
        if alpha.numel() != 1:
            raise ValueError(
                "alpha must be a single number, got a tensor of shape "
                f"{tuple(alpha.shape)}"
            )
        value = float(alpha.detach().reshape(()))
    else:
        value = float(alpha)
    if not 0.0 < value <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1], got {value}")


def _as_alpha_tensor(
    alpha, like: torch.Tensor | None = None, dtype=None, device=None
) -> torch.Tensor:
    """alpha as a 0-d tensor (keeping its graph if it is one) on the right
    dtype/device."""
    if like is not None:
        dtype, device = like.dtype, like.device
    if isinstance(alpha, torch.Tensor):
        return alpha.reshape(()).to(
            dtype=dtype or alpha.dtype, device=device or alpha.device
        )
    return torch.tensor(
        float(alpha), dtype=dtype or torch.get_default_dtype(), device=device
    )


# --------------------------------------------------------------------------------------
# Weights of the two schemes
# --------------------------------------------------------------------------------------


def gl_weights(
    alpha: float | torch.Tensor,
    n: int,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The Grünwald–Letnikov weights c_j = (-1)^j binom(alpha, j), j = 0 .. n-1.
    Shape (n,).

    Computed by the recurrence c_0 = 1, c_j = (1 - (1+alpha)/j) c_{j-1} as one
    ``cumprod``, so the result is differentiable in ``alpha`` when ``alpha`` is a tensor
    that requires grad. For large j, c_j ~ -alpha / Gamma(1-alpha) * j^(-1-alpha): a
    power law, not an exponential.
    """
    _check_alpha(alpha)
    n = as_int(n, "n", lo=1)
    a = _as_alpha_tensor(alpha, dtype=dtype, device=device)
    j = torch.arange(1, n, dtype=a.dtype, device=a.device)  # (n-1,)
    factors = 1.0 - (1.0 + a) / j  # c_j / c_{j-1}
    return torch.cat(
        [torch.ones(1, dtype=a.dtype, device=a.device), torch.cumprod(factors, 0)]
    )


def abm_weights(
    alpha: float | torch.Tensor,
    n: int,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The fractional Adams–Bashforth (predictor) weights a_m = (m+1)^alpha - m^alpha,
    m = 0 .. n-1.

    Shape (n,). They multiply h^alpha / Gamma(alpha+1) * f_{n-1-m}; a_0 = 1 and, for
    large m, a_m ~ alpha * m^(alpha-1), the kernel of the Riemann–Liouville integral.
    At alpha = 1 every a_m is 1 and the scheme is the explicit Euler sum v_n = v_0 + h
    * sum_j f_j.
    """
    _check_alpha(alpha)
    n = as_int(n, "n", lo=1)
    a = _as_alpha_tensor(alpha, dtype=dtype, device=device)
    # (n-1,), m >= 1 avoids 0^alpha
    m = torch.arange(1, n, dtype=a.dtype, device=a.device)
    rest = (m + 1.0) ** a - m**a  # a_m = (m+1)^α − m^α
    return torch.cat([torch.ones(1, dtype=a.dtype, device=a.device), rest])


def gl_derivative(
    values: torch.Tensor, alpha: float | torch.Tensor, h: float
) -> torch.Tensor:
    """The Grünwald–Letnikov fractional derivative of samples ``values[k] = y(k h)``,
    k = 0 .. T-1.

    values: (T, ...) with the time axis first. Returns (T, ...): D^alpha y(t_k) ~
    h^(-alpha) * sum_{j=0}^{k} c_j y(t_{k-j}). First order accurate in h; for y(0) = 0
    this is also the Caputo derivative.
    """
    if not isinstance(values, torch.Tensor):
        raise TypeError(
            f"values must be a tensor of shape (T, ...), got {type(values).__name__}"
        )
    if values.ndim < 1:
        raise ValueError("values must have a time axis first: shape (T, ...)")
    h = check_positive("h", h)
    T = values.shape[0]
    c = gl_weights(alpha, T, dtype=values.dtype, device=values.device)  # (T,)
    # Toeplitz matrix L[k, i] = c_{k-i} for i <= k: D = h^-α · L @ y (vectorised over k)
    k = torch.arange(T, device=values.device)
    lag = k[:, None] - k[None, :]
    L = torch.where(
        lag >= 0,
        c[lag.clamp(min=0)],
        torch.zeros((), dtype=values.dtype, device=values.device),
    )
    a = _as_alpha_tensor(alpha, like=values)
    return h ** (-a) * torch.tensordot(L, values, dims=1)


# --------------------------------------------------------------------------------------
# Mittag-Leffler function: the relaxation of the fractional membrane
# --------------------------------------------------------------------------------------

# below this the quadrature was not validated (see tests/test_fsnn_ml.py)
ML_ALPHA_MIN = 0.1
ML_X_MAX = 1e6  # |z| beyond this was not validated either


def mittag_leffler(
    alpha: float, z: torch.Tensor, grid_points: int = 2001
) -> torch.Tensor:
    """The one-parameter Mittag-Leffler function E_alpha(z) = sum_k z^k /
    Gamma(alpha k + 1), for real z in [-1e6, 0] and alpha in [0.1, 1].

    z: tensor of any shape with real, non-positive entries (the relaxation v(t) =
    E_alpha(-t^alpha/tau) only needs those). Returns a tensor of z's shape and dtype.

    The power series cancels catastrophically for large |z|, so for 0 < alpha < 1 this
    uses the completely-monotone integral representation (x = -z, s =
    r^alpha, u = log s)

        E_alpha(-x) = sin(eps)/(alpha pi) * int exp(-e^(u/alpha) x^(1/alpha))
                                               / (4 sinh^2(u/2) + 4 sin^2(eps/2)) du,

    with eps = pi (1 - alpha). As alpha -> 1 the kernel is a Lorentzian of width eps
    about u = 0 (it tends to a delta: E_1 = exp), which a fixed grid in u misses.
    So the rule is the trapezoid rule in w, u = eps sinh(w): the Lorentzian becomes
    1/cosh(w) for every eps, the kernel's poles sit at w = ±i pi/2 whatever alpha is,
    and the rule converges exponentially, uniformly in alpha. Against a high-precision
    series (mpmath) the error is below 1e-11 for alpha in [0.1, 1 - 1e-6]
    (tests/test_fsnn_ml.py); alpha = 1 is exp(z). Outside the validated range (alpha <
    0.1, |z| > 1e6) it raises instead of guessing.
    """
    if not isinstance(z, torch.Tensor):
        raise TypeError(f"z must be a tensor, got {type(z).__name__}")
    _check_alpha(alpha)
    alpha = float(alpha)
    if torch.is_complex(z) or not torch.is_floating_point(z):
        raise TypeError(f"z must be a real floating tensor, got dtype {z.dtype}")
    if not bool(torch.isfinite(z).all()):
        raise ValueError("z must be finite (got NaN or inf entries)")
    if bool((z > 0).any()):
        raise ValueError(
            "mittag_leffler is implemented for z <= 0 only (relaxation), "
            "got positive entries"
        )
    if bool((z < -ML_X_MAX).any()):
        raise ValueError(
            f"mittag_leffler was validated for z >= -{ML_X_MAX:g}, got "
            f"min(z) = {float(z.min()):.3g}"
        )
    if alpha < ML_ALPHA_MIN:
        raise ValueError(
            f"mittag_leffler was validated for alpha >= {ML_ALPHA_MIN}, got {alpha}"
        )
    grid_points = as_int(grid_points, "grid_points", lo=1)
    if alpha == 1.0:
        return torch.exp(z)
    eps = math.pi * (1.0 - alpha)  # 1 - alpha is exact near 1: no sin(alpha pi)
    w_max = math.asinh(60.0 / eps)  # |u| <= 60: the kernel's tail is < e^-60
    w = torch.linspace(-w_max, w_max, grid_points, dtype=torch.float64, device=z.device)
    u = eps * torch.sinh(w)  # (G,)
    kernel = (
        eps * torch.cosh(w) / (4.0 * (torch.sinh(u / 2) ** 2 + math.sin(eps / 2) ** 2))
    )
    # (N, 1), -inf at 0
    log_t = torch.log((-z).to(torch.float64).reshape(-1, 1)) / alpha
    integrand = torch.exp(-torch.exp(u / alpha + log_t)) * kernel  # (N, G)
    value = torch.trapezoid(integrand, w, dim=1) * math.sin(eps) / (alpha * math.pi)
    return value.reshape(z.shape).to(z.dtype)


def mittag_leffler_series(
    alpha: float, z: torch.Tensor, terms: int = 100
) -> torch.Tensor:
    """E_alpha(z) by its power series, sum_{k<terms} z^k / Gamma(alpha k + 1).
    Accurate for |z| <~ 3.

    A naive reference for tests and for the chapter's derivation.
    z: any shape, float64 advised.
    """
    _check_alpha(alpha)
    terms = as_int(terms, "terms", lo=1)
    k = torch.arange(terms, dtype=z.dtype, device=z.device)
    log_gamma = torch.lgamma(float(alpha) * k + 1.0)  # (terms,)
    powers = z.unsqueeze(-1) ** k  # (..., terms)
    return (powers * torch.exp(-log_gamma)).sum(-1)


# --------------------------------------------------------------------------------------
# Exercise check
# --------------------------------------------------------------------------------------


def check_gl_weights(fn: Callable[[float, int], torch.Tensor]) -> ExerciseVerdict:
    """Grade a student's ``fn(alpha, n)`` against :func:`gl_weights` for several orders.

    Returns an :class:`~iclr26.core.ExerciseVerdict`: "not done yet" on the stub,
    "wrong" with a hint (never the expected weights) on the first mismatch, "correct"
    otherwise.
    """

    def trial(fn):
        for alpha in (1.0, 0.9, 0.5, 0.25):
            out = fn(alpha, 12)
            where = f"alpha={alpha}"
            if not isinstance(out, torch.Tensor):
                raise AssertionError(
                    f"{where}: return a tensor of weights, not {type(out).__name__}"
                )
            got = out.detach().to(torch.float64).reshape(-1)
            want = gl_weights(alpha, 12, dtype=torch.float64)
            if got.shape != want.shape:
                raise AssertionError(
                    f"{where}, n=12: expected 12 weights c_0 .. c_11, "
                    f"got shape {tuple(out.shape)}"
                )
            if not torch.isfinite(got).all():
                raise AssertionError(f"{where}: some weights are NaN or infinite")
            if abs(float(got[0]) - 1.0) > 1e-6:
                raise AssertionError(
                    f"{where}: c_0 is {float(got[0]):.6g}; the newest "
                    "state always has weight 1"
                )
            err = (got - want).abs()
            if float(err.max()) > 1e-6:  # float32 answers are fine
                j = int((err > 1e-6).nonzero()[0, 0])  # the first wrong weight
                raise AssertionError(
                    f"{where}: weight c_{j} is {float(got[j]):.6g}, which is wrong "
                    f"(c_0 .. c_{j - 1} are right). Hint: compare your c_{j} / "
                    f"c_{j - 1} "
                    "with what the definition c_j = (-1)^j binom(alpha, j) gives"
                )
        return "all GL weights match (alpha = 1, 0.9, 0.5, 0.25)"

    return grade_exercise(fn, trial)
