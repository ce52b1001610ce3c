import pytest
import torch
from nbexercise import exercise_parts

from iclr26.deep_mf import (
    block_diag_mask,
    check_effective_rank,
    check_factor_gradients,
    depth2_limit,
    diag_mask,
    effective_rank,
    end_to_end,
    factor_gradients,
    heldout_rmse,
    init_factors,
    masked_loss,
    min_norm_completion,
    plasticity_experiment,
    random_mask,
    rank_one_target,
    sign_align,
    singular_values,
    train_gd,
)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_effective_rank_extremes_and_batch():
    assert effective_rank(torch.eye(6, dtype=torch.float64)).item() == pytest.approx(6)
    uv = torch.outer(
        torch.randn(5, generator=gen(), dtype=torch.float64),
        torch.randn(4, generator=gen(1), dtype=torch.float64),
    )
    assert effective_rank(uv).item() == pytest.approx(1, abs=1e-6)
    batch = torch.randn(3, 4, 4, generator=gen(), dtype=torch.float64)
    assert effective_rank(batch).shape == (3,)
    assert ((effective_rank(batch) >= 1) & (effective_rank(batch) <= 4)).all()
    assert singular_values(batch).shape == (3, 4)


def test_masks():
    assert torch.equal(diag_mask(4), torch.eye(4, dtype=torch.float64))
    b = block_diag_mask(6, 2)
    assert b.sum() == 12 and b[0, 1] == 1 and b[1, 2] == 0
    r = random_mask(50, 0.3, generator=gen())
    assert torch.equal(torch.diagonal(r), torch.ones(50, dtype=torch.float64))
    assert 0.2 < (r.sum() - 50) / (50 * 49) < 0.4
    with pytest.raises(ValueError, match="divid"):
        block_diag_mask(6, 4)
    with pytest.raises(ValueError, match="frac"):
        random_mask(4, 1.5)
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        diag_mask(0)
    with pytest.raises(TypeError, match="n must be an int"):
        diag_mask(4.0)


