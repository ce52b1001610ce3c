"""The leaky RNN with a fixed orthonormal readout, its three training objectives
(DDPM reverse chain by teacher forcing, MSE, Gaussian moment matching), sampling and
the training loop."""

from __future__ import annotations

import math

import torch
from torch import nn

from ..core import seeded
from ..validate import as_float, as_int
from ._base import Tensor
from .ddpm import Schedule, ddpm_schedule, forward_chain, posterior
from .task import N_IN, Trials, make_trials, trial_inputs

METHODS = ("ddpm", "mse", "mm")
# ReLU is the default: on one CPU thread it is ~8x cheaper than tanh, and the step is
# overhead-bound at these sizes.
NONLINS = {"relu": torch.relu, "tanh": torch.tanh}


class LeakyRNN(nn.Module):
    """r_{t+1} = (1 − α) r_t + α (W f(r_t) + U u_t + b), f = ReLU or tanh, read out by a
    fixed orthonormal W_x (2, N): x = W_x r. α = dt/τ. ``set_x`` replaces the
    behavioural component W_x r by a given x and leaves the null-space component (I −
    W_xᵀW_x) r unchanged. For moment matching, ``chol_head`` maps r to the 3 entries of
    a 2×2 Cholesky factor."""

    def __init__(
        self,
        N: int = 64,
        alpha: float = 0.5,
        nonlin: str = "relu",
        hidden: int = 0,
        gain: float | None = None,
        generator=None,
    ):
        super().__init__()
        N = as_int(N, "N", lo=3)
        hidden = as_int(hidden, "hidden", lo=0)
        self.alpha = as_float(alpha, "alpha", lo=1e-3, hi=1.0)
        if nonlin not in NONLINS:
            raise ValueError(f"nonlin must be one of {list(NONLINS)}, got {nonlin!r}")
        self.nonlin = nonlin
        self.f = NONLINS[nonlin]
        g = generator
        H = hidden or N  # width of the layer the recurrent weights read from
        self.W = nn.Parameter(torch.randn(H, N, generator=g) * (0.9 / math.sqrt(N)))
        self.U = nn.Parameter(torch.randn(H, N_IN, generator=g) / math.sqrt(N_IN))
        self.b = nn.Parameter(torch.zeros(H))
        self.hidden = hidden
        if hidden:  # the transition F is a one-hidden-layer MLP of (f(r), u)
            w2 = torch.randn(N, H, generator=g) * (0.9 / math.sqrt(H))
            self.W2 = nn.Parameter(w2)
            self.b2 = nn.Parameter(torch.zeros(N))
        q, _ = torch.linalg.qr(torch.randn(N, 2, generator=g))
        self.register_buffer("Wx", q.T.contiguous())  # (2, N), rows orthonormal
        # x is stored as gain·x along W_x; gain = 1 (the default) is the paper's
        # orthonormal readout. (gain = √N, making x as large as the other directions,
        # trained worse.)
        self.gain = 1.0 if gain is None else as_float(gain, "gain", lo=1e-3, hi=1e6)
        # Its weights are set just below: drawn inside seeded() so that building a
        # net never advances the caller's global random stream.
        with seeded(0):
            self.chol_head = nn.Linear(N, 3)
        nn.init.zeros_(self.chol_head.weight)
        nn.init.constant_(self.chol_head.bias, -1.0)

    @property
    def N(self) -> int:
        return self.Wx.shape[1]

    def step(self, r: Tensor, u: Tensor) -> Tensor:
        """One Euler step. r: (B, N), u: (B, 11) → (B, N)."""
        drive = self.f(r) @ self.W.T + u @ self.U.T + self.b
        if self.hidden:
            drive = torch.relu(drive) @ self.W2.T + self.b2
        return (1 - self.alpha) * r + self.alpha * drive

    def readout(self, r: Tensor) -> Tensor:
        """x = W_x r / gain: (B, N) → (B, 2)."""
        return r @ self.Wx.T / self.gain

    def set_x(self, r: Tensor, x: Tensor) -> Tensor:
        """r with its behavioural component replaced by x: r − W_xᵀ W_x r + gain · W_xᵀ
        x."""
        return r + self.gain * (x - self.readout(r)) @ self.Wx

    def chol(self, r: Tensor) -> Tensor:
        """(B, N) → (B, 2, 2) lower-triangular Cholesky factor with positive
        diagonal."""
        h = self.chol_head(r)
        L = torch.zeros(r.shape[0], 2, 2, device=r.device, dtype=r.dtype)
        L[:, 0, 0] = nn.functional.softplus(h[:, 0]) + 1e-3
        L[:, 1, 1] = nn.functional.softplus(h[:, 1]) + 1e-3
        L[:, 1, 0] = h[:, 2]
        return L

    def prepare(self, u: Tensor, n_pre: int) -> Tensor:
        """Run the stimulus and delay (the first ``n_pre`` inputs) from r = 0.
        → (B, N)."""
        r = torch.zeros(u.shape[1], self.N, device=u.device, dtype=u.dtype)
        for t in range(n_pre):
            r = self.step(r, u[t])
        return r


