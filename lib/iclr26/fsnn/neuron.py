"""The fractional LIF neuron: spike with surrogate gradient, the GL/ABM time loop, an
Euler LIF reference and the ``FractionalLIF`` layer."""

from __future__ import annotations

import math

import torch
from torch import nn

from ..validate import as_int, check_positive
from .kernels import (
    METHODS,
    _as_alpha_tensor,
    _check_alpha,
    abm_weights,
    gl_weights,
)

# --------------------------------------------------------------------------------------
# The spike and its surrogate gradient
# --------------------------------------------------------------------------------------


class SpikeFn(torch.autograd.Function):
    """Heaviside step forward, arctan surrogate backward.

    forward: S = 1[x >= 0]; backward: dS/dx ~ (scale/2) / (1 + (pi/2 * scale * x)^2),
    the derivative of 1/2 + arctan(pi/2 * scale * x)/pi (the ATan surrogate of snntorch
    and SpikingJelly).
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.scale = scale
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        (x,) = ctx.saved_tensors
        k = ctx.scale
        surrogate = (k / 2.0) / (1.0 + (math.pi / 2.0 * k * x) ** 2)
        return grad_out * surrogate, None


def spike(x: torch.Tensor, scale: float = 2.0) -> torch.Tensor:
    """Heaviside spike of ``x`` (membrane minus threshold) with an arctan surrogate
    gradient."""
    check_positive("scale", scale)
    return SpikeFn.apply(x, float(scale))


# --------------------------------------------------------------------------------------
# The neuron
# --------------------------------------------------------------------------------------


def fractional_lif(
    current: torch.Tensor,
    alpha: float | torch.Tensor = 0.8,
    tau: float = 2.0,
    h: float = 1.0,
    threshold: float = 1.0,
    method: str = "gl",
    memory: int | None = None,
    surrogate_scale: float = 2.0,
    spiking: bool = True,
    detach_reset: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run fractional LIF neurons over time: tau D^alpha v = -v + I, spike at
    ``threshold``, reset by subtraction.

    current: (T, ...) input current, time first (e.g. (T, batch, neurons)).
    alpha: order in (0, 1]; a float or a 0-d tensor (differentiable, for a
        learnable order).
    method: ``"gl"`` (Grünwald–Letnikov on the state; the reset is a jump of the stored
        state) or ``"abm"`` (fractional Adams–Bashforth predictor; the reset is charge
        removed through the right-hand side, as in the toolbox's ODE neurons).
        Both are Euler LIF at alpha = 1.
    memory: keep only the last ``memory`` terms of the GL history sum (None: all).
        ``"gl"`` only.
    spiking: False gives the sub-threshold membrane (no spikes, no reset).
    Returns (spikes, membrane), each (T, ...): spikes in {0, 1}; membrane after reset.
    """
    if not isinstance(current, torch.Tensor):
        raise TypeError(
            f"current must be a tensor of shape (T, ...), got {type(current).__name__}"
        )
    if current.ndim < 1 or current.shape[0] < 1:
        raise ValueError(
            "current must have a non-empty time axis first, got shape "
            f"{tuple(current.shape)}"
        )
    if not torch.is_floating_point(current):
        raise TypeError(f"current must be a floating tensor, got {current.dtype}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    _check_alpha(alpha)
    for name, value in (("tau", tau), ("h", h), ("threshold", threshold)):
        check_positive(name, value)
    if memory is not None:
        memory = as_int(memory, "memory (None: the full history)", lo=1)
        if method != "gl":
            raise ValueError(
                "memory truncation is implemented for method='gl' only (truncating the "
                "ABM "
                "integral form would drop accumulated charge and break the alpha=1 "
                "limit)"
            )

    T = current.shape[0]
    a = _as_alpha_tensor(alpha, like=current)
    h_alpha = h**a  # h^α
    zero = torch.zeros_like(current[0])
    spikes, membrane = [], []

    # With autograd off (inference, sweeps) the past lives in one preallocated buffer;
    # with autograd on it is a list that is stacked each step (in-place writes would
    # break the backward pass).
    needs_grad = torch.is_grad_enabled() and (current.requires_grad or a.requires_grad)
    past_buf = (
        None
        if needs_grad
        else torch.empty(
            (T,) + tuple(current.shape[1:]), dtype=current.dtype, device=current.device
        )
    )
    past_list: list[torch.Tensor] = []

    def window(
        start: int, stop: int, extra: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Rows start..stop-1 of the stored past (plus ``extra`` appended), as one
        (m, ...) tensor."""
        if past_buf is not None:
            if extra is not None:
                past_buf[stop] = extra
                return past_buf[start : stop + 1]
            return past_buf[start:stop]
        rows = past_list[start:stop] + ([extra] if extra is not None else [])
        return torch.stack(rows)

    def store(n: int, value: torch.Tensor) -> None:
        if past_buf is not None:
            past_buf[n] = value
        else:
            past_list.append(value)

    if method == "gl":
        c = gl_weights(a, T + 1)  # (T+1,) c_0 .. c_T
        c_rev = c[1:].flip(0)  # (T,) c_T .. c_1
        v_prev = zero  # the past holds v_1 .. v_n, post-reset
        for n in range(T):  # computes v_{n+1}
            drive = (h_alpha / tau) * (-v_prev + current[n])  # h^α f(v_n, I_{n+1})
            m = n if memory is None else min(memory, n)
            if m > 0:
                # Σ_{j=1}^{m} c_j v_{n+1-j}
                memory_sum = torch.tensordot(c_rev[T - m :], window(n - m, n), dims=1)
                v = drive - memory_sum  # v_{n+1} = h^α f − Σ c_j v_{n+1−j}
            else:
                v = drive
            if spiking:
                s = spike(v - threshold, surrogate_scale)  # S = H(v − θ)
                # reset by subtraction
                v = v - (s.detach() if detach_reset else s) * threshold
            else:
                s = zero
            store(n, v)
            spikes.append(s)
            membrane.append(v)
            v_prev = v
    else:  # "abm"
        weights = abm_weights(a, T)  # (T,) a_0 .. a_{T-1}
        w_rev = weights.flip(0)  # a_{T-1} .. a_0
        scale = h_alpha / torch.exp(torch.lgamma(a + 1.0))  # h^α / Γ(α+1)
        v_prev = zero  # the past holds g_j = scale·f_j − θ s_{j+1}
        for n in range(T):
            g = scale * (-v_prev + current[n]) / tau  # h^α/Γ(α+1) · f_n
            # v_{n+1} = Σ_j a_{n−j} g_j
            v = torch.tensordot(w_rev[T - n - 1 :], window(0, n, g), dims=1)
            if spiking:
                s = spike(v - threshold, surrogate_scale)
                removed = (s.detach() if detach_reset else s) * threshold
                v = v - removed  # a_0 = 1: the reset lands in full now
                g = g - removed  # …and is remembered through a_m later
            else:
                s = zero
            store(n, g)
            spikes.append(s)
            membrane.append(v)
            v_prev = v
    return torch.stack(spikes), torch.stack(membrane)


def lif_reference(
    current: torch.Tensor,
    tau: float = 2.0,
    h: float = 1.0,
    threshold: float = 1.0,
    spiking: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The integer-order LIF neuron by explicit Euler, written independently of
    ``fractional_lif``.

    v_{n+1} = v_n + (h/tau)(-v_n + I_{n+1}); spike when v >= threshold;
    subtract threshold.
    current: (T, ...). Returns (spikes, membrane), each (T, ...).
    """
    if not isinstance(current, torch.Tensor) or current.ndim < 1:
        raise TypeError("current must be a tensor of shape (T, ...)")
    v = torch.zeros_like(current[0])
    spikes, membrane = [], []
    for n in range(current.shape[0]):
        v = v + (h / tau) * (-v + current[n])
        s = (v >= threshold).to(v.dtype) if spiking else torch.zeros_like(v)
        v = v - s * threshold
        spikes.append(s)
        membrane.append(v)
    return torch.stack(spikes), torch.stack(membrane)


class FractionalLIF(nn.Module):
    """A layer of fractional LIF neurons (see :func:`fractional_lif`), optionally with a
    learnable order.

    forward(current: (T, batch, ...)) -> (spikes, membrane), each (T, batch, ...).
    With ``learn_alpha=True`` the order is a parameter, kept in [alpha_min, 1]
    by clamping.
    """

    def __init__(
        self,
        alpha: float = 0.8,
        tau: float = 2.0,
        h: float = 1.0,
        threshold: float = 1.0,
        method: str = "gl",
        memory: int | None = None,
        learn_alpha: bool = False,
        surrogate_scale: float = 2.0,
        alpha_min: float = 0.05,
    ):
        super().__init__()
        _check_alpha(alpha)
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        for name, value in (
            ("tau", tau),
            ("h", h),
            ("threshold", threshold),
            ("surrogate_scale", surrogate_scale),
        ):
            check_positive(name, value)
        if not 0.0 < alpha_min <= alpha:
            raise ValueError(
                f"alpha_min must lie in (0, alpha={alpha}], got {alpha_min}"
            )
        self.tau, self.h, self.threshold = float(tau), float(h), float(threshold)
        self.method, self.memory, self.surrogate_scale = (
            method,
            memory,
            float(surrogate_scale),
        )
        self.alpha_min = float(alpha_min)
        alpha_t = torch.tensor(float(alpha))
        if learn_alpha:
            self.alpha = nn.Parameter(alpha_t)
        else:
            self.register_buffer("alpha", alpha_t)

    def order(self) -> torch.Tensor:
        """The order in use, alpha clamped to [alpha_min, 1] (0-d tensor)."""
        return self.alpha.clamp(self.alpha_min, 1.0)

    def forward(self, current: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return fractional_lif(
            current,
            self.order(),
            tau=self.tau,
            h=self.h,
            threshold=self.threshold,
            method=self.method,
            memory=self.memory,
            surrogate_scale=self.surrogate_scale,
        )

    def extra_repr(self) -> str:
        return (
            f"alpha={float(self.alpha):.3g}, tau={self.tau}, h={self.h}, "
            f"threshold={self.threshold}, "
            f"method={self.method!r}, memory={self.memory}"
        )
