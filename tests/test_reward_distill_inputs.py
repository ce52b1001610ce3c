"""Chapter 12: bad input is refused with a clear error, the weight variants mean what
they say, and the experiment helpers summarise runs correctly."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr26 import reward_distill as rd


def test_motif_reward_refuses_a_bare_string():
    x = torch.tensor([[2, 0, 2, 0]])  # GAGA
    with pytest.raises(TypeError, match="list or tuple"):
        rd.motif_reward(x, "GA")  # would count G and A separately
    assert rd.motif_reward(x, ["GA"]).item() == 2.0
    assert rd.motif_reward_fn(("GA",))(x).item() == 2.0
    with pytest.raises(TypeError):
        rd.motif_reward_fn("GA")


def test_state_space_enumerates_length_8():
    space = rd.StateSpace(8)
    assert space.states.shape == (5**8, 8)
    assert torch.equal(space.index(space.states), torch.arange(5**8))
    assert torch.equal(space.states[space.clean], rd.all_sequences(8))
    with pytest.raises(ValueError):
        rd.StateSpace(9)
    with pytest.raises(ValueError):
        rd.StateSpace(True)


def test_soft_optimal_refuses_bad_laws_and_rewards():
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    r = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    with pytest.raises(TypeError, match="floating"):
        rd.soft_optimal(torch.tensor([1, 0, 0]), r, 1.0)  # integer p
    with pytest.raises(ValueError, match="sum to 1"):
        rd.soft_optimal(p * 2, r, 1.0)  # unnormalised
    with pytest.raises(ValueError, match="finite"):
        rd.soft_optimal(
            p, torch.tensor([0.0, float("nan"), 1.0], dtype=torch.float64), 1.0
        )
    with pytest.raises(ValueError):
        rd.soft_optimal(
            torch.tensor([0.5, float("nan"), 0.5], dtype=torch.float64), r, 1.0
        )
    with pytest.raises(TypeError):
        rd.soft_optimal(p.tolist(), r, 1.0)
    # the temperature: iclr26.validate's check_positive (a finite number > 0)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        rd.soft_optimal(p, r, 0.0)
    with pytest.raises(ValueError, match="alpha must be finite"):
        rd.soft_optimal(p, r, float("inf"))
    with pytest.raises(TypeError, match="alpha must be a real number"):
        rd.soft_optimal(p, r, True)


def test_best_of_n_refuses_non_integer_n_and_bad_laws():
    p = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
    r = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    with pytest.raises(TypeError, match="int"):
        rd.best_of_n_reward(p, r, 2.5)
    with pytest.raises(TypeError):
        rd.best_of_n_reward(p, r, True)
    with pytest.raises(ValueError):
        rd.best_of_n_reward(p * 3, r, 2)
    with pytest.raises(ValueError):
        rd.best_of_n_reward(
            p, torch.tensor([0.0, float("inf"), 1.0], dtype=torch.float64), 2
        )
    # repeated reward levels are pooled
    r2 = torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64)
    assert math.isclose(rd.best_of_n_reward(p, r2, 3).item(), 1 - 0.25**3)


def test_tv_and_stats_refuse_bad_input():
    p = torch.tensor([0.5, 0.5], dtype=torch.float64)
    with pytest.raises(TypeError):
        rd.tv_distance(torch.tensor([1, 0]), p)
    with pytest.raises(ValueError):
        rd.tv_distance(torch.tensor([float("nan"), 1.0], dtype=torch.float64), p)
    with pytest.raises(ValueError):
        rd.distribution_stats(p * 2, torch.zeros(2, dtype=torch.float64))
    # an unnormalised law is refused: TV(3p, p) would read 1.0
    with pytest.raises(ValueError, match="sum to 1"):
        rd.tv_distance(3 * p, p)
    with pytest.raises(ValueError, match="non-negative"):
        rd.tv_distance(torch.tensor([1.5, -0.5], dtype=torch.float64), p)
    assert rd.tv_distance(p, torch.tensor([1.0, 0.0], dtype=torch.float64)) == 0.5


def test_seeded_functions_do_not_depend_on_call_order():
    """The toy and a fine-tuning run in both orders, with an unrelated global draw
    between: the same numbers (nothing in the package reads or sets global random
    state)."""
    kw = dict(hidden=8, n_data=200, pre_steps=5, pre_batch=16)
    run = dict(
        updates=2, batch=4, lr=1e-3, frozen_updates=2, frozen_batch=4,
        frozen_lr=1e-3, eval_every=1,
    )  # fmt: skip
    toy_a = rd.make_toy(3, 0.5, seed=4, **kw)
    run_a = rd.run_method(toy_a, "VIDD", 7, **run)
    torch.randn(13)  # an unrelated global draw
    toy_b = rd.make_toy(3, 0.5, seed=4, **kw)
    torch.rand(2)
    run_b = rd.run_method(toy_b, "VIDD", 7, **run)
    assert torch.equal(toy_a.p_pre, toy_b.p_pre)
    assert torch.equal(run_a["p"], run_b["p"])


def test_state_weights_average_one_per_state_with_exact_values():
    """With exact soft values, exp((v(x_{t-1}) − v(x_t))/α) averages to 1 under p(·|x_t)
    at every state: the per-state normaliser of the paper's kernel."""
    torch.manual_seed(0)
    L, alpha = 3, 0.4
    m = rd.MaskedDenoiser(L, 16)
    space = rd.StateSpace(L)
    r = rd.motif_reward(rd.all_sequences(L)).double()
    with torch.no_grad():
        v = rd.exact_soft_value(m, space, r, alpha)
        for k in range(L):
            for row in space.layers[k][:10]:
                x_t = space.states[row][None]
                masked = torch.nonzero(x_t[0] == rd.MASK).squeeze(1)
                probs = m(x_t).softmax(-1)[0].double()  # (L, 4)
                total = 0.0
                for i in masked:
                    for a in range(4):
                        child = x_t.clone()
                        child[0, i] = a
                        w = rd.soft_weights(
                            v[space.index(child)], alpha, v_state=v[row][None]
                        )
                        total += probs[i, a].item() * w.item() / len(masked)
                assert abs(total - 1) < 1e-6  # float32 model probabilities


