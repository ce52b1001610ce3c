"""IVPT and VPT-Deep on a frozen :class:`~iclr26.ivpt.vit.TinyViT`.

IVPT (after the official ``models/individual_landmark_vit.py``, re-written):

* category-agnostic **prototypes** ``q_k`` per prompted layer (the last slot is the
  background); the **concept map** is the mixture responsibility
  ``A_k(e) = softmax_k(-||e - q_k||^2 + b_k)`` of each patch feature ``e``
  (:func:`concept_maps`), with a learned per-position bias ``b``;
* **intra-region feature aggregation**: the mean feature over each prototype's (argmax)
  region (:func:`region_features`), grouped fine -> coarse by a softmax over a linear
  map (:class:`CrossLayerGrouping`), normed and projected into the layer's **prompts**;
* the final layer's prototypes pool **part features** that a shared linear classifier
  scores (the mean over parts is the logit);
* the part-discovery, cross-layer consistency and equivariance losses and the
  optimiser are in :mod:`iclr26.ivpt.training`.

VPT-Deep: free prompt tokens per layer, a linear head on the CLS token; the "region" of
a prompt is the attention the patches pay it, weighted by how much each patch reaches
the CLS output (attention rollout).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..validate import as_tensor
from .vit import TinyViT


def concept_maps(
    feats: torch.Tensor,
    protos: torch.Tensor,
    bias: torch.Tensor | None = None,
    log: bool = False,
) -> torch.Tensor:
    """Mixture responsibilities of K prototypes for each patch.

    feats: [B, N, D] patch features; protos: [K, D]; bias: [K, N] or None.
    Returns A [B, K, N] with A[:, :, n] summing to 1:
    A_k = softmax_k(-||e - q_k||^2 + b_k) = softmax_k(2 e.q_k - ||q_k||^2 + b_k),
    or log A with ``log=True`` (no ties where A saturates at 1 in float32).
    """
    as_tensor(feats, "feats", floating=True)
    as_tensor(protos, "protos", floating=True)
    if feats.ndim != 3 or protos.ndim != 2 or feats.shape[-1] != protos.shape[-1]:
        raise ValueError(
            f"feats must be [B, N, D] and protos [K, D] with the same D, got "
            f"{tuple(feats.shape)} and {tuple(protos.shape)}"
        )
    # -||e - q||^2 = 2 e.q - ||q||^2 - ||e||^2; the last term is the same for every k
    logits = (
        2 * feats @ protos.T - (protos**2).sum(-1) - (feats**2).sum(-1, keepdim=True)
    )
    if bias is not None:
        if bias.shape != (protos.shape[0], feats.shape[1]):
            raise ValueError(
                f"bias must be [K, N] = {(protos.shape[0], feats.shape[1])}, "
                f"got {tuple(bias.shape)}"
            )
        logits = logits + bias.T
    norm = torch.log_softmax if log else torch.softmax
    return norm(logits, dim=-1).transpose(1, 2)


def region_features(
    maps: torch.Tensor, feats: torch.Tensor, hard: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean feature over each prototype's region (the M-step of a k-means).

    maps: [B, K, N] responsibilities; feats: [B, N, D]. With ``hard`` (the official
    code) a patch belongs to its argmax prototype, weighted by its responsibility;
    otherwise the weights are the soft responsibilities. Returns (features [B, K, D],
    mass [B, K]); a prototype with an empty region gets a zero feature.
    """
    as_tensor(maps, "maps", floating=True)
    as_tensor(feats, "feats", floating=True)
    if maps.ndim != 3 or feats.ndim != 3 or maps.shape[2] != feats.shape[1]:
        raise ValueError(
            f"maps must be [B, K, N] and feats [B, N, D], got "
            f"{tuple(maps.shape)} and {tuple(feats.shape)}"
        )
    w = maps
    if hard:
        onehot = F.one_hot(maps.argmax(1), maps.shape[1]).transpose(1, 2)
        w = onehot.to(maps.dtype) * maps
    mass = w.sum(-1)  # [B, K]
    out = (w @ feats) / torch.where(mass > 0, mass, torch.ones_like(mass))[..., None]
    return out, mass


class CrossLayerGrouping(nn.Module):
    """Fine -> coarse grouping: G = softmax(W f + c) over the coarse slots.

    ``forward(fine_feats [B, K_f, D], fine_maps [B, K_f + 1, N])`` returns
    (coarse features [B, K_c, D], coarse maps [B, K_c + 1, N], G [B, K_f, K_c]):
    the coarse maps are G^T A_fine with the background slot carried over, so they
    still sum to 1 over slots.
    """

    def __init__(self, d: int, k_fine: int, k_coarse: int) -> None:
        super().__init__()
        self.k_fine, self.k_coarse = k_fine, k_coarse
        self.lin = nn.Linear(d, k_coarse)

    def forward(self, fine_feats, fine_maps):
        G = torch.softmax(self.lin(fine_feats), dim=-1)  # [B, K_f, K_c]
        Gd = G.detach()  # as in the official code: prompts do not train the grouping
        coarse = Gd.transpose(1, 2) @ fine_feats / Gd.sum(1)[..., None]
        cmaps = torch.cat([G.transpose(1, 2) @ fine_maps[:, :-1], fine_maps[:, -1:]], 1)
        return coarse, cmaps, G


