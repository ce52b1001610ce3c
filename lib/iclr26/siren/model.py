"""SIREN's model side: prompts as token ids, a tiny decoder-only transformer standing in
for the LLM, answer-only training, explicit reasoning trained by GRPO with rule-based
rewards, and hidden alignment that internalises the reasoning.

Token layout of a sketch prompt (fixed length 2L + 6, the sketch padded to its bound):
    <bos> <like> t t t <dislike> t t t <sep> <ans> c          (answer-only)
    <bos> <like> t t t <dislike> t t t <sep> <cot> c T S R    (explicit reasoning)
where c is the candidate item's topic token (the encoder's cluster of its description),
T a topic token, S a stance (like / dislike / neutral) and R the rating; the model emits
R (answer-only) or T S R (reasoning) after c. A truncated-history prompt replaces the
sketch by the last K items, each as its topic token and its rating token.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..grpo import grpo_advantages, grpo_loss
from ..validate import as_int
from .data import Sketch

SPECIALS = (
    "<pad>",
    "<bos>",
    "<sep>",
    "<like>",
    "<dislike>",
    "<ans>",
    "<cot>",
    "<s:like>",
    "<s:dislike>",
    "<s:neutral>",
    "<r1>",
    "<r2>",
    "<r3>",
    "<r4>",
    "<r5>",
)
PAD, BOS, SEP, LIKE, DISLIKE, ANS, COT = range(7)
STANCE0, RATING0, TOPIC0 = 7, 10, len(SPECIALS)
S_LIKE, S_DISLIKE, S_NEUTRAL = 0, 1, 2


@dataclass(frozen=True)
class Vocab:
    """Token ids: the specials, then ``n_topic_slots`` topic tokens, then
    ``n_words`` words."""

    n_topic_slots: int
    n_words: int

    @property
    def word0(self) -> int:
        return TOPIC0 + self.n_topic_slots

    @property
    def size(self) -> int:
        return self.word0 + self.n_words


def _long(x, name: str) -> torch.Tensor:
    if not isinstance(x, (np.ndarray, torch.Tensor)):
        raise TypeError(
            f"{name} must be an integer array or tensor, got {type(x).__name__}"
        )
    t = torch.as_tensor(x)
    if t.is_floating_point() or t.dtype == torch.bool:
        raise TypeError(f"{name} must hold integers, got dtype {t.dtype}")
    return t.long()


# ------------------------------------------------------------------------ prompts
def sketch_prompts(
    sketches: list[Sketch], cand_topic, vocab: Vocab, L: int, end: int = ANS
) -> torch.Tensor:
    """(N, 2L + 6) prompts: the sketch (padded to its bound of 2L + 2 tokens), <sep>,
    the candidate's topic token (its cluster under the item encoder), then ``end``:
    ``ANS`` (answer-only) or ``COT`` (reason first)."""
    cand = _long(cand_topic, "cand_topic")
    if cand.ndim != 1 or len(sketches) != len(cand):
        raise ValueError(
            f"need one sketch per candidate, got {len(sketches)} sketches "
            f"and cand_topic of shape {tuple(cand.shape)}"
        )
    if end not in (ANS, COT):
        raise ValueError("end must be ANS or COT")
    L = as_int(L, "L", lo=0)
    _check_topics(cand, vocab)
    head = torch.full((len(cand), 2 * L + 3), PAD, dtype=torch.long)
    head[:, 0], head[:, 1], head[:, L + 2] = BOS, LIKE, DISLIKE
    for i, s in enumerate(sketches):
        if len(s.liked) > L or len(s.disliked) > L:
            raise ValueError(f"sketch {i} has more than L={L} topics on one side")
        if any(t >= vocab.n_topic_slots for t in s.liked + s.disliked):
            raise ValueError(f"sketch {i} names a topic >= n_topic_slots")
        head[i, 2 : 2 + len(s.liked)] = TOPIC0 + torch.tensor(s.liked, dtype=torch.long)
        head[i, L + 3 : L + 3 + len(s.disliked)] = TOPIC0 + torch.tensor(
            s.disliked, dtype=torch.long
        )
    col = lambda tok: torch.full((len(cand), 1), tok, dtype=torch.long)
    return torch.cat([head, col(SEP), col(end), TOPIC0 + cand[:, None]], dim=1)


def _check_topics(t: torch.Tensor, vocab: Vocab) -> None:
    if t.numel() and (t.min() < 0 or t.max() >= vocab.n_topic_slots):
        raise ValueError(f"topic ids must lie in [0, {vocab.n_topic_slots})")


def history_prompts(
    hist_topics, hist_ratings, cand_topic, vocab: Vocab
) -> torch.Tensor:
    """Truncated-history prompts: the last K items, each its topic token then its rating
    token, then <sep>, the candidate's topic and <ans>. hist_topics, hist_ratings
    (N, K), cand_topic (N,). Returns (N, 2K + 4)."""
    ht, hr, cand = (
        _long(hist_topics, "hist_topics"),
        _long(hist_ratings, "hist_ratings"),
        _long(cand_topic, "cand_topic"),
    )
    if ht.ndim != 2 or hr.shape != ht.shape or cand.shape != ht.shape[:1]:
        raise ValueError(
            f"shapes must be (N, K), (N, K), (N,); got {tuple(ht.shape)}, "
            f"{tuple(hr.shape)}, {tuple(cand.shape)}"
        )
    if hr.numel() and (hr.min() < 1 or hr.max() > 5):
        raise ValueError("hist_ratings must lie in 1..5")
    _check_topics(ht, vocab)
    _check_topics(cand, vocab)
    n = len(ht)
    items = torch.stack([TOPIC0 + ht, RATING0 - 1 + hr], dim=2).reshape(n, -1)
    col = lambda tok: torch.full((n, 1), tok, dtype=torch.long)
    return torch.cat(
        [col(BOS), items, col(SEP), col(ANS), TOPIC0 + cand[:, None]], dim=1
    )


def count_tokens(prompts: torch.Tensor) -> torch.Tensor:
    """Input tokens each prompt really spends: its non-padding tokens.
    (N, T) -> (N,)."""
    p = _long(prompts, "prompts")
    if p.ndim != 2:
        raise ValueError(f"prompts must be (N, T), got {tuple(p.shape)}")
    return (p != PAD).sum(1)


# ------------------------------------------------------------------------ the "LLM"
class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (
            self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        )
        a = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class TinyRecTransformer(nn.Module):
    """A small decoder-only (causal, pre-LN) transformer, trained from scratch: the
    chapter's analogue of the paper's LLM. forward(x (B, T) long) -> (logits (B, T, V),
    hidden (B, T, d)) where hidden is the final layer's normalised state that the output
    head reads."""

    def __init__(
        self,
        vocab_size: int,
        d: int = 64,
        layers: int = 2,
        heads: int = 4,
        max_len: int = 512,
    ):
        super().__init__()
        vocab_size, d, layers, heads = (
            as_int(vocab_size, "vocab_size", lo=2),
            as_int(d, "d", lo=1),
            as_int(layers, "layers", lo=1),
            as_int(heads, "heads", lo=1),
        )
        if d % heads:
            raise ValueError(f"d ({d}) must be divisible by heads ({heads})")
        self.tok, self.pos = nn.Embedding(vocab_size, d), nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab_size)
        self.max_len = max_len

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = _long(x, "x").to(self.tok.weight.device)
        if x.ndim != 2 or x.shape[1] > self.max_len:
            raise ValueError(
                f"x must be (B, T) with T <= {self.max_len}, got {tuple(x.shape)}"
            )
        if x.numel() and (x.min() < 0 or x.max() >= self.tok.num_embeddings):
            raise ValueError(f"token ids must lie in [0, {self.tok.num_embeddings})")
        h = self.tok(x) + self.pos(torch.arange(x.shape[1], device=x.device))
        for blk in self.blocks:
            h = blk(h)
        h = self.ln(h)
        return self.head(h), h


def rating_logits(logits: torch.Tensor) -> torch.Tensor:
    """The five rating tokens' logits at the last position: (B, T, V) -> (B, 5)."""
    return logits[:, -1, RATING0 : RATING0 + 5]


