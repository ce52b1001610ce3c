"""The fine-tuning methods: VIDD (roll-in, roll-out with a value, forward-KL update,
lagged teacher) and the DDPO baseline (clipped policy gradient), both counting their
reward calls."""

from __future__ import annotations

import copy
from typing import Callable

import torch
from torch import nn

from ..validate import check_positive
from .diffusion import MaskedDenoiser, rollout_step, sample, step_logprob
from .toy import MASK, _check_tokens


# ------------------------------------------------------------------------------ methods
@torch.no_grad()
def posterior_mean_value(
    pre: nn.Module, x: torch.Tensor, reward_fn: Callable[[torch.Tensor], torch.Tensor]
) -> torch.Tensor:
    """The paper's cheap value: ``v(x) ≈ r(x̂_0(x))`` with x̂_0 the pretrained
    denoiser's argmax fill-in.

    x: (B, L) ids 0..4. Returns (B,) rewards; costs B reward calls.
        On a clean x it is r(x).
    """
    _check_tokens(x, "x", allow_mask=True)
    x0_hat = torch.where(x == MASK, pre(x).argmax(-1), x)  # (B, L)
    return reward_fn(x0_hat)


WEIGHTINGS = ("state", "none", "batch", "z")


def soft_weights(
    v: torch.Tensor,
    alpha: float,
    normalise: str = "state",
    v_state: torch.Tensor | None = None,
    group: torch.Tensor | None = None,
) -> torch.Tensor:
    """Teacher weights for :func:`vidd_loss`. v: (N,) values v(x_{t-1}) of the
    roll-out states.

    ``normalise`` picks one of four variants (the chapter measures them side by side):

    * ``"state"`` -- **the paper's kernel**: ``w = exp((v(x_{t-1}) − v(x_t))/α)``, each
      state divided by its own normaliser ``exp(v(x_t)/α)`` (``v_state``, (N,),
      required), so that with exact values every state's weights average to 1 (the
      official code's ``use_value_xt``).
    * ``"none"`` -- **the official DNA loss** (``loss_func='KL'``,
      ``reward_norm='none'``): the raw ``exp(v/α)``, no normaliser at all, so states
      with high value count more.
    * ``"batch"`` -- ``exp(v/α)`` self-normalised to mean 1 over the whole batch:
      ``"none"`` up to one constant per update (this library's earlier default).
    * ``"z"`` -- the official ``reward_norm='normal'``: v z-scored within each ``group``
      (the B states of one timestep, as the code's per-timestep loss sees them; default:
      one group), then ``exp(v_z/α)``. It tilts by ``exp(v/(α·std v))``: the effective
      temperature is ``α·std(v)``, not α, so its target is not the p* at α.

    Returns (N,) weights in v's floating dtype (float32 for integer v),
    without gradient.
    """
    check_positive("alpha", alpha)
    if normalise not in WEIGHTINGS:
        raise ValueError(f"normalise must be one of {WEIGHTINGS}, got {normalise!r}")
    if not isinstance(v, torch.Tensor) or v.ndim != 1 or v.numel() == 0:
        raise ValueError(f"v must be a non-empty 1-D tensor of values, got {v!r}")
    out_dtype = v.dtype if v.is_floating_point() else torch.float32
    v = v.detach().double()
    if not torch.isfinite(v).all():
        raise ValueError("v must be finite")
    if normalise == "state":
        if (
            v_state is None
            or not isinstance(v_state, torch.Tensor)
            or v_state.shape != v.shape
        ):
            raise ValueError(
                f"normalise='state' needs v_state, the values v(x_t) of the states, "
                f"shape {tuple(v.shape)}; got {None if v_state is None else v_state}"
            )
        logw = (v - v_state.detach().double().to(v.device)) / alpha
        return logw.exp().to(out_dtype)
    if normalise == "none":
        return (v / alpha).exp().to(out_dtype)
    if normalise == "batch":
        return (torch.softmax(v / alpha, 0) * v.shape[0]).to(out_dtype)
    g = (
        torch.zeros_like(v, dtype=torch.int64)
        if group is None
        else group.to(v.device).long()
    )
    if g.shape != v.shape:
        raise ValueError(
            f"group must have shape {tuple(v.shape)}, got {tuple(g.shape)}"
        )
    n = int(g.max()) + 1
    count = torch.zeros(n, dtype=v.dtype, device=v.device).index_add_(
        0, g, torch.ones_like(v)
    )
    mean = torch.zeros(n, dtype=v.dtype, device=v.device).index_add_(0, g, v) / count
    var = torch.zeros(n, dtype=v.dtype, device=v.device).index_add_(
        0, g, (v - mean[g]) ** 2
    )
    std = (var / (count - 1).clamp_min(1)).sqrt()  # the unbiased std, as torch.std
    vz = (v - mean[g]) / (std[g] + 1e-8)
    return (vz / alpha).exp().to(out_dtype)


