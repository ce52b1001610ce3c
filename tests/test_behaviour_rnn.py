import math

import pytest
import torch
from nbexercise import exercise_parts

from iclr26 import behaviour_rnn as br


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_posterior_matches_gaussian_conditioning_and_monte_carlo():
    sched = br.ddpm_schedule(20, dtype=torch.float64)
    x0 = torch.tensor([[0.7, -0.3]], dtype=torch.float64)
    for s in (1, 2, 10, 20):
        ab, abp, a = sched.alpha_bar[s], sched.alpha_bar[s - 1], sched.alphas[s]
        xs = torch.tensor([[0.2, 0.5]], dtype=torch.float64)
        # joint Gaussian of (x_{s-1}, x_s) given x0, then condition on x_s
        cov, var_s = a.sqrt() * (1 - abp), 1 - ab
        want_m = abp.sqrt() * x0 + cov / var_s * (xs - ab.sqrt() * x0)
        want_v = (1 - abp) - cov**2 / var_s
        m, v = br.posterior(x0, xs, s, sched)
        assert torch.allclose(m, want_m, atol=1e-12)
        assert float(v) == pytest.approx(float(want_v), abs=1e-12)
    # Monte Carlo: regress x_{s-1} on x_s over forward samples from a fixed x0
    s, n = 8, 200_000
    g = gen(1)
    x0 = torch.zeros(n, 1, dtype=torch.float64) + 0.4
    eps = torch.randn(n, 1, generator=g, dtype=torch.float64)
    prev = br.q_sample(x0, s - 1, sched, eps)
    xs = sched.alphas[s].sqrt() * prev + sched.betas[s].sqrt() * torch.randn(
        n, 1, generator=g, dtype=torch.float64
    )
    A = torch.cat([xs, torch.ones_like(xs)], 1)
    coef = torch.linalg.lstsq(A, prev).solution
    resid = (prev - A @ coef).var()
    m1, v = br.posterior(x0[:1], torch.ones(1, 1, dtype=torch.float64), s, sched)
    m0, _ = br.posterior(x0[:1], torch.zeros(1, 1, dtype=torch.float64), s, sched)
    assert float(coef[0]) == pytest.approx(float(m1 - m0), abs=5e-3)
    assert float(coef[1]) == pytest.approx(float(m0), abs=5e-3)
    assert float(resid) == pytest.approx(float(v), rel=2e-2)


def test_posterior_equals_eps_parameterisation():
    sched = br.ddpm_schedule(15, dtype=torch.float64)
    g = gen(2)
    x0 = torch.randn(6, 2, generator=g, dtype=torch.float64)
    eps = torch.randn(6, 2, generator=g, dtype=torch.float64)
    for s in (1, 7, 15):
        xs = br.q_sample(x0, s, sched, eps)
        m, _ = br.posterior(x0, xs, s, sched)
        ab, a, b = sched.alpha_bar[s], sched.alphas[s], sched.betas[s]
        want = (xs - b / (1 - ab).sqrt() * eps) / a.sqrt()
        assert torch.allclose(m, want, atol=1e-12)


def test_schedule_ends_near_noise_and_chain_marginals():
    for T in (10, 20, 40):
        sched = br.ddpm_schedule(T)
        assert sched.alpha_bar[0] == 1 and 0.001 < sched.alpha_bar[-1] < 0.03
        assert sched.post_var[1] == 0
    sched = br.ddpm_schedule(20, dtype=torch.float64)
    x0 = torch.full((100_000, 2), 0.5, dtype=torch.float64)
    chain = br.forward_chain(x0, sched, gen(3))
    assert chain.shape == (21, 100_000, 2)
    for s in (3, 12):
        ab = float(sched.alpha_bar[s])
        assert float(chain[s].mean()) == pytest.approx(0.5 * ab**0.5, abs=0.01)
        assert float(chain[s].var()) == pytest.approx(1 - ab, rel=0.03)


