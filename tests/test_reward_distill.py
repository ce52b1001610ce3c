"""Unit tests for iclr26.reward_distill (chapter 12): fast, exact where the toy
allows it."""

from __future__ import annotations

import copy
import itertools
import math

import pytest
import torch
from nbexercise import exercise_parts

from iclr26.reward_distill import (
    MASK,
    MaskedDenoiser,
    StateSpace,
    TiltedDenoiser,
    all_sequences,
    best_of_n_reward,
    check_soft_optimal,
    ddpo_loss,
    distribution_stats,
    exact_distribution,
    exact_soft_value,
    finetune_ddpo,
    finetune_vidd,
    markov_chain,
    markov_logprob,
    masked_diffusion_loss,
    motif_reward,
    posterior_mean_value,
    rollout_step,
    sample,
    sample_markov,
    soft_optimal,
    soft_weights,
    step_logprob,
    tv_distance,
    vidd_loss,
)


def small_model(length=3, seed=0, hidden=16):
    torch.manual_seed(seed)
    return MaskedDenoiser(length, hidden)


def naive_law(model, length):
    """p(x) by summing over all L! unmasking orders (the reference for the DP)."""
    xs = all_sequences(length)
    out = torch.zeros(len(xs), dtype=torch.float64)
    with torch.no_grad():
        for n, x in enumerate(xs):
            total = 0.0
            for order in itertools.permutations(range(length)):
                state = torch.full((1, length), MASK)
                prob = 1.0
                for k, i in enumerate(order):
                    prob *= (
                        1.0 / (length - k) * model(state).softmax(-1)[0, i, x[i]].item()
                    )
                    state = state.clone()
                    state[0, i] = x[i]
                total += prob
            out[n] = total
    return out


def test_markov_chain_and_logprob_normalise():
    init, trans = markov_chain(3)
    assert torch.allclose(trans.sum(1), torch.ones(4, dtype=torch.float64))
    p = markov_logprob(all_sequences(4), init, trans).exp()
    assert abs(p.sum().item() - 1) < 1e-12
    x = sample_markov(5, 4, init, trans, torch.Generator().manual_seed(0))
    assert x.shape == (5, 4) and x.dtype == torch.int64


def test_motif_reward_counts_overlaps_and_rejects_bad_input():
    x = torch.tensor([[2, 0, 3, 1, 2, 0], [0, 0, 0, 0, 0, 0]])  # GATCGA, AAAAAA
    assert motif_reward(x).tolist() == [3.0, 0.0]
    assert motif_reward(torch.tensor([[2, 0, 2, 0]]), motifs=("GA",)).item() == 2.0
    with pytest.raises(ValueError):
        motif_reward(torch.tensor([[4, 0]]))  # a mask is not a letter
    with pytest.raises(TypeError):
        motif_reward(torch.zeros(2, 3))  # floats are not token ids
    with pytest.raises(ValueError):
        motif_reward(x, motifs=("GX",))


def test_soft_optimal_normalises_limits_and_stability():
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    r = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    q = soft_optimal(p, r, 1.0)
    assert abs(q.sum().item() - 1) < 1e-12
    assert torch.allclose(q, p * r.exp() / (p * r.exp()).sum())
    # α → ∞: the pretrained model
    assert torch.allclose(soft_optimal(p, r, 1e6), p, atol=1e-5)
    assert soft_optimal(p, r, 1e-4)[2] > 1 - 1e-6  # α → 0: the argmax of the reward
    with pytest.raises(ValueError):
        soft_optimal(p, r, 0.0)
    with pytest.raises(ValueError):
        soft_optimal(p, r[:2], 1.0)
    assert check_soft_optimal(soft_optimal).status == "correct"
    naive = lambda p, r, a: p * torch.exp(r / a) / (p * torch.exp(r / a)).sum()
    verdict = check_soft_optimal(naive)
    assert verdict.status == "wrong" and "log space" in verdict
    unnormalised = lambda p, r, a: torch.softmax(p.log() + r / a, 0) * 2
    assert "sums to" in check_soft_optimal(unnormalised)
    with pytest.raises(TypeError):
        check_soft_optimal("my_soft_optimal")


