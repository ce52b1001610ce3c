"""f-SNN: fractional-order leaky integrate-and-fire neurons with power-law memory.

The fractional LIF (f-LIF) membrane obeys, with the Caputo derivative of order
``alpha`` in (0, 1],

    tau * D^alpha v(t) = -v(t) + I(t),        v(0) = 0,

and fires a spike (then subtracts the threshold) whenever v crosses ``threshold``.
At alpha = 1 it is the ordinary LIF neuron. Two discretisations on a grid t_n = n*h, as
in the paper's toolbox:

* Grünwald–Letnikov (``"gl"``): h^-alpha * sum_j c_j v_{n-j} = f_{n-1}, with c_0 = 1,
  c_j = (1 - (1+alpha)/j) c_{j-1}, solved for v_n. The sum over the whole past is the
  power-law memory; ``memory=M`` keeps only the last M terms (the "short-memory
  principle").
* fractional Adams–Bashforth predictor (``"abm"``, the predictor of the
  Adams–Bashforth–Moulton scheme of Diethelm, Ford & Freed): v_n = v_0 +
  h^alpha/Gamma(alpha+1) * sum_j a_{n-1-j} f_j with a_m = (m+1)^alpha - m^alpha.

Tensors are laid out ``[time, batch, ...]`` (T first). The loop over time is a Python
loop; the history sum is one ``tensordot`` over all neurons at once.
Full memory costs O(T^2) per neuron, ``memory=M`` costs O(T M).

Convention: ``current[n]`` is the input over the step that ends at t_{n+1}; output
``[n]`` is the state at t_{n+1}, after the reset. This is snntorch's
``Leaky(reset_delay=False)`` convention, so at alpha = 1, ``beta = 1 - h/tau`` and an
input of ``(h/tau) * current`` the two agree.

Everything here is plain PyTorch; the device follows the inputs.
Layout: ``kernels`` (weights, GL derivative, Mittag-Leffler, checks), ``neuron`` (spike,
``fractional_lif``, ``FractionalLIF``, ``lif_reference``), ``data`` (moving-bar events,
noise, ``SpikingMLP``).
"""

from .data import (
    CORRUPTIONS,
    DIRECTIONS,
    SpikingMLP,
    corrupt_events,
    make_delayed_cue_events,
    make_moving_bar_events,
)
from .kernels import (
    METHODS,
    ML_ALPHA_MIN,
    ML_X_MAX,
    abm_weights,
    check_gl_weights,
    gl_derivative,
    gl_weights,
    mittag_leffler,
    mittag_leffler_series,
)
from .neuron import FractionalLIF, SpikeFn, fractional_lif, lif_reference, spike
from .train import accuracy, predict, train_classifier

__all__ = [
    "METHODS",
    "DIRECTIONS",
    "gl_weights",
    "abm_weights",
    "gl_derivative",
    "mittag_leffler",
    "mittag_leffler_series",
    "check_gl_weights",
    "SpikeFn",
    "spike",
    "fractional_lif",
    "lif_reference",
    "FractionalLIF",
    "make_moving_bar_events",
    "corrupt_events",
    "SpikingMLP",
    "CORRUPTIONS",
    "make_delayed_cue_events",
    "ML_ALPHA_MIN",
    "ML_X_MAX",
    "train_classifier",
    "accuracy",
    "predict",
]