# ------------------------------------------------------------------------ answer-only
def alignment_loss(
    r_logits: torch.Tensor,
    target: torch.Tensor,
    h_student: torch.Tensor,
    h_teacher: torch.Tensor | None,
    lam: float,
) -> torch.Tensor:
    """Hidden alignment: CE(rating) + lam * mean_j (h_s - sg(h_t))_j^2.

    r_logits (B, 5); target (B,) ratings 1..5; h_student, h_teacher (B, d): the
    answer-only pass's final hidden state at its answer position and the (frozen)
    reasoning pass's at the position where it emits the rating.
    lam = 0 is plain cross-entropy.
    """
    if (
        r_logits.ndim != 2
        or r_logits.shape[1] != 5
        or target.shape != r_logits.shape[:1]
    ):
        raise ValueError(
            f"r_logits must be (B, 5) and target (B,), got "
            f"{tuple(r_logits.shape)}, {tuple(target.shape)}"
        )
    if isinstance(lam, bool) or not isinstance(lam, (int, float)):
        raise TypeError(f"lam must be a float, got {type(lam).__name__}")
    if not math.isfinite(lam) or lam < 0:
        raise ValueError(f"lam must be a finite float >= 0, got {lam}")
    _check_ratings(target, "target")
    loss = F.cross_entropy(r_logits, target.long() - 1)
    if lam > 0:
        if h_teacher is None or h_teacher.shape != h_student.shape:
            raise ValueError("lam > 0 needs h_teacher of the same shape as h_student")
        loss = loss + lam * (h_student - h_teacher.detach()).pow(2).mean()
    return loss


