"""Deep matrix factorisation for matrix completion: gradient descent on W =
W_L ⋯ W_2 W_1.

Chapter 01. We fit an n×n target M on an observed set Ω of entries with the loss

    L(W_1, …, W_L) = ½ Σ_{(i,j)∈Ω} (W_ij − M_ij)²,      W = W_L ⋯ W_1,

and watch what plain gradient descent does with the *unobserved* entries.
Everything here is batched over R independent runs (seeds, initial scales, …) stacked
along a leading dimension, so a whole sweep is a handful of ``bmm`` calls per step
instead of a Python loop over runs.

Shapes: a run's factor W_k is (n, n) (full width), a batch of them (R, n, n);
``factors`` is the list [W_1, …, W_L] in the order they act, so
``W = factors[-1] @ … @ factors[0]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .core import ExerciseVerdict, grade_exercise
from .validate import as_float, as_int

Tensor = torch.Tensor


# --------------------------------------------------------------------------------------
# measuring rank
# --------------------------------------------------------------------------------------
def singular_values(W: Tensor) -> Tensor:
    """Singular values, largest first. W: (..., n, m) → (..., min(n, m)), finite."""
    _check_matrix(W, "W")
    if not bool(torch.isfinite(W).all()):
        raise ValueError(
            "W holds NaN or infinite values: its singular values are undefined "
            "(a diverged run?)"
        )
    return torch.linalg.svdvals(W)


def effective_rank(W: Tensor) -> Tensor:
    """Effective rank exp(H(p)) with p_i = σ_i / Σ σ_j (Roy & Vetterli, 2007).
    W: (..., n, m) → (...).

    Equals k for a matrix with k equal non-zero singular values, so erank(I_n) = n and
    erank(u vᵀ) = 1; between those it varies smoothly, unlike the numerical rank.
    It is scale-free: erank(c W) = erank(W) for any c ≠ 0, however small. A zero
    matrix has no effective rank (p is 0/0): it is a ``ValueError``, as are a matrix
    with NaN or infinite entries and one with no rows or columns.
    """
    _check_matrix(W, "W")
    if W.shape[-1] == 0 or W.shape[-2] == 0:
        raise ValueError(
            f"W must have at least one row and one column, got shape {tuple(W.shape)}"
        )
    s = singular_values(W)
    if s.numel() and bool((s.amax(-1) == 0).any()):
        raise ValueError(
            "the effective rank of a zero matrix is undefined (its normalised "
            "singular values are 0/0); W holds at least one all-zero matrix"
        )
    # no clamp on the sum: W ≠ 0, and a clamp would make a tiny W (1e-300 · I) rank 1
    p = s / s.sum(-1, keepdim=True)
    entropy = -torch.xlogy(p, p).sum(-1)  # H(p) = −Σ p log p, with 0 log 0 = 0
    return torch.exp(entropy)


# --------------------------------------------------------------------------------------
# observation patterns
# --------------------------------------------------------------------------------------
def diag_mask(n: int, dtype: torch.dtype = torch.float64, device=None) -> Tensor:
    """Ω = the diagonal: an (n, n) 0/1 mask."""
    as_int(n, "n", lo=1)
    return torch.eye(n, dtype=dtype, device=device)


def block_diag_mask(
    n: int, block: int, dtype: torch.dtype = torch.float64, device=None
) -> Tensor:
    """Ω = diagonal blocks of size ``block`` (which must divide n): an (n, n)
    0/1 mask."""
    as_int(n, "n", lo=1)
    if not isinstance(block, int) or block < 1 or n % block:
        raise ValueError(f"block must be a positive int dividing n={n}, got {block}")
    idx = torch.arange(n, device=device) // block
    return (idx[:, None] == idx[None, :]).to(dtype)


def random_mask(
    n: int,
    frac: float,
    generator: torch.Generator | None = None,
    include_diag: bool = True,
    dtype: torch.dtype = torch.float64,
    device=None,
) -> Tensor:
    """The diagonal (if ``include_diag``) plus each off-diagonal entry observed with
    probability ``frac``. Returns an (n, n) 0/1 mask."""
    as_int(n, "n", lo=1)
    frac = as_float(frac, "frac", lo=0.0, hi=1.0)
    extra = (torch.rand(n, n, generator=generator) < frac).to(dtype)
    eye = torch.eye(n, dtype=dtype)
    mask = extra * (1 - eye) + (eye if include_diag else 0 * eye)
    return mask.to(device)


# --------------------------------------------------------------------------------------
# the model: initialisation, end-to-end matrix, loss and its gradient
# --------------------------------------------------------------------------------------
def init_factors(
    n_runs: int,
    n: int,
    depth: int,
    scale: float | Tensor,
    init: str = "random",
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
    device=None,
) -> list[Tensor]:
    """Initial factors [W_1, …, W_L], each (n_runs, n, n).

    init="random": entries i.i.d. N(0, α²/n) with α = scale^(1/L), so every factor has
        operator norm ≈ 2α and the end-to-end matrix starts at size ≈ ``scale``
        whatever the depth.
    init="diag": diagonal factors with entries α·|N(0, 1)| (positive), a point of the
        invariant set of diagonal matrices.
    ``scale`` may be a float or an (n_runs,) tensor (one scale per run, for sweeps).
    """
    as_int(n_runs, "n_runs", lo=1)
    as_int(n, "n", lo=1)
    as_int(depth, "depth", lo=1)
    if init not in ("random", "diag"):
        raise ValueError(f"init must be 'random' or 'diag', got {init!r}")
    scale = torch.as_tensor(scale, dtype=dtype).reshape(-1)
    if scale.numel() not in (1, n_runs) or not bool((scale > 0).all()):
        raise ValueError(
            f"scale must be positive, a float or one value per run ({n_runs}), got "
            f"{scale.tolist()}"
        )
    alpha = scale.expand(n_runs).reshape(n_runs, 1, 1) ** (1.0 / depth)
    factors = []
    for _ in range(depth):
        if init == "random":
            z = torch.randn(n_runs, n, n, generator=generator, dtype=dtype) / n**0.5
        else:
            z = torch.diag_embed(
                torch.randn(n_runs, n, generator=generator, dtype=dtype).abs()
            )
        factors.append((alpha * z).to(device))
    return factors


def end_to_end(factors: list[Tensor]) -> Tensor:
    """W = W_L ⋯ W_1 for factors [W_1, …, W_L], each (..., n, n) → (..., n, n)."""
    if not factors:
        raise ValueError("factors must be a non-empty list of (..., n, n) tensors")
    W = factors[0]
    for F in factors[1:]:
        W = F @ W
    return W


def masked_loss(W: Tensor, M: Tensor, mask: Tensor) -> Tensor:
    """½ Σ_Ω (W − M)² per run. W: (..., n, n); M and mask broadcast against
    W → (...)."""
    _check_matrix(W, "W")
    return 0.5 * (mask * (W - M) ** 2).sum((-2, -1))


def factor_gradients(
    factors: list[Tensor], M: Tensor, mask: Tensor
) -> tuple[list[Tensor], Tensor]:
    """∂L/∂W_k for every factor, in closed form, and the end-to-end matrix W.

    With G = ∇_W L = P_Ω(W − M), the chain rule through W = W_{L:k+1} W_k
    W_{k−1:1} gives

        ∂L/∂W_k = W_{L:k+1}ᵀ · G · W_{k−1:1}ᵀ,

    where W_{b:a} = W_b ⋯ W_a (the identity when empty). Prefix and suffix products make
    all L gradients cost O(L) matrix products.
    """
    L = len(factors)
    below = [None] * L  # below[k] = W_{k−1:1}
    above = [None] * L  # above[k] = W_{L:k+1}
    prod = None
    for k in range(L):
        below[k] = prod
        prod = factors[k] if prod is None else factors[k] @ prod
    W = prod
    G = mask * (W - M)  # ∇_W L = P_Ω(W − M)
    prod = None
    for k in reversed(range(L)):
        above[k] = prod
        prod = factors[k] if prod is None else prod @ factors[k]
    grads = []
    for k in range(L):
        g = G if above[k] is None else above[k].transpose(-2, -1) @ G  # W_{L:k+1}ᵀ G
        g = g if below[k] is None else g @ below[k].transpose(-2, -1)  # … W_{k−1:1}ᵀ
        grads.append(g)
    return grads, W


# --------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------
@dataclass
class History:
    """What :func:`train_gd` recorded. steps: (T,); loss: (T, R); svals: (T, R, n)
    singular values of the end-to-end matrix; final_step: the step training
    stopped at."""

    steps: Tensor
    loss: Tensor
    svals: Tensor
    final_step: int


class DivergenceError(ValueError):
    """Gradient descent produced a non-finite loss: the step size is too large for
    the problem."""


def train_gd(
    factors: list[Tensor],
    M: Tensor,
    mask: Tensor,
    lr: float = 0.05,
    max_steps: int = 100_000,
    tol: float = 1e-8,
    record_every: int = 100,
) -> tuple[list[Tensor], History]:
    """Plain gradient descent W_k ← W_k − lr ∂L/∂W_k on all R runs at once.

    factors: [W_1, …, W_L], each (R, n, n), not modified in place.
    M and mask: (n, n) or (R, n, n), of the factors' dtype and device.
    Stops once every run's loss is below ``tol`` (checked every ``record_every`` steps)
    or after ``max_steps``. Returns the final factors and a :class:`History`.
    Raises :class:`DivergenceError` (a ``ValueError``) as soon as a recorded loss is not
    finite, naming the step and the learning rate, instead of failing later
    inside the SVD.
    """
    _check_factors(factors)
    R, n = factors[0].shape[0], factors[0].shape[-1]
    ref = factors[0]
    for name, t in (("M", M), ("mask", mask)):
        if not torch.is_tensor(t):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if (
            t.ndim not in (2, 3)
            or t.shape[-2:] != (n, n)
            or (t.ndim == 3 and t.shape[0] != R)
        ):
            raise ValueError(
                f"{name} must be (n, n) or (R, n, n) with R={R} runs and n={n}, "
                f"got {tuple(t.shape)}"
            )
        if t.dtype != ref.dtype:
            raise TypeError(
                f"{name} has dtype {t.dtype} but the factors are {ref.dtype}: "
                "convert one of them (e.g. M.to(factors[0].dtype))"
            )
        if t.device != ref.device:
            raise ValueError(
                f"{name} is on {t.device} but the factors are on {ref.device}"
            )
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} contains NaN or infinite values")
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise ValueError("mask must hold only 0s and 1s")
    # an int, never a float: 1e4 would silently change the step count
    as_int(max_steps, "max_steps", lo=1)
    as_int(record_every, "record_every", lo=1)
    lr = as_float(lr, "lr", lo=0.0, open_lo=True)
    tol = as_float(tol, "tol", lo=0.0)
    factors = [F.clone() for F in factors]
    steps, losses, svals = [], [], []
    step = 0
    while True:
        grads, W = factor_gradients(factors, M, mask)
        if step % record_every == 0 or step == max_steps:
            loss = masked_loss(W, M, mask)
            if not bool(torch.isfinite(loss).all()):
                bad = int((~torch.isfinite(loss)).sum())
                raise DivergenceError(
                    f"gradient descent diverged: the loss of {bad} of {R} runs is not "
                    "finite at "
                    f"step {step} (lr={lr}); lower the learning rate or the target's "
                    "size"
                )
            steps.append(step)
            losses.append(loss)
            svals.append(singular_values(W))
            if bool((loss < tol).all()) or step >= max_steps:
                break
        for F, g in zip(factors, grads):
            F.sub_(lr * g)  # W_k ← W_k − η ∂L/∂W_k
        step += 1
    history = History(
        torch.tensor(steps), torch.stack(losses), torch.stack(svals), step
    )
    return factors, history


# --------------------------------------------------------------------------------------
# gradient descent is not gradient flow: the step-size bound of the rank-one solution
# --------------------------------------------------------------------------------------
def balanced_rank_one_factors(
    n: int, depth: int, dtype: torch.dtype = torch.float64, device=None
) -> list[Tensor]:
    """The balanced rank-one factorisation of 11ᵀ: W_k = n^(1/L) v vᵀ with v = 1/√n,
    so W_L ⋯ W_1 = n v vᵀ = 11ᵀ. Returns [W_1, …, W_L], each (n, n)."""
    as_int(n, "n", lo=1)
    as_int(depth, "depth", lo=1)
    v = torch.full((n, 1), n**-0.5, dtype=dtype, device=device)
    return [n ** (1.0 / depth) * (v @ v.T) for _ in range(depth)]


def rank_one_sharpness(n: int, depth: int, block: int = 1) -> float:
    """Largest Hessian eigenvalue of the loss at the balanced rank-one completion of
    M = 11ᵀ observed on diagonal blocks of size ``block`` (1: the diagonal).

    At a zero-loss point the Hessian is JᵀJ, J the map from factor perturbations δ_k
    to P_Ω(dW). Moving every factor along its own v vᵀ by c_k (Σ c_k² = 1) gives
    dW = n^(1−1/L) (Σ c_k) v vᵀ, largest at c_k = 1/√L, and ‖P_Ω(v vᵀ)‖² = |Ω|/n² =
    block/n, so λ_max = L · block · n^(1−2/L). (Checked against autograd's Hessian in
    the tests and the chapter.)
    """
    as_int(n, "n", lo=1)
    as_int(depth, "depth", lo=1)
    if not isinstance(block, int) or isinstance(block, bool) or block < 1 or n % block:
        raise ValueError(f"block must be a positive int dividing n={n}, got {block!r}")
    return depth * block * n ** (1.0 - 2.0 / depth)


def rank_one_step_bound(n: int, depth: int, block: int = 1) -> float:
    """η* = 2 / λ_max: gradient descent with a step η > η* cannot converge to the
    balanced rank-one completion of 11ᵀ (the minimum is linearly unstable), however
    long it runs; gradient flow has no such bound. See :func:`rank_one_sharpness`."""
    return 2.0 / rank_one_sharpness(n, depth, block)


# --------------------------------------------------------------------------------------
# depth 2 in closed form
# --------------------------------------------------------------------------------------
def depth2_limit(factors0: list[Tensor], M: Tensor) -> Tensor:
    """The small-initialisation limit of depth-2 gradient flow under diagonal
    observations.

    With W = W_2 W_1, a_i = row i of W_2 and b_i = column i of W_1, each pair (a_i, b_i)
    evolves on its own and s_i = a_i + b_i keeps its direction, so

        W_ij(∞) ≈ √(M_ii M_jj) · cos∠(s_i(0), s_j(0)),

    with an error of the order of the initial scale. factors0: [W_1, W_2], each
    (..., n, n);
    M: (..., n, n) with a positive diagonal. Returns (..., n, n).
    """
    if len(factors0) != 2:
        raise ValueError(
            f"depth2_limit needs exactly two factors [W_1, W_2], got {len(factors0)}"
        )
    W1, W2 = factors0
    d = torch.diagonal(M, dim1=-2, dim2=-1)
    if bool((d <= 0).any()):
        raise ValueError("depth2_limit needs M_ii > 0 on the whole diagonal")
    s = W2 + W1.transpose(-2, -1)  # row i: s_i = a_i + b_i
    s = s / s.norm(dim=-1, keepdim=True)
    cos = s @ s.transpose(-2, -1)  # cos∠(s_i, s_j)
    root = d.sqrt()
    return root[..., :, None] * cos * root[..., None, :]


# --------------------------------------------------------------------------------------
# baselines and the plasticity experiment
# --------------------------------------------------------------------------------------
def min_norm_completion(M: Tensor, mask: Tensor) -> Tensor:
    """Depth 1 (W trained directly from W = 0): gradient descent never moves unobserved
    entries, so the limit keeps M on Ω and 0 elsewhere, the minimum-Frobenius-norm
    completion."""
    return mask * M


def heldout_rmse(W: Tensor, M: Tensor, observed: Tensor) -> Tensor:
    """Root-mean-square error over the entries *not* in ``observed``.
    W: (..., n, n) → (...)."""
    held = 1 - observed
    return (
        (held * (W - M) ** 2).sum((-2, -1)) / held.sum((-2, -1)).clamp_min(1)
    ).sqrt()


def rank_one_target(
    n: int, generator: torch.Generator | None = None, dtype: torch.dtype = torch.float64
) -> Tensor:
    """M = u uᵀ / max(u)² with u_i = 0.5 + |N(0, 1)|: rank one, positive, largest entry
    1. (n, n)."""
    as_int(n, "n", lo=1)
    u = 0.5 + torch.randn(n, generator=generator, dtype=dtype).abs()
    return torch.outer(u, u) / u.max() ** 2


# --------------------------------------------------------------------------------------
# checks for the chapter's exercises
# --------------------------------------------------------------------------------------
def check_effective_rank(fn) -> ExerciseVerdict:
    """Exercise check: ``fn(W)`` must return the entropy effective rank of a batch
    (..., n, m). Answers "not done yet" on the stub, "wrong: because ..." with a hint,
    or "correct"."""
    g = torch.Generator().manual_seed(123)
    cases = [
        ("the 5×5 identity", torch.eye(5, dtype=torch.float64)),
        (
            "a rank-one 4×3 matrix",
            torch.outer(torch.arange(1.0, 5.0), torch.ones(3)).double(),
        ),
        (
            "a random batch of shape (4, 6, 6)",
            torch.randn(4, 6, 6, generator=g, dtype=torch.float64),
        ),
    ]

    def trial(fn):
        for what, W in cases:
            got = fn(W.clone())
            want = effective_rank(W)
            got = torch.as_tensor(got, dtype=torch.float64)
            if got.shape != want.shape:
                raise AssertionError(
                    f"on {what} your function returned shape {tuple(got.shape)}: "
                    "return one value per matrix, i.e. reduce over the last axis of "
                    "the singular values only"
                )
            if not torch.allclose(got, want, atol=1e-6):
                raise AssertionError(
                    f"on {what} your values are off by up to "
                    f"{(got - want).abs().max().item():.3g}. " + _erank_hint(fn)
                )
        return (
            "your effective rank matches on the identity, a rank-one matrix and "
            "a random batch"
        )

    return grade_exercise(fn, trial)


def _erank_hint(fn) -> str:
    """A hint from a property the student's effective rank violates (never the
    formula)."""
    I4 = torch.eye(4, dtype=torch.float64)
    try:
        at_I = float(torch.as_tensor(fn(I4.clone())))
        scaled = float(torch.as_tensor(fn(3 * I4)))
        mixed = float(
            torch.as_tensor(
                fn(torch.diag(torch.tensor([1.0, 1.0, 1e-3, 0.0]).double()))
            )
        )
    except Exception:  # a hint is best effort
        return "Hint: test your function on the identity first."
    if abs(at_I - 4) > 1e-6:
        return (
            f"Hint: on the 4×4 identity it returns {at_I:.3g}; "
            "four equal singular values "
            "should count as exactly 4."
        )
    if abs(scaled - at_I) > 1e-6:
        return (
            "Hint: your value changes when W is multiplied by 3; "
            "the effective rank must not."
        )
    if abs(mixed - round(mixed)) < 1e-9:
        return (
            "Hint: it returns a whole number on diag(1, 1, 0.001, 0); "
            "the effective rank "
            "should sit just above 2 there, varying smoothly with the small value."
        )
    return (
        "Hint: compare its value on diag(1, 1) (should be 2) and diag(1, 0) (should be "
        "1) "
        "and check the base of any logarithm you use."
    )


def check_factor_gradients(fn) -> ExerciseVerdict:
    """Exercise check: ``fn(factors, M, mask)`` must return the list of ∂L/∂W_k.
    Answers "not done yet" on the stub, "wrong: because ..." with a hint, or
    "correct"."""
    g = torch.Generator().manual_seed(7)
    cases = []
    for depth in (1, 2, 3, 4):
        factors = init_factors(2, 5, depth, 0.5, generator=g)
        M = torch.randn(5, 5, generator=g, dtype=torch.float64)
        cases.append((depth, factors, M, random_mask(5, 0.5, generator=g)))

    def trial(fn):
        for depth, factors, M, mask in cases:
            got = fn([F.clone() for F in factors], M.clone(), mask.clone())
            want, _ = factor_gradients(factors, M, mask)
            if not isinstance(got, (list, tuple)) or len(got) != depth:
                raise AssertionError(
                    f"at depth {depth} return a list of {depth} gradients, one per "
                    "factor, in the order [W_1, …, W_L]"
                )
            for k, (a, b) in enumerate(zip(got, want), start=1):
                a = torch.as_tensor(a)
                if a.shape != b.shape:
                    raise AssertionError(
                        f"at depth {depth} the gradient for W_{k} has shape "
                        f"{tuple(a.shape)}; it must have the factor's shape "
                        f"{tuple(b.shape)}"
                    )
                if not torch.allclose(a, b, atol=1e-9):
                    raise AssertionError(
                        f"at depth {depth} the gradient for W_{k} is wrong "
                        f"(max error {(a - b).abs().max().item():.3g}). "
                        + _grad_hint(fn, depth, factors, M, mask)
                    )
        return "your gradients match the closed form at depths 1 to 4"

    return grade_exercise(fn, trial)


def _grad_hint(fn, depth, factors, M, mask) -> str:
    """A hint from a property the student's gradients violate (never the formula)."""
    try:
        # change only unobserved entries: the loss cannot see them
        M2 = M + 5.0 * (1 - mask)
        a = fn([F.clone() for F in factors], M.clone(), mask.clone())
        b = fn([F.clone() for F in factors], M2, mask.clone())
        if any(
            not torch.allclose(torch.as_tensor(x), torch.as_tensor(y), atol=1e-12)
            for x, y in zip(a, b)
        ):
            return (
                "Hint: your gradients change when an unobserved entry of M changes, "
                "but "
                "the loss does not depend on those entries."
            )
    except Exception:  # a hint is best effort
        pass
    if depth == 1:
        return "Hint: at depth 1, W = W_1; differentiate the loss by hand first."
    return (
        "Hint: compare with torch.autograd on one small example, one factor at a time, "
        "and check each matrix product's shapes against a non-square test case on "
        "paper."
    )


