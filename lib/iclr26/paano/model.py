"""PaAno's building blocks: patches, RevIN, the 1D-CNN encoder, the two losses, the
coreset bank and the nearest-neighbour score. Everything is plain PyTorch and follows
the device of its inputs."""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

# ------------------------------------------------------------------------------ patches


def sliding_patches(x: torch.Tensor, w: int) -> torch.Tensor:
    """All stride-1 patches of a series. x: (n, C) or (n,) -> (n - w + 1, C, w), a
    view of x."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"x must have shape (n,) or (n, C), got {tuple(x.shape)}")
    if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= x.shape[0]:
        raise ValueError(
            f"patch length w must be an int in [1, n={x.shape[0]}], got {w!r}"
        )
    return x.unfold(0, w, 1)  # (n - w + 1, C, w): patch i covers steps i .. i + w - 1


def revin(p: torch.Tensor, eps: float = 1e-5, min_sigma: float = 1e-5) -> torch.Tensor:
    """Per-patch, per-channel z-score (RevIN without the affine part).
    p: (N, C, w) -> (N, C, w)."""
    if p.ndim != 3:
        raise ValueError(f"patches must have shape (N, C, w), got {tuple(p.shape)}")
    mu = p.mean(-1, keepdim=True)  # μ = (1/w) Σ_t p_t
    # σ = sqrt(var + ε)
    sigma = (p.var(-1, unbiased=False, keepdim=True) + eps).sqrt().clamp_min(min_sigma)
    return (p - mu) / sigma  # p̂ = (p − μ) / σ


def patch_scores_to_points(s: torch.Tensor, n: int, w: int) -> torch.Tensor:
    """Spread patch scores to time steps: step t gets the mean score of the patches
    covering it.

    s: (N,) with N = n - w + 1 (patch i covers steps i .. i + w - 1) -> (n,).
    Vectorised with two cumulative sums, so it costs O(n) whatever w is.
    """
    if not isinstance(s, torch.Tensor) or s.ndim != 1:
        raise ValueError(
            f"s must be a 1-D tensor of patch scores, got {type(s).__name__} "
            f"{getattr(s, 'shape', '')}"
        )
    if s.shape[0] != n - w + 1 or w < 1:
        raise ValueError(
            f"expected n - w + 1 = {n - w + 1} patch scores for n={n}, w={w}, got "
            f"{s.shape[0]}"
        )
    if not torch.isfinite(
        s
    ).all():  # a cumulative sum would carry one NaN to every later step
        raise ValueError(
            f"patch scores contain NaN or infinite values (first at patch "
            f"{int((~torch.isfinite(s)).nonzero()[0, 0])})"
        )
    t = torch.arange(n, device=s.device)
    # the patches covering t are i = max(0, t-w+1) .. min(t, N-1)
    first = (t - w + 1).clamp_min(0)
    last = t.clamp_max(s.shape[0] - 1)
    csum = torch.cat([s.new_zeros(1), s.cumsum(0)])  # csum[j] = Σ_{i<j} s_i
    total = csum[last + 1] - csum[first]  # Σ_{i=first}^{last} s_i
    # score(t) = mean of the covering patches
    return total / (last - first + 1).to(s.dtype)


# -------------------------------------------------------------------------------- model


class PatchEncoder(nn.Module):
    """RevIN, then Conv1d-BN-ReLU blocks, global average pooling (the embedding h), and
    a two-layer projection head (z, used only by the triplet loss).

    in_ch: channels C of the series. channels, kernels: one entry per conv block (the
    paper's code uses (128, 256, 128, 64) with kernels (7, 5, 3, 3)).
    proj_dim: width of the projection head.
    """

    def __init__(
        self,
        in_ch: int = 1,
        channels: Sequence[int] = (128, 256, 128, 64),
        kernels: Sequence[int] = (7, 5, 3, 3),
        proj_dim: int = 256,
        use_revin: bool = True,
    ):
        super().__init__()
        if len(channels) != len(kernels) or not channels:
            raise ValueError(
                "channels and kernels need the same, non-zero length; "
                f"got {channels}, {kernels}"
            )
        self.in_ch, self.use_revin = in_ch, use_revin
        blocks, c_in = [], in_ch
        for c_out, k in zip(channels, kernels):
            blocks += [
                nn.Conv1d(c_in, c_out, k, padding=k // 2, bias=False),
                nn.BatchNorm1d(c_out),
                nn.ReLU(),
            ]
            c_in = c_out
        self.conv = nn.Sequential(*blocks)
        self.dim = c_in
        self.proj = nn.Sequential(
            nn.Linear(c_in, proj_dim), nn.ReLU(), nn.Linear(proj_dim, proj_dim)
        )

    def embed(self, p: torch.Tensor) -> torch.Tensor:
        """p: (B, C, w) patches -> h: (B, D) embeddings."""
        if p.ndim != 3 or p.shape[1] != self.in_ch:
            raise ValueError(
                f"patches must have shape (B, {self.in_ch}, w), got {tuple(p.shape)}"
            )
        if self.use_revin:
            p = revin(p)
        return self.conv(p).mean(-1)  # global average pooling over time: (B, D)

    def project(self, h: torch.Tensor) -> torch.Tensor:
        """h: (B, D) -> z: (B, proj_dim)."""
        return self.proj(h)

    def forward(self, p: torch.Tensor) -> torch.Tensor:
        return self.project(self.embed(p))


class TransformerPatchEncoder(nn.Module):
    """A small transformer in PaAno's place, the heavier kind of encoder the abstract
    contrasts PaAno with: RevIN, a per-step linear embedding plus a learned position
    embedding, pre-norm ``nn.TransformerEncoder`` layers, mean pooling over time (h),
    and the same projection head.

    Same interface as :class:`PatchEncoder` (``embed``, ``project``, ``dim``), so the
    rest of PaAno (losses, bank, score) runs unchanged. patch_len: the longest
    patch it accepts.
    """

    def __init__(
        self,
        in_ch: int = 1,
        patch_len: int = 64,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        ff_dim: int = 128,
        proj_dim: int = 64,
        use_revin: bool = True,
    ):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(
                f"d_model={d_model} must be a multiple of n_heads={n_heads}"
            )
        self.in_ch, self.use_revin, self.dim = in_ch, use_revin, d_model
        self.inp = nn.Linear(in_ch, d_model)
        self.pos = nn.Parameter(torch.zeros(1, patch_len, d_model))
        layer = nn.TransformerEncoderLayer(
            d_model, n_heads, ff_dim, dropout=0.0, batch_first=True, norm_first=True
        )
        self.body = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.proj = nn.Sequential(
            nn.Linear(d_model, proj_dim), nn.ReLU(), nn.Linear(proj_dim, proj_dim)
        )

    def embed(self, p: torch.Tensor) -> torch.Tensor:
        """p: (B, C, w) patches with w <= patch_len -> h: (B, d_model)."""
        if p.ndim != 3 or p.shape[1] != self.in_ch or p.shape[2] > self.pos.shape[1]:
            raise ValueError(
                f"patches must have shape (B, {self.in_ch}, w <= "
                f"{self.pos.shape[1]}), got {tuple(p.shape)}"
            )
        if self.use_revin:
            p = revin(p)
        tok = self.inp(p.transpose(1, 2)) + self.pos[:, : p.shape[2]]  # (B, w, d_model)
        return self.body(tok).mean(1)

    def project(self, h: torch.Tensor) -> torch.Tensor:
        """h: (B, D) -> z: (B, proj_dim)."""
        return self.proj(h)

    def forward(self, p: torch.Tensor) -> torch.Tensor:
        return self.project(self.embed(p))


class PretextHead(nn.Module):
    """The temporal-adjacency classifier: logit that h_b is the patch one patch-length
    before h_a."""

    def __init__(self, dim: int):
        super().__init__()
        self.lin = nn.Linear(2 * dim, 1)

    def forward(self, h_a: torch.Tensor, h_b: torch.Tensor) -> torch.Tensor:
        """h_a, h_b: (..., D) -> logits (...)."""
        return self.lin(torch.cat([h_a, h_b], -1)).squeeze(-1)


# ------------------------------------------------------------------------------- losses


NEGATIVES = ("hardest", "farthest", "official")


def triplet_hardest_negative(
    za: torch.Tensor, zp: torch.Tensor, margin: float = 0.5, negative: str = "hardest"
) -> torch.Tensor:
    """Triplet loss on cosine distances with in-batch negatives.

    za, zp: (B, d) anchor and positive projections (row i of zp is anchor i's positive;
    every other row is a negative for it). Returns the scalar mean_i relu(d(a_i, p_i)
    - d_i^- + m).

    ``negative`` picks d_i^-:
    - ``"hardest"`` (the paper): the smallest distance over j != i (the most
      similar negative);
    - ``"farthest"``: the largest distance over j != i (the easiest negative), what the
      official ``train.py`` computes at commit 0e93e93 (``+inf`` on the similarity
      diagonal, then ``max`` of 1 - similarity);
    - ``"official"``: ``-inf`` on the similarity diagonal, then ``max`` of 1 -
      similarity, as in jinnnju/PaAno's ``train.py`` at commit 922110f (per the review)
      and a trainer we read: the max is the anchor's own entry, +inf, so every hinge is
      relu(-inf) = 0 and the loss is identically 0 with zero gradient.
    """
    if za.ndim != 2 or za.shape != zp.shape or za.shape[0] < 2:
        raise ValueError(
            f"za and zp must both have shape (B>=2, d), got {tuple(za.shape)} "
            f"and {tuple(zp.shape)}"
        )
    if negative not in NEGATIVES:
        raise ValueError(f"negative must be one of {NEGATIVES}, got {negative!r}")
    sim = F.normalize(za, dim=1) @ F.normalize(zp, dim=1).T  # cos(a_i, x_j): (B, B)
    dist = 1 - sim  # d(a_i, x_j) = 1 − cos(a_i, x_j)
    d_pos = dist.diagonal()  # d(a_i, p_i)
    eye = torch.eye(len(dist), dtype=torch.bool, device=dist.device)
    if negative == "hardest":
        # min_{j≠i} d(a_i, x_j)
        d_neg = dist.masked_fill(eye, float("inf")).min(1).values
    elif negative == "farthest":
        # max_{j≠i} d(a_i, x_j)
        d_neg = dist.masked_fill(eye, float("-inf")).max(1).values
    else:
        # the code's mask on the similarity:
        # 1 − (−inf) = +inf on the diagonal wins the max
        # = +inf for every i
        d_neg = (1 - sim.masked_fill(eye, float("-inf"))).max(1).values
    return F.relu(d_pos - d_neg + margin).mean()  # L = mean relu(d⁺ − d⁻ + m)


def pretext_loss(
    head: PretextHead, h: torch.Tensor, h_prev: torch.Tensor, h_rand: torch.Tensor
) -> torch.Tensor:
    """Binary cross-entropy of the adjacency classifier.

    h: (B, D) anchors; h_prev: (B, D) the patch one patch-length earlier (label 1);
    h_rand: (B, R, D) R random partners per anchor (label 0). Returns mean BCE(adjacent)
    + mean BCE(random), as in the official code.
    """
    if (
        h.ndim != 2
        or h_prev.shape != h.shape
        or h_rand.ndim != 3
        or h_rand.shape[0] != h.shape[0]
        or h_rand.shape[2] != h.shape[1]
    ):
        raise ValueError(
            "expected h, h_prev (B, D) and h_rand (B, R, D); "
            f"got {tuple(h.shape)}, {tuple(h_prev.shape)}, {tuple(h_rand.shape)}"
        )
    logit_pos = head(h, h_prev)  # (B,)
    logit_neg = head(h[:, None].expand_as(h_rand), h_rand)  # (B, R)
    return (
        F.binary_cross_entropy_with_logits(
            logit_pos, torch.ones_like(logit_pos)
        )  # −log σ(f(h_i, h_{i−w}))
        + F.binary_cross_entropy_with_logits(logit_neg, torch.zeros_like(logit_neg))
    )  # −log(1 − σ(f(h_i, h_r)))


def pretext_weight(it: int, iters: int, frac: float = 0.1) -> float:
    """λ(it): 1 at it = 0, falling linearly to 0 at it = frac * iters, and 0
    afterwards."""
    if iters < 1 or not 0 < frac <= 1 or it < 0:
        raise ValueError(
            f"need iters >= 1, 0 < frac <= 1, it >= 0; got it={it}, iters={iters}, "
            f"frac={frac}"
        )
    return max(0.0, 1.0 - it / (frac * iters))  # λ = max(0, 1 − it / (f·T))


# ------------------------------------------------------------------------------ scoring


def build_memory_bank(
    h: torch.Tensor, frac: float = 0.1, min_size: int = 500, seed: int = 0
) -> torch.Tensor:
    """A k-means coreset of the training embeddings, as indices into ``h``.

    h: (N, D). The bank has M = min(N, max(min_size, round(frac * N))) entries.
    When M < N, MiniBatchKMeans (scikit-learn) clusters the L2-normalised embeddings
    into M centroids and each centroid is replaced by its nearest real embedding, so the
    bank is a subset of the training embeddings. Returns (M,) int64 indices
    (on h's device); use ``h[idx]`` as the bank.
    """
    from sklearn.cluster import MiniBatchKMeans

    if h.ndim != 2 or h.shape[0] < 1:
        raise ValueError(f"h must have shape (N>=1, D), got {tuple(h.shape)}")
    if not 0 < frac <= 1 or min_size < 1:
        raise ValueError(
            f"need 0 < frac <= 1 and min_size >= 1, got {frac}, {min_size}"
        )
    n = h.shape[0]
    m = min(n, max(min_size, round(frac * n)))  # M = min(N, max(m₀, ⌊fN⌉))
    if m == n:
        return torch.arange(n, device=h.device)
    hn = F.normalize(h.detach().float(), dim=1)
    km = MiniBatchKMeans(
        n_clusters=m,
        init="k-means++",
        random_state=seed,
        batch_size=max(4096, m),
        max_iter=50,
        n_init=1,
    ).fit(hn.cpu().numpy())
    centres = torch.as_tensor(km.cluster_centers_, dtype=hn.dtype, device=h.device)
    # the real embedding nearest to each centroid
    idx = torch.cdist(centres, hn).argmin(1)
    return torch.unique(idx)  # two centroids can share a nearest point


def knn_cosine_score(
    q: torch.Tensor, bank: torch.Tensor, k: int = 3, chunk: int = 4096
) -> torch.Tensor:
    """Mean of the k smallest cosine distances from each query to the bank.

    q: (N, D), bank: (M, D) -> (N,). Queries go in chunks of ``chunk`` rows to
        bound memory.
    """
    if q.ndim != 2 or bank.ndim != 2 or q.shape[1] != bank.shape[1]:
        raise ValueError(
            f"q (N, D) and bank (M, D) must share D; got {tuple(q.shape)} and "
            f"{tuple(bank.shape)}"
        )
    if not 1 <= k <= bank.shape[0]:
        raise ValueError(f"k must lie in [1, M={bank.shape[0]}], got {k}")
    if not (torch.isfinite(q).all() and torch.isfinite(bank).all()):
        raise ValueError(
            "q and bank must be finite (a NaN embedding has no cosine distance)"
        )
    if (bank.norm(dim=1) == 0).any():
        raise ValueError(
            "bank has an all-zero embedding, which has no direction (cosine undefined)"
        )
    b = F.normalize(bank, dim=1)
    out = []
    for qc in F.normalize(q, dim=1).split(chunk):
        dist = 1 - qc @ b.T  # d(q, b) = 1 − cos(q, b): (chunk, M)
        # s(q) = (1/k) Σ_{top-k} d
        out.append(dist.topk(k, dim=1, largest=False).values.mean(1))
    return torch.cat(out).clamp_min(0)
