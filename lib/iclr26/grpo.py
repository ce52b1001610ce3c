"""GRPO's group-normalised advantage and clipped surrogate: the one home of the RL
maths that two chapters train with (18, ReVisual-R1, on its two-modality policy; 17,
SIREN, on its reasoning chains).

    adv = grpo_advantages(rewards)           # (P prompts, G samples) -> (P, G)
    loss = grpo_loss(logp, adv.flatten())    # one on-policy step: the ratio is 1

A change here changes both chapters' results, and the seed sweeps of both go stale.
"""

from __future__ import annotations

import torch

from .validate import as_float


def as_rewards(rewards) -> torch.Tensor:
    """``rewards`` checked as a finite (P, G) tensor with P >= 1 prompts and G >= 2
    samples each, as a floating-point tensor (integer rewards become the default
    float dtype)."""
    if not isinstance(rewards, torch.Tensor):
        raise TypeError(
            f"rewards must be a torch.Tensor of shape (P, G), got "
            f"{type(rewards).__name__}"
        )
    if rewards.ndim != 2 or rewards.shape[1] < 2 or rewards.shape[0] < 1:
        raise ValueError(
            f"rewards must have shape (P prompts, G >= 2 samples), got "
            f"{tuple(rewards.shape)}"
        )
    r = rewards.to(
        torch.get_default_dtype() if not rewards.is_floating_point() else rewards.dtype
    )
    if not torch.isfinite(r).all():
        raise ValueError("rewards must be finite (found NaN or inf)")
    return r


def grpo_advantages(
    rewards: torch.Tensor, eps: float = 1e-6, unbiased: bool = True
) -> torch.Tensor:
    """GRPO's group-normalised advantage A_ij = (r_ij - mean_j r_i) / (std_j r_i + eps).

    rewards: (P, G), G samples for each of P prompts. Returns (P, G). ``unbiased`` uses
    the G-1 denominator in the std, as the official code does. A group whose rewards are
    all equal gets A = 0 exactly (its numerator is 0).
    """
    r = as_rewards(rewards)
    eps = as_float(eps, "eps", lo=0.0, open_lo=True)
    centred = r - r.mean(dim=1, keepdim=True)
    return centred / (r.std(dim=1, keepdim=True, unbiased=unbiased) + eps)


def grpo_loss(
    logp: torch.Tensor,
    adv: torch.Tensor,
    old_logp: torch.Tensor | None = None,
    clip: float = 0.2,
    kl_coef: float = 0.0,
    ref_logp: torch.Tensor | None = None,
) -> torch.Tensor:
    """GRPO's clipped surrogate (to minimise), averaged over the given samples.

    logp, adv, old_logp, ref_logp: (n,) for the n sampled answers. The ratio is
    exp(logp - old_logp) (old_logp = logp.detach() when None: one on-policy step,
    ratio 1, and the gradient is -mean(A * grad logp)).
    The KL term is the k3 ("low-var-kl") estimator exp(ref - logp) - (ref - logp) - 1.
    """
    for name, t in (
        ("logp", logp),
        ("adv", adv),
        ("old_logp", old_logp),
        ("ref_logp", ref_logp),
    ):
        if t is not None and (
            not isinstance(t, torch.Tensor) or not t.is_floating_point()
        ):
            raise TypeError(f"{name} must be a floating-point torch.Tensor")
    if logp.ndim != 1 or logp.numel() == 0:
        raise ValueError(
            f"logp must be 1-d and non-empty, got shape {tuple(logp.shape)}"
        )
    for name, t in (("adv", adv), ("old_logp", old_logp), ("ref_logp", ref_logp)):
        # a (n, 1) tensor would broadcast against (n,) to (n, n): refuse it
        if t is not None and t.shape != logp.shape:
            raise ValueError(
                f"{name} must have logp's shape {tuple(logp.shape)}, got "
                f"{tuple(t.shape)}"
            )
    if not torch.isfinite(adv).all():
        raise ValueError("adv must be finite (found NaN or inf)")
    clip = as_float(clip, "clip", lo=0.0, open_lo=True)
    kl_coef = as_float(kl_coef, "kl_coef", lo=0.0)
    old = logp.detach() if old_logp is None else old_logp
    ratio = torch.exp(logp - old)
    surr = torch.minimum(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv)
    loss = -surr.mean()
    if kl_coef:
        if ref_logp is None:
            raise ValueError("kl_coef > 0 needs ref_logp")
        d = ref_logp - logp
        loss = loss + kl_coef * (torch.exp(d) - d - 1).mean()
    return loss


__all__ = ["as_rewards", "grpo_advantages", "grpo_loss"]