def _check_factors(factors) -> None:
    if not isinstance(factors, (list, tuple)) or not factors:
        raise ValueError(
            "factors must be a non-empty list of equally shaped (R, n, n) tensors"
        )
    for F in factors:
        if not torch.is_tensor(F) or not F.is_floating_point():
            raise TypeError("factors must be floating-point torch.Tensors")
    F0 = factors[0]
    if F0.ndim != 3 or F0.shape[-1] != F0.shape[-2]:
        raise ValueError(f"each factor must be (R, n, n), got {tuple(F0.shape)}")
    for F in factors:
        if F.shape != F0.shape:
            raise ValueError(
                "factors must be equally shaped (R, n, n) tensors, got "
                f"{[tuple(f.shape) for f in factors]}"
            )
        if F.dtype != F0.dtype or F.device != F0.device:
            raise TypeError(
                "factors must share one dtype and device, got "
                f"{[(f.dtype, str(f.device)) for f in factors]}"
            )
        if not bool(torch.isfinite(F).all()):
            raise ValueError("factors contain NaN or infinite values")


def _check_matrix(W, name: str) -> None:
    if not torch.is_tensor(W):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(W).__name__}")
    if W.ndim < 2:
        raise ValueError(f"{name} must have shape (..., n, m), got {tuple(W.shape)}")
    if not W.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {W.dtype}")


