"""The chapter's calibrations, run as scripts; the chapter shows the tables they
wrote, it does not re-run them (they take several CPU minutes).

* ``lr``: each method's learning rate, chosen on the **validation split** (the last
  ``n_val`` training images, never the test split) from the same grid, with the same
  steps and batch, at seeds outside the chapter's sweep; the rate with the best mean
  validation accuracy over those seeds is the one the ``ci`` preset uses.
* ``grid``: every claim's numbers at other sizes and generator settings (one factor
  at a time around the ``ci`` preset), to fix which claims are asserted and their
  thresholds before the seed sweep.

Each script appends JSON lines to a file; its first line records the library's hash
(as the seed sweep computes it) and the settings, so a committed table can be traced to
the code that made it. ``table`` renders a file as the chapter's markdown table::

    cd results/calibration
    python -m iclr26.ivpt.calibration lr 14-ivpt-lr.jsonl [seed ...]
    python -m iclr26.ivpt.calibration grid 14-ivpt-grid.jsonl [setting ...]
    python -m iclr26.ivpt.calibration table 14-ivpt-lr.jsonl
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from . import experiment as E

LR_GRID = (3e-3, 1e-2, 3e-2, 1e-1, 3e-1)
LR_SEEDS = (101, 102, 103)  # not the sweep's seeds (0, 1000, ..., 4000)
GRID_SEED = 101  # the grid, too, runs outside the sweep

GRID = [
    ("base", {}),
    ("jitter 0.5", dict(jitter=0.5)),
    ("jitter 1.5", dict(jitter=1.5)),
    ("jitter 2", dict(jitter=2.0)),
    ("jitter 3", dict(jitter=3.0)),
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


def header(mode: str) -> dict:
    """The first line of a calibration file: the library hash and the settings."""
    from iclr26.scorecard import chapter_hashes

    root = Path(__file__).resolve().parents[3]
    lib = chapter_hashes(root, "14-ivpt")["library"]
    return dict(mode=mode, library=lib, ci=E.CI, lr_grid=LR_GRID, lr_seeds=LR_SEEDS)


def read(path) -> list[dict]:
    """The rows of a calibration file (its header lines left out)."""
    lines = [json.loads(t) for t in Path(path).read_text().splitlines() if t.strip()]
    return [r for r in lines if "mode" not in r]


def lr_table(rows: list[dict]) -> str:
    """The learning-rate table: validation accuracy per seed, and the mean."""
    seeds = sorted({r["seed"] for r in rows})
    grid = sorted({r["lr"] for r in rows})
    head = " / ".join(map(str, seeds))
    out = [
        f"| learning rate | VPT-Deep: validation accuracy at seeds {head} (mean) "
        "| IVPT (mean) |",
        "|---|---|---|",
    ]
    for lr in grid:
        cells = []
        for m in ("vpt", "ivpt"):
            v = [
                r[f"{m}_val"]
                for s in seeds
                for r in rows
                if r["lr"] == lr and r["seed"] == s
            ]
            cells.append(
                " / ".join(f"{x:.3f}" for x in v) + f" ({sum(v) / len(v):.3f})"
            )
        out.append(f"| {lr:g} | {cells[0]} | {cells[1]} |")
    chosen = choose_lr(rows, grid)
    out.append("")
    out.append(f"Chosen: VPT-Deep {chosen['vpt']:g}, IVPT {chosen['ivpt']:g}.")
    return "\n".join(out)


def grid_table(rows: list[dict]) -> str:
    """The calibration grid as the chapter shows it."""
    f = lambda r, m, k: f"{r[m][k]:.3f}" if m in r and k in r[m] else "—"
    out = [
        "| setting | test accuracy: VPT-Deep / IVPT / last-only "
        "| purity: VPT-Deep / by place alone / IVPT / by place alone / fixed windows "
        "| consistency: VPT-Deep / IVPT | final purity: IVPT / last-only / k-means "
        "| bird share |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        acc = " / ".join(f(r, m, "acc") for m in ("vpt", "ivpt", "ivpt_last"))
        pur = " / ".join(
            f(r, m, k)
            for m, k in (
                ("vpt", "purity"),
                ("vpt", "pos_purity"),
                ("ivpt", "purity"),
                ("ivpt", "pos_purity"),
                ("windows", "purity"),
            )
        )
        con = " / ".join(f(r, m, "consistency") for m in ("vpt", "ivpt"))
        fin = " / ".join(
            [
                f(r, "ivpt", "final_purity"),
                f(r, "ivpt_last", "final_purity"),
                f(r, "kmeans", "purity"),
            ]
        )
        out.append(
            f"| {r['setting']} | {acc} | {pur} | {con} | {fin} "
            f"| {f(r, 'ivpt', 'max_share')} |"
        )
    return "\n".join(out)


def table(path) -> str:
    """The markdown table of a calibration file (lr or grid, from its header)."""
    first = json.loads(Path(path).read_text().splitlines()[0])
    rows = read(path)
    return lr_table(rows) if first["mode"] == "lr" else grid_table(rows)


if __name__ == "__main__":
    mode, path, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "table":
        print(table(path))
        sys.exit()
    with open(path, "a") as f:
        f.write(json.dumps(header(mode)) + "\n")
    cache: dict = {}
    if mode == "lr":
        seeds = tuple(int(a) for a in rest) or LR_SEEDS
        for r in lr_rows(seeds=seeds, cache=cache):
            with open(path, "a") as f:
                f.write(json.dumps(r) + "\n")
    else:
        for name, ov in GRID:
            if rest and name not in rest:
                continue
            row = grid_row(name, ov, GRID_SEED, cache)
            with open(path, "a") as f:
                f.write(json.dumps(row) + "\n")
