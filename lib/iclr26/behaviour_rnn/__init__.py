"""RNNs trained with a diffusion objective to reproduce behaviour, swap errors included.

Chapter 07. A delayed-estimation task with two coloured items: the network sees both
items (colour and location), holds them over a delay, is cued to one of them and reports
its colour as a point x ∈ R² (the colour angle θ ↦ (cos θ, sin θ)).
The *surrogate* behaviour it is trained on is a parametric mixture (a stand-in for the
paper's non-parametric model): the cued colour (target), the other colour (a **swap**),
or a uniform guess, each blurred by Gaussian noise in R².

Three ways to train the same leaky RNN on the same responses:

* ``"ddpm"``: the response period *is* a DDPM reverse chain. The RNN's activity r ∈ R^N
  is read out by a fixed orthonormal W_x (2 × N, W_x W_xᵀ = I). At reverse step s the
  behavioural component W_x r is teacher-forced to a forward-noised sample x_s, one
  Euler step of the RNN gives μ_θ = W_x r', and the loss is ‖μ_θ − μ̃(x_s, x_0)‖², the
  DDPM posterior mean. Only the null space of W_x carries memory from one step to the
  next.
* ``"mse"``: the final readout regresses the surrogate response (its minimiser is the
  conditional mean of the behaviour, swaps averaged in; not a task-optimal network).
* ``"mm"``: Gaussian moment matching: the final readout is a mean and a trainable
  Cholesky factor, fitted by Gaussian likelihood (the maximum-likelihood mean and
  covariance).

Shapes: B trials; colours, locations (B, 2); responses (B, 2); RNN state (B, N); inputs
(steps, B, n_in). Everything follows the device of its inputs."""

from __future__ import annotations

# ruff: noqa: F401 -- the package re-exports its modules' names (tests use _a1inv)
from ._base import unit, wrap
from .ddpm import (
    Schedule,
    ancestral_sample,
    ddpm_schedule,
    forward_chain,
    gmm_posterior_mean,
    posterior,
    q_sample,
)
from .exercise import check_cond_cov
from .mixture import (
    _a1inv,
    angle,
    fit_swap_mixture,
    spearman,
    swap_by_distance,
    swap_mode_contrast,
    vm_logpdf,
)
from .modes import (
    gaussian_like,
    one_peak_smear,
    pick_stimuli,
    repeat_stimuli,
    second_mode,
    smear_reach,
    two_mode_like,
)
from .rnn import (
    METHODS,
    NONLINS,
    LeakyRNN,
    ddpm_rnn_loss,
    final_state,
    moment_matching_loss,
    mse_loss,
    sample_responses,
    train,
    training_seeds,
)
from .task import (
    N_IN,
    Trials,
    conditional_cov,
    conditional_mean,
    distance_profile,
    make_trials,
    trial_inputs,
)

__all__ = [
    "N_IN",
    "METHODS",
    "NONLINS",
    "Trials",
    "Schedule",
    "LeakyRNN",
    "wrap",
    "unit",
    "distance_profile",
    "make_trials",
    "conditional_mean",
    "trial_inputs",
    "ddpm_schedule",
    "q_sample",
    "forward_chain",
    "posterior",
    "gmm_posterior_mean",
    "ancestral_sample",
    "ddpm_rnn_loss",
    "final_state",
    "mse_loss",
    "moment_matching_loss",
    "sample_responses",
    "train",
    "training_seeds",
    "vm_logpdf",
    "fit_swap_mixture",
    "angle",
    "swap_mode_contrast",
    "swap_by_distance",
    "spearman",
    "check_cond_cov",
    "conditional_cov",
    "pick_stimuli",
    "repeat_stimuli",
    "second_mode",
    "gaussian_like",
    "two_mode_like",
    "one_peak_smear",
    "smear_reach",
]
