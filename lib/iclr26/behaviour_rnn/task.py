"""The two-item delayed-estimation task and the surrogate behaviour (target, swap,
guess), and the input sequence the RNN sees."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from ..validate import as_float, as_int, check_positive
from ._base import Tensor, unit, wrap

# inputs: item 1 colour (2) + location (2), item 2 the same, cue one-hot (2), clock (1)
N_IN = 11


@dataclass
class Trials:
    """A batch of trials. colours, locations: (B, 2) angles; cue: (B,) long (0 or 1, the
    cued item); swap_p: (B,) the surrogate's swap probability on each trial; component:
    (B,) long (0 target, 1 swap, 2 guess); x0: (B, 2) the surrogate response."""

    colours: Tensor
    locations: Tensor
    cue: Tensor
    swap_p: Tensor
    component: Tensor
    x0: Tensor
    visible: bool = False  # the items stay on screen through the response period
    guess_prob: float = 0.0  # the surrogate's guess probability (one for all trials)

    @property
    def target(self) -> Tensor:
        """(B,) the cued item's colour."""
        return self.colours.gather(1, self.cue[:, None])[:, 0]

    @property
    def nontarget(self) -> Tensor:
        """(B,) the uncued item's colour."""
        return self.colours.gather(1, 1 - self.cue[:, None])[:, 0]

    @property
    def distance(self) -> Tensor:
        """(B,) circular distance between the two items' locations, in [0, π]."""
        return wrap(self.locations[:, 0] - self.locations[:, 1]).abs()

    def __len__(self) -> int:
        return self.colours.shape[0]


def distance_profile(swap_prob: float, length: float = 1.0) -> tuple[float, float]:
    """Amplitude a of the distance-dependent swap profile π_s(d) = a·exp(−d/length),
    chosen so that its mean over d ~ U[0, π] (two uniform locations) equals
    ``swap_prob``. Returns (a, length)."""
    swap_prob = as_float(swap_prob, "swap_prob", lo=0.0, hi=1.0)
    length = check_positive("length", length)
    mean_exp = length / math.pi * (1 - math.exp(-math.pi / length))
    return swap_prob / mean_exp, float(length)


def make_trials(
    batch: int,
    swap_prob: float = 0.2,
    guess_prob: float = 0.05,
    noise: float = 0.15,
    swap_kind: str = "flat",
    generator=None,
    device=None,
    visible: bool = False,
) -> Trials:
    """Sample ``batch`` trials and the surrogate's response to each.

    swap_kind ``"flat"``: every trial swaps with probability ``swap_prob``.
    ``"distance"``: π_s(d) = a·exp(−d), d the items' location distance, with mean
    ``swap_prob`` (nearby items swap more, the pattern reported for macaques and
    humans). ``"none"``: no swaps. A response is the chosen colour on the unit circle
    plus N(0, noise² I). ``visible``: the items stay on screen through the response (a
    perceptual version with no memory delay)."""
    if not isinstance(visible, bool):
        raise TypeError(f"visible must be True or False, got {visible!r}")
    batch = as_int(batch, "batch", lo=1)
    swap_prob = as_float(swap_prob, "swap_prob", lo=0.0, hi=1.0)
    guess_prob = as_float(guess_prob, "guess_prob", lo=0.0, hi=1.0)
    noise = as_float(noise, "noise", lo=0.0, hi=10.0)
    if swap_kind not in ("flat", "distance", "none"):
        raise ValueError(
            f"swap_kind must be 'flat', 'distance' or 'none', got {swap_kind!r}"
        )
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None, got "
            f"{type(generator).__name__}"
        )
    g = generator
    dev = torch.device(device) if device is not None else torch.device("cpu")
    colours = (torch.rand(batch, 2, generator=g) * 2 - 1) * math.pi
    locations = (torch.rand(batch, 2, generator=g) * 2 - 1) * math.pi
    cue = torch.randint(0, 2, (batch,), generator=g)
    d = wrap(locations[:, 0] - locations[:, 1]).abs()
    if swap_kind == "flat":
        swap_p = torch.full((batch,), swap_prob)
    elif swap_kind == "distance":
        a, length = distance_profile(swap_prob)
        if a + guess_prob > 1:
            raise ValueError(
                f"swap_prob={swap_prob} needs a peak swap probability "
                f"{a:.2f}, which with guess_prob={guess_prob} exceeds 1"
            )
        swap_p = a * torch.exp(-d / length)
    else:
        swap_p = torch.zeros(batch)
    if (swap_p + guess_prob > 1 + 1e-9).any():
        raise ValueError(
            f"swap_prob + guess_prob must be <= 1, got {swap_prob} + {guess_prob}"
        )
    u = torch.rand(batch, generator=g)
    component = torch.where(
        u < guess_prob, 2, torch.where(u < guess_prob + swap_p, 1, 0)
    )
    target = colours.gather(1, cue[:, None])[:, 0]
    nontarget = colours.gather(1, 1 - cue[:, None])[:, 0]
    guess = (torch.rand(batch, generator=g) * 2 - 1) * math.pi
    theta = torch.where(
        component == 0, target, torch.where(component == 1, nontarget, guess)
    )
    x0 = unit(theta) + noise * torch.randn(batch, 2, generator=g)
    return Trials(
        colours.to(dev),
        locations.to(dev),
        cue.to(dev),
        swap_p.to(dev),
        component.to(dev),
        x0.to(dev),
        visible,
        guess_prob,
    )


