"""Unit tests of iclr26.world_model_3wm: the world, geometry, tokens, the
pointer-content GPT, the pathways and the exercise's check function."""

from __future__ import annotations

import itertools

import pytest
import torch
from nbexercise import exercise_parts

from iclr26 import world_model_3wm as wm3


@pytest.fixture(scope="module")
def batch():
    return wm3.make_tabletop_batch(64, 16, seed=3)


def test_batch_shapes_and_ranges(batch):
    assert batch["rgb0"].shape == (64, 3, 16, 16) == batch["rgb1"].shape
    assert batch["flow"].shape == (64, 16, 16) == batch["depth"].shape
    assert 0 <= batch["rgb0"].min() and batch["rgb0"].max() <= 1
    assert (batch["depth"] > 0).all() and batch["depth"].max() <= 10.0 + 1e-5
    cam = batch["kind"] == 0
    assert (batch["cam"][~cam] == 0).all() and (batch["cam"][cam] != 0).all()
    # object moves: flow only on the moved object, equal to its shift
    obj = ~cam
    m = batch["obj_mask0"][obj]
    u = batch["flow"][obj]
    assert torch.allclose(u, m * batch["shift"][obj, None, None], atol=1e-5)


def test_batch_is_seeded():
    a = wm3.make_tabletop_batch(4, 16, seed=7)
    b = wm3.make_tabletop_batch(4, 16, seed=7)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_camera_flow_is_pinhole(batch):
    cam = batch["kind"] == 0
    f = wm3.scene_constants(16)["f"]
    want = f * batch["cam"][cam, None, None] / batch["depth"][cam]
    assert torch.allclose(batch["flow"][cam], want, atol=1e-4)


@pytest.mark.parametrize(
    "kw", [dict(n=0), dict(n_obj=0), dict(n_obj=7), dict(checker=-1.0)]
)
def test_batch_rejects_bad_input(kw):
    args = dict(n=2, H=16)
    args.update(kw)
    with pytest.raises(ValueError):
        wm3.make_tabletop_batch(**args)


def test_depth_flow_round_trip():
    Z = torch.rand(5, 7, dtype=torch.float64) * 6 + 1
    t = torch.tensor([0.3, -0.5, 0.6, -0.4, 0.2], dtype=torch.float64)[:, None]
    u = wm3.flow_from_depth(Z, t, 16.0)
    assert torch.allclose(wm3.depth_from_flow(u, t, 16.0), Z, rtol=1e-12)


def test_depth_from_flow_errors():
    with pytest.raises(ValueError):
        wm3.depth_from_flow(torch.zeros(3), 0.5, 16.0)
    with pytest.raises(ValueError):
        wm3.depth_from_flow(torch.ones(3), 0.0, 16.0)
    with pytest.raises(ValueError):
        wm3.flow_from_depth(torch.tensor([1.0, -1.0]), 0.5, 16.0)
    with pytest.raises(ValueError):
        wm3.depth_from_flow(torch.tensor([float("nan")]), 0.5, 16.0)
    with pytest.raises(TypeError):
        wm3.depth_from_flow([1.0], 0.5, 16.0)


def test_abs_rel_median_alignment():
    gt = torch.rand(3, 16) + 1
    assert wm3.abs_rel(2.5 * gt, gt).abs().max() < 1e-6
    assert (wm3.abs_rel(2.5 * gt, gt, median_align=False) > 1).all()
    with pytest.raises(ValueError):
        wm3.abs_rel(gt, gt[:, :4])


def test_disparity_round_trip():
    d = torch.rand(10, dtype=torch.float64) * 50 + 1
    Z = wm3.depth_from_disparity(d, 995.0, 193.0, 31.0)
    assert torch.allclose(wm3.disparity_from_depth(Z, 995.0, 193.0, 31.0), d)


