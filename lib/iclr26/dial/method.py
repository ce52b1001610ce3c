"""DIAL and DIAL+: candidates, attribution, selection, removal; the exercise checker."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..core import grade_exercise
from ..validate import as_float, as_int, as_tensor
from .metrics import orthonormal_basis, project_out, zero_shot
from .model import TopKSAE

# --------------------------------------------------------------------------------------
# DIAL: candidates, attribution, selection, removal
# --------------------------------------------------------------------------------------


def select_candidates(
    e: torch.Tensor, text_cls: torch.Tensor, k_nn: int = 10, quantile: float = 0.7
) -> torch.Tensor:
    """(n,) bool: the samples whose representation looks pulled off its class.

    Pseudo-labels are the zero-shot predictions; a sample is a candidate when its cosine
    distance to its pseudo-class centre exceeds that class's ``quantile``, or when most
    of its ``k_nn`` nearest neighbours carry another pseudo-label (kNN inconsistency).
    """
    as_tensor(e, "e", ndim=2)
    k_nn = as_int(k_nn, "k_nn", lo=1)
    quantile = as_float(quantile, "quantile", lo=0.0, hi=1.0)
    if k_nn >= len(e):
        raise ValueError(f"k_nn must be < n = {len(e)}, got {k_nn}")
    pseudo = zero_shot(e, text_cls)
    C = text_cls.shape[0]
    onehot = F.one_hot(pseudo, C).to(e.dtype)
    # (C, d); an empty class gives a zero row
    centres = F.normalize(onehot.T @ e, dim=1)
    dist = 1 - (e * centres[pseudo]).sum(1)
    far = torch.zeros(len(e), dtype=torch.bool, device=e.device)
    for c in range(C):  # C is 2 here: a loop over classes, not samples
        m = pseudo == c
        if m.any():
            far |= m & (dist > torch.quantile(dist[m], quantile))
    sim = e @ e.T
    sim.fill_diagonal_(-float("inf"))
    nn_idx = sim.topk(k_nn, dim=1).indices
    knn_bad = (pseudo[nn_idx] != pseudo[:, None]).float().mean(1) > 0.5
    return far | knn_bad


@torch.no_grad()
def attribution_scores(
    sae: TopKSAE, e: torch.Tensor, pos: torch.Tensor, e_attr: torch.Tensor
) -> torch.Tensor:
    """(m,) S_j = (mean z_j over P - mean z_j over N) * cos(f_j, e_attr).

    ``pos`` (n,) bool splits the samples into P (True) and N (False), e.g. by which
    attribute prompt is closer; ``e_attr`` (d,) is the attribute's text direction.
    """
    as_tensor(e, "e", ndim=2), as_tensor(e_attr, "e_attr", ndim=1)
    _match_sae(sae, e)
    if not isinstance(pos, torch.Tensor) or pos.dtype != torch.bool:
        raise TypeError("pos must be a bool tensor")
    if pos.shape != (len(e),) or e_attr.shape != (e.shape[1],):
        raise ValueError(
            f"pos must be ({len(e)},) and e_attr ({e.shape[1]},), got "
            f"{tuple(pos.shape)} and {tuple(e_attr.shape)}"
        )
    if pos.all() or not pos.any():
        raise ValueError("pos must split the samples into two non-empty sets P and N")
    z = sae.encode(e)
    diff = z[pos].mean(0) - z[~pos].mean(0)
    cos = F.normalize(sae.W_dec, dim=0).T @ F.normalize(e_attr, dim=0)
    return diff * cos


def _match_sae(sae: TopKSAE, e: torch.Tensor) -> None:
    if not isinstance(sae, TopKSAE):
        raise TypeError(f"sae must be a TopKSAE, got {type(sae).__name__}")
    if e.shape[1] != sae.W_dec.shape[0]:
        raise ValueError(
            f"e must be (n, d) with the SAE's d = {sae.W_dec.shape[0]}, "
            f"got {tuple(e.shape)}"
        )


def _indices(idx, m: int) -> torch.Tensor:
    if (
        not isinstance(idx, torch.Tensor)
        or idx.ndim != 1
        or idx.is_floating_point()
        or idx.dtype == torch.bool
    ):
        raise TypeError("idx must be a 1-d integer tensor of SAE latent indices")
    if idx.numel() == 0 or idx.min() < 0 or idx.max() >= m:
        raise ValueError(
            f"idx must be non-empty with entries in [0, {m}), got {idx.tolist()}"
        )
    return idx


def select_by_mass(scores: torch.Tensor, alpha: float) -> torch.Tensor:
    """Indices of the fewest top-scoring features whose positive score sums to at least
    a fraction ``alpha`` of all positive score (at least one feature)."""
    as_tensor(scores, "scores", ndim=1)
    alpha = as_float(alpha, "alpha", lo=0.0, hi=1.0)
    pos = scores.clamp(min=0)
    if pos.sum() <= 0:
        raise ValueError("no feature has a positive attribution score")
    order = pos.argsort(descending=True)
    cum = pos[order].cumsum(0) / pos.sum()
    n_keep = int((cum < alpha - 1e-12).sum()) + 1
    return order[:n_keep]


def spurious_basis(
    cols: torch.Tensor,
    e_attr: torch.Tensor | None = None,
    beta: float = 5.0,
    pct: float = 0.0,
) -> torch.Tensor:
    """(d, r) orthonormal basis of the selected decoder columns ``cols`` (d, s).

    With ``e_attr``, columns are weighted by ``softmax(beta |cos(f_j, e_attr)|)`` and
    those below the ``pct`` quantile of the weights are dropped before the QR (weights
    rescale columns, so they change the span only through the cut-off).
    """
    as_tensor(cols, "cols", ndim=2)
    pct = as_float(pct, "pct", lo=0.0, hi=1.0)
    if (
        isinstance(beta, bool)
        or not isinstance(beta, (int, float))
        or not math.isfinite(beta)
    ):
        raise TypeError(f"beta must be a finite float, got {beta!r}")
    if e_attr is not None and pct > 0:
        cos = (F.normalize(cols, dim=0).T @ F.normalize(e_attr, dim=0)).abs()
        w = torch.softmax(beta * cos, 0)
        keep = w >= torch.quantile(w, pct)
        cols = cols[:, keep] * w[keep]
    return orthonormal_basis(cols)


def zero_neurons(
    sae: TopKSAE, e: torch.Tensor, idx: torch.Tensor, lam: float = 1.0
) -> torch.Tensor:
    """The neuron-zeroing baseline: ``e - lam * sum_{j in idx} z_j f_j`` (the SAE's
    reconstruction error is kept, so only the selected latents' contributions go)."""
    as_tensor(e, "e", ndim=2)
    _match_sae(sae, e)
    idx = _indices(idx, sae.W_dec.shape[1])
    lam = as_float(lam, "lam", lo=0.0, hi=1.0)
    with torch.no_grad():
        z = sae.encode(e)[:, idx]
        return e - lam * z @ sae.W_dec[:, idx].T


def apply_to(e: torch.Tensor, mask: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """``e`` with the rows in ``mask`` replaced by those of ``new`` (removal on
    candidates)."""
    as_tensor(e, "e", ndim=2), as_tensor(new, "new", ndim=2)
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise TypeError("mask must be a bool tensor")
    if mask.shape != (len(e),) or new.shape != e.shape:
        raise ValueError(
            f"mask must be ({len(e)},) and new {tuple(e.shape)}, got "
            f"{tuple(mask.shape)} and {tuple(new.shape)}"
        )
    return torch.where(mask[:, None], new, e)


@torch.no_grad()
def flip_frequencies(
    sae: TopKSAE, e: torch.Tensor, text_cls: torch.Tensor
) -> torch.Tensor:
    """DIAL+: (m,) how often ablating latent j (``e - z_j f_j``) flips the zero-shot
    prediction, over the rows of ``e`` (the candidates) -- no attribute
    description needed."""
    as_tensor(e, "e", ndim=2)
    _match_sae(sae, e)
    z = sae.encode(e)
    top = z.topk(sae.k, dim=1)  # (n, k): the active latents of each sample
    contrib = top.values[..., None] * sae.W_dec.T[top.indices]  # (n, k, d)
    ablated = e[:, None, :] - contrib
    pred0 = zero_shot(e, text_cls)
    pred = (ablated @ text_cls.T).argmax(-1)  # (n, k)
    flips = (pred != pred0[:, None]) & (top.values > 0)
    m = sae.W_dec.shape[1]
    return torch.zeros(m, device=e.device).index_add_(
        0, top.indices.flatten(), flips.flatten().float()
    )


def dial_basis(
    sae: TopKSAE,
    e: torch.Tensor,
    text_attr: torch.Tensor,
    alpha: float,
    beta: float = 5.0,
    pct: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """DIAL's spurious subspace from unlabelled embeddings ``e`` (n, d).

    ``text_attr`` (2, d): the two attribute prompts (e.g. "... on land", "...
    on water"). The samples closer to the second prompt form P, the rest N; features are
    scored by :func:`attribution_scores` along ``e_attr = t_2 - t_1``, selected by mass
    ``alpha``, and their decoder columns turned into a basis by :func:`spurious_basis`.
    Returns ``(Q (d, r), selected indices, scores (m,))``.
    """
    as_tensor(e, "e", ndim=2), as_tensor(text_attr, "text_attr", ndim=2)
    if text_attr.shape != (2, e.shape[1]):
        raise ValueError(
            f"text_attr must be (2, d) = (2, {e.shape[1]}), got "
            f"{tuple(text_attr.shape)}"
        )
    pos = (e @ text_attr[1]) > (e @ text_attr[0])
    e_attr = text_attr[1] - text_attr[0]
    scores = attribution_scores(sae, e, pos, e_attr)
    idx = select_by_mass(scores, alpha)
    Q = spurious_basis(sae.W_dec.detach()[:, idx], e_attr, beta, pct)
    return Q, idx, scores


def dial_plus_basis(
    sae: TopKSAE, e_cand: torch.Tensor, text_cls: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """DIAL+'s subspace: the ``k`` latents whose ablation flips the zero-shot prediction
    most often over the candidates ``e_cand`` (n, d). Returns
    ``(Q, indices, frequencies)``."""
    k = as_int(k, "k", lo=1)
    m = sae.W_dec.shape[1]
    if k > m:
        raise ValueError(f"k must be <= the SAE width m = {m}, got {k}")
    freq = flip_frequencies(sae, e_cand, text_cls)
    n_flip = int((freq > 0).sum())
    if k > n_flip:  # the rest would be latents that never flip: silent padding
        raise ValueError(
            f"k = {k} exceeds the {n_flip} latents that flip any prediction"
        )
    top = freq.argsort(descending=True)[:k]
    return orthonormal_basis(sae.W_dec.detach()[:, top]), top, freq


def remove(
    e: torch.Tensor,
    mask: torch.Tensor,
    Q: torch.Tensor,
    lam: float,
    source: str = "raw",
    sae: TopKSAE | None = None,
) -> torch.Tensor:
    """``project_out`` applied to the rows of ``e`` in ``mask`` only (DIAL's
    candidates).

    ``source="raw"`` removes span(Q) from the embedding itself, ``(I - lam P) e`` (what
    the chapter's claims use); ``source="recon"`` from the SAE reconstruction,
    ``(I - lam P) e_hat`` with ``e_hat = sae(e)`` (the plan's reading of the paper: the
    reconstruction error is dropped with it).
    """
    as_tensor(e, "e", ndim=2)
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise TypeError("mask must be a bool tensor")
    if mask.shape != (len(e),):
        raise ValueError(f"mask must have shape ({len(e)},), got {tuple(mask.shape)}")
    if source == "raw":
        base = e
    elif source == "recon":
        if sae is None:
            raise ValueError('source="recon" needs the sae')
        _match_sae(sae, e)
        with torch.no_grad():
            base = sae(e)[0]
    else:
        raise ValueError(f'source must be "raw" or "recon", got {source!r}')
    return apply_to(e, mask, project_out(base, Q, lam))


# --------------------------------------------------------------------------------------
# the exercise
# --------------------------------------------------------------------------------------


def check_project_out(fn) -> object:
    """Grade a student's ``fn(e, Q, lam)`` = partial orthogonal removal of span(Q)."""

    def trial(f):
        g = torch.Generator().manual_seed(0)
        e = torch.randn(7, 5, generator=g, dtype=torch.float64)
        Q = torch.linalg.qr(torch.randn(5, 2, generator=g, dtype=torch.float64))[0]
        perp = e - (e @ Q) @ Q.T  # the reference, computed before f sees e
        e0, Q0 = e.clone(), Q.clone()

        def call(x, lam):  # f gets copies; it must not edit its inputs
            xc, Qc = x.clone(), Q0.clone()
            out = f(xc, Qc, lam)
            assert torch.equal(xc, x) and torch.equal(Qc, Q0), (
                "your function changed its input e or Q in place: return a new tensor"
            )
            return out

        q3 = call(e0, 0.3)
        assert isinstance(q3, torch.Tensor), f"return a tensor, got {type(q3).__name__}"
        assert q3.shape == e.shape, (
            f"the output must have the input's shape "
            f"{tuple(e.shape)}, got {tuple(q3.shape)}"
        )
        assert ((q3 @ Q) - 0.7 * (e @ Q)).abs().max() < 1e-8, (
            "at lam = 0.3 the component in span(Q) should keep 70% of its size: "
            "does your answer use lam?"
        )
        out = call(e, 1.0)
        assert isinstance(out, torch.Tensor), (
            f"return a tensor, got {type(out).__name__}"
        )
        assert out.shape == e.shape, (
            f"the output must have the input's shape {tuple(e.shape)}"
            f", got {tuple(out.shape)}: rows are samples"
        )
        assert (out @ Q).abs().max() < 1e-8, (
            "at lam = 1 the output should have no component "
            "left in span(Q): check which side Q Q^T acts on"
        )
        perp = e - (e @ Q) @ Q.T
        assert (out - perp).abs().max() < 1e-8, (
            "at lam = 1 the part of e orthogonal to span(Q) must be left untouched"
        )
        half = call(e, 0.5)
        assert ((half @ Q) - 0.5 * (e @ Q)).abs().max() < 1e-8, (
            "at lam = 0.5 the component in span(Q) should shrink by half, not vanish"
        )
        assert (call(e, 0.0) - e).abs().max() < 1e-8, "lam = 0 must leave e unchanged"
        twice = call(out, 1.0)
        assert (twice - out).abs().max() < 1e-8, (
            "removing span(Q) twice must change nothing"
        )
        return "your partial projection matches e - lam Q Q^T e on every test"

    return grade_exercise(fn, trial)
