"""Synthetic event data (a moving bar), sensor noise, and a one-hidden-layer spiking classifier."""
from __future__ import annotations

import torch
from torch import nn

from .kernels import _check_n

# --------------------------------------------------------------------------------------------
# Synthetic event data: a bar moving in one of four directions
# --------------------------------------------------------------------------------------------

DIRECTIONS = ("right", "left", "down", "up")


def make_moving_bar_events(n: int, size: int = 12, steps: int = 16, seed: int = 0, bar_width: int = 2,
                           speed_range: tuple[float, float] = (0.5, 1.0), background: float = 0.01,
                           ) -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded event-camera-like data set: a bar crossing a ``size x size`` sensor in one of 4 directions.

    Each sample picks a direction (label 0..3 = right, left, down, up), a speed (pixels per step),
    a start offset, and emits an ON event wherever the bar's leading edge passes (the pixels the
    bar enters at that step), plus background events with probability ``background`` per pixel and step.
    Returns events (steps, n, size*size) in {0, 1} (float32) and labels (n,) int64.
    The summed event count over time is nearly direction-blind for left vs right and for up vs
    down: telling them apart needs the order of events, i.e. temporal memory.
    """
    _check_n(n)
    if size < 4 or steps < 2 or bar_width < 1:
        raise ValueError(f"need size >= 4, steps >= 2, bar_width >= 1, got {size}, {steps}, {bar_width}")
    lo, hi = speed_range
    if not 0 < lo <= hi:
        raise ValueError(f"speed_range must satisfy 0 < lo <= hi, got {speed_range}")
    if not 0.0 <= background <= 1.0:
        raise ValueError(f"background must lie in [0, 1], got {background}")
    g = torch.Generator().manual_seed(int(seed))
    labels = torch.randint(0, 4, (n,), generator=g)
    speed = lo + (hi - lo) * torch.rand(n, generator=g)                               # px / step
    span = size + bar_width
    start = -bar_width + torch.rand(n, generator=g) * (span - speed * steps).clamp(min=0)  # where the bar starts
    t = torch.arange(steps + 1, dtype=torch.float32)                                  # (steps+1,)
    front = start[None, :] + speed[None, :] * t[:, None]                              # (steps+1, n) leading edge
    coord = torch.arange(size, dtype=torch.float32)                                   # (size,)
    inside = ((coord[None, None, :] >= front[..., None] - bar_width) &
              (coord[None, None, :] < front[..., None])).float()                     # (steps+1, n, size)
    entered = (inside[1:] - inside[:-1]).clamp(min=0)                                 # (steps, n, size) ON events
    # position along the motion axis: reversed for "left"/"up"
    reverse = (labels == 1) | (labels == 3)
    entered = torch.where(reverse[None, :, None], entered.flip(-1), entered)
    # the bar is extended over a random sub-range of the orthogonal axis
    o_lo = torch.randint(0, size // 3, (n,), generator=g)
    o_hi = size - torch.randint(0, size // 3, (n,), generator=g)
    ortho = ((coord[None, :] >= o_lo[:, None]) & (coord[None, :] < o_hi[:, None])).float()   # (n, size)
    frames = entered[..., :, None] * ortho[None, :, None, :]                          # (steps, n, along, ortho)
    vertical = labels >= 2
    frames = torch.where(vertical[None, :, None, None], frames, frames.transpose(-1, -2))  # rows = y
    noise = (torch.rand(frames.shape, generator=g) < background).float()
    events = (frames + noise).clamp(max=1.0)
    return events.reshape(steps, n, size * size), labels


def corrupt_events(events: torch.Tensor, flip_prob: float, seed: int = 0) -> torch.Tensor:
    """Flip each event bit (0 <-> 1) independently with probability ``flip_prob``: sensor noise.

    events: (T, n, d) in {0, 1}. Returns a tensor of the same shape and dtype.
    """
    if not 0.0 <= flip_prob <= 1.0:
        raise ValueError(f"flip_prob must lie in [0, 1], got {flip_prob}")
    g = torch.Generator().manual_seed(int(seed))
    flips = (torch.rand(events.shape, generator=g) < flip_prob).to(events.device)
    return torch.where(flips, 1.0 - events, events)


class SpikingMLP(nn.Module):
    """Events (T, batch, d_in) -> Linear -> spiking neurons -> Linear, logits = time-mean of the output.

    ``neuron`` is any module mapping (T, batch, d) to (spikes, membrane), e.g. :class:`FractionalLIF`
    (alpha=1 is the LIF baseline). Returns logits (batch, classes).
    """

    def __init__(self, d_in: int, d_hidden: int, n_classes: int, neuron: nn.Module):
        super().__init__()
        self.encode = nn.Linear(d_in, d_hidden)
        self.neuron = neuron
        self.readout = nn.Linear(d_hidden, n_classes)

    def forward(self, events: torch.Tensor) -> torch.Tensor:
        if events.ndim != 3:
            raise ValueError(f"events must be (T, batch, d_in), got shape {tuple(events.shape)}")
        spikes, _ = self.neuron(self.encode(events))                        # (T, B, H)
        return self.readout(spikes).mean(0)                                 # (B, classes)
