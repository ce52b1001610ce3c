"""Block schedules: the depth-biased one of the paper (deterministic) and a uniform one, their
visit frequencies and expected backward depth, and the checks of the chapter's coding exercise."""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch

from ..core import ExerciseVerdict, grade_exercise


def _check_n_blocks(n_blocks) -> int:
    if isinstance(n_blocks, bool) or not isinstance(n_blocks, int):
        raise TypeError(f"n_blocks must be an int, got {type(n_blocks).__name__}")
    if n_blocks < 1:
        raise ValueError(f"n_blocks must be >= 1, got {n_blocks}")
    return n_blocks


def depth_biased_tau(n_blocks: int, c: float = 10.0) -> torch.Tensor:
    """Per-block "compute times" of the depth-biased schedule, shape (n_blocks,), float64.

    Block ``i`` (0 = nearest the input, ``N-1`` = nearest the loss) costs one forward pass of
    ``N`` units plus a backward pass through the ``N - i`` blocks above it, each ``c`` units:
    ``tau_i = N + c (N - i)``. ``c = 10`` is the paper's (and its code's) default.
    """
    n = _check_n_blocks(n_blocks)
    if not isinstance(c, (int, float)) or isinstance(c, bool) or not math.isfinite(c) or c < 0:
        raise ValueError(f"c must be a finite number >= 0, got {c!r}")
    i = torch.arange(n, dtype=torch.float64)
    return n + c * (n - i)  # tau_i = N + c (N - i)


class DepthBiasedSchedule:
    """The paper's deterministic depth-biased block schedule.

    Each block ``i`` has a "next available time" ``t_i``, initialised to ``tau_i``. A call picks
    ``argmin_i t_i`` (the lowest index on ties) and advances ``t_i += tau_i``. Block ``i`` is
    therefore picked once every ``tau_i`` time units: visit frequency ``∝ 1/tau_i``, and every block
    is visited at least once in any window of ``B = sum_j (floor(tau_max / tau_j) + 1)`` steps.
    """

    def __init__(self, n_blocks: int, c: float = 10.0):
        self.n_blocks = _check_n_blocks(n_blocks)
        self.c = float(c)
        self.tau = depth_biased_tau(n_blocks, c)   # (N,)
        self.next_time = self.tau.clone()           # (N,) next available time per block

    def __call__(self) -> int:
        block = int(torch.argmin(self.next_time))  # first minimum on ties
        self.next_time[block] += self.tau[block]    # t_i <- t_i + tau_i
        return block

    def __repr__(self) -> str:
        return f"DepthBiasedSchedule(n_blocks={self.n_blocks}, c={self.c})"


class UniformSchedule:
    """Blocks drawn i.i.d. uniformly from ``range(n_blocks)`` with an explicit generator."""

    def __init__(self, n_blocks: int, generator: torch.Generator | None = None):
        self.n_blocks = _check_n_blocks(n_blocks)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
        self.generator = generator if generator is not None else torch.Generator().manual_seed(0)
        self.tau = torch.ones(self.n_blocks, dtype=torch.float64)  # equal weights: frequency 1/N each

    def __call__(self) -> int:
        return int(torch.randint(self.n_blocks, (1,), generator=self.generator))

    def __repr__(self) -> str:
        return f"UniformSchedule(n_blocks={self.n_blocks})"


def _check_tau(tau) -> torch.Tensor:
    tau = torch.as_tensor(tau, dtype=torch.float64)
    if tau.ndim != 1 or tau.numel() < 1:
        raise ValueError(f"tau must be a non-empty 1-D tensor of per-block times, got shape {tuple(tau.shape)}")
    if not torch.all(torch.isfinite(tau)) or not torch.all(tau > 0):
        raise ValueError("tau must be finite and > 0 for every block")
    return tau


def visit_frequencies(tau) -> torch.Tensor:
    """Long-run fraction of steps that pick each block: ``p_i = (1/tau_i) / sum_j (1/tau_j)``.

    tau: (N,) positive. Returns (N,) float64 summing to 1.
    """
    inv = 1.0 / _check_tau(tau)  # block i fires once per tau_i time units
    return inv / inv.sum()


def expected_backward_depth(tau) -> float:
    """Average number of blocks the backward pass runs through, ``E[N - i] = sum_i p_i (N - i)``.

    Picking block ``i`` (0 = nearest the input) needs the backward pass through blocks
    ``i, ..., N-1``: ``N - i`` of them. tau: (N,) positive per-block times.
    """
    p = visit_frequencies(tau)
    n = p.numel()
    depth = n - torch.arange(n, dtype=torch.float64)  # (N,) backward depth of each block
    return float((p * depth).sum())



def check_depth_biased_schedule(fn: Callable[[int, float, int], Sequence[int]]) -> ExerciseVerdict:
    """Exercise check: a student's schedule ``fn(n_blocks, c, steps) -> list of block
    indices`` against :class:`DepthBiasedSchedule` on a few settings. Answers "not done yet"
    on the stub, "wrong: because ..." with a hint, or "correct"."""
    settings = [(1, 10.0, 5), (4, 10.0, 60), (6, 10.0, 200), (6, 0.0, 30), (9, 3.5, 150)]

    def trial(fn):
        for n, c, steps in settings:
            ref = DepthBiasedSchedule(n, c)
            want = [ref() for _ in range(steps)]
            got = [int(b) for b in fn(n, c, steps)]
            if len(got) != steps:
                raise AssertionError(f"n_blocks={n}, c={c}: asked for {steps} steps, got "
                                     f"{len(got)} block indices")
            if got != want:
                k = next(k for k, (a, b) in enumerate(zip(got, want)) if a != b)
                hint = ("block i's time is tau_i = N + c (N - i), with i = 0 nearest the "
                        "input" if k == 0 else
                        "after a pick, advance that block's next free time by its own "
                        "tau_i, and break ties by the lowest index")
                raise AssertionError(f"n_blocks={n}, c={c}: the first {k} picks agree, "
                                     f"step {k} does not. Hint: {hint}")
        return "your schedule matches the depth-biased schedule on 5 settings"

    return grade_exercise(fn, trial)


def check_expected_depth(fn: Callable[[int, float], float]) -> ExerciseVerdict:
    """Exercise check: a student's ``fn(n_blocks, c) -> expected backward depth`` against the
    formula. Answers "not done yet" on the stub, "wrong: because ..." with a hint, or
    "correct"."""
    settings = [(1, 10.0), (6, 10.0), (6, 0.0), (12, 3.0), (30, 10.0)]

    def trial(fn):
        for n, c in settings:
            want = expected_backward_depth(depth_biased_tau(n, c))
            got = float(fn(n, c))
            if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9):
                raise AssertionError(
                    f"n_blocks={n}, c={c}: got {got:.6f}, which is not the expected depth. "
                    "Hint: block i is visited with frequency proportional to 1/tau_i, and "
                    "its backward pass runs through N - i blocks")
        return "your expected depth matches the formula on 5 settings"

    return grade_exercise(fn, trial)
