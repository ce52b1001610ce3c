"""Part consistency (Huang et al., 2023), read the same way for every kind of unit.

A unit (an IVPT prototype, a VPT-Deep prompt) has a score map over the N patches of
each image. Its *region* in an image is its top-``m`` patches -- in **every** image:
no unit may abstain. The parts in the region are those covering a patch of it. Over the
images, ``freq[u, p]`` is the fraction whose region holds part ``p``; the unit is
*consistent* when ``max_p freq[u, p] >= mu`` (Huang et al. use mu = 0.8), and the
part consistency of a model is the fraction of its units that are.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..validate import as_int, as_tensor


def region_parts(scores: torch.Tensor, parts: torch.Tensor, m: int) -> torch.Tensor:
    """Which parts each unit's top-``m`` region holds, in each image.

    scores: [B, U, N] any score per unit and patch (higher = more in the region);
    parts: bool [B, P, N] whether part p covers patch n (background excluded by the
    caller). Returns bool [B, U, P].
    """
    as_tensor(scores, "scores", ndim=3, floating=True)
    as_tensor(parts, "parts", ndim=3)
    if parts.dtype != torch.bool:
        raise TypeError(
            "parts must be a bool tensor (does part p cover patch n?), got "
            f"{parts.dtype}"
        )
    if scores.shape[0] != parts.shape[0] or scores.shape[2] != parts.shape[2]:
        raise ValueError(
            f"scores must be [B, U, N] and parts [B, P, N], got "
            f"{tuple(scores.shape)} and {tuple(parts.shape)}"
        )
    m = as_int(m, "m", lo=1, hi=scores.shape[2])
    top = scores.topk(m, dim=-1).indices  # [B, U, m]
    region = torch.zeros_like(scores, dtype=torch.bool).scatter_(-1, top, True)
    return (region.float() @ parts.float().transpose(1, 2)) > 0  # [B, U, P]


def part_frequency(scores: torch.Tensor, parts: torch.Tensor, m: int) -> torch.Tensor:
    """freq [U, P]: the fraction of images whose top-m region of unit u holds part p."""
    return region_parts(scores, parts, m).float().mean(0)


def part_consistency(
    scores: torch.Tensor, parts: torch.Tensor, m: int, mu: float = 0.8
) -> dict:
    """Huang et al.'s part consistency, every image counted for every unit.

    Returns dict(consistency: fraction of units with max_p freq >= mu,
    purity: mean over units of max_p freq (the same quantity before the threshold,
    which does not move in steps of 1/U), best [U]: max_p freq per unit,
    part [U]: the argmax part).
    """
    if not 0 < mu <= 1:
        raise ValueError(f"mu must be in (0, 1], got {mu}")
    freq = part_frequency(scores, parts, m)
    best, part = freq.max(1)
    return dict(
        consistency=(best >= mu).float().mean().item(),
        purity=best.mean().item(),
        best=best,
        part=part,
    )


def kmeans(
    x: torch.Tensor, k: int, iters: int = 20, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Plain k-means (k-means++ start) on rows of x [n, D] -> centres [k, D]."""
    k = as_int(k, "k", lo=1)
    as_tensor(x, "x", ndim=2, floating=True)
    if len(x) < k:
        raise ValueError(f"x must be [n >= k, D], got {tuple(x.shape)}")
    idx = [int(torch.randint(len(x), (1,), generator=generator))]
    for _ in range(k - 1):
        d2 = torch.cdist(x, x[idx]).min(1).values ** 2
        # drawn on the CPU, where the generator lives (x may be on a GPU)
        p = (d2 / d2.sum()).cpu()
        idx.append(int(torch.multinomial(p, 1, generator=generator)))
    c = x[idx].clone()
    for _ in range(iters):
        a = torch.cdist(x, c).argmin(1)
        for j in range(k):
            if (a == j).any():
                c[j] = x[a == j].mean(0)
    return c


def fixed_windows(grid: int, side: int = 2) -> torch.Tensor:
    """Every ``side`` x ``side`` window of a ``grid`` x ``grid`` patch grid as a unit
    that ignores the image: scores [U, N], 1 inside the window, 0 outside, plus a tiny
    fixed ramp so that ``topk`` breaks no ties at random. A floor for the metric: what
    position alone scores."""
    if not 1 <= side <= grid:
        raise ValueError(f"side must be in [1, {grid}], got {side}")
    n = grid - side + 1
    out = torch.zeros(n * n, grid, grid)
    for r in range(n):
        for c in range(n):
            out[r * n + c, r : r + side, c : c + side] = 1.0
    ramp = torch.linspace(0, 1e-3, grid * grid)
    return out.view(n * n, grid * grid) + ramp


def position_only(train_scores: torch.Tensor, n_images: int, m: int) -> torch.Tensor:
    """Each unit's *modal region*, the same in every image: a unit by its place alone.

    train_scores: [B, U, N] the units' scores on the *training* images. A patch's
    score is how often it was in the unit's top-``m`` region over those images, so
    the top-``m`` of the result is the unit's ``m`` most frequent region patches.
    The same top-``m`` rule as the metric and no score scale enter, so the reading is
    the same for any kind of unit. Returns [n_images, U, N]; read on the test images
    by the metric, it is what the unit's usual place alone explains.
    """
    if train_scores.ndim != 3:
        raise ValueError(
            f"train_scores must be [B, U, N], got {tuple(train_scores.shape)}"
        )
    if not isinstance(m, int) or not 1 <= m <= train_scores.shape[2]:
        raise ValueError(f"m must be an int in [1, {train_scores.shape[2]}], got {m!r}")
    top = train_scores.topk(m, dim=-1).indices  # [B, U, m]
    region = torch.zeros_like(train_scores).scatter_(-1, top, 1.0)
    freq = region.mean(0)  # [U, N]
    return freq[None].expand(n_images, -1, -1)


