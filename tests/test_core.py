import random

import numpy as np
import pytest
import torch

from iclr26 import get_device, progress, scale_preset, seed_everything, use_book_style


def test_get_device_default_and_named():
    dev = get_device()
    assert isinstance(dev, torch.device)
    if not torch.cuda.is_available():
        assert dev.type in ("cpu", "mps")
    assert get_device("cpu") == torch.device("cpu")
    assert get_device(torch.device("cpu")) == torch.device("cpu")


def test_get_device_errors():
    with pytest.raises(TypeError):
        get_device(3)
    with pytest.raises(ValueError, match="unknown device"):
        get_device("toaster")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            get_device("cuda")


def test_seed_everything_seeds_all_three():
    seed_everything(7)
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    g = seed_everything(7)
    b = (random.random(), np.random.rand(), torch.rand(1).item())
    assert a == b
    assert torch.equal(
        torch.rand(3, generator=g),
        torch.rand(3, generator=torch.Generator().manual_seed(7)),
    )


@pytest.mark.parametrize(
    "bad,err",
    [(1.5, TypeError), (True, TypeError), (-1, ValueError), (2**32, ValueError)],
)
def test_seed_everything_rejects(bad, err):
    with pytest.raises(err):
        seed_everything(bad)


def test_scale_preset():
    cfg = scale_preset("ci", ci=dict(n=8, steps=10), full=dict(n=100, steps=1000))
    assert (cfg.n, cfg.steps, cfg.scale) == (8, 10, "ci")
    assert scale_preset("full", ci=dict(n=8), full=dict(n=100)).n == 100


def test_scale_preset_errors_name_the_valid_scales():
    with pytest.raises(ValueError, match="'ci', 'full'"):
        scale_preset("huge", ci=dict(n=8), full=dict(n=100))
    with pytest.raises(ValueError, match="same keys"):
        scale_preset("ci", ci=dict(n=8), full=dict(m=100))
    with pytest.raises(TypeError):
        scale_preset(None, ci=dict(n=8))
    with pytest.raises(TypeError):
        scale_preset("ci", ci=[1, 2])


def test_progress_is_quiet_when_asked(monkeypatch):
    monkeypatch.setenv("ICLR26_PROGRESS", "0")
    bar = progress(range(3))
    assert bar.disable and list(bar) == [0, 1, 2]


def test_use_book_style_sets_palette():
    import matplotlib as mpl

    use_book_style()
    assert mpl.rcParams["axes.spines.top"] is False
