"""Tests of iclr26.compmarkgs: quantization, the QDL, the Haar band, the keyed decoder,
the detection test, the HSV loss, FAG, the Scaffold scene and the exercise."""

import colorsys
import math

import pytest
import torch
from nbexercise import exercise_parts
from scipy import stats

import iclr26.splat as sp
from iclr26 import compmarkgs as cm


# ------------------------------------------------------------------ quantization
def test_quantization_error_is_bounded_and_uniform():
    g = torch.Generator().manual_seed(0)
    x = 7 * torch.randn(20000, generator=g, dtype=torch.float64)
    for step in (0.5, 1.0, 2.0):
        e = cm.quantize_uniform(x, step) - x
        assert e.abs().max() <= step / 2 + 1e-12
        # e / Δ + ½ ~ U(0, 1) when x is spread over many steps
        p = stats.kstest((e / step + 0.5).numpy(), "uniform").pvalue
        assert p > 1e-3
        assert abs(float(e.mean())) < 0.02 * step
        assert abs(float(e.var()) - step**2 / 12) < 0.05 * step**2 / 12


def test_quantization_is_idempotent_and_checks_input():
    x = torch.linspace(-3, 3, 101)
    q = cm.quantize_uniform(x, 0.7)
    assert torch.equal(cm.quantize_uniform(q, 0.7), q)
    with pytest.raises(ValueError):
        cm.quantize_uniform(x, 0.0)
    with pytest.raises(ValueError):
        cm.quantize_uniform(torch.tensor([float("nan")]), 1.0)
    with pytest.raises(TypeError):
        cm.quantize_uniform([1.0, 2.0], 1.0)
    with pytest.raises(TypeError):
        cm.quantize_uniform(torch.arange(3), 1.0)


# ---------------------------------------------------------------------- QDL
def test_qdl_modes_and_ranges():
    f = torch.randn(50, 8)
    g = torch.Generator().manual_seed(1)
    none = cm.QuantDistortionLayer(8, 1.0, "none").train()
    assert torch.equal(none(f, g)[0], f) and torch.equal(
        none(f)[1], torch.zeros_like(f)
    )
    fixed = cm.QuantDistortionLayer(8, 0.5, "fixed").train()
    ft, q = fixed(f, g)
    assert torch.all(q == 0.5) and (ft - f).abs().max() <= 0.25
    learned = cm.QuantDistortionLayer(8, 1.0, "learned").train()
    with torch.no_grad():  # move off the zero init so that q varies
        for p in learned.net.parameters():
            p.normal_(0, 3, generator=g)
    ft, q = learned(f, g)
    assert q.min() >= 0 and q.max() <= 2.0 and q.std() > 0.1
    assert ((ft - f).abs() <= q / 2 + 1e-6).all()
    learned.eval()
    assert torch.equal(learned(f)[0], f)  # no noise at test time
    with pytest.raises(ValueError):
        cm.QuantDistortionLayer(8, 1.0, "hac")
    with pytest.raises(ValueError):
        learned(torch.randn(3, 7))


def test_qdl_learned_starts_at_q0_and_gradients_reach_f_and_mlp():
    qdl = cm.QuantDistortionLayer(6, 1.0, "learned").train()
    f = torch.randn(20, 6, requires_grad=True)
    assert torch.allclose(qdl.step(f), torch.ones(20, 6))
    ft, q = qdl(f, torch.Generator().manual_seed(2))
    (ft**2).sum().backward()
    assert f.grad is not None and f.grad.abs().sum() > 0
    assert qdl.net[2].weight.grad.abs().sum() > 0  # the step MLP learns from the loss


# --------------------------------------------------------------- Haar LL band
def test_haar_ll_is_the_orthonormal_haar_low_band():
    x = torch.randn(2, 3, 8, 10, dtype=torch.float64)
    ll = cm.haar_ll(x)
    a, b = x[..., 0::2, 0::2], x[..., 0::2, 1::2]
    c, d = x[..., 1::2, 0::2], x[..., 1::2, 1::2]
    assert torch.allclose(ll, (a + b + c + d) / 2)
    # orthonormal: the LL band carries at most the image's energy
    assert (ll**2).sum() <= (x**2).sum()
    try:  # the official code's DWT, if installed
        from pytorch_wavelets import DWTForward
    except ImportError:
        return
    ref, _ = DWTForward(J=1, wave="haar", mode="symmetric").double()(x)
    assert torch.allclose(ll, ref, atol=1e-10)


