"""HGNet in miniature: hierarchy-aware message passing over a document's concepts, the
differentiable hierarchy loss (DHL: acyclicity + separation) and the continuum
abstraction field (CAF).

Shapes: B documents, N concepts (padded to the batch's largest), d width, F pair
features. A[b, u, v] is the probability that u is v's parent.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26.core import grade_exercise

from .corpus import Document, ngram_buckets

N_PAIR_FEATURES = 8


def _check_square(A, name: str = "A") -> None:
    if not isinstance(A, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(A).__name__}")
    if A.ndim not in (2, 3) or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"{name} must be (N, N) or (B, N, N), got {tuple(A.shape)}")
    if A.shape[-1] == 0:
        raise ValueError(f"{name} is empty")
    if not torch.isfinite(A).all():
        raise ValueError(f"{name} has NaN or infinite entries")


def acyclicity_loss(A: torch.Tensor) -> torch.Tensor:
    """NOTEARS' penalty tr(exp(A o A)) - N: zero iff the weighted graph has no cycle.

    A: (N, N) or (B, N, N) real. Returns a scalar, or (B,). tr(e^W) = sum_k tr(W^k)/k!,
    and tr(W^k) sums the weights of the closed walks of length k, so with W = A o A >= 0
    the excess over tr(W^0) = N is 0 exactly when no closed walk exists.
    """
    _check_square(A)
    W = A * A
    return torch.linalg.matrix_exp(W).diagonal(dim1=-2, dim2=-1).sum(-1) - A.shape[-1]


def acyclicity_grad(A: torch.Tensor) -> torch.Tensor:
    """Closed-form gradient of :func:`acyclicity_loss`: (exp(A o A))^T o 2A."""
    _check_square(A)
    return torch.linalg.matrix_exp(A * A).transpose(-1, -2) * 2 * A


def separation_loss(A: torch.Tensor) -> torch.Tensor:
    """sum_{u,w} (A^2)_{uw} A_{uw}: the weight of every direct edge u -> w times the
    weight of the two-step paths u -> v -> w beside it (a shortcut that skips a level).

    A: (N, N) or (B, N, N). Returns a scalar, or (B,).
    """
    _check_square(A)
    return ((A @ A) * A).sum((-1, -2))


def caf_loss(
    y: torch.Tensor,
    parents: torch.Tensor,
    children: torch.Tensor,
    roots: torch.Tensor,
    leaves: torch.Tensor,
    target: torch.Tensor | None = None,
    delta: float = 0.1,
    gamma1: float = 1.0,
    gamma2: float = 1.0,
) -> torch.Tensor:
    """The continuum abstraction field's loss on projections y = h . w_abs.

    y: (M,) projections of M concepts; parents, children: (E,) indices of E (parent,
    child) pairs; roots, leaves: index tensors; target: (M,) abstraction in [0, 1] (1 at
    the top) or None. Ranking max(0, y_c - y_p + delta) + gamma1 * anchors (roots -> 1,
    leaves -> 0) + gamma2 * (y - target)^2.
    """
    if not isinstance(y, torch.Tensor) or y.ndim != 1 or not torch.isfinite(y).all():
        raise ValueError("y must be a finite 1-d tensor of projections")
    rank = (
        F.relu(y[children] - y[parents] + delta).mean() if len(parents) else y.sum() * 0
    )
    anchor = torch.cat([(y[roots] - 1) ** 2, y[leaves] ** 2]).mean()
    loss = rank + gamma1 * anchor
    if target is not None:
        loss = loss + gamma2 * ((y - target) ** 2).mean()
    return loss


# ------------------------------------------------------------------------------
# documents as tensors
# ------------------------------------------------------------------------------
def _ends_with(a: tuple, b: tuple) -> bool:
    return len(a) > len(b) and a[-len(b) :] == b


def pair_features(doc: Document) -> np.ndarray:
    """(N, N, 8) evidence for the ordered pair (u, v), from the sentences and the names:
    is-a statements u -> v and v -> u (counts), peer statements, depends-on u -> v and
    v -> u, whether v's name extends u's (u's name is its suffix) and the reverse, and
    (len v - len u) / 4 in words."""
    N = doc.n
    X = np.zeros((N, N, N_PAIR_FEATURES), dtype=np.float32)
    for u, v, r in doc.stated:
        if r == 0:
            X[u, v, 0] += 1
            X[v, u, 1] += 1
        elif r == 1:
            X[u, v, 2] += 1
        else:
            X[u, v, 3] += 1
            X[v, u, 4] += 1
    lens = np.array([len(n) for n in doc.names])
    for u in range(N):
        for v in range(N):
            X[u, v, 5] = _ends_with(doc.names[v], doc.names[u])
            X[u, v, 6] = _ends_with(doc.names[u], doc.names[v])
    X[..., 7] = (lens[None, :] - lens[:, None]) / 4
    X[..., :5] = np.log1p(X[..., :5])
    return X


def stated_labels(doc: Document) -> np.ndarray:
    """(N, N) pair labels as the sentences state them: 0 parent-of, 1 peer, 2 none
    (parent-of wins where a pair is stated both ways)."""
    Y = np.full((doc.n, doc.n), 2, dtype=np.int64)
    for u, v, r in doc.stated:
        if r == 1 and Y[u, v] == 2:
            Y[u, v] = 1
    for u, v, r in doc.stated:
        if r == 0:
            Y[u, v] = 0
    return Y


def batch_documents(docs: list[Document], n_buckets: int, max_grams: int = 48) -> dict:
    """Pad documents to a batch: grams (B, N, G) name n-gram buckets (n_buckets = pad),
    lens (B, N), X (B, N, N, 8), Y (B, N, N) stated labels (-1 off the real pairs),
    scaffold (B, N, N) 0/1, depth (B, N) (-1 at padding), mask (B, N) bool."""
    if not docs:
        raise ValueError("need at least one document")
    B, N = len(docs), max(d.n for d in docs)
    grams = np.full((B, N, max_grams), n_buckets, dtype=np.int64)
    lens = np.zeros((B, N), dtype=np.float32)
    X = np.zeros((B, N, N, N_PAIR_FEATURES), dtype=np.float32)
    Y = np.full((B, N, N), -1, dtype=np.int64)
    S = np.zeros((B, N, N), dtype=np.float32)
    depth = np.full((B, N), -1, dtype=np.int64)
    mask = np.zeros((B, N), dtype=bool)
    for b, d in enumerate(docs):
        n = d.n
        for i, name in enumerate(d.names):
            g = [x for w in name for x in ngram_buckets(w, n_buckets)][:max_grams]
            grams[b, i, : len(g)] = g
            lens[b, i] = len(name) / 4
        X[b, :n, :n] = pair_features(d)
        y = stated_labels(d)
        np.fill_diagonal(y, -1)
        Y[b, :n, :n] = y
        S[b, :n, :n] = d.adjacency()
        depth[b, :n] = d.depth
        mask[b, :n] = True
    t = torch.from_numpy
    return dict(
        grams=t(grams),
        lens=t(lens),
        X=t(X),
        Y=t(Y),
        scaffold=t(S),
        depth=t(depth),
        mask=t(mask),
    )


# ------------------------------------------------------------------------------
# the model
# ------------------------------------------------------------------------------
def _mlp(i, h, o):
    return nn.Sequential(nn.Linear(i, h), nn.GELU(), nn.Linear(h, o))


class HierarchyMessagePassing(nn.Module):
    """One round of hierarchy-aware message passing.

    h: (B, N, d); A: (B, N, N) soft parent-of; P: (B, N, N) soft peer. Messages from
    parents m_par(v) = sum_u A[u, v] W_up h_u, from children m_child(v) = sum_w A[v, w]
    W_down h_w, from peers m_peer(v) = sum_u P[u, v] W_peer h_u (each divided by 1 + its
    total weight), then h_v' = h_v + UpdateMLP[h_v || m_par || m_child || m_peer]."""

    def __init__(self, d: int):
        super().__init__()
        self.up, self.down, self.peer = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.update = _mlp(4 * d, 2 * d, d)

    def forward(self, h, A, P):
        def msg(W, lin):  # sum_u W[u, v] lin(h_u), normalised per receiver v
            return (W.transpose(-1, -2) @ lin(h)) / (1 + W.sum(-2)[..., None])

        m_par = msg(A, self.up)
        m_child = msg(A.transpose(-1, -2), self.down)
        m_peer = msg(P, self.peer)
        return h + self.update(torch.cat([h, m_par, m_child, m_peer], -1))


class HGNet(nn.Module):
    """Pair classifier -> message passing -> pair classifier, with a learnable
    abstraction axis ``w_abs``.

    forward(batch) -> (logits0, logits (B, N, N, 3) over {parent-of, peer, none}, h (B,
    N, d)). ``rounds=0`` gives the flat pair-MLP baseline (no message passing)."""

    def __init__(self, n_buckets: int = 4096, d: int = 32, rounds: int = 1):
        super().__init__()
        self.n_buckets = n_buckets
        self.emb = nn.Embedding(n_buckets + 1, d, padding_idx=n_buckets)
        self.node = _mlp(d + 1, 2 * d, d)
        self.pair0 = _mlp(2 * d + N_PAIR_FEATURES, 2 * d, 3)
        self.mp = nn.ModuleList(HierarchyMessagePassing(d) for _ in range(rounds))
        self.pair = _mlp(2 * d + N_PAIR_FEATURES, 2 * d, 3)
        self.w_abs = nn.Parameter(torch.randn(d) / d**0.5)

    def _pairs(self, mlp, h, X):
        N = h.shape[1]
        hu = h[:, :, None].expand(-1, -1, N, -1)
        hv = h[:, None, :].expand(-1, N, -1, -1)
        return mlp(torch.cat([hu, hv, X], -1))

    def forward(self, batch: dict):
        g, mask = batch["grams"], batch["mask"]
        cnt = (g != self.n_buckets).sum(-1, keepdim=True).clamp(min=1)
        e = self.emb(g).sum(-2) / cnt
        h = self.node(torch.cat([e, batch["lens"][..., None]], -1)) * mask[..., None]
        pm = (mask[:, :, None] & mask[:, None, :]).float()
        pm = pm * (1 - torch.eye(mask.shape[1], device=pm.device))
        lg0 = self._pairs(self.pair0, h, batch["X"])
        for layer in self.mp:
            P = lg0.softmax(-1) * pm[..., None]
            h = layer(h, P[..., 0], P[..., 1]) * mask[..., None]
        lg = self._pairs(self.pair, h, batch["X"]) if len(self.mp) else lg0
        return lg0, lg, h

    def abstraction(self, h: torch.Tensor) -> torch.Tensor:
        """y = h . w_abs / |w_abs|: (B, N)."""
        return h @ (self.w_abs / self.w_abs.norm())


def parent_probs(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Soft adjacency A (B, N, N) = P(parent-of), zero on the diagonal and padding."""
    pm = (mask[:, :, None] & mask[:, None, :]).float()
    pm = pm * (1 - torch.eye(mask.shape[1], device=pm.device))
    return logits.softmax(-1)[..., 0] * pm


def hgnet_loss(
    model: HGNet,
    batch: dict,
    lam_acyc: float = 1.0,
    lam_sep: float = 1.0,
    gamma: float = 1.0,
    delta: float = 0.1,
) -> tuple[torch.Tensor, dict]:
    """Per-document losses (each divided by the document's size N): cross-entropy on the
    stated pair labels (both pair classifiers), lam_acyc * (tr e^{A o A} - N) +
    lam_sep *
    separation on the final A, gamma * CAF on the scaffold's levels."""
    lg0, lg, h = model(batch)
    Y, mask = batch["Y"], batch["mask"]
    n = mask.sum(1).float()
    ce = (
        sum(
            F.cross_entropy(
                x.reshape(-1, 3), Y.reshape(-1), ignore_index=-1, reduction="sum"
            )
            for x in (lg0, lg)
        )
        / n.sum()
    )
    A = parent_probs(lg, mask)
    acyc = (acyclicity_loss(A) / n).mean()
    sep = (separation_loss(A) / n).mean()
    loss = ce + lam_acyc * acyc + lam_sep * sep
    caf = torch.zeros((), device=A.device)
    if gamma > 0:
        y = model.abstraction(h)[mask]
        depth = batch["depth"][mask].float()
        S = batch["scaffold"]
        b, p, c = S.nonzero(as_tuple=True)
        offs = torch.cumsum(mask.sum(1), 0) - mask.sum(
            1
        )  # flat index of each doc's node 0
        has_child = S.sum(-1)[mask] > 0
        D = batch["depth"].max().clamp(min=1).float()
        caf = caf_loss(
            y,
            offs[b] + p,
            offs[b] + c,
            (depth == 0).nonzero()[:, 0],
            (~has_child).nonzero()[:, 0],
            1 - depth / D,
            delta=delta,
        )
        loss = loss + gamma * caf
    return loss, {
        k: float(v.detach())
        for k, v in dict(ce=ce, acyc=acyc, sep=sep, caf=caf).items()
    }


def train_hgnet(
    model: HGNet,
    train: list[dict],
    steps: int,
    lr: float = 3e-3,
    seed: int = 0,
    **loss_kw,
) -> list[dict]:
    """Adam over batches of training documents (cycled in a seeded order)."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    hist = []
    for _ in range(steps):
        b = train[int(torch.randint(len(train), (1,), generator=g))]
        model.train()
        loss, parts = hgnet_loss(model, b, **loss_kw)
        opt.zero_grad()
        loss.backward()
        opt.step()
        hist.append(parts)
    return hist


# ------------------------------------------------------------------------------
# graph metrics (NumPy, per document)
# ------------------------------------------------------------------------------
def reachability(A: np.ndarray) -> np.ndarray:
    """(N, N) bool: a path of length >= 1 from u to v (boolean closure by squaring)."""
    R = np.asarray(A) > 0
    for _ in range(int(np.ceil(np.log2(max(len(R), 2)))) + 1):
        R = R | ((R.astype(np.int64) @ R.astype(np.int64)) > 0)
    return R


def has_cycle(A: np.ndarray) -> bool:
    """Whether the 0/1 graph A has a directed cycle (a node reaches itself)."""
    return bool(np.diag(reachability(A)).any())


def shortcut_edges(A: np.ndarray) -> np.ndarray:
    """(N, N) bool: edges u -> w that another path of length >= 2 also connects (the
    edges a transitive reduction removes, on a DAG)."""
    E = np.asarray(A) > 0
    R = reachability(E)
    two = (E.astype(np.int64) @ R.astype(np.int64)) > 0  # u -> v -> ... -> w
    return E & two


def graph_metrics(A_hat: np.ndarray, scaffold: np.ndarray) -> dict:
    """Cycle flag, shortcut count and parent-edge P/R/F1 of one predicted 0/1 graph."""
    A_hat, S = np.asarray(A_hat) > 0, np.asarray(scaffold) > 0
    tp = int((A_hat & S).sum())
    p = tp / max(int(A_hat.sum()), 1)
    r = tp / max(int(S.sum()), 1)
    return dict(
        cycle=has_cycle(A_hat),
        shortcuts=int(shortcut_edges(A_hat).sum()),
        edges=int(A_hat.sum()),
        precision=p,
        recall=r,
        f1=2 * p * r / (p + r) if p + r else 0.0,
    )


def graph_scores(graphs: list[np.ndarray], scaffolds: list[np.ndarray]) -> dict:
    """Over documents, predicted 0/1 parent graphs against their scaffolds: the
    fraction with a directed cycle (``cyclic``), shortcut edges per scaffold edge
    (``shortcuts``), and parent-edge precision, recall and F1, micro over edges."""
    if not graphs or len(graphs) != len(scaffolds):
        raise ValueError("need one scaffold per predicted graph, and at least one")
    cyc, sc, n_edges, tp, npred = [], 0, 0, 0, 0
    for A_hat, S in zip(graphs, scaffolds):
        gm = graph_metrics(A_hat, S)
        cyc.append(gm["cycle"])
        sc += gm["shortcuts"]
        n_edges += int((np.asarray(S) > 0).sum())
        tp += int(((np.asarray(A_hat) > 0) & (np.asarray(S) > 0)).sum())
        npred += gm["edges"]
    p, r = tp / max(npred, 1), tp / max(n_edges, 1)
    return dict(
        cyclic=float(np.mean(cyc)),
        shortcuts=sc / max(n_edges, 1),
        f1=2 * p * r / (p + r) if p + r else 0.0,
        precision=p,
        recall=r,
    )


@torch.no_grad()
def predicted_graphs(model: HGNet, batches: list[dict]) -> list[dict]:
    """Per document of ``batches``: the soft parent matrix ``A`` (N, N), the
    ``scaffold`` (N, N), the ``depth`` (N,) and the abstraction ``y`` (N,), NumPy."""
    model.eval()
    out = []
    for b in batches:
        _, lg, h = model(b)
        A = parent_probs(lg, b["mask"])
        y = model.abstraction(h)
        for i in range(len(A)):
            m = b["mask"][i]
            out.append(
                dict(
                    A=A[i][m][:, m].cpu().numpy(),
                    scaffold=b["scaffold"][i][m][:, m].cpu().numpy(),
                    depth=b["depth"][i][m].cpu().numpy(),
                    y=y[i][m].cpu().numpy(),
                )
            )
    return out


def depth_order(ys: list[np.ndarray], depths: list[np.ndarray]) -> float:
    """The mean over documents of Spearman(y, -depth): how well an axis orders each
    document's concepts by depth (1: perfectly, from the root down)."""
    from scipy.stats import spearmanr

    return float(np.nanmean([spearmanr(y, -d)[0] for y, d in zip(ys, depths)]))


@torch.no_grad()
def evaluate_hgnet(model: HGNet, batches: list[dict], threshold: float = 0.5) -> dict:
    """Over test documents: fraction with a cycle, shortcut edges per scaffold edge,
    parent-edge F1 (micro over edges; :func:`graph_scores` of the graph
    {A > threshold}), mean tr(e^{A o A}) - N of the soft A, and the mean Spearman
    correlation of the abstraction y with -depth (:func:`depth_order`)."""
    docs = predicted_graphs(model, batches)
    out = graph_scores(
        [d["A"] > threshold for d in docs], [d["scaffold"] for d in docs]
    )
    out["acyc"] = float(
        np.mean(
            [float(acyclicity_loss(torch.from_numpy(d["A"]).double())) for d in docs]
        )
    )
    out["spearman"] = depth_order([d["y"] for d in docs], [d["depth"] for d in docs])
    return out


def count_vote(doc: Document, k: int = 2) -> np.ndarray:
    """(N, N) 0/1: the pairs the sentences state as is-a at least ``k`` times, a rule
    that reads the statement counts and nothing else (no model, no hierarchy loss)."""
    C = np.zeros((doc.n, doc.n), dtype=np.int64)
    for u, v, r in doc.stated:
        if r == 0:
            C[u, v] += 1
    return (C >= k).astype(np.int64)


def clean_hierarchy(A: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """What the hierarchy loss asks of a graph, done by hand without the scaffold:
    the graph {A > threshold} with each 2-cycle resolved to its stronger direction,
    the weakest edge of any longer cycle dropped until none is left, then every
    shortcut edge (:func:`shortcut_edges`) dropped: acyclic and without shortcuts by
    construction. A: (N, N) soft."""
    A = np.asarray(A, dtype=float)
    E = A > threshold
    both = E & E.T
    lower = np.tril(np.ones(E.shape, dtype=bool), -1)  # a tie keeps u < v
    E = E & ~(both & ((A < A.T) | ((A == A.T) & lower)))  # keep the stronger edge
    while has_cycle(E):  # a longer cycle: drop its weakest edge
        on_cycle = E & reachability(E).T  # u -> v with a path back from v to u
        u, v = np.unravel_index(np.where(on_cycle, A, np.inf).argmin(), A.shape)
        E[u, v] = False
    return (E & ~shortcut_edges(E)).astype(np.int64)


def corrected_graphs(
    graphs: list[np.ndarray], scaffolds: list[np.ndarray], gain: float
) -> list[np.ndarray]:
    """A planted case for an F1 comparison: the graphs with their errors set right
    (a missed scaffold edge added, or a wrong edge removed, one at a time, documents
    in order) until the micro parent-edge F1 of :func:`graph_scores` has risen by
    ``gain`` (or no error is left)."""
    if not 0 <= gain <= 1:
        raise ValueError(f"gain must lie in [0, 1], got {gain}")
    out = [(np.asarray(g) > 0).astype(np.int64) for g in graphs]
    first = graph_scores(out, scaffolds)
    n_edges = sum(int((np.asarray(S) > 0).sum()) for S in scaffolds)
    tp = round(first["recall"] * n_edges)
    npred = sum(int(g.sum()) for g in out)
    for g, S in zip(out, scaffolds):
        S = np.asarray(S) > 0
        for u, v in zip(*np.nonzero((g > 0) != S)):
            if 2 * tp / max(npred + n_edges, 1) >= first["f1"] + gain:
                return out
            g[u, v] = int(S[u, v])
            tp, npred = tp + int(S[u, v]), npred + (1 if S[u, v] else -1)
    return out


# ------------------------------------------------------------------------------
# exercise
# ------------------------------------------------------------------------------
def check_acyclicity_grad(fn) -> object:
    """Grade a student's ``fn(A) -> G`` (NumPy (N, N) -> (N, N)): the gradient of
    tr(exp(A o A)) - N with respect to A."""
    return grade_exercise(fn, _trial_grad)


def _trial_grad(fn) -> str:
    rng = np.random.default_rng(0)
    for case in range(8):
        N = int(rng.integers(2, 7))
        A = rng.random((N, N)) * (rng.random((N, N)) < 0.6)
        if case == 0:
            A = np.triu(A, 1)  # a DAG: the penalty is 0 but its gradient is not
        At = torch.tensor(A, requires_grad=True)
        acyclicity_loss(At).backward()
        want = At.grad.numpy()
        got = np.asarray(fn(A.copy()), dtype=float)
        if got.shape != A.shape:
            raise AssertionError(
                f"case {case}: expected shape {A.shape}, got {got.shape}"
            )
        if np.allclose(got, want.T, rtol=1e-6, atol=1e-9) and not np.allclose(
            want, want.T, rtol=1e-6, atol=1e-9
        ):
            raise AssertionError(
                f"case {case}: your matrix is the transpose of the "
                "gradient; d tr(f(W)) / dW = f'(W) transposed"
            )
        if np.allclose(got, want / 2, rtol=1e-6, atol=1e-9) and np.abs(want).max() > 0:
            raise AssertionError(
                f"case {case}: off by a factor 2; the chain rule through "
                "W = A o A has a factor dW/dA"
            )
        if not np.allclose(got, want, rtol=1e-6, atol=1e-9):
            raise AssertionError(
                f"case {case} (N={N}): largest error "
                f"{np.abs(got - want).max():.3g}; check it against "
                "finite differences of tr(expm(A * A))"
            )
    return "your gradient matches autograd on 8 random graphs, DAG included"
