"""The fine-tuning setting (frozen first and last layer), the shifted task, the
learning-rate schedulers on the block optimisers, and the CPU-time measurements."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from iclr26.absignsgd import (
    ABSignSGD,
    BAdamSchedule,
    BlockAdam,
    DepthBiasedSchedule,
    backward_linear_ops,
    inner_blocks,
    interleaved_cpu_times,
    time_to_target,
    transposed_images,
)
from iclr26.harness import Split, mlp


def test_inner_blocks_freeze_the_ends_and_keep_the_middle():
    model = mlp([8, 6, 6, 6, 3], seed=0)
    blocks = inner_blocks(model)
    linears = [m for m in model if isinstance(m, nn.Linear)]
    assert len(blocks) == 2
    assert [id(p) for p in blocks[0]] == [id(p) for p in linears[1].parameters()]
    for layer in (linears[0], linears[-1]):
        assert not any(p.requires_grad for p in layer.parameters())
    with pytest.raises(ValueError, match="at least 3"):
        inner_blocks(mlp([4, 3, 2], seed=0))


def test_frozen_ends_never_move_and_backward_skips_below_the_active_block():
    torch.manual_seed(0)
    model = mlp([8, 6, 6, 6, 3], seed=0)
    first = [p.detach().clone() for p in model[0].parameters()]
    last = [p.detach().clone() for p in model[-1].parameters()]
    opt = ABSignSGD(inner_blocks(model), lr=0.1, schedule=DepthBiasedSchedule(2))
    x, y = torch.randn(16, 8), torch.randint(3, (16,))
    for _ in range(10):
        loss = nn.functional.cross_entropy(model(x), y)
        # the head is always traversed; the active block is 1 (top) or 2 deep
        ops = backward_linear_ops(loss)
        assert ops == 1 + (2 - opt.active_block)
        loss.backward()
        assert model[0].weight.grad is None and model[-1].weight.grad is None
        opt.step()
        opt.zero_grad()
    for a, b in zip(first, model[0].parameters()):
        assert torch.equal(a, b)
    for a, b in zip(last, model[-1].parameters()):
        assert torch.equal(a, b)


@pytest.mark.parametrize("kind", ["sign", "badam"])
def test_cosine_scheduler_sets_the_step_size_of_every_block(kind):
    model = mlp([4, 5, 5, 2], seed=1)
    blocks = inner_blocks(model)
    if kind == "sign":
        opt = ABSignSGD(blocks, lr=0.1, schedule=DepthBiasedSchedule(1))
    else:
        opt = BlockAdam(
            blocks, lr=0.1, schedule=BAdamSchedule(1, 5), reset_on_switch=True
        )
    decay = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    x, y = torch.randn(8, 4), torch.randint(2, (8,))
    seen = []
    for _ in range(4):
        before = model[2].weight.detach().clone()
        nn.functional.cross_entropy(model(x), y).backward()
        lr = opt.param_groups[0]["lr"]
        opt.step()
        opt.zero_grad()
        decay.step()
        seen.append(lr)
        if kind == "sign":  # the sign step moves each coordinate by the current lr
            moved = (model[2].weight - before).abs()
            assert torch.allclose(moved[moved > 0], torch.tensor(lr))
    expected = [0.05 * (1 + math.cos(math.pi * k / 4)) for k in range(4)]
    assert seen == pytest.approx(expected)


def test_transposed_images_transposes_each_image():
    x = torch.arange(2 * 64, dtype=torch.float32).reshape(2, 64)
    t = transposed_images(Split(x, torch.tensor([0, 1])))
    assert torch.equal(t.x[1].reshape(8, 8), x[1].reshape(8, 8).T)
    assert torch.equal(transposed_images(t).x, x)
    with pytest.raises(ValueError, match="8x8"):
        transposed_images(Split(torch.zeros(3, 10), torch.zeros(3, dtype=torch.long)))
    with pytest.raises(TypeError):
        transposed_images(x)


def test_time_to_target_sums_costs_to_the_first_hit():
    curve = torch.tensor([3.0, 2.0, 1.0, 0.5, 0.7])
    cost = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    assert time_to_target(curve, cost, 1.0) == 6.0
    assert time_to_target(curve, cost, 3.0) == 1.0
    assert time_to_target(curve, cost, 0.1) == math.inf
    assert time_to_target(torch.tensor([float("nan"), 0.0]), cost[:2], 0.5) == 3.0
    with pytest.raises(ValueError, match="one length"):
        time_to_target(curve, cost[:3], 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        time_to_target(curve, -cost, 1.0)
    with pytest.raises(ValueError, match="finite"):
        time_to_target(curve, cost, float("nan"))


def test_interleaved_cpu_times_orders_calls_and_measures_cpu():
    order = []
    heavy = torch.randn(200, 200)
    out = interleaved_cpu_times(
        {
            "a": lambda: order.append("a"),
            "b": lambda: (order.append("b"), [heavy @ heavy for _ in range(20)]),
        },
        repeats=3,
        warmup=1,
    )
    assert order == ["a", "b"] * 4  # interleaved, warm-up round included
    assert set(out) == {"a", "b"} and out["b"] > out["a"] >= 0
    with pytest.raises(ValueError):
        interleaved_cpu_times({})
    with pytest.raises(TypeError):
        interleaved_cpu_times({"a": 3})
    with pytest.raises(ValueError):
        interleaved_cpu_times({"a": lambda: None}, repeats=0)