def test_set_x_touches_only_the_behavioural_subspace():
    net = br.LeakyRNN(16, generator=gen())
    r = torch.randn(5, 16, generator=gen(1))
    x = torch.randn(5, 2, generator=gen(2))
    r2 = net.set_x(r, x)
    assert torch.allclose(net.readout(r2), x, atol=1e-5)
    P = torch.eye(16) - net.Wx.T @ net.Wx  # null-space projector
    assert torch.allclose(r2 @ P, r @ P, atol=1e-5)
    assert torch.allclose(net.Wx @ net.Wx.T, torch.eye(2), atol=1e-5)


def test_mixture_em_recovers_planted_weights():
    g = gen(4)
    n = 20_000
    tgt = (torch.rand(n, generator=g) * 2 - 1) * math.pi
    nt = (torch.rand(n, generator=g) * 2 - 1) * math.pi
    comp = torch.multinomial(torch.tensor([0.65, 0.25, 0.10]), n, True, generator=g)
    kappa = 8.0
    vm = torch.distributions.VonMises(torch.tensor(0.0), torch.tensor(kappa))
    vm = vm.sample((n,))
    resp = torch.where(
        comp == 0,
        tgt + vm,
        torch.where(comp == 1, nt + vm, (torch.rand(n, generator=g) * 2 - 1) * math.pi),
    )
    fit = br.fit_swap_mixture(br.wrap(resp), tgt, nt)
    assert fit["w_target"] == pytest.approx(0.65, abs=0.02)
    assert fit["w_swap"] == pytest.approx(0.25, abs=0.02)
    assert fit["w_guess"] == pytest.approx(0.10, abs=0.02)
    assert fit["kappa"] == pytest.approx(kappa, rel=0.1)


def test_oracle_denoiser_reproduces_the_mixture():
    g = gen(5)
    sched = br.ddpm_schedule(20)
    tr = br.make_trials(8000, 0.2, 0.0, 0.15, generator=g)
    means = torch.stack([br.unit(tr.target), br.unit(tr.nontarget)], 1)
    w = torch.tensor([0.8, 0.2])

    def oracle(x, s):
        return br.gmm_posterior_mean(x, s, sched, means, w, 0.15)

    x = br.ancestral_sample(oracle, torch.randn(8000, 2, generator=g), sched, g)
    fit = br.fit_swap_mixture(br.angle(x), tr.target, tr.nontarget)
    data = br.fit_swap_mixture(br.angle(tr.x0), tr.target, tr.nontarget)
    # signed, as the notebook's oracle-sampler check: with T = 20 steps the sampler
    # loses some swap mass (it never adds any), by at most 0.05
    assert -0.05 <= fit["w_swap"] - data["w_swap"] <= 0.01


def test_trials_generator_rates_and_distance_profile():
    tr = br.make_trials(50_000, 0.2, 0.05, generator=gen(6))
    freq = torch.bincount(tr.component, minlength=3).float() / len(tr)
    assert torch.allclose(freq, torch.tensor([0.75, 0.2, 0.05]), atol=0.01)
    assert torch.allclose(tr.x0.norm(dim=-1).mean(), torch.tensor(1.0), atol=0.03)
    d = br.make_trials(50_000, 0.2, 0.05, swap_kind="distance", generator=gen(7))
    assert float(d.swap_p.mean()) == pytest.approx(0.2, abs=0.01)
    near, far = d.distance < 0.5, d.distance > 2.5
    assert d.swap_p[near].mean() > 3 * d.swap_p[far].mean()
    none = br.make_trials(1000, 0.2, swap_kind="none", generator=gen())
    assert (none.component != 1).all()
    cm = br.conditional_mean(tr)
    assert cm.shape == (50_000, 2)
    assert torch.allclose(cm, 0.75 * br.unit(tr.target) + 0.2 * br.unit(tr.nontarget))


