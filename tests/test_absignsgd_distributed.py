"""Majority vote over real processes (torch.distributed, gloo) equals the simulation
bit for bit.

One launch of 4 processes runs the vote on sub-groups of 2, 3 and 4 workers and the fp32
averaging baseline on 2; each result is compared with the single-process simulation.
(Most of this test's time is 4 fresh Python processes importing torch.)"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from iclr26.absignsgd import dist_mv_step, run_distributed, train_mv_simulated
from iclr26.absignsgd.distributed import vote_and_average_runs

SIZES = [10, 12, 9, 4]
STEPS, BATCH, LR = 30, 8, 5e-3


def data(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, SIZES[0], generator=g), torch.randint(
        SIZES[-1], (n,), generator=g
    )


@pytest.mark.skipif(
    not dist.is_available() or not dist.is_gloo_available(),
    reason="torch.distributed with gloo is not available",
)
def test_vote_over_processes_equals_simulation_bitwise():
    x, y = data()
    res = run_distributed(
        vote_and_average_runs, 4, (SIZES, x, y, STEPS, BATCH, LR), timeout_s=240
    )
    for m in (2, 3, 4):
        sim = train_mv_simulated(SIZES, x, y, m, STEPS, BATCH, LR)
        for rank in range(4):
            if rank >= m:
                assert m not in res[rank]["vote"]  # ranks outside the group ran nothing
                continue
            got = res[rank]["vote"][m]
            assert all(
                torch.equal(a, b) for a, b in zip(got["params"], sim["params"])
            ), (m, rank)
            assert got["bytes"] == sim["bytes"] > 0
    # fp32 averaging: all_reduce may sum in another order than the simulation, so a sign
    # can flip where the average is within rounding of zero; the vote
    # (a sum of +-1) is exact.
    sim = train_mv_simulated(SIZES, x, y, 2, STEPS, BATCH, LR, average=True)
    n = sum(p.numel() for p in sim["params"])
    for rank in range(2):
        got = res[rank]["average"][2]
        differ = sum(int((a != b).sum()) for a, b in zip(got["params"], sim["params"]))
        assert differ <= 0.01 * n
        # fp32 vs bits
        assert got["bytes"] == sim["bytes"] > 8 * res[0]["vote"][2]["bytes"]


def test_errors_without_a_process_group():
    from iclr26.absignsgd import ABSignSGD, linear_blocks
    from iclr26.harness import mlp

    model = mlp(SIZES, seed=0)
    opt = ABSignSGD(linear_blocks(model), lr=1e-3)
    x, y = data(8)
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist_mv_step(opt, model, x, y)
    with pytest.raises(ValueError):
        run_distributed(vote_and_average_runs, 0)
    with pytest.raises(ValueError):
        run_distributed(vote_and_average_runs, 2, backend="mpi")
    with pytest.raises(ValueError):
        train_mv_simulated(SIZES, x, y[:3], 2, 5, 4, 1e-3)
