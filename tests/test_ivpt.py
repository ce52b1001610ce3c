"""Unit tests of iclr26.ivpt: data, concept maps, region features, grouping, models,
the consistency metric, the planted stand-ins, the experiment's result, the
calibration tables, and the exercise's check function."""

import numpy as np
import pytest
import torch
from nbexercise import exercise_parts

from iclr26 import ivpt as I


def _birds(n=6, seed=0, **kw):
    rng = np.random.default_rng(seed)
    cl = I.class_table(8, 4, rng)
    return I.make_part_birds(n, cl, rng, **kw)


def test_part_birds_shapes_ranges_and_masks():
    x, y, m = _birds(10)
    assert x.shape == (10, 3, 24, 24) and x.dtype == np.float32
    assert 0 <= x.min() and x.max() <= 1
    assert y.shape == (10,) and m.shape == (10, 24, 24)
    assert set(np.unique(m)) <= set(range(5))
    for p in range(1, 5):  # every part visible in most images
        assert (m == p).any(axis=(1, 2)).mean() >= 0.8


def test_part_birds_seeded_and_zero_jitter_is_fixed_pose():
    a, _, ma = _birds(4, seed=3)
    b, _, mb = _birds(4, seed=3)
    assert np.array_equal(a, b) and np.array_equal(ma, mb)
    _, _, m0 = _birds(20, seed=1, jitter=0.0)
    fg = (m0 == 2).sum(axis=(1, 2))
    assert fg.max() - fg.min() <= 2  # same body size up to the flip's rounding


def test_part_birds_bad_input():
    rng = np.random.default_rng(0)
    cl = I.class_table(4, 3, rng)
    with pytest.raises(ValueError):
        I.make_part_birds(0, cl, rng)
    with pytest.raises(TypeError):
        I.make_part_birds(3, cl, "rng")
    with pytest.raises(ValueError):
        I.make_part_birds(3, cl, rng, jitter=float("nan"))
    with pytest.raises(ValueError):
        I.class_table(100, 3, rng)


def test_patch_parts_matches_a_loop():
    _, _, m = _birds(3)
    got = I.patch_parts(m, 4)
    for b in range(3):
        for i in range(6):
            for j in range(6):
                blk = m[b, 4 * i : 4 * i + 4, 4 * j : 4 * j + 4]
                for p in range(5):
                    assert got[b, p, i, j] == ((blk == p).mean() >= 0.25)
    with pytest.raises(ValueError):
        I.patch_parts(m, 5)


def test_concept_maps_are_gmm_responsibilities():
    g = torch.Generator().manual_seed(0)
    e = torch.randn(3, 10, 5, generator=g, dtype=torch.float64)
    q = torch.randn(4, 5, generator=g, dtype=torch.float64)
    b = torch.randn(4, 10, generator=g, dtype=torch.float64)
    A = I.concept_maps(e, q, b)
    assert A.shape == (3, 4, 10)
    assert torch.allclose(A.sum(1), torch.ones(3, 10, dtype=torch.float64))
    # naive: equal-variance isotropic Gaussians with log-priors b (variance 1/2)
    d2 = ((e[:, None] - q[None, :, None]) ** 2).sum(-1)  # [B, K, N]
    naive = torch.softmax(-d2 + b[None], dim=1)
    assert torch.allclose(A, naive, atol=1e-12)


