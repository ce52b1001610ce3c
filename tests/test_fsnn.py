"""Unit tests for iclr26.fsnn: the fractional LIF neuron, its weights,
Mittag-Leffler, data."""

from __future__ import annotations

import math

import pytest
import torch
from nbexercise import exercise_parts

from iclr26 import fsnn

F64 = torch.float64


def assert_close(got, want, rtol=1e-6, atol=1e-7):
    """torch.allclose with a readable message (torch.testing.assert_close is slow
    to import)."""
    got, want = (
        torch.as_tensor(got),
        torch.as_tensor(want).to(torch.as_tensor(got).dtype),
    )
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.allclose(got, want, rtol=rtol, atol=atol), (
        f"max |Δ| = {(got - want).abs().max().item():.3e}"
    )


# ---------------------------------------------------------------- weights


def test_gl_weights_are_signed_binomials():
    alpha = 0.37
    c = fsnn.gl_weights(alpha, 10, dtype=F64)
    binom = [
        math.gamma(alpha + 1) / (math.gamma(j + 1) * math.gamma(alpha - j + 1))
        for j in range(10)
    ]
    want = torch.tensor([(-1) ** j * b for j, b in enumerate(binom)], dtype=F64)
    assert c.shape == (10,)
    assert_close(c, want, rtol=1e-12, atol=1e-14)


def test_gl_weights_alpha_one_is_euler_and_tail_is_power_law():
    assert_close(
        fsnn.gl_weights(1.0, 6, dtype=F64),
        torch.tensor([1.0, -1, 0, 0, 0, 0], dtype=F64),
    )
    alpha, j = 0.6, 4000
    c = fsnn.gl_weights(alpha, j + 1, dtype=F64)
    assert c[1:].lt(0).all() and abs(float(c.sum())) < 0.01  # sum_j c_j -> 0
    limit = -alpha / math.gamma(1 - alpha)
    assert float(c[j]) * j ** (1 + alpha) == pytest.approx(limit, rel=2e-3)


def test_abm_weights():
    a = fsnn.abm_weights(0.5, 5, dtype=F64)
    want = torch.tensor(
        [1.0] + [math.sqrt(m + 1) - math.sqrt(m) for m in range(1, 5)], dtype=F64
    )
    assert_close(a, want)
    assert_close(fsnn.abm_weights(1.0, 7, dtype=F64), torch.ones(7, dtype=F64))


def test_weights_gradcheck_in_alpha():
    alpha = torch.tensor(0.63, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: fsnn.gl_weights(a, 8), (alpha,))
    assert torch.autograd.gradcheck(lambda a: fsnn.abm_weights(a, 8), (alpha,))


@pytest.mark.parametrize("bad", [0.0, -0.2, 1.5, torch.tensor([0.5, 0.6])])
def test_weights_reject_bad_alpha(bad):
    with pytest.raises(ValueError):
        fsnn.gl_weights(bad, 4)


def test_weights_reject_bad_types():
    with pytest.raises(TypeError):
        fsnn.gl_weights("0.5", 4)
    with pytest.raises(TypeError):
        fsnn.abm_weights(0.5, 4.0)
    with pytest.raises(ValueError):
        fsnn.abm_weights(0.5, 0)


def test_gl_derivative_of_power_function():
    # D^alpha t^k = Gamma(k+1)/Gamma(k+1-alpha) t^(k-alpha) (Caputo = RL since t^k
    # vanishes at 0)
    alpha, k, h = 0.5, 2.0, 1e-3
    t = torch.arange(0, 2001, dtype=F64) * h
    d = fsnn.gl_derivative(t**k, alpha, h)
    exact = math.gamma(k + 1) / math.gamma(k + 1 - alpha) * t ** (k - alpha)
    assert abs(float(d[-1] - exact[-1])) / float(exact[-1]) < 2e-3


# ---------------------------------------------------------------- Mittag-Leffler


