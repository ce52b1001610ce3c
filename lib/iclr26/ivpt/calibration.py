"""The chapter's calibration grid: every claim's numbers at other sizes and generator
settings (one factor at a time around the ``ci`` preset). Run as a script; the chapter
prints the table it wrote, it does not re-run it."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

from . import experiment as E

GRID = [
    ("base", {}),
    ("jitter 0.5", dict(jitter=0.5)),
    ("jitter 1.5", dict(jitter=1.5)),
    ("8 classes", dict(n_classes=8)),
    ("32 classes", dict(n_classes=32)),
    ("100 steps", dict(steps=100)),
    ("400 steps", dict(steps=400)),
    ("n_train 1000", dict(n_train=1000)),
    ("n_train 4000", dict(n_train=4000)),
]


def row(name: str, overrides: dict, seed: int) -> dict:
    """One setting: accuracy, consistency and purity of every model."""
    cfg = SimpleNamespace(**{**E.CI, **overrides})
    res = E.run(cfg, seed)
    out = dict(setting=name, seed=seed, cpu=res["_cpu"])
    for k, v in res.items():
        if not k.startswith("_"):
            out[k] = v
    return out


if __name__ == "__main__":  # python -m iclr26.ivpt.calibration out.jsonl [names...]
    path, names = sys.argv[1], set(sys.argv[2:])
    for name, ov in GRID:
        if names and name not in names:
            continue
        seed = int(name.split()[1]) if name.startswith("seed") else 0
        with open(path, "a") as f:
            f.write(json.dumps(row(name, ov, seed)) + "\n")
