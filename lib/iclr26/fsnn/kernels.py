"""Fractional calculus for the f-LIF neuron: GL and ABM weights, the GL derivative, the
Mittag-Leffler function, a log-log tail fit, input checks and the exercise check."""
from __future__ import annotations

import math
from typing import Callable

import torch

from ..core import ExerciseVerdict, grade_exercise

METHODS = ("gl", "abm")


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------

def _check_alpha(alpha) -> None:
    """alpha may be a float or a 0-d / 1-element tensor, and must lie in (0, 1]."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, torch.Tensor)):
        raise TypeError(f"alpha must be a float or a 0-d tensor in (0, 1], got {type(alpha).__name__}")
    if isinstance(alpha, torch.Tensor):
        if alpha.numel() != 1:
            raise ValueError(f"alpha must be a single number, got a tensor of shape {tuple(alpha.shape)}")
        value = float(alpha.detach().reshape(()))
    else:
        value = float(alpha)
    if not 0.0 < value <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1], got {value}")


def _check_positive(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a positive float, got {type(value).__name__}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be positive and finite, got {value}")


def _check_n(n) -> None:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")


def _as_alpha_tensor(alpha, like: torch.Tensor | None = None, dtype=None, device=None) -> torch.Tensor:
    """alpha as a 0-d tensor (keeping its graph if it is one) on the right dtype/device."""
    if like is not None:
        dtype, device = like.dtype, like.device
    if isinstance(alpha, torch.Tensor):
        return alpha.reshape(()).to(dtype=dtype or alpha.dtype, device=device or alpha.device)
    return torch.tensor(float(alpha), dtype=dtype or torch.get_default_dtype(), device=device)


# --------------------------------------------------------------------------------------------
# Weights of the two schemes
# --------------------------------------------------------------------------------------------

def gl_weights(alpha: float | torch.Tensor, n: int, dtype: torch.dtype | None = None,
               device: torch.device | str | None = None) -> torch.Tensor:
    """The Grünwald–Letnikov weights c_j = (-1)^j binom(alpha, j), j = 0 .. n-1. Shape (n,).

    Computed by the recurrence c_0 = 1, c_j = (1 - (1+alpha)/j) c_{j-1} as one ``cumprod``, so the
    result is differentiable in ``alpha`` when ``alpha`` is a tensor that requires grad.
    For large j, c_j ~ -alpha / Gamma(1-alpha) * j^(-1-alpha): a power law, not an exponential.
    """
    _check_alpha(alpha)
    _check_n(n)
    a = _as_alpha_tensor(alpha, dtype=dtype, device=device)
    j = torch.arange(1, n, dtype=a.dtype, device=a.device)                 # (n-1,)
    factors = 1.0 - (1.0 + a) / j                                           # c_j / c_{j-1}
    return torch.cat([torch.ones(1, dtype=a.dtype, device=a.device), torch.cumprod(factors, 0)])


def abm_weights(alpha: float | torch.Tensor, n: int, dtype: torch.dtype | None = None,
                device: torch.device | str | None = None) -> torch.Tensor:
    """The fractional Adams–Bashforth (predictor) weights a_m = (m+1)^alpha - m^alpha, m = 0 .. n-1.

    Shape (n,). They multiply h^alpha / Gamma(alpha+1) * f_{n-1-m}; a_0 = 1 and, for large m,
    a_m ~ alpha * m^(alpha-1), the kernel of the Riemann–Liouville integral. At alpha = 1 every
    a_m is 1 and the scheme is the explicit Euler sum v_n = v_0 + h * sum_j f_j.
    """
    _check_alpha(alpha)
    _check_n(n)
    a = _as_alpha_tensor(alpha, dtype=dtype, device=device)
    m = torch.arange(1, n, dtype=a.dtype, device=a.device)                 # (n-1,), m >= 1 avoids 0^alpha
    rest = (m + 1.0) ** a - m ** a                                          # a_m = (m+1)^α − m^α
    return torch.cat([torch.ones(1, dtype=a.dtype, device=a.device), rest])


def gl_derivative(values: torch.Tensor, alpha: float | torch.Tensor, h: float) -> torch.Tensor:
    """The Grünwald–Letnikov fractional derivative of samples ``values[k] = y(k h)``, k = 0 .. T-1.

    values: (T, ...) with the time axis first. Returns (T, ...):
    D^alpha y(t_k) ~ h^(-alpha) * sum_{j=0}^{k} c_j y(t_{k-j}). First order accurate in h; for
    y(0) = 0 this is also the Caputo derivative.
    """
    if not isinstance(values, torch.Tensor):
        raise TypeError(f"values must be a tensor of shape (T, ...), got {type(values).__name__}")
    if values.ndim < 1:
        raise ValueError("values must have a time axis first: shape (T, ...)")
    _check_positive("h", h)
    T = values.shape[0]
    c = gl_weights(alpha, T, dtype=values.dtype, device=values.device)     # (T,)
    # Toeplitz matrix L[k, i] = c_{k-i} for i <= k: D = h^-α · L @ y  (vectorised over k)
    k = torch.arange(T, device=values.device)
    lag = k[:, None] - k[None, :]
    L = torch.where(lag >= 0, c[lag.clamp(min=0)], torch.zeros((), dtype=values.dtype, device=values.device))
    a = _as_alpha_tensor(alpha, like=values)
    return h ** (-a) * torch.tensordot(L, values, dims=1)


# --------------------------------------------------------------------------------------------
# Mittag-Leffler function: the relaxation of the fractional membrane
# --------------------------------------------------------------------------------------------

def mittag_leffler(alpha: float, z: torch.Tensor, grid_points: int = 4001) -> torch.Tensor:
    """The one-parameter Mittag-Leffler function E_alpha(z) = sum_k z^k / Gamma(alpha k + 1), for z <= 0.

    z: tensor of any shape with real, non-positive entries (the relaxation v(t) = E_alpha(-t^alpha/tau)
    only needs those). Returns a tensor of z's shape and dtype.

    The power series cancels catastrophically for large |z|, so for 0 < alpha < 1 this uses the
    completely-monotone integral representation, with x = -z and s = r^alpha,

        E_alpha(-x) = sin(alpha pi)/(alpha pi) * int_0^inf exp(-s^(1/alpha) x^(1/alpha)) / (s^2 + 2 s cos(alpha pi) + 1) ds,

    evaluated by the trapezoid rule in u = log s on [-50, 50] (exponentially accurate: the
    integrand is analytic in a strip of half-width pi (1 - alpha)). alpha = 1 is exp(z).
    """
    if not isinstance(z, torch.Tensor):
        raise TypeError(f"z must be a tensor, got {type(z).__name__}")
    _check_alpha(alpha)
    alpha = float(alpha)
    if torch.is_complex(z) or not torch.is_floating_point(z):
        raise TypeError(f"z must be a real floating tensor, got dtype {z.dtype}")
    if bool((z > 0).any()):
        raise ValueError("mittag_leffler here is implemented for z <= 0 only (relaxation), got positive entries")
    if alpha == 1.0:
        return torch.exp(z)
    if alpha > 1.0 - 1e-3:
        raise ValueError(f"alpha in (0.999, 1) is too close to the pole of the quadrature; use alpha=1 or <= 0.999, got {alpha}")
    x = (-z).to(torch.float64)
    u = torch.linspace(-50.0, 50.0, grid_points, dtype=torch.float64, device=z.device)   # (G,)
    s = torch.exp(u)
    kernel = s / (s * s + 2.0 * s * math.cos(alpha * math.pi) + 1.0)                      # ds = s du
    t = x.reshape(-1, 1) ** (1.0 / alpha)                                                  # (N, 1) = x^(1/α)
    integrand = torch.exp(-(s ** (1.0 / alpha)) * t) * kernel                              # (N, G)
    value = torch.trapezoid(integrand, u, dim=1) * math.sin(alpha * math.pi) / (alpha * math.pi)
    return value.reshape(z.shape).to(z.dtype)


def mittag_leffler_series(alpha: float, z: torch.Tensor, terms: int = 100) -> torch.Tensor:
    """E_alpha(z) by its power series, sum_{k<terms} z^k / Gamma(alpha k + 1). Accurate for |z| <~ 3.

    A naive reference for tests and for the chapter's derivation. z: any shape, float64 advised.
    """
    _check_alpha(alpha)
    _check_n(terms)
    k = torch.arange(terms, dtype=z.dtype, device=z.device)
    log_gamma = torch.lgamma(float(alpha) * k + 1.0)                        # (terms,)
    powers = z.unsqueeze(-1) ** k                                           # (..., terms)
    return (powers * torch.exp(-log_gamma)).sum(-1)


# --------------------------------------------------------------------------------------------
# Tail fits
# --------------------------------------------------------------------------------------------

def loglog_slope(t: torch.Tensor, y: torch.Tensor) -> float:
    """Least-squares slope of log|y| against log t (both 1-D, positive t, nonzero y)."""
    if t.ndim != 1 or y.shape != t.shape:
        raise ValueError(f"t and y must be 1-D of the same length, got {tuple(t.shape)} and {tuple(y.shape)}")
    lx, ly = torch.log(t.double()), torch.log(y.double().abs())
    lx, ly = lx - lx.mean(), ly - ly.mean()
    return float((lx * ly).sum() / (lx * lx).sum())


# --------------------------------------------------------------------------------------------
# Exercise check
# --------------------------------------------------------------------------------------------

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
                raise AssertionError(f"{where}: return a tensor of weights, not "
                                     f"{type(out).__name__}")
            got = out.detach().to(torch.float64).reshape(-1)
            want = gl_weights(alpha, 12, dtype=torch.float64)
            if got.shape != want.shape:
                raise AssertionError(f"{where}, n=12: expected 12 weights c_0 .. c_11, "
                                     f"got shape {tuple(out.shape)}")
            if not torch.isfinite(got).all():
                raise AssertionError(f"{where}: some weights are NaN or infinite")
            if abs(float(got[0]) - 1.0) > 1e-6:
                raise AssertionError(f"{where}: c_0 is {float(got[0]):.6g}; the newest "
                                     "state always has weight 1")
            err = (got - want).abs()
            if float(err.max()) > 1e-6:                     # float32 answers are fine
                j = int(err.argmax())
                raise AssertionError(
                    f"{where}: weight c_{j} is {float(got[j]):.6g}, which is wrong. "
                    "Hint: each weight is the previous one times a factor that depends "
                    "on j (part (a) of the GL-weights theorem); check the first j of "
                    "the product, and that for 0 < alpha < 1 every c_j with j >= 1 is "
                    "negative")
        return "all GL weights match (alpha = 1, 0.9, 0.5, 0.25)"

    return grade_exercise(fn, trial)