def test_haar_ll_checks_input():
    with pytest.raises(ValueError):
        cm.haar_ll(torch.randn(1, 3, 7, 8))
    with pytest.raises(ValueError):
        cm.haar_ll(torch.randn(3, 8, 8))
    with pytest.raises(TypeError):
        cm.haar_ll(torch.zeros(1, 3, 8, 8, dtype=torch.long))


# ------------------------------------------------------------------- decoder
def _clean_images(n_scenes, size=16, start=0):
    ims = []
    for s in range(n_scenes):
        scene = sp.ProceduralScene.random(3, seed=start + s)
        ims.append(cm.make_views(scene, 6, size, azimuth_start=17 * s).images)
    return cm.image_to_ll(torch.cat(ims))


def test_whitened_decoder_is_standard_normal_on_held_out_clean_images():
    dec = cm.KeyedDecoder(8, seed=3, width=16).whiten(_clean_images(40))
    z = dec(_clean_images(40, start=500))  # other scenes than the whitening ones
    assert z.mean(0).abs().max() < 0.5
    cov = torch.cov(z.T)
    assert (cov.diagonal() - 1).abs().max() < 0.6
    assert (cov - torch.diag(cov.diagonal())).abs().max() < 0.5
    assert not any(p.requires_grad for p in dec.parameters())


def test_decoder_is_keyed():
    ll = torch.rand(4, 3, 8, 8)
    a, b = cm.KeyedDecoder(8, seed=5), cm.KeyedDecoder(8, seed=5)
    assert torch.equal(a(ll), b(ll))
    assert not torch.allclose(a(ll), cm.KeyedDecoder(8, seed=6)(ll))
    with pytest.raises(ValueError):
        a.whiten(torch.rand(8, 3, 8, 8))  # needs more images than bits
    with pytest.raises(ValueError):
        a(torch.rand(4, 1, 8, 8))


# ---------------------------------------------------------------- detection
def test_bit_pvalue_equals_scipy_binomial_tail():
    for L in (1, 8, 16, 48):
        for k in range(L + 2):
            assert cm.bit_pvalue(k, L) == pytest.approx(
                stats.binom.sf(k - 1, L, 0.5), rel=1e-12, abs=1e-15
            )
    assert cm.bit_pvalue(13, 16) == pytest.approx(0.0106, abs=1e-4)
    with pytest.raises(TypeError):
        cm.bit_pvalue(3.0, 16)
    with pytest.raises(ValueError):
        cm.bit_pvalue(18, 16)


def test_bit_accuracy_and_detect():
    bits = torch.tensor([1.0, 0, 1, 1])
    logits = torch.tensor([[2.0, -1, 3, -0.5], [1.0, 1, 1, 1]])
    assert cm.bit_accuracy(logits, bits) == pytest.approx(6 / 8)
    k, p = cm.detect(logits, bits)
    assert k == 4 and p == pytest.approx(1 / 16)  # mean logits 1.5, 0, 2, 0.25
    with pytest.raises(ValueError):
        cm.bit_accuracy(logits, torch.ones(3))


def test_detection_threshold():
    assert cm.detection_threshold(16, 0.011) == 13
    for L in (4, 16, 33):
        for alpha in (0.3, 0.05, 1e-3):
            k = cm.detection_threshold(L, alpha)
            assert k == L + 1 or cm.bit_pvalue(k, L) <= alpha
            assert k == 0 or cm.bit_pvalue(k - 1, L) > alpha


# ----------------------------------------------------------------- HSV, FAG
def test_rgb_to_hsv_matches_colorsys():
    x = torch.rand(200, 3, dtype=torch.float64)
    x[0] = torch.tensor([0.5, 0.5, 0.5])  # grey: hue 0, saturation 0
    x[1] = 0.0
    ref = torch.tensor(
        [colorsys.rgb_to_hsv(*r.tolist()) for r in x], dtype=torch.float64
    )
    assert torch.allclose(cm.rgb_to_hsv(x), ref, atol=1e-7)