def test_inputs_layout():
    tr = br.make_trials(3, generator=gen())
    u = br.trial_inputs(tr, 2, 3, 4)
    assert u.shape == (9, 3, br.N_IN)
    assert (u[2:5] == 0).all()  # the delay is silent
    assert torch.equal(u[5:, :, 8:10].argmax(-1), tr.cue.expand(4, 3))
    assert torch.allclose(u[5:, 0, 10], torch.tensor([1.0, 0.75, 0.5, 0.25]))


@pytest.mark.parametrize("method", br.METHODS)
def test_training_smoke_and_sampling_shapes(method):
    net, sched, losses = br.train(
        method, N=12, hidden=16, iters=3, batch=16, T=10, n_stim=2, n_delay=1
    )
    assert len(losses) == 3 and all(math.isfinite(l) for l in losses)
    tr = br.make_trials(7, generator=gen())
    x = br.sample_responses(net, tr, method, 2, 1, 10, sched, generator=gen(1))
    assert x.shape == (7, 2) and torch.isfinite(x).all()


def test_distance_helpers():
    assert br.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1)
    tr = br.make_trials(4000, 0.2, generator=gen(8))
    c, w = br.swap_by_distance(tr.x0, tr, 3)
    assert c.shape == w.shape == (3,) and ((w >= 0) & (w <= 1)).all()


def test_bad_inputs():
    sched = br.ddpm_schedule(10)
    x = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="s must lie"):
        br.posterior(x, x, 0, sched)
    with pytest.raises(TypeError, match="integer"):
        br.posterior(x, x, 1.5, sched)
    with pytest.raises(ValueError, match="same shape"):
        br.posterior(x, torch.zeros(3, 3), 1, sched)
    with pytest.raises(ValueError, match="NaN"):
        br.posterior(x, torch.full((3, 2), float("nan")), 1, sched)
    with pytest.raises(TypeError, match="torch.Tensor"):
        br.posterior([[0.0, 0.0]], x, 1, sched)
    with pytest.raises(ValueError, match="beta_max"):
        br.ddpm_schedule(5)
    with pytest.raises(TypeError, match="int"):
        br.ddpm_schedule(10.0)
    with pytest.raises(ValueError, match="swap_kind"):
        br.make_trials(4, swap_kind="near")
    with pytest.raises(ValueError, match="swap_prob"):
        br.make_trials(4, swap_prob=1.5)
    with pytest.raises(ValueError, match="exceeds 1"):
        br.make_trials(4, swap_prob=0.5, swap_kind="distance")
    with pytest.raises(TypeError, match="batch"):
        br.make_trials(4.0)
    with pytest.raises(ValueError, match="empty"):
        br.fit_swap_mixture(torch.zeros(0), torch.zeros(0), torch.zeros(0))
    with pytest.raises(ValueError, match=r"\(B,\)"):
        br.fit_swap_mixture(torch.zeros(3), torch.zeros(3), torch.zeros(4))
    with pytest.raises(ValueError, match="method"):
        br.train("gan", iters=1)
    net = br.LeakyRNN(8)
    tr = br.make_trials(4)
    with pytest.raises(ValueError, match="Schedule"):
        br.sample_responses(net, tr, "ddpm", 1, 1, 10, None)
    with pytest.raises(TypeError, match="Trials"):
        br.mse_loss(net, torch.zeros(4, 2), 1, 1, 10)
    with pytest.raises(ValueError, match="nonlin"):
        br.LeakyRNN(8, nonlin="gelu")
    with pytest.raises(ValueError, match="weighting"):
        br.ddpm_rnn_loss(net, tr, sched, 1, 1, weighting="snr")


def test_device_follows_inputs():
    sched = br.ddpm_schedule(10, device="cpu")
    m, _ = br.posterior(torch.zeros(2, 2), torch.zeros(2, 2), 3, sched)
    assert m.device.type == "cpu"