def test_exercise_check_answers_not_done_wrong_and_correct():
    stub, reference, ns = exercise_parts("12-reward-distill", "my_soft_optimal")
    assert ns.rd.check_soft_optimal(stub).status == "not done yet"
    wrong = lambda p, r, a: torch.softmax(p.log() - r / a, 0)  # tilts the wrong way
    assert ns.rd.check_soft_optimal(wrong).status == "wrong"
    assert ns.rd.check_soft_optimal(reference).status == "correct"


def test_denoiser_shapes_and_errors():
    m = small_model(4)
    x = torch.tensor([[0, 4, 2, 4]])
    assert m(x).shape == (1, 4, 4)
    with pytest.raises(ValueError):
        m(torch.tensor([[0, 1, 2]]))  # wrong length
    with pytest.raises(ValueError):
        m(torch.tensor([[0, 5, 2, 1]]))  # id out of range


def test_sampling_unmasks_one_position_per_step():
    m = small_model(5)
    x0, traj = sample(m, 7, 5, torch.Generator().manual_seed(1))
    assert traj.shape == (6, 7, 5) and torch.equal(traj[-1], x0)
    assert ((traj == MASK).sum(-1) == torch.arange(5, -1, -1)[:, None]).all()
    assert (x0 != MASK).all()
    with pytest.raises(ValueError):
        rollout_step(m, x0)  # nothing left to unmask


def test_step_logprob_matches_softmax_and_rejects_bad_pairs():
    m = small_model(3)
    x_t = torch.tensor([[4, 1, 4]])
    x_s = torch.tensor([[2, 1, 4]])
    expect = m(x_t).log_softmax(-1)[0, 0, 2]
    assert torch.allclose(step_logprob(m, x_t, x_s), expect.unsqueeze(0))
    with pytest.raises(ValueError):
        step_logprob(m, x_t, torch.tensor([[2, 1, 3]]))  # two positions filled
    with pytest.raises(ValueError):
        step_logprob(m, x_t, torch.tensor([[4, 2, 4]]))  # a revealed letter changed


def test_exact_distribution_matches_all_orders_and_sampling():
    m = small_model(3)
    space = StateSpace(3)
    p = exact_distribution(m, space).detach()
    assert torch.allclose(p, naive_law(m, 3), atol=1e-7)
    assert abs(p.sum().item() - 1) < 1e-6
    x0, _ = sample(m, 20000, 3, torch.Generator().manual_seed(0))
    emp = torch.bincount(space.index(x0), minlength=5**3)[space.clean].double() / 20000
    assert tv_distance(emp, p).item() < 0.05


class FromTable(torch.nn.Module):
    """A 'denoiser' that looks its logits up in a table over all partial strings
    (for gradcheck)."""

    def __init__(self, table, space):
        super().__init__()
        self.table, self.space = table, space

    def forward(self, x_t):
        return self.table[self.space.index(x_t)]


