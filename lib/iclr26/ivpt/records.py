"""The chapter's calibration tables, read from the records the book's runner wrote.

The calibration is the chapter itself run at other settings and seeds
(``python3 tasks.py sweep 14 --set KEY=VALUE --name NAME --seeds ...``, or every
setting of ``grids/14-ivpt.json`` with ``--grid``); each setting's record holds every
claim's value and control per seed. These functions take the folder of those records
as an argument and turn them into the tables the chapter shows; they run nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

LR_PREFIX = "lr-"  # the learning-rate settings: lr-0.003, lr-0.01, ...


def load(folder: str | Path) -> dict[str, dict]:
    """Every record in ``folder`` (``results/calibration/14-ivpt``), keyed by the
    setting's name (the file's stem)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no calibration records in {folder}")
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def values(record: dict, claim_id: str, control: bool = False) -> list[float | None]:
    """A claim's measured values (or its control's) in ``record``, in seed order."""
    for c in record["claims"]:
        if c["id"] == claim_id:
            v = c["control_measured"] if control else c["measured"]
            return list(v or [None] * len(record["seeds"]))
    raise KeyError(f"no claim {claim_id!r} in the record {record.get('name')!r}")


def _mean(xs: list[float | None]) -> float:
    xs = [x for x in xs if x is not None]
    if not xs:
        raise ValueError("no value recorded")
    return sum(xs) / len(xs)


def lr_rows(records: dict[str, dict]) -> list[dict]:
    """Per learning-rate setting (names starting ``lr-``, sorted by rate): the rate,
    the seeds, and each method's validation accuracy per seed (VPT-Deep: the
    diagnostic ``val-vpt``; IVPT: the check ``trains``)."""
    rows = []
    for name, rec in records.items():
        if not name.startswith(LR_PREFIX):
            continue
        rate = rec["overrides"]["lr_ivpt"]
        if rec["overrides"].get("lr_vpt") != rate:
            raise ValueError(f"{name}: a learning-rate setting sets both rates alike")
        rows.append(
            dict(
                lr=rate,
                seeds=rec["seeds"],
                vpt=values(rec, "val-vpt"),
                ivpt=values(rec, "trains"),
            )
        )
    if not rows:
        raise ValueError("no learning-rate setting (lr-...) among the records")
    return sorted(rows, key=lambda r: r["lr"])


def chosen_rates(records: dict[str, dict]) -> dict[str, float]:
    """Each method's rate: the best mean validation accuracy over the seeds (a tie
    keeps the smallest rate)."""
    rows = lr_rows(records)
    return {
        m: max(rows, key=lambda r: (_mean(r[m]), -r["lr"]))["lr"]
        for m in ("vpt", "ivpt")
    }


def lr_table(records: dict[str, dict]) -> str:
    """The learning-rate table: validation accuracy per seed, and the mean."""
    rows = lr_rows(records)
    seeds = " / ".join(map(str, rows[0]["seeds"]))
    out = [
        f"| learning rate | VPT-Deep: validation accuracy at seeds {seeds} (mean) "
        "| IVPT (mean) |",
        "|---|---|---|",
    ]
    for r in rows:
        cells = [
            " / ".join(f"{x:.3f}" for x in r[m]) + f" ({_mean(r[m]):.3f})"
            for m in ("vpt", "ivpt")
        ]
        out.append(f"| {r['lr']:g} | {cells[0]} | {cells[1]} |")
    chosen = chosen_rates(records)
    out += ["", f"Chosen: VPT-Deep {chosen['vpt']:g}, IVPT {chosen['ivpt']:g}."]
    return "\n".join(out)


# the grid table's columns: a heading and the (claim id, control?) values it joins
GRID_COLUMNS = (
    ("test accuracy, IVPT − VPT-Deep", (("acc", False),)),
    (
        "purity: IVPT / VPT-Deep / fixed windows",
        (("interp", False), ("interp", True), ("windows", False)),
    ),
    (
        "margin over the modal regions: IVPT / VPT-Deep",
        (("interp-position", False), ("interp-position", True)),
    ),
    ("consistency: IVPT / VPT-Deep", (("interp-huang", False), ("interp-huang", True))),
    (
        "final purity: full − last-only / − k-means",
        (("cross-layer", False), ("interp-kmeans", False)),
    ),
    ("bird share", (("no-collapse", False),)),
    ("validation accuracy: IVPT / VPT-Deep", (("trains", False), ("val-vpt", False))),
)


def grid_table(records: dict[str, dict], names: list[str], seed: int) -> str:
    """The one-factor grid at one ``seed``: a row per setting of ``names`` (in that
    order), each cell the values its heading names, joined by " / "."""
    out = [
        "| setting | " + " | ".join(h for h, _ in GRID_COLUMNS) + " |",
        "|---" * (len(GRID_COLUMNS) + 1) + "|",
    ]
    for name in names:
        rec = records[name]
        if seed not in rec["seeds"]:
            raise ValueError(f"{name} was not run at seed {seed}: {rec['seeds']}")
        k = rec["seeds"].index(seed)
        cells = []
        for _, parts in GRID_COLUMNS:
            vs = [values(rec, cid, ctrl)[k] for cid, ctrl in parts]
            cells.append(" / ".join("—" if x is None else f"{x:.3f}" for x in vs))
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)
