"""Time to a target loss, from per-step CPU costs measured so that a busy machine
does not move them.

Wall-clock on a shared machine moves with the load. Two things make the chapter's
timing robust to it: each step is timed in the thread's *CPU* time
(``time.thread_time``), which does not run while the thread waits for a core, and the
steps of the methods compared are timed *interleaved* (method A block 0, method B
block 0, ..., repeated), with the median over the repeats, so that a slow spell of the
machine hits every method alike and a single preempted step does not count."""

from __future__ import annotations

import math
import time
from typing import Callable, Mapping

import torch


def interleaved_cpu_times(
    steps: Mapping[str, Callable[[], object]], repeats: int = 15, warmup: int = 2
) -> dict[str, float]:
    """Median thread CPU seconds of each zero-argument callable in ``steps``.

    The callables run in turn, ``warmup + repeats`` rounds (``a, b, c, a, b, c, ...``),
    and the first ``warmup`` rounds are discarded. Returns ``{name: median seconds}``.
    """
    if not isinstance(steps, Mapping) or not steps:
        raise ValueError("steps must be a non-empty mapping of name -> callable")
    for name, fn in steps.items():
        if not callable(fn):
            raise TypeError(
                f"steps[{name!r}] must be callable, got {type(fn).__name__}"
            )
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative int, got {warmup!r}")
    times: dict[str, list[float]] = {name: [] for name in steps}
    for r in range(warmup + repeats):
        for name, fn in steps.items():
            t0 = time.thread_time()
            fn()
            dt = time.thread_time() - t0
            if r >= warmup:
                times[name].append(dt)
    return {name: float(torch.tensor(t).median()) for name, t in times.items()}


def time_to_target(
    curve: torch.Tensor, step_cost: torch.Tensor, target: float
) -> float:
    """Seconds until ``curve`` first reaches ``target``.

    curve: (steps,) a loss per step; step_cost: (steps,) seconds each step cost.
    Returns the summed cost of steps 0..k for the first k with ``curve[k] <= target``,
    or ``inf`` when the curve never gets there."""
    curve, step_cost = torch.as_tensor(curve), torch.as_tensor(step_cost)
    if curve.ndim != 1 or curve.shape != step_cost.shape or curve.numel() == 0:
        raise ValueError(
            "curve and step_cost must be non-empty 1-D tensors of one length, got "
            f"{tuple(curve.shape)} and {tuple(step_cost.shape)}"
        )
    if not torch.isfinite(step_cost).all() or (step_cost < 0).any():
        raise ValueError("step_cost must be finite and non-negative")
    if not math.isfinite(float(target)):
        raise ValueError(f"target must be finite, got {target!r}")
    hit = torch.nonzero(torch.nan_to_num(curve, nan=math.inf) <= target).flatten()
    if hit.numel() == 0:
        return math.inf
    return float(step_cost[: int(hit[0]) + 1].double().sum())
