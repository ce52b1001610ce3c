"""Unit tests of iclr26.revisual_r1: GRPO, zero-advantage maths, PAD, the pipeline."""

from __future__ import annotations

import math

import pytest
import torch
from nbexercise import exercise_parts

from iclr26 import revisual_r1 as rv


def test_equal_rewards_give_zero_advantage_and_zero_gradient():
    r = torch.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    adv = rv.grpo_advantages(r)
    assert torch.equal(adv, torch.zeros_like(adv))
    w = torch.randn(8, requires_grad=True)
    logp = torch.log_softmax(w, 0)
    rv.grpo_loss(logp, adv.flatten()).backward()
    assert torch.equal(w.grad, torch.zeros_like(w.grad))


@pytest.mark.parametrize("G", [4, 8, 16])
def test_binary_advantages_match_closed_form(G):
    for k in range(1, G):
        r = torch.zeros(1, G, dtype=torch.float64)
        r[0, :k] = 1
        s = math.sqrt(k * (G - k) / (G * (G - 1)))  # unbiased std of k ones in G
        adv = rv.grpo_advantages(r)
        assert torch.allclose(
            adv[0, :k], torch.full((k,), (1 - k / G) / (s + 1e-6), dtype=torch.float64)
        )
        assert torch.allclose(
            adv[0, k:], torch.full((G - k,), -(k / G) / (s + 1e-6), dtype=torch.float64)
        )


def test_zero_fraction_matches_bernoulli_theory():
    g = torch.Generator().manual_seed(0)
    for p, G in [(0.05, 8), (0.5, 4), (0.9, 8)]:
        r = (torch.rand(20_000, G, generator=g) < p).float()
        want = rv.zero_advantage_theory(torch.tensor([p]), G).item()
        sigma = math.sqrt(want * (1 - want) / 20_000)
        assert abs(rv.zero_advantage_fraction(r) - want) < 3 * sigma + 1e-9


def test_pad_paper_rule_never_returns_low_advantage_and_counts():
    g = torch.Generator().manual_seed(1)
    r = (torch.rand(32, 8, generator=g) < 0.3).float()
    a = rv.grpo_advantages(r).flatten()
    n_eff = int((a.abs() >= 0.05).sum())
    for rho in (0.1, 0.25, 1.0, 2.0):
        idx = rv.pad_select(a, t_low=0.05, rho=rho, tau=0.3, generator=g)
        assert (a[idx].abs() >= 0.05).all()
        assert idx.numel() == min(math.ceil(rho * a.numel()), n_eff)
        assert idx.unique().numel() == idx.numel()  # no replacement
    # rho >= 1: PAD is exactly the zero-advantage filter
    idx = rv.pad_select(a, t_low=0.05, rho=1.0, generator=g)
    assert set(idx.tolist()) == set(torch.nonzero(a.abs() >= 0.05).flatten().tolist())


def test_pad_small_tau_takes_top_advantages():
    a = torch.tensor([0.1, -3.0, 0.5, 2.0, 0.0, -1.0])
    idx = rv.pad_select(a, t_low=0.05, rho=2 / 6, tau=1e-3, generator=torch.Generator())
    assert sorted(idx.tolist()) == [1, 3]


def test_pad_code_variant_uses_band_and_replacement():
    a = torch.tensor([2.47, -0.35, -0.35, 0.93, -0.93, 0.0, 0.97, 0.03])
    idx = rv.pad_select(
        a,
        mode="code",
        t_low=0.03,
        t_high=0.97,
        rho=1.5,
        generator=torch.Generator().manual_seed(0),
    )
    assert idx.numel() == int(1.5 * a.numel())  # int(rho N) of the whole batch
    # |A| = 2.47 is above the band, 0 below it, and the band is strict (0.97, 0.03 out)
    assert set(idx.tolist()) <= {1, 2, 3, 4}


def test_pad_code_variant_empty_band_returns_full_batch():
    a = torch.tensor([2.47, -0.35, 0.0, 0.0]) * torch.tensor([1.0, 0.0, 1.0, 1.0])
    idx = rv.pad_select(a, **rv.PAD_CODE)
    assert idx.tolist() == [0, 1, 2, 3]