def _check_ratings(y: torch.Tensor, name: str) -> None:
    if y.numel() and (y.min() < 1 or y.max() > 5):
        raise ValueError(
            f"{name} must be ratings in 1..5, got range "
            f"[{y.min().item()}, {y.max().item()}]"
        )


def _steps_lr(steps, lr, batch):
    steps, batch = as_int(steps, "steps", lo=0), as_int(batch, "batch", lo=1)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not 0 < lr < 1:
        raise ValueError(f"lr must be a float in (0, 1), got {lr!r}")
    return steps, float(lr), batch


def train_answer(
    model: TinyRecTransformer,
    prompts: torch.Tensor,
    ratings: torch.Tensor,
    steps: int,
    lr: float,
    batch: int = 128,
    seed: int = 0,
    h_teacher: torch.Tensor | None = None,
    lam: float = 0.0,
) -> list[float]:
    """Train the answer-only form: prompts (N, T) ending in <ans>, ratings (N,) in 1..5.
    With ``h_teacher`` (N, d) and lam > 0, add hidden alignment.
    Returns the loss curve."""
    steps, lr, batch = _steps_lr(steps, lr, batch)
    dev = model.tok.weight.device
    prompts, ratings = (
        _long(prompts, "prompts").to(dev),
        _long(ratings, "ratings").to(dev),
    )
    if prompts.ndim != 2 or ratings.shape != prompts.shape[:1] or not len(prompts):
        raise ValueError("prompts must be (N, T) and ratings (N,), N >= 1")
    _check_ratings(ratings, "ratings")
    if h_teacher is not None:
        h_teacher = h_teacher.to(dev)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    curve = []
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, len(prompts), (batch,), generator=g).to(dev)
        logits, h = model(prompts[idx])
        ht = None if h_teacher is None else h_teacher[idx]
        loss = alignment_loss(rating_logits(logits), ratings[idx], h[:, -1], ht, lam)
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(loss.item())
    return curve


@torch.no_grad()
def predict_answer(
    model: TinyRecTransformer, prompts: torch.Tensor, batch: int = 1024
) -> torch.Tensor:
    """Greedy answer-only decoding: ONE generated token per prompt.
    (N, T) -> (N,) 1..5."""
    if _long(prompts, "prompts").ndim != 2 or not len(prompts):
        raise ValueError(
            f"prompts must be a non-empty (N, T) tensor, got shape "
            f"{tuple(prompts.shape)}"
        )
    model.eval()
    out = [
        rating_logits(model(prompts[i : i + batch])[0]).argmax(1) + 1
        for i in range(0, len(prompts), batch)
    ]
    return torch.cat(out).cpu()


# ------------------------------------------------------------------- explicit reasoning
def _step_mask(logits: torch.Tensor, step: int, k: int) -> torch.Tensor:
    """Constrained decoding: step 0 may only emit one of the k topic tokens, step 1 a
    stance, step 2 a rating (the format is enforced, its content is learnt)."""
    lo, hi = [(TOPIC0, TOPIC0 + k), (STANCE0, STANCE0 + 3), (RATING0, RATING0 + 5)][
        step
    ]
    masked = torch.full_like(logits, float("-inf"))
    masked[..., lo:hi] = logits[..., lo:hi]
    return masked


