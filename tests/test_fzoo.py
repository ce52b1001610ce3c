"""Unit tests for iclr26.fzoo (FZOO and MeZO zeroth-order optimisers)."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from nbexercise import exercise_parts
from torch import nn

from iclr26.fzoo import (
    FZOO,
    FlatMLP,
    MeZO,
    batched_fzoo_step,
    check_fzoo_update,
    draw_seeds,
    flat_mlp_loss,
    fzoo_deltas,
    fzoo_multi_step,
    fzoo_update_from_losses,
    mezo_deltas,
    mezo_multi_step,
    passes_to_reach,
    perturb_,
    perturbations,
    rademacher,
    train_counted,
    train_many,
)
from iclr26.harness import mlp


def tiny_problem(dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    model = mlp([5, 4, 3], seed=seed).to(dtype)
    x = torch.randn(16, 5, generator=gen, dtype=dtype)
    y = torch.randint(0, 3, (16,), generator=gen)
    return model, x, y


def closure_for(model, x, y, counter=None, a=1.0, b=0.0):
    def closure():
        if counter is not None:
            counter[0] += 1
        return a * nn.functional.cross_entropy(model(x), y) + b

    return closure


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def test_rademacher_values_and_balance():
    u = rademacher((20_000,), torch.Generator().manual_seed(0))
    assert set(u.unique().tolist()) == {-1.0, 1.0}
    assert abs(u.mean().item()) < 0.03


def test_perturbations_regenerate_from_seed():
    ps = [torch.zeros(3, 4), torch.zeros(5)]
    a = list(perturbations(ps, 7))
    b = list(perturbations(ps, 7))
    c = list(perturbations(ps, 8))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))
    assert [t.shape for t in a] == [(3, 4), (5,)]
    with pytest.raises(ValueError):
        list(perturbations(ps, 1, dist="uniform"))


def test_perturb_and_restore_is_exact_up_to_rounding():
    model, _, _ = tiny_problem(torch.float32)
    before = flat(model).clone()
    ps = list(model.parameters())
    perturb_(ps, 3, 1e-3)
    assert not torch.equal(flat(model), before)
    perturb_(ps, 3, -1e-3)
    # one float32 rounding per entry
    assert torch.allclose(flat(model), before, rtol=0, atol=1e-7)


@pytest.mark.parametrize("n", [2, 5, 8])
def test_fzoo_uses_n_plus_one_forward_passes_and_mezo_two(n):
    model, x, y = tiny_problem()
    count = [0]
    opt = FZOO(model.parameters(), lr=0.01, n_perturb=n)
    opt.step(closure_for(model, x, y, count))
    assert count[0] == n + 1 and opt.forward_passes == n + 1
    count = [0]
    mezo = MeZO(model.parameters(), lr=0.01)
    mezo.step(closure_for(model, x, y, count))
    mezo.step(closure_for(model, x, y, count))
    assert count[0] == 4 and mezo.forward_passes == 4


def test_fzoo_step_matches_the_update_rule():
    model, x, y = tiny_problem()
    theta = flat(model).clone()
    opt = FZOO(model.parameters(), lr=0.05, eps=1e-3, n_perturb=6, seed=11)
    opt.step(closure_for(model, x, y))
    seeds, last = opt.last["seeds"], opt.last
    ps = list(model.parameters())
    u = torch.stack(
        [torch.cat([z.reshape(-1) for z in perturbations(ps, s)]) for s in seeds]
    )  # (N, d)
    want = fzoo_update_from_losses(
        torch.tensor(last["l0"], dtype=torch.float64), last["losses"], u, 0.05
    )
    assert torch.allclose(flat(model) - theta, want, atol=1e-12)
    sigma = last["losses"].std(correction=0)
    assert math.isclose(last["sigma"], sigma.item())


def test_fzoo_is_invariant_to_scale_and_shift_mezo_is_not():
    deltas, mezo_norms = [], []
    for a, b in [(1.0, 0.0), (7.0, 0.0), (0.3, 2.0), (50.0, -3.0)]:
        model, x, y = tiny_problem()
        theta = flat(model).clone()
        FZOO(model.parameters(), lr=0.02, n_perturb=8, seed=5).step(
            closure_for(model, x, y, a=a, b=b)
        )
        deltas.append(flat(model) - theta)
        model, x, y = tiny_problem()
        MeZO(model.parameters(), lr=0.02, seed=5).step(
            closure_for(model, x, y, a=a, b=b)
        )
        mezo_norms.append((flat(model) - theta).norm().item())
    for d in deltas[1:]:
        assert torch.allclose(d, deltas[0], rtol=1e-7, atol=1e-12)
    assert math.isclose(mezo_norms[1] / mezo_norms[0], 7.0, rel_tol=1e-6)


def test_replaying_with_the_same_seed_is_deterministic():
    out = []
    for _ in range(2):
        model, x, y = tiny_problem()
        opt = FZOO(model.parameters(), lr=0.02, seed=9)
        for _ in range(3):
            opt.step(closure_for(model, x, y))
        out.append(flat(model))
    assert torch.equal(out[0], out[1])


def test_constant_loss_skips_the_step_without_nan():
    model, _, _ = tiny_problem()
    theta = flat(model).clone()
    opt = FZOO(model.parameters(), lr=0.1)
    opt.step(lambda: torch.tensor(3.0))
    assert torch.equal(flat(model), theta) and opt.last["sigma"] == 0.0
    assert torch.isfinite(opt.last["coeffs"]).all()


def test_expected_step_on_linear_loss_is_normalised_gradient():
    d = 50
    c = torch.randn(d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    f = lambda th: th @ c  # (..., d) → (...)
    deltas = fzoo_deltas(
        f,
        torch.zeros(d, dtype=torch.float64),
        n_perturb=16,
        eps=1e-3,
        lr=0.1,
        draws=4000,
        generator=torch.Generator().manual_seed(1),
    )
    mean = deltas.mean(0)
    cos = torch.dot(mean, -c) / (mean.norm() * c.norm())
    assert cos > 0.99
    assert 0.9 < mean.norm().item() / 0.1 < 1.15


def test_fzoo_deltas_agrees_with_the_class():
    d = 12
    quad = torch.linspace(0.5, 2.0, d, dtype=torch.float64)
    f = lambda th: 0.5 * (quad * th**2).sum(-1)
    theta0 = torch.linspace(-1, 1, d, dtype=torch.float64)
    p = nn.Parameter(theta0.clone())
    opt = FZOO([p], lr=0.1, eps=1e-2, n_perturb=4, seed=2)
    opt.step(lambda: f(p))
    # (N, d)
    u = torch.stack([next(iter(perturbations([p], s))) for s in opt.last["seeds"]])
    want = fzoo_update_from_losses(f(theta0), f(theta0 + 1e-2 * u), u, 0.1)
    assert torch.allclose(p.detach() - theta0, want, atol=1e-12)


def test_mezo_deltas_expectation_is_the_gradient():
    d = 10
    c = torch.arange(1.0, d + 1, dtype=torch.float64)
    deltas = mezo_deltas(
        lambda th: th @ c,
        torch.zeros(d, dtype=torch.float64),
        eps=1e-3,
        lr=1.0,
        draws=20_000,
        generator=torch.Generator().manual_seed(0),
    )
    assert torch.allclose(deltas.mean(0), -c, rtol=0.1, atol=0.3)


def test_batched_step_matches_sequential_fzoo():
    model_a, x, y = tiny_problem()
    model_b = copy.deepcopy(model_a)
    opt = FZOO(model_a.parameters(), lr=0.05, eps=1e-3, n_perturb=5, seed=21)
    opt.step(closure_for(model_a, x, y))
    seeds = draw_seeds(torch.Generator().manual_seed(21), 5)
    out = batched_fzoo_step(
        model_b, nn.functional.cross_entropy, x, y, seeds, lr=0.05, eps=1e-3
    )
    assert out["losses"].shape == (5,)
    assert torch.allclose(flat(model_a), flat(model_b), atol=1e-12)
    assert math.isclose(out["sigma"], opt.last["sigma"], rel_tol=1e-9)


def test_flat_mlp_matches_sequential_and_batched_loss():
    seq = mlp([6, 5, 3], seed=0)
    fm = FlatMLP(seq)
    x = torch.randn(9, 6)
    y = torch.randint(0, 3, (9,))
    assert torch.allclose(fm(x), seq(x), atol=1e-6)
    thetas = torch.stack([fm.theta.detach(), fm.theta.detach() * 0.5])  # (K=2, d)
    # (1, 2)
    losses = flat_mlp_loss(fm, thetas.unsqueeze(0), x.unsqueeze(0), y.unsqueeze(0))
    assert losses.shape == (1, 2)
    assert torch.allclose(
        losses[0, 0], nn.functional.cross_entropy(seq(x), y), atol=1e-6
    )
    with pytest.raises(ValueError):
        flat_mlp_loss(fm, thetas, x, y)


def test_flat_mlp_loss_gradcheck():
    fm = FlatMLP(mlp([3, 2, 2], seed=0).double())
    x = torch.randn(1, 4, 3, dtype=torch.float64)
    y = torch.randint(0, 2, (1, 4))
    theta = fm.theta.detach().clone().reshape(1, 1, -1).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda th: flat_mlp_loss(fm, th, x, y), (theta,))


def test_multi_step_replays_the_class():
    fm = FlatMLP(mlp([4, 3, 2], seed=0).double())
    x = torch.randn(8, 4, dtype=torch.float64)
    y = torch.randint(0, 2, (8,))
    theta0 = fm.theta.detach().clone()
    opt = FZOO([fm.theta], lr=0.03, eps=1e-3, n_perturb=4, seed=3)
    opt.step(lambda: nn.functional.cross_entropy(fm(x), y))
    u = torch.stack(
        [next(iter(perturbations([fm.theta], s))) for s in opt.last["seeds"]]
    ).unsqueeze(0)
    loss_fn = lambda th: flat_mlp_loss(fm, th, x.unsqueeze(0), y.unsqueeze(0))
    new, l0 = fzoo_multi_step(
        loss_fn,
        theta0.unsqueeze(0),
        torch.tensor([0.03], dtype=torch.float64),
        1e-3,
        4,
        u=u,
    )
    assert torch.allclose(new[0], fm.theta.detach(), atol=1e-12)
    assert math.isclose(l0.item(), opt.last["l0"], rel_tol=1e-12)
    new_m, _ = mezo_multi_step(
        loss_fn,
        theta0.repeat(3, 1),
        torch.full((3,), 0.01, dtype=torch.float64),
        1e-3,
        torch.Generator().manual_seed(0),
    )
    assert new_m.shape == (3, theta0.numel())


def test_train_many_and_train_counted_count_passes():
    fm = FlatMLP(mlp([4, 3, 2], seed=0))
    x = torch.randn(40, 4)
    y = torch.randint(0, 2, (40,))
    theta0 = fm.theta.detach().repeat(2, 1)
    for method, per in [("fzoo", 5), ("mezo", 2), ("adam", 3)]:
        r = train_many(
            method,
            fm,
            theta0,
            torch.tensor([1e-2, 2e-2]),
            x,
            y,
            8,
            budget=60,
            eval_every=20,
            generator=torch.Generator().manual_seed(0),
            n_perturb=4,
        )
        assert (
            r["loss"].shape == (len(r["passes"]), 2)
            and r["passes"][-1] == (60 // per) * per
        )
        assert not r["diverged"].any()
    opt = FZOO(fm.parameters(), lr=1e-2, n_perturb=4)
    batches = torch.randint(0, 40, (20, 8))
    r = train_counted(fm, opt, x, y, batches, budget=50, eval_every=10)
    assert r["passes"][-1] == 50 and opt.forward_passes == 50
    with pytest.raises(ValueError):
        train_many(
            "sgd",
            fm,
            theta0,
            torch.tensor([1e-2, 2e-2]),
            x,
            y,
            8,
            60,
            20,
            torch.Generator(),
        )


def test_passes_to_reach():
    p = torch.tensor([0, 10, 20, 30])
    l = torch.tensor([2.0, 1.0, 0.5, 0.4], dtype=torch.float64)
    assert passes_to_reach(p, l, 0.6) == 20
    assert passes_to_reach(p, l, 0.1) == math.inf


def test_bad_inputs_raise():
    model, x, y = tiny_problem()
    with pytest.raises(ValueError):
        FZOO(model.parameters(), lr=-1.0)
    with pytest.raises(ValueError):
        FZOO(model.parameters(), n_perturb=1)
    with pytest.raises(ValueError):
        FZOO(model.parameters(), std_mode="robust")
    with pytest.raises(ValueError):
        MeZO(model.parameters(), eps=0.0)
    with pytest.raises(TypeError):
        FZOO(model.parameters()).step(None)
    with pytest.raises(ValueError):
        FZOO(model.parameters()).step(lambda: torch.ones(2))
    with pytest.raises(ValueError):
        fzoo_update_from_losses(
            torch.tensor(0.0), torch.zeros(3), torch.zeros(4, 5), 0.1
        )
    with pytest.raises(TypeError):
        FlatMLP(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)))


def test_check_function_accepts_the_right_answer_and_rejects_wrong_ones():
    good = lambda l0, losses, u, lr: fzoo_update_from_losses(l0, losses, u, lr)
    assert check_fzoo_update(good).status == "correct"
    flipped = check_fzoo_update(lambda l0, losses, u, lr: -good(l0, losses, u, lr))
    assert flipped.status == "wrong" and "uphill" in flipped
    sample = lambda l0, losses, u, lr: fzoo_update_from_losses(
        l0, losses, u, lr, std_mode="sample"
    )
    assert check_fzoo_update(sample).status == "wrong"
    unnormalised = lambda l0, losses, u, lr: -lr * ((losses - l0) / len(losses)) @ u
    assert check_fzoo_update(unnormalised).status == "wrong"  # not invariant


def test_exercise_check_answers_not_done_wrong_and_correct():
    stub, reference, ns = exercise_parts("03-fzoo", "my_update")
    assert ns.check_fzoo_update(stub).status == "not done yet"
    no_sigma = lambda l0, losses, u, lr: -lr * ((losses - l0) / len(losses)) @ u
    assert ns.check_fzoo_update(no_sigma).status == "wrong"
    assert ns.check_fzoo_update(reference).status == "correct"
