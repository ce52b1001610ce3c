import pytest
import torch

from iclr26.harness import (
    batch_indices,
    digits_data,
    evaluate,
    mlp,
    optimizer_state_bytes,
    tensor_bytes,
)
from iclr26.numerics import n_params


def test_digits_data_shapes_split_and_standardisation():
    train, test = digits_data(seed=0)
    assert train.x.shape == (1347, 64) and test.x.shape == (450, 64)
    assert train.y.dtype == torch.int64 and set(train.y.tolist()) == set(range(10))
    # standardised with the training split's statistics
    assert train.x.mean().abs() < 1e-5
    assert not torch.equal(digits_data(seed=1)[0].y, train.y)
    with pytest.raises(ValueError, match="test_fraction"):
        digits_data(test_fraction=1.5)


def test_mlp_is_reproducible_without_touching_the_global_rng():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b = mlp([64, 32, 10], seed=0), mlp([64, 32, 10], seed=0)
    assert torch.equal(torch.rand(1), before)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert n_params(a) == 64 * 32 + 32 + 32 * 10 + 10
    with pytest.raises(ValueError, match="sizes"):
        mlp([64])


def test_batch_indices_cover_each_epoch_without_replacement():
    idx = batch_indices(10, 5, steps=4, generator=torch.Generator().manual_seed(0))
    assert idx.shape == (4, 5)
    # one epoch = two batches
    assert sorted(idx[:2].flatten().tolist()) == list(range(10))
    with pytest.raises(ValueError, match="batch_size"):
        batch_indices(10, 11, steps=1, generator=torch.Generator())


def test_evaluate_and_optimizer_state_bytes():
    train, _ = digits_data(seed=0)
    model = mlp([64, 10], seed=0)
    loss, acc = evaluate(model, train)
    assert loss > 0 and 0 <= acc <= 1
    opt = torch.optim.Adam(model.parameters())
    assert optimizer_state_bytes(opt) == 0
    torch.nn.functional.cross_entropy(model(train.x), train.y).backward()
    opt.step()
    # two fp32 moments per parameter
    assert optimizer_state_bytes(opt) >= 2 * 4 * n_params(model)
    assert tensor_bytes([torch.zeros(3, dtype=torch.float64), "not a tensor"]) == 24