def _flip(factors: list[Tensor], signs: Tensor) -> list[Tensor]:
    """D W D on the factors: (D W_L) W_{L−1} ⋯ (W_1 D) with D = diag(signs), signs
    (..., n)."""
    out = [F.clone() for F in factors]
    out[0] = out[0] * signs[..., None, :]  # W_1 D: scale column j by d_j
    out[-1] = signs[..., :, None] * out[-1]  # D W_L: scale row i by d_i
    return out


def sign_align(factors: list[Tensor], M: Tensor) -> list[Tensor]:
    """ORACLE. Flip rows/columns so the end-to-end matrix's sign pattern matches
    the whole M's.

    Under diagonal observations the loss is invariant under W ↦ D W D for any diagonal
    sign matrix D (the diagonal of DWD is the diagonal of W). A near-rank-one W ≈ x yᵀ
    is matched to M ≈ u uᵀ by D = diag(sign(x) ⊙ sign(u)) with x, u the leading left
    singular vectors. Returns new factors; the diagonal loss is unchanged exactly.
    factors: [W_1, …, W_L], each (..., n, n); M: (..., n, n).

    An oracle: the signs come from the whole target M, held-out entries included, which
    a learner never sees. Results that use it explain a mechanism; they are not
    reproductions. :func:`sign_align_observed` finds the signs from observed
    entries only.
    """
    if len(factors) < 1:
        raise ValueError("factors must be a non-empty list")
    x = torch.linalg.svd(end_to_end(factors))[0][..., :, 0]
    u = torch.linalg.svd(M)[0][..., :, 0]
    # u is defined up to sign; pick the positive-sum one
    u = u * torch.sign(u.sum(-1, keepdim=True))
    signs = torch.sign(x) * torch.sign(u)
    signs = torch.where(signs == 0, torch.ones_like(signs), signs)
    return _flip(factors, signs)