def vidd_loss(
    model: nn.Module, x_t: torch.Tensor, x_s: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    """VIDD's distillation loss: ``−mean_b w_b · log p_θ(x_s,b | x_t,b)``.

    With x_s ~ p_old(·|x_t) and w ∝ exp(v(x_s)/α) this is, up to a constant, the forward
    ``KL(p*(·|x_t) ‖ p_θ(·|x_t))`` to the soft-optimal kernel ``p* ∝ p_old · exp(v/α)``.
    x_t, x_s: (B, L); weights: (B,), no gradient. Returns a scalar.
    """
    if weights.shape != x_t.shape[:1]:
        raise ValueError(
            f"weights must have shape ({x_t.shape[0]},), got {tuple(weights.shape)}"
        )
    return -(weights.detach() * step_logprob(model, x_t, x_s)).mean()


def finetune_vidd(
    model: MaskedDenoiser,
    pre: MaskedDenoiser,
    reward_fn: Callable[[torch.Tensor], torch.Tensor],
    updates: int,
    alpha: float,
    batch_size: int = 64,
    lr: float = 1e-3,
    refresh_every: int = 5,
    beta_pre: float = 0.5,
    normalise: str = "state",
    value: str | Callable = "posterior_mean",
    grad_clip: float | None = None,
    generator: torch.Generator | None = None,
    callback: Callable[[int, int], None] | None = None,
) -> dict:
    """Fine-tune ``model`` (in place) by iterative distillation (VIDD).

    Each update: **roll-in** B trajectories from the pretrained model (probability
    ``beta_pre``) or from the lagged teacher ``old``; every state x_t on them is a
    training state (B·L states). **Roll-out**: one step x_{t-1} ~ p_old(·|x_t) and its
    value v(x_{t-1}) (``"posterior_mean"``: r(argmax x̂_0), one reward call each; or a
    callable (B, L) → (B,) such as an exact table, whose calls are not counted).
    ``normalise="state"`` (the paper's kernel) also needs v(x_t): B·L more calls.
    See :func:`soft_weights` for the four weightings.
    **Update**: one Adam step on :func:`vidd_loss` (gradient norm clipped to
    ``grad_clip`` if given, 1.0 in the official code). The teacher ``old ← model`` every
    ``refresh_every`` updates; ``refresh_every=0`` freezes it at the pretrained model
    (then the fixed point is p* itself). ``callback(update, reward_calls)`` is called
    after each update. Returns a dict with ``reward_calls`` and ``samples``
    (trajectories drawn), cumulative, one entry per update.
    """
    check_positive("alpha", alpha)
    for name, val in (
        ("updates", updates),
        ("batch_size", batch_size),
        ("refresh_every", refresh_every),
    ):
        if isinstance(val, bool) or not isinstance(val, int):
            raise TypeError(f"{name} must be an int, got {val!r}")
    if updates < 0 or batch_size < 2 or refresh_every < 0 or not 0 <= beta_pre <= 1:
        raise ValueError(
            "need updates >= 0, batch_size >= 2, refresh_every >= 0, beta_pre in [0, 1]"
        )
    if normalise not in WEIGHTINGS:
        raise ValueError(f"normalise must be one of {WEIGHTINGS}, got {normalise!r}")
    if value != "posterior_mean" and not callable(value):
        raise ValueError(
            "value must be 'posterior_mean' or a callable (B, L) -> (B,), got "
            f"{value!r}"
        )
    L = model.length
    device = next(model.parameters()).device
    old = copy.deepcopy(pre).requires_grad_(False)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    # timestep of each row
    group = torch.arange(L, device=device).repeat_interleave(batch_size)
    value_fn = (
        (lambda x: posterior_mean_value(pre, x, reward_fn))
        if value == "posterior_mean"
        else value
    )
    calls, samples, history, drawn = 0, 0, [], []
    for u in range(updates):
        if refresh_every and u % refresh_every == 0 and u > 0:
            old.load_state_dict(model.state_dict())  # the lagged copy catches up
        # roll-in: off-policy states from the pretrained model or the lagged teacher
        use_pre = torch.rand((), generator=generator).item() < beta_pre
        # (L+1, B, L)
        _, traj = sample(pre if use_pre else old, batch_size, L, generator, device)
        samples += batch_size
        # (L*B, L) every state that still has a mask, by timestep
        x_t = traj[:-1].reshape(-1, L)
        # roll-out: one step of the teacher, and the value of where it lands
        x_s = rollout_step(old, x_t, generator)  # (L*B, L)
        v = value_fn(x_s)
        v_t = value_fn(x_t) if normalise == "state" else None
        if value == "posterior_mean":
            calls += x_s.shape[0] * (2 if normalise == "state" else 1)
        w = soft_weights(v, alpha, normalise, v_state=v_t, group=group)  # (L*B,)
        loss = vidd_loss(model, x_t, x_s, w)  # forward KL to the soft-optimal kernel
        opt.zero_grad()
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        history.append(calls)
        drawn.append(samples)
        if callback is not None:
            callback(u, calls)
    return {"reward_calls": history, "samples": drawn}


def ddpo_loss(
    model: nn.Module,
    x_t: torch.Tensor,
    x_s: torch.Tensor,
    old_logp: torch.Tensor,
    advantage: torch.Tensor,
    clip: float = 0.2,
) -> torch.Tensor:
    """DDPO's clipped surrogate over denoising steps (PPO on the diffusion MDP).

    ``ρ = p_θ(x_s|x_t)/p_old(x_s|x_t)``; loss
    ``= mean max(−A ρ, −A clip(ρ, 1−ε, 1+ε))``.
    x_t, x_s: (N, L) transitions; old_logp, advantage: (N,). Returns a scalar.
    """
    if not 0 < clip < 1:
        raise ValueError(f"clip must lie in (0, 1), got {clip}")
    ratio = torch.exp(step_logprob(model, x_t, x_s) - old_logp.detach())
    a = advantage.detach()
    return torch.maximum(-a * ratio, -a * ratio.clamp(1 - clip, 1 + clip)).mean()


def finetune_ddpo(
    model: MaskedDenoiser,
    reward_fn: Callable[[torch.Tensor], torch.Tensor],
    updates: int,
    batch_size: int = 64,
    lr: float = 1e-3,
    inner_steps: int = 1,
    clip: float = 0.2,
    grad_clip: float | None = None,
    generator: torch.Generator | None = None,
    callback: Callable[[int, int], None] | None = None,
) -> dict:
    """Fine-tune ``model`` (in place) with DDPO: on-policy samples, normalised
    advantages, clipping.

    Every ``inner_steps`` updates: draw B trajectories from the current model, score the
    B clean strings (B reward calls), advantage ``A = (r − mean r)/std r`` shared by all
    L steps of a trajectory; then ``inner_steps`` Adam steps on :func:`ddpo_loss`.
    ``inner_steps=1`` is the official DNA setting (one update per batch, the old policy
    refreshed every epoch), where the ratio is 1 and DDPO is REINFORCE with normalised
    advantages. ``updates`` counts Adam steps, so the two fine-tuners can be compared at
    an equal number of updates. Returns a dict with ``reward_calls`` and ``samples``
    (trajectories drawn), cumulative, one entry per update.
    """
    for name, val in (
        ("updates", updates),
        ("batch_size", batch_size),
        ("inner_steps", inner_steps),
    ):
        if isinstance(val, bool) or not isinstance(val, int):
            raise TypeError(f"{name} must be an int, got {val!r}")
    if updates < 0 or batch_size < 2 or inner_steps < 1:
        raise ValueError("need updates >= 0, batch_size >= 2, inner_steps >= 1")
    L = model.length
    device = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    calls, samples, history, drawn, u = 0, 0, [], [], 0
    while u < updates:
        x0, traj = sample(model, batch_size, L, generator, device)  # on-policy
        r = reward_fn(x0)
        calls += batch_size
        samples += batch_size
        # (L*B,) one advantage per trajectory
        adv = ((r - r.mean()) / (r.std() + 1e-8)).repeat(L)
        x_t, x_s = traj[:-1].reshape(-1, L), traj[1:].reshape(-1, L)
        with torch.no_grad():
            old_logp = step_logprob(model, x_t, x_s)
        for _ in range(inner_steps):
            if u >= updates:
                break
            loss = ddpo_loss(model, x_t, x_s, old_logp, adv, clip)
            opt.zero_grad()
            loss.backward()
            if grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            opt.step()
            history.append(calls)
            drawn.append(samples)
            if callback is not None:
                callback(u, calls)
            u += 1
    return {"reward_calls": history, "samples": drawn}