@pytest.mark.parametrize("alpha", [0.5, 0.7, 0.9])
def test_mittag_leffler_matches_series_for_small_argument(alpha):
    z = -torch.linspace(0, 2.0, 21, dtype=F64)
    assert_close(
        fsnn.mittag_leffler(alpha, z),
        fsnn.mittag_leffler_series(alpha, z),
        rtol=1e-9,
        atol=1e-10,
    )


def test_mittag_leffler_half_is_erfcx_and_one_is_exp():
    from scipy.special import erfcx

    x = torch.linspace(0, 30, 61, dtype=F64)
    want = torch.from_numpy(erfcx(x.numpy()))  # E_{1/2}(-x) = exp(x^2) erfc(x)
    assert_close(fsnn.mittag_leffler(0.5, -x), want, rtol=1e-10, atol=1e-12)
    assert_close(fsnn.mittag_leffler(1.0, -x), torch.exp(-x))


def test_mittag_leffler_rejects_positive_argument():
    with pytest.raises(ValueError):
        fsnn.mittag_leffler(0.5, torch.tensor([0.5]))
    with pytest.raises(TypeError):
        fsnn.mittag_leffler(0.5, [0.0])


# ---------------------------------------------------------------- the neuron


def _inputs(seed=0, T=120, shape=(3, 5)):
    g = torch.Generator().manual_seed(seed)
    # supra-threshold: many spikes
    return 2.4 * torch.rand((T,) + shape, generator=g, dtype=F64)


@pytest.mark.parametrize("method", ["gl", "abm"])
def test_shapes_and_binary_spikes(method):
    x = _inputs().float()
    s, v = fsnn.fractional_lif(x, 0.7, method=method)
    assert s.shape == v.shape == x.shape and s.dtype == x.dtype
    assert set(s.unique().tolist()) <= {0.0, 1.0} and s.sum() > 0
    assert (v < 1.0).all()  # after reset, below threshold


@pytest.mark.parametrize("method", ["gl", "abm"])
def test_alpha_one_is_lif(method):
    x = _inputs(seed=3)
    s_ref, v_ref = fsnn.lif_reference(x, tau=2.0, h=1.0, threshold=1.0)
    s, v = fsnn.fractional_lif(x, 1.0, tau=2.0, h=1.0, method=method)
    assert torch.equal(s, s_ref) and s.sum() > 50
    assert (v - v_ref).abs().max() < 1e-12
    if method == "gl":
        assert torch.equal(v, v_ref)  # bit for bit


@pytest.mark.parametrize("method", ["gl", "abm"])
def test_alpha_one_matches_snntorch_leaky(method):
    snn = pytest.importorskip("snntorch")
    tau, h = 2.0, 1.0
    # inputs <= 1.2: a reset never leaves v above θ
    x = _inputs(seed=5, shape=(4, 6)) / 2
    lif = snn.Leaky(
        beta=torch.tensor(1 - h / tau, dtype=F64),
        threshold=1.0,
        reset_mechanism="subtract",
        reset_delay=False,
    )
    mem, spk_snn, mem_snn = torch.zeros_like(x[0]), [], []
    for t in range(x.shape[0]):
        spk, mem = lif((h / tau) * x[t], mem)  # snntorch: mem = β mem + input
        spk_snn.append(spk)
        mem_snn.append(mem)
    s, v = fsnn.fractional_lif(x, 1.0, tau=tau, h=h, method=method)
    assert torch.equal(s, torch.stack(spk_snn)) and s.sum() > 20
    assert (v - torch.stack(mem_snn)).abs().max() < 1e-12


def test_history_sum_matches_naive_loop():
    alpha, tau, h = 0.6, 2.0, 0.5
    x = _inputs(seed=1, T=40, shape=(2,))
    s, v = fsnn.fractional_lif(x, alpha, tau=tau, h=h, method="gl")
    c = fsnn.gl_weights(alpha, 41, dtype=F64)
    for b in range(2):  # naive scalar GL, one neuron at a time
        vs = [0.0]
        for n in range(40):
            val = h**alpha / tau * (-vs[-1] + float(x[n, b])) - sum(
                float(c[j]) * vs[n + 1 - j] for j in range(1, n + 1)
            )
            val -= 1.0 * (val >= 1.0)
            vs.append(val)
        assert_close(v[:, b], torch.tensor(vs[1:], dtype=F64), rtol=1e-10, atol=1e-12)


