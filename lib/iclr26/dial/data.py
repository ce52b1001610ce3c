"""Digits on land or water: the planted-correlation data and its captions."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..validate import as_float, as_int

# --------------------------------------------------------------------------------------
# data: digits on land or water
# --------------------------------------------------------------------------------------

VOCAB = [
    "<pad>",
    "a",
    "photo",
    "of",
    "low",
    "high",
    "digit",
    "on",
    "land",
    "water",
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
]
TOK = {w: i for i, w in enumerate(VOCAB)}
CLASS_WORDS = ("low", "high")
ATTR_WORDS = ("land", "water")
GROUP_NAMES = ("low/land", "low/water", "high/land", "high/water")  # index 2*y + b


def _smooth_noise(
    rng: np.random.Generator, n: int, size: int, cells: int
) -> np.ndarray:
    """(n, size, size) value noise: a random cells x cells grid, bilinearly
    upsampled."""
    g = torch.from_numpy(rng.random((n, 1, cells, cells)).astype(np.float32))
    return F.interpolate(g, size=(size, size), mode="bilinear", align_corners=True)[
        :, 0
    ].numpy()


def backgrounds(kind: str, n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 3, size, size) procedural textures in [0, 1]: ``"land"`` or ``"water"``."""
    if kind not in ATTR_WORDS:
        raise ValueError(f"kind must be 'land' or 'water', got {kind!r}")
    yy, xx = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    if kind == "land":  # rough brown-green noise at two scales, a random earthy tint
        tex = 0.6 * _smooth_noise(rng, n, size, 4) + 0.4 * _smooth_noise(
            rng, n, size, 12
        )
        tint = np.stack(
            [
                rng.uniform(0.35, 0.6, n),
                rng.uniform(0.3, 0.55, n),
                rng.uniform(0.1, 0.25, n),
            ],
            1,
        )
    else:  # blue waves: a random direction, frequency and phase, plus a little noise
        ang = rng.uniform(0, np.pi, n)[:, None, None]
        freq = rng.uniform(0.3, 0.8, n)[:, None, None]
        ph = rng.uniform(0, 2 * np.pi, n)[:, None, None]
        tex = 0.5 + 0.35 * np.sin(freq * (np.cos(ang) * xx + np.sin(ang) * yy) + ph)
        tex = tex + 0.15 * _smooth_noise(rng, n, size, 8)
        tint = np.stack(
            [
                rng.uniform(0.05, 0.2, n),
                rng.uniform(0.3, 0.5, n),
                rng.uniform(0.55, 0.8, n),
            ],
            1,
        )
    img = tint[:, :, None, None] * (0.5 + tex[:, None])
    return np.clip(img, 0, 1).astype(np.float32)


def make_spurious_digits(
    n: int,
    p_corr: float | None,
    rng: np.random.Generator,
    pool: np.ndarray | None = None,
    size: int = 24,
) -> dict:
    """``n`` digits pasted on land or water backgrounds.

    ``p_corr``: ``P(b = y)`` (the spurious correlation); ``None`` draws ``b``
    independently of ``y``, balanced over the four groups (the test and validation
    distribution).
    ``pool``: indices into scikit-learn's 1797 digits to draw from (keeps splits
    disjoint). Returns a dict of NumPy arrays: ``images`` (n, 3, size, size) float32,
    ``y`` (0 low, 1 high), ``b`` (0 land, 1 water), ``digit`` (0-9),
    ``group`` (2 y + b).
    """
    from sklearn.datasets import load_digits

    n = as_int(n, "n", lo=1)
    size = as_int(size, "size", lo=18)
    if p_corr is not None:
        as_float(p_corr, "p_corr", lo=0.0, hi=1.0)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator, got {type(rng).__name__}"
        )
    digits = load_digits()
    pool = np.arange(len(digits.target)) if pool is None else np.asarray(pool)
    if pool.ndim != 1 or pool.size == 0:
        raise ValueError("pool must be a non-empty 1-d array of digit indices")
    if p_corr is None:  # balanced groups: each (y, b) a quarter
        grp = rng.permutation(np.arange(n) % 4)
        y, b = grp // 2, grp % 2
    else:
        y = rng.integers(0, 2, n)
        b = np.where(rng.random(n) < p_corr, y, 1 - y)
    # draw a digit of the right class from the pool
    idx = np.empty(n, dtype=int)
    for cls in (0, 1):
        cand = pool[(digits.target[pool] >= 5) == cls]
        idx[y == cls] = rng.choice(cand, size=int((y == cls).sum()))
    glyph = np.kron(digits.images[idx] / 16.0, np.ones((2, 2)))  # (n, 16, 16)
    img = np.empty((n, 3, size, size), dtype=np.float32)
    for kind_i, kind in enumerate(ATTR_WORDS):
        m = b == kind_i
        img[m] = backgrounds(kind, int(m.sum()), size, rng)
    alpha = np.zeros((n, size, size), dtype=np.float32)
    off = rng.integers(0, size - 16 + 1, (n, 2))
    for i in range(n):  # a 16 x 16 paste per image; cheap at these sizes
        r, c = off[i]
        alpha[i, r : r + 16, c : c + 16] = glyph[i]
    # near-white ink, random tint
    color = rng.uniform(0.8, 1.0, (n, 3)).astype(np.float32)
    img = img * (1 - alpha[:, None]) + color[:, :, None, None] * alpha[:, None]
    return dict(images=img, y=y, b=b, digit=digits.target[idx], group=2 * y + b)


def captions(
    y: np.ndarray,
    b: np.ndarray,
    digit: np.ndarray,
    rng: np.random.Generator,
    p_attr: float = 0.5,
    p_name: float = 0.0,
) -> np.ndarray:
    """(n, 9) token ids of "a photo of a {low|high} digit [{name}] [on {land|water}]".

    The background words appear with probability ``p_attr``, the digit's name with
    ``p_name``; padding is token 0.
    """
    p_attr = as_float(p_attr, "p_attr", lo=0.0, hi=1.0)
    p_name = as_float(p_name, "p_name", lo=0.0, hi=1.0)
    n = len(y)
    out = np.zeros((n, 9), dtype=np.int64)
    out[:, 0], out[:, 1], out[:, 2], out[:, 3] = (
        TOK["a"],
        TOK["photo"],
        TOK["of"],
        TOK["a"],
    )
    out[:, 4] = np.where(y == 1, TOK["high"], TOK["low"])
    out[:, 5] = TOK["digit"]
    name = rng.random(n) < p_name
    out[:, 6] = np.where(name, TOK["zero"] + np.asarray(digit), 0)
    attr = rng.random(n) < p_attr
    out[:, 7] = np.where(attr, TOK["on"], 0)
    out[:, 8] = np.where(attr, np.where(b == 1, TOK["water"], TOK["land"]), 0)
    return out


def prompt(words: str) -> torch.Tensor:
    """(1, L) token ids of a prompt such as ``"a photo of a low digit"``."""
    if not isinstance(words, str):
        raise TypeError(f"words must be a str, got {type(words).__name__}")
    bad = [w for w in words.split() if w not in TOK]
    if bad or not words.split():
        raise ValueError(
            f"prompt words must come from VOCAB, got unknown {bad or words!r}"
        )
    return torch.tensor([[TOK[w] for w in words.split()]])
