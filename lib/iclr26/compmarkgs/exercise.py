"""The chapter's coding exercise: the detection threshold of a watermark test."""

from __future__ import annotations

import math
from fractions import Fraction

from ..core import ExerciseVerdict, grade_exercise


def detection_threshold(L: int, alpha: float) -> int:
    """The smallest k with P(Bin(L, ½) ≥ k) ≤ alpha (L + 1 if none of 0..L).

    Declaring "watermarked" when at least k of L bits match then has a false-positive
    rate ≤ alpha on unwatermarked scenes (whose bits match by chance)."""
    if isinstance(L, bool) or not isinstance(L, int) or L < 1:
        raise ValueError(f"L must be a positive int, got {L!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    a = Fraction(alpha)
    tail = Fraction(1)  # P(X ≥ 0)
    for k in range(L + 1):
        if tail <= a:
            return k
        tail -= Fraction(math.comb(L, k), 2**L)  # P(X ≥ k + 1) = P(X ≥ k) − P(X = k)
    return L + 1


CASES = [(16, 0.05), (16, 0.01), (16, 0.011), (8, 0.01), (32, 1e-3), (48, 1e-6)]
CASES += [(1, 0.4), (4, 0.07), (64, 0.05), (3, 0.2)]


def check_detection_threshold(fn) -> ExerciseVerdict:
    """Grade a student's ``fn(L, alpha) -> int``: the smallest number of matching bits
    k with P(Bin(L, ½) ≥ k) ≤ alpha."""
    return grade_exercise(fn, _trial)


def _trial(fn) -> str:
    for L, alpha in CASES:
        got = fn(L, alpha)
        if isinstance(got, bool) or not isinstance(got, int):
            raise AssertionError(
                f"return an int (a number of bits), got {type(got).__name__}"
            )
        want = detection_threshold(L, alpha)
        if got == want:
            continue
        tail = sum(math.comb(L, i) for i in range(max(got, 0), L + 1)) / 2**L
        if got < want:
            raise AssertionError(
                f"for L={L}, alpha={alpha} your k={got} lets P(X >= k) = {tail:.3g} "
                "exceed alpha: the false-positive rate is the tail P(X >= k), not "
                "P(X = k) or P(X > k)"
            )
        raise AssertionError(
            f"for L={L}, alpha={alpha} your k={got} is safe but not the smallest: a "
            "smaller k keeps P(X >= k) <= alpha too (check your off-by-one)"
        )
    return f"your threshold agrees with the exact tail on {len(CASES)} cases"
