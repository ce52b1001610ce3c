"""The quality annotators and GneissWeb's category-aware ensemble rule.

* ``HashedFastText``: the fastText architecture in torch -- hashed word uni+bigrams, an
  ``EmbeddingBag`` that averages their vectors, one linear layer, softmax.
* ``mcalpine_eflaw``: McAlpine EFLAW readability, (words + miniwords) / sentences,
  counted the way ``textstat`` counts them (the recipe uses textstat's score).
* ``tokens_per_char``: the extreme-tokenisation ratio, with a byte-level BPE trained by
  HF ``tokenizers`` on a sample of the raw pool (the recipe uses StarCoder's tokenizer).
* ``ensemble_keep``: keep = FT AND (R OR E), with R and E category-aware -- the rule of
  the recipe notebook (data-prep-kit, recipes/GneissWeb), with one quality classifier
  instead of two.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import numpy as np
import torch
from torch import nn

from ..core import seeded

_PUNCT = re.compile(r"[^\w\s]")
_SENT = re.compile(r"\b[^.!?]+[.!?]*")


# -------------------------------------------------------------------------- readability
def _count_words(text: str) -> list[str]:
    return _PUNCT.sub("", text).split()


def mcalpine_eflaw(text: str) -> float:
    """McAlpine EFLAW = (W + M) / S: words, miniwords (<= 3 letters) and sentences
    of ``text``.

    Counted like textstat 0.7: punctuation is stripped before splitting words; sentences
    are the matches of ``\\b[^.!?]+[.!?]*`` that hold more than two words (at least one
    sentence). Lower is easier to read. An empty text scores 0.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if not text:
        return 0.0
    words = _count_words(text)
    mini = sum(len(w) <= 3 for w in words)
    sentences = _SENT.findall(text)
    n_sent = max(1, len(sentences) - sum(len(_count_words(s)) <= 2 for s in sentences))
    return (len(words) + mini) / n_sent