def test_pad_code_variant_draws_proportional_to_power():
    a = torch.tensor([0.2, 0.8])
    idx = rv.pad_select(
        a,
        mode="code",
        t_low=0.03,
        t_high=0.97,
        rho=20_000,
        generator=torch.Generator().manual_seed(0),
    )
    share = (idx == 1).float().mean().item()
    want = 0.8**1.5 / (0.8**1.5 + 0.2**1.5)
    assert abs(share - want) < 0.01


def test_rl_stage_kl_keeps_policy_near_reference():
    task = rv.VisualArithmetic(4, seed=0)
    torch.manual_seed(0)
    pols = [rv.TinyMLLMPolicy(4, 8, 32) for _ in range(2)]
    pols[1].load_state_dict(pols[0].state_dict())
    ref = rv.TinyMLLMPolicy(4, 8, 32)
    ref.load_state_dict(pols[0].state_dict())
    q = task.sample(64, "val", torch.Generator().manual_seed(1))
    kls = []
    for pol, kl in zip(pols, (0.0, 10.0)):
        rv.rl_stage(
            pol,
            task,
            "text",
            30,
            lr=3e-2,
            prompts=8,
            kl_coef=kl,
            generator=torch.Generator().manual_seed(2),
        )
        with torch.no_grad():
            lp, lr_ = (
                torch.log_softmax(pol(q, "text"), 1),
                torch.log_softmax(ref(q, "text"), 1),
            )
            kls.append((lp.exp() * (lp - lr_)).sum(1).mean().item())
    assert kls[1] < kls[0]


def test_tau_schedule():
    t = rv.TauSchedule(1.0, 0.3, 11)
    assert t(0) == 1.0 and abs(t(10) - 0.3) < 1e-12 and abs(t(5) - 0.65) < 1e-12


def test_grpo_loss_kl_and_clip():
    logp = torch.log(torch.tensor([0.5, 0.25]))
    adv = torch.tensor([1.0, -1.0])
    assert torch.isclose(rv.grpo_loss(logp, adv), torch.tensor(0.0))
    loss = rv.grpo_loss(logp, adv, kl_coef=0.1, ref_logp=logp)
    assert torch.isclose(loss, torch.tensor(0.0))
    old = logp - 1.0  # ratio e > 1 + clip: the positive sample's term is clipped
    clipped = rv.grpo_loss(logp, torch.tensor([1.0, 0.0]), old_logp=old, clip=0.2)
    assert torch.isclose(clipped, torch.tensor(-0.6))


def test_bad_inputs_raise():
    with pytest.raises(TypeError):
        rv.grpo_advantages([[1, 0]])
    with pytest.raises(ValueError):
        rv.grpo_advantages(torch.ones(3))
    with pytest.raises(ValueError):
        rv.grpo_advantages(torch.ones(2, 1))
    with pytest.raises(ValueError):
        rv.grpo_advantages(torch.tensor([[1.0, float("nan")]]))
    with pytest.raises(ValueError):
        rv.zero_advantage_theory(torch.tensor([1.5]), 8)
    with pytest.raises(ValueError):
        rv.zero_advantage_theory(torch.tensor([0.5]), 1)
    with pytest.raises(ValueError):
        rv.pad_select(torch.ones(4), mode="other")
    with pytest.raises(ValueError):
        rv.pad_select(torch.ones(4), t_low=1.0, t_high=0.5)
    with pytest.raises(TypeError):
        rv.pad_select(torch.ones(4, dtype=torch.long))
    with pytest.raises(ValueError):
        rv.grpo_loss(torch.zeros(3), torch.zeros(2))
    with pytest.raises(ValueError):
        rv.VisualArithmetic(n_digits=11)
    with pytest.raises(ValueError):
        rv.VisualArithmetic(noise=-1.0)
    task = rv.VisualArithmetic(4)
    with pytest.raises(ValueError):
        task.sample(0, "train", torch.Generator())
    with pytest.raises(ValueError):
        task.digit_images(torch.tensor([1]), "nope", torch.Generator())
    pol = rv.TinyMLLMPolicy(4)
    with pytest.raises(ValueError):
        pol(task.sample(2, "train", torch.Generator()), "audio")
    with pytest.raises(ValueError):
        rv.rl_stage(pol, task, "image", 1, variant="ppo")
    with pytest.raises(ValueError):
        rv.run_pipeline(task, 0, {}, arms=("staged",))


