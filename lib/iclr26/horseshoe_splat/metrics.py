"""Uncertainty metrics: sparsification error (AUSE), Gaussian NLL, Spearman's ρ."""

from __future__ import annotations

import math

import torch

Tensor = torch.Tensor


def sparsification_curves(
    err: Tensor, unc: Tensor, n_fractions: int = 100
) -> tuple[Tensor, Tensor, Tensor]:
    """Sparsification curves of per-pixel errors ``err`` (P,) ranked by ``unc`` (P,).

    For each fraction f in {0, 1/K, ..., (K−1)/K} (K = ``n_fractions``), remove the
    ⌊fP⌋ pixels with the largest uncertainty and take the mean error of the rest;
    the oracle removes the largest errors instead. Both curves are divided by the mean
    error of all pixels, so they start at 1. Pixels whose uncertainties tie (the
    background's σ = 0, a constant σ) are removed in a random order, in expectation:
    each member of a tied group counts with the group's mean error, so the curve does
    not depend on the pixels' order (a constant σ gives the flat curve 1, the
    expected curve of a random order). Returns (fractions (K,), curve (K,),
    oracle (K,)).
    """
    err, unc = _check_pair(err, unc)
    if isinstance(n_fractions, bool) or not isinstance(n_fractions, int):
        raise TypeError(f"n_fractions must be an int, got {type(n_fractions).__name__}")
    if n_fractions < 2:
        raise ValueError(f"n_fractions must be >= 2, got {n_fractions}")
    P = err.numel()
    base = err.mean()
    if not base > 0:
        raise ValueError("all errors are 0: sparsification is undefined")
    frac = torch.arange(n_fractions, dtype=err.dtype, device=err.device) / n_fractions
    keep = P - torch.floor(frac * P).long()  # pixels kept at each fraction, ≥ 1
    order = torch.argsort(unc, descending=True, stable=True)  # most uncertain first
    by_unc = _tie_mean(err[order], unc[order])
    by_err = torch.sort(err, descending=True).values
    # mean of the last `keep` entries = (suffix sum) / keep, from reversed cumsums
    suf_unc = torch.cumsum(by_unc.flip(0), 0)[keep - 1]
    suf_err = torch.cumsum(by_err.flip(0), 0)[keep - 1]
    return frac, suf_unc / keep / base, suf_err / keep / base


def _tie_mean(values: Tensor, keys: Tensor) -> Tensor:
    """``values`` (P,) with each run of equal ``keys`` (P,, sorted) replaced by the
    run's mean: the expected value at each place when ties are broken at random."""
    new = torch.ones_like(keys, dtype=torch.bool)
    new[1:] = keys[1:] != keys[:-1]
    gid = torch.cumsum(new.long(), 0) - 1  # the tied group of each place
    n_groups = int(gid[-1]) + 1
    sums = torch.zeros(n_groups, dtype=values.dtype, device=values.device)
    sums.index_add_(0, gid, values)
    counts = torch.bincount(gid, minlength=n_groups).to(values.dtype)
    return (sums / counts)[gid]


def ause(err: Tensor, unc: Tensor, n_fractions: int = 100) -> float:
    """Area under the sparsification error: mean over fractions of curve − oracle.

    err, unc: (P,) per-pixel error and uncertainty. 0 when ``unc`` orders the pixels
    as the errors do; larger is worse (about ½ for a random order of spread errors).
    Ties in ``unc`` are averaged (see :func:`sparsification_curves`): a constant
    ``unc`` scores exactly what a random order scores in expectation.
    """
    _, curve, oracle = sparsification_curves(err, unc, n_fractions)
    return float((curve - oracle).mean())  # ∫₀¹ (E_unc(f) − E_oracle(f)) df