class IVPT(nn.Module):
    """Interpretable visual prompts from cross-layer concept prototypes.

    n_pro: prototype counts per prompted layer and, last, for the final layer, each
    including the background slot (official default 17, 14, 11, 8, 5; here 9, 7, 5).
    The prompted layers are the last ``len(n_pro) - 1`` blocks.
    """

    def __init__(
        self, vit: TinyViT, n_classes: int, n_pro=(9, 7, 5), init_std: float = 0.05
    ) -> None:
        super().__init__()
        if len(n_pro) < 1 or len(n_pro) - 1 > vit.depth or min(n_pro) < 2:
            raise ValueError(
                f"n_pro must list 1..{vit.depth + 1} counts >= 2, got {n_pro}"
            )
        self.vit, self.n_pro = vit, tuple(int(k) for k in n_pro)
        d, N, K = vit.d, vit.grid**2, self.n_pro[-1] - 1
        self.layers = list(range(vit.depth - len(n_pro) + 1, vit.depth))
        self.protos = nn.ParameterList(
            nn.Parameter(init_std * torch.randn(k, d)) for k in self.n_pro
        )
        self.bias = nn.ParameterList(
            nn.Parameter(torch.zeros(k, N)) for k in self.n_pro
        )
        self.group = nn.ModuleList(
            CrossLayerGrouping(d, k - 1, K) for k in self.n_pro[:-1]
        )
        self.p_norm = nn.ModuleList(nn.LayerNorm(d) for _ in self.layers)
        self.p_lin = nn.ModuleList(nn.Linear(d, d) for _ in self.layers)
        for lin in self.p_lin:
            nn.init.trunc_normal_(lin.weight, std=0.02)
            nn.init.zeros_(lin.bias)
        self.modulation = nn.LayerNorm([d, K + 1])
        self.head = nn.Linear(d, n_classes, bias=False)
        nn.init.trunc_normal_(self.head.weight, std=0.02)
        # a fixed standardisation of the frozen features each prototype layer sees
        # (identity until :meth:`fit_feature_stats`)
        self.register_buffer("f_mean", torch.zeros(len(self.n_pro), d))
        self.register_buffer("f_std", torch.ones(len(self.n_pro), d))

    @torch.no_grad()
    def fit_feature_stats(self, images: torch.Tensor, batch: int = 256) -> None:
        """Set the per-dimension mean and std of the frozen (normed) patch features at
        every prototype layer, over ``images`` [n, 3, H, W] (training images, no
        labels; the backbone without prompts). The tiny backbone's patch tokens share
        a large common vector (their spread across patches is a few percent of their
        norm), so without this the squared distances barely tell patches apart and
        one prototype takes every patch; DINOv2's tokens do not need it."""
        stats = []
        for s in range(0, len(images), batch):
            h, inputs, _ = self.vit(images[s : s + batch])
            taps = [inputs[i] for i in self.layers]
            stats.append(
                torch.stack([self.vit.norm(t)[:, 1:] for t in taps] + [h[:, 1:]])
            )
        e = torch.cat(stats, 1).flatten(1, 2)  # [L, n * N, D]
        self.f_mean.copy_(e.mean(1))
        self.f_std.copy_(e.std(1).clamp_min(1e-6))

    def _std(self, j: int, e: torch.Tensor) -> torch.Tensor:
        return (e - self.f_mean[j]) / self.f_std[j]

    def forward(self, x: torch.Tensor) -> dict:
        """images [B, 3, H, W] -> dict(logits [B, C], maps: list of [B, K_l, N] per
        prototype layer (last = final), coarse: grouped maps per prompted layer,
        parts: final part features [B, K, D], atts: attentions per block)."""
        vit = self.vit
        h = vit.tokens(x)
        T = h.shape[1]
        maps, coarse, atts, block_in = [], [], [], {}
        for i, blk in enumerate(vit.blocks):
            if i in self.layers:
                j = self.layers.index(i)
                block_in[i] = h
                # the frozen features seen by the prototypes
                e = self._std(j, vit.norm(h.detach())[:, 1:])
                A = concept_maps(e, self.protos[j], self.bias[j])
                feats, _ = region_features(A.detach(), e)
                pc, cm, _ = self.group[j](feats[:, :-1], A)
                maps.append(A)
                coarse.append(cm)
                prompts = self.p_lin[j](self.p_norm[j](pc))
                h, att = blk(torch.cat([h, prompts], 1))
                h = h[:, :T]
            else:
                h, att = blk(h)
            atts.append(att)
        e = self._std(-1, vit.norm(h)[:, 1:])
        A = concept_maps(e.detach(), self.protos[-1], self.bias[-1])
        maps.append(A)
        logmaps = (
            None
            if self.training
            else [  # for reading regions, at evaluation
                concept_maps(
                    self._std(j, vit.norm(inp.detach())[:, 1:]), q, b, log=True
                )
                for j, (inp, q, b) in enumerate(
                    zip(
                        [block_in[i] for i in self.layers] + [h], self.protos, self.bias
                    )
                )
            ]
        )
        parts, _ = region_features(A, e)  # [B, K + 1, D], gradient through A
        mod = self.modulation(parts.transpose(1, 2))  # [B, D, K + 1]
        scores = self.head(mod[..., :-1].transpose(1, 2))  # [B, K, C]
        return dict(
            logits=scores.mean(1),
            maps=maps,
            logmaps=logmaps,
            coarse=coarse,
            parts=parts[:, :-1],
            atts=atts,
        )


