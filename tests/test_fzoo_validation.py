"""Bad input to iclr26.fzoo's batched paths is refused, never a silent wrong answer
(issue 14)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from iclr26.fzoo import (
    FZOO,
    FlatMLP,
    MeZO,
    check_fzoo_update,
    flat_mlp_loss,
    fzoo_deltas,
    fzoo_multi_step,
    fzoo_update_from_losses,
    mezo_deltas,
    mezo_multi_step,
    rademacher,
    train_many,
)
from iclr26.harness import mlp


def small():
    fm = FlatMLP(mlp([4, 3, 2], seed=0))
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(40, 4, generator=gen)
    y = torch.randint(0, 2, (40,), generator=gen)
    return fm, x, y


def loss_fn_for(fm, x, y):
    from iclr26.fzoo import flat_mlp_loss

    return lambda th: flat_mlp_loss(fm, th, x[:8].unsqueeze(0), y[:8].unsqueeze(0))


def test_update_from_losses_refuses_one_perturbation():
    with pytest.raises(ValueError, match="N >= 2"):
        fzoo_update_from_losses(torch.tensor(0.0), torch.ones(1), torch.ones(1, 5), 0.1)
    with pytest.raises(ValueError, match="N >= 2"):
        fzoo_update_from_losses(
            torch.zeros(3), torch.ones(3, 1), torch.ones(3, 1, 5), 0.1
        )


def test_multi_step_refuses_one_perturbation_and_bad_shapes():
    fm, x, y = small()
    theta = fm.theta.detach().unsqueeze(0)
    f = loss_fn_for(fm, x, y)
    lr = torch.tensor([0.01])
    with pytest.raises(ValueError, match="n_perturb"):
        fzoo_multi_step(f, theta, lr, 1e-3, 1, torch.Generator())
    with pytest.raises(ValueError, match="N >= 2"):
        one = rademacher((1, 1, theta.shape[1]), torch.Generator().manual_seed(0))
        fzoo_multi_step(f, theta, lr, 1e-3, 8, u=one)
    with pytest.raises(ValueError, match="theta"):
        fzoo_multi_step(f, theta[0], lr, 1e-3, 4, torch.Generator())
    with pytest.raises(ValueError, match="lr"):
        fzoo_multi_step(
            f, theta, torch.tensor([0.01, 0.02]), 1e-3, 4, torch.Generator()
        )
    with pytest.raises(ValueError, match="lr"):
        fzoo_multi_step(f, theta, torch.tensor([math.nan]), 1e-3, 4, torch.Generator())
    with pytest.raises(ValueError, match="eps"):
        fzoo_multi_step(f, theta, lr, 0.0, 4, torch.Generator())
    with pytest.raises(ValueError, match="eps"):
        mezo_multi_step(f, theta, lr, -1e-3, torch.Generator())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_perturb=1), "n_perturb"),  # was: 2,000 passes charged, loss frozen
        (dict(budget=5), "buys no step"),  # FZOO with N = 8 needs 9 passes per step
        (dict(eval_every=0), "eval_every"),
        (dict(batch_size=0), "batch_size"),
        (dict(eps=0.0), "eps"),
    ],
)
def test_train_many_refuses_bad_settings(kwargs, match):
    fm, x, y = small()
    args = dict(
        method="fzoo",
        model=fm,
        theta0=fm.theta.detach().repeat(2, 1),
        lr=torch.tensor([1e-2, 2e-2]),
        x=x,
        y=y,
        batch_size=8,
        budget=60,
        eval_every=20,
        generator=torch.Generator().manual_seed(0),
    )
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        train_many(**args)


@pytest.mark.parametrize(
    "kwargs, match",
    [(dict(n_perturb=2.0), "n_perturb must be an int"), (dict(budget=60.5), "budget")],
)
def test_train_many_refuses_floats_where_counts_are_meant(kwargs, match):
    fm, x, y = small()
    args = dict(
        method="fzoo",
        model=fm,
        theta0=fm.theta.detach().repeat(2, 1),
        lr=torch.tensor([1e-2, 2e-2]),
        x=x,
        y=y,
        batch_size=8,
        budget=60,
        eval_every=20,
        generator=torch.Generator().manual_seed(0),
    )
    args.update(kwargs)
    with pytest.raises(TypeError, match=match):
        train_many(**args)


def test_draws_need_an_explicit_generator():
    fm, x, y = small()
    theta = fm.theta.detach().unsqueeze(0)
    f = loss_fn_for(fm, x, y)
    lr = torch.tensor([0.01])
    with pytest.raises(TypeError, match="torch.Generator"):
        rademacher((3, 4), None)
    with pytest.raises(TypeError, match="torch.Generator"):
        fzoo_multi_step(f, theta, lr, 1e-3, 4)
    with pytest.raises(TypeError, match="torch.Generator"):
        mezo_multi_step(f, theta, lr, 1e-3)
    with pytest.raises(TypeError, match="torch.Generator"):
        fzoo_deltas(lambda th: th.sum(-1), torch.zeros(3), 4, 1e-3, 0.1, 2)
    with pytest.raises(TypeError, match="torch.Generator"):
        mezo_deltas(lambda th: th.sum(-1), torch.zeros(3), 1e-3, 0.1, 2)


def test_train_many_refuses_wrong_types_and_shapes():
    fm, x, y = small()
    th = fm.theta.detach().repeat(2, 1)
    lr = torch.tensor([1e-2, 2e-2])
    g = torch.Generator()
    with pytest.raises(TypeError, match="FlatMLP"):
        train_many("fzoo", mlp([4, 3, 2]), th, lr, x, y, 8, 60, 20, g)
    with pytest.raises(ValueError, match="theta0"):
        train_many("fzoo", fm, th[:, :-1], lr, x, y, 8, 60, 20, g)
    with pytest.raises(ValueError, match="lr"):
        train_many("fzoo", fm, th, lr[:1], x, y, 8, 60, 20, g)
    with pytest.raises(ValueError, match="x must be"):
        train_many("fzoo", fm, th, lr, x, y[:-1], 8, 60, 20, g)
    with pytest.raises(TypeError, match="generator"):
        train_many("fzoo", fm, th, lr, x, y, 8, 60, 20, 0)
    with pytest.raises(ValueError, match="method"):
        train_many("FZOO", fm, th, lr, x, y, 8, 60, 20, g)


def test_train_many_fzoo_moves_the_weights():
    """The defect of issue 14 was a run that was charged passes and never moved."""
    fm, x, y = small()
    th = fm.theta.detach().repeat(2, 1)
    r = train_many(
        "fzoo",
        fm,
        th,
        torch.tensor([1e-2, 2e-2]),
        x,
        y,
        8,
        90,
        30,
        torch.Generator().manual_seed(0),
        n_perturb=2,
    )
    assert (r["theta"] - th).abs().amax(1).min() > 0
    assert r["passes"][-1] == 90


def test_nostd_ablation_is_fzoo_without_the_division_by_sigma():
    fm, x, y = small()
    f = loss_fn_for(fm, x, y)
    theta = fm.theta.detach().unsqueeze(0).double()
    fm = fm.double()
    f = loss_fn_for(fm, x.double(), y)
    u = rademacher(
        (1, 5, theta.shape[1]), torch.Generator().manual_seed(1), dtype=torch.float64
    )
    lr, eps = torch.tensor([0.1], dtype=torch.float64), 1e-3
    new, l0 = fzoo_multi_step(f, theta, lr, eps, 5, u=u, normalise=False)
    losses = f(theta.unsqueeze(1) + eps * u)[0]
    want = theta[0] - 0.1 * ((losses - l0[0]) / (5 * eps)) @ u[0]
    assert torch.allclose(new[0], want, atol=1e-12)
    # unlike FZOO, the ablation's step scales with the loss
    new3, _ = fzoo_multi_step(
        lambda th: 3 * f(th), theta, lr, eps, 5, u=u, normalise=False
    )
    assert torch.allclose(new3 - theta, 3 * (new - theta), atol=1e-10)
    r = train_many(
        "fzoo-nostd",
        fm,
        theta.repeat(2, 1).float().double(),
        torch.tensor([1e-2, 2e-2], dtype=torch.float64),
        x.double(),
        y,
        8,
        60,
        20,
        torch.Generator().manual_seed(0),
        n_perturb=4,
    )
    assert r["passes"][-1] == 60  # 12 steps of N + 1 = 5 passes


def test_checker_hints_do_not_spell_out_the_recipe():
    """Each wrong answer gets a hint; none names the formula's parts outright."""
    good = lambda l0, losses, u, lr: fzoo_update_from_losses(l0, losses, u, lr)
    wrongs = [
        lambda l0, losses, u, lr: -good(l0, losses, u, lr),
        lambda l0, losses, u, lr: fzoo_update_from_losses(l0, losses, u, lr, "sample"),
        lambda l0, losses, u, lr: -lr * ((losses - l0) / len(losses)) @ u,
        lambda l0, losses, u, lr: -lr * ((losses - losses.mean()) / len(losses)) @ u,
    ]
    for w in wrongs:
        v = check_fzoo_update(w)
        assert v.status == "wrong"
        text = str(v)
        for recipe in ("correction=0", "divide by N", "N·σ", "l_i − l_0", "population"):
            assert recipe not in text, (recipe, text)


