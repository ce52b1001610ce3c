"""ReVisual-R1 in miniature: GRPO, its gradient stagnation, prioritised-advantage
distillation (PAD), a text-only cold start and staged RL, on a tiny two-modality policy.

The paper trains a 7B multimodal LLM; this module is an *analogue*: a small torch policy
answers "a + b = ?" for digits a, b given either as text tokens or as 8x8 images from
scikit-learn's bundled ``load_digits``. The RL mathematics (group-normalised
advantages, the zero-advantage effect, PAD's filter and sampler) is the paper's; the
model and the task are ours.

Pieces, top to bottom:

* :func:`grpo_advantages` and :func:`grpo_loss` (from :mod:`iclr26.grpo`, shared with
  chapter 17), :func:`zero_advantage_fraction`,
  :func:`zero_advantage_theory`
* :func:`pad_select` (``mode="paper"``: softmax(|A|/tau), k' = min(ceil(rho N), |E|), no
  replacement; ``mode="code"``: P ~ |A|^alpha on the strict band, int(rho N) draws of
  the batch with replacement, the full batch when the band is empty),
  :class:`TauSchedule`
* every RL stage of the pipeline uses :func:`grpo_loss` (clipped surrogate, optional k3
  KL to a reference) with :data:`KL_COEF`
* :class:`VisualArithmetic` (the task), :class:`TinyMLLMPolicy` (the policy)
* :func:`align_vision`, :func:`cold_start_sft`, :func:`rl_stage`, :func:`accuracy`,
  :func:`answer_spread`,
  :func:`run_pipeline`, :func:`tune_lr`, :func:`zero_advantage_probe`, :func:`stream`
  (each policy seed's own random streams) (``pipeline.py``)
* :func:`check_advantages` (the chapter's coding exercise)
"""

from ..grpo import grpo_advantages, grpo_loss
from .grpo import (
    TauSchedule,
    check_advantages,
    pad_select,
    zero_advantage_fraction,
    zero_advantage_theory,
)
from .pipeline import (
    ARMS,
    EVAL_STREAM,
    KL_COEF,
    PAD_CODE,
    PAD_PAPER,
    PROBE_STREAM,
    RLHistory,
    TinyMLLMPolicy,
    VisualArithmetic,
    accuracy,
    align_vision,
    answer_spread,
    cold_start_sft,
    rl_stage,
    run_pipeline,
    stream,
    stream_seed,
    tune_lr,
    zero_advantage_probe,
)

__all__ = [
    "ARMS",
    "EVAL_STREAM",
    "KL_COEF",
    "PAD_CODE",
    "PAD_PAPER",
    "PROBE_STREAM",
    "RLHistory",
    "TauSchedule",
    "TinyMLLMPolicy",
    "VisualArithmetic",
    "accuracy",
    "align_vision",
    "answer_spread",
    "check_advantages",
    "cold_start_sft",
    "grpo_advantages",
    "grpo_loss",
    "pad_select",
    "rl_stage",
    "run_pipeline",
    "stream",
    "stream_seed",
    "tune_lr",
    "zero_advantage_fraction",
    "zero_advantage_probe",
    "zero_advantage_theory",
]
