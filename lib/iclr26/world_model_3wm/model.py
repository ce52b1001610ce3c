"""The pointer-content GPT: one autoregressive model over nodes in any order.

A sequence is a permutation ``sigma`` of the nodes. Step ``k`` reads the previous node's
value and pointer and the *next* pointer, and predicts the next value::

    input_k = tok(v_{sigma(k-1)}) + ptr_in(sigma(k-1)) + ptr_out(sigma(k))
    logits_k -> Pr[v_{sigma(k)} | v_{sigma(0)}, ..., v_{sigma(k-1)}, sigma(0..k)]

(the merged pointer-content token: the same factorisation as explicit pointer tokens at
half the length; sigma-GPT's double positional encoding). Logits are restricted to the
value range of the queried node's type. Trained on uniformly random orders, the model
learns every conditional ``Pr[subset | other subset]``; a task is then an order: the
nodes it is given first, the nodes it wants after.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from .tokens import Layout


class Block(nn.Module):
    """Pre-norm transformer block with masked self-attention."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape  # mask: (B, 1, T, T) bool, True = may attend
        q, k, v = self.qkv(self.n1(x)).split(C, -1)
        q, k, v = (
            z.view(B, T, self.heads, C // self.heads).transpose(1, 2) for z in (q, k, v)
        )
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.n2(x))


def pointer_features(layout: Layout) -> torch.Tensor:
    """(n_nodes, 4 + 8): each pointer's node type (one-hot) and its patch's row and
    column as sines and cosines at two frequencies (zeros for the camera)."""
    N = layout.N
    n = int(round(N**0.5))
    out = torch.zeros(layout.n_nodes, 12)
    r, c = torch.arange(N) // n, torch.arange(N) % n
    ang = [math.pi * (r + 0.5) / n, math.pi * (c + 0.5) / n]
    enc = torch.stack(
        [f(k * a) for a in ang for k in (1, 2) for f in (torch.sin, torch.cos)], 1
    )
    for t, base in enumerate((0, N, 2 * N)):
        out[base : base + N, t] = 1
        out[base : base + N, 4:] = enc
    out[3 * N, 3] = 1
    return out


