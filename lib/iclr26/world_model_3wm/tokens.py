"""Tokens: a patch-local RGB quantizer, flow and camera bins, and the node layout.

A sample becomes ``3 N + 1`` nodes (``N`` patches per frame): RGB0 patches, flow
patches, RGB1 patches and the camera. Each node has a *pointer* (its index in that
list) and a *value* (a token of its node type). Values of all types share one
vocabulary: RGB codes ``[0, K)``, flow bins after them, camera bins last.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.cluster import MiniBatchKMeans


def patchify(rgb: torch.Tensor, P: int) -> torch.Tensor:
    """(B, 3, H, W) -> (B, N, 3 P P): row-major ``P x P`` patches, each flattened."""
    if rgb.ndim != 4 or rgb.shape[1] != 3:
        raise ValueError(f"rgb must be (B, 3, H, W), got {tuple(rgb.shape)}")
    B, C, H, W = rgb.shape
    if H % P or W % P:
        raise ValueError(f"H, W = {H}, {W} must be multiples of the patch size {P}")
    x = rgb.reshape(B, C, H // P, P, W // P, P).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // P) * (W // P), C * P * P)


def unpatchify(x: torch.Tensor, P: int, H: int) -> torch.Tensor:
    """(B, N, 3 P P) -> (B, 3, H, H), the inverse of :func:`patchify`."""
    B, N, _ = x.shape
    n = H // P
    if n * n != N:
        raise ValueError(f"{N} patches do not tile a {H} x {H} frame of {P}-px patches")
    x = x.reshape(B, n, n, 3, P, P).permute(0, 3, 1, 4, 2, 5)
    return x.reshape(B, 3, H, H)


class PatchQuantizer:
    """Local patch quantizer: k-means (scikit-learn's ``MiniBatchKMeans``) on single
    ``P x P x 3`` patches. Each patch is coded alone, so editing one patch of an image
    changes exactly one token (the locality of 3WM's local quantizer)."""

    def __init__(self, n_codes: int = 256, P: int = 4, seed: int = 0):
        if not isinstance(n_codes, int) or n_codes < 2:
            raise ValueError(f"n_codes must be an int >= 2, got {n_codes!r}")
        self.n_codes, self.P, self.seed = n_codes, P, seed
        self.codebook: torch.Tensor | None = None

    def fit(self, rgb: torch.Tensor) -> PatchQuantizer:
        """Fit the codebook on frames ``rgb`` (B, 3, H, W)."""
        x = patchify(rgb, self.P).reshape(-1, 3 * self.P**2).cpu().numpy()
        km = MiniBatchKMeans(
            self.n_codes, random_state=self.seed, batch_size=4096, n_init=1
        )
        km.fit(x.astype(np.float32))
        self.codebook = torch.tensor(km.cluster_centers_, dtype=torch.float32)
        return self

    def encode(self, rgb: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) -> (B, N) codes in ``[0, n_codes)``."""
        if self.codebook is None:
            raise RuntimeError("fit the quantizer first")
        x = patchify(rgb, self.P)
        cb = self.codebook.to(x.device)
        return torch.cdist(x, cb[None].expand(x.shape[0], -1, -1)).argmin(-1)

    def decode(self, codes: torch.Tensor, H: int) -> torch.Tensor:
        """(B, N) codes -> (B, 3, H, H) frames."""
        if self.codebook is None:
            raise RuntimeError("fit the quantizer first")
        return unpatchify(self.codebook.to(codes.device)[codes], self.P, H)


@dataclass(frozen=True)
class Bins:
    """Uniform bins over ``[-lim, lim]`` with bin centres ``-lim + k * step``."""

    n: int
    lim: float

    @property
    def step(self) -> float:
        return 2 * self.lim / (self.n - 1)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Values -> nearest bin index in ``[0, n)`` (values past ``lim`` clip)."""
        return ((x.clamp(-self.lim, self.lim) + self.lim) / self.step).round().long()

    def decode(self, k: torch.Tensor) -> torch.Tensor:
        """Bin index -> bin centre."""
        return -self.lim + k.float() * self.step


def FlowQuantizer(bins: int = 33, lim: float = 8.0) -> Bins:
    """Per-patch mean flow in ``bins`` bins over ``[-lim, lim]`` px (0.5 px apart)."""
    return Bins(bins, lim)


def CameraQuantizer(bins: int = 13, lim: float = 0.6) -> Bins:
    """Camera shift ``t`` in ``bins`` bins over ``[-lim, lim]`` (0.1 apart; 0 is a
    bin)."""
    return Bins(bins, lim)


@dataclass(frozen=True)
class Layout:
    """Where each node type lives among pointers and values.

    Pointers: RGB0 ``[0, N)``, flow ``[N, 2N)``, RGB1 ``[2N, 3N)``, camera ``3N``.
    Values: RGB codes ``[0, K)``, flow bins ``[K, K + nf)``, camera bins after.
    """

    N: int
    K: int
    nf: int = 33
    nc: int = 13

    @property
    def n_nodes(self) -> int:
        return 3 * self.N + 1

    @property
    def vocab(self) -> int:
        return self.K + self.nf + self.nc

    def rgb0(self) -> torch.Tensor:
        return torch.arange(self.N)

    def flow(self) -> torch.Tensor:
        return torch.arange(self.N, 2 * self.N)

    def rgb1(self) -> torch.Tensor:
        return torch.arange(2 * self.N, 3 * self.N)

    def cam(self) -> torch.Tensor:
        return torch.tensor([3 * self.N])

    def value_range(self) -> torch.Tensor:
        """(n_nodes, 2): the ``[lo, hi)`` value range of each pointer's node type."""
        lo = torch.zeros(self.n_nodes, dtype=torch.long)
        hi = torch.full((self.n_nodes,), self.K, dtype=torch.long)
        lo[self.N : 2 * self.N], hi[self.N : 2 * self.N] = self.K, self.K + self.nf
        lo[3 * self.N], hi[3 * self.N] = self.K + self.nf, self.vocab
        return torch.stack([lo, hi], 1)


def tokenize(
    batch: dict, pq: PatchQuantizer, fq: Bins, cq: Bins, layout: Layout
) -> torch.Tensor:
    """A batch of :func:`make_tabletop_batch` -> values (B, n_nodes), pointer order."""
    from .geometry import patch_mean

    B = batch["rgb0"].shape[0]
    a = pq.encode(batch["rgb0"])
    u = fq.encode(patch_mean(batch["flow"], pq.P)) + layout.K
    b = pq.encode(batch["rgb1"])
    c = cq.encode(batch["cam"]).reshape(B, 1) + layout.K + layout.nf
    return torch.cat([a, u, b, c], 1)


def value_features(pq: PatchQuantizer, fq: Bins, cq: Bins) -> torch.Tensor:
    """(vocab, 3 P P + 2): each value's content -- an RGB code's decoded pixels
    (centred), a flow bin's centre over its range, a camera bin's centre over its
    range."""
    K, F = pq.codebook.shape
    out = torch.zeros(K + fq.n + cq.n, F + 2)
    out[:K, :F] = pq.codebook - 0.5
    out[K : K + fq.n, F] = fq.decode(torch.arange(fq.n)) / fq.lim
    out[K + fq.n :, F + 1] = cq.decode(torch.arange(cq.n)) / cq.lim
    return out