@pytest.mark.parametrize("cls", [FZOO, MeZO])
def test_a_closure_that_raises_leaves_the_parameters_unperturbed(cls):
    p = nn.Parameter(torch.linspace(-1, 1, 6, dtype=torch.float64))
    before = p.detach().clone()
    opt = cls([p], lr=0.1, eps=1e-2, seed=0)
    calls = []

    def closure():
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("out of memory, say")
        return (p**2).sum()

    with pytest.raises(RuntimeError, match="out of memory"):
        opt.step(closure)
    assert torch.allclose(p.detach(), before, atol=1e-15)


@pytest.mark.parametrize("cls", [FZOO, MeZO])
def test_a_non_finite_loss_is_an_error_not_a_skipped_step(cls):
    p = nn.Parameter(torch.linspace(-1, 1, 6, dtype=torch.float64))
    before = p.detach().clone()
    opt = cls([p], lr=0.1, eps=1e-2, seed=0)
    with pytest.raises(ValueError, match="non-finite loss"):
        opt.step(lambda: (p**2).sum() * float("nan"))
    assert torch.allclose(p.detach(), before, atol=1e-15)


@pytest.mark.parametrize("cls", [FZOO, MeZO])
def test_integer_parameters_are_refused(cls):
    with pytest.raises(TypeError, match="floating-point"):
        cls([torch.zeros(3, dtype=torch.int64)], lr=0.1)


