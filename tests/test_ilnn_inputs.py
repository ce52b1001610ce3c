"""Bad inputs, step-controlled Karcher mean and PLFC variants for iclr26.ilnn."""

import math

import pytest
import torch

from iclr26 import ilnn as L

D64 = torch.float64


def test_plfc_rejects_points_off_the_hyperboloid():
    layer = L.PLFC(3, 2)
    x = L.lift(torch.randn(5, 3), 1.0)
    layer(x)  # on the sheet: fine
    with pytest.raises(ValueError, match="hyperboloid"):
        layer(x * 1.5)  # scaled: off the sheet
    with pytest.raises(ValueError, match="hyperboloid"):
        layer.logits(torch.cat([torch.ones(5, 1), torch.randn(5, 3)], -1))
    with pytest.raises(ValueError, match="upper sheet"):
        layer(-x)  # lower sheet


def test_plfc_accepts_far_points_in_float32():
    x = L.lift(torch.randn(64, 3) * 300.0, 1.0)  # x_0 ~ 500: rounding ~1e-2 abs
    assert torch.isfinite(L.PLFC(3, 2)(x)).all()


def test_dist_refuses_the_lower_sheet():
    x = L.lift(torch.randn(4, 3, dtype=D64), 1.0)
    with pytest.raises(ValueError, match="upper sheet"):
        L.dist(x, -x, 1.0)
    with pytest.raises(ValueError, match="upper sheet"):
        L.dist(-x, x, 1.0)


def test_lorentz_cnn_names_the_expected_shape():
    net = L.LorentzCNN(4)
    with pytest.raises(ValueError, match=r"\(B, 1, H, W\)"):
        net(torch.randn(3, 64))
    assert net(torch.randn(3, 1, 8, 8)).shape == (3, 10)


def test_tree_data_types():
    with pytest.raises(TypeError, match="branching must be an int"):
        L.tree_data(2.5)
    with pytest.raises(TypeError, match="depth"):
        L.tree_data(3, "4")
    with pytest.raises(ValueError, match="noise"):
        L.tree_data(3, 2, noise=-1.0)
    with pytest.raises(ValueError):
        L.tree_data(1, 2)
    x, y = L.tree_data(2, 3, dim=4, per_leaf=2)
    assert x.shape == (16, 4) and y.max() == 7


@pytest.mark.parametrize("k", [1.0, 3.0])
@pytest.mark.parametrize("spread", [1.0, 2.0])
def test_karcher_mean_converges_on_spread_float32_batches(k, spread):
    # The former unit-step iteration went to NaN on these batches within 30 steps.
    g = torch.Generator().manual_seed(0)
    x = L.expmap0(torch.randn(512, 8, generator=g) * spread / math.sqrt(k) + 0.5, k)
    mu, steps = L.karcher_mean(x, k, tol=1e-4, return_steps=True)
    assert torch.isfinite(mu).all() and 1 <= steps < 200
    grad = L.logmap0(L.boost_to_origin(mu, x, k), k).mean(0).norm()
    spread_rms = L.dist0(L.boost_to_origin(mu, x, k), k).pow(2).mean().sqrt()
    assert grad <= 1e-4 * (1 + spread_rms) * 1.0001


def test_karcher_mean_raises_when_it_cannot_converge():
    x = L.lift(torch.randn(64, 4, dtype=D64) * 2, 1.0)
    with pytest.raises(RuntimeError, match="did not converge"):
        L.karcher_mean(x, 1.0, tol=1e-14, max_iters=2)
    # fixed budget: no raise
    mu, steps = L.karcher_mean(x, 1.0, iters=2, return_steps=True)
    assert steps <= 2
    with pytest.raises(ValueError):
        L.karcher_mean(x, 1.0, iters=-1)
    with pytest.raises(RuntimeError, match="non-finite"):
        L.karcher_mean(x * float("nan"), 1.0)


def test_karcher_mean_matches_geoopt_style_first_order_condition_float64():
    x = L.lift(torch.randn(100, 3, dtype=D64) * 1.5, 0.5)
    mu = L.karcher_mean(x, 0.5, tol=1e-12)
    assert L.logmap0(L.boost_to_origin(mu, x, 0.5), 0.5).mean(0).abs().max() < 1e-11


def test_plfc_unit_gain_is_sinh_of_distance():
    k = 0.8
    layer = L.PLFC(4, 3, k, gyro_bias=False, gain="unit").double()
    with torch.no_grad():
        layer.U.mul_(3.0), layer.a.normal_()
    x = L.lift(torch.randn(20, 4, dtype=D64), k)
    d = L.signed_distance(x, layer.normals(), k)
    assert torch.allclose(
        layer(x)[:, 1:], torch.sinh(math.sqrt(k) * d) / math.sqrt(k), atol=1e-10
    )
    with pytest.raises(ValueError, match="gain"):
        L.PLFC(4, 3, gain="l2")


def test_lbn_dispersion_and_gyrobn_iters_validated():
    with pytest.raises(ValueError, match="dispersion"):
        L.LorentzBatchNorm(3, dispersion="median")
    with pytest.raises(ValueError, match="karcher_iters"):
        L.GyroBN(3, karcher_iters=0)
    bn = L.GyroBN(3, karcher_iters=None)
    assert bn(L.lift(torch.randn(32, 3), 1.0)).shape == (32, 4)


def test_lorentz_mlp_ablation_options():
    x = torch.randn(16, 6)
    for kw in (
        {},
        {"head": "lfc"},
        {"head": "flat"},
        {"bn": "lbn"},
        {"variant": "hcnn"},
    ):
        assert L.LorentzMLP(6, 8, 2, 5, **kw)(x).shape == (16, 5)
    with pytest.raises(ValueError, match="head"):
        L.LorentzMLP(6, 8, 2, 5, head="mlr")
    with pytest.raises(ValueError, match="bn"):
        L.LorentzMLP(6, 8, 2, 5, bn="layer")
    with pytest.raises(ValueError, match="variant"):
        L.LorentzMLP(6, 8, 2, 5, variant="poincare")
    with pytest.raises(ValueError, match=r"\(B, 6\)"):
        L.LorentzMLP(6, 8, 2, 5)(torch.randn(16, 7))


def test_flat_head_is_plfc_logits_in_the_euclidean_limit():
    k = 1e-8
    plfc, flat = L.PLFC(3, 4, k).double(), L.FlatHead(3, 4).double()
    with torch.no_grad():
        plfc.a.normal_()
        flat.U.copy_(plfc.U), flat.a.copy_(plfc.a)
    x = L.lift(torch.randn(10, 3, dtype=D64), k)
    assert torch.allclose(plfc.logits(x), flat.logits(x), atol=1e-5)


def test_device_follows_inputs_meta():
    # shapes and devices propagate without host-only allocations (meta tensors
    # have no data)
    mu = L.origin(3, 1.0, device="meta")
    assert mu.device.type == "meta"
