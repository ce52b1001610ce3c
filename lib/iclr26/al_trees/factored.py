"""The disagreement radius of depth-<=2 trees without listing the trees, and
non-grid pools.

Listing every tree costs (#thresholds)^3 rows: fine on a k x k grid (k - 1 thresholds
per axis), hopeless once every coordinate is distinct (n - 1 thresholds per axis, so ~8
n^3 trees: 1.5e9 at n = 576). But a depth-2 tree's distance to h* *splits over the
root's two sides*:

    n dist(h, h*) = E_left(root, left child) + E_right(root, right child),

where E_side counts the side's points that the child labels unlike h*.
So the nearest tree that flips x, for a fixed root, pairs the cheapest child that flips
x on x's side with the cheapest child of any kind on the other side.
A stump flips x for a prefix or a suffix of its thresholds, so that minimum is a running
minimum: O(T n) work per pair of features for T root thresholds, with no tree listed.

:func:`tree_disagreement_radius` computes rho exactly this way (the tests check it
against :func:`~iclr26.al_trees.core.disagreement_radius` on enumerated classes).
:func:`jittered_grid_points` and :func:`permutation_points` are the pools that break the
paper's assumption (ii) (grid data), used as controls.
"""

from __future__ import annotations

import math

import torch

from ..validate import as_float, as_int
from .core import _check_points, theta_from_radius, threshold_splits

__all__ = [
    "tree_disagreement_radius",
    "tree_disagreement_coefficient",
    "jittered_grid_points",
    "permutation_points",
]


def _check_bool_vector(h: torch.Tensor, n: int, name: str = "hstar") -> None:
    if not isinstance(h, torch.Tensor) or h.dtype != torch.bool or h.shape != (n,):
        raise TypeError(
            f"{name} must be a bool tensor of shape ({n},), got "
            f"{getattr(h, 'dtype', type(h).__name__)} "
            f"{tuple(getattr(h, 'shape', ()))}"
        )


def tree_disagreement_radius(
    X: torch.Tensor, hstar: torch.Tensor, distinct_features: bool = True
) -> torch.Tensor:
    """rho(x) = min{dist(h, h*) : h a tree of height <= 2, h(x) != h*(x)}, without
    enumeration.

    The class is the one :func:`~iclr26.al_trees.core.enumerate_trees` lists at depth 2
    (with the same ``distinct_features`` switch): constants, and a root split on feature
    f whose two children are each a leaf or a stump (on a feature other than f when
    ``distinct_features``). h* need not be a tree: rho is defined for any labelling.

    X: (n, D) float pool, hstar: (n,) bool. Returns (n,) float64, fractions of the pool;
    every point gets a finite radius (the constant opposite to h*(x) flips x).
    """
    return _radius_and_fit(X, hstar, distinct_features)[0]


def tree_disagreement_coefficient(
    X: torch.Tensor, hstar: torch.Tensor, distinct_features: bool = True
) -> tuple[float, torch.Tensor]:
    """theta(1/n) of the depth-<=2 tree class around h*, without listing the class.

    Same value as
    ``disagreement_coefficient(enumerate_trees(X, 2, distinct_features), hstar)``.
    h* must be a tree of the class (ValueError otherwise: the identity P(DIS(B(h*, r)))
    = P(rho <= r) needs h* in the ball). Returns (theta, rho (n,) float64).
    """
    rho, fit = _radius_and_fit(X, hstar, distinct_features)
    if fit != 0:
        raise ValueError(
            f"hstar is not a tree of this class (the nearest tree differs from it "
            f"on {fit} points); theta is defined around a member of the class"
        )
    theta, _ = theta_from_radius(rho, 1.0 / X.shape[0])
    return theta, rho


