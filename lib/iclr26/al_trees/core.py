"""Active learning of decision trees: exact tree classes, the disagreement
coefficient, CAL.

Chapter 04 of *ICLR 2026 in Code*. The paper ("active learning for decision trees with
provable guarantees", ICLR 2026) proves that for trees of height <= d whose root-to-leaf
paths split on distinct features, on grid-structured data, the disagreement coefficient
is O(ln^d n), and that both assumptions are needed. Its algorithms are not public; this
module gives the tools to *see* the theorem on small classes, exactly:

* :func:`enumerate_trees` lists every prediction vector of a small tree class on a
  finite pool (depth <= 2), as a boolean matrix ``P`` of shape (H, n): row h is
  hypothesis h's labels.
* :func:`disagreement_radius` and :func:`disagreement_coefficient` compute rho(x) =
  min{dist(h, h*) : h(x) != h*(x)} and theta = sup_{r >= r0} P(rho <= r) / r exactly.
* :class:`VersionSpace`, :func:`cal_active_learn` (CAL, the disagreement-based active
  learner of Cohn, Atlas and Ladner) and :func:`passive_labels_to_collapse`
  (random labelling) compare label counts on the same pool.
* :func:`greedy_tree_pool_error` fits scikit-learn's greedy CART for the
  teaching contrast.

Everything works on a finite pool with the uniform distribution over its n points, so
"distance" between hypotheses is the fraction of pool points where they disagree.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from ..core import ExerciseVerdict, grade_exercise
from ..validate import as_float, as_int

__all__ = [
    "grid_points",
    "antidiagonal_points",
    "threshold_splits",
    "enumerate_trees",
    "tree_count_formula",
    "hamming_to",
    "hamming_to_columns",
    "disagreement_radius",
    "theta_from_radius",
    "disagreement_coefficient",
    "VersionSpace",
    "cal_active_learn",
    "passive_labels_to_collapse",
    "greedy_tree_pool_error",
    "sample_target",
    "check_disagreement_coefficient",
]


# --------------------------------------------------------------------------------------
# Data: grids and the anti-diagonal
# --------------------------------------------------------------------------------------


def grid_points(
    k: int, dim: int = 2, device: str | torch.device | None = None
) -> torch.Tensor:
    """All points of the grid {0, ..., k-1}^dim, shape (k**dim, dim), float32,
    row-major order."""
    k = as_int(k, "k (points per axis)", lo=2)
    dim = as_int(dim, "dim", lo=1)
    axes = [torch.arange(k, dtype=torch.float32, device=device)] * dim
    mesh = torch.meshgrid(*axes, indexing="ij")  # dim tensors of shape (k, ..., k)
    return torch.stack([m.reshape(-1) for m in mesh], dim=1)  # (k^dim, dim)


def antidiagonal_points(
    n: int, device: str | torch.device | None = None
) -> torch.Tensor:
    """n points (i, n-1-i) on the anti-diagonal of the plane, shape (n, 2), float32.

    Not a grid: every point has its own value on each axis, and the two axes are in
    reverse order.
    """
    n = as_int(n, "n", lo=2)
    i = torch.arange(n, dtype=torch.float32, device=device)
    return torch.stack([i, n - 1 - i], dim=1)  # (n, 2)


# --------------------------------------------------------------------------------------
# The tree class, enumerated exactly
# --------------------------------------------------------------------------------------


def _check_points(X: torch.Tensor) -> None:
    if not isinstance(X, torch.Tensor):
        raise TypeError(
            f"X must be a torch.Tensor of shape (n, D), got {type(X).__name__}"
        )
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(
            f"X must have shape (n, D) with n, D >= 1, got {tuple(X.shape)}"
        )
    if not X.is_floating_point():
        raise TypeError(f"X must be a floating tensor, got dtype {X.dtype}")
    if not bool(torch.isfinite(X).all()):
        raise ValueError("X must be finite: it holds NaN or infinite coordinates")


def threshold_splits(X: torch.Tensor) -> list[torch.Tensor]:
    """Every distinct axis-aligned split of the pool, per feature.

    A split on feature f sends x right when x_f > t. Only thresholds between consecutive
    distinct values of X[:, f] give distinct splits, so feature f has T_f = (#distinct
    values - 1) of them.

    X: (n, D) float. Returns a list of D bool tensors, entry f of shape (T_f, n).
    """
    _check_points(X)
    out = []
    for f in range(X.shape[1]):
        values = torch.unique(X[:, f])  # sorted, (V_f,)
        mids = (
            values[1:] + values[:-1]
        ) / 2  # (T_f,) thresholds halfway between neighbours
        # (T_f, n): x goes right of threshold t
        out.append(X[None, :, f] > mids[:, None])
    return out


def _stump_options(
    splits: list[torch.Tensor], features: list[int], n: int, device
) -> torch.Tensor:
    """Everything a node of height <= 1 can predict: the two leaves and every
    non-constant stump on one of ``features`` (both orientations).
    Returns (m, n) bool."""
    rows = [
        torch.zeros(1, n, dtype=torch.bool, device=device),
        torch.ones(1, n, dtype=torch.bool, device=device),
    ]
    for g in features:
        rows += [
            splits[g],
            ~splits[g],
        ]  # (T_g, n) each: label 1 right of t, or label 1 left of t
    return torch.cat(rows, dim=0)


def _matvec(P: torch.Tensor, v: torch.Tensor, chunk: int = 8192) -> torch.Tensor:
    """P (H, n) bool times v (n, c) float32 with small integer entries, in chunks:
    (H, c) float32. Exact while every row sum stays below 2**24.
    (A float matmul is far faster than bool ops.)"""
    return torch.cat(
        [P[i : i + chunk].to(v.dtype) @ v for i in range(0, P.shape[0], chunk)]
    )


def _unique_rows(P: torch.Tensor) -> torch.Tensor:
    """Distinct rows of a bool matrix (H, n), first occurrences kept, in their
    original order.

    Rows are keyed by two exact integer hashes (random weights < 2**12, so sums are
    exact in float32); rows that share a key are then compared in full, so the
    result is exact.
    """
    H, n = P.shape
    if H == 0:
        return P
    g = torch.Generator().manual_seed(12345)
    W = torch.randint(0, 2**12, (n, 2), generator=g).to(
        device=P.device, dtype=torch.float32
    )  # (n, 2)
    hashes = _matvec(P, W).to(torch.int64)  # (H, 2) exact integers
    key = hashes[:, 0] * (2**32) + hashes[:, 1]  # (H,)
    _, inverse = torch.unique(key, return_inverse=True)  # (H,) key id of each row
    first = torch.full((int(inverse.max()) + 1,), H, dtype=torch.int64, device=P.device)
    first = first.scatter_reduce(
        0, inverse, torch.arange(H, device=P.device), reduce="amin"
    )  # first row per key
    rep = first[inverse]  # (H,) the representative each row was merged into
    same = torch.cat(
        [(P[i : i + 8192] == P[rep[i : i + 8192]]).all(1) for i in range(0, H, 8192)]
    )
    if not bool(
        same.all()
    ):  # a hash collision between different rows: fall back to a full sort
        return torch.unique(P, dim=0)
    return P[torch.sort(first).values]


def enumerate_trees(
    X: torch.Tensor, depth: int = 2, distinct_features: bool = True, unique: bool = True
) -> torch.Tensor:
    """Every labelling of the pool that a binary decision tree of height <= ``depth``
    can produce.

    Height 0: the two constants. Height 1: stumps ``1[x_f > t]`` and their complements.
    Height 2: a root split on feature f whose two children are each a leaf or a stump;
    with ``distinct_features`` the children may not split on f again (the paper's
    assumption (i)).

    X: (n, D) float pool. Returns P: (H, n) bool, row h = hypothesis h's labels on the
    pool; with ``unique`` (default) duplicate rows are removed, so H counts
    *behaviours*, not trees. Before de-duplication H is :func:`tree_count_formula`
    (constant stumps are not listed twice).
    """
    _check_points(X)
    if depth not in (0, 1, 2):
        raise ValueError(
            "depth must be 0, 1 or 2 (deeper classes are too large to enumerate), got "
            f"{depth!r}"
        )
    n, D = X.shape
    device = X.device
    splits = threshold_splits(X)
    if depth == 0:
        P = torch.stack(
            [
                torch.zeros(n, dtype=torch.bool, device=device),
                torch.ones(n, dtype=torch.bool, device=device),
            ]
        )
    elif depth == 1:
        P = _stump_options(splits, list(range(D)), n, device)  # leaves and stumps
    else:
        blocks = [
            torch.zeros(1, n, dtype=torch.bool, device=device),
            torch.ones(1, n, dtype=torch.bool, device=device),
        ]
        for f in range(D):
            if splits[f].shape[0] == 0:
                continue
            child_features = (
                [g for g in range(D) if g != f] if distinct_features else list(range(D))
            )
            # (m, n) what one child predicts
            C = _stump_options(splits, child_features, n, device)
            R = splits[f]  # (T_f, n) which points the root sends right
            # h(x) = C_right(x) if root sends x right else C_left(x)
            #   -> (T_f, m_left, m_right, n)
            tree = torch.where(
                R[:, None, None, :], C[None, None, :, :], C[None, :, None, :]
            )
            blocks.append(tree.reshape(-1, n))
        P = torch.cat(blocks, dim=0)
    return _unique_rows(P) if unique else P


def tree_count_formula(k: int) -> int:
    """Trees listed by ``enumerate_trees(grid_points(k, 2), 2, unique=False)``: 2
    constants + (2 root features x (k-1) thresholds) x (2 leaves + 2(k-1) stumps)^2
    children."""
    return 2 + 2 * (k - 1) * (2 + 2 * (k - 1)) ** 2


# --------------------------------------------------------------------------------------
# Distances, the disagreement radius and the disagreement coefficient
# --------------------------------------------------------------------------------------


def _check_class(P: torch.Tensor, h: torch.Tensor | None = None) -> None:
    if not isinstance(P, torch.Tensor) or P.dtype != torch.bool or P.ndim != 2:
        raise TypeError(
            "P must be a bool tensor of shape (H, n) (rows = hypotheses' labels on the "
            "pool)"
        )
    if P.shape[0] == 0 or P.shape[1] == 0:
        raise ValueError(
            f"P must have at least one hypothesis and one pool point, got shape "
            f"{tuple(P.shape)}"
        )
    if h is not None:
        if (
            not isinstance(h, torch.Tensor)
            or h.dtype != torch.bool
            or h.shape != (P.shape[1],)
        ):
            raise TypeError(
                f"the target must be a bool tensor of shape ({P.shape[1]},), got "
                f"{getattr(h, 'dtype', type(h).__name__)} "
                f"{tuple(getattr(h, 'shape', ()))}"
            )


def hamming_to(P: torch.Tensor, h: torch.Tensor, chunk: int = 16384) -> torch.Tensor:
    """Number of pool points where each hypothesis disagrees with ``h``.

    P: (H, n) bool, h: (n,) bool. Returns (H,) int64; divide by n for the distance
        dist(h_i, h).
    """
    _check_class(P, h)
    # (n, 1): +1 where h says 0, -1 where h says 1
    v = (1 - 2 * h.to(torch.float32))[:, None]
    # |h_i xor h| = sum_x h_i(x) (1 - 2 h(x)) + sum_x h(x)
    return (_matvec(P, v, chunk)[:, 0] + h.sum()).round().to(torch.int64)


def hamming_to_columns(
    by_point: torch.Tensor, h: torch.Tensor, chunk: int = 64
) -> torch.Tensor:
    """:func:`hamming_to` for a transposed class matrix by_point (n, H): returns
    (H,) int64."""
    if (
        not isinstance(by_point, torch.Tensor)
        or by_point.dtype != torch.bool
        or by_point.ndim != 2
    ):
        raise TypeError(
            "by_point must be a bool tensor of shape (n, H) (a transposed class matrix)"
        )
    if (
        not isinstance(h, torch.Tensor)
        or h.dtype != torch.bool
        or h.shape != (by_point.shape[0],)
    ):
        raise TypeError(
            f"h must be a bool tensor of shape ({by_point.shape[0]},), got "
            f"{getattr(h, 'dtype', type(h).__name__)} {tuple(getattr(h, 'shape', ()))}"
        )
    v = 1 - 2 * h.to(torch.float32)  # (n,)
    acc = torch.zeros(by_point.shape[1], dtype=torch.float32, device=by_point.device)
    for i in range(0, by_point.shape[0], chunk):
        acc += v[i : i + chunk] @ by_point[i : i + chunk].to(torch.float32)  # (H,)
    return (acc + h.sum()).round().to(torch.int64)


def disagreement_radius(
    P: torch.Tensor, hstar: torch.Tensor, chunk: int = 8192
) -> torch.Tensor:
    """rho(x) = min{ dist(h, h*) : h in P, h(x) != h*(x) }, for every pool point x.

    x lies in the disagreement region DIS(B(h*, r)) exactly when rho(x) <= r.
    Distances are fractions of the pool (uniform distribution).
    A point no hypothesis flips gets +inf.

    P: (H, n) bool, hstar: (n,) bool. Returns (n,) float64.
    """
    _check_class(P, hstar)
    n = P.shape[1]
    dist = hamming_to(P, hstar)  # (H,) Hamming distance of every hypothesis to h*
    order = torch.argsort(dist, stable=True)  # nearest hypotheses first
    # -1: not yet flipped
    rho_count = torch.full((n,), -1, dtype=torch.int64, device=P.device)
    for i in range(0, P.shape[0], chunk):
        todo = rho_count < 0  # (n,) points no nearer hypothesis has flipped yet
        if not todo.any():
            break  # every point has its radius: farther hypotheses cannot lower it
        idx = order[i : i + chunk]  # (c,) the next-nearest hypotheses
        diff = P[idx][:, todo] ^ hstar[todo]  # (c, n_todo): where each flips h*
        d = dist[idx]  # (c,) ascending
        hit = diff.any(0)  # (n_todo,) flipped by some hypothesis of this chunk
        # (n_todo,) nearest flipping hypothesis in the chunk
        first = diff.to(torch.uint8).argmax(0)
        newly = torch.where(hit, d[first], torch.full_like(d[first], -1))
        rho_count[todo] = newly
    rho = rho_count.double() / n
    rho[rho_count < 0] = math.inf
    return rho


def theta_from_radius(rho: torch.Tensor, r0: float) -> tuple[float, float]:
    """theta(r0) = sup_{r >= r0} P(rho <= r) / r, with P uniform over the pool.

    The ratio only jumps up where r passes a value of rho and falls between jumps, so
    the sup is attained at r0 or at one of the values rho(x) >= r0: a max over at most n
    + 1 candidates.

    rho: (n,) float. Returns (theta, the r that attains it).
    """
    if not isinstance(rho, torch.Tensor) or rho.ndim != 1 or rho.numel() == 0:
        raise TypeError("rho must be a non-empty 1-D tensor")
    r0 = as_float(r0, "r0", lo=0.0, hi=1.0, open_lo=True)
    finite = rho[torch.isfinite(rho)]
    cands = torch.cat(
        [
            torch.tensor([float(r0)], dtype=torch.float64, device=rho.device),
            finite[finite >= r0].double(),
        ]
    )
    cands = torch.unique(cands)  # (c,) sorted radii
    # (c,) P(DIS(B(h*, r)))
    mass = (rho[None, :] <= cands[:, None] + 1e-12).double().mean(1)
    ratio = mass / cands  # (c,)
    best = int(ratio.argmax())
    return float(ratio[best]), float(cands[best])


def disagreement_coefficient(
    P: torch.Tensor, hstar: torch.Tensor, r0: float | None = None
) -> tuple[float, torch.Tensor]:
    """The disagreement coefficient of the class P around h*, exactly from
    its definition.

    theta(r0) = sup_{r >= r0} P(DIS(B(h*, r))) / r, with B(h*, r) = {h : dist(h, h*) <=
    r} and DIS(V) = {x : some h, h' in V disagree on x}. Default r0 = 1/n, the smallest
    non-zero distance.

    P: (H, n) bool, hstar: (n,) bool, a row of P (ValueError otherwise).
    Returns (theta, rho) with rho of shape (n,) as in :func:`disagreement_radius`.
    """
    _check_class(P, hstar)
    n = P.shape[1]
    r0 = 1.0 / n if r0 is None else r0
    if (
        int(hamming_to(P, hstar).min()) != 0
    ):  # P(DIS(B(h*, r))) = P(rho <= r) needs h* in B
        raise ValueError(
            "hstar must be a row of P (the target must lie in the class); for a "
            "target outside it, disagreement_radius still gives rho"
        )
    rho = disagreement_radius(P, hstar)
    theta, _ = theta_from_radius(rho, r0)
    return theta, rho


# --------------------------------------------------------------------------------------
# Learners on a pool: CAL (active) and random labelling (passive)
# --------------------------------------------------------------------------------------


class VersionSpace:
    """The hypotheses of a finite class that agree with every label seen so far.

    P: (H, n) bool class matrix. Keeps a transposed copy (n, H) so that "what does every
    hypothesis say about point i" is one contiguous row, and the indices of the live
    hypotheses: each label removes about half of them, so later steps touch few entries.
    :meth:`reset` lets several learners reuse one transposed copy.
    """

    def __init__(self, P: torch.Tensor):
        _check_class(P)
        self.n_hypotheses, self.n_points = P.shape
        self.by_point = P.t().contiguous()  # (n, H)
        self.reset()

    def reset(self) -> "VersionSpace":
        """Forget every label: all hypotheses alive again."""
        # (H_alive,)
        self.alive_idx = torch.arange(self.n_hypotheses, device=self.by_point.device)
        return self

    @property
    def n_alive(self) -> int:
        return int(self.alive_idx.numel())

    @property
    def alive(self) -> torch.Tensor:
        """(H,) bool mask of the live hypotheses."""
        mask = torch.zeros(
            self.n_hypotheses, dtype=torch.bool, device=self.by_point.device
        )
        mask[self.alive_idx] = True
        return mask

    def labels_at(self, i: int) -> torch.Tensor:
        """What every live hypothesis says at point i: (H_alive,) bool."""
        return self.by_point[i, self.alive_idx]

    def disagrees(self, i: int) -> bool:
        """Is point i in DIS(V): do two live hypotheses label it differently?"""
        row = self.labels_at(i)
        return bool(row.any()) and not bool(row.all())

    def update(self, i: int, y: bool) -> None:
        """Keep only hypotheses that label point i as y."""
        self.alive_idx = self.alive_idx[self.labels_at(i) == bool(y)]

    def predict(self, i: int) -> bool:
        """The label the live hypotheses give point i (the majority; unanimous
        outside DIS(V))."""
        if self.n_alive == 0:
            raise RuntimeError(
                "the version space is empty: the labels are not realisable by this "
                "class"
            )
        return 2 * int(self.labels_at(i).sum()) >= self.n_alive

    def collapsed(self) -> bool:
        """Do all live hypotheses agree on every pool point?"""
        live = self.by_point[:, self.alive_idx]  # (n, H_alive)
        return bool((live.all(1) | ~live.any(1)).all())


def _space(P: torch.Tensor | VersionSpace) -> VersionSpace:
    if isinstance(P, VersionSpace):
        return P.reset()
    return VersionSpace(P)


def _check_labels(n: int, y: torch.Tensor, order: torch.Tensor) -> None:
    if not isinstance(y, torch.Tensor) or y.dtype != torch.bool or y.shape != (n,):
        raise TypeError(f"y must be a bool tensor of shape ({n},)")
    if (
        not isinstance(order, torch.Tensor)
        or order.ndim != 1
        or order.dtype not in (torch.int64, torch.int32)
    ):
        raise TypeError(
            "order must be a 1-D integer tensor (a permutation of the pool indices)"
        )
    if order.numel() != n or not torch.equal(
        torch.sort(order.cpu()).values, torch.arange(n)
    ):
        raise ValueError(f"order must be a permutation of range({n})")


def cal_active_learn(
    P: torch.Tensor | VersionSpace, y: torch.Tensor, order: torch.Tensor
) -> tuple[int, torch.Tensor, torch.Tensor]:
    """CAL (Cohn, Atlas & Ladner): stream the pool; ask for a label only inside DIS(V).

    Outside the disagreement region every live hypothesis gives the same label, so it is
    inferred for free. In the realisable case (y is a row of P) every label CAL holds is
    correct and the final version space agrees with y on the whole pool: zero error.
    Labels no hypothesis produces raise ValueError (an empty version space, or survivors
    with non-zero error).

    P: (H, n) bool (or a :class:`VersionSpace` of it, which is reset), y: (n,) bool true
    labels, order: (n,) permutation. Returns (labels asked, queried mask (n,) bool,
    final live mask (H,)).
    """
    vs = _space(P)
    _check_labels(vs.n_points, y, order)
    queried = torch.zeros(vs.n_points, dtype=torch.bool, device=y.device)
    for i in order.tolist():
        if vs.disagrees(i):  # x in DIS(V): ask
            vs.update(i, bool(y[i]))
            queried[i] = True
        # else: every h in V agrees on x, the label is known without asking
    if vs.n_alive == 0:
        raise ValueError("y is not realisable: the version space became empty")
    # The survivors agree with every label CAL asked for; on a skipped point they agree
    # with one another, and with y only if y is realisable. Check it (y is at hand): no
    # silent survivor with non-zero error.
    if int(hamming_to_columns(vs.by_point[:, vs.alive_idx], y).max()) != 0:
        raise ValueError(
            "y is not realisable by this class: CAL inferred some skipped labels "
            "wrongly (use robust_cal for noisy labels)"
        )
    return int(queried.sum()), queried, vs.alive


def passive_labels_to_collapse(
    P: torch.Tensor | VersionSpace,
    y: torch.Tensor,
    order: torch.Tensor,
    chunk: int = 64,
) -> int:
    """Labels random sampling needs before the version space collapses onto
    y's behaviour.

    Label the pool in ``order`` (a random order = passive learning).
    The version space has collapsed once every hypothesis still consistent has zero pool
    error, so that *every* ERM is exact; this returns the number of labels at which that
    first happens.

    P: (H, n) bool (or a :class:`VersionSpace`), y: (n,) bool, a behaviour of the class;
    order: (n,) permutation. Returns an int in [0, n]. Closed form, one pass over the
    points in chunks (no per-label host sync).
    """
    vs = _space(P)
    n = vs.n_points
    _check_labels(n, y, order)
    # Closed form: hypothesis h leaves the version space at the first position of the
    # stream where it disagrees with y; the space has collapsed once every hypothesis
    # with non-zero error has left, i.e. after max_h (first disagreement of h) labels.
    dev = vs.by_point.device
    pos = torch.empty(n, dtype=torch.float32, device=dev)
    pos[order.to(dev)] = torch.arange(1, n + 1, dtype=torch.float32, device=dev)
    first = torch.full((vs.n_hypotheses,), math.inf, device=dev)  # (H,)
    for i in range(
        0, n, chunk
    ):  # chunks of points: earliest disagreement of each h so far
        diff = vs.by_point[i : i + chunk] ^ y[i : i + chunk, None].to(dev)  # (c, H)
        pos_c = torch.where(diff, pos[i : i + chunk, None], math.inf)
        first = torch.minimum(first, pos_c.min(0).values)
    perfect = torch.isinf(first)  # (H,) zero pool error: never disagrees
    if not bool(perfect.any()):
        raise ValueError(
            "y is not realisable: no hypothesis in P labels the pool as y does"
        )
    return 0 if bool(perfect.all()) else int(first[~perfect].max())


# --------------------------------------------------------------------------------------
# Targets, the greedy baseline and small helpers
# --------------------------------------------------------------------------------------


def sample_target(
    P: torch.Tensor, generator: torch.Generator, min_minority: float = 0.15
) -> torch.Tensor:
    """A random target h* from the class whose minority label covers >= ``min_minority``
    of the pool (so the task is not nearly constant). Returns (n,) bool, a row of P."""
    _check_class(P)
    min_minority = as_float(min_minority, "min_minority", lo=0.0, hi=0.5)
    # (H,) fraction labelled 1
    frac = _matvec(P, torch.ones(P.shape[1], 1, device=P.device))[:, 0] / P.shape[1]
    ok = torch.nonzero(torch.minimum(frac, 1 - frac) >= min_minority).flatten()
    if ok.numel() == 0:
        raise ValueError(
            f"no hypothesis has a minority label of mass >= {min_minority}"
        )
    pick = ok[torch.randint(ok.numel(), (1,), generator=generator).item()]
    return P[pick].clone()


def greedy_tree_pool_error(
    X: torch.Tensor, y: torch.Tensor, depth: int = 2, seed: int = 0
) -> float:
    """Training error of scikit-learn's greedy CART
    (``DecisionTreeClassifier(max_depth=depth)``) fitted on the whole labelled pool.
    An exact ERM over the depth-``depth`` class gets 0 whenever y is realisable; greedy
    top-down splitting need not.

    X: (n, D) float, y: (n,) bool. Returns the fraction of pool points CART gets wrong.
    """
    from sklearn.tree import DecisionTreeClassifier

    _check_points(X)
    depth = as_int(depth, "depth", lo=1)
    seed = as_int(seed, "seed", lo=0)
    if not isinstance(y, torch.Tensor) or y.shape != (X.shape[0],):
        raise ValueError(f"y must be a tensor of shape ({X.shape[0]},)")
    Xn, yn = X.detach().cpu().numpy(), y.detach().cpu().numpy().astype(int)
    tree = DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(Xn, yn)
    return float((tree.predict(Xn) != yn).mean())


# --------------------------------------------------------------------------------------
# Exercise checker
# --------------------------------------------------------------------------------------


def check_disagreement_coefficient(
    fn: Callable[[torch.Tensor, torch.Tensor], float], trials: int = 5, seed: int = 0
) -> ExerciseVerdict:
    """Grade a student's ``fn(P, hstar) -> theta`` (with r0 = 1/n) against the library
    on a few small classes: 1-D thresholds on a line, depth-2 trees on a small grid and
    on the anti-diagonal.

    Returns an :class:`~iclr26.core.ExerciseVerdict`: "not done yet" on the stub,
    "wrong" with a hint (never the expected value) naming the first case it gets
    wrong, "correct" when every case agrees.
    """
    g = torch.Generator().manual_seed(seed)
    cases = []
    line = torch.arange(12, dtype=torch.float32)[:, None]
    cases.append(("1-D thresholds on 12 points", enumerate_trees(line, depth=1)))
    cases.append(
        ("depth-2 trees on a 5x5 grid", enumerate_trees(grid_points(5), depth=2))
    )
    cases.append(
        (
            "depth-2 trees on 10 anti-diagonal points",
            enumerate_trees(antidiagonal_points(10), depth=2),
        )
    )
    targets = [
        (name, P, P[torch.randint(P.shape[0], (1,), generator=g).item()])
        for name, P in cases
        for _ in range(trials)
    ]

    def trial(fn):
        for t, (name, P, h) in enumerate(targets):
            n = P.shape[1]
            out = fn(P.clone(), h.clone())
            if isinstance(out, torch.Tensor):
                if out.numel() != 1:
                    raise AssertionError(
                        f"{name}: return one number (theta), not a "
                        f"tensor of shape {tuple(out.shape)}"
                    )
                out = out.item()
            if isinstance(out, bool) or not isinstance(out, (int, float)):
                raise AssertionError(
                    f"{name}: return theta as a float, not {type(out).__name__}"
                )
            got = float(out)
            if not math.isfinite(got):
                raise AssertionError(
                    f"{name}: theta came out as {got}; a point that "
                    "no hypothesis flips must never count in DIS"
                )
            if got < 1 - 1e-9 or got > n + 1e-9:
                raise AssertionError(
                    f"{name}: theta = {got:.4g} lies outside [1, n] = [1, {n}]; "
                    "theta(1/n) is a ratio P(DIS(B(h*, r))) / r, with distances and r "
                    "both fractions of n"
                )
            want, _ = disagreement_coefficient(P, h)
            if not math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9):
                raise AssertionError(
                    f"{name}, target #{t % trials}: your theta = {got:.6g} is not the "
                    "coefficient. Hint: rho(x) is the distance of the *nearest* "
                    "hypothesis that flips x, and the sup runs over every radius "
                    "r >= 1/n, dividing P(rho <= r) by r"
                )
        return f"your theta matches the definition on {len(targets)} targets, 3 classes"

    return grade_exercise(fn, trial)