def observed_signs(W: Tensor, M: Tensor, mask: Tensor, sweeps: int = 3) -> Tensor:
    """Signs d ∈ {±1}ⁿ that make D W D agree with M on the *observed*
    off-diagonal entries.

    Maximises the agreement A(d) = Σ_{(i,j)∈Ω, i≠j} d_i d_j W_ij M_ij, a
    sign-synchronisation problem on the graph of observed entries: start from the signs
    of the leading eigenvector of the symmetrised C = P_Ω(W ⊙ M) with zero diagonal (the
    spectral relaxation), then make ``sweeps`` passes of single flips, each kept only
    when it raises A. Uses nothing outside Ω.
    W, M, mask: (R, n, n) → (R, n). For a rank-one W and a rank-one M whose observed
    graph is connected, the answer is exact: every observed entry of D W D then has the
    sign of M's.
    """
    if W.ndim != 3 or M.shape != W.shape or mask.shape != W.shape:
        raise ValueError(
            f"W, M and mask must all be (R, n, n), got {tuple(W.shape)}, "
            f"{tuple(M.shape)} and {tuple(mask.shape)}"
        )
    n = W.shape[-1]
    off = mask * (1 - torch.eye(n, dtype=W.dtype, device=W.device))
    C = off * W * M
    C = 0.5 * (C + C.transpose(-2, -1))
    d = torch.sign(torch.linalg.eigh(C)[1][..., :, -1])  # leading eigenvector
    d = torch.where(d == 0, torch.ones_like(d), d)
    for _ in range(sweeps):
        for i in range(
            n
        ):  # a flip of d_i changes A by −4 d_i Σ_j C_ij d_j: keep it if that is > 0
            gain = -4 * d[:, i] * (C[:, i, :] * d).sum(-1)
            d[:, i] = torch.where(gain > 0, -d[:, i], d[:, i])
    return d