def test_exercise_checker():
    stub, reference, ns = exercise_parts("07-behaviour-rnn", "my_cond_cov")
    assert ns.br.check_cond_cov(stub).status == "not done yet"
    assert ns.br.check_cond_cov(reference).status == "correct"

    def no_blur(trials, noise):  # forgets the noise: off by σ² I
        return reference(trials, noise) - noise**2 * torch.eye(2)

    verdict = ns.br.check_cond_cov(no_blur)
    assert verdict.status == "wrong" and "identity" in verdict
    assert "noise ** 2" not in verdict and "I/2" not in verdict  # no recipe

    def std_not_var(trials, noise):  # σ where σ² belongs
        return reference(trials, noise) - noise**2 * torch.eye(2) + noise * torch.eye(2)

    assert ns.br.check_cond_cov(std_not_var).status == "wrong"
    assert ns.br.check_cond_cov(lambda tr, n: torch.zeros(len(tr), 2)).status == "wrong"


def test_conditional_cov_against_monte_carlo():
    tr = br.make_trials(3, 0.2, 0.1, 0.2, generator=gen(3))
    cov = br.conditional_cov(tr, 0.2)
    rep = br.repeat_stimuli(tr, torch.arange(3), 40_000, 0.2, generator=gen(4))
    x = rep.x0.reshape(3, 40_000, 2)
    d = x - x.mean(1, keepdim=True)
    mc = d.transpose(1, 2) @ d / 40_000
    assert torch.allclose(mc, cov, atol=6e-3)
    with pytest.raises(TypeError, match="Trials"):
        br.conditional_cov(tr.x0, 0.2)


def test_second_mode_separates_two_modes_from_one():
    tr = br.make_trials(400, generator=gen(5))
    idx = br.pick_stimuli(tr, 6)
    assert bool(
        (br.wrap(tr.nontarget[idx] - tr.target[idx]).abs() >= math.pi / 2).all()
    )
    t, o = tr.target[idx], tr.nontarget[idx]
    two = br.two_mode_like(t, o, 600, 0.15, 8.0, gen(6))
    r2 = br.second_mode(two, t, o)
    assert r2["fraction"] == 1.0 and (r2["dbic"] > 0).all()
    r1 = br.second_mode(br.gaussian_like(two, gen(7)), t, o)
    assert r1["fraction"] == 0.0
    # a two-mode cloud whose minor mode sits at the cued colour is not a swap mode
    r3 = br.second_mode(br.two_mode_like(t, o, 600, 0.85, 8.0, gen(8)), t, o)
    assert r3["fraction"] == 0.0


def test_mode_helpers_bad_inputs():
    tr = br.make_trials(50, generator=gen(0))
    with pytest.raises(ValueError, match="apart"):
        br.pick_stimuli(tr, 49, min_sep=3.1)
    with pytest.raises(TypeError, match="integer"):
        br.repeat_stimuli(tr, torch.tensor([0.5]), 3, 0.1)
    with pytest.raises(ValueError, match="idx"):
        br.repeat_stimuli(tr, torch.tensor([50]), 3, 0.1)
    with pytest.raises(ValueError, match="shape"):
        br.second_mode(torch.zeros(2, 30, 2), torch.zeros(3), torch.ones(3))
    with pytest.raises(ValueError, match="20 samples"):
        br.second_mode(torch.zeros(2, 5, 2), torch.zeros(2), torch.ones(2))
    with pytest.raises(ValueError, match="kappa"):
        br.two_mode_like(torch.zeros(2), torch.ones(2), 10, 0.1, -1.0)
    with pytest.raises(ValueError, match="NaN"):
        br.gaussian_like(torch.full((2, 10, 2), float("nan")))