# ----------------------------------------------------------------- extreme tokenisation
def train_bpe(texts: Iterable[str], vocab_size: int = 1000, seed: int = 0):
    """A byte-level BPE tokenizer (HF ``tokenizers``) trained on ``texts``, offline, in
    about a second."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if not isinstance(vocab_size, int) or vocab_size < 300:
        raise ValueError(
            f"vocab_size must be an int >= 300 (256 bytes + merges), got {vocab_size!r}"
        )
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    return tok


def tokens_per_char(texts: Sequence[str], tokenizer) -> np.ndarray:
    """(n,) tokens / characters of each text under ``tokenizer`` (0 for an
    empty text)."""
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of str, not one str")
    enc = tokenizer.encode_batch(list(texts))
    return np.array(
        [len(e.ids) / max(len(t), 1) for e, t in zip(enc, texts)], dtype=np.float64
    )


# ----------------------------------------------------------------------------- fastText
class HashedFastText(nn.Module):
    """fastText in torch: a document is the mean of the embeddings of its hashed word
    n-grams (n = 1..ngrams); a linear layer maps that mean to class logits.

    buckets: size of the hash table (n-grams share rows when they collide); dim:
    embedding width. ``featurize`` turns texts into the (ids, offsets) pair an
    ``nn.EmbeddingBag`` eats.
    """

    def __init__(
        self,
        n_classes: int = 2,
        dim: int = 16,
        buckets: int = 2**18,
        ngrams: int = 2,
        seed: int = 0,
    ):
        super().__init__()
        if n_classes < 2 or dim < 1 or buckets < 2 or ngrams not in (1, 2, 3):
            raise ValueError(
                f"need n_classes >= 2, dim >= 1, buckets >= 2, ngrams in 1..3; got "
                f"{n_classes}, {dim}, {buckets}, {ngrams}"
            )
        self.buckets, self.ngrams = buckets, ngrams
        with seeded(seed):  # the initial weights come from ``seed`` alone
            self.embed = nn.EmbeddingBag(buckets, dim, mode="mean")
            self.out = nn.Linear(dim, n_classes)
            nn.init.uniform_(self.embed.weight, -1.0 / dim, 1.0 / dim)

    @staticmethod
    def _word_hash(w: str) -> int:
        # stable across runs (Python's hash() is salted)
        return zlib.crc32(w.encode("utf-8"))

    def featurize(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """texts -> (ids (total,) int64, offsets (n,) int64): hashed unigrams then
        bigrams of each lower-cased, whitespace-split text (fastText's tokenisation;
        punctuation stays attached)."""
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of str, not one str")
        ids, offsets, pos = [], [], 0
        for t in texts:
            h = np.fromiter(
                (self._word_hash(w) for w in t.lower().split()), dtype=np.uint64
            )
            if h.size == 0:
                h = np.array([self._word_hash("")], dtype=np.uint64)
            grams = [h]
            for n in range(2, self.ngrams + 1):
                if h.size >= n:
                    g = h[: h.size - n + 1].copy()
                    for k in range(1, n):
                        # wraps mod 2^64
                        g = g * np.uint64(1_000_003) + h[k : h.size - n + 1 + k]
                    grams.append(g)
            b = np.concatenate(grams) % np.uint64(self.buckets)
            ids.append(b)
            offsets.append(pos)
            pos += b.size
        dev = self.out.weight.device
        return (
            torch.as_tensor(np.concatenate(ids).astype(np.int64), device=dev),
            torch.as_tensor(np.array(offsets, dtype=np.int64), device=dev),
        )

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """(ids (total,), offsets (n,)) -> logits (n, n_classes)."""
        return self.out(self.embed(ids, offsets))

    def fit(
        self,
        texts: Sequence[str],
        labels: Sequence[int],
        epochs: int = 4,
        lr: float = 0.1,
        batch: int = 64,
        seed: int = 0,
    ) -> "HashedFastText":
        """Train on cross-entropy over shuffled mini-batches of documents with
        ``torch.optim.Adam`` (fastText itself uses per-example SGD, which needs many
        more, cheaper steps). ``labels`` are class ids: ints (or bools), never floats.
        Returns self."""
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of str, not one str")
        texts = list(texts)
        if not texts:
            raise ValueError("texts must be non-empty: there is nothing to fit")
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must all be str")
        lab = np.asarray(labels)
        if lab.dtype == bool:
            lab = lab.astype(np.int64)
        if not np.issubdtype(lab.dtype, np.integer):
            # casting 0.7 to int64 would silently make it class 0
            raise TypeError(f"labels must be integer class ids, got dtype {lab.dtype}")
        y = torch.as_tensor(lab, dtype=torch.int64)
        if y.ndim != 1 or y.numel() != len(texts):
            raise ValueError(
                f"labels must be (n,) with n = len(texts) = {len(texts)}, got "
                f"{tuple(y.shape)}"
            )
        if y.min() < 0 or y.max() >= self.out.out_features:
            raise ValueError(
                f"labels must lie in [0, {self.out.out_features}), got range "
                f"[{int(y.min())}, {int(y.max())}]"
            )
        if (
            not isinstance(epochs, int)
            or epochs < 1
            or not isinstance(batch, int)
            or batch < 1
        ):
            raise ValueError(
                f"epochs and batch must be positive ints, got {epochs!r}, {batch!r}"
            )
        gen = torch.Generator().manual_seed(seed)
        ids_all, offs_all = self.featurize(texts)  # hash once
        bounds = torch.cat(
            [offs_all, torch.tensor([ids_all.numel()], device=offs_all.device)]
        )
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        for _ in range(epochs):
            for idx in torch.randperm(len(texts), generator=gen).split(batch):
                pieces = [ids_all[bounds[i] : bounds[i + 1]] for i in idx.tolist()]
                lens = torch.tensor([p.numel() for p in pieces])
                offs = torch.cat(
                    [torch.zeros(1, dtype=torch.int64), lens.cumsum(0)[:-1]]
                ).to(ids_all.device)
                loss = nn.functional.cross_entropy(
                    self(torch.cat(pieces), offs), y[idx].to(ids_all.device)
                )
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        return self

    @torch.no_grad()
    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """(n, n_classes) class probabilities."""
        ids, offs = self.featurize(texts)
        return torch.softmax(self(ids, offs), dim=-1).cpu().numpy()


# ------------------------------------------------------------------------- the ensemble
@dataclass(frozen=True)
class EnsembleRule:
    """GneissWeb's rule: keep = (quality > q) AND (R OR E), where for a document in one
    of the categories R = EFLAW < eflaw_cat and E = tokens/char in tpc_cat, and
    otherwise R = EFLAW < eflaw_other and E = tokens/char in tpc_other.
    ``category_aware=False`` applies the "other" thresholds to every document (one
    global threshold)."""

    q: float = 0.5
    eflaw_cat: float = 70.0
    eflaw_other: float = 30.0
    tpc_cat: tuple[float, float] = (0.1, 0.5)
    tpc_other: tuple[float, float] = (0.22, 0.28)
    category_aware: bool = True


def _arrays(quality, is_cat, eflaw, tpc):
    arrs = [np.asarray(a) for a in (quality, is_cat, eflaw, tpc)]
    if any(a.ndim != 1 or a.shape != arrs[0].shape for a in arrs):
        raise ValueError(
            "quality, is_cat, eflaw, tpc must all be 1-d of one length, got "
            f"{[a.shape for a in arrs]}"
        )
    return (
        arrs[0].astype(float),
        arrs[1].astype(bool),
        arrs[2].astype(float),
        arrs[3].astype(float),
    )


def ensemble_keep(
    quality, is_cat, eflaw, tpc, rule: EnsembleRule = EnsembleRule()
) -> np.ndarray:
    """(n,) bool: which documents the ensemble keeps. Inputs are (n,) arrays of
    annotations."""
    q, cat, r, t = _arrays(quality, is_cat, eflaw, tpc)
    if not rule.category_aware:
        cat = np.zeros_like(cat)
    fasttext_ok = q > rule.q
    readable = np.where(cat, r < rule.eflaw_cat, r < rule.eflaw_other)
    lo = np.where(cat, rule.tpc_cat[0], rule.tpc_other[0])
    hi = np.where(cat, rule.tpc_cat[1], rule.tpc_other[1])
    normal_tok = (t >= lo) & (t <= hi)
    return fasttext_ok & (readable | normal_tok)


def single_filter_scores(
    quality, is_cat, eflaw, tpc, rule: EnsembleRule = EnsembleRule()
) -> dict[str, np.ndarray]:
    """Each annotator alone as a ranking score (higher = keep first), using the same
    category-aware thresholds as the ensemble, so that a single filter can be run at any
    retention: fastText = quality; readability = -EFLAW / its threshold;
    extreme-tokenisation = -(distance of tokens/char from the centre of its band, in
    half-widths)."""
    q, cat, r, t = _arrays(quality, is_cat, eflaw, tpc)
    lo = np.where(cat, rule.tpc_cat[0], rule.tpc_other[0])
    hi = np.where(cat, rule.tpc_cat[1], rule.tpc_other[1])
    return {
        "fastText": q,
        "readability": -r / np.where(cat, rule.eflaw_cat, rule.eflaw_other),
        "extreme-tok": -np.abs(t - (lo + hi) / 2) / ((hi - lo) / 2),
    }


def keep_top(score, k: int) -> np.ndarray:
    """(n,) bool mask of the ``k`` highest scores (ties broken by position,
    deterministic)."""
    score = np.asarray(score, dtype=float)
    if not 0 <= k <= score.size:
        raise ValueError(f"k must lie in [0, {score.size}], got {k}")
    mask = np.zeros(score.size, dtype=bool)
    mask[np.argsort(-score, kind="stable")[:k]] = True
    return mask


def corrected_keep(kept, good, gain: float) -> np.ndarray:
    """A planted case for a precision comparison: the kept set ``kept`` with its junk
    swapped, one document at a time (in order), for good documents it left out, so it
    keeps as many documents, until its :func:`precision` has risen by ``gain`` (or no
    junk, or no good document to swap in, is left). kept, good: (n,) bool."""
    kept, good = np.array(kept, dtype=bool), np.asarray(good, dtype=bool)
    if kept.shape != good.shape or not kept.any():
        raise ValueError("kept and good must have one shape, and something kept")
    if not 0 <= gain <= 1:
        raise ValueError(f"gain must lie in [0, 1], got {gain}")
    n_swap = min(int(np.ceil(gain * kept.sum())), int((kept & ~good).sum()))
    n_swap = min(n_swap, int((~kept & good).sum()))
    kept[np.flatnonzero(kept & ~good)[:n_swap]] = False
    kept[np.flatnonzero(~kept & good)[:n_swap]] = True
    return kept


def precision(kept, good) -> float:
    """Fraction of kept documents whose hidden label is good (nan if nothing
    is kept)."""
    kept, good = np.asarray(kept, dtype=bool), np.asarray(good, dtype=bool)
    if kept.shape != good.shape:
        raise ValueError(
            f"kept and good must have one shape, got {kept.shape} and {good.shape}"
        )
    return float(good[kept].mean()) if kept.any() else float("nan")


# --------------------------------------------------------------- the streaming pipeline
@dataclass
class Annotators:
    """The trained annotators: quality classifier (class 1 = good), category classifier
    (class 0 = no category, 1..4 = CATEGORIES) and the BPE tokenizer."""

    quality: HashedFastText
    category: HashedFastText
    tokenizer: object

    def annotate(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """texts -> dict of (n,) arrays: quality, category (int), is_cat, eflaw,
        tpc, n_bytes."""
        texts = list(texts)
        cat = self.category.predict_proba(texts).argmax(1)
        return {
            "quality": self.quality.predict_proba(texts)[:, 1],
            "category": cat,
            "is_cat": cat > 0,
            "eflaw": np.array([mcalpine_eflaw(t) for t in texts]),
            "tpc": tokens_per_char(texts, self.tokenizer),
            "n_bytes": np.array([len(t.encode("utf-8")) for t in texts]),
        }


def stream_pipeline(
    docs: Iterable,
    annotators: Annotators,
    L: int,
    shard_docs: int,
    text_of=lambda d: d.text,
) -> Iterator[tuple[object, str, dict]]:
    """Documents in, (document, deduplicated text, annotations) out, one
    shard at a time.

    Reads ``shard_docs`` documents, deduplicates them together (one suffix array per
    shard), annotates the survivors, yields them, and forgets the shard: memory holds
    one shard at most, however long the stream.
    """
    from .dedup import dedup_docs

    if not isinstance(shard_docs, int) or shard_docs < 1:
        raise ValueError(f"shard_docs must be a positive int, got {shard_docs!r}")
    shard: list = []

    def flush():
        texts, _ = dedup_docs([text_of(d) for d in shard], L)
        ann = annotators.annotate(texts)
        for i, (d, t) in enumerate(zip(shard, texts)):
            yield d, t, {k: v[i] for k, v in ann.items()}

    for d in docs:
        shard.append(d)
        if len(shard) == shard_docs:
            yield from flush()
            shard = []
    if shard:
        yield from flush()
