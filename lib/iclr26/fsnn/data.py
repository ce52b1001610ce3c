"""Synthetic event data (a moving bar), sensor noise, and a one-hidden-layer spiking
classifier."""

from __future__ import annotations

import torch
from torch import nn

from ..core import seeded
from ..validate import as_float, as_int

# --------------------------------------------------------------------------------------
# Synthetic event data: a bar moving in one of four directions
# --------------------------------------------------------------------------------------

DIRECTIONS = ("right", "left", "down", "up")


def make_moving_bar_events(
    n: int,
    size: int = 12,
    steps: int = 16,
    seed: int = 0,
    bar_width: int = 2,
    speed_range: tuple[float, float] = (0.5, 1.0),
    background: float = 0.01,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded event-camera-like data set: a bar crossing a ``size x size`` sensor in
    one of 4 directions.

    Each sample picks a direction (label 0..3 = right, left, down, up), a speed
    (pixels per step), a start offset, and emits an ON event wherever the bar's leading
    edge passes (the pixels the bar enters at that step), plus background events with
    probability ``background`` per pixel and step. Returns events (steps, n, size*size)
    in {0, 1} (float32) and labels (n,) int64. The summed event count over time is
    nearly direction-blind for left vs right and for up vs down: telling them apart
    needs the order of events, i.e. temporal memory.
    """
    n = as_int(n, "n", lo=1)
    size, steps = as_int(size, "size", lo=4), as_int(steps, "steps", lo=2)
    bar_width, seed = as_int(bar_width, "bar_width", lo=1), as_int(seed, "seed", lo=0)
    background = as_float(background, "background", lo=0.0, hi=1.0)
    lo, hi = speed_range
    if not 0 < lo <= hi:
        raise ValueError(f"speed_range must satisfy 0 < lo <= hi, got {speed_range}")
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 4, (n,), generator=g)
    speed = lo + (hi - lo) * torch.rand(n, generator=g)  # px / step
    span = size + bar_width
    start = -bar_width + torch.rand(n, generator=g) * (span - speed * steps).clamp(
        min=0
    )  # where the bar starts
    t = torch.arange(steps + 1, dtype=torch.float32)  # (steps+1,)
    front = start[None, :] + speed[None, :] * t[:, None]  # (steps+1, n) leading edge
    coord = torch.arange(size, dtype=torch.float32)  # (size,)
    inside = (
        (coord[None, None, :] >= front[..., None] - bar_width)
        & (coord[None, None, :] < front[..., None])
    ).float()  # (steps+1, n, size)
    entered = (inside[1:] - inside[:-1]).clamp(min=0)  # (steps, n, size) ON events
    # position along the motion axis: reversed for "left"/"up"
    reverse = (labels == 1) | (labels == 3)
    entered = torch.where(reverse[None, :, None], entered.flip(-1), entered)
    # the bar is extended over a random sub-range of the orthogonal axis
    o_lo = torch.randint(0, size // 3, (n,), generator=g)
    o_hi = size - torch.randint(0, size // 3, (n,), generator=g)
    ortho = (
        (coord[None, :] >= o_lo[:, None]) & (coord[None, :] < o_hi[:, None])
    ).float()  # (n, size)
    frames = entered[..., :, None] * ortho[None, :, None, :]  # (steps, n, along, ortho)
    vertical = labels >= 2
    frames = torch.where(
        vertical[None, :, None, None], frames, frames.transpose(-1, -2)
    )  # rows = y
    noise = (torch.rand(frames.shape, generator=g) < background).float()
    events = (frames + noise).clamp(max=1.0)
    return events.reshape(steps, n, size * size), labels


CORRUPTIONS = ("flip", "drop", "jitter", "shift")


def _check_events(events) -> None:
    if not isinstance(events, torch.Tensor):
        raise TypeError(
            f"events must be a tensor of shape (T, n, d), got {type(events).__name__}"
        )
    if events.ndim != 3 or events.shape[0] < 1:
        raise ValueError(
            f"events must be (T, n, d) with time first, got shape {tuple(events.shape)}"
        )
    if not torch.is_floating_point(events):
        raise TypeError(
            f"events must be a floating tensor of 0/1 values, got {events.dtype}"
        )
    if not bool(((events == 0) | (events == 1)).all()):
        raise ValueError(
            "events must be binary (every entry 0 or 1); corrupting non-binary "
            "input (e.g. counts or already-encoded currents) is not defined"
        )


def corrupt_events(
    events: torch.Tensor,
    level: float,
    seed: int = 0,
    kind: str = "flip",
) -> torch.Tensor:
    """One corruption of an event stream, the kinds an event camera shows.

    events: (T, n, d) in {0, 1}, time first. Returns a tensor of the same
        shape and dtype.

    * ``"flip"``: every bit flips (0 <-> 1) with probability ``level`` (sensor noise:
      spurious events appear, true ones vanish);
    * ``"drop"``: every event is deleted with probability ``level`` (missed events);
    * ``"jitter"``: every event moves in time by an independent offset drawn uniformly
      from {-level, ..., level} steps (``level``: an integer >= 0); events pushed
      outside the window are lost, events landing on the same pixel and step merge;
    * ``"shift"``: every sample's whole stream is delayed by ``level`` steps (a latency
      shift; an integer, negative is earlier); what leaves the window is lost.
    ``level = 0`` returns the events unchanged (a copy).
    """
    _check_events(events)
    if kind not in CORRUPTIONS:
        raise ValueError(f"kind must be one of {CORRUPTIONS}, got {kind!r}")
    if isinstance(level, bool) or not isinstance(level, (int, float)):
        raise TypeError(f"level must be a number, got {type(level).__name__}")
    g = torch.Generator().manual_seed(int(seed))
    T = events.shape[0]
    if kind in ("flip", "drop"):
        if not 0.0 <= level <= 1.0:
            raise ValueError(
                f"level (a probability for {kind!r}) must lie in [0, 1], got {level}"
            )
        hit = (torch.rand(events.shape, generator=g) < level).to(events.device)
        return (
            torch.where(hit, 1.0 - events, events) if kind == "flip" else events * ~hit
        )
    if float(level) != int(level):
        raise ValueError(f"level (steps, for {kind!r}) must be an integer, got {level}")
    k = int(level)
    if kind == "shift":
        out = torch.zeros_like(events)
        if abs(k) < T:
            if k >= 0:
                out[k:] = events[: T - k]
            else:
                out[: T + k] = events[-k:]
        return out
    if k < 0:
        raise ValueError(f"level (maximum jitter in steps) must be >= 0, got {k}")
    offset = torch.randint(-k, k + 1, events.shape, generator=g).to(events.device)
    t = torch.arange(T, device=events.device).view(T, 1, 1).expand_as(events)
    new_t = t + offset
    keep = (events > 0) & (new_t >= 0) & (new_t < T)
    out = torch.zeros_like(events)
    nidx = (
        torch.arange(events.shape[1], device=events.device)
        .view(1, -1, 1)
        .expand_as(events)
    )
    didx = (
        torch.arange(events.shape[2], device=events.device)
        .view(1, 1, -1)
        .expand_as(events)
    )
    out[new_t[keep], nidx[keep], didx[keep]] = 1.0  # merged where they collide
    return out


def make_delayed_cue_events(
    n: int,
    d: int = 64,
    steps: int = 16,
    seed: int = 0,
    n_classes: int = 4,
    cue_steps: int = 2,
    go_steps: int = 2,
    background: float = 0.02,
    pattern_seed: int = 12345,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A task whose answer is given only at the start: a long-term-dependency probe.

    Each sample shows its class's cue pattern (a fixed random 25 % of the ``d`` inputs)
    during the first ``cue_steps`` steps, then background events only, then the same
    "go" pattern for every class in the last ``go_steps`` steps.
    A network that reads out only during the go steps must carry the cue across
    ``steps - cue_steps - go_steps`` silent steps in its neurons' state.
    Returns events (steps, n, d) in {0, 1} and labels (n,) int64.
    """
    n, d, seed = as_int(n, "n", lo=1), as_int(d, "d", lo=1), as_int(seed, "seed", lo=0)
    background = as_float(background, "background", lo=0.0, hi=1.0)
    if (
        steps < cue_steps + go_steps + 1
        or cue_steps < 1
        or go_steps < 1
        or n_classes < 2
    ):
        raise ValueError(
            "need cue_steps, go_steps >= 1, n_classes >= 2 and steps > cue_steps "
            f"+ go_steps, got steps={steps}, cue={cue_steps}, go={go_steps}"
        )
    pg = torch.Generator().manual_seed(int(pattern_seed))
    patterns = (torch.rand(n_classes, d, generator=pg) < 0.25).float()  # (classes, d)
    go = (torch.rand(d, generator=pg) < 0.25).float()  # (d,)
    g = torch.Generator().manual_seed(int(seed))
    labels = torch.randint(0, n_classes, (n,), generator=g)
    events = (torch.rand(steps, n, d, generator=g) < background).float()
    events[:cue_steps] = torch.maximum(events[:cue_steps], patterns[labels][None])
    events[-go_steps:] = torch.maximum(events[-go_steps:], go[None, None])
    return events, labels


