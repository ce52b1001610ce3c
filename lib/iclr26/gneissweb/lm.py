"""A tiny character-level language model: the stand-in for "pretrain an LLM on the
filtered data".

A Bengio-style MLP over the previous ``context`` characters (ASCII, 128 symbols): embed
each, concatenate, one hidden layer, softmax over the next character.
It trains in seconds on one CPU thread, where a recurrent model would take minutes.
``train_char_lm`` trains it on random positions of a training text for a fixed number of
steps -- an equal *character budget* for every corpus it is given; ``bits_per_char``
scores held-out text; ``cloze_accuracy`` asks fact questions.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch
from torch import nn

from ..core import seeded

VOCAB = 128


def encode(text: str) -> torch.Tensor:
    """str -> (n,) int64 byte codes, non-ASCII folded into 0..127."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return torch.as_tensor(
        np.frombuffer(text.encode("ascii", errors="replace"), dtype=np.uint8) & 127,
        dtype=torch.int64,
    )


class CharMLP(nn.Module):
    """(b, context) ints -> (b, 128) next-character logits.

    h = tanh(W1 [e(x_1); ...; e(x_C)] + b1),  logits = W2 h + b2.
    """

    def __init__(self, context: int = 24, emb: int = 16, hidden: int = 256):
        super().__init__()
        if context < 1 or emb < 1 or hidden < 1:
            raise ValueError(
                f"context, emb and hidden must be positive, got {context}, {emb}, "
                f"{hidden}"
            )
        self.context = context
        self.embed = nn.Embedding(VOCAB, emb)
        self.hidden = nn.Linear(context * emb, hidden)
        self.head = nn.Linear(hidden, VOCAB)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 2 or x.shape[1] != self.context:
            raise ValueError(
                f"x must be (batch, {self.context}) ints, got shape {tuple(x.shape)}"
            )
        return self.head(torch.tanh(self.hidden(self.embed(x).flatten(1))))


