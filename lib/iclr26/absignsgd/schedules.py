"""Block schedules: the depth-biased one of the paper (deterministic) and a uniform one,
their visit frequencies and expected backward depth, and the checks of the chapter's
coding exercise."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import torch

from ..core import ExerciseVerdict, grade_exercise
from ..validate import as_float, as_int


def _check_n_blocks(n_blocks, name: str = "n_blocks") -> int:
    return as_int(n_blocks, name, lo=1)


def _check_c(c) -> float:
    """The bias c: any real number (Python or NumPy scalar), finite and >= 0."""
    return as_float(c, "c", lo=0.0)


def depth_biased_tau(n_blocks: int, c: float = 10.0) -> torch.Tensor:
    """Per-block "compute times" of the depth-biased schedule, shape
    (n_blocks,), float64.

    Block ``i`` (0 = nearest the input, ``N-1`` = nearest the loss) costs one forward
    pass of ``N`` units plus a backward pass through the ``N - i`` blocks above it, each
    ``c`` units: ``tau_i = N + c (N - i)``. ``c = 10`` is the paper's
    (and its code's) default.
    """
    n = _check_n_blocks(n_blocks)
    c = _check_c(c)
    i = torch.arange(n, dtype=torch.float64)
    return n + c * (n - i)  # tau_i = N + c (N - i)


class DepthBiasedSchedule:
    """The paper's deterministic depth-biased block schedule.

    Each block ``i`` has a "next available time" ``t_i``, initialised to ``tau_i``.
    A call picks ``argmin_i t_i`` (the lowest index on ties) and advances
    ``t_i += tau_i``. Block ``i`` is therefore picked once every ``tau_i`` time units:
    visit frequency ``∝ 1/tau_i``, and every block is visited at least once in any
    window of ``B = sum_j (floor(tau_max / tau_j) + 1)`` steps.
    """

    def __init__(self, n_blocks: int, c: float = 10.0):
        self.n_blocks = _check_n_blocks(n_blocks)
        self.c = _check_c(c)
        self.tau = depth_biased_tau(self.n_blocks, self.c)  # (N,)
        self.next_time = self.tau.clone()  # (N,) next available time per block

    def __call__(self) -> int:
        block = int(torch.argmin(self.next_time))  # first minimum on ties
        self.next_time[block] += self.tau[block]  # t_i <- t_i + tau_i
        return block

    def __repr__(self) -> str:
        return f"DepthBiasedSchedule(n_blocks={self.n_blocks}, c={self.c})"


class UniformSchedule:
    """Blocks drawn i.i.d. uniformly from ``range(n_blocks)`` with an explicit
    generator."""

    def __init__(self, n_blocks: int, generator: torch.Generator | None = None):
        self.n_blocks = _check_n_blocks(n_blocks)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(
                "generator must be a torch.Generator or None, got "
                f"{type(generator).__name__}"
            )
        self.generator = (
            generator if generator is not None else torch.Generator().manual_seed(0)
        )
        # equal weights: frequency 1/N each
        self.tau = torch.ones(self.n_blocks, dtype=torch.float64)

    def __call__(self) -> int:
        return int(torch.randint(self.n_blocks, (1,), generator=self.generator))

    def __repr__(self) -> str:
        return f"UniformSchedule(n_blocks={self.n_blocks})"


class BAdamSchedule:
    """BAdam's block order (Luo et al., NeurIPS 2024; official ``BlockOptimizer``): the
    same block for ``switch_every`` consecutive steps, then the next one.

    order: ``"descending"`` (the code's default: the block nearest the loss first),
    ``"ascending"`` (input side first) or ``"random"`` (a fresh random permutation of
    the blocks every block-epoch, drawn from ``generator``). ``switch_every`` is the
    code's ``switch_block_every`` (default 50).
    """

    ORDERS = ("descending", "ascending", "random")

    def __init__(
        self,
        n_blocks: int,
        switch_every: int = 50,
        order: str = "descending",
        generator: torch.Generator | None = None,
    ):
        self.n_blocks = _check_n_blocks(n_blocks)
        self.switch_every = _check_n_blocks(switch_every, "switch_every")
        if order not in self.ORDERS:
            raise ValueError(f"order must be one of {self.ORDERS}, got {order!r}")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(
                f"generator must be a torch.Generator or None, got "
                f"{type(generator).__name__}"
            )
        self.order = order
        self.generator = (
            generator if generator is not None else torch.Generator().manual_seed(0)
        )
        self.tau = torch.ones(self.n_blocks, dtype=torch.float64)  # long run: 1/N each
        self._queue: list[int] = []
        self._block, self._left = -1, 0

    def _next_in_order(self) -> int:
        if self.order == "descending":
            return (
                (self._block - 1) % self.n_blocks
                if self._block >= 0
                else self.n_blocks - 1
            )
        if self.order == "ascending":
            return (self._block + 1) % self.n_blocks
        if not self._queue:  # a new block-epoch
            self._queue = torch.randperm(
                self.n_blocks, generator=self.generator
            ).tolist()
        return self._queue.pop()

    def __call__(self) -> int:
        if self._left == 0:  # K steps done: switch
            self._block, self._left = self._next_in_order(), self.switch_every
        self._left -= 1
        return self._block

    def __repr__(self) -> str:
        return (
            f"BAdamSchedule(n_blocks={self.n_blocks}, "
            f"switch_every={self.switch_every}, "
            f"order={self.order!r})"
        )


def _check_tau(tau) -> torch.Tensor:
    tau = torch.as_tensor(tau, dtype=torch.float64)
    if tau.ndim != 1 or tau.numel() < 1:
        raise ValueError(
            "tau must be a non-empty 1-D tensor of per-block times, got shape "
            f"{tuple(tau.shape)}"
        )
    if not torch.all(torch.isfinite(tau)) or not torch.all(tau > 0):
        raise ValueError("tau must be finite and > 0 for every block")
    return tau


def visit_frequencies(tau) -> torch.Tensor:
    """Long-run fraction of steps that pick each block:
    ``p_i = (1/tau_i) / sum_j (1/tau_j)``.

    tau: (N,) positive. Returns (N,) float64 summing to 1.
    """
    inv = 1.0 / _check_tau(tau)  # block i fires once per tau_i time units
    return inv / inv.sum()


def expected_backward_depth(tau) -> float:
    """Average number of blocks the backward pass runs through,
    ``E[N - i] = sum_i p_i (N - i)``.

    Picking block ``i`` (0 = nearest the input) needs the backward pass through blocks
    ``i, ..., N-1``: ``N - i`` of them. tau: (N,) positive per-block times.
    """
    p = visit_frequencies(tau)
    n = p.numel()
    # (N,) backward depth of each block
    depth = n - torch.arange(n, dtype=torch.float64)
    return float((p * depth).sum())


def check_depth_biased_schedule(
    fn: Callable[[int, float, int], Sequence[int]],
) -> ExerciseVerdict:
    """Exercise check: a student's schedule
    ``fn(n_blocks, c, steps) -> list of block indices`` against
    :class:`DepthBiasedSchedule` on a few settings. Answers "not done yet" on the stub,
    "wrong: because ..." with a hint, or "correct"."""
    settings = [
        (1, 10.0, 5),
        (4, 10.0, 60),
        (6, 10.0, 200),
        (6, 0.0, 30),
        (9, 3.5, 150),
    ]

    def trial(fn):
        for n, c, steps in settings:
            ref = DepthBiasedSchedule(n, c)
            want = [ref() for _ in range(steps)]
            got = [int(b) for b in fn(n, c, steps)]
            if len(got) != steps:
                raise AssertionError(
                    f"n_blocks={n}, c={c}: asked for {steps} steps, got "
                    f"{len(got)} block indices"
                )
            if any(not 0 <= b < n for b in got):
                raise AssertionError(
                    f"n_blocks={n}, c={c}: some picks lie outside "
                    f"range({n}). Hint: blocks are numbered from 0"
                )
            if got != want:
                k = next(k for k, (a, b) in enumerate(zip(got, want)) if a != b)
                counts = [got.count(b) for b in range(n)]
                if k == 0:
                    hint = (
                        "the very first pick differs: which block is free earliest at "
                        "the start, and which end of the network is block 0?"
                    )
                elif counts == [want.count(b) for b in range(n)]:
                    hint = (
                        "each block is picked the right number of times, but in a "
                        "different order: look at how you break ties"
                    )
                else:
                    hint = (
                        "the frequencies drift: after a pick, what should that block's "
                        "next free time become?"
                    )
                raise AssertionError(
                    f"n_blocks={n}, c={c}: the first {k} picks agree, "
                    f"step {k} does not. Hint: {hint}"
                )
        return "your schedule matches the depth-biased schedule on 5 settings"

    return grade_exercise(fn, trial)


def check_expected_depth(fn: Callable[[int, float], float]) -> ExerciseVerdict:
    """Exercise check: a student's ``fn(n_blocks, c) -> expected backward depth``
    against the formula. Answers "not done yet" on the stub, "wrong: because ..." with a
    hint, or "correct"."""
    settings = [(1, 10.0), (6, 10.0), (6, 0.0), (12, 3.0), (30, 10.0)]

    def trial(fn):
        for n, c in settings:
            want = expected_backward_depth(depth_biased_tau(n, c))
            got = float(fn(n, c))
            if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9):
                side = "too large" if got > want else "too small"
                raise AssertionError(
                    f"n_blocks={n}, c={c}: got {got:.6f}, {side}. Hint: "
                    "check your answer "
                    "at c = 0 and as c grows against what the schedule does there, and "
                    "that the visit frequencies you weight by sum to one"
                )
        return "your expected depth matches the formula on 5 settings"

    return grade_exercise(fn, trial)