def _seeded_draws(order):
    """Two of the package's seeded computations (FZOO's class step from its seed, and
    train_many from its generator), in the given order, with an unrelated draw from
    torch's global generator between them."""
    fm, x, y = small()
    out = {}
    for name in order:
        if name == "class":
            p = nn.Parameter(fm.theta.detach().clone())
            opt = FZOO([p], lr=0.05, n_perturb=4, seed=7)
            loss = lambda q=p: flat_mlp_loss(fm, q[None, None], x[None], y[None])[0, 0]
            for _ in range(3):
                opt.step(loss)
            out[name] = p.detach().clone()
        else:
            r = train_many(
                "fzoo",
                fm,
                fm.theta.detach().repeat(2, 1),
                torch.tensor([1e-2, 2e-2]),
                x,
                y,
                8,
                60,
                20,
                torch.Generator().manual_seed(8),
                n_perturb=4,
            )
            out[name] = r["theta"]
        torch.randn(5)  # a draw from the global generator between the calls
    return out


def test_seeded_draws_do_not_depend_on_call_order_or_global_state():
    a = _seeded_draws(["class", "many"])
    torch.manual_seed(4321)
    b = _seeded_draws(["many", "class"])
    for k in a:
        assert torch.equal(a[k], b[k]), k


@pytest.mark.parametrize("cls", [FZOO, MeZO])
def test_integer_parameters_added_later_are_refused(cls):
    opt = cls([nn.Parameter(torch.zeros(3))], lr=0.1)
    with pytest.raises(TypeError, match="floating-point"):
        opt.add_param_group({"params": [torch.zeros(2, dtype=torch.int32)]})
    assert len(opt.param_groups) == 1  # the bad group was not kept


