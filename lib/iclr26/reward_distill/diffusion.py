"""Masked discrete diffusion on the toy: the MLP denoiser, its training loss, the
one-letter-per-step sampler, and exact enumeration of all 5**L partially masked strings
(exact laws, exact soft values)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..validate import check_positive
from .toy import MASK, VOCAB, _check_tokens


# -------------------------------------------------------------------------------- model
class MaskedDenoiser(nn.Module):
    """An MLP masked-diffusion denoiser: ``x_t`` (some letters masked) → logits of
    ``x_0`` per position.

    The input is the one-hot of 5 symbols (ACGT + mask) per position, flattened; the
    output is (B, L, 4) logits over ACGT at every position (used only where ``x_t`` is
    masked). As in MDLM the network is not told the time: the number of masks
    already says it.
    """

    def __init__(self, length: int, hidden: int = 128, depth: int = 2):
        super().__init__()
        if length < 1 or hidden < 1 or depth < 1:
            raise ValueError(
                f"length, hidden and depth must be positive, got {length}, {hidden}, "
                f"{depth}"
            )
        self.length = length
        layers: list[nn.Module] = [nn.Linear(length * (VOCAB + 1), hidden), nn.SiLU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(hidden, hidden), nn.SiLU()]
        layers.append(nn.Linear(hidden, length * VOCAB))
        self.net = nn.Sequential(*layers)

    def forward(self, x_t: torch.Tensor) -> torch.Tensor:
        """x_t: (B, L) ids in 0..4. Returns (B, L, 4) logits of the clean letters."""
        _check_tokens(x_t, "x_t", allow_mask=True)
        if x_t.shape[1] != self.length:
            raise ValueError(f"x_t must have length {self.length}, got {x_t.shape[1]}")
        h = F.one_hot(x_t.long(), VOCAB + 1).float().flatten(1)  # (B, L*5)
        return self.net(h).view(-1, self.length, VOCAB)  # (B, L, 4)


def masked_diffusion_loss(
    model: MaskedDenoiser, x0: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """The order-agnostic masked-diffusion loss on clean strings x0: (B, L).

    Draw k ~ U{1..L}, mask k random positions, and score the model's prediction of the
    masked letters: ``−(L/k) Σ_{i masked} log p_θ(x0_i | x_t)`` averaged over the batch
    (the ELBO weight L/k makes this an upper bound on −log p_θ(x0) for the one-at-a-time
    sampler below).
    """
    _check_tokens(x0, "x0")
    b, length = x0.shape
    k = torch.randint(1, length + 1, (b, 1), generator=generator, device="cpu").to(
        x0.device
    )  # (B, 1)
    order = (
        torch.rand(b, length, generator=generator, device="cpu")
        .to(x0.device)
        .argsort(1)
    )
    masked = order < k  # (B, L): exactly k masked per row
    x_t = torch.where(masked, torch.full_like(x0, MASK), x0)
    logp = model(x_t).log_softmax(-1).gather(-1, x0.unsqueeze(-1)).squeeze(-1)  # (B, L)
    return -((logp * masked).sum(1) * length / k.squeeze(1)).mean()


def train_denoiser(
    model: MaskedDenoiser,
    data: torch.Tensor,
    steps: int,
    batch_size: int = 256,
    lr: float = 3e-3,
    generator: torch.Generator | None = None,
) -> list[float]:
    """Pretrain ``model`` on clean strings ``data`` (N, L) with Adam.
    Returns the loss per step."""
    _check_tokens(data, "data")
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    losses = []
    for _ in range(steps):
        idx = torch.randint(
            0, data.shape[0], (batch_size,), generator=generator, device="cpu"
        ).to(data.device)
        loss = masked_diffusion_loss(model, data[idx], generator)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


# ----------------------------------------------------------------------------- sampling
@torch.no_grad()
def rollout_step(
    model: nn.Module, x_t: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """One reverse step ``x_{t-1} ~ p_θ(· | x_t)``: pick one masked position uniformly,
    draw its letter.

    x_t: (B, L) with at least one mask per row. Returns x_{t-1}: (B, L) with
        one fewer mask.
    """
    _check_tokens(x_t, "x_t", allow_mask=True)
    masked = x_t == MASK
    if not masked.any(1).all():
        raise ValueError("every row of x_t needs at least one masked position")
    score = torch.rand(x_t.shape, generator=generator, device="cpu").to(x_t.device)
    # (B,) uniform among the masked positions
    pos = torch.where(masked, score, -1.0).argmax(1)
    logits = model(x_t)[torch.arange(x_t.shape[0], device=x_t.device), pos]  # (B, 4)
    tok = torch.multinomial(logits.softmax(-1), 1, generator=generator)[:, 0]
    x_s = x_t.clone()
    x_s[torch.arange(x_t.shape[0], device=x_t.device), pos] = tok
    return x_s


@torch.no_grad()
def sample(
    model: nn.Module,
    n: int,
    length: int,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw n strings with ``T = length`` reverse steps, one letter unmasked per step.

    Returns ``(x0, traj)``: x0 (n, L) clean strings, traj (L+1, n, L) with traj[0] all
    masks and traj[L] == x0 (traj[j] has j letters revealed).
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    x = torch.full((n, length), MASK, dtype=torch.int64, device=device)
    traj = [x]
    for _ in range(length):
        x = rollout_step(model, x, generator)
        traj.append(x)
    return x, torch.stack(traj)


def step_logprob(
    model: nn.Module, x_t: torch.Tensor, x_s: torch.Tensor
) -> torch.Tensor:
    """``log p_θ(x_{t-1} = x_s | x_t)`` up to the position choice (uniform, model-free).

    x_t, x_s: (B, L); x_s equals x_t with exactly one masked position filled in.
        Returns (B,).
    """
    _check_tokens(x_t, "x_t", allow_mask=True)
    _check_tokens(x_s, "x_s", allow_mask=True)
    if x_t.shape != x_s.shape:
        raise ValueError(
            f"x_t and x_s must have the same shape, got {tuple(x_t.shape)} and "
            f"{tuple(x_s.shape)}"
        )
    filled = (x_t == MASK) & (x_s != MASK)  # (B, L)
    if not (filled.sum(1) == 1).all() or not ((x_t == x_s) | filled).all():
        raise ValueError(
            "x_s must equal x_t with exactly one masked position filled in"
        )
    pos = filled.float().argmax(1)  # (B,)
    rows = torch.arange(x_t.shape[0], device=x_t.device)
    logp = model(x_t).log_softmax(-1)[rows, pos]  # (B, 4)
    return logp.gather(1, x_s[rows, pos].unsqueeze(1)).squeeze(1)


# -------------------------------------------------------------------- exact enumeration
class StateSpace:
    """All ``5**L`` partially masked strings of length L, in base-5 order, with
    their DP wiring.

    ``states`` (5**L, L) int64; ``index(x)`` maps strings (B, L) with ids 0..4 to rows;
    ``clean`` (4**L,) the rows of the fully unmasked strings, in the order of
    :func:`all_sequences`; ``layers[k]`` the rows with exactly k letters revealed.
    Made once per length; holds no model.
    """

    def __init__(self, length: int, device: torch.device | str = "cpu"):
        # 5**8 = 390,625 states enumerate in about a second; 5**9 would need ~2M model
        # calls per law
        if (
            isinstance(length, bool)
            or not isinstance(length, int)
            or not 1 <= length <= 8
        ):
            raise ValueError(
                "length must be an int in [1, 8] (5**length states are enumerated), "
                f"got {length!r}"
            )
        self.length = length
        # (L,) base-5 place values
        self.weights = (VOCAB + 1) ** torch.arange(length - 1, -1, -1, device=device)
        rows = torch.arange((VOCAB + 1) ** length, device=device)
        # (S, L) the base-5 digits of each row
        self.states = (rows[:, None] // self.weights) % (VOCAB + 1)
        revealed = (self.states != MASK).sum(1)  # (S,)
        self.layers = [
            torch.nonzero(revealed == k).squeeze(1) for k in range(length + 1)
        ]
        # ascending base-5 index == lexicographic over ACGT
        self.clean = self.layers[length]

    def index(self, x: torch.Tensor) -> torch.Tensor:
        """Row of each string. x: (B, L) ids 0..4. Returns (B,) int64."""
        _check_tokens(x, "x", allow_mask=True)
        return (x.long() * self.weights.to(x.device)).sum(1)


def exact_distribution(
    model: nn.Module, space: StateSpace, potential: torch.Tensor | None = None
) -> torch.Tensor:
    """The exact law of the model's clean samples, by dynamic programming over
    partial strings.

    ``p(s) = Σ_{i revealed in s} p(s with i masked) · 1/#masks(parent)
    · p_θ(s_i | parent)``,
    layer by layer from the all-mask string. Differentiable in the model's parameters.

    ``potential`` (5**L,) optional ``h``: every transition parent → child is multiplied
    by ``exp(h(child) − h(parent))`` (a Doob h-transform). With ``h = v/α`` from
    :func:`exact_soft_value` this is the per-step soft-optimal kernel, position choice
    included. Returns (4**L,) probabilities in the order of
    :func:`all_sequences` (float64).
    """
    L = space.length
    # (S, L, 4) p_θ(letter at i | state)
    cond = model(space.states).softmax(-1).double()
    if potential is not None and potential.shape != space.states.shape[:1]:
        raise ValueError(
            f"potential must have shape ({space.states.shape[0]},), got "
            f"{tuple(potential.shape)}"
        )
    p = torch.zeros(space.states.shape[0], dtype=torch.float64, device=cond.device)
    p = p.index_put(
        (space.layers[0],), torch.ones(1, dtype=torch.float64, device=cond.device)
    )
    for k in range(1, L + 1):
        rows = space.layers[k]  # (n,)
        tok = space.states[rows]  # (n, L)
        revealed = tok != MASK
        # (n, L) row with position i masked again
        parent = rows[:, None] + (MASK - tok) * space.weights
        parent = torch.where(revealed, parent, rows[:, None])
        letter = tok.clamp(max=VOCAB - 1)
        # (n, L) p_θ(s_i | parent)
        pi = cond[parent, torch.arange(L, device=rows.device), letter]
        if (
            potential is not None
        ):  # p*(child | parent) = p(child | parent) · e^{h(child) − h(parent)}
            h = potential.double().to(pi.device)
            pi = pi * torch.exp(h[rows][:, None] - h[parent])
        contrib = torch.where(revealed, p[parent] * pi, torch.zeros_like(pi)).sum(1) / (
            L - k + 1
        )
        p = p.index_put((rows,), contrib)
    return p[space.clean]


@torch.no_grad()
def exact_soft_value(
    model: nn.Module, space: StateSpace, reward: torch.Tensor, alpha: float
) -> torch.Tensor:
    """The exact soft value ``v(s) = α log E_{p_θ}[exp(r(x_0)/α) | x_t = s]`` of every
    partial string.

    reward: (4**L,) rewards of the clean strings (order of :func:`all_sequences`).
    Backward DP:
    ``exp(v(s)/α) = 1/#masks(s) Σ_{i masked} Σ_a p_θ(a | s, i) exp(v(s_{i←a})/α)``.
    Returns (5**L,) float64; on clean strings it equals the reward.
    """
    check_positive("alpha", alpha)
    L = space.length
    if reward.shape != space.clean.shape:
        raise ValueError(
            f"reward must have shape ({space.clean.numel()},), got "
            f"{tuple(reward.shape)}"
        )
    logcond = model(space.states).log_softmax(-1).double()  # (S, L, 4)
    logh = torch.full(
        (space.states.shape[0],),
        float("nan"),
        dtype=torch.float64,
        device=logcond.device,
    )
    # log h = r/α on clean strings
    logh[space.clean] = reward.double().to(logcond.device) / alpha
    letters = torch.arange(VOCAB, device=logcond.device)
    for k in range(L - 1, -1, -1):
        rows = space.layers[k]
        tok = space.states[rows]
        masked = tok == MASK  # (n, L)
        # (n, L, 4)
        child = rows[:, None, None] + (letters - MASK) * space.weights[None, :, None]
        child = torch.where(masked[..., None], child, rows[:, None, None])
        terms = logcond[rows] + logh[child]  # (n, L, 4)
        terms = torch.where(
            masked[..., None], terms, torch.full_like(terms, -float("inf"))
        )
        logh[rows] = torch.logsumexp(terms.flatten(1), 1) - torch.log(
            (L - k) * torch.ones((), dtype=torch.float64)
        )
    return alpha * logh


class TiltedDenoiser(nn.Module):
    """A denoiser whose per-position conditionals are tilted by a value table (no
    parameters trained):

    ``q(a | x_t, i) ∝ p_base(a | x_t, i) · exp(v(x_t with i ← a)/α)``.

    This is the fixed point of VIDD's update with roll-out model ``base`` and value
    ``v``: the loss is a weighted log-likelihood of the letter at a *given* position, so
    the position choice stays uniform. It equals p*'s own conditionals when ``base`` is
    a consistent joint model.
    base: a denoiser; value: (5**L,) table over ``space``'s states; returns
        logits (B, L, 4).
    """

    def __init__(
        self, base: nn.Module, space: StateSpace, value: torch.Tensor, alpha: float
    ):
        super().__init__()
        check_positive("alpha", alpha)
        if value.shape != space.states.shape[:1]:
            raise ValueError(
                f"value must have shape ({space.states.shape[0]},), got "
                f"{tuple(value.shape)}"
            )
        self.base, self.space, self.value, self.alpha = base, space, value, alpha
        self.length = space.length

    def forward(self, x_t: torch.Tensor) -> torch.Tensor:
        rows = self.space.index(x_t)  # (B,)
        letters = torch.arange(VOCAB, device=x_t.device)
        child = (
            rows[:, None, None]
            + (letters - x_t[..., None])
            * self.space.weights.to(x_t.device)[None, :, None]
        )
        # (B, L, 4)
        child = torch.where((x_t == MASK)[..., None], child, rows[:, None, None])
        v = self.value.to(x_t.device)[child]
        # log p + v/α
        return self.base(x_t).log_softmax(-1) + (v / self.alpha).to(torch.float32)
