"""The message side: Haar LL band, a keyed and whitened decoder, bit accuracy and
the binomial detection test.

CompMarkGS reads the message from the rendered image with a frozen, pretrained HiDDeN
decoder applied to the low-frequency (LL) band of a one-level Haar DWT. Offline we
cannot use a pretrained decoder, so :class:`KeyedDecoder` is its analogue: a small
CNN whose weights are drawn from a seeded generator (the seed is the *key*), frozen,
then whitened on clean images so that its outputs there are ≈ N(0, I) and a clean
image decodes to chance bit accuracy (the official checkpoints are named ``*_whit``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..core import seeded
from ..validate import as_float, as_int

Tensor = torch.Tensor


def haar_ll(img: Tensor) -> Tensor:
    """The LL band of a one-level orthonormal 2D Haar DWT. img (B, C, H, W), H and W
    even → (B, C, H/2, W/2).

    The orthonormal Haar low-pass is (1, 1)/√2 per axis, so LL = (a + b + c + d)/2
    over each 2×2 block, i.e. 2 × the 2×2 average pool.
    """
    if not isinstance(img, Tensor) or not img.is_floating_point():
        raise TypeError("img must be a floating-point torch.Tensor")
    if img.ndim != 4:
        raise ValueError(f"img must be (B, C, H, W), got {tuple(img.shape)}")
    if img.shape[-1] % 2 or img.shape[-2] % 2 or img.shape[-1] == 0:
        raise ValueError(f"H and W must be even and > 0, got {tuple(img.shape[-2:])}")
    if not torch.isfinite(img).all():
        raise ValueError("img contains NaN or inf")
    return 2 * F.avg_pool2d(img, 2)  # LL = (a + b + c + d)/2 = 2·mean


class KeyedDecoder(nn.Module):
    """A frozen random CNN, LL band (B, 3, h, w) → n_bits logits (B, n_bits).

    conv3×3(3→w) → ReLU → conv3×3 stride 2 → ReLU → conv3×3 stride 2 → ReLU →
    global mean → linear(w → n_bits), every weight drawn from ``seed`` (the key).
    Call :meth:`whiten` on clean LL bands before use: it stores μ and W = Σ^{-1/2} of
    the raw outputs there, and the decoder returns W (z − μ).
    """

    def __init__(self, n_bits: int = 16, seed: int = 0, width: int = 32):
        super().__init__()
        n_bits = as_int(n_bits, "n_bits", lo=1)
        width = as_int(width, "width", lo=1)
        seed = as_int(seed, "seed", lo=0)
        self.n_bits, self.seed = n_bits, seed
        g = torch.Generator().manual_seed(seed)
        with seeded(0):  # default inits, overwritten below from the key
            self.convs = nn.ModuleList(
                [
                    nn.Conv2d(3, width, 3, padding=1),
                    nn.Conv2d(width, width, 3, stride=2, padding=1),
                    nn.Conv2d(width, width, 3, stride=2, padding=1),
                ]
            )
            self.head = nn.Linear(width, n_bits)
        with torch.no_grad():  # He-uniform weights from the key
            for m in [*self.convs, self.head]:
                fan_in = m.weight[0].numel()
                b = math.sqrt(6 / fan_in)
                m.weight.uniform_(-b, b, generator=g)
                m.bias.uniform_(-0.1, 0.1, generator=g)
        self.requires_grad_(False)
        self.register_buffer("mu", torch.zeros(n_bits))
        self.register_buffer("W", torch.eye(n_bits))
        self.whitened = False

    def raw(self, ll: Tensor) -> Tensor:
        """Un-whitened outputs z, (B, n_bits)."""
        if not isinstance(ll, Tensor) or ll.ndim != 4 or ll.shape[1] != 3:
            shape = tuple(ll.shape) if isinstance(ll, Tensor) else type(ll).__name__
            raise ValueError(f"ll must be (B, 3, h, w), got {shape}")
        h = ll
        for conv in self.convs:
            h = F.relu(conv(h))
        return self.head(h.mean(dim=(2, 3)))

    @torch.no_grad()
    def whiten(self, clean_ll: Tensor, ridge: float = 1e-4) -> KeyedDecoder:
        """Fit μ and W = (Σ + ridge·tr(Σ)/L·I)^{-1/2} on clean LL bands (B, 3, h, w),
        B > n_bits; returns self."""
        if len(clean_ll) <= self.n_bits:
            raise ValueError(f"need more than n_bits={self.n_bits} clean images")
        z = self.raw(clean_ll).double()
        mu = z.mean(0)
        S = torch.cov(z.T).reshape(self.n_bits, self.n_bits)
        eye = torch.eye(self.n_bits, dtype=S.dtype, device=S.device)
        S = S + ridge * S.trace() / self.n_bits * eye
        evals, evecs = torch.linalg.eigh(S)
        W = evecs @ torch.diag(evals.rsqrt()) @ evecs.T  # Σ^{-1/2}, symmetric
        self.mu.copy_(mu.to(self.mu)), self.W.copy_(W.to(self.W))
        self.whitened = True
        return self

    def forward(self, ll: Tensor) -> Tensor:
        """Whitened logits W (z − μ), (B, n_bits)."""
        return (self.raw(ll) - self.mu) @ self.W.T


def image_to_ll(img: Tensor) -> Tensor:
    """Renders (H, W, 3) or (B, H, W, 3), channel-last → LL bands (B, 3, H/2, W/2)."""
    if img.ndim == 3:
        img = img[None]
    return haar_ll(img.permute(0, 3, 1, 2))


def message_bits(n_bits: int, seed: int) -> Tensor:
    """A seeded random message, (n_bits,) float of 0/1."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2, (n_bits,), generator=g).float()  # on the CPU


