"""Unit tests for iclr26.ilnn (the intrinsic Lorentz neural network)."""

import math

import geoopt
import pytest
import torch
from nbexercise import exercise_parts

from iclr26 import ilnn as L

D64 = torch.float64


def points(n=40, dim=4, k=1.0, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return L.lift(scale * torch.randn(n, dim, generator=g, dtype=D64), k)


def on_manifold_err(x, k):
    return ((L.lorentz_inner(x, x) + 1.0 / k).abs() * k).max().item()


# -- primitives, cross-checked against geoopt (its k is the radius^2 = 1/k here)
# ----------------
@pytest.mark.parametrize(
    "k", [0.25, 1.0, 4.0]
)  # exactly representable in float32: geoopt stores k as float32
def test_primitives_match_geoopt(k):
    man = geoopt.manifolds.Lorentz(k=1.0 / k)
    x, y = points(k=k, seed=1), points(k=k, seed=2)
    assert torch.allclose(L.dist(x, y, k), man.dist(x, y), atol=1e-9)
    v = torch.randn(40, 4, dtype=D64)
    v0 = torch.cat([torch.zeros(40, 1, dtype=D64), v], -1)
    assert torch.allclose(L.expmap0(v, k), man.expmap0(v0), atol=1e-9)
    assert torch.allclose(L.logmap0(x, k), man.logmap0(x)[:, 1:], atol=1e-9)
    assert torch.allclose(L.dist0(x, k), man.dist0(x), atol=1e-9)
    u = man.logmap(x, y)
    assert torch.allclose(L.logmap(x, y, k), u, atol=1e-8)
    assert torch.allclose(L.expmap(x, u, k), man.expmap(x, u), atol=1e-8)
    assert torch.allclose(L.transport(x, y, u, k), man.transp(x, y, u), atol=1e-8)


def test_lift_exp_log_roundtrip_and_shapes():
    k = 0.7
    v = torch.randn(3, 5, 6, dtype=D64)
    x = L.expmap0(v, k)
    assert x.shape == (3, 5, 7)
    assert on_manifold_err(x, k) < 1e-12
    assert torch.allclose(L.logmap0(x, k), v, atol=1e-10)
    assert torch.allclose(L.dist0(x, k), v.norm(dim=-1), atol=1e-10)
    o = L.origin(6, k, dtype=D64)
    assert torch.allclose(L.logmap0(o, k), torch.zeros(6, dtype=D64))
    assert L.lift(torch.zeros(2, 6), k).shape == (2, 7)


# -- hyperplanes
# ---------------------------------------------------------------------------------
def test_hyperplane_normal_has_lorentz_norm_of_U():
    U, a, k = torch.randn(5, 7, dtype=D64), torch.randn(7, dtype=D64), 0.6
    W = L.hyperplane_normal(U, a, k)
    normL2 = -(W[0] ** 2) + (W[1:] ** 2).sum(0)
    assert torch.allclose(normL2, (U**2).sum(0), atol=1e-10)


def test_closed_form_distance_equals_brute_force_minimum():
    # n = 2: the hyperplane is a geodesic y(s) = (cosh s e0 + sinh s e1)/sqrt k;
    # minimise over a fine grid.
    k = 0.8
    g = torch.Generator().manual_seed(3)
    U, a = (
        torch.randn(2, 1, generator=g, dtype=D64),
        torch.randn(1, generator=g, dtype=D64),
    )
    W = L.hyperplane_normal(U, a, k)
    w = W[:, 0]
    x = points(n=20, dim=2, k=k, scale=1.5, seed=4)
    closed = L.signed_distance(x, W, k)[:, 0].abs()
    # orthonormal basis of w's Lorentz complement: a timelike e0 and a spacelike e1
    o = L.origin(2, k, dtype=D64) * math.sqrt(k)
    e0 = o - L.lorentz_inner(o, w) / L.lorentz_inner(w, w) * w
    e0 = e0 / torch.sqrt(-L.lorentz_inner(e0, e0))
    t = torch.tensor([0.0, 1.0, 0.3], dtype=D64)
    e1 = (
        t
        - L.lorentz_inner(t, w) / L.lorentz_inner(w, w) * w
        + L.lorentz_inner(t, e0) * e0
    )
    e1 = e1 / torch.sqrt(L.lorentz_inner(e1, e1))
    s = torch.linspace(-12, 12, 200_001, dtype=D64)[:, None]
    curve = (torch.cosh(s) * e0 + torch.sinh(s) * e1) / math.sqrt(k)  # (S, 3) on H_w
    assert L.lorentz_inner(curve, w.expand_as(curve)).abs().max() < 1e-6
    brute = L.dist(x[:, None], curve[None], k).min(1).values
    assert torch.allclose(closed, brute, atol=1e-4)


def test_plfc_euclidean_limit_and_on_manifold():
    g = torch.Generator().manual_seed(5)
    layer = L.PLFC(6, 4, k=1.0, gyro_bias=False).double()
    with torch.no_grad():
        layer.a.normal_(generator=g)
    xs = torch.randn(30, 6, generator=g, dtype=D64)
    affine = xs @ layer.U - layer.U.norm(dim=0) * layer.a  # W x + b, b = -|U| a
    errs = []
    for k in (1e-2, 1e-4, 1e-6):
        layer.k = k
        out = layer(L.lift(xs, k))
        assert on_manifold_err(out, k) < 1e-9
        errs.append((out[:, 1:] - affine).abs().max().item())
    assert errs[2] < 1e-4 and errs[0] > errs[1] > errs[2]


def test_plfc_space_equals_scaled_sinh_of_distance():
    k = 1.3
    layer = L.PLFC(5, 3, k=k, gyro_bias=False).double()
    with torch.no_grad():
        layer.a.normal_()
    x = points(dim=5, k=k)
    d = L.signed_distance(x, layer.normals(), k)
    expected = layer.U.norm(dim=0) * torch.sinh(math.sqrt(k) * d) / math.sqrt(k)
    assert torch.allclose(layer(x)[:, 1:], expected, atol=1e-9)
    assert torch.allclose(layer.logits(x), layer.U.norm(dim=0) * d, atol=1e-12)


# -- gyro-structure and batch norms
# --------------------------------------------------------------
def test_gyro_identities_and_boost_isometry():
    k = 0.9
    x, a = points(k=k, seed=6), points(n=1, k=k, seed=7)[0]
    o = L.origin(4, k, dtype=D64)
    assert torch.allclose(L.gyro_add(o, x, k), x, atol=1e-12)  # o (+) x = x
    # (-x) (+) x = o
    assert torch.allclose(L.gyro_add(L.gyro_neg(x), x, k), o.expand_as(x), atol=1e-9)
    assert torch.allclose(
        L.boost_to_origin(a, x, k), L.gyro_add(L.gyro_neg(a), x, k), atol=1e-12
    )
    y = L.boost_to_origin(a, x, k)
    assert on_manifold_err(y, k) < 1e-12
    assert torch.allclose(
        L.dist(x[:, None], x[None], k), L.dist(y[:, None], y[None], k), atol=1e-7
    )
    assert torch.allclose(L.gyro_scale(1.0, x, k), x, atol=1e-10)
    assert L.check_boost_to_origin(L.boost_to_origin).status == "correct"


def test_check_function_rejects_a_wrong_boost():
    assert L.check_boost_to_origin(lambda mu, x, k: x).status == "wrong"
    assert L.check_boost_to_origin(lambda mu, x, k: x[:1]).status == "wrong"


def test_exercise_check_answers_not_done_wrong_and_correct():
    stub, reference, ns = exercise_parts("05-ilnn", "my_boost")
    assert ns.L.check_boost_to_origin(stub).status == "not done yet"

    def forgot_to_rescale(mu, x, k):  # a plausible slip: the k = 1 boost at every k
        return L.boost_to_origin(mu * math.sqrt(k), x * math.sqrt(k), 1.0)

    assert ns.L.check_boost_to_origin(forgot_to_rescale).status == "wrong"

    def boost_away(mu, x, k):  # another: the boost that carries o to mu, not mu to o
        return L.gyro_add(mu, x, k)

    assert ns.L.check_boost_to_origin(boost_away).status == "wrong"
    assert ns.L.check_boost_to_origin(reference).status == "correct"


def test_centroid_and_karcher_mean():
    k = 0.5
    x = points(n=64, k=k, scale=2.0, seed=8)
    mu = L.lorentz_centroid(x, k)
    assert on_manifold_err(mu.unsqueeze(0), k) < 1e-12
    centred = L.boost_to_origin(mu, x, k)
    assert centred.mean(0)[1:].abs().max() < 1e-10  # centroid of centred = o
    km = L.karcher_mean(x, k, tol=1e-11)
    # first-order condition
    assert L.logmap0(L.boost_to_origin(km, x, k), k).mean(0).abs().max() < 1e-8


def _lbn_rms(dim, k):
    return L.LorentzBatchNorm(dim, k, dispersion="rms")


@pytest.mark.parametrize("cls", [L.GyroLBN, L.GyroBN, _lbn_rms])
def test_batch_norms_normalise(cls):
    k = 0.7
    bn = cls(4, k).double()
    with torch.no_grad():
        bn.gamma.fill_(0.6)
        bn.bias.normal_()
    x = points(n=128, k=k, scale=1.5, seed=9).reshape(8, 16, 5)
    out = bn(x)
    assert out.shape == x.shape and on_manifold_err(out, k) < 1e-9
    beta = L.expmap0(bn.bias, k)
    back = L.boost_to_origin(beta, out.reshape(-1, 5), k)
    var_in = L.frechet_variance(x.reshape(-1, 5), bn.batch_mean(x.reshape(-1, 5)), k)
    target = 0.36 * var_in / (var_in + bn.eps)
    assert abs((L.dist0(back, k) ** 2).mean() - target) < 1e-8
    bn.eval()
    assert bn(x).shape == x.shape


def test_gyrolbn_equals_lbn_only_with_the_rms_statistic():
    # log/transport/exp is the boost: with GyroLBN's Frechet-variance statistic the two
    # are the same function; HCNN's LBN normalises the mean distance instead, a
    # different layer.
    k = 1.2
    a = L.GyroLBN(4, k).double()
    b = L.LorentzBatchNorm(4, k, dispersion="rms").double()
    c = L.LorentzBatchNorm(4, k).double()
    with torch.no_grad():
        a.bias.normal_(), a.gamma.fill_(1.4)
        for m in (b, c):
            m.bias.copy_(a.bias), m.gamma.copy_(a.gamma)
    x = points(n=50, k=k, seed=10)
    assert torch.allclose(a(x), b(x), atol=1e-9)
    assert not torch.allclose(a(x), c(x), atol=1e-3)


def test_hcnn_lbn_sets_the_mean_distance():
    k = 0.7
    bn = L.LorentzBatchNorm(4, k).double()
    with torch.no_grad():
        bn.gamma.fill_(0.6), bn.bias.normal_()
    x = points(n=128, k=k, scale=1.5, seed=9)
    out = bn(x)
    assert on_manifold_err(out, k) < 1e-9
    back = L.boost_to_origin(L.expmap0(bn.bias, k), out, k)
    s = L.dist(L.lorentz_centroid(x, k), x, k).mean()
    assert abs(L.dist0(back, k).mean() - 0.6 * s / (s + bn.eps)) < 1e-8


# -- concat, activation, dropout, conv, models
# -------------------------------------------------
def test_digamma_alignment_keeps_expected_log_radius():
    from scipy.special import digamma

    d, N, sigma = 8, 9, 0.7
    assert L.digamma_scale(d, 1) == 1.0
    expected = 0.5 * (math.log(2 * sigma**2) + digamma(d / 2))
    g = torch.Generator().manual_seed(11)
    blocks = L.lift(sigma * torch.randn(20000, N, d, generator=g, dtype=D64), 1.0)
    cat = L.lorentz_concat(blocks, 1.0)
    assert cat.shape == (20000, N * d + 1)
    assert abs(cat[:, 1:].norm(dim=-1).log().mean().item() - expected) < 0.01
    raw = L.lorentz_concat(blocks, 1.0, align="none")
    # unaligned radius grows
    assert raw[:, 1:].norm(dim=-1).log().mean().item() - expected > 0.9


def test_activation_dropout_conv_models_stay_on_manifold():
    k = 0.8
    x = points(n=48, dim=3, k=k).reshape(3, 4, 4, 4)  # (B, H, W, n+1)
    for mod in (L.LorentzReLU(k), L.LorentzDropout(0.5, k)):
        assert on_manifold_err(mod(x), k) < 1e-12
    drop = L.LorentzDropout(0.5, k).eval()
    assert torch.equal(drop(x), x)
    for variant in ("ilnn", "hcnn"):
        conv = L.LorentzConv2d(
            3, 5, 3, k, stride=2, padding=1, variant=variant
        ).double()
        y = conv(x)
        assert y.shape == (3, 2, 2, 6) and on_manifold_err(y, k) < 1e-10
    img = torch.randn(4, 1, 8, 8)
    for model in (
        L.LorentzCNN(4),
        L.LorentzCNN(4, variant="hcnn"),
        L.LorentzCNN(4, bn="gyrobn"),
        L.EuclideanCNN(4),
    ):
        assert model(img).shape == (4, 10)
    xt, yt = L.tree_data(3, 2, dim=5, per_leaf=4)
    assert xt.shape == (36, 5) and yt.max() == 8
    for model in (
        L.LorentzMLP(5, 8, 2, 9),
        L.LorentzMLP(5, 8, 2, 9, variant="hcnn"),
        L.EuclideanMLP(5, 8, 2, 9),
    ):
        assert model(xt).shape == (36, 9)


def test_train_classifier_learns_a_trivial_task():
    x, y = L.tree_data(2, 2, dim=6, per_leaf=30, noise=0.1, seed=1)
    torch.manual_seed(0)
    res = L.train_classifier(
        L.LorentzMLP(6, 16, 2, 4), x, y, x, y, epochs=20, batch_size=30, lr=3e-2
    )
    assert (
        res["acc"] > 0.9
        and len(res["losses"]) == 20
        and res["losses"][-1] < res["losses"][0]
    )


# -- gradients and errors
# ----------------------------------------------------------------------
def test_gradcheck_float64():
    k = 0.9
    x = points(n=6, dim=3, k=k, seed=12).requires_grad_()
    y = points(n=6, dim=3, k=k, seed=13)
    v = torch.randn(6, 3, dtype=D64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: L.dist(a, y, k), (x,))
    assert torch.autograd.gradcheck(lambda a: L.expmap0(a, k), (v,))
    assert torch.autograd.gradcheck(lambda a: L.logmap0(L.lift(a, k), k), (v,))
    assert torch.autograd.gradcheck(
        lambda a: L.boost_to_origin(
            L.lorentz_centroid(L.lift(a, k), k), L.lift(a, k), k
        ),
        (v,),
    )
    layer = L.PLFC(3, 2, k).double()
    assert torch.autograd.gradcheck(lambda a: layer(L.lift(a, k)), (v,))
    bn = L.GyroLBN(3, k).double()
    assert torch.autograd.gradcheck(lambda a: bn(L.lift(a, k)), (v,))


def test_errors_on_bad_input():
    with pytest.raises(ValueError):
        L.lift(torch.randn(3, 2), -1.0)
    with pytest.raises(TypeError):
        L.dist(torch.randn(3, 2), torch.randn(3, 2), "one")
    with pytest.raises(ValueError):
        L.lorentz_inner(torch.randn(3, 3), torch.randn(3, 4))
    with pytest.raises(ValueError):
        L.logmap0(torch.randn(3, 1), 1.0)
    with pytest.raises(ValueError):
        L.PLFC(3, 2)(L.lift(torch.randn(5, 4), 1.0))
    with pytest.raises(ValueError):
        L.GyroLBN(3, momentum=0.0)
    with pytest.raises(ValueError):
        L.lorentz_concat(torch.randn(2, 3, 4), 1.0, align="mean")
    with pytest.raises(ValueError):
        L.LorentzConv2d(1, 2, variant="poincare")
    with pytest.raises(ValueError):
        L.digamma_scale(0, 3)
    with pytest.raises(ValueError):
        L.LorentzCNN(4, bn="layernorm")
    with pytest.raises(TypeError):
        L.lorentz_inner([1.0, 2.0], torch.randn(2))


def test_seeded_models_and_training_do_not_depend_on_call_order():
    """A model built with ``seed=`` and trained by ``train_classifier`` (dropout inside
    ``seeded(seed)``) gives the same numbers whatever ran before it."""
    x, y = L.tree_data(2, 2, dim=6, per_leaf=10, seed=3)

    def digits_like():
        model = L.LorentzCNN(4, classes=3, seed=5)
        return torch.cat([p.detach().flatten() for p in model.parameters()])

    def trained():
        model = L.LorentzMLP(6, 8, 2, 4, seed=7)
        res = L.train_classifier(model, x, y, x, y, epochs=2, batch_size=8, seed=9)
        return torch.tensor(res["losses"]), res["pred"]

    a = (digits_like(), trained())
    torch.rand(10)  # an unrelated global draw
    b = (trained(), digits_like())[::-1]
    assert torch.equal(a[0], b[0])
    assert torch.equal(a[1][0], b[1][0]) and torch.equal(a[1][1], b[1][1])
    # and the seed matters
    w = L.EuclideanMLP(6, 8, 2, 4, seed=1).head.weight
    assert not torch.equal(w, L.EuclideanMLP(6, 8, 2, 4, seed=2).head.weight)
    assert torch.equal(w, L.EuclideanMLP(6, 8, 2, 4, seed=1).head.weight)


def test_distance_gradient_is_finite_where_points_meet():
    """d(x, x) has a kink (like |x - y| at 0): its gradient must be the subgradient 0,
    not inf * 0 = NaN (a batch point exactly on its centroid made a baseline's training
    NaN on one CPU); elsewhere arccosh is torch.acosh, value and derivative, bit for
    bit."""
    from iclr26.ilnn.geometry import arccosh, dist, expmap0

    x = expmap0(torch.tensor([[0.3, -0.2, 0.1]]), 1.0).requires_grad_()
    dist(x, x.detach(), 1.0).sum().backward()
    assert torch.isfinite(x.grad).all()
    z = (1 + 3 * torch.rand(1000)).requires_grad_()
    g = torch.randn(1000)
    arccosh(z).backward(g)
    ours = z.grad.clone()
    z.grad = None
    torch.acosh(z).backward(g)
    assert torch.equal(ours, z.grad)
    assert torch.equal(arccosh(z.detach()), torch.acosh(z.detach()))