def test_exact_distribution_gradcheck_float64():
    space = StateSpace(2)
    table = torch.randn(
        5**2, 2, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    f = lambda t: exact_distribution(FromTable(t, space), space)
    assert torch.autograd.gradcheck(f, (table.requires_grad_(True),), fast_mode=True)
    h = torch.randn(25, dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda t: exact_distribution(FromTable(t, space), space, potential=h),
        (table,),
        fast_mode=True,
    )


def test_soft_value_and_soft_optimal_kernel():
    m = small_model(3)
    space = StateSpace(3)
    r = motif_reward(all_sequences(3)).double()
    alpha = 0.7
    with torch.no_grad():
        p = exact_distribution(m, space)
        v = exact_soft_value(m, space, r, alpha)
        # on clean strings v = r; at the all-mask string v = α log E_p[e^{r/α}]
        assert torch.allclose(v[space.clean], r)
        assert math.isclose(
            v[space.layers[0]].item(),
            alpha * math.log((p * torch.exp(r / alpha)).sum().item()),
            rel_tol=1e-6,
        )
        # the per-step soft-optimal kernel (an h-transform with h = v/α) composes to p*
        pk = exact_distribution(m, space, potential=v / alpha)
        assert torch.allclose(pk, soft_optimal(p, r, alpha), atol=1e-7)


def test_weighted_mle_fixed_point_is_the_tilted_kernel():
    """Tabular check: at one state x_t, minimising −Σ_a q(a) w(a) log π(a) over π
    gives π ∝ q·w."""
    torch.manual_seed(0)
    q = torch.softmax(torch.randn(4, dtype=torch.float64), 0)
    v = torch.tensor([0.0, 1.0, 2.0, 0.5], dtype=torch.float64)
    alpha = 0.5
    target = soft_optimal(q, v, alpha)
    logits = target.log().clone().requires_grad_(True)  # the claimed minimiser
    loss = -(q * torch.exp(v / alpha) * logits.log_softmax(0)).sum()
    (grad,) = torch.autograd.grad(loss, logits)
    # stationary, and the loss is convex in the log-probabilities
    assert grad.abs().max() < 1e-12
    worse = (logits + 0.1 * torch.randn(4, dtype=torch.float64)).detach()
    assert -(q * torch.exp(v / alpha) * worse.log_softmax(0)).sum() > loss


def test_tilted_denoiser_is_pstar_for_a_consistent_model():
    """If the base model's conditionals come from one joint law, the per-position tilt
    is p* exactly."""
    space = StateSpace(3)
    init, trans = markov_chain(1)
    joint = markov_logprob(all_sequences(3), init, trans).exp()

    class Exact(torch.nn.Module):  # the true conditionals p(x_i = a | revealed letters)
        length = 3

        def forward(self, x_t):
            xs = all_sequences(3)
            # (B, 64)
            ok = ((x_t[:, None, :] == MASK) | (x_t[:, None, :] == xs[None])).all(-1)
            w = ok * joint[None]
            onehot = torch.nn.functional.one_hot(xs, 4).double()  # (64, 3, 4)
            cond = torch.einsum("bn,nla->bla", w, onehot)
            return cond.clamp_min(1e-300).log()

    r = motif_reward(all_sequences(3)).double()
    with torch.no_grad():
        p = exact_distribution(Exact(), space)
        assert torch.allclose(p, joint, atol=1e-10)
        v = exact_soft_value(Exact(), space, r, 0.5)
        pt = exact_distribution(TiltedDenoiser(Exact(), space, v, 0.5), space)
    assert torch.allclose(pt, soft_optimal(joint, r, 0.5), atol=1e-8)


def test_soft_weights_and_vidd_loss_reference():
    v = torch.tensor([0.0, 1.0, 3.0])
    w = soft_weights(v, 0.5, normalise="batch")
    assert torch.allclose(w.sum(), torch.tensor(3.0)) and torch.allclose(
        w / w[0], torch.exp(v / 0.5)
    )
    assert torch.allclose(soft_weights(v, 0.5, normalise="none"), torch.exp(v / 0.5))
    vt = torch.tensor([0.5, 0.5, 2.0])
    assert torch.allclose(soft_weights(v, 0.5, v_state=vt), torch.exp((v - vt) / 0.5))
    z = soft_weights(v, 1.0, normalise="z")
    vz = (v - v.mean()) / v.std()
    assert torch.allclose(z, torch.exp(vz), atol=1e-5)
    with pytest.raises(ValueError):
        soft_weights(v, 1.0, normalise="minmax")
    with pytest.raises(ValueError):
        soft_weights(v, 1.0)  # the paper's kernel needs v(x_t)
    m = small_model(3)
    x_t = torch.tensor([[4, 1, 4], [4, 4, 4]])
    x_s = torch.tensor([[4, 1, 0], [4, 3, 4]])
    wts = torch.tensor([0.5, 1.5])
    ref = (
        -(
            wts[0] * m(x_t).log_softmax(-1)[0, 2, 0]
            + wts[1] * m(x_t).log_softmax(-1)[1, 1, 3]
        )
        / 2
    )
    assert torch.allclose(vidd_loss(m, x_t, x_s, wts), ref)
    with pytest.raises(ValueError):
        vidd_loss(m, x_t, x_s, wts[:1])


def test_ddpo_loss_at_ratio_one_is_reinforce_in_gradient():
    m = small_model(3)
    x_t = torch.tensor([[4, 1, 4], [4, 4, 4], [0, 4, 2]])
    x_s = torch.tensor([[4, 1, 0], [4, 3, 4], [0, 1, 2]])
    adv = torch.tensor([1.0, -0.5, 2.0])
    with torch.no_grad():
        old = step_logprob(m, x_t, x_s)
    g1 = torch.autograd.grad(ddpo_loss(m, x_t, x_s, old, adv), list(m.parameters()))
    g2 = torch.autograd.grad(
        -(adv * step_logprob(m, x_t, x_s)).mean(), list(m.parameters())
    )
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(g1, g2))
    with pytest.raises(ValueError):
        ddpo_loss(m, x_t, x_s, old, adv, clip=1.5)