def bit_accuracy(logits: Tensor, bits: Tensor) -> float:
    """Share of bits with sign(logit) matching: logits (B, L), bits (L,) or (B, L) in
    {0, 1}. A logit > 0 reads as 1."""
    if logits.ndim != 2 or bits.shape not in (logits.shape, logits.shape[1:]):
        raise ValueError(
            f"logits must be (B, L) and bits (L,) or (B, L); got "
            f"{tuple(logits.shape)} and {tuple(bits.shape)}"
        )
    return float(((logits > 0).float() == bits).float().mean())


def bit_pvalue(k: int, L: int) -> float:
    """P(X ≥ k) for X ~ Bin(L, ½): the chance that an unwatermarked (or wrong-key)
    decode gets at least k of L bits right. Exact (integer sums)."""
    for name, v in (("k", k), ("L", L)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name} must be an int, got {v!r}")
    if L < 1 or not 0 <= k <= L + 1:
        raise ValueError(f"need L >= 1 and 0 <= k <= L + 1, got k={k}, L={L}")
    return sum(math.comb(L, i) for i in range(k, L + 1)) / 2**L  # Σ_{i≥k} C(L,i)/2^L


def correct_bits(
    logits: Tensor, bits: Tensor, gain: float, generator: torch.Generator | None = None
) -> Tensor:
    """A decoder made better by construction: ``logits`` (V, L) with the sign of
    wrong (view, bit) entries flipped, chosen at random, until the bit accuracy is
    higher by ``gain`` (rounded up to whole entries; every wrong entry at most). The
    planted case of a claim "A reads the message better than B by m": B corrected,
    scored by the same accuracy. bits: (L,) in {0, 1}."""
    if not isinstance(logits, Tensor) or logits.ndim != 2:
        raise ValueError("logits must be a (V, L) tensor")
    if bits.shape != logits.shape[1:]:
        raise ValueError(
            f"bits must be (L,) = ({logits.shape[1]},), got {tuple(bits.shape)}"
        )
    gain = as_float(gain, "gain", lo=0.0, hi=1.0)
    wrong = ((logits > 0).float() != bits).flatten().nonzero()[:, 0]
    k = min(len(wrong), math.ceil(gain * logits.numel() - 1e-9))
    pick = wrong[torch.randperm(len(wrong), generator=generator)[:k].to(wrong.device)]
    out = logits.clone().flatten()
    out[pick] = -out[pick]
    return out.reshape(logits.shape)


def detect(logits: Tensor, bits: Tensor) -> tuple[int, float]:
    """One decision per scene: average the logits (V, L) over the V views, count
    the bits k that match, and return (k, p-value of k under Bin(L, ½))."""
    k = int(((logits.mean(0) > 0).float() == bits).sum())
    return k, bit_pvalue(k, bits.numel())
