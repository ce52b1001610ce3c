"""Part-birds: procedural 'birds' with four parts and ground-truth part masks.

Each image holds one bird on a textured background. The four parts (1 head, 2 body,
3 wing, 4 tail; 0 is background) each have a fixed *texture* that says which part it
is (the head has an eye, the wing stripes, the tail dots, the body is plain), and a
*colour* that carries the class: a class is a tuple (head colour, wing colour, tail
colour), so two classes can differ by one part only. The body colour is a grey
nuisance. Each part has its own hues (:func:`part_colours`).
The pose jitters (translation, scale, left/right facing). Everything is NumPy with an
explicit ``numpy.random.Generator``; images are float32 in [0, 1].
"""

from __future__ import annotations

import numpy as np

from ..validate import as_int

PARTS = ("background", "head", "body", "wing", "tail")
MAX_COLOURS = 4  # colours per part


def part_colours(n_colours: int) -> np.ndarray:
    """RGB of colour c of part p: float32 [3 parts (head, wing, tail), n_colours, 3].

    Each part has its own hues (interleaved around the colour wheel), so a class's
    colours say which part they belong to; the body is a grey nuisance.
    """
    if not 2 <= n_colours <= MAX_COLOURS:
        raise ValueError(f"n_colours must be in [2, {MAX_COLOURS}], got {n_colours}")
    import colorsys

    hue = (np.arange(n_colours)[None] * 3 + np.arange(3)[:, None]) / (3 * n_colours)
    rgb = [[colorsys.hsv_to_rgb(h, 0.85, 0.95) for h in row] for row in hue]
    return np.asarray(rgb, dtype=np.float32)


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator, got {type(rng).__name__}"
        )
    return rng