def test_review_inputs_raise():
    s = br.ddpm_schedule(10)
    with pytest.raises(ValueError, match="NaN"):
        br.ancestral_sample(lambda x, s_: x, torch.full((2, 2), float("nan")), s)
    with pytest.raises(ValueError, match="one step per row"):
        br.posterior(torch.zeros(5, 2), torch.zeros(5, 2), torch.tensor([1, 2, 3]), s)
    with pytest.raises(ValueError, match="means must have shape"):
        br.gmm_posterior_mean(
            torch.zeros(3, 2), 3, s, torch.zeros(2, 3), torch.tensor([0.5, 0.5]), 0.1
        )
    with pytest.raises(TypeError, match="Generator"):
        br.make_trials(4, generator="x")
    with pytest.raises(ValueError, match="T >= 10"):
        br.train("ddpm", N=8, hidden=8, iters=1, batch=4, T=5, n_stim=1, n_delay=1)


def test_fit_swap_mixture_loglik_is_of_the_returned_parameters():
    tr = br.make_trials(2000, generator=gen(9))
    th = br.angle(tr.x0)
    f = br.fit_swap_mixture(th, tr.target, tr.nontarget, iters=3)
    w = torch.tensor([f["w_target"], f["w_swap"], f["w_guess"]], dtype=torch.float64)
    k = torch.tensor(f["kappa"], dtype=torch.float64)
    e_t = br.wrap(th - tr.target).double()
    e_s = br.wrap(th - tr.nontarget).double()
    p = (
        w[0] * br.vm_logpdf(e_t, k).exp()
        + w[1] * br.vm_logpdf(e_s, k).exp()
        + w[2] / (2 * math.pi)
    )
    assert abs(float(p.log().mean()) - f["loglik"]) < 1e-9


def test_swap_mode_contrast_separates_bimodal_from_unimodal():
    tr = br.make_trials(8000, 0.2, 0.05, 0.15, generator=gen(9))
    assert br.swap_mode_contrast(tr.x0, tr.target, tr.nontarget) > 0.1
    mean = br.conditional_mean(tr)
    assert br.swap_mode_contrast(mean, tr.target, tr.nontarget) <= 0
    d = br.unit(tr.nontarget) - br.unit(tr.target)
    cov = 0.15**2 * torch.eye(2) + 0.16 * d[:, :, None] * d[:, None, :]
    z = torch.randn(8000, 2, 1, generator=gen())
    gauss = mean + (torch.linalg.cholesky(cov) @ z)[..., 0]
    assert br.swap_mode_contrast(gauss, tr.target, tr.nontarget) < -0.05
    with pytest.raises(ValueError, match="min_sep"):
        br.swap_mode_contrast(tr.x0[:1], tr.target[:1] * 0, tr.target[:1] * 0)
    with pytest.raises(ValueError, match="share B"):
        br.swap_mode_contrast(tr.x0, tr.target[:5], tr.nontarget[:5])


def test_a1inv_against_a_root_finder():
    from scipy.optimize import brentq
    from scipy.special import i0e, i1e

    for kappa in (0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 45.0, 100.0):
        R = i1e(kappa) / i0e(kappa)
        exact = brentq(lambda k: i1e(k) / i0e(k) - R, 1e-6, 1e4)  # noqa: B023 called this iteration
        got = float(br._a1inv(torch.tensor(R, dtype=torch.float64)))
        assert got == pytest.approx(exact, rel=0.01)


def test_moment_matching_loss_is_the_gaussian_nll():
    net = br.LeakyRNN(12, hidden=16, generator=gen())
    with torch.no_grad():
        net.chol_head.weight.normal_(0, 0.3, generator=gen(1))
    tr = br.make_trials(50, generator=gen(2))
    loss = br.moment_matching_loss(net, tr, 2, 1, 10)
    r = br.final_state(net, tr, 2, 1, 10)
    mvn = torch.distributions.MultivariateNormal(net.readout(r), scale_tril=net.chol(r))
    want = -mvn.log_prob(tr.x0).mean() - math.log(2 * math.pi)
    assert float(loss.detach()) == pytest.approx(float(want.detach()), rel=1e-5)