@pytest.mark.parametrize(
    "call",
    [
        # (n, 1) old/ref log-probs would broadcast to (n, n)
        lambda: rv.grpo_loss(torch.zeros(3), torch.ones(3), old_logp=torch.zeros(3, 1)),
        lambda: rv.grpo_loss(
            torch.zeros(3), torch.ones(3), kl_coef=0.1, ref_logp=torch.zeros(3, 1)
        ),
        lambda: rv.grpo_loss(torch.zeros(2), torch.tensor([float("nan"), 1.0])),
        lambda: rv.grpo_loss(torch.zeros(2), torch.ones(2), clip=-1.0),
        lambda: rv.grpo_loss(
            torch.zeros(2), torch.ones(2), kl_coef=-0.1, ref_logp=torch.zeros(2)
        ),
        lambda: rv.grpo_loss(torch.zeros(2), torch.ones(2), kl_coef=0.1),
        lambda: rv.pad_select(torch.ones(4), rho=float("inf")),
        lambda: rv.pad_select(torch.ones(4), tau=float("nan")),
        lambda: rv.pad_select(torch.ones(4), t_low=float("nan")),
        lambda: rv.pad_select(torch.ones(4), mode="code", rho=0.1),
        lambda: rv.TauSchedule(1.0, 0.3, 2.5),
        lambda: rv.TauSchedule(1.0, float("inf"), 3),
        lambda: rv.grpo_advantages(torch.tensor([[1.0, 0.0]]), eps=float("nan")),
        lambda: rv.rl_stage(rv.TinyMLLMPolicy(4), rv.VisualArithmetic(4), "image", 2.5),
        lambda: rv.rl_stage(
            rv.TinyMLLMPolicy(4), rv.VisualArithmetic(4), "image", 1, group=1
        ),
        lambda: rv.accuracy(
            rv.TinyMLLMPolicy(4),
            rv.VisualArithmetic(10),
            "text",
            "test",
            10,
            torch.Generator(),
        ),
        lambda: rv.cold_start_sft(rv.TinyMLLMPolicy(4), rv.VisualArithmetic(10), 1),
        lambda: rv.align_vision(rv.TinyMLLMPolicy(4), rv.VisualArithmetic(10), 1),
    ],
)
def test_more_bad_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: rv.grpo_loss(torch.zeros(2), torch.tensor([1, 0])),
        lambda: rv.grpo_advantages(torch.tensor([[1.0, 0.0]]), eps=True),
        lambda: rv.zero_advantage_theory(torch.tensor([True]), 8),
        lambda: rv.accuracy(
            "policy", rv.VisualArithmetic(4), "text", "test", 10, torch.Generator()
        ),
    ],
)
def test_more_bad_inputs_raise_type_error(call):
    with pytest.raises(TypeError):
        call()


def test_task_splits_are_disjoint_and_images_match_digits():
    task = rv.VisualArithmetic(10, seed=0)
    pools = {
        s: set(task.pools[s][d, : task.counts[s][d]].tolist())
        for s in task.pools
        for d in range(10)
    }
    assert not pools["train"] & pools["test"]
    q = task.sample(64, "test", torch.Generator().manual_seed(0))
    assert torch.equal(q["y"], q["a"] + q["b"]) and q["img_a"].shape == (64, 64)


def test_tiny_pipeline_runs_and_records():
    task = rv.VisualArithmetic(4, seed=0)
    res = rv.run_pipeline(
        task,
        0,
        {a: 3e-3 for a in rv.ARMS},
        align_steps=3,
        cs_steps=3,
        mrl_steps=3,
        trl_steps=2,
        prompts=4,
        n_eval=20,
    )
    assert 0 <= res["staged_img"] <= 1 and len(res["hist"]["mrl_only"].reward) == 5
    assert len(res["hist"]["mrl_long"].reward) == 3 + 5  # cs_steps + all RL steps
    pad = res["hist"]["pad"]
    assert all(f == 1.0 for f in pad.informative_frac if f == f)
    z = rv.zero_advantage_probe(
        res["final_policy"], task, "image", 50, 8, torch.Generator()
    )
    assert 0 <= z[0] <= 1 and 0 <= z[1] <= 1