def class_table(n_classes: int, n_colours: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n_classes`` distinct (head, wing, tail) colour tuples -> int [C, 3]."""
    _check_rng(rng)
    if not isinstance(n_classes, (int, np.integer)) or isinstance(n_classes, bool):
        raise TypeError(f"n_classes must be an int, got {type(n_classes).__name__}")
    if not 2 <= n_colours <= MAX_COLOURS:
        raise ValueError(f"n_colours must be in [2, {MAX_COLOURS}], got {n_colours}")
    if not 2 <= n_classes <= n_colours**3:
        raise ValueError(f"n_classes must be in [2, {n_colours**3}], got {n_classes}")
    codes = rng.choice(n_colours**3, size=n_classes, replace=False)
    return np.stack(
        [codes // n_colours**2, (codes // n_colours) % n_colours, codes % n_colours],
        axis=1,
    )


def make_part_birds(
    n: int,
    classes: np.ndarray,
    rng: np.random.Generator,
    size: int = 24,
    jitter: float = 1.0,
    labels: np.ndarray | None = None,
    n_colours: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw ``n`` part-birds.

    classes: int [C, 3], the colour tuple of each class (see :func:`class_table`).
    jitter: scale of the pose variation (0 = every bird at the same place and size).
    labels: optional int [n] to draw given classes, else uniform.
    n_colours: colours per part (default: the largest index in ``classes`` + 1).
    Returns (images float32 [n, 3, size, size], labels int64 [n],
    part_mask int64 [n, size, size] with values in 0..4, see ``PARTS``).
    """
    _check_rng(rng)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    classes = np.asarray(classes)
    n_colours = int(classes.max()) + 1 if n_colours is None else n_colours
    if classes.ndim != 2 or classes.shape[1] != 3:
        raise ValueError(f"classes must be [C, 3], got shape {classes.shape}")
    if size < 16:
        raise ValueError(f"size must be >= 16 pixels, got {size}")
    if not np.isfinite(jitter) or jitter < 0:
        raise ValueError(f"jitter must be finite and >= 0, got {jitter}")
    y = rng.integers(0, len(classes), n) if labels is None else np.asarray(labels)
    if y.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {y.shape}")
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) + 0.5
    yy, xx = yy[None] / size, xx[None] / size  # [1, H, W] in (0, 1)
    u = lambda lo, hi: rng.uniform(lo, hi, (n, 1, 1)).astype(np.float32)
    j = np.float32(jitter)
    s = 1.0 + j * u(-0.15, 0.15)  # scale
    cx, cy = 0.5 + j * u(-0.08, 0.08), 0.52 + j * u(-0.08, 0.08)
    face = np.where(rng.random((n, 1, 1)) < 0.5, 1.0, -1.0).astype(np.float32)
    dx = (xx - cx) * face / s / 1.3  # bird frame: +x points to the head
    dy = (yy - cy) / s / 1.3
    body = (dx / 0.24) ** 2 + (dy / 0.15) ** 2 <= 1
    hx, hy = dx - 0.25, dy + 0.12
    head = hx**2 + hy**2 <= 0.11**2
    eye = (hx - 0.03) ** 2 + (hy + 0.02) ** 2 <= 0.03**2
    wing = ((dx + 0.02) / 0.16) ** 2 + ((dy + 0.03) / 0.08) ** 2 <= 1
    tx = -dx - 0.2  # tail: a triangle behind the body
    tail = (tx >= 0) & (tx <= 0.18) & (np.abs(dy + 0.02) <= 0.04 + 0.5 * tx)
    mask = np.zeros((n, size, size), dtype=np.int64)
    for k, m in ((4, tail), (2, body), (3, wing), (1, head)):  # paint order
        mask[m] = k
    # background: a smooth random field, grey with a faint random tint
    grey = rng.uniform(0.3, 0.6, (n, 1, 1, 1))
    bg_col = (grey + rng.uniform(-0.08, 0.08, (n, 3, 1, 1))).astype(np.float32)
    f1, f2 = u(2, 6), u(2, 6)
    ph = u(0, 2 * np.pi)
    field = 0.5 + 0.5 * np.sin(2 * np.pi * (f1 * xx + f2 * yy) + ph)
    img = bg_col * (0.75 + 0.35 * field[:, None])
    noise = rng.normal(0, 0.04, (n, 3, size, size)).astype(np.float32)
    pal = part_colours(max(n_colours, 2))
    col = pal[np.arange(3), classes[y]]  # [n, 3 parts, 3 rgb]
    body_col = np.repeat(rng.uniform(0.35, 0.8, (n, 1)), 3, 1).astype(np.float32)
    stripes = (np.floor((dx + dy) * size / 2.0 / s) % 2 == 0)[:, None]
    dots = (np.floor(xx * size) % 3 == 0)[:, None] & (np.floor(yy * size) % 3 == 0)[
        :, None
    ]
    paint = {
        2: body_col[:, :, None, None] * np.ones_like(img),
        1: col[:, 0, :, None, None] * np.where(eye[:, None], 0.1, 1.0),
        3: col[:, 1, :, None, None] * np.where(stripes, 1.0, 0.45),
        4: col[:, 2, :, None, None] * np.where(dots, 0.3, 1.0),
    }
    for k, p in paint.items():
        img = np.where((mask == k)[:, None], p, img)
    img = np.clip(img + noise, 0, 1).astype(np.float32)
    return img, y.astype(np.int64), mask


def patch_parts(
    part_mask: np.ndarray, patch: int, min_cover: float = 0.25
) -> np.ndarray:
    """Which parts each patch holds: bool [n, 5, h, w] (p covers >= min_cover of it).

    part_mask: int [n, H, W] with values in 0..4; ``patch`` must divide H and W.
    """
    patch = as_int(patch, "patch", lo=1)
    part_mask = np.asarray(part_mask)
    if part_mask.ndim != 3:
        raise ValueError(f"part_mask must be [n, H, W], got shape {part_mask.shape}")
    n, H, W = part_mask.shape
    if H % patch or W % patch:
        raise ValueError(f"patch {patch} must divide the image size {H}x{W}")
    onehot = part_mask[:, None] == np.arange(len(PARTS))[None, :, None, None]
    cover = onehot.reshape(n, len(PARTS), H // patch, patch, W // patch, patch)
    return cover.mean(axis=(3, 5)) >= min_cover