def _check_net_inputs(net, trials, sched):
    if not isinstance(net, LeakyRNN):
        raise TypeError(f"net must be a LeakyRNN, got {type(net).__name__}")
    if not isinstance(trials, Trials):
        raise TypeError(
            f"trials must be a Trials batch (from make_trials), got "
            f"{type(trials).__name__}"
        )
    if sched is not None and not isinstance(sched, Schedule):
        raise TypeError(
            f"sched must be a Schedule (from ddpm_schedule), got {type(sched).__name__}"
        )


def ddpm_rnn_loss(
    net: LeakyRNN,
    trials: Trials,
    sched: Schedule,
    n_stim: int,
    n_delay: int,
    generator=None,
    weighting: str = "mu",
) -> Tensor:
    """The DDPM loss of the RNN on a batch: teacher-force W_x r to x_s of a forward
    chain, take one Euler step, and compare μ_θ = W_x r' with μ̃(x_s, x_0), summed over
    s, averaged over trials. ``weighting="mu"``: the unweighted mean error (the ELBO's
    terms up to the 1/2σ_s² factor); ``"eps"``: rescaled to the ε-prediction loss of the
    standard DDPM (Ho et al., 2020)."""
    _check_net_inputs(net, trials, sched)
    if weighting not in ("mu", "eps"):
        raise ValueError(f"weighting must be 'mu' or 'eps', got {weighting!r}")
    T, n_pre = sched.T, n_stim + n_delay
    u = trial_inputs(trials, n_stim, n_delay, T)
    chain = forward_chain(trials.x0, sched, generator)  # (T + 1, B, 2)
    r = net.prepare(u, n_pre)
    mus = []
    for k, s in enumerate(range(T, 0, -1)):  # reverse time: s = T … 1
        r = net.step(net.set_x(r, chain[s]), u[n_pre + k])
        mus.append(net.readout(r))
    mu = torch.stack(mus[::-1])  # (T, B, 2), entry s − 1
    steps = torch.arange(1, T + 1, device=chain.device)[:, None]
    mu_tilde, _ = posterior(chain[0].expand_as(chain[1:]), chain[1:], steps, sched)
    err = ((mu - mu_tilde) ** 2).sum(-1).mean(-1)  # (T,) one term per step
    # ‖ε̂ − ε‖² = ‖μ_θ − μ̃‖² · α_s (1 − ᾱ_s) / β_s²  (mean over s)
    if weighting == "eps":
        b = sched.betas[1:]
        err = err * sched.alphas[1:] * (1 - sched.alpha_bar[1:]) / b**2 / T
    return err.sum()


def final_state(
    net: LeakyRNN, trials: Trials, n_stim: int, n_delay: int, T: int
) -> Tensor:
    """Run a whole trial without teacher forcing (the MSE and moment-matched nets). →
    (B, N)."""
    u = trial_inputs(trials, n_stim, n_delay, T)
    r = net.prepare(u, n_stim + n_delay)
    for k in range(T):
        r = net.step(r, u[n_stim + n_delay + k])
    return r


def mse_loss(
    net: LeakyRNN, trials: Trials, n_stim: int, n_delay: int, T: int
) -> Tensor:
    """‖W_x r_end − x0‖², averaged: its minimiser is the conditional mean E[x0 |
    stimulus]."""
    _check_net_inputs(net, trials, None)
    r = final_state(net, trials, n_stim, n_delay, T)
    return ((net.readout(r) - trials.x0) ** 2).sum(-1).mean()


def moment_matching_loss(
    net: LeakyRNN, trials: Trials, n_stim: int, n_delay: int, T: int
) -> Tensor:
    """Gaussian negative log-likelihood of x0 under N(W_x r_end, L Lᵀ): its minimiser
    matches the conditional mean and covariance (the first two moments), and nothing
    else."""
    _check_net_inputs(net, trials, None)
    r = final_state(net, trials, n_stim, n_delay, T)
    L = net.chol(r)
    diff = (trials.x0 - net.readout(r))[..., None]
    z = torch.linalg.solve_triangular(L, diff, upper=False)[..., 0]
    logdet = torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)
    return (0.5 * (z**2).sum(-1) + logdet).mean()