def test_grad_path_equals_no_grad_path():
    x = _inputs(seed=2, T=30)
    for method in ("gl", "abm"):
        with torch.no_grad():
            s0, v0 = fsnn.fractional_lif(x, 0.55, method=method)
        s1, v1 = fsnn.fractional_lif(x.clone().requires_grad_(), 0.55, method=method)
        assert torch.equal(s0, s1)
        assert_close(v0, v1.detach())


@pytest.mark.parametrize("method", ["gl", "abm"])
def test_subthreshold_relaxation_is_mittag_leffler(method):
    alpha, tau, h = 0.7, 2.0, 0.02
    T = 500
    t = torch.arange(1, T + 1, dtype=F64) * h
    _, v = fsnn.fractional_lif(
        torch.ones(T, 1, dtype=F64), alpha, tau=tau, h=h, method=method, spiking=False
    )
    # step response 1 - E_α(-t^α/τ)
    exact = 1 - fsnn.mittag_leffler(alpha, -(t**alpha) / tau)
    assert (v[:, 0] - exact).abs().max() < 0.01


def test_truncation_error_decreases_with_memory():
    x = torch.ones(400, 1, dtype=F64)
    _, full = fsnn.fractional_lif(x, 0.6, spiking=False)
    errors = [
        float(
            (fsnn.fractional_lif(x, 0.6, memory=m, spiking=False)[1] - full).abs().max()
        )
        for m in (4, 16, 64, 256)
    ]
    assert all(e1 > e2 for e1, e2 in zip(errors, errors[1:])), errors
    _, lif_full = fsnn.fractional_lif(x, 1.0, spiking=False)
    assert torch.equal(
        fsnn.fractional_lif(x, 1.0, memory=1, spiking=False)[1], lif_full
    )


def test_gradcheck_membrane_in_input_and_alpha():
    x = (0.3 * torch.rand(6, 2, dtype=F64)).requires_grad_()
    alpha = torch.tensor(0.7, dtype=F64, requires_grad=True)
    for method in ("gl", "abm"):
        fn = lambda inp, a: fsnn.fractional_lif(inp, a, method=method, spiking=False)[1]  # noqa: B023 called this iteration
        assert torch.autograd.gradcheck(fn, (x, alpha))


def test_learnable_alpha_gets_gradient_and_surrogate_flows():
    layer = fsnn.FractionalLIF(alpha=0.7, learn_alpha=True)
    x = (2.0 * torch.rand(20, 4, 3)).requires_grad_()
    s, v = layer(x)
    (s.sum() + v.sum()).backward()
    assert (
        layer.alpha.grad is not None
        and torch.isfinite(layer.alpha.grad)
        and layer.alpha.grad != 0
    )
    assert x.grad is not None and x.grad.abs().sum() > 0


def test_spike_surrogate_gradient():
    x = torch.tensor([-1.0, 0.0, 0.5], requires_grad=True)
    s = fsnn.spike(x, scale=2.0)
    s.sum().backward()
    assert_close(s.detach(), torch.tensor([0.0, 1.0, 1.0]))
    assert_close(x.grad, 1.0 / (1.0 + (math.pi * x.detach()) ** 2))


def test_bad_neuron_inputs():
    x = torch.rand(5, 2)
    with pytest.raises(ValueError):
        fsnn.fractional_lif(x, 0.5, method="euler")
    with pytest.raises(ValueError):
        fsnn.fractional_lif(x, 0.5, method="abm", memory=3)
    with pytest.raises(ValueError):
        fsnn.fractional_lif(x, 0.5, memory=0)
    with pytest.raises(ValueError):
        fsnn.fractional_lif(x, 0.5, tau=-1.0)
    with pytest.raises(TypeError):
        fsnn.fractional_lif(x.numpy(), 0.5)
    with pytest.raises(TypeError):
        fsnn.fractional_lif(torch.ones(5, 2, dtype=torch.int64), 0.5)
    with pytest.raises(ValueError):
        fsnn.FractionalLIF(alpha=1.2)


