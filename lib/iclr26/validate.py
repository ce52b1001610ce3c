"""Input checks shared by every chapter's module: one home for "an int, at least 1",
"a finite float in [0, 1]" and "a floating-point tensor of shape (..., 3)".

Each check returns the value (as the type asked for) or raises ``TypeError`` (wrong
type) or ``ValueError`` (right type, wrong value) with a message that names the
argument and what was expected, so that bad input stops at the door instead of deep
inside torch.

    n = as_int(n, "n", lo=1)
    p = as_float(p, "p", lo=0.0, hi=1.0)
    x = as_tensor(x, "x", ndim=2, floating=True)
"""

from __future__ import annotations

import math
import numbers

import torch


def as_int(x, name: str, lo: int | None = None, hi: int | None = None) -> int:
    """``x`` as an int in ``[lo, hi]`` (either bound optional). A bool or a float
    (even 1e4, which would silently change a step count) is a ``TypeError``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(x).__name__} ({x!r})")
    if lo is not None and x < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {x}")
    if hi is not None and x > hi:
        raise ValueError(f"{name} must be an int <= {hi}, got {x}")
    return int(x)


def as_float(
    x,
    name: str,
    lo: float | None = None,
    hi: float | None = None,
    open_lo: bool = False,
    open_hi: bool = False,
) -> float:
    """``x`` as a finite float in ``[lo, hi]`` (``open_lo``/``open_hi`` exclude the
    bound; either bound optional). A bool, a string, NaN or an infinity is refused."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    low_bad = lo is not None and (x <= lo if open_lo else x < lo)
    high_bad = hi is not None and (x >= hi if open_hi else x > hi)
    if low_bad or high_bad:
        left = "(" if open_lo else "["
        right = ")" if open_hi else "]"
        if lo is None:
            left, lo_s = "(", "-inf"
        else:
            lo_s = f"{lo:g}"
        if hi is None:
            right, hi_s = ")", "inf"
        else:
            hi_s = f"{hi:g}"
        raise ValueError(f"{name} must lie in {left}{lo_s}, {hi_s}{right}, got {x:g}")
    return x


def check_positive(name: str, value) -> float:
    """``value`` as a positive, finite float."""
    x = as_float(value, name)
    if not x > 0:
        raise ValueError(f"{name} must be > 0, got {x:g}")
    return x


def as_tensor(
    x,
    name: str,
    ndim: int | None = None,
    last: int | None = None,
    shape: tuple[int, ...] | None = None,
    floating: bool = False,
    finite: bool = True,
    empty: bool = False,
) -> torch.Tensor:
    """``x``, checked to be a tensor with ``ndim`` dimensions, last dimension
    ``last``, or exactly ``shape`` (each optional); ``floating``: a floating-point
    dtype; ``finite``: no NaN or infinity (floating tensors only); ``empty``: whether
    a tensor with no elements is allowed."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if floating and not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(
            f"{name} must have {ndim} dimensions, got shape {tuple(x.shape)}"
        )
    if last is not None and (x.ndim == 0 or x.shape[-1] != last):
        raise ValueError(f"{name} must have shape (..., {last}), got {tuple(x.shape)}")
    if shape is not None and tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(x.shape)}")
    if not empty and x.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    if finite and x.is_floating_point() and not torch.isfinite(x).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    return x
