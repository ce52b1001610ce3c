"""Z-NERD in miniature: a BIO tagger on hashed character n-grams, with orthogonal
semantic decomposition (OSD) of its input and n-gram-aware (TCQK) attention heads.

Shapes: B sentences, T tokens, d model width, H heads, d_h = d / H."""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..numerics import n_params
from ..validate import as_tensor
from .corpus import ngram_buckets


def osd(E: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Orthogonal semantic decomposition of each step's change.

    E: (B, T, d) token embeddings. With E_{-1} = 0 and Delta_t = E_t - E_{t-1}, returns
    (v_sus, v_div), each (B, T, d): v_sus = proj_{E_{t-1}} Delta_t (the part of the
    change that continues the previous token's meaning) and v_div = Delta_t - v_sus (the
    part orthogonal to it, a Gram-Schmidt step)."""
    as_tensor(E, "E", ndim=3)
    prev = F.pad(E, (0, 0, 1, 0))[:, :-1]  # E_{t-1}, zero before the first token
    delta = E - prev
    # proj_a(b) = (b . a / a . a) a; zero where E_{t-1} = 0
    nn2 = prev.pow(2).sum(-1, keepdim=True)
    coef = (delta * prev).sum(-1, keepdim=True) / torch.where(nn2 > 0, nn2, 1.0)
    v_sus = coef * prev
    return v_sus, delta - v_sus


class OrthogonalSemanticDecomposition(nn.Module):
    """``OSD()(E) -> v_div`` (B, T, d): the divergent component of :func:`osd`."""

    def forward(self, E: torch.Tensor) -> torch.Tensor:
        return osd(E)[1]


def head_kernels(kernels: tuple[int, ...] | None, heads: int) -> tuple[int, ...]:
    """Kernel size per head: the H heads are split into len(kernels) equal groups."""
    if kernels is None:
        return (1,) * heads
    if any((not isinstance(k, int)) or k < 1 or k % 2 == 0 for k in kernels):
        raise ValueError(f"kernels must be odd positive ints, got {kernels}")
    if heads % len(kernels):
        raise ValueError(
            f"heads ({heads}) must be a multiple of len(kernels) ({kernels})"
        )
    per = heads // len(kernels)
    return tuple(k for k in kernels for _ in range(per))


class TCQKAttention(nn.Module):
    """Multi-head self-attention with queries and keys convolved along the sequence.

    Head h has kernel k_h (groups of heads share a size, e.g. (1, 3, 5)); before the
    scores, Q_h <- Conv1d_{k_h}(Q_h) and K_h <- Conv1d_{k_h}(K_h), so the score of (i,
    j) is a bilinear form of the n-grams around i and j. ``kernels=None`` is plain
    attention (no convolution, no extra parameters). Convolutions start as the identity
    (centre tap = I), so a TCQK layer starts where plain attention does."""

    def __init__(self, d: int, heads: int, kernels: tuple[int, ...] | None = (1, 3, 5)):
        super().__init__()
        if d % heads:
            raise ValueError(f"d ({d}) must be divisible by heads ({heads})")
        self.d, self.h, self.dh = d, heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.kernels = None if kernels is None else head_kernels(kernels, heads)
        self.groups = nn.ModuleDict()
        if self.kernels is not None:
            for k in sorted(set(self.kernels)):
                idx = [i for i, kk in enumerate(self.kernels) if kk == k]
                for which in ("q", "k"):
                    conv = nn.Conv1d(
                        len(idx) * self.dh,
                        len(idx) * self.dh,
                        k,
                        padding=k // 2,
                        groups=len(idx),
                    )
                    with torch.no_grad():
                        conv.weight.normal_(0, 0.02)
                        eye = torch.eye(self.dh).repeat(len(idx), 1)
                        conv.weight[:, :, k // 2] += eye
                        conv.bias.zero_()
                    self.groups[f"{which}{k}"] = conv
                self.register_buffer(f"idx{k}", torch.tensor(idx), persistent=False)

    def _conv(self, x: torch.Tensor, which: str) -> torch.Tensor:
        # x: (B, H, T, dh) -> the same, each head convolved with its own kernel
        B, H, T, dh = x.shape
        out = torch.empty_like(x)
        for k in sorted(set(self.kernels)):
            idx = getattr(self, f"idx{k}")
            xs = x[:, idx].permute(0, 1, 3, 2).reshape(B, len(idx) * dh, T)
            ys = self.groups[f"{which}{k}"](xs).reshape(B, len(idx), dh, T)
            out[:, idx] = ys.permute(0, 1, 3, 2)
        return out

    def forward(self, x: torch.Tensor, pad: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, d); pad: (B, T) bool, True at padding. Returns (B, T, d)."""
        as_tensor(x, "x", ndim=3)
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        if self.kernels is not None:
            if pad is not None:  # padding must not leak into real tokens' n-grams
                keep = (~pad)[:, None, :, None].to(q.dtype)
                q, k = q * keep, k * keep
            q, k = self._conv(q, "q"), self._conv(k, "k")
        s = q @ k.transpose(-1, -2) / math.sqrt(self.dh)  # (B, H, T, T)
        if pad is not None:
            s = s.masked_fill(pad[:, None, None, :], float("-inf"))
        y = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, self.d)
        return self.out(y)