class PointerContentGPT(nn.Module):
    """GPT over (pointer, value) nodes in an arbitrary order.

    ``layout``: the node layout (:class:`~.tokens.Layout`); ``d``: width; ``L``: layers.
    ``value_features``: optional (vocab, F) table of what each value *is* (an RGB code's
    decoded pixels, a flow or camera bin's centre); a value's input embedding is then a
    learned vector plus a linear map of its features, so the model sees the content of a
    code instead of an arbitrary index.
    """

    def __init__(
        self,
        layout: Layout,
        d: int = 96,
        L: int = 3,
        heads: int = 4,
        value_features: torch.Tensor | None = None,
    ):
        super().__init__()
        if d % heads:
            raise ValueError(f"d = {d} must be a multiple of heads = {heads}")
        self.layout = layout
        P, V = layout.n_nodes, layout.vocab
        self.tok = nn.Embedding(V + 1, d)  # + BOS
        if value_features is not None:
            if value_features.ndim != 2 or value_features.shape[0] != V:
                raise ValueError(
                    f"value_features must be (vocab = {V}, F), got "
                    f"{tuple(value_features.shape)}"
                )
            feats = torch.cat(
                [value_features, value_features.new_zeros(1, value_features.shape[1])]
            )
            self.register_buffer("feats", feats.float(), persistent=False)
            self.feat_proj = nn.Linear(feats.shape[1], d, bias=False)
        else:
            self.feats = None
        self.ptr_in = nn.Embedding(P + 1, d)  # + BOS pointer
        self.ptr_out = nn.Embedding(P, d)
        # where each pointer is: its node type and its patch's row and column, so that
        # "the patch left of this one" need not be learned from scratch
        pf = pointer_features(layout)
        self.register_buffer("pfeats", torch.cat([pf, pf.new_zeros(1, pf.shape[1])]))
        self.pin_proj = nn.Linear(pf.shape[1], d, bias=False)
        self.pout_proj = nn.Linear(pf.shape[1], d, bias=False)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(L))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, V)
        rng = layout.value_range()
        allowed = torch.arange(V)[None] >= rng[:, :1]
        allowed &= torch.arange(V)[None] < rng[:, 1:]
        self.register_buffer("allowed", allowed, persistent=False)  # (P, V)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)

    def forward(
        self,
        values: torch.Tensor,
        order: torch.Tensor,
        valid: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits for every step.

        values: (B, T) the values of the nodes in visiting order; order: (B, T) their
        pointers; valid: (B, T) bool, False for padding (ignored as keys). Returns
        (B, T, V): step k's logits for the value of node ``order[:, k]``, given
        ``values[:, :k]``; values outside the node type's range are -inf.
        """
        B, T = values.shape
        lay = self.layout
        if valid is not None:  # padding reads as BOS, so it carries no information
            values = torch.where(valid, values, torch.full_like(values, lay.vocab))
        bos_v = torch.full((B, 1), lay.vocab, dtype=torch.long, device=values.device)
        bos_p = torch.full((B, 1), lay.n_nodes, dtype=torch.long, device=values.device)
        prev_v = torch.cat([bos_v, values[:, :-1]], 1)
        src_p = order if valid is None else torch.where(valid, order, bos_p)
        prev_p = torch.cat([bos_p, src_p[:, :-1]], 1)
        x = self.tok(prev_v) + self.ptr_in(prev_p) + self.ptr_out(order)
        x = x + self.pin_proj(self.pfeats[prev_p]) + self.pout_proj(self.pfeats[order])
        if self.feats is not None:
            x = x + self.feat_proj(self.feats[prev_v])
        mask = torch.ones(T, T, dtype=torch.bool, device=values.device).tril()
        mask = mask[None, None].expand(B, 1, T, T)
        if valid is not None:
            # a step attends to itself and to earlier valid steps (BOS rides on step 0)
            mask = mask & valid[:, None, None, :]
            mask = mask | torch.eye(T, dtype=torch.bool, device=values.device)
        for blk in self.blocks:
            x = blk(x, mask)
        logits = self.head(self.norm(x))
        return logits.masked_fill(~self.allowed[order], -math.inf)

    def loss(self, values: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of every node given the ones before it in ``order``.

        values: (B, n_nodes) in pointer order; order: (B, n_nodes) a permutation of
        pointers per row. Returns a scalar.
        """
        v = values.gather(1, order)
        logits = self.forward(v, order)
        return F.cross_entropy(logits.flatten(0, 1), v.flatten())

    @torch.no_grad()
    def generate(
        self,
        values: torch.Tensor,
        cond: torch.Tensor,
        query: torch.Tensor,
        temperature: float = 0.0,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Fill the ``query`` nodes given the ``cond`` nodes.

        values: (B, n_nodes) in pointer order (only conditioning entries are read);
        cond: (B, n_nodes) bool, the given nodes; query: (Q,) pointers to generate, in
        that order (shared by the batch; none may be given). Conditioning nodes come
        first in the sequence (in pointer order, left-padded where rows give different
        numbers), then the queries one by one. ``temperature = 0`` is greedy.
        Returns a copy of ``values`` with the queries filled; given nodes are untouched.
        """
        B, P = values.shape
        if cond.shape != (B, P) or cond.dtype != torch.bool:
            raise ValueError(f"cond must be a bool tensor of shape {(B, P)}")
        if (cond[:, query]).any():
            raise ValueError("a queried node is also given")
        n_c = int(cond.sum(1).max())
        # left-pad: sort so that given nodes are last among the first n_c positions
        key = cond.long() * (P + torch.arange(P, device=values.device)) - (~cond).long()
        first = key.argsort(1)[:, P - n_c :]  # (B, n_c), padding first
        valid = cond.gather(1, first)
        out = values.clone()
        order = torch.cat([first, query[None].expand(B, -1)], 1)
        seq = torch.cat([values.gather(1, first), values.new_zeros(B, len(query))], 1)
        ok = torch.cat([valid, valid.new_ones(B, len(query))], 1)
        for i, p in enumerate(query.tolist()):
            k = n_c + i
            logits = self.forward(seq[:, : k + 1], order[:, : k + 1], ok[:, : k + 1])
            lg = logits[:, k]
            if temperature > 0:
                probs = torch.softmax(lg / temperature, -1)
                v = torch.multinomial(probs, 1, generator=generator)[:, 0]
            else:
                v = lg.argmax(-1)
            seq[:, k] = v
            out[:, p] = v
        return out


def random_orders(B: int, P: int, g: torch.Generator) -> torch.Tensor:
    """(B, P): a uniformly random permutation of ``range(P)`` per row."""
    return torch.rand(B, P, generator=g).argsort(1)


def group_orders(B: int, groups: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """(B, P): traversals that visit node groups (``groups``: (P,) group id of each
    pointer) in a random order of the groups, and each group's nodes in random order.
    """
    G = int(groups.max()) + 1
    rank = torch.rand(B, G, generator=g).argsort(1).argsort(1)  # group -> its slot
    key = rank[:, groups] + torch.rand(B, groups.numel(), generator=g)
    return key.argsort(1)


def raster_orders(B: int, P: int) -> torch.Tensor:
    """(B, P): the fixed order 0, 1, ..., P - 1 in every row (the ablation)."""
    return torch.arange(P)[None].expand(B, P)


def train(
    model: PointerContentGPT,
    tokens: torch.Tensor,
    steps: int,
    batch: int = 32,
    lr: float = 2e-3,
    seed: int = 0,
    order: str = "random",
    callback=None,
) -> list[float]:
    """Train on ``tokens`` (n, n_nodes) in random orders with AdamW, linear warm-up
    then cosine decay. ``order``: ``"random"`` (uniform permutations), ``"mixed"``
    (half of each batch group by group, see :func:`group_orders`) or ``"raster"``
    (the fixed order, an ablation). Returns the loss per step."""
    losses = []
    for step, loss in enumerate(
        train_steps(model, tokens, steps, batch, lr, seed, order)
    ):
        losses.append(loss)
        if callback is not None:
            callback(step)
    return losses


def train_steps(
    model: PointerContentGPT,
    tokens: torch.Tensor,
    steps: int,
    batch: int = 32,
    lr: float = 2e-3,
    seed: int = 0,
    order: str = "random",
) -> Iterator[float]:
    """:func:`train` one step at a time: each ``next()`` takes one step and yields its
    loss, so that a notebook can spread a long training over several cells."""
    if order not in ("random", "raster", "mixed"):
        raise ValueError(f"order must be 'random', 'raster' or 'mixed', got {order!r}")
    return _steps(model, tokens, steps, batch, lr, seed, order)


def _steps(model, tokens, steps, batch, lr, seed, order) -> Iterator[float]:
    lay = model.layout
    groups = torch.zeros(lay.n_nodes, dtype=torch.long)
    groups[lay.flow()], groups[lay.rgb1()], groups[lay.cam()] = 1, 2, 3
    g = torch.Generator().manual_seed(seed)
    dev = next(model.parameters()).device
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: (
            min(1.0, (s + 1) / warm)
            * 0.5
            * (1 + math.cos(math.pi * min(s, steps) / steps))
        ),
    )
    n, P = tokens.shape
    for _ in range(steps):
        idx = torch.randint(n, (batch,), generator=g)
        if order == "random":
            o = random_orders(batch, P, g)
        elif order == "mixed":  # half fully random, half group by group
            o = random_orders(batch, P, g)
            half = torch.rand(batch, generator=g) < 0.5
            o[half] = group_orders(int(half.sum()), groups, g)
        else:
            o = raster_orders(batch, P)
        loss = model.loss(tokens[idx].to(dev), o.to(dev))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        yield loss.item()