def _radius_and_fit(
    X: torch.Tensor, hstar: torch.Tensor, distinct_features: bool
) -> tuple[torch.Tensor, int]:
    """(rho, Hamming distance from h* to the nearest tree of the class)."""
    _check_points(X)
    n, D = X.shape
    _check_bool_vector(hstar, n)
    if hstar.device != X.device:
        raise ValueError(
            f"X and hstar must be on one device, got {X.device} and {hstar.device}"
        )
    hf = hstar.to(torch.float32)  # (n,)
    # The constant ~h*(x) flips x at cost #{z : h*(z) = h*(x)}.
    n1 = hf.sum()
    # (n,) counts, not fractions
    best = torch.where(hstar, n1, n - n1).to(torch.float32)
    fit = float(torch.minimum(n1, n - n1))  # nearest constant
    splits = threshold_splits(X)
    # rank[g][x] = number of thresholds of feature g below x_g: x goes right of
    # threshold j exactly when j < rank. Children on g flip x for a prefix or a suffix
    # of thresholds.
    ranks = [S.sum(0) for S in splits]  # D tensors (n,) int64
    for f in range(D):
        R = splits[f]  # (T, n) bool: root sends the point right
        if R.shape[0] == 0:
            continue
        Rf = R.to(torch.float32)
        feats = [g for g in range(D) if g != f] if distinct_features else list(range(D))
        # Mistakes of each child option on each side of each root threshold: (T,) per
        # leaf, (T, T_g) per stump family; "A": label 1 right of threshold j, "B":
        # its complement.
        mist = {}
        for side, W in (("right", Rf), ("left", 1 - Rf)):
            zero = W @ hf  # (T,) a 0-leaf errs on the side's 1-points
            one = W.sum(1) - zero  # (T,)
            fam = {}
            for g in feats:
                # (T, T_g)
                A = W @ (splits[g].to(torch.float32) != hf).to(torch.float32).t()
                fam[g] = (
                    A,
                    W.sum(1, keepdim=True) - A,
                )  # the complement errs elsewhere
            mist[side] = (zero, one, fam)
        free = {}
        for side in ("right", "left"):
            zero, one, fam = mist[side]
            cands = [zero, one] + [
                F.min(1).values for g in fam for F in fam[g] if F.shape[1] > 0
            ]
            # (T,) cheapest child of any kind
            free[side] = torch.stack(cands).min(0).values
        cost = {}
        for side in ("right", "left"):
            zero, one, fam = mist[side]
            # a 0-leaf flips the 1-points, a 1-leaf the 0-points
            c = torch.where(hstar[None], zero[:, None], one[:, None])  # (T, n)
            for g in fam:
                A, B = fam[g]
                if A.shape[1] == 0:
                    continue
                c = torch.minimum(c, _flip_min(A, B, ranks[g], hstar))
            cost[side] = c
        total = torch.where(
            R,
            cost["right"] + free["left"][:, None],
            cost["left"] + free["right"][:, None],
        )  # (T, n)
        best = torch.minimum(best, total.min(0).values)
        fit = min(fit, float((free["left"] + free["right"]).min()))
    return best.round().double() / n, int(round(fit))


def _flip_min(
    A: torch.Tensor, B: torch.Tensor, rank: torch.Tensor, hstar: torch.Tensor
) -> torch.Tensor:
    """Cheapest stump on one feature that flips each point, per root threshold.

    A, B: (T, T_g) mistakes of the stumps "1 right of threshold j" and "1 left of it".
    rank: (n,) thresholds below each point. Stump A_j labels x with (j < rank), so it
    flips a 0-point for j < rank (a prefix) and a 1-point for j >= rank (a suffix); B
    the other way. Returns (T, n).
    """
    T = A.shape[0]
    inf = torch.full((T, 1), math.inf, device=A.device, dtype=A.dtype)

    def prefix(M):  # out[:, r] = min_{j < r} M[:, j], r = 0..T_g
        return torch.cat([inf, M.cummin(1).values], 1)

    def suffix(M):  # out[:, r] = min_{j >= r} M[:, j]
        return torch.cat([M.flip(1).cummin(1).values.flip(1), inf], 1)

    idx = rank[None].expand(T, -1)  # (T, n)
    if0 = torch.minimum(prefix(A).gather(1, idx), suffix(B).gather(1, idx))
    if1 = torch.minimum(suffix(A).gather(1, idx), prefix(B).gather(1, idx))
    return torch.where(hstar[None], if1, if0)


def jittered_grid_points(
    k: int,
    jitter: float,
    generator: torch.Generator,
    device: str | torch.device | None = None,
) -> torch.Tensor:
    """A k x k grid with every coordinate moved by U(-jitter, jitter): (k*k, 2) float32.

    With 0 < jitter < 0.5 each point stays in its grid cell, but no two points share a
    coordinate any more, so a threshold can separate points of one grid column: the
    grid assumption (ii) is broken while the picture still looks like a grid.
    """
    k = as_int(k, "k (points per axis)", lo=2)
    jitter = as_float(jitter, "jitter", lo=0.0, hi=0.5, open_lo=True, open_hi=True)
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator, got {type(generator).__name__}"
        )
    i = torch.arange(k, dtype=torch.float64)
    mesh = torch.stack(
        [m.reshape(-1) for m in torch.meshgrid(i, i, indexing="ij")], dim=1
    )
    noise = (
        torch.rand(k * k, 2, generator=generator, dtype=torch.float64) * 2 - 1
    ) * jitter
    return (mesh + noise).to(device=device, dtype=torch.float32)


def permutation_points(
    n: int, generator: torch.Generator, device: str | torch.device | None = None
) -> torch.Tensor:
    """n points (i, pi(i)) for a uniformly random permutation pi: (n, 2) float32.

    Every coordinate value appears once per axis (like the anti-diagonal, which is the
    permutation i -> n-1-i), but in random order.
    """
    n = as_int(n, "n", lo=2)
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator, got {type(generator).__name__}"
        )
    i = torch.arange(n, dtype=torch.float32)
    pi = torch.randperm(n, generator=generator).to(torch.float32)
    return torch.stack([i, pi], dim=1).to(device)
