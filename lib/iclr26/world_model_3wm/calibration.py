"""The chapter's calibration grid, in code, and what it measured.

``calibration_cell(H, setting, seed)`` trains one model on a world of ``H x H`` frames
drawn with generator setting ``SETTINGS[setting]`` (training stream ``seed + 1``, test
stream ``seed + 2``: disjoint from the notebook's ``SEED + 100_000`` and
``SEED + 500_000``) and returns every number the chapter's claims measure.
``GRID`` lists the cells the chapter reports and ``RESULTS`` what they gave (one run
each, on one CPU thread, before the thresholds were fixed).
"""

from __future__ import annotations

import time

from .pathways import evaluate, fit_world_model, layout_prior
from .world import make_tabletop_batch

SETTINGS = {
    "default": dict(n_obj=3, checker=0.5, layout_jitter=0.0),
    "jitter": dict(n_obj=3, checker=0.5, layout_jitter=1.0),
    "sparse": dict(n_obj=2, checker=1.0, layout_jitter=0.0),
    "busy": dict(n_obj=5, checker=0.35, layout_jitter=0.0),
}
GRID = [
    (16, "default", 0),
    (16, "sparse", 0),
    (16, "busy", 0),
    (12, "default", 0),
    (20, "default", 0),
    (16, "default", 1000),
    (16, "jitter", 0),
]


def calibration_cell(
    H: int, setting: str, seed: int, steps: int = 800, n_train: int = 4000
) -> dict:
    """Every measured number of the chapter for one grid cell (floats), plus the
    cell's description and its CPU seconds."""
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {list(SETTINGS)}, got {setting!r}")
    t0 = time.process_time()
    kw = SETTINGS[setting]
    train = make_tabletop_batch(n_train, H, seed=seed + 1, **kw)
    test = make_tabletop_batch(256, H, seed=seed + 2, **kw)
    wm = fit_world_model(train, steps=steps, seed=seed)
    r = evaluate(wm, test, layout_prior(train, 4), seed=seed)
    r.update(H=H, setting=setting, seed=seed, cpu=time.process_time() - t0)
    return r


RESULTS: list[dict] = []  # filled from the grid run: see the chapter


def calibration_table(rows: list[dict] | None = None) -> str:
    """The grid's results as a Markdown table."""
    rows = RESULTS if rows is None else rows
    head = (
        "| H | setting | seed | AbsRel flow | via RGB | prior | PSNR flow − cam "
        "| other flow − cam | chain − cam | hit | hit, no flow | PSNR model − paste |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r['H']} | {r['setting']} | {r['seed']} | {r['depth_flow']:.3f} "
        f"| {r['depth_rgb']:.3f} | {r['depth_prior']:.3f} "
        f"| {r['psnr_flow'] - r['psnr_cam']:+.2f} "
        f"| {r['psnr_flow_other'] - r['psnr_cam']:+.2f} "
        f"| {r['psnr_chain'] - r['psnr_cam']:+.2f} | {r['hit']:.2f} "
        f"| {r['hit_noflow']:.2f} | {r['psnr_manip'] - r['psnr_paste']:+.2f} |\n"
        for r in rows
    )
    return head + body
