"""Zero-shot prediction, group metrics, the Gaussian model, orthogonal projection."""

from __future__ import annotations

import torch

from ..validate import as_float, as_int, as_tensor

# --------------------------------------------------------------------------------------
# metrics and zero-shot
# --------------------------------------------------------------------------------------


def zero_shot(e: torch.Tensor, text_cls: torch.Tensor) -> torch.Tensor:
    """(n,) predicted class: argmax over the (C, d) class prompts of <e, t_c>."""
    as_tensor(e, "e", ndim=2), as_tensor(text_cls, "text_cls", ndim=2)
    if e.shape[1] != text_cls.shape[1]:
        raise ValueError(
            f"e (n, d) and text_cls (C, d) must share d, got {tuple(e.shape)} "
            f"and {tuple(text_cls.shape)}"
        )
    return (e @ text_cls.T).argmax(1)


def group_accuracies(
    pred: torch.Tensor, y: torch.Tensor, group: torch.Tensor, n_groups: int = 4
) -> torch.Tensor:
    """(n_groups,) accuracy of ``pred`` against ``y`` within each group
    (NaN if empty)."""
    for name, t in (("pred", pred), ("y", y), ("group", group)):
        as_tensor(t, name, ndim=1)
        if t.is_floating_point():
            raise TypeError(f"{name} must hold integer labels, got {t.dtype}")
    if not pred.shape == y.shape == group.shape:
        raise ValueError(
            f"pred, y and group must have one shape, got {tuple(pred.shape)}, "
            f"{tuple(y.shape)}, {tuple(group.shape)}"
        )
    n_groups = as_int(n_groups, "n_groups", lo=1)
    if group.min() < 0 or group.max() >= n_groups:
        raise ValueError(
            f"group ids must be in [0, {n_groups}), got {group.min()}..{group.max()}"
        )
    hit = (pred == y).double()
    num = torch.zeros(n_groups, dtype=torch.float64, device=pred.device).index_add_(
        0, group, hit
    )
    cnt = torch.bincount(group, minlength=n_groups).double()
    return torch.where(
        cnt > 0, num / cnt.clamp(min=1), torch.full_like(num, float("nan"))
    )


def worst_group_acc(acc: torch.Tensor) -> float:
    """The smallest non-NaN entry of a vector of group accuracies."""
    if not isinstance(acc, torch.Tensor) or acc.ndim != 1:
        raise TypeError("acc must be a 1-d torch.Tensor of group accuracies")
    ok = acc[~torch.isnan(acc)]
    if ok.numel() == 0:
        raise ValueError("acc holds no non-NaN group accuracy")
    return float(ok.min())


def balanced_class_acc(pred: torch.Tensor, y: torch.Tensor) -> float:
    """Mean over classes of the per-class accuracy: the label-only selection
    criterion."""
    acc = group_accuracies(pred, y, y, int(y.max()) + 1)
    return float(acc[~torch.isnan(acc)].mean())