class _Block(nn.Module):
    def __init__(self, d, heads, kernels, ffn):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.att = TCQKAttention(d, heads, kernels)
        self.ffn = nn.Sequential(nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d))

    def forward(self, x, pad):
        x = x + self.att(self.ln1(x), pad)
        return x + self.ffn(self.ln2(x))


class ZNERDTagger(nn.Module):
    """BIO tagger: hashed character n-gram embeddings -> [E_t || v_div] (OSD) or
    [E_t || 0] (no OSD, the same parameter count) -> transformer -> 3 tags.

    kernels: TCQK kernel groups, or None for plain attention. ``match_params``: a plain
    tagger widens its feed-forward layers so its parameter count matches the TCQK tagger
    with ``match_params`` kernels (the fair baseline).
    """

    def __init__(
        self,
        n_buckets: int = 4096,
        d: int = 48,
        heads: int = 6,
        layers: int = 2,
        kernels: tuple[int, ...] | None = (1, 3, 5),
        use_osd: bool = True,
        max_len: int = 64,
        match_params: tuple[int, ...] | None = None,
    ):
        super().__init__()
        self.use_osd = use_osd
        self.n_buckets = n_buckets
        self.emb = nn.Embedding(n_buckets + 1, d, padding_idx=n_buckets)
        self.inp = nn.Linear(2 * d, d)
        self.pos = nn.Embedding(max_len, d)
        ffn = 4 * d
        if kernels is None and match_params is not None:
            extra = n_params(TCQKAttention(d, heads, match_params)) - n_params(
                TCQKAttention(d, heads, None)
            )
            ffn += math.ceil(extra / (2 * d + 1))
        self.blocks = nn.ModuleList(
            _Block(d, heads, kernels, ffn) for _ in range(layers)
        )
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, 3)

    def embed(self, grams: torch.Tensor) -> torch.Tensor:
        """grams: (B, T, G) bucket ids (n_buckets = padding) -> E (B, T, d), the mean of
        each word's n-gram vectors."""
        e = self.emb(grams)
        cnt = (grams != self.n_buckets).sum(-1, keepdim=True).clamp(min=1)
        return e.sum(-2) / cnt

    def forward(self, grams: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        """grams: (B, T, G) long; pad: (B, T) bool. Returns logits (B, T, 3)."""
        E = self.embed(grams) * (~pad)[..., None]
        side = osd(E)[1] if self.use_osd else torch.zeros_like(E)
        x = self.inp(torch.cat([E, side], -1))
        x = x + self.pos(torch.arange(x.shape[1], device=x.device))
        for b in self.blocks:
            x = b(x, pad)
        return self.head(self.ln(x))


class Encoded:
    """Sentences as tensors: grams (S, T, G) long, tags (S, T) long (-1 at padding),
    pad (S, T) bool; ``words`` keeps each sentence's words."""

    def __init__(
        self,
        tokens: list[list[str]],
        tags: list[list[int]],
        n_buckets: int,
        max_grams: int = 16,
    ):
        if not tokens or len(tokens) != len(tags):
            raise ValueError("need a non-empty list of sentences and one tag list each")
        T = max(len(t) for t in tokens)
        cache: dict[str, list[int]] = {}
        grams = np.full((len(tokens), T, max_grams), n_buckets, dtype=np.int64)
        tg = np.full((len(tokens), T), -1, dtype=np.int64)
        for i, (ws, ts) in enumerate(zip(tokens, tags)):
            if len(ws) != len(ts):
                raise ValueError(f"sentence {i}: {len(ws)} tokens but {len(ts)} tags")
            for j, w in enumerate(ws):
                b = cache.setdefault(w, ngram_buckets(w, n_buckets)[:max_grams])
                grams[i, j, : len(b)] = b
            tg[i, : len(ts)] = ts
        self.words = [list(ws) for ws in tokens]  # the sentences' words, for lookups
        self.grams = torch.from_numpy(grams)
        self.tags = torch.from_numpy(tg)
        self.pad = self.tags < 0

    def __len__(self) -> int:
        return len(self.tags)

    def to(self, device) -> "Encoded":
        for k in ("grams", "tags", "pad"):
            setattr(self, k, getattr(self, k).to(device))
        return self


def bio_spans(tags) -> set[tuple[int, int, int]]:
    """Chunks of a batch of BIO tag rows (0 = O, 1 = B, 2 = I; -1 padding) as
    (row, start, end_exclusive), conlleval style: an I after O starts a chunk."""
    t = np.asarray(tags)
    if t.ndim != 2:
        raise ValueError(f"tags must be 2-d (rows, positions), got shape {t.shape}")
    inside = (t == 1) | (t == 2)
    prev_in = np.pad(inside, ((0, 0), (1, 0)))[:, :-1]
    start = (t == 1) | ((t == 2) & ~prev_in)
    nxt = np.pad(t, ((0, 0), (0, 1)), constant_values=0)[:, 1:]
    end = inside & (nxt != 2)
    spans = set()
    for r in range(t.shape[0]):
        s_idx, e_idx = np.flatnonzero(start[r]), np.flatnonzero(end[r])
        # each chunk's end is the first end at or after its start
        for s in s_idx:
            e = e_idx[np.searchsorted(e_idx, s)]
            spans.add((r, int(s), int(e) + 1))
    return spans


def span_f1(pred, gold, min_len: int = 1, max_len: int | None = None) -> dict:
    """Exact-match chunk precision, recall and F1 over chunks whose length lies in
    [min_len, max_len] (each side filtered by its own chunks' lengths)."""
    p, g = bio_spans(pred), bio_spans(gold)

    def keep(s):
        n = s[2] - s[1]
        return n >= min_len and (max_len is None or n <= max_len)

    p, g = {s for s in p if keep(s)}, {s for s in g if keep(s)}
    tp = len(p & g)
    prec = tp / len(p) if p else 0.0
    rec = tp / len(g) if g else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {
        "precision": prec,
        "recall": rec,
        "f1": f1,
        "n_gold": len(g),
        "n_pred": len(p),
    }


@torch.no_grad()
def predict(model: ZNERDTagger, data: Encoded, batch: int = 256) -> np.ndarray:
    """Argmax tags (S, T), -1 at padding."""
    model.eval()
    out = []
    for i in range(0, len(data), batch):
        lg = model(data.grams[i : i + batch], data.pad[i : i + batch])
        t = lg.argmax(-1).masked_fill(data.pad[i : i + batch], -1)
        out.append(t.cpu().numpy())
    T = data.tags.shape[1]
    return np.concatenate(
        [np.pad(o, ((0, 0), (0, T - o.shape[1])), constant_values=-1) for o in out]
    )


def train_tagger(
    model: ZNERDTagger,
    train: Encoded,
    val: Encoded,
    steps: int,
    lr: float = 3e-3,
    batch: int = 32,
    eval_every: int = 50,
    seed: int = 0,
) -> tuple[ZNERDTagger, list[float]]:
    """Adam on token cross-entropy; keeps the state with the best validation span F1
    (early stopping on validation, never on test). Returns (model, val F1 curve)."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    best, best_state, curve = -1.0, None, []
    for step in range(1, steps + 1):
        model.train()
        idx = torch.randint(len(train), (batch,), generator=g).to(train.tags.device)
        pad = train.pad[idx]
        T = int((~pad).sum(1).max())
        lg = model(train.grams[idx, :T], pad[:, :T])
        loss = F.cross_entropy(
            lg.reshape(-1, 3), train.tags[idx, :T].reshape(-1), ignore_index=-1
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % eval_every == 0 or step == steps:
            f = span_f1(predict(model, val), val.tags.cpu().numpy())["f1"]
            curve.append(f)
            if f > best:
                best, best_state = f, copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)
    return model, curve


def lookup_tags(train: Encoded, data: Encoded) -> np.ndarray:
    """A tagger that has learned nothing but the training split's entity strings: in
    each sentence of ``data``, every word sequence that occurs as an entity in
    ``train`` is tagged (longest match first, left to right), everything else O.
    Returns (S, T) tags as :func:`predict` does (-1 at padding). If it scores as well
    as a trained tagger, the test entities were seen in training."""
    gold = train.tags.cpu().numpy()
    known = {tuple(train.words[r][s:e]) for r, s, e in bio_spans(gold)}
    longest = max((len(k) for k in known), default=0)
    out = np.full(tuple(data.tags.shape), -1, dtype=np.int64)
    for r, ws in enumerate(data.words):
        out[r, : len(ws)] = 0
        i = 0
        while i < len(ws):
            for n in range(min(longest, len(ws) - i), 0, -1):
                if tuple(ws[i : i + n]) in known:
                    out[r, i] = 1
                    out[r, i + 1 : i + n] = 2
                    i += n
                    break
            else:
                i += 1
    return out


def corrected_tags(
    pred: np.ndarray, gold: np.ndarray, gain: float, min_len: int = 1
) -> np.ndarray:
    """A planted case for an F1 comparison: ``pred`` with its errors on gold chunks of
    at least ``min_len`` tokens set right, one chunk at a time (in sentence order),
    until its :func:`span_f1` over those chunks has risen by ``gain`` (or no error is
    left). pred, gold: (S, T) BIO tags, -1 at padding."""
    if not 0 <= gain <= 1:
        raise ValueError(f"gain must lie in [0, 1], got {gain}")
    pred, gold = np.array(pred, copy=True), np.asarray(gold)
    if pred.shape != gold.shape:
        raise ValueError(f"pred and gold differ in shape: {pred.shape}, {gold.shape}")
    target = span_f1(pred, gold, min_len)["f1"] + gain
    missed = sorted(
        s for s in bio_spans(gold) - bio_spans(pred) if s[2] - s[1] >= min_len
    )
    for r, s, e in missed:
        if span_f1(pred, gold, min_len)["f1"] >= target:
            break
        pred[r, s:e] = gold[r, s:e]
        if e < gold.shape[1] and pred[r, e] == 2:  # end the chunk where gold ends it
            pred[r, e] = gold[r, e]
    return pred
