"""The toy: DNA strings, a Markov chain for "natural" data, a motif reward, the
soft-optimal target p* ∝ p·exp(r/α) and exact summaries of a law over all 4**L strings.
Token ids 0..3 are A, C, G, T; 4 is the mask."""

from __future__ import annotations

import itertools
from typing import Callable, Sequence

import torch

from ..core import ExerciseVerdict, grade_exercise
from ..validate import check_positive

ALPHABET = "ACGT"
VOCAB = 4
MASK = 4


# ------------------------------------------------------------------------------- checks
def _check_tokens(x: torch.Tensor, name: str = "x", allow_mask: bool = False) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor of token ids, got {type(x).__name__}"
        )
    if x.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise TypeError(f"{name} must hold integer token ids, got dtype {x.dtype}")
    if x.ndim != 2:
        raise ValueError(
            f"{name} must have shape (batch, length), got {tuple(x.shape)}"
        )
    top = MASK if allow_mask else VOCAB - 1
    if x.numel() and (int(x.min()) < 0 or int(x.max()) > top):
        raise ValueError(
            f"{name} must hold ids in [0, {top}] "
            f"({'ACGT + mask' if allow_mask else 'ACGT'}), "
            f"got range [{int(x.min())}, {int(x.max())}]"
        )


# --------------------------------------------------------------------------------- data
def all_sequences(
    length: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """Every string of ``length`` over ACGT in lexicographic order.
    Returns (4**length, length) int64."""
    if not isinstance(length, int) or not 1 <= length <= 8:
        raise ValueError(
            "length must be an int in [1, 8] (4**length strings are enumerated), got "
            f"{length!r}"
        )
    grid = torch.tensor(
        list(itertools.product(range(VOCAB), repeat=length)), dtype=torch.int64
    )
    return grid.to(device) if device is not None else grid


def markov_chain(
    seed: int, concentration: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """A random first-order Markov chain over ACGT: the toy's "natural DNA".

    Rows are Dirichlet(``concentration``) draws, so a small concentration gives a peaked
    chain. Returns ``(init, trans)``: init (4,) probabilities of the first letter, trans
    (4, 4) with rows ``P(next | current)``, both float64 on the CPU.
    """
    if not concentration > 0:
        raise ValueError(f"concentration must be positive, got {concentration}")
    gen = torch.Generator().manual_seed(int(seed))
    dirichlet = lambda n: torch._standard_gamma(
        torch.full((n, VOCAB), float(concentration), dtype=torch.float64), generator=gen
    )
    g0, g = dirichlet(1)[0], dirichlet(VOCAB)
    return g0 / g0.sum(), g / g.sum(1, keepdim=True)


def markov_logprob(
    x: torch.Tensor, init: torch.Tensor, trans: torch.Tensor
) -> torch.Tensor:
    """log P(x) under the chain. x: (n, L) ids in 0..3. Returns (n,) float64.

    ``log P(x) = log init[x_1] + Σ_i log trans[x_i, x_{i+1}]``
    """
    _check_tokens(x)
    init, trans = init.to(x.device, torch.float64), trans.to(x.device, torch.float64)
    return init.log()[x[:, 0]] + trans.log()[x[:, :-1], x[:, 1:]].sum(1)


def sample_markov(
    n: int,
    length: int,
    init: torch.Tensor,
    trans: torch.Tensor,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """n strings of ``length`` from the chain. Returns (n, length) int64 on
    init's device."""
    if n < 1 or length < 1:
        raise ValueError(f"n and length must be positive, got n={n}, length={length}")
    x = torch.empty(n, length, dtype=torch.int64, device=init.device)
    x[:, 0] = torch.multinomial(init.expand(n, VOCAB), 1, generator=generator)[:, 0]
    for i in range(1, length):
        x[:, i] = torch.multinomial(trans[x[:, i - 1]], 1, generator=generator)[:, 0]
    return x


def motif_reward(x: torch.Tensor, motifs: Sequence[str] = ("GA", "TC")) -> torch.Tensor:
    """The toy's non-differentiable reward: how many times the motifs occur in
    each string.

    x: (n, L) ids in 0..3. motifs: a list or tuple of strings over ACGT (a bare string
    such as ``"GA"`` is refused: iterating it would count ``G`` and ``A`` as two
    motifs). Returns (n,) float32 counts (overlaps counted). Integer-valued, so no
    gradient exists; the methods below only ever *evaluate* it.
    """
    _check_tokens(x)
    if isinstance(motifs, str) or not isinstance(motifs, (list, tuple)):
        raise TypeError(
            f"motifs must be a list or tuple of strings (e.g. ('GA',)), got {motifs!r}"
        )
    if not motifs or any(
        (not isinstance(m, str)) or not m or set(m) - set(ALPHABET) for m in motifs
    ):
        raise ValueError(
            f"motifs must be non-empty strings over {ALPHABET}, got {motifs!r}"
        )
    out = torch.zeros(x.shape[0], device=x.device)
    for m in motifs:
        ids = torch.tensor([ALPHABET.index(c) for c in m], device=x.device)
        k = len(m)
        if k > x.shape[1]:
            continue
        windows = x.unfold(1, k, 1)  # (n, L-k+1, k)
        out += (windows == ids).all(-1).sum(1).float()
    return out


def motif_reward_fn(motifs: Sequence[str]) -> Callable[[torch.Tensor], torch.Tensor]:
    """``motif_reward`` with its motifs fixed: a reward function
    ``x (n, L) -> (n,)``."""
    motif_reward(torch.zeros(1, 1, dtype=torch.int64), motifs)  # validate once, now
    motifs = tuple(motifs)
    return lambda x: motif_reward(x, motifs)


def _check_law(p: torch.Tensor, name: str = "p") -> None:
    """A probability vector: a 1-D floating tensor, finite, non-negative,
    summing to 1."""
    if not isinstance(p, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor of probabilities, got {type(p).__name__}"
        )
    if not p.is_floating_point():
        raise TypeError(
            f"{name} must be a floating tensor of probabilities, got dtype {p.dtype}"
        )
    if p.ndim != 1 or p.numel() == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D tensor, got shape {tuple(p.shape)}"
        )
    if not torch.isfinite(p).all() or (p < 0).any():
        raise ValueError(f"{name} must hold finite, non-negative probabilities")
    total = float(p.double().sum())
    if abs(total - 1) > 1e-6:
        raise ValueError(
            f"{name} must sum to 1 (a probability vector), got sum {total:.6g}"
        )


def _check_rewards(r: torch.Tensor, p: torch.Tensor, name: str = "r") -> None:
    if not isinstance(r, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor of rewards, got {type(r).__name__}"
        )
    if r.shape != p.shape:
        raise ValueError(
            f"p and {name} must be 1-D of the same length, got {tuple(p.shape)} "
            f"and {tuple(r.shape)}"
        )
    if not torch.isfinite(r.double()).all():
        raise ValueError(
            f"{name} must be finite (a NaN or infinite reward has no soft optimum)"
        )


# ------------------------------------------------------------------------------- target
def soft_optimal(p: torch.Tensor, r: torch.Tensor, alpha: float) -> torch.Tensor:
    """The KL-regularised optimum ``p*(x) = p(x) exp(r(x)/α) / Z`` over an
    enumerated space.

    p: (N,) floating probabilities summing to 1; r: (N,) finite rewards; alpha > 0.
    Returns (N,) probabilities in p's dtype. Computed in log space, so a small α does
    not overflow.
    """
    check_positive("alpha", alpha)
    _check_law(p, "p")
    _check_rewards(r, p, "r")
    logits = p.log() + r.to(p.dtype) / alpha  # log p* = log p + r/α − log Z
    return torch.softmax(logits, 0)


def tv_distance(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Total variation ``½ Σ |p − q|`` between two distributions on the same support
    (each a 1-D probability vector: non-negative, summing to 1; an unnormalised
    input, such as 3p, is refused). Returns a 0-d tensor."""
    _check_law(p, "p")
    _check_law(q, "q")
    if p.shape != q.shape:
        raise ValueError(
            f"p and q must have the same shape, got {tuple(p.shape)} and "
            f"{tuple(q.shape)}"
        )
    return 0.5 * (p - q.to(p.dtype)).abs().sum()


def best_of_n_reward(p: torch.Tensor, r: torch.Tensor, n: int) -> torch.Tensor:
    """Exact expected reward of best-of-n sampling from p: ``E[max(r(x_1..x_n))]``,
    x_i ~ p i.i.d.

    p: (N,) probabilities summing to 1, r: (N,) finite rewards, n: an int >= 1.
    Uses ``P(max ≤ c) = F(c)^n``. Returns a 0-d float64 tensor.
    Costs n reward calls per string.
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int (a number of samples), got {n!r}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    _check_law(p, "p")
    _check_rewards(r, p, "r")
    levels, inverse = torch.unique(r.double(), return_inverse=True)  # ascending
    mass = torch.zeros_like(levels).index_add_(0, inverse, p.double())
    cdf = mass.cumsum(0).clamp(max=1.0)  # F(c)
    pmf_max = cdf**n - torch.cat([cdf.new_zeros(1), cdf[:-1]]) ** n  # P(max = c)
    return (pmf_max * levels).sum()


def distribution_stats(
    p: torch.Tensor, r: torch.Tensor, n_samples: int = 1000
) -> dict[str, float]:
    """Exact summary of a law p over the enumerated strings (no sampling noise).
    p, r: (N,).

    ``reward`` E_p[r]; ``p_max`` the largest probability; ``eff_n`` exp(entropy), the
    effective number of strings; ``n90`` how many strings hold 90 % of the mass;
    ``unique`` the expected number of distinct strings among ``n_samples`` i.i.d.
    draws, ``Σ_x 1 − (1 − p(x))^n``."""
    _check_law(p, "p")
    _check_rewards(r, p, "r")
    p = p.double()
    h = -(p * p.clamp_min(1e-300).log()).sum()
    top = torch.sort(p, descending=True).values.cumsum(0)
    unique = (
        1 - (1 - p).pow(n_samples)
    ).sum()  # E[#distinct strings among n_samples draws]
    return {
        "reward": float((p * r.double()).sum()),
        "p_max": float(p.max()),
        "eff_n": float(h.exp()),
        "n90": int((top < 0.9).sum()) + 1,
        "unique": float(unique),
    }


# ----------------------------------------------------------------------------- exercise
def check_soft_optimal(
    fn: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor],
) -> ExerciseVerdict:
    """Grade a student's ``fn(p, r, alpha) -> p*`` against :func:`soft_optimal` on
    random cases, including a small α where a naive ``p * exp(r/α)`` overflows.

    Returns an :class:`~iclr26.core.ExerciseVerdict`: "not done yet" on the stub,
    "wrong: because ..." with a hint, or "correct: ...".
    """
    return grade_exercise(fn, _trial_soft_optimal)


def _trial_soft_optimal(fn) -> str:
    gen = torch.Generator().manual_seed(0)
    for alpha in (2.0, 0.5, 1e-3):
        p = torch.rand(50, generator=gen, dtype=torch.float64) + 1e-3
        p = p / p.sum()
        r = torch.randint(0, 4, (50,), generator=gen).double()
        got = fn(p.clone(), r.clone(), alpha)
        assert isinstance(got, torch.Tensor) and got.shape == p.shape, (
            f"return a tensor of shape {tuple(p.shape)}, one probability per string"
        )
        assert torch.isfinite(got).all(), (
            f"non-finite output at alpha={alpha}: exp(r/alpha) overflows; use log space"
        )
        total = got.double().sum().item()
        assert abs(total - 1) < 1e-8, (
            f"at alpha={alpha} the output sums to {total:.4g}, not 1"
        )
        assert torch.allclose(got.double(), soft_optimal(p, r, alpha), atol=1e-8), (
            f"wrong probabilities at alpha={alpha}: each string's weight is its "
            "pretrained probability times exp(reward / alpha)"
        )
    return "p* ∝ p·exp(r/α), stable for small α"