def test_mm_sampler_covariance_is_LLt():
    net = br.LeakyRNN(12, hidden=16, generator=gen())
    with torch.no_grad():
        net.chol_head.bias.copy_(torch.tensor([-0.5, -1.5, 0.4]))
    one = br.make_trials(1, generator=gen(3))
    n = 40_000
    fields = ("colours", "locations", "cue", "swap_p", "component", "x0")
    tr = br.Trials(
        *(getattr(one, f).expand(n, *getattr(one, f).shape[1:]) for f in fields)
    )
    x = br.sample_responses(net, tr, "mm", 2, 1, 10, generator=gen(4))
    L = net.chol(br.final_state(net, one, 2, 1, 10))[0]
    assert torch.allclose(torch.cov(x.T), L @ L.T, rtol=0.05, atol=2e-3)


def _per_step_errors(net, trials, sched, n_stim, n_delay, generator):
    u = br.trial_inputs(trials, n_stim, n_delay, sched.T)
    chain = br.forward_chain(trials.x0, sched, generator)
    r = net.prepare(u, n_stim + n_delay)
    err = torch.zeros(sched.T + 1)
    for k, s in enumerate(range(sched.T, 0, -1)):
        r = net.step(net.set_x(r, chain[s]), u[n_stim + n_delay + k])
        mt, _ = br.posterior(chain[0], chain[s], s, sched)
        err[s] = ((net.readout(r) - mt) ** 2).sum(-1).mean()
    return err[1:]


def test_eps_weighting_is_the_eps_prediction_loss():
    # the identity behind the weights: mu = (x_s - b/sqrt(1-ab) eps_hat)/sqrt(a) gives
    # |mu - mu_tilde|^2 a (1 - ab) / b^2 = |eps_hat - eps|^2
    sched = br.ddpm_schedule(10, dtype=torch.float64)
    g = gen(5)
    x0, eps, eps_hat = (
        torch.randn(4, 2, generator=g, dtype=torch.float64) for _ in range(3)
    )
    for s in (1, 5, 10):
        a, ab, b = sched.alphas[s], sched.alpha_bar[s], sched.betas[s]
        xs = br.q_sample(x0, s, sched, eps)
        mt, _ = br.posterior(x0, xs, s, sched)
        mu = (xs - b / (1 - ab).sqrt() * eps_hat) / a.sqrt()
        lhs = ((mu - mt) ** 2).sum(-1) * a * (1 - ab) / b**2
        assert torch.allclose(lhs, ((eps_hat - eps) ** 2).sum(-1), rtol=1e-9)
    # and the library's weighted loss is the per-step mean loss times those weights
    sched = br.ddpm_schedule(10)
    net = br.LeakyRNN(12, hidden=16, generator=gen())
    tr = br.make_trials(32, generator=gen(6))
    err = _per_step_errors(net, tr, sched, 2, 1, gen(7))
    mu_loss = br.ddpm_rnn_loss(net, tr, sched, 2, 1, gen(7), weighting="mu")
    eps_loss = br.ddpm_rnn_loss(net, tr, sched, 2, 1, gen(7), weighting="eps")
    w = sched.alphas[1:] * (1 - sched.alpha_bar[1:]) / sched.betas[1:] ** 2
    err = err.detach()
    assert float(mu_loss.detach()) == pytest.approx(float(err.sum()), rel=1e-4)
    assert float(eps_loss.detach()) == pytest.approx(float((err * w).mean()), rel=1e-4)
    assert w[0] > 10 * w[-1]  # the eps loss weights the last steps (small s) up


def test_swap_by_distance_on_distance_data():
    tr = br.make_trials(12_000, 0.2, 0.05, swap_kind="distance", generator=gen(10))
    c, w = br.swap_by_distance(tr.x0, tr, 4)
    assert w[0] > 0.3 and w[-1] < 0.1
    assert br.spearman(c, w) == pytest.approx(-1.0)
    flat = br.make_trials(12_000, 0.2, 0.05, generator=gen(11))
    _, wf = br.swap_by_distance(flat.x0, flat, 4)
    assert float(wf.max() - wf.min()) < 0.05