def conditional_mean(trials: Trials, swap_prob=None, guess_prob=None) -> Tensor:
    """E[x0 | colours, cue] of the surrogate: (1 − π_s − π_g) u_target + π_s u_nontarget
    (a uniform guess and the Gaussian blur average to zero). (B, 2). ``swap_prob``
    defaults to each trial's own π_s, ``guess_prob`` to the one the trials were drawn
    with."""
    if not isinstance(trials, Trials):
        raise TypeError(
            f"trials must be a Trials batch (from make_trials), got "
            f"{type(trials).__name__}"
        )
    pg = (
        trials.guess_prob
        if guess_prob is None
        else as_float(guess_prob, "guess_prob", lo=0.0, hi=1.0)
    )
    if swap_prob is None:
        ps = trials.swap_p
    else:
        ps = torch.full_like(
            trials.swap_p, as_float(swap_prob, "swap_prob", lo=0.0, hi=1.0)
        )
    if bool((ps + pg > 1 + 1e-9).any()):
        raise ValueError(
            f"swap_prob + guess_prob must be <= 1, got up to "
            f"{float(ps.max()):.3g} + {pg}"
        )
    pt = 1 - ps - pg
    return pt[:, None] * unit(trials.target) + ps[:, None] * unit(trials.nontarget)


def trial_inputs(trials: Trials, n_stim: int, n_delay: int, T: int) -> Tensor:
    """The input sequence, (n_stim + n_delay + T, B, 11): both items' colour and
    location (cos, sin) during the stimulus; nothing during the delay; the cue (one-hot)
    and a clock (s/T, counting down the diffusion steps) during the response period, and
    the items again if ``trials.visible``."""
    n_stim, n_delay = as_int(n_stim, "n_stim", lo=1), as_int(n_delay, "n_delay", lo=0)
    T = as_int(T, "T", lo=1)
    B, dev = len(trials), trials.colours.device
    stim = torch.cat(
        [
            unit(trials.colours[:, 0]),
            unit(trials.locations[:, 0]),
            unit(trials.colours[:, 1]),
            unit(trials.locations[:, 1]),
        ],
        -1,
    )
    u = torch.zeros(n_stim + n_delay + T, B, N_IN, device=dev)
    u[:n_stim, :, :8] = stim
    if trials.visible:
        u[n_stim + n_delay :, :, :8] = stim
    cue = nn.functional.one_hot(trials.cue, 2).float()
    u[n_stim + n_delay :, :, 8:10] = cue
    # s/T, s = T … 1
    clock = torch.arange(T, 0, -1, device=dev, dtype=torch.float32) / T
    u[n_stim + n_delay :, :, 10] = clock[:, None]
    return u


def conditional_cov(
    trials: Trials, noise: float, swap_prob=None, guess_prob=None
) -> Tensor:
    """Cov[x0 | colours, cue] of the surrogate, (B, 2, 2): the second moment the
    Gaussian moment matcher fits. ``swap_prob``, ``guess_prob`` default as in
    :func:`conditional_mean`; ``noise`` is the blur's standard deviation."""
    if not isinstance(trials, Trials):
        raise TypeError(
            f"trials must be a Trials batch (from make_trials), got "
            f"{type(trials).__name__}"
        )
    noise = as_float(noise, "noise", lo=0.0, hi=10.0)
    pg = (
        trials.guess_prob
        if guess_prob is None
        else as_float(guess_prob, "guess_prob", lo=0.0, hi=1.0)
    )
    mean = conditional_mean(trials, swap_prob, guess_prob)
    ps = (
        trials.swap_p
        if swap_prob is None
        else torch.full_like(
            trials.swap_p, as_float(swap_prob, "swap_prob", lo=0.0, hi=1.0)
        )
    )
    ut, uo = unit(trials.target), unit(trials.nontarget)
    eye = torch.eye(2, device=ut.device, dtype=ut.dtype)
    second = (
        ((1 - ps - pg)[:, None, None] * ut[:, :, None] * ut[:, None, :])
        + ps[:, None, None] * uo[:, :, None] * uo[:, None, :]
        + pg / 2 * eye
    )  # E[u uᵀ]; a uniform guess: I/2
    return second - mean[:, :, None] * mean[:, None, :] + noise**2 * eye