@pytest.mark.parametrize("cls", [FZOO, MeZO])
def test_a_closure_that_raises_at_any_call_restores_the_parameters(cls):
    p = nn.Parameter(torch.linspace(-1, 1, 6, dtype=torch.float64))
    before = p.detach().clone()
    n_calls = 9 if cls is FZOO else 2
    for fail_at in range(1, n_calls + 1):
        opt = cls([p], lr=0.1, eps=1e-2, seed=fail_at)

        def closure(calls=[], fail_at=fail_at):  # noqa: B006 a fresh list per loop
            calls.append(1)
            if len(calls) == fail_at:
                raise RuntimeError("boom")
            return (p**2).sum()

        with pytest.raises(RuntimeError, match="boom"):
            opt.step(closure)
        assert torch.allclose(p.detach(), before, atol=1e-14), fail_at


@pytest.mark.parametrize("bad", [float("inf"), float("-inf")])
def test_an_infinite_loss_is_an_error_too(bad):
    p = nn.Parameter(torch.ones(4, dtype=torch.float64))
    opt = FZOO([p], lr=0.1, n_perturb=3, seed=0)
    calls = []

    def closure():
        calls.append(1)
        return torch.tensor(bad) if len(calls) == 4 else (p**2).sum()  # l_0 bad

    with pytest.raises(ValueError, match="unperturbed point"):
        opt.step(closure)
    # restored up to one rounding per entry, as after any perturbation
    assert torch.allclose(p.detach(), torch.ones(4, dtype=torch.float64), atol=1e-14)


def test_train_many_keeps_the_best_dev_checkpoint():
    fm, x, y = small()
    th = fm.theta.detach().repeat(3, 1)
    dev = (x[:20], y[:20])
    for method in ["fzoo", "mezo"]:
        r = train_many(
            method,
            fm,
            th,
            torch.tensor([1e-2, 5e-2, 1e-1]),
            x,
            y,
            8,
            300,
            30,
            torch.Generator().manual_seed(1),
            n_perturb=2,
            dev=dev,
        )
        assert r["dev_acc"].shape == r["loss"].shape
        # the best is over the logged points after the start, the first of equal ones
        best = r["dev_acc"][1:].max(0).values
        assert torch.equal(r["best_dev"], best)
        first = (r["dev_acc"][1:] == best).int().argmax(0)
        assert torch.equal(r["best_passes"], r["passes"][1:][first])
        logits = torch.stack(
            [
                torch.func.functional_call(fm, {"theta": t}, (dev[0],))
                for t in r["best_theta"]
            ]
        )
        acc = (logits.argmax(-1) == dev[1]).double().mean(-1)
        assert torch.allclose(acc, r["best_dev"])


def test_train_many_refuses_a_bad_dev_split():
    fm, x, y = small()
    th = fm.theta.detach().repeat(1, 1)
    args = (fm, th, torch.tensor([1e-2]), x, y, 8, 60, 30, torch.Generator())
    with pytest.raises(TypeError, match="dev must be a pair"):
        train_many("fzoo", *args, n_perturb=2, dev=x)
    with pytest.raises(ValueError, match="dev must be"):
        train_many("fzoo", *args, n_perturb=2, dev=(x[:, :3], y))
    with pytest.raises(ValueError, match="dev must be"):
        train_many("fzoo", *args, n_perturb=2, dev=(x, y[:5]))