def test_check_advantages_grades():
    assert rv.check_advantages(rv.grpo_advantages).status == "correct"
    biased = lambda r: rv.grpo_advantages(r, unbiased=False)
    v = rv.check_advantages(biased)
    assert v.status == "wrong" and "sqrt" in v
    v = rv.check_advantages(lambda r: (r - r.mean()) / (r.std() + 1e-6))
    assert v.status == "wrong"
    v = rv.check_advantages(
        lambda r: (r - r.mean(1, keepdim=True)) / r.std(1, keepdim=True)
    )
    assert v.status == "wrong" and "NaN" in v
    # a float64 answer is graded in float64, not rejected for its dtype
    assert (
        rv.check_advantages(lambda r: rv.grpo_advantages(r.double())).status
        == "correct"
    )


def test_exercise_check_answers_not_done_wrong_and_correct():
    stub, reference, ns = exercise_parts("18-revisual-r1", "my_advantages")
    assert ns.rv.check_advantages(stub).status == "not done yet"
    assert ns.rv.check_advantages(reference).status == "correct"
    centred = lambda r: r - r.mean(1, keepdim=True)
    assert ns.rv.check_advantages(centred).status == "wrong"


# ------------------------------------------------------------------------------------
# one home for the GRPO maths; seeds without global state
def test_grpo_maths_live_in_one_module_both_chapters_import():
    import iclr26.grpo as G
    from iclr26.siren import model as siren_model

    assert rv.grpo_advantages is G.grpo_advantages and rv.grpo_loss is G.grpo_loss
    assert siren_model.grpo_advantages is G.grpo_advantages
    assert siren_model.grpo_loss is G.grpo_loss
    # one on-policy step of grpo_loss has the REINFORCE gradient -mean(A grad log pi)
    logp = torch.randn(16, requires_grad=True)
    adv = torch.randn(16)
    G.grpo_loss(logp, adv).backward()
    want = -adv / 16
    assert torch.equal(logp.grad, want)


def _tiny(task, seed):
    res = rv.run_pipeline(
        task,
        seed,
        {"staged": 3e-3},
        align_steps=3,
        cs_steps=3,
        mrl_steps=2,
        trl_steps=1,
        prompts=4,
        n_eval=30,
        arms=("staged",),
        no_align=True,
    )
    accs = [res[k] for k in ("base_img", "cs_img", "staged_img", "noalign_cs_img")]
    return accs, [p.detach().clone() for p in res["final_policy"].parameters()]


def test_pipeline_depends_on_its_seed_only_not_on_call_order():
    task = rv.VisualArithmetic(4, seed=0)
    a0 = _tiny(task, 0)
    torch.rand(5)  # an unrelated draw from the global generator
    a1 = _tiny(task, 1)
    b1 = _tiny(task, 1)
    torch.randn(3)
    b0 = _tiny(task, 0)
    for x, y in ((a0, b0), (a1, b1)):
        assert x[0] == y[0]
        assert all(torch.equal(p, q) for p, q in zip(x[1], y[1]))
    assert not all(torch.equal(p, q) for p, q in zip(a0[1], a1[1]))


def test_streams_are_distinct_per_seed_and_stream():
    pairs = [(s, k) for s in (0, 1, 50, 1000, 1001, 2000, 4001) for k in range(16)]
    seeds = {rv.stream_seed(s, k) for s, k in pairs}
    assert len(seeds) == len(pairs) and all(0 <= x < 2**63 for x in seeds)
    draw = lambda s, k: torch.rand(4, generator=rv.stream(s, k))
    assert torch.equal(draw(3, 2), draw(3, 2)) and not torch.equal(
        draw(3, 2), draw(2, 3)
    )
    with pytest.raises(ValueError):
        rv.stream_seed(-1, 0)


def test_stage_options_are_checked():
    task = rv.VisualArithmetic(4, seed=0)
    pol = rv.TinyMLLMPolicy(4, 8, 16)
    with pytest.raises(ValueError, match="unknown option"):
        rv.rl_stage(pol, task, "image", 1, variant="pad", pad={"foo": 1})
    with pytest.raises(TypeError, match="pad must be a dict"):
        rv.rl_stage(pol, task, "image", 1, variant="pad", pad=[("rho", 1.0)])
    for stage in (rv.cold_start_sft, rv.align_vision):
        with pytest.raises(ValueError, match="lr"):
            stage(pol, task, 1, lr=0)
    with pytest.raises(ValueError, match="lr"):
        rv.rl_stage(pol, task, "image", 1, lr=-1e-3)