def gaussian_nll(y: Tensor, mu: Tensor, var: Tensor) -> float:
    """Mean Gaussian negative log-likelihood ½ log(2π var) + (y − μ)²/(2 var), any
    equal shapes (var broadcast); var must be > 0."""
    for name, t in (("y", y), ("mu", mu), ("var", var)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point torch.Tensor")
        if not torch.isfinite(t).all():
            raise ValueError(f"{name} contains NaN or inf")
    if y.shape != mu.shape:
        raise ValueError(
            f"y and mu shapes differ: {tuple(y.shape)} vs {tuple(mu.shape)}"
        )
    if y.numel() == 0:
        raise ValueError("y is empty")
    if not (var > 0).all():
        raise ValueError("var must be > 0 everywhere")
    nll = 0.5 * (torch.log(2 * math.pi * var) + (y - mu) ** 2 / var)
    return float(nll.mean())


def spearman(x: Tensor, y: Tensor) -> float:
    """Spearman's rank correlation of x, y (P,): Pearson's r of their ranks (ties get
    their average rank, as scipy.stats.spearmanr does)."""
    x, y = _check_pair(x, y)
    rx, ry = _rank(x), _rank(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = (rx.norm() * ry.norm()).clamp_min(torch.finfo(rx.dtype).tiny)
    return float((rx * ry).sum() / den)


def _rank(v: Tensor) -> Tensor:
    """Average ranks (0-based) of v (P,), ties averaged."""
    uniq, inv, counts = torch.unique(v, return_inverse=True, return_counts=True)
    start = torch.cumsum(counts, 0) - counts  # first rank of each distinct value
    avg = start.to(torch.float64) + (counts.to(torch.float64) - 1) / 2
    return avg[inv]


def _check_pair(a, b) -> tuple[Tensor, Tensor]:
    for name, t in (("err", a), ("unc", b)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point torch.Tensor")
    a, b = a.reshape(-1), b.reshape(-1)
    if a.numel() != b.numel():
        raise ValueError(f"need equal sizes, got {a.numel()} and {b.numel()}")
    if a.numel() < 2:
        raise ValueError("need at least 2 pixels")
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        raise ValueError("inputs contain NaN or inf")
    return a, b


def check_ause(fn) -> "ExerciseVerdict":  # noqa: F821 string annotation only
    """Grade a student's ``fn(err, unc) -> float``: the AUSE of :func:`ause` (100
    fractions 0, 1/100, ..., 99/100; curves divided by the mean error of all pixels;
    the mean over fractions of the curve minus the oracle)."""
    from ..core import grade_exercise

    return grade_exercise(fn, _trial_ause)


def _trial_ause(fn) -> str:
    g = torch.Generator().manual_seed(11)
    for case in range(6):
        P = int(torch.randint(150, 900, (1,), generator=g))
        err = torch.rand(P, generator=g, dtype=torch.float64) ** 2
        noise = torch.rand(P, generator=g, dtype=torch.float64)
        unc = err + (0.1 + 0.4 * case / 5) * noise
        want = ause(err, unc)
        got = fn(err.clone(), unc.clone())
        if not isinstance(got, (float, int)) and not (
            isinstance(got, torch.Tensor) and got.numel() == 1
        ):
            raise AssertionError("return one number (a float), the area")
        got = float(got)
        if abs(got - want) <= 1e-6 * max(1.0, abs(want)):
            continue
        if abs(got - ause(err, -unc)) < 1e-6:
            raise AssertionError(
                "your curve removes the most *certain* pixels first; sparsification "
                "removes the most uncertain ones"
            )
        if abs(float(fn(err.clone(), err.clone()))) > 1e-9:
            raise AssertionError(
                "with the errors themselves as the uncertainty your area is not 0: "
                "the oracle curve and the curve ranked by uncertainty must coincide "
                "then (check how you sort and which pixels you remove)"
            )
        raise AssertionError(
            f"case {case}: got {got:.6f}, which is not the area the definition "
            "gives; check the normalisation (divide both curves by the mean error of "
            "all pixels) and the fractions (0, 1/100, ..., 99/100: floor(f·P) "
            "pixels removed)"
        )
    return "correct: your AUSE matches the library's on 6 random cases"