def largest_share(logmaps: list[torch.Tensor], on: torch.Tensor) -> float:
    """The largest share of the patches ``on`` that one slot owns, over every layer.

    logmaps: per layer [B, K + 1, N] (any monotone map); on: bool [B, N], the patches
    counted (the chapter passes the bird's: those that hold a part). 1.0 when one
    slot -- the background or one prototype -- owns every such patch in some layer.
    """
    worst = 0.0
    for A in logmaps:
        own = A.argmax(1)[on]  # the owner of each counted patch
        if own.numel():
            share = own.bincount(minlength=A.shape[1]).max().item() / own.numel()
            worst = max(worst, share)
    return worst


def corrected_units(
    scores: torch.Tensor, parts: torch.Tensor, m: int, gain: float
) -> tuple[torch.Tensor, int]:
    """A planted case: the same units made more part-consistent by construction.

    In ``ceil(gain * B * U)`` of the (image, unit) pairs where a unit's top-``m``
    region misses its most frequent part (pairs taken in image order), the unit's
    scores are replaced by that part's mask (plus a tiny fixed ramp against ties), so
    its region there holds the part. Each correction raises that unit's frequency of
    its best part by 1/B, so the purity (:func:`part_consistency`) rises by at least
    ``gain`` when there are enough misses to correct. scores: [B, U, N]; parts: bool
    [B, P, N]. Returns (the corrected scores, the number of pairs corrected).
    """
    if not 0 <= gain <= 1:
        raise ValueError(f"gain must lie in [0, 1], got {gain}")
    holds = region_parts(scores, parts, m)  # [B, U, P]
    best = holds.float().mean(0).argmax(1)  # [U]
    B, U, N = scores.shape
    target = parts[:, best].float()  # [B, U, N]: each unit's best part's mask
    miss = ~holds[:, torch.arange(U), best] & (target.sum(-1) > 0)  # [B, U]
    want = math.ceil(gain * B * U)
    order = torch.nonzero(miss)[:want]  # (image, unit) pairs, image order
    out = scores.clone()
    ramp = torch.linspace(0, 1e-3, N, dtype=scores.dtype, device=scores.device)
    out[order[:, 0], order[:, 1]] = target[order[:, 0], order[:, 1]].to(out) + ramp
    return out, len(order)


def corrected_predictions(
    pred: torch.Tensor, labels: torch.Tensor, gain: float
) -> torch.Tensor:
    """A planted case for an accuracy comparison: ``pred`` with its first wrong
    predictions set right until the accuracy has risen by ``gain`` (or no error is
    left). pred, labels: int [n]."""
    if not 0 <= gain <= 1:
        raise ValueError(f"gain must lie in [0, 1], got {gain}")
    out = pred.clone()
    wrong = torch.nonzero(out != labels).flatten()[: math.ceil(gain * len(out))]
    out[wrong] = labels[wrong]
    return out


def degraded_predictions(
    pred: torch.Tensor, labels: torch.Tensor, loss: float, n_classes: int
) -> torch.Tensor:
    """A null case for a no-harm accuracy bound: ``pred`` with its first right
    predictions made wrong (the next class) until the accuracy has fallen by
    ``loss``. pred, labels: int [n]."""
    if not 0 <= loss <= 1:
        raise ValueError(f"loss must lie in [0, 1], got {loss}")
    out = pred.clone()
    right = torch.nonzero(out == labels).flatten()[: math.ceil(loss * len(out))]
    out[right] = (labels[right] + 1) % n_classes
    return out


def nmi_ari(assign: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """NMI and ARI of a patch assignment against the part labels (scikit-learn)."""
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    a, t = np.asarray(assign).ravel(), np.asarray(truth).ravel()
    return float(normalized_mutual_info_score(t, a)), float(adjusted_rand_score(t, a))


def check_concept_maps(fn) -> object:
    """Grade a student's ``fn(feats [B, N, D], protos [K, D], bias [K, N])``,
    which must return [B, K, N], the concept map softmax_k(-||e - q_k||^2 + b_k)."""
    from iclr26.core import grade_exercise

    def trial(f):
        g = torch.Generator().manual_seed(0)
        e = torch.randn(2, 7, 3, generator=g, dtype=torch.float64)
        q = torch.randn(4, 3, generator=g, dtype=torch.float64)
        b = torch.randn(4, 7, generator=g, dtype=torch.float64)
        out = f(e.clone(), q.clone(), b.clone())
        assert isinstance(out, torch.Tensor), (
            f"return a tensor, got {type(out).__name__}"
        )
        assert out.shape == (2, 4, 7), (
            f"the output must be [B, K, N] = (2, 4, 7), got {tuple(out.shape)}"
        )
        assert torch.allclose(
            out.sum(1), torch.ones(2, 7, dtype=out.dtype), atol=1e-8
        ), (
            "for each patch the map must sum to 1 over the prototypes (axis 1): "
            "which axis does your softmax run over?"
        )
        z = torch.zeros_like(b)
        d2 = ((e[:, None] - q[None, :, None]) ** 2).sum(-1)
        ref0 = torch.softmax(-d2, dim=1)
        assert torch.allclose(f(e, q, z), ref0, atol=1e-8), (
            "with a zero bias the map should be the softmax of minus the squared "
            "distance: check the sign and the square"
        )
        ref = torch.softmax(-d2 + b[None], dim=1)
        assert torch.allclose(out, ref, atol=1e-8), (
            "with a bias the result is wrong: b[k, n] is added to the logit of "
            "prototype k at patch n, before the softmax"
        )
        return "your concept map equals the mixture responsibilities on every test"

    return grade_exercise(fn, trial)
