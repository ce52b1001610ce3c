"""Chapter 10's calibration grid: the whole notebook re-run at other sizes and
generator settings (one factor at a time around the ``ci`` preset), every claim's
measured and control value written as one JSON line per setting.

It executes the notebook's own code cells (so the numbers are the chapter's, not a
prototype's), with the overrides applied right after the cell that defines ``cfg``.
Run as a script; the chapter prints the table, it does not re-run it:

    python -m iclr26.horseshoe_splat.calibration out.jsonl [setting names...]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks/10-horseshoe-splat.ipynb"

# (name, seed, overrides): cfg fields by name; ARC, ELEV, CHECKER as the notebook's
# constants; "objects": a random scene with that many objects instead of the default.
GRID = [
    ("ci", 0, {}),
    ("ci, seed 1", 1, {}),
    ("24 px, 200 splats", 0, dict(size=24, n_splats=200)),
    ("40 px, 450 splats", 0, dict(size=40, n_splats=450)),
    ("32 px, 150 splats", 0, dict(n_splats=150)),
    ("checks 0.35 wide", 0, dict(CHECKER=0.35)),
    ("checks 0.35 wide, seed 1", 1, dict(CHECKER=0.35)),
    ("random 5-object scene", 0, dict(objects=5)),
    ("elevation 40°", 0, dict(ELEV=40.0)),
]
CONSTANTS = ("ARC", "ELEV", "CHECKER")
DEFAULT_SCENE = "sp.ProceduralScene.default()"


def code_cells(path: Path = NOTEBOOK) -> list[str]:
    """The notebook's code cells that run (``skip-execution`` cells left out)."""
    cells = json.loads(path.read_text())["cells"]
    return [
        "".join(c["source"])
        for c in cells
        if c["cell_type"] == "code"
        and "skip-execution" not in c["metadata"].get("tags", [])
    ]


def run_setting(seed: int, overrides: dict) -> dict:
    """Run the chapter at ``seed`` with ``overrides``; return ``{claim: result}``
    (each result as :class:`iclr26.ClaimLog` records it) plus ``_cpu`` seconds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # before the notebook's cells: each closes figures

    t0 = time.process_time()
    ns: dict = {}
    cells = code_cells()
    for k, src in enumerate(cells):
        if "SCALE = " in src and "SEED = " in src:  # the parameters cell
            src += f"\nSCALE = 'ci'\nSEED = {seed}\n"
        if "objects" in overrides and DEFAULT_SCENE in src:
            n = int(overrides["objects"])
            src = src.replace(DEFAULT_SCENE, f"sp.ProceduralScene.random({n}, seed=0)")
        exec(compile(src, f"<cell {k}>", "exec"), ns)
        if "cfg" in ns and "_applied" not in ns:  # right after cfg is defined
            for key, v in overrides.items():
                if key in CONSTANTS:
                    ns[key] = v
                elif key != "objects":
                    setattr(ns["cfg"], key, v)
            ns["_applied"] = True
        plt.close("all")
    out = dict(ns["log"].results)
    out["_cpu"] = time.process_time() - t0
    return out


def main(argv: list[str]) -> None:
    """Write one JSON line per setting of :data:`GRID` (or the named ones)."""
    path, names = argv[0], set(argv[1:])
    os.environ["ICLR26_RESULTS_DIR"] = tempfile.mkdtemp()  # keep results/ clean
    os.environ["ICLR26_CLAIMS_RAISE"] = "0"  # record failures, do not stop
    with open(path, "a") as fh:
        for name, seed, ov in GRID:
            if names and name not in names:
                continue
            try:
                res = run_setting(seed, ov)
            except Exception as e:  # a broken setting is a row, not a crash
                res = {"_error": repr(e)}
            fh.write(json.dumps(dict(setting=name, seed=seed, **res)) + "\n")
            fh.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