class SpikingMLP(nn.Module):
    """Events (T, batch, d_in) -> Linear -> spiking neurons -> Linear -> logits
    (batch, classes).

    ``neuron`` is any module mapping (T, batch, d) to (spikes, membrane), e.g.
    :class:`FractionalLIF` (alpha=1 is the LIF baseline). The logits are the time-mean
    of the readout over all steps (``readout_steps=None``, as in spikeDE) or over the
    last ``readout_steps`` only.
    ``steps``: the number of time steps the model expects; given, a batch-first input
    (batch, T, d_in) is refused instead of being read as T = batch time steps.
    ``seed``: draw the initial weights of the two linear layers from a generator seeded
    with it (None: from torch's global generator, as ``nn.Linear`` does); the same
    seed gives the same network whatever ran before.
    """

    def __init__(
        self,
        d_in: int,
        d_hidden: int,
        n_classes: int,
        neuron: nn.Module,
        steps: int | None = None,
        readout_steps: int | None = None,
        seed: int | None = None,
    ):
        super().__init__()
        for name, value in (
            ("d_in", d_in),
            ("d_hidden", d_hidden),
            ("n_classes", n_classes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name, value in (("steps", steps), ("readout_steps", readout_steps)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(
                    f"{name} must be None or a positive int, got {value!r}"
                )
        if steps is not None and readout_steps is not None and readout_steps > steps:
            raise ValueError(f"readout_steps={readout_steps} exceeds steps={steps}")
        if seed is None:
            self.encode = nn.Linear(d_in, d_hidden)
            self.readout = nn.Linear(d_hidden, n_classes)
        else:
            with seeded(as_int(seed, "seed", lo=0)):
                self.encode = nn.Linear(d_in, d_hidden)
                self.readout = nn.Linear(d_hidden, n_classes)
        self.neuron = neuron
        self.steps, self.readout_steps = steps, readout_steps
        self.last_spike_rate: float | None = None

    def forward(self, events: torch.Tensor) -> torch.Tensor:
        if not isinstance(events, torch.Tensor):
            raise TypeError(
                f"events must be a tensor (T, batch, d_in), got {type(events).__name__}"
            )
        if events.ndim != 3:
            raise ValueError(
                f"events must be (T, batch, d_in), got shape {tuple(events.shape)}"
            )
        if events.shape[-1] != self.encode.in_features:
            raise ValueError(
                f"events must have d_in = {self.encode.in_features} features last, "
                f"got shape {tuple(events.shape)}"
            )
        if self.steps is not None and events.shape[0] != self.steps:
            hint = (
                " (it looks batch-first: pass events.transpose(0, 1))"
                if events.shape[1] == self.steps
                else ""
            )
            raise ValueError(
                f"events must be (T={self.steps}, batch, d_in), time first; got "
                f"shape {tuple(events.shape)}{hint}"
            )
        spikes, _ = self.neuron(self.encode(events))  # (T, B, H)
        # spikes per neuron per step
        self.last_spike_rate = float(spikes.detach().mean())
        out = spikes if self.readout_steps is None else spikes[-self.readout_steps :]
        return self.readout(out).mean(0)  # (B, classes)
