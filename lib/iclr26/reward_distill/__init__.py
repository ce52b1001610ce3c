"""Iterative distillation for reward-guided fine-tuning of a masked (discrete)
diffusion model.

Chapter 12 of the book (VIDD, ICLR 2026). Everything lives on a toy that can be solved
exactly: DNA strings of length ``L`` over ``ACGT`` (``4**L`` sequences), drawn from a
first-order Markov chain, a small MLP masked-diffusion denoiser, and a
non-differentiable motif-count reward.

The pieces, top to bottom:

* the data: :func:`markov_chain`, :func:`sample_markov`, :func:`markov_logprob`,
  :func:`all_sequences`;
* the reward: :func:`motif_reward` (integer counts, no gradient);
* the target: :func:`soft_optimal` (``p* ∝ p_pre · exp(r/α)``) and :func:`tv_distance`;
* the model: :class:`MaskedDenoiser`, :func:`masked_diffusion_loss`,
  :func:`train_denoiser`;
* sampling: :func:`rollout_step`, :func:`sample` (one position unmasked per step,
  ``T = L`` steps), :func:`step_logprob` (``log p_θ(x_{t-1} | x_t)`` up to the
  model-free position choice);
* exact answers: :class:`StateSpace` enumerates all ``5**L`` partially masked strings,
  so :func:`exact_distribution` gives a model's exact (and differentiable) law over
  clean strings and :func:`exact_soft_value` the exact soft value
  ``v(x) = α log E_pre[exp(r(x_0)/α) | x]``;
* the methods: :func:`posterior_mean_value` (the paper's cheap value
  ``r(argmax x̂_0)``), :func:`vidd_loss`, :func:`finetune_vidd` (roll-in, roll-out,
  forward-KL update, lagged teacher refreshed every ``K`` updates), :func:`ddpo_loss`,
  :func:`finetune_ddpo` (clipped policy gradient), :func:`best_of_n_reward` (exact
  expected reward of best-of-N sampling);
* a check for the chapter's coding exercise: :func:`check_soft_optimal`.

Token ids: ``0..3`` are ``A, C, G, T``; ``4`` is the mask. The code is split in three
files — ``toy.py`` (data, reward, target, summaries), ``diffusion.py`` (model, sampler,
exact enumeration), ``methods.py`` (VIDD, DDPO), ``experiment.py`` (the chapter's runs
and their summaries) — and everything is re-exported here:
``from iclr26 import reward_distill as rd``.
"""

from .diffusion import (
    MaskedDenoiser,
    StateSpace,
    TiltedDenoiser,
    exact_distribution,
    exact_soft_value,
    masked_diffusion_loss,
    rollout_step,
    sample,
    step_logprob,
    train_denoiser,
)
from .experiment import (
    METHODS,
    Toy,
    exact_law,
    first_reach,
    make_toy,
    run_method,
    stability,
)
from .methods import (
    WEIGHTINGS,
    ddpo_loss,
    finetune_ddpo,
    finetune_vidd,
    posterior_mean_value,
    soft_weights,
    vidd_loss,
)
from .toy import (
    ALPHABET,
    MASK,
    VOCAB,
    all_sequences,
    best_of_n_reward,
    check_soft_optimal,
    distribution_stats,
    markov_chain,
    markov_logprob,
    motif_reward,
    motif_reward_fn,
    sample_markov,
    soft_optimal,
    tv_distance,
)

__all__ = [
    "ALPHABET",
    "MASK",
    "VOCAB",
    "MaskedDenoiser",
    "StateSpace",
    "TiltedDenoiser",
    "all_sequences",
    "best_of_n_reward",
    "check_soft_optimal",
    "ddpo_loss",
    "distribution_stats",
    "exact_distribution",
    "exact_soft_value",
    "finetune_ddpo",
    "finetune_vidd",
    "markov_chain",
    "markov_logprob",
    "masked_diffusion_loss",
    "motif_reward",
    "posterior_mean_value",
    "rollout_step",
    "sample",
    "sample_markov",
    "soft_optimal",
    "soft_weights",
    "step_logprob",
    "train_denoiser",
    "tv_distance",
    "vidd_loss",
    "WEIGHTINGS",
    "motif_reward_fn",
    "METHODS",
    "Toy",
    "exact_law",
    "first_reach",
    "make_toy",
    "run_method",
    "stability",
]