def test_forward_warp_zbuffer_and_holes():
    img = torch.arange(6.0).reshape(1, 1, 6)
    u = torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])
    depth = torch.tensor([[5.0, 5.0, 1.0, 5.0, 5.0, 5.0]])
    out, filled = wm3.forward_warp(img, u, depth)
    assert out[0, 0, 3] == 2.0  # the near pixel wins the collision
    assert not filled[0, 2]  # and leaves a hole behind it


def test_block_matching_finds_shifts():
    b = wm3.make_tabletop_batch(16, 16, seed=1)
    img = b["rgb0"]
    shifted = wm3.shift_rows(img, -2.0)  # content moves right by 2 px
    u = wm3.block_matching_flow(img, shifted, 4)
    inner = u.reshape(16, 4, 4)[:, :, :3]  # the last column leaves the frame
    assert (inner == 2.0).float().mean() > 0.8


def test_cut_and_paste_moves_the_object(batch):
    obj = batch["kind"] == 1
    rgb0, m0 = batch["rgb0"][obj], batch["obj_mask0"][obj]
    out = wm3.cut_and_paste(rgb0, m0, batch["shift"][obj])
    hits = wm3.manipulation_hits(out, {k: v[obj] for k, v in batch.items()})
    assert hits.float().mean() > 0.9


def test_quantizer_locality_and_round_trip(batch):
    pq = wm3.PatchQuantizer(32, 4).fit(batch["rgb0"])
    codes = pq.encode(batch["rgb0"][:4])
    edited = batch["rgb0"][:4].clone()
    edited[:, :, 4:8, 8:12] = torch.rand(4, 3, 4, 4)  # one patch: index 1 * 4 + 2
    diff = pq.encode(edited) != codes
    assert not diff[:, [i for i in range(16) if i != 6]].any()
    dec = pq.decode(codes, 16)
    assert dec.shape == (4, 3, 16, 16)
    assert torch.equal(pq.encode(dec), codes)  # a decoded patch is its own code
    x = torch.rand(2, 3, 8, 8)
    assert torch.equal(wm3.unpatchify(wm3.patchify(x, 4), 4, 8), x)


def test_bins_round_trip():
    fq = wm3.FlowQuantizer()
    centres = fq.decode(torch.arange(fq.n))
    assert torch.equal(fq.encode(centres), torch.arange(fq.n))
    assert fq.step == 0.5
    cq = wm3.CameraQuantizer()
    from iclr26.world_model_3wm.world import CAMERA_STEPS

    for t in CAMERA_STEPS:  # every camera step is a bin centre
        k = cq.encode(torch.tensor([t, -t]))
        assert torch.allclose(cq.decode(k), torch.tensor([t, -t]), atol=1e-6)


@pytest.fixture(scope="module")
def tiny():
    lay = wm3.Layout(N=4, K=8, nf=5, nc=3)
    torch.manual_seed(0)
    return wm3.PointerContentGPT(lay, d=16, L=2, heads=2).eval()


def _values(lay, B, g):
    lo, hi = lay.value_range().T
    return lo + (torch.rand(B, lay.n_nodes, generator=g) * (hi - lo)).long()


def test_causal_mask(tiny):
    lay = tiny.layout
    g = torch.Generator().manual_seed(0)
    v = _values(lay, 3, g)
    order = wm3.random_orders(3, lay.n_nodes, g)
    vs = v.gather(1, order)
    base = tiny(vs, order)
    k = 5
    vs2 = vs.clone()
    lo, hi = lay.value_range()[order[:, k:]].unbind(-1)
    vs2[:, k:] = lo + (vs[:, k:] - lo + 1) % (hi - lo)  # change every later value
    out = tiny(vs2, order)
    # step j reads values before j: steps up to k are unchanged
    assert torch.allclose(base[:, : k + 1], out[:, : k + 1], atol=1e-6)
    assert not torch.allclose(base[:, k + 1 :], out[:, k + 1 :])