def sign_align_observed(factors: list[Tensor], M: Tensor, mask: Tensor) -> list[Tensor]:
    """Flip rows/columns of the factors by :func:`observed_signs`: no held-out
    entry is used.

    The phase-1 (diagonal) loss is unchanged exactly, as for :func:`sign_align`.
    factors: [W_1, …, W_L], each (R, n, n); M, mask: (R, n, n), the phase-2 target and
    observations (only M's observed entries are read)."""
    _check_factors(factors)
    return _flip(factors, observed_signs(end_to_end(factors), M * mask, mask))


def plasticity_experiment(
    depth: int,
    M: Tensor,
    mask_more: Tensor,
    scale: float,
    lr: float,
    steps_pre: int,
    steps_resume: int,
    generator: torch.Generator | None = None,
    init: str = "random",
    mask_pre: Tensor | None = None,
) -> dict[str, Tensor]:
    """Pre-train on ``mask_pre`` (default: the diagonal), then resume on ``mask_more``;
    compare with training on ``mask_more`` from scratch.

    M, mask_more (and mask_pre if given): (R, n, n), one target and observation set per
    run; ``init`` is passed to :func:`init_factors`. Returns end-to-end matrices,
    each (R, n, n):

    * "pretrained": after phase 1 only;
    * "scratch": phase 2 from the same initialisation;
    * "resumed": phase 2 from the pre-trained factors, as they are;
    * "resumed_signs": phase 2 after :func:`sign_align_observed` (signs read off the
      phase-2 *observed* entries only: a legitimate preprocessing step);
    * "resumed_oracle": phase 2 after :func:`sign_align` (signs read off the whole
      target: an ORACLE, for explanation only);

    and the final phase-2 training losses "loss_scratch", "loss_resumed", … (R,) and the
    phase-1 loss "loss_pretrained" (R,). The four phase-2 runs share one batched call.
    """
    if not torch.is_tensor(M) or not torch.is_tensor(mask_more):
        raise TypeError("M and mask_more must be torch.Tensors")
    if M.ndim != 3 or mask_more.shape != M.shape:
        raise ValueError(
            f"M and mask_more must both be (R, n, n), got {tuple(M.shape)} "
            f"and {tuple(mask_more.shape)}"
        )
    R, n, _ = M.shape
    if mask_pre is None:
        mask_pre = diag_mask(n, dtype=M.dtype, device=M.device).expand(R, n, n)
    if mask_pre.shape != M.shape:
        raise ValueError(
            f"mask_pre must be (R, n, n) like M, got {tuple(mask_pre.shape)}"
        )
    start = init_factors(
        R,
        n,
        depth,
        scale,
        init=init,
        generator=generator,
        dtype=M.dtype,
        device=M.device,
    )
    pre, h1 = train_gd(start, M, mask_pre, lr=lr, max_steps=steps_pre, tol=1e-12)
    arms = {
        "scratch": start,
        "resumed": pre,
        "resumed_signs": sign_align_observed(pre, M, mask_more),
        "resumed_oracle": sign_align(pre, M),
    }
    batched = [torch.cat(fs) for fs in zip(*arms.values())]  # (4R, n, n) per factor
    final, h2 = train_gd(
        batched,
        M.repeat(4, 1, 1),
        mask_more.repeat(4, 1, 1),
        lr=lr,
        max_steps=steps_resume,
        tol=1e-12,
    )
    out = {"pretrained": end_to_end(pre), "loss_pretrained": h1.loss[-1]}
    for name, W, loss in zip(arms, end_to_end(final).split(R), h2.loss[-1].split(R)):
        out[name], out["loss_" + name] = W, loss
    return out
