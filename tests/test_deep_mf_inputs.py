"""Bad inputs to deep_mf get clear errors (issue 14), and the sign alignment uses
no oracle."""

import pytest
import torch

from iclr26.deep_mf import (
    DivergenceError,
    diag_mask,
    end_to_end,
    init_factors,
    masked_loss,
    observed_signs,
    random_mask,
    rank_one_target,
    sign_align_observed,
    train_gd,
)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def setup(R=2, n=4):
    return (
        init_factors(R, n, 2, 1e-2, generator=gen()),
        torch.ones(n, n, dtype=torch.float64),
        diag_mask(n),
    )


def test_batch_mismatch_is_named():
    fs, M, mask = setup(R=2)
    with pytest.raises(ValueError, match=r"R=2 runs"):
        train_gd(fs, M.expand(3, 4, 4), mask)
    with pytest.raises(ValueError, match=r"R=2 runs"):
        train_gd(fs, M, mask.expand(5, 4, 4))


def test_dtype_mismatch_is_named():
    fs, M, mask = setup()
    with pytest.raises(TypeError, match="dtype"):
        train_gd([f.float() for f in fs], M, mask.float())
    with pytest.raises(TypeError, match="share one dtype"):
        train_gd([fs[0].float(), fs[1]], M, mask)


def test_divergence_is_detected_before_the_svd():
    fs, M, mask = setup()
    with pytest.raises(DivergenceError, match="diverged.*lr=50"):
        train_gd(
            [10 * f for f in fs],
            100 * M,
            mask,
            lr=50.0,
            max_steps=2000,
            record_every=10,
        )
    assert issubclass(DivergenceError, ValueError)


@pytest.mark.parametrize("bad", [1e4, 100.0, True, "100"])
def test_non_integer_step_counts_are_refused(bad):
    fs, M, mask = setup()
    with pytest.raises(TypeError, match="max_steps"):
        train_gd(fs, M, mask, max_steps=bad)
    with pytest.raises(TypeError, match="record_every"):
        train_gd(fs, M, mask, record_every=bad)


def test_other_bad_inputs():
    fs, M, mask = setup()
    with pytest.raises(ValueError, match=">= 1"):
        train_gd(fs, M, mask, max_steps=0)
    with pytest.raises(ValueError, match="0s and 1s"):
        train_gd(fs, M, 0.5 * mask)
    with pytest.raises(ValueError, match="NaN"):
        train_gd(fs, M * float("nan"), mask)
    with pytest.raises(ValueError, match="lr must be finite"):
        train_gd(fs, M, mask, lr=float("nan"))
    with pytest.raises(TypeError, match="lr must be a real number"):
        train_gd(fs, M, mask, lr="0.05")
    with pytest.raises(ValueError, match="lr must lie in"):
        train_gd(fs, M, mask, lr=0.0)
    with pytest.raises(TypeError, match="torch.Tensor"):
        train_gd(fs, M.tolist(), mask)
    with pytest.raises(ValueError, match="non-empty"):
        train_gd([], M, mask)
    import numpy as np

    out, hist = train_gd(fs, M, mask, lr=np.float64(0.05), max_steps=np.int64(10))
    assert hist.final_step == 10


def test_observed_signs_use_only_observed_entries_and_fix_rank_one_signs():
    n, R = 8, 3
    g = gen(1)
    M = torch.stack([rank_one_target(n, generator=g) for _ in range(R)])
    mask = torch.stack([random_mask(n, 0.4, generator=g) for _ in range(R)])
    x = 0.5 + torch.rand(R, n, generator=g, dtype=torch.float64)
    d_true = torch.where(torch.rand(R, n, generator=g) < 0.5, -1.0, 1.0).double()
    # a rank-one W with random signs
    W = (d_true * x)[..., :, None] * (d_true * x)[..., None, :]
    d = observed_signs(W, M, mask)
    # right up to a global sign
    assert torch.equal(d * d[..., :1], d_true * d_true[..., :1])
    # changing unobserved entries of M changes nothing
    M2 = M + 7.0 * (1 - mask) * torch.randn(R, n, n, generator=g, dtype=torch.float64)
    assert torch.equal(observed_signs(W, M2 * mask, mask), d)
    fs = init_factors(R, n, 3, 1e-3, generator=g)
    al = sign_align_observed(fs, M, mask)
    assert torch.allclose(
        masked_loss(end_to_end(al), M, diag_mask(n)),
        masked_loss(end_to_end(fs), M, diag_mask(n)),
    )
    with pytest.raises(ValueError, match=r"\(R, n, n\)"):
        observed_signs(W[0], M[0], mask[0])


def test_effective_rank_refuses_zero_nan_and_empty_matrices():
    from iclr26.deep_mf import effective_rank

    for W in (
        torch.zeros(3, 3, dtype=torch.float64),
        torch.zeros(3, 3, dtype=torch.float32),
        torch.stack([torch.eye(3), torch.zeros(3, 3)]).double(),  # one zero in a batch
    ):
        with pytest.raises(ValueError, match="zero matrix is undefined"):
            effective_rank(W)
    for bad in (float("nan"), float("inf")):
        W = torch.eye(3, dtype=torch.float64)
        W[0, 1] = bad
        with pytest.raises(ValueError, match="NaN or infinite"):
            effective_rank(W)
    with pytest.raises(ValueError, match="at least one row and one column"):
        effective_rank(torch.zeros(3, 0, dtype=torch.float64))
    # a tiny but non-zero matrix still has an effective rank
    assert abs(effective_rank(1e-300 * torch.eye(4, dtype=torch.float64)) - 4) < 1e-9


def test_rank_one_sharpness_matches_the_autograd_hessian():
    from iclr26.deep_mf import (
        balanced_rank_one_factors,
        block_diag_mask,
        rank_one_sharpness,
        rank_one_step_bound,
    )

    for n, depth, block in [(6, 2, 2), (8, 3, 1), (8, 3, 4), (8, 4, 2)]:
        F = balanced_rank_one_factors(n, depth)
        assert torch.allclose(end_to_end(F), torch.ones(n, n, dtype=torch.float64))
        mask, M = block_diag_mask(n, block), torch.ones(n, n, dtype=torch.float64)

        def loss(x, depth=depth, n=n, M=M, mask=mask):
            return masked_loss(end_to_end(list(x.reshape(depth, n, n))), M, mask)

        H = torch.autograd.functional.hessian(
            loss, torch.cat([f.reshape(-1) for f in F])
        )
        top = torch.linalg.eigvalsh(H)[-1].item()
        assert abs(top - rank_one_sharpness(n, depth, block)) < 1e-9 * top
        assert rank_one_step_bound(n, depth, block) == 2 / rank_one_sharpness(
            n, depth, block
        )
    with pytest.raises(ValueError, match="dividing n=8"):
        rank_one_sharpness(8, 3, 3)
    with pytest.raises(TypeError):
        rank_one_sharpness(8.0, 3, 1)