def test_logits_respect_node_types(tiny):
    lay = tiny.layout
    g = torch.Generator().manual_seed(1)
    order = wm3.random_orders(2, lay.n_nodes, g)
    v = _values(lay, 2, g).gather(1, order)
    logits = tiny(v, order)
    rng = lay.value_range()[order]
    finite = torch.isfinite(logits)
    idx = torch.arange(lay.vocab)
    assert torch.equal(finite, (idx >= rng[..., :1]) & (idx < rng[..., 1:]))


def test_generate_keeps_conditioning_and_ignores_padding(tiny):
    lay = tiny.layout
    g = torch.Generator().manual_seed(2)
    v = _values(lay, 4, g)
    cond = torch.zeros(4, lay.n_nodes, dtype=torch.bool)
    cond[:, lay.rgb0()] = True
    cond[0, lay.cam()] = True  # rows give different numbers of nodes
    query = lay.rgb1()
    out = tiny.generate(v, cond, query)
    assert torch.equal(out[cond], v[cond])
    rng = lay.value_range()
    assert ((out[:, query] >= rng[query, 0]) & (out[:, query] < rng[query, 1])).all()
    # values of nodes that are not given must not matter
    v2 = v.clone()
    v2[~cond] = rng[:, 0].expand(4, -1)[~cond]
    assert torch.equal(tiny.generate(v2, cond, query)[:, query], out[:, query])
    # a row padded on the left generates what it generates alone
    alone = tiny.generate(v[1:2], cond[1:2], query)
    assert torch.equal(alone[:, query], out[1:2, query])
    with pytest.raises(ValueError):
        tiny.generate(v, cond, lay.rgb0())


def test_loss_is_finite_and_trains(tiny):
    lay = wm3.Layout(N=4, K=8, nf=5, nc=3)
    model = wm3.PointerContentGPT(lay, d=16, L=1, heads=2)
    g = torch.Generator().manual_seed(3)
    tokens = _values(lay, 16, g)
    losses = wm3.train(model, tokens, steps=60, batch=16, lr=1e-2, seed=0)
    assert all(torch.isfinite(torch.tensor(losses)))
    assert sum(losses[-10:]) < sum(losses[:10])


def test_chain_rule_any_order():
    g = torch.Generator().manual_seed(0)
    p = torch.rand(2, 3, 2, generator=g, dtype=torch.float64)
    p /= p.sum()
    for sigma in itertools.permutations(range(3)):
        q = wm3.chain_rule_product(p, sigma)
        assert torch.allclose(q, p, atol=1e-12)


def test_stereo_pair_geometry():
    d = wm3.load_stereo_motorcycle(4)
    assert (
        d["left"].shape == d["right"].shape and d["disp"].shape == d["left"].shape[1:]
    )
    warp, ident, filled = wm3.stereo_warp_gain(d["left"], d["right"], d["disp"])
    assert warp > ident + 5 and filled > 0.5
    wrong, ident2, _ = wm3.stereo_warp_gain(d["left"], d["right"], -d["disp"])
    assert wrong < ident2  # the wrong direction is worse than not warping


def test_exercise_check():
    stub, reference, ns = exercise_parts("11-3wm", "my_depth_from_flow")
    check = ns.wm3.check_depth_from_flow
    assert check(stub).status == "not done yet"
    assert check(reference).status == "correct"
    wrong = lambda u, t, f: f * t / u.abs()
    assert check(wrong).status == "wrong"
    assert check(lambda u, t, f: f / u.abs()).status == "wrong"


@pytest.fixture(scope="module")
def tiny_wm():
    train = wm3.make_tabletop_batch(96, 16, seed=11)
    return wm3.fit_world_model(train, n_codes=16, d=16, L=1, steps=2, batch=8), train