def windows(codes: torch.Tensor, context: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(n,) codes -> (contexts (n, context), targets (n,)): each character with the
    ``context`` characters before it, left-padded with code 0 at the start of
    the text."""
    padded = torch.cat(
        [torch.zeros(context, dtype=codes.dtype, device=codes.device), codes]
    )
    return padded.unfold(0, context, 1)[:-1], codes


def train_char_lm(
    text: str,
    steps: int,
    batch: int = 512,
    lr: float = 1e-2,
    seed: int = 0,
    context: int = 24,
    emb: int = 16,
    hidden: int = 256,
    device: str | torch.device = "cpu",
) -> CharMLP:
    """Train a CharMLP on ``steps`` batches of ``batch`` random positions of ``text``
    with Adam (``torch.optim.Adam``), learning rate decayed by a cosine.
    The character budget is steps * batch, whatever the text.
    """
    codes = encode(text).to(device)
    if codes.numel() < context + 2:
        raise ValueError(
            f"text must hold more than context + 1 = {context + 1} characters, got "
            f"{codes.numel()}"
        )
    if steps < 1 or batch < 1:
        raise ValueError(f"steps and batch must be positive, got {steps}, {batch}")
    gen = torch.Generator().manual_seed(seed)
    with seeded(seed):  # the initial weights
        model = CharMLP(context, emb, hidden).to(device)
    adam = torch.optim.Adam(model.parameters(), lr=lr)
    # cosine decay from lr to 0 over the run: factor for step t (0-based) is
    # 0.5 (1 + cos(pi t / steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        adam, lambda t: 0.5 * (1 + math.cos(math.pi * t / steps))
    )
    offsets = torch.arange(-context, 0, device=device)
    for _ in range(1, steps + 1):
        pos = torch.randint(context, codes.numel(), (batch,), generator=gen).to(device)
        logits = model(codes[pos[:, None] + offsets])  # (b, 128)
        loss = nn.functional.cross_entropy(logits, codes[pos])
        adam.zero_grad(set_to_none=True)
        loss.backward()
        adam.step()
        sched.step()
    return model.eval()


@torch.no_grad()
def bits_per_char(model: CharMLP, texts: Sequence[str]) -> float:
    """Mean bits per character of ``texts`` under ``model`` (every character of
    every text)."""
    dev = model.head.weight.device
    total_nll, total_n = 0.0, 0
    for t in texts:
        x, y = windows(encode(t).to(dev), model.context)
        if y.numel() == 0:
            continue
        total_nll += nn.functional.cross_entropy(model(x), y, reduction="sum").item()
        total_n += y.numel()
    if total_n == 0:
        raise ValueError("texts hold no characters to score")
    return total_nll / total_n / math.log(2)


@torch.no_grad()
def continuation_logprob(
    model: CharMLP, prompt: str, options: Sequence[str]
) -> torch.Tensor:
    """(k,) total log-probability (nats) of each option's characters after
    ``prompt``."""
    dev = model.head.weight.device
    out = []
    if isinstance(prompt, str) is False or isinstance(options, str):
        raise TypeError("prompt must be a str and options a sequence of str")
    if len(options) == 0:
        raise ValueError(
            "options must be non-empty: a cloze item needs candidates to rank"
        )
    for o in options:
        if not isinstance(o, str) or not o:
            raise ValueError(f"each option must be a non-empty str, got {o!r}")
        x, y = windows(encode(prompt + o).to(dev), model.context)
        logp = torch.log_softmax(model(x), dim=-1).gather(1, y[:, None])[:, 0]
        out.append(logp[len(prompt) :].sum())
    return torch.stack(out)


def _check_items(items) -> None:
    if isinstance(items, (str, tuple)) or not len(items):
        raise ValueError(
            "items must be a non-empty list of (prompt, options, answer) tuples"
        )
    for i, it in enumerate(items):
        if len(it) != 3:
            raise ValueError(
                f"items[{i}] must be (prompt, options, answer), got {it!r}"
            )
        _, opts, a = it
        if (
            isinstance(a, bool)
            or not isinstance(a, (int, np.integer))
            or not 0 <= a < len(opts)
        ):
            raise ValueError(
                f"items[{i}]: answer must be an int index into its {len(opts)} "
                f"options, got {a!r}"
            )


def cloze_scores(
    model: CharMLP, items: Sequence[tuple[str, Sequence[str], int]]
) -> np.ndarray:
    """(n,) probability the model gives the right option of each (prompt, options,
    answer) item, renormalised over that item's options: softmax of the options' total
    log-probs. 1/k is chance for k options; a per-item score for paired tests between
    two models."""
    _check_items(items)
    out = [
        torch.softmax(continuation_logprob(model, p, opts), 0)[a].item()
        for p, opts, a in items
    ]
    return np.asarray(out, dtype=np.float64)


def cloze_accuracy(
    model: CharMLP, items: Sequence[tuple[str, Sequence[str], int]]
) -> float:
    """Fraction of (prompt, options, answer) items where the answer has the highest
    log-probability."""
    _check_items(items)
    hits = [
        int(continuation_logprob(model, p, opts).argmax()) == a for p, opts, a in items
    ]
    return float(np.mean(hits))


def paired_lower_bound(diff, z: float = 2.326) -> float:
    """One-sided lower confidence bound mean(diff) - z * sd(diff) / sqrt(n) of a mean
    paired difference (z = 2.326: 99 % under the normal approximation).
    Needs n >= 2 finite values."""
    d = np.asarray(diff, dtype=np.float64)
    if d.ndim != 1 or d.size < 2 or not np.isfinite(d).all():
        raise ValueError(
            f"diff must be a 1-d array of >= 2 finite values, got shape {d.shape}"
        )
    if not z > 0:
        raise ValueError(f"z must be positive, got {z}")
    return float(d.mean() - z * d.std(ddof=1) / np.sqrt(d.size))