def generate_cot(
    model: TinyRecTransformer,
    prompts: torch.Tensor,
    k: int,
    greedy: bool = True,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Decode the three reasoning tokens (topic, stance, rating) after each <cot>
    prompt: THREE generated tokens and three forward passes per prompt.
    Returns (N, 3) token ids: the tokens appended to the prompts.
    k: the number of topics, 1 <= k <= topic slots."""
    seq = _long(prompts, "prompts").to(model.tok.weight.device)
    k = as_int(k, "k", lo=1)
    if TOPIC0 + k > model.tok.num_embeddings:
        raise ValueError(
            f"k={k} topics do not fit the model's vocabulary of "
            f"{model.tok.num_embeddings} tokens ({TOPIC0} specials first)"
        )
    if seq.ndim != 2 or not len(seq):
        raise ValueError(
            f"prompts must be a non-empty (N, T) tensor, got shape {tuple(seq.shape)}"
        )
    t0 = seq.shape[1]
    with torch.no_grad():
        for step in range(3):
            logits = _step_mask(model(seq)[0][:, -1], step, k)
            if greedy:
                nxt = logits.argmax(-1)
            else:
                probs = logits.softmax(-1).cpu()
                nxt = torch.multinomial(probs, 1, generator=generator)[:, 0].to(
                    seq.device
                )
            seq = torch.cat([seq, nxt[:, None]], dim=1)
    return seq[:, t0:]


def cot_logprob(
    model: TinyRecTransformer, prompts: torch.Tensor, cot: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum of the constrained log-probabilities of the three reasoning tokens, (N,), and
    the final hidden state at the position that emits the rating, (N, d)."""
    seq = torch.cat([prompts, cot], dim=1)
    logits, h = model(seq[:, :-1])
    t0 = prompts.shape[1] - 1
    lp = 0
    for step in range(3):
        logp = _step_mask(logits[:, t0 + step], step, k).log_softmax(-1)
        lp = lp + logp.gather(1, cot[:, step : step + 1])[:, 0]
    return lp, h[:, t0 + 2]


def sketch_stance(sketches: list[Sketch], k: int) -> torch.Tensor:
    """(N, k): the stance each sketch states for each topic (like / dislike /
    neutral)."""
    k = as_int(k, "k", lo=1)
    table = torch.full((len(sketches), k), S_NEUTRAL, dtype=torch.long)
    for i, s in enumerate(sketches):
        if any(not 0 <= t < k for t in s.liked + s.disliked):
            raise ValueError(f"sketch {i} names a topic outside [0, {k})")
        table[i, list(s.liked)] = S_LIKE
        table[i, list(s.disliked)] = S_DISLIKE
    return table


def cot_reward(
    cot: torch.Tensor,
    y: torch.Tensor,
    cand_topic: torch.Tensor,
    stance_table: torch.Tensor,
    w_rule: float = 0.5,
) -> torch.Tensor:
    """The rule-based reward of a reasoning chain, no ground-truth chain needed:

        R = 1 - |y_hat - y| / 4                      (rating accuracy, in [0, 1])
          + w_rule * [T = topic of the candidate]    (the encoder's cluster of its text)
          + w_rule * [S = stance the sketch states for T]

    cot (N, 3) token ids; y (N,) 1..5; cand_topic (N,); stance_table (N, k).
    Returns (N,).
    """
    cot = _long(cot, "cot")
    if cot.ndim != 2 or cot.shape[1] != 3 or y.shape != cot.shape[:1]:
        raise ValueError("cot must be (N, 3) and y (N,)")
    topic, stance, rating = (
        cot[:, 0] - TOPIC0,
        cot[:, 1] - STANCE0,
        cot[:, 2] - RATING0 + 1,
    )
    if ((topic < 0) | (topic >= stance_table.shape[1])).any() or (
        (stance < 0) | (stance > 2)
    ).any():
        raise ValueError("cot tokens are out of format (topic, stance, rating)")
    said = stance_table.gather(1, topic.clamp(0, stance_table.shape[1] - 1)[:, None])[
        :, 0
    ]
    return (
        1
        - (rating - y).abs().float() / 4
        + w_rule * (topic == cand_topic).float()
        + w_rule * (stance == said).float()
    )


def rule_chains(
    cand_topic: torch.Tensor, stance_table: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """The chain the reward's rules spell out: (the candidate's topic, the stance the
    sketch states for it, the observed rating), as (N, 3) token ids.
    Used only for the SFT warm-up of stage (i); GRPO then optimises the
    reward itself."""
    ct, y = _long(cand_topic, "cand_topic"), _long(y, "y")
    if ct.ndim != 1 or y.shape != ct.shape or stance_table.shape[0] != len(ct):
        raise ValueError("cand_topic and y must be (N,), stance_table (N, k)")
    said = stance_table.gather(1, ct[:, None])[:, 0]
    return torch.stack([TOPIC0 + ct, STANCE0 + said, RATING0 - 1 + y], dim=1)


def train_cot_sft(
    model: TinyRecTransformer,
    prompts: torch.Tensor,
    chains: torch.Tensor,
    k: int,
    steps: int,
    lr: float,
    batch: int = 64,
    seed: int = 0,
) -> list[float]:
    """Warm-up of stage (i): maximise the constrained log-likelihood of ``chains``
    (N, 3) after ``prompts`` (N, T) ending in <cot>. Returns the loss curve."""
    steps, lr, batch = _steps_lr(steps, lr, batch)
    dev = model.tok.weight.device
    prompts, chains = _long(prompts, "prompts").to(dev), _long(chains, "chains").to(dev)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    curve = []
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, len(prompts), (batch,), generator=g).to(dev)
        loss = -cot_logprob(model, prompts[idx], chains[idx], k)[0].mean() / 3
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(loss.item())
    return curve


def train_cot_grpo(
    model: TinyRecTransformer,
    prompts: torch.Tensor,
    y: torch.Tensor,
    cand_topic: torch.Tensor,
    stance_table: torch.Tensor,
    k: int,
    steps: int,
    lr: float,
    batch: int = 32,
    group: int = 8,
    seed: int = 0,
    w_rule: float = 0.5,
) -> list[float]:
    """Stage (i): GRPO on explicit reasoning. For each of ``batch`` prompts draw
    ``group`` chains, reward them by :func:`cot_reward`, and ascend sum_ij A_ij log
    pi(chain_ij) with A the group-normalised advantage (one on-policy step per batch, so
    the PPO ratio is 1 and needs no clipping). Returns the mean reward per step."""
    steps, lr, batch = _steps_lr(steps, lr, batch)
    group = as_int(group, "group", lo=2)
    k = as_int(k, "k", lo=1)
    dev = model.tok.weight.device
    prompts = _long(prompts, "prompts").to(dev)
    y, cand_topic = _long(y, "y"), _long(cand_topic, "cand_topic")
    stance_table = _long(stance_table, "stance_table")
    n = len(prompts)
    if prompts.ndim != 2 or y.shape != (n,) or cand_topic.shape != (n,):
        raise ValueError(
            f"prompts must be (N, T) and y, cand_topic (N,), got {tuple(prompts.shape)}"
            f", {tuple(y.shape)}, {tuple(cand_topic.shape)}"
        )
    if stance_table.shape != (n, k):
        raise ValueError(
            f"stance_table must be (N, k) = ({n}, {k}), got {tuple(stance_table.shape)}"
        )
    _check_ratings(y, "y")
    y, cand_topic, stance_table = y.to(dev), cand_topic.to(dev), stance_table.to(dev)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    curve = []
    for _ in range(steps):
        idx = (
            torch.randint(0, len(prompts), (batch,), generator=g)
            .to(dev)
            .repeat_interleave(group)
        )
        model.eval()
        cot = generate_cot(model, prompts[idx], k, greedy=False, generator=g)
        r = cot_reward(cot, y[idx], cand_topic[idx], stance_table[idx], w_rule)
        adv = grpo_advantages(r.view(batch, group).cpu()).view(-1).to(dev)
        model.train()
        lp, _ = cot_logprob(model, prompts[idx], cot, k)
        loss = grpo_loss(lp, adv)  # one on-policy step: -mean(A * grad log pi)
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(r.mean().item())
    return curve


@torch.no_grad()
def teacher_states(
    model: TinyRecTransformer, prompts: torch.Tensor, k: int, batch: int = 1024
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reasoning model's greedy chains (N, 3) and its final hidden state where it
    emits the rating (N, d): the alignment targets for stage (ii)."""
    model.eval()
    cots, hs = [], []
    for i in range(0, len(prompts), batch):
        p = prompts[i : i + batch].to(model.tok.weight.device)
        c = generate_cot(model, p, k)
        hs.append(cot_logprob(model, p, c, k)[1])
        cots.append(c)
    return torch.cat(cots).cpu(), torch.cat(hs).cpu()


def cot_ratings(cots: torch.Tensor) -> torch.Tensor:
    """The rating a chain ends with, (N, 3) -> (N,) in 1..5."""
    return cots[:, 2] - RATING0 + 1


# ------------------------------------------------------------------------ cost
@torch.no_grad()
def generate_tokens(
    model: TinyRecTransformer, prompts: torch.Tensor, n_tokens: int
) -> torch.Tensor:
    """Greedy, unconstrained decoding of ``n_tokens`` tokens after each prompt, without
    a KV cache (each token is a forward pass over the whole prefix): a chain of thought
    of that length, as far as its cost goes. Returns the (N, n_tokens) appended
    tokens."""
    seq = _long(prompts, "prompts").to(model.tok.weight.device)
    n_tokens = as_int(n_tokens, "n_tokens", lo=1)
    if seq.ndim != 2 or not len(seq) or seq.shape[1] + n_tokens > model.max_len:
        raise ValueError(
            f"prompts must be a non-empty (N, T) tensor with T + n_tokens <= "
            f"{model.max_len}, got shape {tuple(seq.shape)} and n_tokens={n_tokens}"
        )
    t0 = seq.shape[1]
    model.eval()
    for _ in range(n_tokens):
        nxt = model(seq)[0][:, -1].argmax(-1)
        seq = torch.cat([seq, nxt[:, None]], dim=1)
    return seq[:, t0:]


@torch.no_grad()
def measure_latency(
    model: TinyRecTransformer,
    prompts: torch.Tensor,
    mode: str,
    k: int,
    repeats: int = 1,
    n_tokens: int | None = None,
) -> dict:
    """Seconds per prediction at batch 1, and the generated tokens / forward passes each
    prediction costs, as COUNTED while decoding (tokens returned per prompt; calls of
    the model's forward, by a hook). mode: "answer" (one rating token), "cot" (the
    3-token chain, no KV cache) or "long" (``n_tokens`` tokens of unconstrained greedy
    decoding, no KV cache: a chain of thought of that length, :func:`generate_tokens`).
    """
    if mode not in ("answer", "cot", "long"):
        raise ValueError(f"mode must be 'answer', 'cot' or 'long', got {mode!r}")
    if (mode == "long") != (n_tokens is not None):
        raise ValueError("give n_tokens with mode='long', and only then")
    if _long(prompts, "prompts").ndim != 2 or not len(prompts):
        raise ValueError(
            f"prompts must be a non-empty (N, T) tensor, got shape "
            f"{tuple(prompts.shape)}"
        )
    repeats = as_int(repeats, "repeats", lo=1)
    calls = [0]
    hook = model.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    model.eval()
    tokens = 0
    try:
        t0 = time.perf_counter()
        for _ in range(repeats):
            for i in range(len(prompts)):
                p = prompts[i : i + 1]
                if mode == "answer":
                    out = predict_answer(model, p)
                elif mode == "cot":
                    out = generate_cot(model, p, k)
                else:
                    out = generate_tokens(model, p, n_tokens)
                tokens += out.numel()  # (1,) rating or (1, n_gen) appended tokens
        dt = time.perf_counter() - t0
    finally:
        hook.remove()
    n = repeats * len(prompts)
    return {
        "seconds": dt / n,
        "generated_tokens": tokens / n,
        "forward_passes": calls[0] / n,
    }


def mae(pred: torch.Tensor, y: torch.Tensor) -> float:
    """Mean absolute rating error of pred against y: two tensors of one shape (N,), N >=
    1, finite (no broadcasting: a (N,) against (N, 1) would silently average
    N^2 pairs)."""
    if not (isinstance(pred, torch.Tensor) and isinstance(y, torch.Tensor)):
        raise TypeError(
            f"pred and y must be tensors, got {type(pred).__name__}, {type(y).__name__}"
        )
    if pred.shape != y.shape or pred.ndim != 1 or not len(pred):
        raise ValueError(
            f"pred and y must be non-empty 1-d tensors of one shape, got "
            f"{tuple(pred.shape)} and {tuple(y.shape)}"
        )
    if not (torch.isfinite(pred.float()).all() and torch.isfinite(y.float()).all()):
        raise ValueError("pred and y must be finite")
    return (pred.float() - y.float()).abs().mean().item()