def test_spearman_ties_and_reference():
    from scipy.stats import spearmanr

    x, y = [1, 2, 3, 4, 5], [1, 1, 2, 2, 5]
    assert br.spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)
    assert br.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1)


def test_conditional_mean_uses_the_trials_guess_rate():
    tr = br.make_trials(1000, 0.2, 0.0, generator=gen(12))
    cm = br.conditional_mean(tr)
    assert torch.allclose(cm, 0.8 * br.unit(tr.target) + 0.2 * br.unit(tr.nontarget))
    with pytest.raises(ValueError, match="guess_prob"):
        br.conditional_mean(tr, guess_prob=2.0)
    with pytest.raises(ValueError, match="<= 1"):
        br.conditional_mean(tr, swap_prob=0.7, guess_prob=0.5)


def test_exercise_checker_accepts_float32_answers():
    stub, reference, ns = exercise_parts("07-behaviour-rnn", "my_cond_cov")
    assert (
        ns.br.check_cond_cov(lambda tr, n: reference(tr, n).float()).status == "correct"
    )
    assert (
        ns.br.check_cond_cov(lambda tr, n: reference(tr, n).double()).status
        == "correct"
    )


def test_more_bad_inputs():
    g = gen(13)
    tr = br.make_trials(600, generator=g)
    sched = br.ddpm_schedule(10)
    with pytest.raises(ValueError, match="constant"):
        br.spearman([1, 2, 3, 4], [0, 0, 0, 0])
    with pytest.raises(ValueError, match="finite"):
        br.spearman([1, 2, 3], [1, float("nan"), 2])
    with pytest.raises(ValueError, match="radians"):
        deg = torch.rad2deg(br.angle(tr.x0))
        br.fit_swap_mixture(deg, torch.rad2deg(tr.target), torch.rad2deg(tr.nontarget))
    with pytest.raises(ValueError, match="coincide"):
        br.fit_swap_mixture(br.angle(tr.x0), tr.target, tr.target)
    with pytest.raises(ValueError, match=r"\(600, 2\)"):
        br.swap_by_distance(tr.x0[:500], tr, 3)
    with pytest.raises(ValueError, match="per bin"):
        br.swap_by_distance(tr.x0, tr, 60)
    with pytest.raises(ValueError, match="same shape"):
        br.q_sample(torch.zeros(5, 2), 3, sched, torch.ones(2))
    with pytest.raises(ValueError, match="NaN"):
        br.q_sample(torch.full((2, 2), float("nan")), 3, sched, torch.ones(2, 2))
    with pytest.raises(ValueError, match="sum to 1"):
        br.gmm_posterior_mean(
            torch.zeros(3, 2),
            3,
            sched,
            torch.zeros(2, 2),
            torch.tensor([5.0, 5.0]),
            0.1,
        )
    with pytest.raises(TypeError, match="seed"):
        br.train(
            "mse", N=8, hidden=8, iters=1, batch=4, T=10, n_stim=1, n_delay=1, seed=0.7
        )
    with pytest.raises(ValueError, match="lr"):
        br.train(
            "mse", N=8, hidden=8, iters=1, batch=4, T=10, n_stim=1, n_delay=1, lr=-1.0
        )
    with pytest.raises(ValueError, match="radius"):
        br.swap_mode_contrast(tr.x0, tr.target, tr.nontarget, radius=-1.0)
    with pytest.raises(ValueError, match="min_sep"):
        br.swap_mode_contrast(tr.x0, tr.target, tr.nontarget, min_sep=4.0)
    with pytest.raises(TypeError, match="length"):
        br.distance_profile(0.2, True)
    with pytest.raises(ValueError, match="length"):
        br.distance_profile(0.2, -1.0)
    with pytest.raises(TypeError, match="Trials"):
        br.conditional_mean(torch.zeros(3, 2))