# ---------------------------------------------------------------- data, model, exercise


def test_moving_bar_events():
    x, y = fsnn.make_moving_bar_events(64, size=10, steps=12, seed=0)
    x2, y2 = fsnn.make_moving_bar_events(64, size=10, steps=12, seed=0)
    assert x.shape == (12, 64, 100) and y.shape == (64,)
    assert torch.equal(x, x2) and torch.equal(y, y2)  # seeded
    assert set(x.unique().tolist()) <= {0.0, 1.0} and set(y.tolist()) <= {0, 1, 2, 3}
    assert x.sum() > 64 * 12  # the bar makes events
    noisy = fsnn.corrupt_events(x, 0.1, seed=1)
    assert noisy.shape == x.shape and 0.05 < (noisy != x).float().mean() < 0.15
    with pytest.raises(ValueError):
        fsnn.corrupt_events(x, 1.5)


def test_spiking_mlp_shapes():
    model = fsnn.SpikingMLP(100, 16, 4, fsnn.FractionalLIF(0.8))
    x, _ = fsnn.make_moving_bar_events(8, size=10, steps=6)
    assert model(x).shape == (8, 4)
    with pytest.raises(ValueError):
        model(x[0])


def test_check_gl_weights():
    ok = fsnn.check_gl_weights(lambda a, n: fsnn.gl_weights(a, n))
    assert ok.status == "correct" and "match" in ok
    assert fsnn.check_gl_weights(lambda a, n: torch.ones(n)).status == "wrong"
    assert fsnn.check_gl_weights(lambda a, n: [1.0] * n).status == "wrong"
    assert fsnn.check_gl_weights(lambda a, n: torch.ones(n - 1)).status == "wrong"


def test_exercise_check_answers_not_done_wrong_and_correct():
    stub, reference, ns = exercise_parts("06-fsnn", "my_gl_weights")
    assert ns.fsnn.check_gl_weights(stub).status == "not done yet"

    def off_by_one(alpha, n):  # a plausible slip: the product starts one j too late
        j = torch.arange(2, n + 1, dtype=torch.float64)
        ones = torch.ones(1, dtype=torch.float64)
        return torch.cat([ones, torch.cumprod(1 - (1 + alpha) / j, 0)])

    wrong = ns.fsnn.check_gl_weights(off_by_one)
    assert wrong.status == "wrong" and "c_1" in wrong
    assert ns.fsnn.check_gl_weights(reference).status == "correct"


def test_seeded_functions_do_not_depend_on_call_order():
    """The data, the corruptions and a seeded network draw from their own generators:
    the same numbers in either order, whatever ran before them."""

    def bar():
        return fsnn.make_moving_bar_events(16, size=8, steps=6, seed=5)[0]

    def net():
        model = fsnn.SpikingMLP(64, 8, 4, fsnn.FractionalLIF(0.8), seed=11)
        return torch.cat([p.detach().flatten() for p in model.parameters()])

    def noisy():
        return fsnn.corrupt_events(torch.zeros(6, 4, 64), 0.2, seed=3, kind="flip")

    a = (bar(), net(), noisy())
    torch.rand(10)  # an unrelated global draw
    b = (noisy(), net(), bar())[::-1]
    for u, v in zip(a, b):
        assert torch.equal(u, v)
    other = fsnn.SpikingMLP(64, 8, 4, fsnn.FractionalLIF(0.8), seed=12)
    assert not torch.equal(net()[:8], other.encode.weight.detach().flatten()[:8])


def test_predict_is_what_accuracy_scores():
    x, y = fsnn.make_moving_bar_events(32, size=8, steps=6, seed=1)
    model = fsnn.SpikingMLP(64, 8, 4, fsnn.FractionalLIF(0.8), seed=0)
    pred = fsnn.predict(model, x)
    assert pred.shape == (32,) and pred.dtype == torch.int64
    assert fsnn.accuracy(model, x, y) == pytest.approx(
        100 * float((pred == y).float().mean())
    )
    with pytest.raises(ValueError):
        fsnn.predict(model, x[0])
