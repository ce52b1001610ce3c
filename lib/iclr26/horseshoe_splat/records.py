"""The chapter's calibration records as a table: what ``python3 tasks.py sweep 10
--grid`` wrote under ``results/calibration/10-horseshoe-splat/`` (one JSON record per
setting of ``grids/10-horseshoe-splat.json``), read back and tabulated."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Mapping


def load_records(folder: str | Path) -> dict[str, dict]:
    """Every calibration record under ``folder``, keyed by its setting's name ({}
    when the folder does not exist, e.g. in Colab outside a clone)."""
    folder = Path(folder)
    if not folder.is_dir():
        return {}
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def _cell(claim: dict | None, digits: int) -> str:
    """A claim's value at each seed (" / " between seeds), the control's in brackets."""
    if claim is None:
        return "—"

    def num(v):
        return "—" if v is None or math.isnan(v) else f"{v:+.{digits}f}"

    controls = claim.get("control_measured") or [None] * len(claim["measured"])
    parts = []
    for v, c in zip(claim["measured"], controls):
        parts.append(num(v) + ("" if c is None else f" ({num(c)})"))
    return " / ".join(parts)


def calibration_table(
    folder: str | Path, columns: Mapping[str, str], digits: int = 3
) -> str:
    """The records under ``folder`` as a Markdown table: one row per setting (its
    name, overrides and seeds), one column per claim id of ``columns`` (id -> column
    header), each cell the measured value (the control's in brackets) at each seed,
    and the run time. Says so when there are no records."""
    records = load_records(folder)
    if not records:
        return f"*No calibration records under `{folder}`.*"
    head = "| setting | overrides | seeds | " + " | ".join(columns.values())
    rows = [head + " | run time (s) |", "|---" * (len(columns) + 4) + "|"]
    for name, rec in records.items():
        by_id = {c["id"]: c for c in rec["claims"]}
        over = ", ".join(f"{k}={v}" for k, v in rec.get("overrides", {}).items())
        times = [r.get("runtime_s") for r in rec.get("runs", [])]
        secs = " / ".join("—" if t is None else f"{t:.0f}" for t in times)
        cells = [_cell(by_id.get(cid), digits) for cid in columns]
        seeds = ", ".join(map(str, rec["seeds"]))
        rows.append(
            f"| {name} | {over or '—'} | {seeds} | "
            + " | ".join(cells)
            + f" | {secs} |"
        )
    return "\n".join(rows)
