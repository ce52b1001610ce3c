"""The chapter's calibration grid, read back from its records.

The grid itself is ``grids/19-chronoplay.json`` (preset overrides per setting, and the
world seeds), run by the book's one runner, ``python3 tasks.py sweep 19 --grid``, which
writes one record per setting under ``results/calibration/19-chronoplay/``: every
claim's measured value (and its control's) at every seed. :func:`calibration_table`
turns those records into the table the chapter prints; it takes the records' folder as
an argument and reads nothing else.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..claims import OPS


def load_records(folder: str | Path) -> dict[str, dict]:
    """Every calibration record (``<setting>.json``) in ``folder``, keyed by the
    setting's name; {} when the folder does not exist (a copy of the chapter outside
    the repository)."""
    folder = Path(folder)
    if not folder.is_dir():
        return {}
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def _passes(claim: dict, v) -> bool:
    return (
        v is not None and not math.isnan(v) and OPS[claim["op"]](v, claim["threshold"])
    )


def claim_range(record: dict, claim_id: str) -> dict | None:
    """One claim of one setting's record: {"lo", "hi" (smallest and largest value over
    the seeds), "n" (seeds measured), "held" (seeds where the value passes the claim's
    threshold and its control, if any, does not), "ctrl_lo", "ctrl_hi"}; None if the
    record has no such claim."""
    found = [c for c in record.get("claims", []) if c["id"] == claim_id]
    if not found:
        return None
    c = found[0]
    vals = [v for v in c["measured"] if v is not None]
    ctrls = [v for v in (c.get("control_measured") or []) if v is not None]
    held = 0
    controls = c.get("control_measured") or [None] * len(c["measured"])
    for v, k in zip(c["measured"], controls):
        ok = _passes(c, v)
        if c.get("control"):
            ok = ok and k is not None and not _passes(c, k)
        held += bool(ok)
    return {
        "lo": min(vals) if vals else None,
        "hi": max(vals) if vals else None,
        "n": len(vals),
        "held": held,
        "ctrl_lo": min(ctrls) if ctrls else None,
        "ctrl_hi": max(ctrls) if ctrls else None,
    }


def calibration_table(
    folder: str | Path, claim_ids: list[str], rows: list[str] | None = None
) -> str:
    """A Markdown table of the calibration records in ``folder``: one row per setting
    (those named in ``rows``, in that order; every recorded setting when None), one
    column per claim of ``claim_ids``, each cell "smallest – largest value (seeds where
    it holds / seeds)", then "/ control smallest – largest" for a claim with a control.
    A note instead of a table when there are no records."""
    records = load_records(folder)
    if not records:
        return (
            f"*(no calibration records in {Path(folder).as_posix()}: run "
            "`python3 tasks.py sweep 19 --grid`)*"
        )
    names = list(records) if rows is None else [n for n in rows if n in records]
    head = "| setting | seeds | " + " | ".join(claim_ids) + " |"
    rows = [head, "|---" * (len(claim_ids) + 2) + "|"]
    for name in names:
        rec = records[name]
        cells = []
        for cid in claim_ids:
            r = claim_range(rec, cid)
            if r is None or r["lo"] is None:
                cells.append("—")
                continue
            cell = f"{r['lo']:.3f} – {r['hi']:.3f} ({r['held']}/{r['n']})"
            if r["ctrl_lo"] is not None:
                cell += f" / {r['ctrl_lo']:.3f} – {r['ctrl_hi']:.3f}"
            cells.append(cell)
        over = ", ".join(f"{k}={v}" for k, v in rec.get("overrides", {}).items())
        label = f"**{name}**" if not over else f"{name} ({over})"
        seeds = ", ".join(str(s) for s in rec.get("seeds", []))
        rows.append(f"| {label} | {seeds} | " + " | ".join(cells) + " |")
    return "\n".join(rows)
