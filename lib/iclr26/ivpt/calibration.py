"""The chapter's calibrations, run as scripts; the chapter shows the tables they
wrote, it does not re-run them (they take several CPU minutes).

* ``lr``: each method's learning rate, chosen on the **validation split** (the last
  ``n_val`` training images, never the test split) from the same grid, with the same
  steps and batch, at seeds outside the chapter's sweep; the rate with the best mean
  validation accuracy over those seeds is the one the ``ci`` preset uses.
* ``grid``: every claim's numbers at other sizes and generator settings (one factor
  at a time around the ``ci`` preset), to fix which claims are asserted and their
  thresholds before the seed sweep.

``python -m iclr26.ivpt.calibration lr out.jsonl`` or ``... grid out.jsonl [names]``.
"""

from __future__ import annotations

import json
import sys
import time
from types import SimpleNamespace

from . import experiment as E

LR_GRID = (3e-3, 1e-2, 3e-2)
LR_SEEDS = (101, 102, 103)  # not the sweep's seeds (0, 1000, ..., 4000)

GRID = [
    ("base", {}),
    ("jitter 0.5", dict(jitter=0.5)),
    ("jitter 1.5", dict(jitter=1.5)),
    ("8 classes", dict(n_classes=8)),
    ("32 classes", dict(n_classes=32)),
    ("100 steps", dict(steps=100)),
    ("400 steps", dict(steps=400)),
    ("n_train 800", dict(n_train=800)),
    ("n_train 3200", dict(n_train=3200)),
    # what carries IVPT's training (ablations, not settings)
    ("no equivariance loss", dict(equivariance=False)),
    ("no feature standardisation", dict(standardise=False)),
]


def lr_rows(seeds=LR_SEEDS, grid=LR_GRID, cache: dict | None = None):
    """Validation accuracy of VPT-Deep and IVPT at each learning rate and seed."""
    cache = {} if cache is None else cache
    for seed in seeds:
        for lr in grid:
            cfg = SimpleNamespace(**{**E.CI, "lr_vpt": lr, "lr_ivpt": lr})
            t0 = time.process_time()
            res = E.run(cfg, seed, models=("vpt", "ivpt"), cache=cache)
            yield dict(
                seed=seed,
                lr=lr,
                vpt_val=res["vpt"]["val_acc"],
                ivpt_val=res["ivpt"]["val_acc"],
                cpu=time.process_time() - t0,
            )


def choose_lr(rows: list[dict], grid=LR_GRID) -> dict:
    """The rate with the best mean validation accuracy, per method."""
    out = {}
    for m in ("vpt", "ivpt"):
        mean = {
            lr: sum(r[f"{m}_val"] for r in rows if r["lr"] == lr)
            / max(1, sum(r["lr"] == lr for r in rows))
            for lr in grid
        }
        out[m] = max(mean, key=mean.get)
    return out


GRID_MODELS = ("vpt", "ivpt", "ivpt_last", "kmeans")  # the claims' models


def grid_row(
    name: str, overrides: dict, seed: int, cache: dict, lrs: dict | None = None
) -> dict:
    """One setting: accuracy, consistency and purity of the claims' models (every
    model in the base row)."""
    cfg = SimpleNamespace(**{**E.CI, **(lrs or {}), **overrides})
    models = dict(models=GRID_MODELS) if name != "base" else {}
    if {"equivariance", "standardise"} & set(overrides):  # only IVPT changes
        models = dict(models=("ivpt",))
    res = E.run(cfg, seed, cache=cache, **models)
    out = dict(setting=name, seed=seed, cpu=res["_cpu"])
    for k, v in res.items():
        if not k.startswith("_"):
            out[k] = v
    return out


if __name__ == "__main__":
    mode, path, names = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    cache: dict = {}
    if mode == "lr":
        rows = []
        for r in lr_rows(cache=cache):
            rows.append(r)
            with open(path, "a") as f:
                f.write(json.dumps(r) + "\n")
        with open(path, "a") as f:
            f.write(json.dumps(dict(chosen=choose_lr(rows))) + "\n")
    else:
        for name, ov in GRID:
            if names and name not in names:
                continue
            row = grid_row(name, ov, 0, cache)
            with open(path, "a") as f:
                f.write(json.dumps(row) + "\n")