@torch.no_grad()
def sample_responses(
    net: LeakyRNN,
    trials: Trials,
    method: str,
    n_stim: int,
    n_delay: int,
    T: int,
    sched: Schedule | None = None,
    generator=None,
) -> Tensor:
    """The network's responses to ``trials``, (B, 2). ``"ddpm"``: the RNN runs the
    reverse chain from x_T ~ N(0, I), adding √β̃_s z in the behavioural subspace after
    each step; ``"mse"``: its deterministic readout; ``"mm"``: a draw from its Gaussian.
    """
    _check_net_inputs(net, trials, sched)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    B, dev = len(trials), trials.colours.device
    if method == "ddpm":
        if sched is None or sched.T != T:
            raise ValueError(
                "method 'ddpm' needs the Schedule it was trained with (sched.T == T)"
            )
        u = trial_inputs(trials, n_stim, n_delay, T)
        r = net.prepare(u, n_stim + n_delay)
        x = torch.randn(B, 2, generator=generator).to(dev)
        for k, s in enumerate(range(T, 0, -1)):
            r = net.step(net.set_x(r, x), u[n_stim + n_delay + k])
            z = torch.randn(B, 2, generator=generator).to(dev)
            x = net.readout(r) + sched.post_var[s].sqrt() * z
        return x
    r = final_state(net, trials, n_stim, n_delay, T)
    if method == "mse":
        return net.readout(r)
    z = torch.randn(B, 2, 1, generator=generator).to(dev)
    return net.readout(r) + (net.chol(r) @ z)[..., 0]


def training_seeds(seed: int) -> dict:
    """The seeds :func:`train` draws from: ``init`` (the weights), ``data`` (the
    stream of fresh trials, one batch per step) and ``noise`` (the DDPM's forward
    noise). For seeds below 10⁶ the three streams of one seed never meet another
    seed's."""
    seed = as_int(seed, "seed", lo=0)
    return {"init": seed, "data": seed + 1_000_003, "noise": seed + 2_000_003}


def train(
    method: str,
    N: int = 64,
    iters: int = 800,
    batch: int = 256,
    T: int = 20,
    n_stim: int = 4,
    n_delay: int = 4,
    lr: float = 3e-3,
    swap_prob: float = 0.2,
    guess_prob: float = 0.05,
    noise: float = 0.15,
    swap_kind: str = "flat",
    alpha: float = 0.5,
    nonlin: str = "relu",
    hidden: int = 0,
    gain=None,
    visible: bool = False,
    seed: int = 0,
    device=None,
    weighting: str = "mu",
):
    """Train one RNN by ``method`` on fresh surrogate trials each iteration (Adam,
    cosine learning-rate decay). Returns (net, schedule or None, list of losses)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    iters, batch = as_int(iters, "iters", lo=1), as_int(batch, "batch", lo=1)
    seed = as_int(seed, "seed", lo=0)
    if method == "ddpm" and as_int(T, "T", lo=1) < 10:
        raise ValueError(
            f"method 'ddpm' needs T >= 10, got T = {T}: train uses the "
            "default schedule, whose β_max = 8/T must stay below 1"
        )
    lr = as_float(lr, "lr", lo=0.0, hi=1.0, open_lo=True, open_hi=True)
    # Three generators, so that every method sees the same initialisation and the *same*
    # trials at every step; only the DDPM draws forward-process noise (from its own).
    seeds = training_seeds(seed)
    g = torch.Generator().manual_seed(seeds["init"])
    g_data = torch.Generator().manual_seed(seeds["data"])
    g_noise = torch.Generator().manual_seed(seeds["noise"])
    net = LeakyRNN(
        N, alpha=alpha, nonlin=nonlin, hidden=hidden, gain=gain, generator=g
    ).to(device)
    sched = ddpm_schedule(T, device=device) if method == "ddpm" else None
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    lr_sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, iters)
    losses = []
    for _ in range(iters):
        tr = make_trials(
            batch,
            swap_prob,
            guess_prob,
            noise,
            swap_kind,
            generator=g_data,
            device=device,
            visible=visible,
        )
        if method == "ddpm":
            loss = ddpm_rnn_loss(net, tr, sched, n_stim, n_delay, g_noise, weighting)
        elif method == "mse":
            loss = mse_loss(net, tr, n_stim, n_delay, T)
        else:
            loss = moment_matching_loss(net, tr, n_stim, n_delay, T)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        lr_sched.step()
        losses.append(loss.item())
    return net, sched, losses
