"""Unit tests for the f-SNN chapter's data, corruptions, classifier and
training helpers."""

from __future__ import annotations

import pytest
import torch

from iclr26 import fsnn


def _events(seed=0):
    return fsnn.make_moving_bar_events(16, size=8, steps=10, seed=seed)[0]


@pytest.mark.parametrize(
    "kind,level", [("flip", 0.0), ("drop", 0.0), ("jitter", 0), ("shift", 0)]
)
def test_zero_level_is_identity(kind, level):
    x = _events()
    assert torch.equal(fsnn.corrupt_events(x, level, kind=kind), x)


def test_drop_only_removes_and_flip_changes_the_expected_fraction():
    x = _events()
    dropped = fsnn.corrupt_events(x, 0.5, seed=1, kind="drop")
    assert (dropped <= x).all()  # never adds an event
    kept = float(dropped.sum() / x.sum())
    assert 0.4 < kept < 0.6
    flipped = fsnn.corrupt_events(x, 0.1, seed=1, kind="flip")
    assert 0.07 < float((flipped != x).float().mean()) < 0.13


def test_shift_is_a_delay_and_jitter_keeps_pixels():
    x = _events()
    s = fsnn.corrupt_events(x, 3, kind="shift")
    assert torch.equal(s[3:], x[:-3]) and not s[:3].any()
    assert torch.equal(fsnn.corrupt_events(x, -2, kind="shift")[:-2], x[2:])
    assert not fsnn.corrupt_events(
        x, 10, kind="shift"
    ).any()  # shifted out of the window
    j = fsnn.corrupt_events(x, 2, seed=4, kind="jitter")
    assert j.shape == x.shape and set(j.unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(j.amax(0) <= x.amax(0), torch.ones_like(j[0], dtype=torch.bool))
    assert j.sum() <= x.sum() and not torch.equal(j, x)


@pytest.mark.parametrize(
    "bad,kw,err",
    [
        (torch.full((4, 2, 3), 0.5), dict(level=0.1), ValueError),  # not binary
        (torch.ones(4, 2, 3, dtype=torch.int64), dict(level=0.1), TypeError),
        (torch.ones(4, 6), dict(level=0.1), ValueError),  # not (T, n, d)
        (torch.ones(4, 2, 3), dict(level=1.5), ValueError),
        (torch.ones(4, 2, 3), dict(level=0.1, kind="blur"), ValueError),
        (
            torch.ones(4, 2, 3),
            dict(level=1.5, kind="jitter"),
            ValueError,
        ),  # steps must be whole
        (torch.ones(4, 2, 3), dict(level=-1, kind="jitter"), ValueError),
        ([[0.0]], dict(level=0.1), TypeError),
    ],
)
def test_corrupt_events_rejects_bad_input(bad, kw, err):
    with pytest.raises(err):
        fsnn.corrupt_events(bad, **kw)


def test_delayed_cue_task():
    x, y = fsnn.make_delayed_cue_events(32, d=20, steps=10, seed=0, background=0.0)
    assert x.shape == (10, 32, 20) and y.shape == (32,)
    assert not x[2:-2].any()  # silent between cue and go
    assert torch.equal(x[-1, 0], x[-1, 1])  # the same go for every class
    same = y == y[0]
    # cue = f(class)
    assert torch.equal(x[0, same], x[0, 0].expand(int(same.sum()), -1))
    with pytest.raises(ValueError):
        fsnn.make_delayed_cue_events(8, steps=4, cue_steps=2, go_steps=2)


def test_spiking_mlp_refuses_batch_first_and_wrong_width():
    model = fsnn.SpikingMLP(
        64, 8, 4, fsnn.FractionalLIF(0.8), steps=10, readout_steps=2
    )
    x, _ = fsnn.make_moving_bar_events(6, size=8, steps=10)
    assert model(x).shape == (6, 4) and 0 <= model.last_spike_rate <= 1
    with pytest.raises(ValueError, match="batch-first"):
        model(x.transpose(0, 1).contiguous())
    with pytest.raises(ValueError):
        model(x[..., :10])
    with pytest.raises(ValueError):
        fsnn.SpikingMLP(64, 8, 4, fsnn.FractionalLIF(0.8), steps=4, readout_steps=5)


def test_training_reduces_loss_and_accuracy_is_a_percentage():
    x, y = fsnn.make_delayed_cue_events(128, d=16, steps=6, seed=0)
    torch.manual_seed(0)
    model = fsnn.SpikingMLP(16, 16, 4, fsnn.FractionalLIF(0.6), steps=6)
    losses = fsnn.train_classifier(model, x, y, steps=40, batch=32, lr=1e-2, seed=0)
    assert len(losses) == 40 and sum(losses[-5:]) < sum(losses[:5])
    assert 0.0 <= fsnn.accuracy(model, x, y) <= 100.0
    with pytest.raises(ValueError):
        fsnn.train_classifier(model, x, y[:-1], steps=1, batch=4, lr=1e-2)