def selection_score(pred: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """(worst-class accuracy, balanced class accuracy): the label-only criterion that
    picks hyper-parameters on the validation split (class labels, no spurious labels);
    tuples compare lexicographically, so the balanced accuracy breaks ties."""
    acc = group_accuracies(pred, y, y, int(y.max()) + 1)
    acc = acc[~torch.isnan(acc)]
    return float(acc.min()), float(acc.mean())


def in_distribution_acc(acc: torch.Tensor, p_corr: float) -> float:
    """Accuracy under the pretraining mix of groups: majority groups (low/land,
    high/water) weigh p_corr / 2 each, minority groups (1 - p_corr) / 2.
    ``acc`` (4,) in GROUP_NAMES order."""
    p = as_float(p_corr, "p_corr", lo=0.0, hi=1.0)
    if not isinstance(acc, torch.Tensor) or acc.shape != (4,):
        raise ValueError("acc must be a (4,) tensor of group accuracies")
    if torch.isnan(acc).any():
        raise ValueError("acc must hold 4 accuracies, got a NaN (an empty group?)")
    w = torch.tensor([p, 1 - p, 1 - p, p], dtype=acc.dtype, device=acc.device) / 2
    return float((acc * w).sum())


def gaussian_group_accuracy(
    w: torch.Tensor, mu: torch.Tensor, cov: torch.Tensor, sign: torch.Tensor
) -> torch.Tensor:
    """Accuracy of the linear rule ``sign * <w, e> > 0`` when ``e ~ N(mu_g, cov_g)``:
    ``Phi(sign_g <w, mu_g> / sqrt(w^T cov_g w))`` per group.

    w (d,), mu (G, d), cov (G, d, d) or (d, d), sign (G,) of +-1 (the class each group
    belongs to). Returns (G,).
    """
    as_tensor(w, "w", ndim=1), as_tensor(mu, "mu", ndim=2)
    as_tensor(sign, "sign", ndim=1)
    as_tensor(cov, "cov")
    if cov.ndim == 2:
        cov = cov.expand(len(mu), -1, -1)
    if (
        cov.shape != (len(mu), len(w), len(w))
        or mu.shape[1] != len(w)
        or len(sign) != len(mu)
    ):
        raise ValueError(
            f"expected w (d,), mu (G, d), cov (G, d, d), sign (G,); got "
            f"{tuple(w.shape)}, {tuple(mu.shape)}, {tuple(cov.shape)}, "
            f"{tuple(sign.shape)}"
        )
    m = mu @ w
    s = torch.einsum("i,gij,j->g", w, cov, w).clamp(min=1e-30).sqrt()
    return torch.special.ndtr(sign * m / s)


# --------------------------------------------------------------------------------------
# orthogonal projection
# --------------------------------------------------------------------------------------


def orthonormal_basis(cols: torch.Tensor, tol: float = 1e-6) -> torch.Tensor:
    """(d, r) orthonormal basis of span(cols) for (d, m) ``cols``, by QR (columns whose
    R diagonal is below ``tol`` times the largest, i.e. dependent ones, are dropped)."""
    as_tensor(cols, "cols", ndim=2)
    Q, R = torch.linalg.qr(cols)
    diag = R.diagonal().abs()
    keep = diag > tol * diag.max().clamp(min=1e-30)
    return Q[:, keep]


def project_out(e: torch.Tensor, Q: torch.Tensor, lam: float = 1.0) -> torch.Tensor:
    """``e - lam * Q Q^T e`` for each row of ``e`` (n, d); ``Q`` (d, r) orthonormal.

    lam = 1 removes span(Q) entirely, lam in (0, 1) shrinks the component in
    it by 1 - lam.
    """
    as_tensor(e, "e", ndim=2), as_tensor(Q, "Q", ndim=2)
    lam = as_float(lam, "lam", lo=0.0, hi=1.0)
    if Q.shape[0] != e.shape[1]:
        raise ValueError(
            f"Q must be (d, r) with d = e.shape[1] = {e.shape[1]}, got {tuple(Q.shape)}"
        )
    gram = Q.T @ Q
    if (
        gram - torch.eye(Q.shape[1], dtype=Q.dtype, device=Q.device)
    ).abs().max() > 1e-4:
        raise ValueError(
            "Q must have orthonormal columns (use orthonormal_basis first)"
        )
    return e - lam * (e @ Q) @ Q.T


def random_basis(
    d: int,
    r: int,
    generator: torch.Generator | None = None,
    dtype=torch.float32,
    device=None,
) -> torch.Tensor:
    """(d, r) orthonormal basis of a uniformly random r-dimensional subspace."""
    d, r = as_int(d, "d", lo=1), as_int(r, "r", lo=1)
    if r > d:
        raise ValueError(f"r must be <= d, got r={r}, d={d}")
    g = torch.randn(d, r, generator=generator, dtype=torch.float64)
    return torch.linalg.qr(g)[0].to(dtype=dtype, device=device)
