"""Chapter 08 (PaAno): loss variants, bad inputs, TSB-AD's protocol, the real series,
and the transformer comparison. Fast (seconds)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclr26.paano import (
    LOSSES,
    PaAno,
    PaAnoConfig,
    TransformerPatchEncoder,
    find_length_rank,
    load_daphnet_s06r02e0,
    load_kdd_tsad_135,
    make_synthetic_series,
    triplet_hardest_negative,
    tsb_ad_baseline,
    vus_pr,
    vus_pr_reference,
)
from iclr26.paano.evaluate import _acf

TINY = PaAnoConfig(
    patch_len=16,
    channels=(4, 8),
    kernels=(5, 3),
    proj_dim=8,
    batch_size=32,
    iters=20,
    lr=1e-3,
    bank_min=20,
    k=3,
)


def _series():
    return make_synthetic_series(0, n_train=300, n_test=600, period=10, length=(5, 10))


# --------------------------------------------------------------------------- the losses


def _hand_triplet(za, zp, m, pick):
    """The definition, one anchor at a time."""
    out = []
    for i in range(len(za)):
        d = [1 - F.cosine_similarity(za[i], zp[j], dim=0) for j in range(len(zp))]
        neg = [d[j] for j in range(len(zp)) if j != i]
        out.append(torch.relu(d[i] - pick(torch.stack(neg)) + m))
    return torch.stack(out).mean()


def test_triplet_variants_match_hand_computation():
    g = torch.Generator().manual_seed(3)
    za, zp = (
        torch.randn(7, 5, generator=g, dtype=torch.float64),
        torch.randn(7, 5, generator=g, dtype=torch.float64),
    )
    for m in (0.5, 1.5):
        assert torch.allclose(
            triplet_hardest_negative(za, zp, m, "hardest"),
            _hand_triplet(za, zp, m, torch.min),
        )
        assert torch.allclose(
            triplet_hardest_negative(za, zp, m, "farthest"),
            _hand_triplet(za, zp, m, torch.max),
        )


def test_official_triplet_is_identically_zero_with_zero_gradient():
    za = torch.randn(9, 4, dtype=torch.float64, requires_grad=True)
    # positives equal anchors: a "hard" case
    zp = za.detach().clone().requires_grad_(True)
    loss = triplet_hardest_negative(za, zp, 2.0, "official")
    assert loss.item() == 0.0
    loss.backward()
    assert za.grad.abs().max() == 0 and zp.grad.abs().max() == 0
    with pytest.raises(ValueError):
        triplet_hardest_negative(za, zp, 0.5, "self")


def test_every_loss_option_trains_and_official_stops_at_the_pretext_phase():
    s = _series()
    for loss in LOSSES:
        m = PaAno(dataclasses.replace(TINY, loss=loss)).fit(s.x_train, seed=0)
        assert np.isfinite(m.history).all() and m.score(s.x_test).shape == (600,)
        if loss == "official":
            # λ > 0 at steps 0, 1 (λ = 1 − it/2), then the loss is exactly 0 and
            # training stops
            assert (
                len(m.history) == 3 and m.history[-1] == 0.0 and min(m.history[:2]) > 0
            )
        else:
            assert len(m.history) == TINY.iters
    # pretext only: the triplet term is off, so the loss is λ·L_pre with λ = 1
    # at every step
    m = PaAno(dataclasses.replace(TINY, loss="pretext")).fit(s.x_train, seed=0)
    assert min(m.history) > 0.1  # BCE of two terms, never near the triplet's m/μ scale


# --------------------------------------------------------------------------- bad inputs


def test_nan_in_training_or_test_series_is_a_clear_error():
    s = _series()
    x = s.x_train.copy()
    x[10, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PaAno(TINY).fit(x, seed=0)
    m = PaAno(TINY).fit(s.x_train, seed=0, train=False)
    xt = s.x_test.copy()
    xt[100, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        m.score(xt)


@pytest.mark.parametrize(
    "field,value,err",
    [
        ("shift", 0, ValueError),
        ("batch_size", 1, ValueError),
        ("patch_len", 16.0, TypeError),
        ("iters", 0, ValueError),
        ("loss", "margin", ValueError),
        ("encoder", "rnn", ValueError),
        ("lr", 0.0, ValueError),
        ("pretext_frac", 0.0, ValueError),
        ("k", True, TypeError),
    ],
)
def test_bad_config_is_refused(field, value, err):
    with pytest.raises(
        err, match=field if field not in ("lr", "pretext_frac") else None
    ):
        dataclasses.replace(TINY, **{field: value})


# -------------------------------------------------------------------- TSB-AD's protocol


def test_acf_matches_its_definition_and_window_finds_the_period():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(300)
    xc = x - x.mean()
    want = np.array([np.dot(xc[: 300 - k], xc[k:]) for k in range(21)]) / np.dot(xc, xc)
    assert np.allclose(_acf(x, 20), want)
    t = np.arange(3000)
    for period in (25, 50, 120):
        y = np.sin(2 * np.pi * t / period) + 0.1 * rng.standard_normal(3000)
        assert abs(find_length_rank(y) - period) <= 1
    # noise: some lag, or the 125 default
    assert find_length_rank(rng.standard_normal(3000)) >= 3
    with pytest.raises(ValueError):
        find_length_rank(np.zeros((100, 2)))
    with pytest.raises(ValueError):
        find_length_rank(y, rank=4)


def test_tsb_ad_baselines_shapes_padding_and_errors():
    s = _series()
    x = np.concatenate([s.x_train, s.x_test])
    for name in (
        "Sub_IForest",
        "Sub_LOF",
        "Sub_KNN",
        "IForest",
        "LOF",
        "KNN",
        "Random",
    ):
        sc = tsb_ad_baseline(name, x, seed=0)
        assert sc.shape == (900,) and np.isfinite(sc).all()
    w = find_length_rank(x[:, 0])
    sc = tsb_ad_baseline("Sub_IForest", x)
    assert (
        sc[: (w - 1 + 1) // 2] == sc[0]
    ).all()  # TSB-AD's padding repeats the first score
    mts = make_synthetic_series(
        0, n_train=300, n_test=600, period=10, n_channels=3, length=(5, 10)
    )
    assert tsb_ad_baseline("LOF", mts.x_test).shape == (600,)
    with pytest.raises(ValueError):
        tsb_ad_baseline("Sub_LOF", mts.x_test)
    with pytest.raises(ValueError):
        tsb_ad_baseline("OCSVM", x)
    bad = x.copy()
    bad[5] = np.nan
    with pytest.raises(ValueError):
        tsb_ad_baseline("IForest", bad)


def test_random_score_is_near_the_floor():
    s = _series()
    assert vus_pr(tsb_ad_baseline("Random", s.x_test, seed=1), s.y_test, 10) < 0.3


# ---------------------------------------------------------------------- the real series


def test_real_series_from_aeons_wheel():
    s = load_kdd_tsad_135()
    assert s.x_train.shape == (1200, 1) and s.x_test.shape == (7501, 1)
    assert s.y_test.sum() == 12 and s.segments == [(4187, 4199, "UCR")]
    x, y = load_daphnet_s06r02e0()
    # aeon 1.6.0's excerpt has no labelled event
    assert x.shape == (7040, 9) and y.sum() == 0


# -------------------------------------------------------------- the transformer encoder


def test_transformer_encoder_interface_and_affine_invariance():
    torch.manual_seed(0)
    enc = TransformerPatchEncoder(2, patch_len=16, proj_dim=8).double().eval()
    p = torch.randn(5, 2, 16, dtype=torch.float64)
    h = enc.embed(p)
    assert h.shape == (5, enc.dim) and enc.project(h).shape == (5, 8)
    assert (enc.embed(2.0 * p + 3.0) - h).abs().max() < 1e-4
    with pytest.raises(ValueError):
        enc.embed(torch.randn(5, 2, 17, dtype=torch.float64))
    cnn = PaAno(TINY).n_parameters()
    tr = PaAno(dataclasses.replace(TINY, encoder="transformer")).n_parameters()
    assert tr > cnn
    s = _series()
    m = PaAno(dataclasses.replace(TINY, encoder="transformer", iters=3)).fit(
        s.x_train, seed=0
    )
    assert m.score(s.x_test).shape == (600,)


def test_vectorised_vus_pr_equals_tsb_ad_code():
    """vus_pr replaces TSB-AD's threshold loop by prefix sums: the same number, to 1e-9,
    on random and tied scores, anomalies at both ends, and windows from 0 to 60."""
    rng = np.random.default_rng(0)
    for trial in range(10):
        n = int(rng.integers(150, 900))
        y = np.zeros(n, int)
        for _ in range(int(rng.integers(1, 5))):
            a = int(rng.integers(0, n - 5))
            y[a : a + int(rng.integers(1, 40))] = 1
        if trial == 0:
            y[:3], y[-2:] = 1, 1  # ranges touching both ends
        sc = rng.random(n) if trial % 3 else np.round(rng.random(n) * 5)  # ties
        sc = sc + 2 * y * rng.random(n) * (trial % 2)
        w = int(rng.integers(0, 60))
        assert abs(vus_pr(sc, y, w) - vus_pr_reference(sc, y, w)) < 1e-9


# ------------------------------------------------ bad inputs found by the second review


def test_metric_inputs_fail_clearly():
    y = np.zeros(300, int)
    y[100:110] = 1
    sc = np.random.default_rng(0).random(300)
    for bad_window in (2.7, True):
        with pytest.raises(TypeError, match="window"):
            vus_pr(sc, y, bad_window)
    with pytest.raises(ValueError, match="window"):
        vus_pr(sc, y, 300)  # a buffer as long as the series
    with pytest.raises(ValueError, match="thre"):
        vus_pr(sc, y, 10, thre=1)
    with pytest.raises(ValueError, match="1-D"):
        vus_pr(np.stack([sc, sc], 1), np.stack([y, y], 1), 10)
    with pytest.raises(ValueError, match="normal step"):
        vus_pr(sc, np.ones(300, int), 10)


def test_scoring_refuses_nan():
    from iclr26.paano import knn_cosine_score, patch_scores_to_points

    with pytest.raises(ValueError, match="NaN"):
        patch_scores_to_points(torch.tensor([1.0, float("nan"), 2.0]), 4, 2)
    with pytest.raises(ValueError, match="finite"):
        knn_cosine_score(torch.tensor([[float("nan"), 1.0]]), torch.ones(3, 2), k=1)
    with pytest.raises(ValueError, match="all-zero"):
        knn_cosine_score(torch.ones(2, 2), torch.tensor([[1.0, 0.0], [0.0, 0.0]]), k=1)


def test_generator_and_config_inputs_fail_clearly():
    with pytest.raises(ValueError, match="noise"):
        make_synthetic_series(0, n_train=300, n_test=600, period=10, noise=float("nan"))
    with pytest.raises(ValueError, match="period"):
        make_synthetic_series(0, n_train=300, n_test=600, period=0)
    with pytest.raises(ValueError, match="at least one anomaly"):
        make_synthetic_series(0, n_train=300, n_test=600, period=10, kinds=[])
    with pytest.raises(TypeError, match="n_channels"):
        make_synthetic_series(0, n_train=300, n_test=600, period=10, n_channels=2.0)
    for bad in (
        dict(lr=float("inf")),
        dict(kernels=(0, 3)),
        dict(channels="ab"),
        dict(channels=(-4, 8)),
    ):
        with pytest.raises(ValueError):
            dataclasses.replace(TINY, **bad)
    with pytest.raises(ValueError, match="in_ch"):
        PaAno(TINY, in_ch=1.5)
    with pytest.raises(TypeError, match="seed"):
        PaAno(TINY).fit(_series().x_train, seed=1.7)


def test_farthest_variant_scales_the_triplet_gradient():
    """0e93e93's triplet_grad, as detector.py writes it: the same value, 0.01 x the
    gradient."""
    torch.manual_seed(0)
    za = torch.randn(8, 4, requires_grad=True)
    zp = torch.randn(8, 4)
    l = triplet_hardest_negative(za, zp, 0.5, "farthest")
    scaled = l.detach() + (l - l.detach()) * 0.01
    (g1,) = torch.autograd.grad(l, za, retain_graph=True)
    (g2,) = torch.autograd.grad(scaled, za)
    assert torch.allclose(scaled, l) and torch.allclose(g2, 0.01 * g1)