def rollout_to_cls(atts: list[torch.Tensor], T: int) -> torch.Tensor:
    """How much each patch's output at each layer reaches the final CLS token.

    atts: per block [B, h, T + P, T + P] (prompts last). Attention rollout (Abnar and
    Zuidema, 2020) over the CLS and patch tokens: R_l = prod_{j > l} (A_j + I) / 2 with
    rows renormalised, mean over heads. Returns rho [B, L, T - 1]: rho[:, l, i] is the
    weight of patch i's output of block l in the final CLS (zero for the last block,
    whose patch outputs the CLS head never reads).
    """
    B, L = atts[0].shape[0], len(atts)
    eye = torch.eye(T, device=atts[0].device, dtype=atts[0].dtype)
    R = eye.expand(B, T, T)
    rho = [torch.zeros(B, T - 1, device=eye.device, dtype=eye.dtype)]  # last block
    for j in range(L - 1, 0, -1):  # rho for block j - 1 uses blocks j..L-1
        A = atts[j].mean(1)[:, :T, :T]
        A = 0.5 * A / A.sum(-1, keepdim=True) + 0.5 * eye
        R = R @ A
        rho.append(R[:, 0, 1:])
    return torch.stack(rho[::-1], 1)


class VPTDeep(nn.Module):
    """VPT-Deep: ``n_prompts`` free tokens per layer, a linear head on the CLS token.

    The region of prompt k of block l is read where it reaches the logits: the
    attention patch i pays it in block l times patch i's rollout weight in the final
    CLS (:func:`rollout_to_cls`). The last block's prompts reach the logits only
    through the CLS's own attention (no patch is involved), so they have no region
    and are left out of ``regions``.
    """

    def __init__(self, vit: TinyViT, n_classes: int, n_prompts: int = 4) -> None:
        super().__init__()
        self.vit, self.n_prompts = vit, n_prompts
        d = vit.d
        val = (6.0 / (3 * vit.patch**2 + d)) ** 0.5  # VPT's uniform initialisation
        self.prompts = nn.Parameter(
            torch.empty(vit.depth, n_prompts, d).uniform_(-val, val)
        )
        self.head = nn.Linear(d, n_classes)

    def forward(self, x: torch.Tensor) -> dict:
        """images -> dict(logits [B, C], atts, regions [B, (L - 1) * P, N]; regions
        only in eval mode, where they are read)."""
        B = len(x)
        prompts = [p.expand(B, -1, -1) for p in self.prompts]
        h, _, atts = self.vit(x, prompts)
        logits = self.head(h[:, 0])
        if self.training:  # the loss never reads the regions
            return dict(logits=logits, atts=atts)
        T = h.shape[1]
        rho = rollout_to_cls(atts, T)  # [B, L, N]
        cols = [
            a.mean(1)[:, 1:T, T:].transpose(1, 2) * rho[:, l, None]  # [B, P, N]
            for l, a in enumerate(atts[:-1])
        ]
        return dict(logits=logits, atts=atts, regions=torch.cat(cols, 1))


class LinearProbe(nn.Module):
    """A linear head on the frozen backbone's CLS token (no prompts)."""

    def __init__(self, vit: TinyViT, n_classes: int) -> None:
        super().__init__()
        self.vit, self.head = vit, nn.Linear(vit.d, n_classes)

    def forward(self, x: torch.Tensor) -> dict:
        h, _, atts = self.vit(x)
        return dict(logits=self.head(h[:, 0]), atts=atts)


@torch.no_grad()
def evaluate(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor, batch: int = 256
) -> tuple[float, list[dict]]:
    """Accuracy and the per-batch outputs (detached) over ``images``."""
    model.eval()
    outs, correct = [], 0
    for s in range(0, len(images), batch):
        o = model(images[s : s + batch])
        correct += (o["logits"].argmax(-1) == labels[s : s + batch]).sum().item()
        outs.append(o)
    return correct / len(images), outs
