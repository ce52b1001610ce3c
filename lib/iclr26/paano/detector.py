"""The PaAno detector: training loop, memory bank, scoring
(``PaAno(cfg).fit(x).score(x)``)."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch

from ..core import seeded
from ..numerics import n_params
from .model import (
    PatchEncoder,
    PretextHead,
    TransformerPatchEncoder,
    build_memory_bank,
    knn_cosine_score,
    patch_scores_to_points,
    pretext_loss,
    pretext_weight,
    sliding_patches,
    triplet_hardest_negative,
)

# ----------------------------------------------------------------------------- detector


LOSSES = ("paper", "official", "farthest", "triplet", "pretext")
"""The training objectives :class:`PaAnoConfig` offers (``loss=``):

- ``"paper"``: L = L_tri(hardest negative) / μ + λ(t) L_pre, λ annealed 1 → 0 over the first
  ``pretext_frac`` of the steps (the method as described);
- ``"official"``: the *effective* loss of jinnnju/PaAno's ``train.py`` at commit 922110f (per
  the review): its triplet term masks the similarity diagonal with −inf, so the "hardest"
  negative is the anchor itself at distance +inf and the triplet term is identically 0; what
  trains is λ(t) L_pre alone, and once λ = 0 the loss is exactly 0, so best-weight keeping
  freezes the encoder at step ⌈pretext_frac·T⌉;
- ``"farthest"``: the ``train.py`` at commit 0e93e93: L_tri with the farthest (easiest)
  negative, divided by μ, with its gradient scaled by r = 0.01 (the code's ``triplet_grad``,
  "for gradual update": the value is unchanged), + λ(t) L_pre;