def test_hsv_loss_is_zero_on_equal_images_and_has_gradients():
    gt = torch.rand(8, 8, 3)
    assert float(cm.hsv_masked_loss(gt, gt)) == 0
    img = gt.clone().requires_grad_(True)
    loss = cm.hsv_masked_loss(img * 0.8, gt)
    loss.backward()
    assert loss > 0 and img.grad.abs().sum() > 0
    grey = torch.full((4, 4, 3), 0.5)  # unsaturated: in no mask
    assert float(cm.hsv_masked_loss(grey * 0.5, grey)) == 0
    with pytest.raises(ValueError):
        cm.hsv_masked_loss(gt, gt[:4])


def test_highpass_and_fag_error_map():
    x = torch.rand(16, 16, dtype=torch.float64)
    assert torch.allclose(cm.highpass(x, 0.0), x)
    assert abs(float(cm.highpass(x, 0.1).mean())) < 1e-12  # the DC term is gone
    img = torch.rand(16, 16, 3, dtype=torch.float64)
    assert cm.highpass_ssim_error(img, img).abs().max() < 1e-9
    err = torch.zeros(4, 4)
    err[1, 2] = 0.2  # in (median + 0.1, median + 0.3)
    err[3, 3] = 0.9  # too large: FAG leaves the worst pixels out
    uv = torch.tensor([[2.5, 1.5], [3.5, 3.5], [0.5, 0.5], [-3.0, 1.0]])
    assert cm.frequency_aware_grow(err, uv).tolist() == [True, False, False, False]


# ------------------------------------------------------------ Scaffold scene
@pytest.fixture(scope="module")
def small():
    scene = sp.ProceduralScene.default()
    train = cm.make_views(scene, 6, 16)
    g = torch.Generator().manual_seed(0)
    model = cm.init_scene(scene, train, 24, feat_dim=8, n_offsets=3, generator=g)
    return scene, train, model


def test_scaffold_gaussians_shapes_and_gradients(small):
    _, train, model = small
    g = model.gaussians(train.cams[0])
    assert g.n == 24 * 3 and g.colors.shape == (72, 3)
    img = cm.render_image(model, train.cams[0])
    assert img.shape == (16, 16, 3)
    model.zero_grad()
    img.sum().backward()
    assert model.wm_feat.grad.abs().sum() > 0 and model.wm_pos.grad.abs().sum() > 0
    with pytest.raises(ValueError):
        model.gaussians(train.cams[0], feat=torch.zeros(5, 8))


def test_voxel_anchors():
    pts = torch.rand(500, 3, dtype=torch.float64)
    a = cm.voxel_anchors(pts, 0.25, 1000)
    assert len(a) <= 64 and (a >= 0).all() and (a <= 1).all()
    assert len(cm.voxel_anchors(pts, 0.25, 10)) == 10
    with pytest.raises(ValueError):
        cm.voxel_anchors(torch.rand(0, 3), 0.1, 5)


def test_compress_puts_features_on_the_grid_and_embed_leaves_base(small):
    _, train, model = small
    f, x = cm.compress(model, 0.5, pos_grid=0.1)
    assert torch.equal(f, 0.5 * torch.round(f / 0.5))
    assert torch.allclose(x, 0.1 * torch.round(x / 0.1))
    dec = cm.KeyedDecoder(4, seed=0, width=8).whiten(_clean_images(4, size=16))
    bits = cm.message_bits(4, 0)
    g = torch.Generator().manual_seed(0)
    before = model.wm_feat.detach().clone()
    m, qdl, hist = cm.embed(
        model, train, dec, bits, 3, mode="learned", lam=0.1, generator=g
    )
    assert len(hist) == 3 and torch.equal(model.wm_feat, before)
    assert not torch.equal(m.wm_feat, before)
    out = cm.evaluate(m, train, dec, bits)
    assert 0 <= out["acc"] <= 1 and out["logits"].shape == (6, 4)