def test_z_weights_standardise_within_each_timestep_group():
    v = torch.tensor([0.0, 2.0, 4.0, 10.0, 10.0, 13.0], dtype=torch.float64)
    g = torch.tensor([0, 0, 0, 1, 1, 1])
    w = rd.soft_weights(v, 1.0, normalise="z", group=g)
    for grp in (0, 1):
        vg = v[g == grp]
        assert torch.allclose(
            w[g == grp], torch.exp((vg - vg.mean()) / (vg.std() + 1e-8))
        )
    # scaling v by c leaves z-weights unchanged: the effective temperature is α·std(v)
    assert torch.allclose(rd.soft_weights(3 * v, 1.0, "z", group=g), w)
    with pytest.raises(ValueError):
        rd.soft_weights(v, 1.0, "z", group=g[:3])
    with pytest.raises(ValueError):
        rd.soft_weights(torch.tensor([float("nan")]), 1.0, "none")


def test_finetuners_refuse_float_counts():
    pre = rd.MaskedDenoiser(3, 8).requires_grad_(False)
    m = rd.MaskedDenoiser(3, 8)
    with pytest.raises(TypeError):
        rd.finetune_vidd(m, pre, rd.motif_reward, updates=2.5, alpha=0.5)
    with pytest.raises(TypeError):
        rd.finetune_ddpo(m, rd.motif_reward, updates=2, batch_size=4.0)
    with pytest.raises(ValueError):
        rd.finetune_vidd(
            m, pre, rd.motif_reward, updates=1, alpha=0.5, normalise="softmax"
        )


def test_first_reach_and_stability_summaries():
    curve = np.array(
        [
            [0, 0, 0, 0.5, 0.6, 0.1, 100],
            [10, 320, 640, 1.2, 0.4, 0.3, 50],
            [20, 640, 1280, 0.9, 0.5, 0.6, 5],
        ]
    )
    assert rd.first_reach(curve, 1.0, 1) == 320 and rd.first_reach(curve, 1.0, 2) == 640
    assert rd.first_reach(curve, 5.0) == float("inf")
    runs = [
        {"reward": 0.9, "unique": 5, "curve": curve},
        {"reward": 1.1, "unique": 15, "curve": curve[:2]},
    ]
    s = rd.stability(runs)
    assert math.isclose(s["reward_sd"], np.std([0.9, 1.1], ddof=1))
    assert math.isclose(s["drawdown"], (0.3 + 0.0) / 2) and s["collapses"] == 0.5


def test_run_method_on_a_tiny_toy():
    toy = rd.make_toy(
        3, 0.5, ("GA",), seed=0, hidden=16, n_data=500, pre_steps=20, pre_batch=32
    )
    assert abs(toy.p_pre.sum().item() - 1) < 1e-9 and toy.e_star > toy.e_pre
    kw = dict(
        updates=4,
        batch=4,
        lr=1e-3,
        frozen_updates=4,
        frozen_batch=4,
        frozen_lr=1e-3,
        eval_every=2,
    )
    for method in rd.METHODS:
        out = rd.run_method(toy, method, 0, **kw)
        assert out["curve"].shape == (3, 7) and out["curve"][-1, 1] == 16
    with pytest.raises(ValueError):
        rd.run_method(toy, "PPO", 0, **kw)