- ``"triplet"``: L_tri(hardest) / μ alone (the pretext ablation);
- ``"pretext"``: L_pre alone at weight 1 for every step (the triplet ablation).
"""  # noqa: E501 attribute docstring, hashed
_NEGATIVE = {
    "paper": "hardest",
    "official": "official",
    "farthest": "farthest",
    "triplet": "hardest",
    "pretext": None,
}


@dataclass
class PaAnoConfig:
    """PaAno's hyper-parameters. Defaults are the official univariate setting (patch 64,
    the default of its ``main.py``; 96 is its multivariate setting); the notebook's
    ``ci`` preset shrinks the encoder and the steps. ``loss`` is one of
    :data:`LOSSES`."""

    patch_len: int = 64
    channels: tuple = (128, 256, 128, 64)
    kernels: tuple = (7, 5, 3, 3)
    proj_dim: int = 256
    batch_size: int = 512
    iters: int = 200
    lr: float = 1e-4
    weight_decay: float = 1e-4
    margin: float = 0.5
    shift: int = 2  # positives are the patch shifted by ±1..shift
    n_rand: int = 5  # random partners per anchor in the pretext loss
    pretext_frac: float = 0.1  # λ anneals to 0 over this fraction of the iterations
    loss: str = "paper"
    encoder: str = "cnn"  # "cnn" (PaAno) or "transformer" (the heavier comparison)
    bank_frac: float = 0.1
    bank_min: int = 500
    k: int = 3

    def __post_init__(self):
        for name in (
            "patch_len",
            "batch_size",
            "iters",
            "shift",
            "n_rand",
            "bank_min",
            "k",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
        lows = dict(
            patch_len=2, batch_size=2, iters=1, shift=1, n_rand=1, bank_min=1, k=1
        )
        for name, lo in lows.items():
            if getattr(self, name) < lo:
                why = {
                    "batch_size": " (in-batch negatives need at least 2 anchors)",
                    "shift": " (a positive is the patch shifted by 1..shift steps)",
                }
                raise ValueError(
                    f"{name} must be >= {lo}, got {getattr(self, name)}"
                    f"{why.get(name, '')}"
                )
        for name in ("channels", "kernels"):
            v = getattr(self, name)
            if isinstance(v, str) or not all(
                isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c >= 1
                for c in v
            ):
                raise ValueError(
                    f"{name} must be a sequence of positive ints, got {v!r}"
                )
        if len(self.channels) != len(self.kernels) or not len(self.channels):
            raise ValueError(
                f"channels and kernels need the same, non-zero length; got "
                f"{self.channels}, {self.kernels}"
            )
        for name in ("lr", "weight_decay", "margin", "pretext_frac", "bank_frac"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(
                    f"{name} must be a finite number, got {getattr(self, name)!r}"
                )
        if not (self.lr > 0 and self.weight_decay >= 0 and self.margin >= 0):
            raise ValueError(
                f"need lr > 0, weight_decay >= 0, margin >= 0; got {self.lr}, "
                f"{self.weight_decay}, {self.margin}"
            )
        if not (0 < self.pretext_frac <= 1 and 0 < self.bank_frac <= 1):
            raise ValueError(
                f"pretext_frac and bank_frac must lie in (0, 1], got "
                f"{self.pretext_frac}, {self.bank_frac}"
            )
        if self.encoder not in ("cnn", "transformer"):
            raise ValueError(
                f"encoder must be 'cnn' or 'transformer', got {self.encoder!r}"
            )
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")


class PaAno:
    """The detector: ``PaAno(cfg, in_ch).fit(x_train, seed)`` then
    ``.score(x) -> (n,)``.

    ``fit(..., train=False)`` skips training and builds the memory bank from the
    randomly initialised encoder (the "does representation learning matter" ablation).
    """

    def __init__(
        self,
        cfg: PaAnoConfig | None = None,
        in_ch: int = 1,
        device: str | torch.device = "cpu",
    ):
        self.cfg = cfg or PaAnoConfig()
        if (
            isinstance(in_ch, bool)
            or not isinstance(in_ch, (int, np.integer))
            or in_ch < 1
        ):
            raise ValueError(
                f"in_ch must be a positive int (the number of channels), got {in_ch!r}"
            )
        self.in_ch, self.device = int(in_ch), torch.device(device)
        self.encoder: PatchEncoder | None = None
        self.head: PretextHead | None = None
        self.bank: torch.Tensor | None = None  # (M, D) coreset of training embeddings
        self.train_embeddings: torch.Tensor | None = (
            None  # (N, D) every training patch, embedded
        )
        self.history: list[float] = []  # the training loss at each step

    def _as_tensor(self, x) -> torch.Tensor:
        x = torch.as_tensor(
            np.asarray(x, dtype=np.float32) if not isinstance(x, torch.Tensor) else x,
            dtype=torch.float32,
            device=self.device,
        )
        if x.ndim == 1:
            x = x[:, None]
        if x.ndim != 2 or x.shape[1] != self.in_ch:
            raise ValueError(
                f"series must have shape (n, {self.in_ch}), got {tuple(x.shape)}"
            )
        if not torch.isfinite(x).all():
            bad = (~torch.isfinite(x)).any(1).nonzero()[:3, 0].tolist()
            raise ValueError(
                f"series contains NaN or infinite values (first at steps {bad}); "
                "fill or drop them first: a NaN would spread through the patch "
                "embeddings and the cumulative sums of the score"
            )
        if x.shape[0] < self.cfg.patch_len + 2 * self.cfg.shift + 1:
            raise ValueError(
                f"series of {x.shape[0]} steps is too short for "
                f"patch_len={self.cfg.patch_len}"
            )
        return x

    def _make_encoder(self):
        cfg = self.cfg
        if cfg.encoder == "transformer":
            return TransformerPatchEncoder(
                self.in_ch, cfg.patch_len, proj_dim=cfg.proj_dim
            )
        return PatchEncoder(self.in_ch, cfg.channels, cfg.kernels, cfg.proj_dim)

    def fit(self, x_train, seed: int = 0, train: bool = True) -> "PaAno":
        """Train the encoder on the stride-1 patches of ``x_train`` (n, C) and build the
        memory bank."""
        cfg = self.cfg
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
        gen = torch.Generator().manual_seed(int(seed))
        with seeded(int(seed)):  # the initial weights depend on the seed only
            self.encoder = self._make_encoder().to(self.device)
            self.head = PretextHead(self.encoder.dim).to(self.device)
        patches = sliding_patches(self._as_tensor(x_train), cfg.patch_len)  # (N, C, w)
        if train:
            self._train(patches, gen)
        self.encoder.eval()
        with torch.no_grad():
            self.train_embeddings = torch.cat(
                [self.encoder.embed(p) for p in patches.split(4096)]
            )  # (N, D)
        self.bank = self.train_embeddings[
            build_memory_bank(self.train_embeddings, cfg.bank_frac, cfg.bank_min, seed)
        ]
        return self

    def _train(self, patches: torch.Tensor, gen: torch.Generator) -> None:
        cfg, n = self.cfg, patches.shape[0]
        B = min(cfg.batch_size, n)
        params = list(self.encoder.parameters()) + list(self.head.parameters())
        opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        offsets = torch.tensor([*range(-cfg.shift, 0), *range(1, cfg.shift + 1)])
        # the official code divides the univariate triplet loss by 10
        mu = 10.0 if self.in_ch == 1 else 1.0
        best, best_state = float("inf"), None
        self.encoder.train()
        self.history = []
        for it in range(cfg.iters):
            lr = cfg.lr / 10 + (cfg.lr - cfg.lr / 10) * 0.5 * (
                1 + math.cos(math.pi * (it + 1) / cfg.iters)
            )
            for g in opt.param_groups:  # cosine decay from lr to lr/10
                g["lr"] = lr
            idx = torch.randperm(n, generator=gen)[:B]  # anchors: (B,)
            # positives: a shift of ±1..r that stays inside the series
            cand = idx[:, None] + offsets
            score = torch.where(
                (cand >= 0) & (cand < n),
                torch.rand(cand.shape, generator=gen),
                torch.tensor(-1.0),
            )
            pos = cand.gather(1, score.argmax(1, keepdim=True)).squeeze(1)
            idx, pos = (
                idx.to(patches.device),
                pos.to(patches.device),
            )  # indices live with the data
            if cfg.loss == "pretext":
                lam = 1.0
            else:
                lam = pretext_weight(it, cfg.iters, cfg.pretext_frac)
                lam = 0.0 if cfg.loss == "triplet" else lam
            # the patch right before the anchor, for the pretext task
            prev = idx - cfg.patch_len
            ok = prev >= 0
            if lam > 0 and ok.sum() > 0:
                h = self.encoder.embed(
                    torch.cat([patches[idx], patches[pos], patches[prev[ok]]])
                )
                h_a, h_p, h_prev = h[:B], h[B : 2 * B], h[2 * B :]
                partner = (
                    torch.arange(B)[:, None]
                    + torch.randint(1, B, (B, cfg.n_rand), generator=gen)
                ) % B
                # (B, R): other anchors, never itself
                partner = partner.to(patches.device)
                l_pre = pretext_loss(self.head, h_a[ok], h_prev, h_a[partner[ok]])
            else:
                h = self.encoder.embed(torch.cat([patches[idx], patches[pos]]))
                h_a, h_p = h[:B], h[B:]
                l_pre = h.new_zeros(())
            neg = _NEGATIVE[cfg.loss]
            if neg is None:  # pretext only
                l_tri = h.new_zeros(())
            else:
                l_tri = (
                    triplet_hardest_negative(
                        self.encoder.project(h_a),
                        self.encoder.project(h_p),
                        cfg.margin,
                        neg,
                    )
                    / mu
                )
                if (
                    cfg.loss == "farthest"
                ):  # 0e93e93's triplet_grad: same value, gradient x 0.01
                    l_tri = l_tri.detach() + (l_tri - l_tri.detach()) * 0.01
            loss = l_tri + lam * l_pre  # L = L_triplet / μ + λ(it) · L_pretext
            opt.zero_grad(set_to_none=True)
            if loss.requires_grad:  # False only when the active terms are all empty
                loss.backward()
                opt.step()
            self.history.append(loss.item())
            if (
                loss.item() < best
            ):  # keep the lowest-loss weights, as the official code does
                best, best_state = loss.item(), copy.deepcopy(self.encoder.state_dict())
            if cfg.loss == "official" and lam == 0.0:
                # The triplet term is identically 0, so the loss is exactly 0 from here
                # on, never below the best (strict <): the kept weights are this step's,
                # and the remaining steps cannot change them. Stop instead of
                # running them.
                break
        if best_state is not None:
            self.encoder.load_state_dict(best_state)

    @torch.no_grad()
    def embed(self, x) -> torch.Tensor:
        """Embeddings of every stride-1 patch of x (n, C) -> (n - w + 1, D)."""
        if self.encoder is None:
            raise RuntimeError("call fit() before embed() or score()")
        self.encoder.eval()
        patches = sliding_patches(self._as_tensor(x), self.cfg.patch_len)
        return torch.cat([self.encoder.embed(p) for p in patches.split(4096)])

    @torch.no_grad()
    def patch_scores(self, x) -> torch.Tensor:
        """Anomaly score of every patch of x: (n - w + 1,)."""
        return knn_cosine_score(
            self.embed(x), self.bank, min(self.cfg.k, len(self.bank))
        )

    @torch.no_grad()
    def score(self, x) -> torch.Tensor:
        """Anomaly score of every time step of x (n, C) -> (n,), higher = more
        anomalous."""
        s = self.patch_scores(x)
        return patch_scores_to_points(
            s, s.shape[0] + self.cfg.patch_len - 1, self.cfg.patch_len
        )

    def n_parameters(self) -> int:
        """Trainable scalars of encoder + projection + pretext head (what training
        updates)."""
        if self.encoder is not None:
            return n_params(self.encoder, True) + n_params(self.head, True)
        with seeded(0):  # count only: no draw from the caller's random stream
            enc = self._make_encoder()
            head = PretextHead(enc.dim)
        return n_params(enc, True) + n_params(head, True)