def test_quantize_offsets_copies_and_rounds(small):
    _, _, model = small
    before = model.offsets.detach().clone()
    q = cm.quantize_offsets(model, 0.2)
    assert torch.equal(model.offsets, before)  # the input is left alone
    assert torch.allclose(q.offsets, 0.2 * torch.round(before / 0.2))
    assert torch.equal(q.feat, model.feat)
    for bad in (0.0, -1.0, float("nan"), "0.2"):
        with pytest.raises(ValueError):
            cm.quantize_offsets(model, bad)


def test_fit_scene_noise_free_mode(small):
    scene, train, _ = small
    g = torch.Generator().manual_seed(1)
    m = cm.init_scene(scene, train, 12, feat_dim=4, n_offsets=2, generator=g)
    start = m.feat.detach().clone()
    cm.fit_scene(m, train, 2, mode="none", generator=g)
    assert not torch.equal(m.feat, start)
    with pytest.raises(ValueError):
        cm.fit_scene(m, train, 1, mode="learned", generator=g)


# ------------------------------------------------------------------ exercise
def test_exercise_checker():
    stub, reference, ns = exercise_parts("09-compmarkgs", "my_threshold")
    assert ns.cm.check_detection_threshold(stub).status == "not done yet"
    assert ns.cm.check_detection_threshold(reference).status == "correct"

    def strict(L, alpha):  # P(X > k) instead of P(X >= k): one too small
        return cm.detection_threshold(L, alpha) - 1

    v = ns.cm.check_detection_threshold(strict)
    assert v.status == "wrong" and "tail" in v
    v = ns.cm.check_detection_threshold(lambda L, a: L + 1)
    assert v.status == "wrong" and "smallest" in v
    assert ns.cm.check_detection_threshold(lambda L, a: 0.5).status == "wrong"
    assert math.isfinite(cm.bit_pvalue(0, 3))


def test_correct_bits_raises_accuracy_by_the_gain():
    g = torch.Generator().manual_seed(0)
    bits = cm.message_bits(16, 1)
    logits = torch.randn(8, 16, generator=g)
    acc = cm.bit_accuracy(logits, bits)
    better = cm.correct_bits(logits, bits, 0.1, torch.Generator().manual_seed(2))
    # 0.1 of 128 entries, rounded up: 13 wrong entries flipped
    assert cm.bit_accuracy(better, bits) == pytest.approx(acc + 13 / 128)
    assert torch.equal(better.abs(), logits.abs())
    # never more than every wrong entry
    assert cm.bit_accuracy(cm.correct_bits(logits, bits, 1.0), bits) == 1.0
    with pytest.raises(ValueError, match="gain"):
        cm.correct_bits(logits, bits, 1.5)
    with pytest.raises(ValueError, match="bits"):
        cm.correct_bits(logits, bits[:3], 0.1)


def test_seeded_functions_do_not_depend_on_call_order_or_global_state(small):
    # a stage 2 and a keyed decoder depend on their generator or key only: the same
    # numbers in either order, with unrelated global draws between
    _, train, model = small
    bits = cm.message_bits(4, 0)
    dec = cm.KeyedDecoder(4, seed=0, width=8).whiten(_clean_images(4, size=16))

    def stage2():
        m, qdl, hist = cm.embed(
            model,
            train,
            dec,
            bits,
            2,
            lam=0.1,
            generator=torch.Generator().manual_seed(5),
        )
        return torch.cat([m.wm_feat.detach().flatten(), qdl.net[0].weight.flatten()])

    def key():
        return cm.KeyedDecoder(4, seed=7, width=8).head.weight.clone()

    torch.manual_seed(1)
    a1 = stage2()
    torch.rand(3)
    b1 = key()
    state = torch.get_rng_state()
    torch.manual_seed(2)
    b2 = key()
    torch.randn(4)
    a2 = stage2()
    assert torch.equal(a1, a2) and torch.equal(b1, b2)
    # and building a layer, a decoder or a scene leaves the global stream alone
    torch.set_rng_state(state)
    before = torch.rand(3)
    torch.set_rng_state(state)
    cm.QuantDistortionLayer(8, 1.0, "learned")
    cm.KeyedDecoder(4, seed=3, width=8)
    cm.ScaffoldScene(torch.rand(5, 3, generator=torch.Generator()), 0.2)
    assert torch.equal(torch.rand(3), before)