def test_concept_maps_gradcheck_and_errors():
    g = torch.Generator().manual_seed(1)
    e = torch.randn(2, 4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    q = torch.randn(3, 3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: I.concept_maps(a, b), (e, q))
    with pytest.raises(ValueError):
        I.concept_maps(e.detach(), torch.randn(3, 4, dtype=torch.float64))
    with pytest.raises(ValueError):
        I.concept_maps(e.detach() * float("nan"), q.detach())
    with pytest.raises(TypeError):
        I.concept_maps(e.detach().numpy(), q.detach())


def test_region_features_one_hot_is_masked_mean():
    g = torch.Generator().manual_seed(2)
    feats = torch.randn(2, 6, 4, generator=g, dtype=torch.float64)
    lab = torch.tensor([[0, 0, 1, 2, 2, 2], [1, 1, 1, 0, 2, 0]])
    A = torch.nn.functional.one_hot(lab, 3).transpose(1, 2).double()
    out, mass = I.region_features(A, feats)
    for b in range(2):
        for k in range(3):
            assert torch.allclose(out[b, k], feats[b, lab[b] == k].mean(0))
    assert torch.equal(mass, A.sum(-1))
    soft, _ = I.region_features(A, feats, hard=False)
    assert torch.allclose(soft, out)


def test_region_features_empty_region_is_zero():
    feats = torch.ones(1, 3, 2)
    A = torch.tensor([[[0.6, 0.7, 0.9], [0.4, 0.3, 0.1]]])
    out, mass = I.region_features(A, feats)
    assert mass[0, 1] == 0 and torch.equal(out[0, 1], torch.zeros(2))


def test_grouping_rows_sum_to_one_and_maps_stay_normalised():
    grp = I.CrossLayerGrouping(5, 6, 3).double()
    g = torch.Generator().manual_seed(3)
    f = torch.randn(2, 6, 5, generator=g, dtype=torch.float64)
    A = torch.softmax(torch.randn(2, 7, 9, generator=g, dtype=torch.float64), 1)
    coarse, cmaps, G = grp(f, A)
    assert coarse.shape == (2, 3, 5) and cmaps.shape == (2, 4, 9)
    assert torch.allclose(G.sum(-1), torch.ones(2, 6, dtype=torch.float64))
    assert torch.allclose(cmaps.sum(1), torch.ones(2, 9, dtype=torch.float64))


def _small():
    torch.manual_seed(0)
    vit = I.TinyViT(16, 4, 16, 3, 2)
    vit.requires_grad_(False)
    return vit, torch.rand(5, 3, 16, 16)


def test_models_shapes_and_frozen_backbone():
    vit, x = _small()
    y = torch.tensor([0, 1, 2, 0, 1])
    ivpt = I.IVPT(vit, 3, (5, 4, 3))
    out = ivpt(x)
    assert out["logits"].shape == (5, 3)
    assert [a.shape for a in out["maps"]] == [(5, 5, 16), (5, 4, 16), (5, 3, 16)]
    assert [c.shape for c in out["coarse"]] == [(5, 3, 16), (5, 3, 16)]
    vpt = I.VPTDeep(vit, 3, 2)
    assert vpt.eval()(x)["regions"].shape == (
        5,
        (3 - 1) * 2,
        16,
    )  # last block: no region
    before = [p.clone() for p in vit.parameters()]
    I.train(ivpt, x, y, 2, batch=4)
    I.train(vpt, x, y, 2, batch=4)
    assert all(torch.equal(a, b) for a, b in zip(before, vit.parameters()))
    assert all(p.grad is None for p in vit.parameters())
    assert ivpt.protos[-1].grad is not None


def test_rollout_to_cls_properties():
    """Rollout weights are a distribution over CLS + patches; the last block's patch
    outputs never reach the CLS head (zero); with attention that only looks at itself,
    nothing flows from patches to the CLS."""
    vit, x = _small()
    vpt = I.VPTDeep(vit, 3, 2)
    atts = vpt(x)["atts"]
    T = 1 + vit.grid**2
    rho = I.rollout_to_cls(atts, T)
    assert rho.shape == (5, 3, T - 1)
    assert torch.equal(rho[:, -1], torch.zeros(5, T - 1))
    assert (rho >= 0).all() and (rho[:, :-1].sum(-1) <= 1 + 1e-6).all()
    eye = [torch.eye(T + 2).expand(5, 2, T + 2, T + 2) for _ in range(3)]
    assert torch.equal(I.rollout_to_cls(eye, T), torch.zeros(5, 3, T - 1))


def test_vpt_prompt_of_an_early_block_changes_the_logits():
    vit, x = _small()
    vpt = I.VPTDeep(vit, 3, 2)
    base = vpt(x)["logits"]
    with torch.no_grad():
        vpt.prompts[0, 0] += torch.linspace(-1, 1, vpt.prompts.shape[-1])
    assert (vpt(x)["logits"] - base).abs().max() > 1e-5


def test_part_consistency_oracle_and_random():
    rng = np.random.default_rng(0)
    cl = I.class_table(4, 3, rng)
    _, _, m = I.make_part_birds(200, cl, rng)
    parts = torch.from_numpy(I.patch_parts(m, 4).reshape(200, 5, -1))[:, 1:]
    oracle = parts.float() + 0.01 * torch.rand(parts.shape)  # one unit per part
    res = I.part_consistency(oracle, parts, m=1, mu=0.8)
    assert res["consistency"] == 1.0 and res["purity"] > 0.99
    rand = torch.rand(200, 8, 36)
    r2 = I.part_consistency(rand, parts, m=1, mu=0.8)
    assert r2["consistency"] == 0.0 and r2["purity"] < 0.6
    with pytest.raises(ValueError):
        I.part_consistency(rand, parts, m=0)
    with pytest.raises(ValueError):
        I.part_consistency(rand[:, :, :5], parts, m=1)


def test_region_parts_matches_a_loop():
    g = torch.Generator().manual_seed(4)
    s = torch.randn(3, 2, 6, generator=g)
    parts = torch.rand(3, 4, 6, generator=g) > 0.6
    got = I.region_parts(s, parts, 2)
    for b in range(3):
        for u in range(2):
            top = s[b, u].argsort(descending=True)[:2]
            for p in range(4):
                assert got[b, u, p] == parts[b, p, top].any()


def test_kmeans_recovers_separated_clusters():
    g = torch.Generator().manual_seed(5)
    centres = torch.tensor([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    x = (centres[:, None] + 0.1 * torch.randn(3, 50, 2, generator=g)).reshape(-1, 2)
    c = I.kmeans(x, 3, generator=g)
    d = torch.cdist(centres, c).min(1).values
    assert d.max() < 0.2


def test_exercise_check():
    stub, reference, ns = exercise_parts("14-ivpt", "my_concept_maps")
    assert ns.I.check_concept_maps(stub).status == "not done yet"
    assert ns.I.check_concept_maps(reference).status == "correct"

    def no_bias(feats, protos, bias):  # forgets the bias
        return ns.I.concept_maps(feats, protos)

    assert ns.I.check_concept_maps(no_bias).status == "wrong"

    def wrong_axis(feats, protos, bias):  # softmax over patches, not prototypes
        d2 = torch.cdist(feats, protos) ** 2
        return torch.softmax(-d2 + bias.T, dim=1).transpose(1, 2)

    assert ns.I.check_concept_maps(wrong_axis).status == "wrong"


def test_pretrain_leaves_a_frozen_backbone_without_gradients():
    torch.manual_seed(0)
    vit = I.TinyViT(16, 4, 16, 2, 2)
    x = torch.rand(40, 3, 16, 16)
    losses = I.pretrain(vit, x, x.clone(), 2, batch=8)
    assert len(losses) == 2 and all(np.isfinite(losses))
    assert all(not p.requires_grad and p.grad is None for p in vit.parameters())
    with pytest.raises(ValueError):
        I.pretrain(vit, x, x[:, :, :8], 2, batch=8)


def test_affine_inverse_and_equivariance_loss():
    g = torch.Generator().manual_seed(6)
    th = I.random_affine(4, degrees=30.0, translate=0.1, scale=(0.8, 1.2), generator=g)
    assert th.shape == (4, 2, 3)
    both = I.invert_affine(I.invert_affine(th))
    assert torch.allclose(both, th, atol=1e-5)
    ident = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]).expand(4, 2, 3)
    A = torch.softmax(torch.randn(4, 3, 36, generator=g), 1)
    assert torch.allclose(I.warp(A.view(4, 3, 6, 6), ident).view(4, 3, 36), A)
    # maps that move with the image (here: no move at all) cost nothing
    assert I.equivariance_loss([A], [A], ident, 6).abs() < 1e-6
    shuffled = A[:, :, torch.randperm(36, generator=g)]
    assert I.equivariance_loss([A], [shuffled], ident, 6) > 0.05
    with pytest.raises(ValueError):
        I.random_affine(0)


def test_feature_standardisation_and_part_losses():
    vit, x = _small()
    ivpt = I.IVPT(vit, 3, (5, 4, 3))
    ivpt.fit_feature_stats(x)
    assert (ivpt.f_std > 0).all()
    h, inputs, _ = vit(x)
    e = (h[:, 1:] - ivpt.f_mean[-1]) / ivpt.f_std[-1]
    assert e.flatten(0, 1).mean(0).abs().max() < 1e-4  # centred over the patches
    out = ivpt.train()(x)
    for kind in ("original", "tanh"):
        losses = I.part_losses(out, vit.grid, kind)
        assert set(losses) == {"presence", "entropy", "tv", "orth", "consistency"}
        assert all(torch.isfinite(v) for v in losses.values())
    with pytest.raises(ValueError):
        I.part_losses(out, vit.grid, "other")


def test_train_gives_prototypes_the_slow_rate():
    vit, x = _small()
    y = torch.tensor([0, 1, 2, 0, 1])
    ivpt = I.IVPT(vit, 3, (5, 4, 3))
    p0 = [p.detach().clone() for p in ivpt.protos]
    h0 = ivpt.head.weight.detach().clone()
    I.train(ivpt, x, y, 3, batch=4, lr=1e-2, clip=None)
    dp = max((p - q).abs().max() for p, q in zip(ivpt.protos, p0))
    dh = (ivpt.head.weight - h0).abs().max()
    assert 0 < dp < dh  # Adam moves each weight by about its rate per step
    with pytest.raises(ValueError):
        I.train(ivpt, x, y, 1, batch=4, lr=0.0)


def test_batches_do_not_depend_on_the_warps():
    # every model seeded alike must see the same mini-batches: IVPT's warps draw
    # from their own stream, so the batch generator advances as VPT-Deep's does
    vit, x = _small()
    y = torch.tensor([0, 1, 2, 0, 1])
    g1 = torch.Generator().manual_seed(5)
    I.train(I.IVPT(vit, 3, (5, 4, 3)), x, y, 2, batch=4, generator=g1)
    g2 = torch.Generator().manual_seed(5)
    I.train(I.VPTDeep(vit, 3, 2), x, y, 2, batch=4, generator=g2)
    g3 = torch.Generator().manual_seed(5)
    for _ in range(2):
        torch.randint(len(x), (4,), generator=g3)
    assert torch.equal(g1.get_state(), g3.get_state())
    assert torch.equal(g2.get_state(), g3.get_state())


def test_fixed_windows_and_position_only():
    w = I.fixed_windows(6, 2)
    assert w.shape == (25, 36)
    top = w.topk(4, -1).indices
    assert ((w > 0.5).sum(1) == 4).all()  # each window is 4 patches
    assert torch.equal(top.sort(-1).values[0], torch.tensor([0, 1, 6, 7]))
    with pytest.raises(ValueError):
        I.fixed_windows(6, 7)
    g = torch.Generator().manual_seed(0)
    tr = torch.rand(10, 3, 36, generator=g)
    pos = I.position_only(tr, 4, m=2)
    assert pos.shape == (4, 3, 36)
    assert torch.equal(pos[0], pos[3])  # the same in every image
    assert torch.allclose(pos.sum(-1), torch.full((4, 3), 2.0))  # m patches per image
    # the modal region of a unit that ignores the image is its own region, so it
    # scores exactly as the unit does
    fixed = w[None, :3].expand(10, -1, -1)
    parts = torch.rand(4, 4, 36, generator=g) > 0.5
    a = I.part_consistency(fixed[:4], parts, 4)["purity"]
    b = I.part_consistency(I.position_only(fixed, 4, 4), parts, 4)["purity"]
    assert a == b
    with pytest.raises(ValueError):
        I.position_only(tr, 4, 0)


def test_largest_share_counts_the_given_patches_in_every_layer():
    on = torch.zeros(2, 6, dtype=torch.bool)
    on[:, :4] = True  # 8 counted patches
    healthy = torch.zeros(2, 3, 6)
    healthy[:, 0, :2] = 1  # slot 0 owns 2 of 4 counted patches per image, slot 1 two
    healthy[:, 1, 2:4] = 1
    healthy[:, 2, 4:] = 1  # the background owns the uncounted patches
    assert I.largest_share([healthy], on) == 0.5
    collapsed = torch.zeros(2, 3, 6)
    collapsed[:, 2] = 1  # the background owns everything
    assert I.largest_share([healthy, collapsed], on) == 1.0


def test_kmeans_draws_on_the_cpu_generator_for_any_device():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(40, 3, generator=g, dtype=torch.float64)
    c1 = I.kmeans(x, 3, generator=torch.Generator().manual_seed(1))
    c2 = I.kmeans(x, 3, generator=torch.Generator().manual_seed(1))
    assert torch.equal(c1, c2)  # seeded: the same centres


def _tiny_cfg(**kw):
    from types import SimpleNamespace

    base = dict(
        size=16,
        patch=4,
        d=16,
        depth=2,
        heads=2,
        n_colours=2,
        n_classes=4,
        jitter=1.0,
        n_pre=64,
        pre_steps=2,
        pre_batch=32,
        n_train=64,
        n_val=16,
        n_test=16,
        steps=2,
        batch=16,
        lr_vpt=1e-2,
        lr_ivpt=1e-2,
        n_prompts=2,
        n_pro=(3, 3),
        m=2,
        m_list=(1,),
        mu=0.8,
        equivariance=True,
        standardise=True,
    )
    return SimpleNamespace(**{**base, **kw})


def test_run_returns_what_the_notebook_shows_once():
    from iclr26.ivpt import experiment as E

    cfg = _tiny_cfg()
    data = E.make_data(cfg, 3, "cpu")
    exp = E.run(cfg, data, 3, models=("vpt", "ivpt", "kmeans"))
    assert set(exp.metrics) == {"vpt", "ivpt", "kmeans", "windows"}
    assert not any(k.startswith("_") for k in exp.metrics)
    n, N = cfg.n_test, (cfg.size // cfg.patch) ** 2
    assert exp.units["vpt"].shape == (n, cfg.n_prompts * (cfg.depth - 1), N)
    assert exp.units["ivpt"].shape == (n, sum(k - 1 for k in cfg.n_pro), N)
    assert [m.shape for m in exp.maps["ivpt"]] == [(n, k, N) for k in cfg.n_pro]
    assert exp.preds["vpt"].shape == (n,)
    acc = (exp.preds["ivpt"] == data.yte).float().mean().item()
    assert acc == pytest.approx(exp.metrics["ivpt"]["acc"])
    with pytest.raises(ValueError, match="unknown models"):
        E.run(cfg, data, 3, models=("nope",))


def test_seeded_runs_do_not_depend_on_the_order_of_calls():
    # no global random state: two runs give the same numbers in either order, with
    # an unrelated global draw between
    from iclr26.ivpt import experiment as E

    cfg = _tiny_cfg()
    data = E.make_data(cfg, 5, "cpu")

    def a():
        return E.run(cfg, data, 5, models=("vpt",)).metrics["vpt"]["purity"]

    def b():
        return E.run(cfg, data, 7, models=("ivpt",)).units["ivpt"]

    first_a = a()
    torch.rand(7)
    first_b = b()
    second_b = b()
    torch.randn(3)
    second_a = a()
    assert first_a == second_a and torch.equal(first_b, second_b)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(30, 3, generator=g)
    k1 = I.kmeans(x, 3, generator=torch.Generator().manual_seed(2))
    torch.rand(5)
    assert torch.equal(k1, I.kmeans(x, 3, generator=torch.Generator().manual_seed(2)))


def test_planted_stand_ins():
    rng = np.random.default_rng(1)
    cl = I.class_table(4, 3, rng)
    _, _, m = I.make_part_birds(100, cl, rng)
    parts = torch.from_numpy(I.patch_parts(m, 4).reshape(100, 5, -1))[:, 1:]
    g = torch.Generator().manual_seed(3)
    units = torch.rand(100, 6, 36, generator=g)
    before = I.part_consistency(units, parts, 4)["purity"]
    fixed, n = I.corrected_units(units, parts, 4, 0.077)
    after = I.part_consistency(fixed, parts, 4)["purity"]
    assert n == int(np.ceil(0.077 * 100 * 6))
    assert after - before >= 0.077 - 1e-6
    same, n0 = I.corrected_units(units, parts, 4, 0.0)
    assert n0 == 0 and torch.equal(same, units)
    with pytest.raises(ValueError):
        I.corrected_units(units, parts, 4, 1.5)
    y = torch.tensor([0, 1, 2, 3] * 25)
    p = y.clone()
    p[:10] = (y[:10] + 1) % 4  # 90 % right
    acc = lambda q: (q == y).float().mean().item()
    assert acc(I.corrected_predictions(p, y, 0.05)) == pytest.approx(0.95)
    assert acc(I.corrected_predictions(p, y, 0.5)) == 1.0  # no error left
    assert acc(I.degraded_predictions(p, y, 0.03, 4)) == pytest.approx(0.87)


def test_bad_inputs_get_clear_errors():
    _, _, m = _birds(4)
    parts = torch.from_numpy(I.patch_parts(m, 4).reshape(4, 5, -1))[:, 1:]
    s = torch.rand(4, 3, 36)
    with pytest.raises(TypeError, match="bool"):
        I.part_consistency(s, parts.float() * 0.5, 1)
    with pytest.raises(ValueError, match="k must be"):
        I.kmeans(torch.randn(10, 2), 0)
    with pytest.raises(ValueError, match="patch must be"):
        I.patch_parts(m, 0)
    with pytest.raises(TypeError, match="floating"):
        I.concept_maps(torch.ones(1, 3, 2, dtype=torch.long), torch.ones(2, 2))
    with pytest.raises(ValueError, match="NaN"):
        I.concept_maps(torch.full((1, 3, 2), float("nan")), torch.ones(2, 2))


def _record(name, overrides, seeds, values):
    """A calibration record as the runner writes it: values[claim] = (measured per
    seed, control per seed or None)."""
    return dict(
        chapter="14-ivpt",
        name=name,
        seeds=seeds,
        overrides=overrides,
        claims=[
            dict(id=cid, measured=list(m), control_measured=c, held=[None] * len(m))
            for cid, (m, c) in values.items()
        ],
    )


def test_calibration_tables_from_records(tmp_path):
    import json

    from iclr26.ivpt import records as R

    for lr, vpt, ivpt in (
        (0.01, [0.9, 0.8], [0.7, 0.9]),
        (0.03, [0.9, 0.9], [0.8, 0.8]),
    ):
        rec = _record(
            f"lr-{lr:g}",
            dict(lr_vpt=lr, lr_ivpt=lr),
            [101, 102],
            {"val-vpt": (vpt, None), "trains": (ivpt, None)},
        )
        (tmp_path / f"lr-{lr:g}.json").write_text(json.dumps(rec))
    recs = R.load(tmp_path)
    assert R.chosen_rates(recs) == {"vpt": 0.03, "ivpt": 0.01}  # the tie: smaller
    table = R.lr_table(recs)
    assert "| 0.01 | 0.900 / 0.800 (0.850) | 0.700 / 0.900 (0.800) |" in table
    assert table.endswith("Chosen: VPT-Deep 0.03, IVPT 0.01.")
    ids = {cid for _, parts in R.GRID_COLUMNS for cid, _ in parts}
    vals = {cid: ([0.5], [0.25]) for cid in ids}
    rec = _record("jitter-2", dict(jitter=2.0), [101], vals)
    (tmp_path / "jitter-2.json").write_text(json.dumps(rec))
    grid = R.grid_table(R.load(tmp_path), ["jitter-2"], 101)
    assert grid.splitlines()[2].startswith("| jitter-2 | 0.500 | 0.500 / 0.250 / 0.500")
    with pytest.raises(ValueError, match="not run at seed"):
        R.grid_table(R.load(tmp_path), ["jitter-2"], 102)
    with pytest.raises(FileNotFoundError):
        R.load(tmp_path / "nowhere")


def test_chapter_shows_the_committed_calibration_tables():
    # the chapter's calibration tables are rendered from the runner's records in
    # results/calibration/14-ivpt/ (iclr26.ivpt.records), not typed by hand
    import json
    from pathlib import Path

    from iclr26.ivpt import records as R

    root = Path(__file__).resolve().parents[1]
    recs = R.load(root / "results" / "calibration" / "14-ivpt")
    grid = json.loads((root / "grids" / "14-ivpt.json").read_text())
    for name, rec in recs.items():  # every record is a setting of the grid
        assert rec["overrides"] == grid["settings"][name], name
    one_factor = [n for n in grid["settings"] if n in recs and not n.startswith("lr-")]
    nb = json.loads((root / "notebooks" / "14-ivpt.ipynb").read_text())
    prose = "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"
    )
    for table in (R.lr_table(recs), R.grid_table(recs, one_factor, 101)):
        for line in table.splitlines():
            assert line in prose, f"the chapter lacks this calibration row: {line}"