def test_same_trials_for_every_method(monkeypatch):
    # the three objectives see identical trials at every step (separate generators)
    from iclr26.behaviour_rnn import rnn

    seen = {}
    orig = rnn.make_trials

    def spy(*a, **k):
        tr = orig(*a, **k)
        seen.setdefault(spy.method, []).append(tr.x0.clone())
        return tr

    monkeypatch.setattr(rnn, "make_trials", spy)
    for m in br.METHODS:
        spy.method = m
        br.train(m, N=8, hidden=8, iters=3, batch=4, T=10, n_stim=1, n_delay=1)
    assert len(seen["ddpm"]) == 3
    for m in ("mse", "mm"):
        assert all(torch.equal(a, b) for a, b in zip(seen["ddpm"], seen[m]))


def test_one_peak_smear_has_one_peak_and_the_planned_mass_past_the_midpoint():
    # the null case of the second-mode test: one peak at the cued colour, falling
    # monotonically toward the other colour, with `mass` of it past the midpoint
    g = gen(21)
    K, M = 3, 200_000
    tgt = torch.tensor([0.0, 1.0, -2.0])
    oth = tgt + torch.tensor([2.0, -1.8, 1.6])
    reach = br.smear_reach(0.2)
    assert reach == pytest.approx(0.5 / 1.2815516, rel=1e-6)
    x = br.one_peak_smear(tgt, oth, M, reach, 1e6, g)  # no blur: the angle alone
    assert x.shape == (K, M, 2)
    frac = br.wrap(br.angle(x) - tgt[:, None]) / br.wrap(oth - tgt)[:, None]
    # on the side of the other colour (up to the blur, and a far tail that wraps)
    assert (frac > -0.01).float().mean() > 0.999
    past = (frac > 0.5).float().mean(1)
    assert torch.allclose(past, torch.full((K,), 0.2), atol=0.005)
    # the density of the position along the arc falls bin by bin: one peak
    hist = torch.histc(frac[0], bins=10, min=0.0, max=1.0)
    assert (hist.diff() < 0).all()
    with pytest.raises(ValueError, match="reach"):
        br.one_peak_smear(tgt, oth, 5, 0.0, 5.0)
    with pytest.raises(ValueError, match="mass"):
        br.smear_reach(1.0)


def test_training_seeds_are_what_train_draws_from():
    s = br.training_seeds(7)
    assert s == {"init": 7, "data": 1_000_010, "noise": 2_000_010}
    with pytest.raises(TypeError, match="seed"):
        br.training_seeds(1.5)


def test_seeded_functions_do_not_depend_on_call_order_or_global_state():
    # a net's training and a draw of trials depend on their own seed or generator
    # only: the same numbers in either order, with an unrelated global draw between
    kw = dict(N=8, hidden=8, iters=3, batch=4, T=10, n_stim=1, n_delay=1)

    def net_out():
        net, _, losses = br.train("mm", seed=3, **kw)
        return torch.cat([p.detach().flatten() for p in net.parameters()]), losses

    def trials():
        return br.make_trials(16, generator=gen(5)).x0

    torch.manual_seed(123)
    a1, l1 = net_out()
    torch.rand(7)
    b1 = trials()
    state = torch.get_rng_state()
    torch.manual_seed(456)
    b2 = trials()
    torch.randn(3)
    a2, l2 = net_out()
    assert torch.equal(a1, a2) and l1 == l2 and torch.equal(b1, b2)
    # and building a net leaves the caller's global stream where it was
    torch.set_rng_state(state)
    before = torch.rand(3)
    torch.set_rng_state(state)
    br.LeakyRNN(8, hidden=8, generator=gen(1))
    assert torch.equal(torch.rand(3), before)