def test_depth_pathways_without_the_image(tiny_wm, batch):
    wm, train = tiny_wm
    cam = {k: v[batch["kind"] == 0][:8] for k, v in batch.items()}
    for image in ("own", "none", "other"):
        z = wm3.pathway_depth(wm, cam, image)
        assert z.shape == (8, 16) and (z > 0).all() and torch.isfinite(z).all()
    with pytest.raises(ValueError, match="image must be"):
        wm3.pathway_depth(wm, cam, "shuffled")
    # the no-model rule: with a prior equal to the true per-patch depth it is the
    # quantized true flow, i.e. the flow bins' floor
    gt = wm3.patch_depth(cam["depth"], wm.P)
    floor = wm3.depth_from_true_flow_tokens(wm, cam)
    assert floor.shape == gt.shape and wm3.abs_rel(floor, gt).mean() < 0.2
    z_prior = wm3.depth_from_prior_flow(wm, cam, wm3.layout_prior(train, wm.P))
    assert z_prior.shape == gt.shape and (z_prior > 0).all()


def test_flow_range_is_a_parameter():
    train = wm3.make_tabletop_batch(32, 16, seed=12)
    wm = wm3.fit_world_model(
        train, n_codes=8, d=16, L=1, steps=1, batch=4, flow_bins=65, flow_lim=16.0
    )
    assert wm.fq.n == 65 and wm.fq.lim == 16.0 and wm.layout.nf == 65
    assert wm.fq.step == 0.5


def test_geometry_refuses_bad_input():
    u = torch.full((2, 4), 2.0)
    t = torch.tensor([[0.3], [-0.4]])
    with pytest.raises(ValueError, match="f must be > 0"):
        wm3.depth_from_flow(u, t, -16.0)
    with pytest.raises(ValueError, match="f must be finite"):
        wm3.depth_from_flow(u, t, float("nan"))
    with pytest.raises(ValueError, match="NaN"):
        wm3.depth_from_flow(u, torch.tensor([[float("nan")], [0.3]]), 16.0)
    with pytest.raises(ValueError, match="must broadcast"):
        wm3.depth_from_flow(u, torch.tensor([0.3, -0.4]), 16.0)  # (2,), not (2, 1)
    with pytest.raises(ValueError, match="NaN"):
        wm3.depth_from_flow(torch.full((2, 4), float("nan")), t, 16.0)
    with pytest.raises(ValueError, match="f must be > 0"):
        wm3.flow_from_depth(u, t, 0.0)
    img = torch.rand(2, 3, 4, 4)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        wm3.psnr(255 * img, 255 * img.flip(0))
    with pytest.raises(TypeError, match="floating"):
        wm3.psnr(img.long(), img.long())
    assert torch.isfinite(wm3.psnr(img, img.flip(0))).all()


def test_seeded_functions_do_not_depend_on_call_order():
    """The world and the model in both orders, with an unrelated global draw between:
    the same numbers (nothing in the package reads or sets global random state)."""
    train = wm3.make_tabletop_batch(64, 8, seed=5)

    def fit():
        return wm3.fit_world_model(train, n_codes=16, d=16, L=1, steps=3, batch=4)

    a_w = wm3.make_tabletop_batch(8, 8, seed=9)
    a_m = fit()
    torch.randn(11)  # an unrelated global draw
    b_m = fit()
    torch.rand(3)
    b_w = wm3.make_tabletop_batch(8, 8, seed=9)
    assert all(torch.equal(a_w[k], b_w[k]) for k in a_w)
    for p, q in zip(a_m.model.parameters(), b_m.model.parameters()):
        assert torch.equal(p, q)
    assert a_m.losses == b_m.losses


def test_training_in_steps_equals_training_at_once():
    train = wm3.make_tabletop_batch(64, 8, seed=5)
    kw = dict(n_codes=16, d=16, L=1, steps=6, batch=4, seed=2)
    whole = wm3.fit_world_model(train, **kw)
    wm, steps = wm3.world_model_steps(train, **kw)
    first = [next(steps) for _ in range(2)]
    assert wm.model.training and wm.losses == first
    rest = list(steps)
    assert not wm.model.training and wm.losses == first + rest == whole.losses
    for p, q in zip(whole.model.parameters(), wm.model.parameters()):
        assert torch.equal(p, q)
    with pytest.raises(ValueError, match="order must be"):
        wm3.world_model_steps(train, **kw, order="spiral")