def test_finetuners_run_count_calls_and_leave_pretrained_untouched():
    pre = small_model(3).requires_grad_(False)
    before = copy.deepcopy(pre.state_dict())
    g = torch.Generator().manual_seed(0)
    m = copy.deepcopy(pre).requires_grad_(True)
    out = finetune_vidd(
        m,
        pre,
        motif_reward,
        updates=3,
        alpha=0.5,
        batch_size=4,
        refresh_every=2,
        generator=g,
    )
    assert out["reward_calls"] == [
        24,
        48,
        72,
    ]  # B·L values of x_{t-1} and B·L of x_t per update
    assert out["samples"] == [4, 8, 12]
    m3 = copy.deepcopy(pre).requires_grad_(True)
    out3 = finetune_vidd(
        m3,
        pre,
        motif_reward,
        updates=2,
        alpha=0.5,
        batch_size=4,
        normalise="none",
        generator=g,
    )
    assert out3["reward_calls"] == [
        12,
        24,
    ]  # the official DNA loss: values of x_{t-1} only
    m2 = copy.deepcopy(pre).requires_grad_(True)
    out2 = finetune_ddpo(
        m2, motif_reward, updates=3, batch_size=4, inner_steps=2, generator=g
    )
    assert out2["reward_calls"] == [
        4,
        4,
        8,
    ]  # B calls per fresh batch, reused for 2 updates
    assert out2["samples"] == [4, 4, 8]
    assert all(torch.equal(before[k], pre.state_dict()[k]) for k in before)
    assert not all(torch.equal(before[k], m.state_dict()[k]) for k in before)
    with pytest.raises(ValueError):
        finetune_vidd(m, pre, motif_reward, updates=1, alpha=-1.0)
    with pytest.raises(ValueError):
        finetune_vidd(m, pre, motif_reward, updates=1, alpha=0.5, value="exact")


def test_posterior_mean_value_on_clean_strings_is_the_reward():
    m = small_model(3)
    x = torch.tensor([[2, 0, 1], [3, 1, 2]])
    assert torch.equal(posterior_mean_value(m, x, motif_reward), motif_reward(x))
    assert posterior_mean_value(m, torch.full((2, 3), MASK), motif_reward).shape == (2,)


def test_best_of_n_and_stats():
    p = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
    r = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    assert math.isclose(best_of_n_reward(p, r, 1).item(), 0.75)
    # best of 2: P(max=2) = 1 − 0.75², P(max=1) = 0.75² − 0.5²
    assert math.isclose(
        best_of_n_reward(p, r, 2).item(), 2 * (1 - 0.5625) + (0.5625 - 0.25)
    )
    s = distribution_stats(p, r, n_samples=1)
    assert (
        math.isclose(s["unique"], 1.0)
        and math.isclose(s["p_max"], 0.5)
        and s["n90"] == 3
    )
    with pytest.raises(ValueError):
        best_of_n_reward(p, r, 0)


def test_masked_diffusion_loss_is_finite_and_trainable():
    m = small_model(3)
    x0 = torch.randint(0, 4, (16, 3), generator=torch.Generator().manual_seed(0))
    loss = masked_diffusion_loss(m, x0, torch.Generator().manual_seed(0))
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None for p in m.parameters())