def test_init_shapes_scale_and_errors():
    fs = init_factors(3, 5, 3, 1e-3, generator=gen())
    assert len(fs) == 3 and all(f.shape == (3, 5, 5) for f in fs)
    W = end_to_end(fs)
    # end-to-end size ~ scale, whatever the depth
    assert 1e-5 < W.norm(dim=(-2, -1)).median() < 1e-1
    d = init_factors(2, 4, 3, 0.1, init="diag", generator=gen())
    assert all(
        torch.equal(f, torch.diag_embed(torch.diagonal(f, dim1=-2, dim2=-1))) for f in d
    )
    per_run = init_factors(2, 4, 2, torch.tensor([1e-2, 1e-4]), generator=gen())
    assert per_run[0][0].norm() > per_run[0][1].norm()
    with pytest.raises(ValueError, match="init"):
        init_factors(1, 4, 2, 1e-3, init="orthogonal")
    with pytest.raises(ValueError, match="scale"):
        init_factors(1, 4, 2, -1.0)
    with pytest.raises(ValueError, match="depth"):
        init_factors(1, 4, 0, 1e-3)
    with pytest.raises(TypeError):
        effective_rank([[1.0]])
    with pytest.raises(ValueError, match=r"\(\.\.\., n, m\)"):
        effective_rank(torch.ones(3))
    with pytest.raises(ValueError, match="zero matrix is undefined"):
        effective_rank(torch.zeros(2, 3, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="NaN or infinite"):
        effective_rank(torch.full((3, 3), float("nan"), dtype=torch.float64))


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_closed_form_gradients_match_autograd(depth):
    g = gen(depth)
    fs = [f.requires_grad_() for f in init_factors(2, 5, depth, 0.7, generator=g)]
    M = torch.randn(5, 5, generator=g, dtype=torch.float64)
    mask = random_mask(5, 0.4, generator=g)
    masked_loss(end_to_end(fs), M, mask).sum().backward()
    grads, W = factor_gradients([f.detach() for f in fs], M, mask)
    for f, gr in zip(fs, grads):
        assert torch.allclose(f.grad, gr, atol=1e-12)


def test_gradcheck_masked_loss():
    M = torch.randn(4, 4, dtype=torch.float64)
    mask = random_mask(4, 0.5, generator=gen())
    fs = [f.requires_grad_() for f in init_factors(1, 4, 3, 0.5, generator=gen())]
    assert torch.autograd.gradcheck(
        lambda *f: masked_loss(end_to_end(list(f)), M, mask), fs
    )


def test_depth2_pairs_are_decoupled_bitwise_and_depth3_is_not():
    n = 6
    M, mask = torch.ones(n, n, dtype=torch.float64), diag_mask(n)
    for depth, decoupled in ((2, True), (3, False)):
        fs = init_factors(1, n, depth, 1e-2, generator=gen())
        poked = [f.clone() for f in fs]
        poked[0][0, :, 2] += 0.05  # change b_2 (column 2 of W_1) only
        poked[-1][0, 2, :] -= 0.05  # and a_2 (row 2 of W_L)
        a, _ = train_gd(fs, M, mask, lr=0.05, max_steps=200, tol=0.0)
        b, _ = train_gd(poked, M, mask, lr=0.05, max_steps=200, tol=0.0)
        others = [i for i in range(n) if i != 2]
        # columns b_i, i ≠ 2
        diff = (a[0][0][:, others] - b[0][0][:, others]).abs().max().item()
        if decoupled:
            assert diff == 0.0
        else:
            assert diff > 1e-6


def test_depth2_conserved_quantity():
    n = 5
    fs = init_factors(1, n, 2, 0.3, generator=gen())
    M, mask = torch.ones(n, n, dtype=torch.float64), diag_mask(n)
    # |a_i|² − |b_i|²
    conserved = lambda f: (f[1][0] ** 2).sum(1) - (f[0][0] ** 2).sum(0)
    out, _ = train_gd(fs, M, mask, lr=1e-3, max_steps=3000, tol=0.0)
    assert (conserved(out) - conserved(fs)).abs().max() < 1e-3


def test_depth2_limit_matches_training():
    n = 6
    fs = init_factors(3, n, 2, 1e-4, generator=gen())
    M, mask = torch.ones(n, n, dtype=torch.float64), diag_mask(n)
    out, hist = train_gd(fs, M, mask, lr=0.05, max_steps=20_000, tol=1e-14)
    assert (end_to_end(out) - depth2_limit(fs, M)).abs().max() < 1e-3
    assert hist.loss.shape[1] == 3 and hist.svals.shape[1:] == (3, n)
    with pytest.raises(ValueError, match="two factors"):
        depth2_limit(fs + fs[:1], M)


def test_diagonal_init_stays_diagonal():
    n = 5
    fs = init_factors(2, n, 3, 1e-2, init="diag", generator=gen())
    out, _ = train_gd(
        fs,
        torch.ones(n, n, dtype=torch.float64),
        diag_mask(n),
        lr=0.05,
        max_steps=3000,
        tol=1e-12,
    )
    W = end_to_end(out)
    assert (W * (1 - torch.eye(n, dtype=torch.float64))).abs().max() == 0
    assert torch.allclose(
        effective_rank(W), torch.full((2,), float(n), dtype=torch.float64), atol=1e-6
    )


def test_sign_align_keeps_diagonal_loss_and_fixes_signs():
    n = 6
    M = rank_one_target(n, generator=gen())
    fs = init_factors(2, n, 3, 1e-3, generator=gen())
    out, _ = train_gd(fs, M, diag_mask(n), lr=0.1, max_steps=5000, tol=1e-12)
    al = sign_align(out, M)
    assert torch.allclose(
        masked_loss(end_to_end(al), M, diag_mask(n)),
        masked_loss(end_to_end(out), M, diag_mask(n)),
    )
    assert (end_to_end(al) > 0).float().mean() > (
        end_to_end(out) > 0
    ).float().mean() - 1e-9


def test_train_gd_errors_and_helpers():
    fs = init_factors(1, 4, 2, 1e-2, generator=gen())
    with pytest.raises(ValueError, match="mask"):
        train_gd(
            fs,
            torch.ones(4, 4, dtype=torch.float64),
            torch.ones(3, 3, dtype=torch.float64),
        )
    with pytest.raises(ValueError, match="lr"):
        train_gd(fs, torch.ones(4, 4, dtype=torch.float64), diag_mask(4), lr=0)
    M = rank_one_target(4, generator=gen())
    assert M.max() == pytest.approx(1.0)
    assert torch.equal(
        min_norm_completion(M, diag_mask(4)), torch.diag(torch.diagonal(M))
    )
    assert heldout_rmse(M, M, diag_mask(4)).item() == 0.0


def test_plasticity_experiment_shapes():
    g = gen()
    M = torch.stack([rank_one_target(5, g) for _ in range(2)])
    mask = torch.stack([random_mask(5, 0.3, g) for _ in range(2)])
    out = plasticity_experiment(2, M, mask, 1e-3, 0.1, 300, 300, generator=g)
    assert {k for k in out if not k.startswith("loss_")} == {
        "pretrained",
        "scratch",
        "resumed",
        "resumed_signs",
        "resumed_oracle",
    }
    assert all(out[k].shape == (2, 5, 5) for k in ("pretrained", "scratch", "resumed"))
    assert out["loss_resumed"].shape == (2,)
    with pytest.raises(ValueError, match=r"\(R, n, n\)"):
        plasticity_experiment(2, M[0], mask[0], 1e-3, 0.1, 10, 10)


def test_exercise_checkers_accept_the_reference_and_reject_a_wrong_answer():
    assert check_effective_rank(effective_rank).status == "correct"
    wrong = check_effective_rank(lambda W: torch.linalg.matrix_rank(W).double())
    assert wrong.status == "wrong" and "Hint" in wrong
    assert check_effective_rank(lambda W: effective_rank(W).sum()).status == "wrong"
    closed_form = lambda f, M, m: factor_gradients(f, M, m)[0]
    assert check_factor_gradients(closed_form).status == "correct"
    zeros = check_factor_gradients(lambda f, M, m: [torch.zeros_like(x) for x in f])
    assert zeros.status == "wrong" and "Hint" in zeros
    first_only = lambda f, M, m: closed_form(f, M, m)[:1]
    assert check_factor_gradients(first_only).status == "wrong"


def test_exercise_check_answers_not_done_wrong_and_correct():
    stub, reference, ns = exercise_parts("01-deep-mf", "my_effective_rank")
    assert ns.dmf.check_effective_rank(stub).status == "not done yet"
    wrong = lambda W: torch.linalg.matrix_rank(W).double()  # numerical rank, not erank
    assert ns.dmf.check_effective_rank(wrong).status == "wrong"
    assert ns.dmf.check_effective_rank(reference).status == "correct"

    stub, reference, ns = exercise_parts("01-deep-mf", "my_factor_gradients")
    assert ns.dmf.check_factor_gradients(stub).status == "not done yet"
    no_transpose = (
        lambda fs, M, mask: [  # forgets to transpose the factors around G
            (
                end_to_end(fs[k + 1 :])
                if k + 1 < len(fs)
                else torch.eye(M.shape[-1]).double()
            )
            @ (mask * (end_to_end(fs) - M))
            @ (end_to_end(fs[:k]) if k > 0 else torch.eye(M.shape[-1]).double())
            for k in range(len(fs))
        ]
    )
    assert ns.dmf.check_factor_gradients(no_transpose).status == "wrong"
    assert ns.dmf.check_factor_gradients(reference).status == "correct"


def _seeded_draws(order):
    """Two of the module's seeded draws, in the given order, with an unrelated draw
    from torch's global generator between them."""
    out = {}
    for name in order:
        if name == "factors":
            out[name] = end_to_end(init_factors(2, 5, 3, 0.3, generator=gen(11)))
        else:
            M = torch.stack([rank_one_target(6, generator=gen(12)) for _ in range(2)])
            mask = torch.stack([random_mask(6, 0.3, generator=gen(13))] * 2)
            out[name] = plasticity_experiment(
                3, M, mask, 1e-2, 0.1, 50, 50, generator=gen(14)
            )["resumed"]
        torch.randn(7)  # a draw from the global generator between the two calls
    return out


def test_seeded_draws_do_not_depend_on_call_order_or_global_state():
    a = _seeded_draws(["factors", "plasticity"])
    torch.manual_seed(12345)
    b = _seeded_draws(["plasticity", "factors"])
    assert torch.equal(a["factors"], b["factors"])
    assert torch.equal(a["plasticity"], b["plasticity"])
