"""ABSignSGD: arbitrary-order block sign descent, its depth-biased schedule and
majority vote.

Zhou & Pu, "Arbitrary-Order Block SignSGD for Memory-Efficient LLM Fine-Tuning"
(ICLR 2026). At step k one block ``i_k`` of the parameters is chosen and only that
block moves:

    x_{i_k} <- x_{i_k} - lr * wd * x_{i_k}      (decoupled weight decay, applied first)
    x_{i_k} <- x_{i_k} - lr * sign(g_{i_k}(x))  (the sign step)
    x_j     <- x_j            for every j != i_k

The optimiser keeps no state between steps. Parameters outside the active block get
``requires_grad=False``, so autograd neither stores their inputs nor runs the backward
pass below the active block: choosing deep blocks (near the loss) often makes the
average backward pass short.

Modules
-------
- ``schedules``: :func:`depth_biased_tau`, :class:`DepthBiasedSchedule`,
  :class:`UniformSchedule`, :func:`visit_frequencies`, :func:`expected_backward_depth`,
  and the exercise checks :func:`check_depth_biased_schedule`,
  :func:`check_expected_depth`
- ``optim``: :class:`ABSignSGD` (the method), :class:`BlockAdam` (block-wise Adam; with
  :class:`BAdamSchedule` and ``reset_on_switch=True`` it is BAdam), :class:`BlockSGD`
  (the sign-free control)
- ``vote``: :func:`majority_vote`, :func:`worker_block_gradients`, :func:`pack_signs`,
  :func:`unpack_signs`, :func:`wire_signs`, :func:`mv_step`, :func:`average_step` (fp32
  averaging, the vote's fair baseline), :func:`sign_error_probability`
- ``distributed``: the vote over real processes with ``torch.distributed``
  (gloo or nccl): :func:`dist_mv_step`, :func:`dist_average_step`,
  :func:`train_mv_rank`, :func:`train_mv_simulated`, :func:`run_distributed`
- ``data``: :func:`train_val_split` (a validation split carved from the training split),
  :func:`transposed_images` (the fine-tuning task: the digits transposed)
- ``measure``: :class:`ReplicaLinear` and :func:`replica_mlp` (several seeds as one
  batched model), :func:`linear_blocks`, :func:`backward_linear_ops`,
  :func:`saved_activation_bytes`, :func:`training_state_bytes`, :func:`inner_blocks`
  (the official code's fine-tuning blocks: first and last layer frozen)
- ``timing``: :func:`interleaved_cpu_times` (per-step CPU time, interleaved across
  methods), :func:`time_to_target`
"""

from .data import train_val_split, transposed_images
from .distributed import (
    dist_average_step,
    dist_mv_step,
    run_distributed,
    train_mv_rank,
    train_mv_simulated,
    train_mv_subgroups,
    worker_batches,
)
from .measure import (
    ReplicaLinear,
    backward_linear_ops,
    inner_blocks,
    linear_blocks,
    replica_evaluate,
    replica_loss,
    replica_mlp,
    saved_activation_bytes,
    training_state_bytes,
)
from .optim import ABSignSGD, BlockAdam, BlockSGD
from .schedules import (
    BAdamSchedule,
    DepthBiasedSchedule,
    UniformSchedule,
    check_depth_biased_schedule,
    check_expected_depth,
    depth_biased_tau,
    expected_backward_depth,
    visit_frequencies,
)
from .timing import interleaved_cpu_times, time_to_target
from .vote import (
    average_step,
    majority_vote,
    mv_step,
    pack_signs,
    sign_error_probability,
    unpack_signs,
    wire_signs,
    worker_block_gradients,
)

__all__ = [
    "depth_biased_tau",
    "DepthBiasedSchedule",
    "UniformSchedule",
    "visit_frequencies",
    "expected_backward_depth",
    "ABSignSGD",
    "BlockAdam",
    "majority_vote",
    "worker_block_gradients",
    "pack_signs",
    "mv_step",
    "ReplicaLinear",
    "replica_mlp",
    "replica_loss",
    "replica_evaluate",
    "linear_blocks",
    "backward_linear_ops",
    "saved_activation_bytes",
    "training_state_bytes",
    "sign_error_probability",
    "check_depth_biased_schedule",
    "check_expected_depth",
    "BAdamSchedule",
    "BlockSGD",
    "average_step",
    "unpack_signs",
    "wire_signs",
    "dist_mv_step",
    "dist_average_step",
    "train_mv_rank",
    "train_mv_simulated",
    "run_distributed",
    "worker_batches",
    "train_val_split",
    "train_mv_subgroups",
    "inner_blocks",
    "transposed_images",
    "interleaved_cpu_times",
    "time_to_target",
]
