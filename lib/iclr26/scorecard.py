"""The scorecard: what the recorded runs and the committed seed sweeps show, and
nothing more.

Two kinds of record live under ``results/``:

* ``results/NN-slug.SCALE.json`` -- one run of a chapter at its default seed, written by
  :class:`iclr26.claims.ClaimLog` as the chapter runs (CI rewrites the ``ci``
  one every run);
* ``results/sweeps/NN-slug.ci.json`` -- the seed sweep (``python3 tasks.py seeds``):
  every claim's value, control and verdict at each seed, with a content hash of the
  chapter's notebook (its code cells) and of the library modules it imports.
  When either changes, the sweep is *stale* and must be run again.

A paper claim counts as **reproduced** only when it is asserted, held in the recorded
run (its control failing), and held at every seed of a fresh sweep of at least
:data:`MIN_SWEEP_SEEDS` seeds. Checks (derivations, identities, accounting) are counted
apart and never as reproductions.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import re
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from .claims import OPS, cell, fmt, verdict

MIN_SWEEP_SEEDS = 5
# Chapters average over seeds derived from SEED (SEED, SEED + 1, ...), so sweep seeds 0,
# 1, 2 would share most of their runs. Seeds at least this far apart share none.
MIN_SEED_GAP = 100
DEFAULT_SWEEP_SEEDS = (0, 1000, 2000, 3000, 4000)
SWEEP_SCALE = "ci"
# Modules whose changes do not change what a chapter measures (bookkeeping, plotting,
# seeding helpers shared by every chapter); a change to them does not make every
# sweep stale.
SHARED_MODULES = {"__init__", "claims", "core", "scorecard"}
PAPER_BINS = ("reproduced", "reported", "not reproduced", "unverified")


# --------------------------------------------------------------------------------------
# what a sweep is a sweep of: content hashes
# --------------------------------------------------------------------------------------
def chapter_code(notebook: str | Path) -> str:
    """The code cells of a notebook, joined: what runs, without prose or outputs."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    return "\n# ---- cell ----\n".join(
        "".join(c["source"]) for c in cells if c["cell_type"] == "code"
    )


def chapter_modules(root: str | Path, chapter: str) -> list[Path]:
    """The library files a chapter's results depend on: its own module
    (``lib/iclr26/<slug>.py`` or the subpackage ``lib/iclr26/<slug>/``) and every other
    ``iclr26`` module its code imports, except the shared bookkeeping ones
    (:data:`SHARED_MODULES`)."""
    root = Path(root)
    lib = root / "lib" / "iclr26"
    code = chapter_code(root / "notebooks" / f"{chapter}.ipynb")
    names = {chapter[3:].replace("-", "_")} | set(
        re.findall(r"\biclr26\.([A-Za-z_]\w*)", code)
    )
    files: list[Path] = []
    for name in sorted(names - SHARED_MODULES):
        if (lib / f"{name}.py").is_file():
            files.append(lib / f"{name}.py")
        elif (lib / name).is_dir():
            files += sorted(
                p for p in (lib / name).rglob("*.py") if "__pycache__" not in p.parts
            )
    return files


def normalised_code(src: str) -> str:
    """``src`` as its syntax tree without docstrings: what the code computes, not how it
    is laid out.

    The sweep hashes use this so that reformatting (line breaks, quotes, the 88
    columns), comments and docstring wording do not make a sweep stale, while any change
    to a name, a number or a statement does. Source that does not parse (a cell with an
    IPython magic) is kept as raw text.
    """
    try:
        with (
            warnings.catch_warnings()
        ):  # old invalid escapes warn; they do not matter here
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(src)
    except SyntaxError:
        return src
    bodies = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.walk(tree):
        if isinstance(node, bodies) and node.body:
            first = node.body[0]
            is_const = isinstance(first, ast.Expr) and isinstance(
                first.value, ast.Constant
            )
            if is_const and isinstance(first.value.value, str):
                del node.body[0]  # the docstring: prose, like a comment
    # ast.dump's text depends on the Python version (3.13 drops empty fields): hashes
    # computed under another minor version than CI's (environment.yml) will differ.
    return ast.dump(tree)


def chapter_hashes(root: str | Path, chapter: str) -> dict:
    """``{"notebook": sha256, "library": sha256, "library_files": [...]}`` for
    ``chapter``, over the :func:`normalised_code` of each code cell and each
    library file."""
    root = Path(root)
    notebook = root / "notebooks" / f"{chapter}.ipynb"
    if not notebook.is_file():
        raise FileNotFoundError(f"no notebook {notebook}")
    lib = hashlib.sha256()
    files = chapter_modules(root, chapter)
    for path in files:
        code = normalised_code(path.read_text())
        lib.update(
            path.relative_to(root).as_posix().encode() + b"\0" + code.encode() + b"\0"
        )
    cells = json.loads(notebook.read_text())["cells"]
    nb = hashlib.sha256()
    for c in cells:
        if c["cell_type"] == "code":
            nb.update(normalised_code("".join(c["source"])).encode() + b"\0")
    return {
        "notebook": nb.hexdigest(),
        "library": lib.hexdigest(),
        "library_files": [p.relative_to(root).as_posix() for p in files],
    }


# --------------------------------------------------------------------------------------
# sweep records
# --------------------------------------------------------------------------------------
def sweep_record(
    chapter: str,
    runs: Sequence[dict],
    hashes: dict,
    wall_s: float,
    scale: str = SWEEP_SCALE,
) -> dict:
    """The sweep of ``chapter`` from its runs, one per seed, each
    ``{"seed": int, "record": <ClaimLog record or None>, "error": str or None,
    "wall_s": float}``.

    Per claim it keeps the declaration (role, asserted, op, threshold) and, in seed
    order, the measured value, the control's value and the verdict (``None``: not
    reached at that seed).
    """
    if not runs:
        raise ValueError("a sweep needs at least one run")
    runs = sorted(runs, key=lambda r: r["seed"])
    seeds = [r["seed"] for r in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"each seed once, got {seeds}")
    for r in runs:
        if r["record"] is not None and r["record"].get("seed") != r["seed"]:
            raise ValueError(
                f"the record of the run at seed {r['seed']} says seed "
                f"{r['record'].get('seed')}"
            )
    declared: dict[str, dict] = {}
    for r in runs:
        for c in (r["record"] or {}).get("claims", []):
            declared.setdefault(
                c["id"],
                {
                    k: c.get(k)
                    for k in (
                        "id",
                        "role",
                        "asserted",
                        "op",
                        "threshold",
                        "control",
                        "no_control",
                    )
                },
            )
    claims = []
    for cid, decl in declared.items():
        by_seed = []
        for r in runs:
            found = [c for c in (r["record"] or {}).get("claims", []) if c["id"] == cid]
            by_seed.append(found[0] if found else {})
        claims.append(
            {
                **decl,
                "measured": [c.get("measured") for c in by_seed],
                "control_measured": [c.get("control_measured") for c in by_seed],
                "held": [c.get("held") for c in by_seed],
            }
        )
    return {
        "chapter": chapter,
        "scale": scale,
        "seeds": seeds,
        "hashes": hashes,
        "ran_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_s": wall_s,
        "runs": [
            {
                "seed": r["seed"],
                "error": r.get("error"),
                "warning": r.get("warning"),
                "wall_s": r.get("wall_s"),
                "runtime_s": (r["record"] or {}).get("runtime_s"),
            }
            for r in runs
        ],
        "claims": claims,
    }


def sweep_path(results_dir: str | Path, chapter: str, scale: str = SWEEP_SCALE) -> Path:
    return Path(results_dir) / "sweeps" / f"{chapter}.{scale}.json"


def load_sweeps(results_dir: str | Path) -> dict[str, dict]:
    """Every committed sweep under ``results_dir/sweeps``, keyed by chapter."""
    out = {}
    for path in sorted((Path(results_dir) / "sweeps").glob(f"*.{SWEEP_SCALE}.json")):
        record = json.loads(path.read_text())
        out[record["chapter"]] = record
    return out


def is_stale(sweep: dict, hashes: dict) -> bool:
    """Whether the chapter's notebook code or library changed since ``sweep`` ran."""
    old = sweep.get("hashes", {})
    return (
        old.get("notebook") != hashes["notebook"]
        or old.get("library") != hashes["library"]
    )


def _seed_list(seeds: Sequence[int]) -> str:
    """[0, 1, 2, 3, 4] -> "0–4"; [0, 2, 5] -> "0, 2, 5"."""
    seeds = list(seeds)
    if (
        seeds
        and seeds == list(range(seeds[0], seeds[0] + len(seeds)))
        and len(seeds) > 2
    ):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def swept_held(claim: dict) -> list[bool | None]:
    """A swept claim's verdict at each seed, recomputed from the stored values and
    threshold (so a sweep cannot carry a verdict that its own numbers contradict): the
    value passes, the control (if any) is a number and does not pass.
    ``None`` where the claim was not reached."""
    op, thr = OPS[claim["op"]], claim["threshold"]
    controls = claim.get("control_measured") or [None] * len(claim["measured"])
    out: list[bool | None] = []
    for value, ctrl in zip(claim["measured"], controls):
        if value is None:
            out.append(None)
            continue
        ok = not math.isnan(value) and op(value, thr)
        if claim.get("control"):
            ok = ok and ctrl is not None and not math.isnan(ctrl) and not op(ctrl, thr)
        out.append(bool(ok))
    return out


def sweep_usable(sweep: dict | None, hashes: dict) -> bool:
    """A sweep that can back a claim: present, fresh, enough well-separated seeds, no
    broken run."""
    return (
        sweep is not None
        and not is_stale(sweep, hashes)
        and len(sweep["seeds"]) >= MIN_SWEEP_SEEDS
        and _min_gap(sweep["seeds"]) >= MIN_SEED_GAP
        and not any(r.get("error") for r in sweep["runs"])
    )


def _min_gap(seeds: Sequence[int]) -> float:
    s = sorted(seeds)
    return min((b - a for a, b in zip(s, s[1:])), default=math.inf)


def sweep_problems(
    chapter: str,
    sweep: dict | None,
    hashes: dict,
    min_seeds: int = MIN_SWEEP_SEEDS,
    declared_ids: Sequence[str] | None = None,
) -> list[str]:
    """What stops ``chapter``'s committed sweep from backing its asserted claims
    ([] if nothing).

    A missing or stale sweep, fewer than ``min_seeds`` seeds or seeds closer than
    :data:`MIN_SEED_GAP`, a seed whose run broke, claims other than the notebook
    declares (``declared_ids``), or an asserted claim (paper claim or check) that failed
    or was not reached at some seed.
    """
    again = f"run `python3 tasks.py seeds {chapter}` and commit results/sweeps/"
    if sweep is None:
        return [f"{chapter}: no seed sweep; {again}"]
    problems = []
    if is_stale(sweep, hashes):
        changed = [
            k
            for k in ("notebook", "library")
            if sweep.get("hashes", {}).get(k) != hashes[k]
        ]
        problems.append(
            f"{chapter}: the seed sweep is stale (the chapter's "
            f"{' and '.join(changed)} "
            f"changed since it ran); {again}"
        )
    if len(sweep["seeds"]) < min_seeds:
        problems.append(
            f"{chapter}: the sweep has {len(sweep['seeds'])} seeds, at least "
            f"{min_seeds} are needed; {again}"
        )
    if _min_gap(sweep["seeds"]) < MIN_SEED_GAP:
        problems.append(
            f"{chapter}: sweep seeds {_seed_list(sweep['seeds'])} are closer than "
            f"{MIN_SEED_GAP}, so they share the runs a chapter derives from SEED + k; "
            f"use e.g. --seeds {','.join(map(str, DEFAULT_SWEEP_SEEDS))}"
        )
    for run in sweep["runs"]:
        if run.get("error"):
            problems.append(
                f"{chapter}: the run at seed {run['seed']} broke: {run['error']}"
            )
    if not sweep["claims"]:
        problems.append(f"{chapter}: the sweep recorded no claim at any seed")
    if declared_ids is not None:
        swept = {c["id"] for c in sweep["claims"]}
        if swept != set(declared_ids):
            problems.append(
                f"{chapter}: the sweep's claims {sorted(swept)} are not the ones the "
                f"notebook declares {sorted(declared_ids)}; {again}"
            )
    for c in sweep["claims"]:
        if not c.get("asserted", True):
            continue
        held = swept_held(c)
        bad = [s for s, h in zip(sweep["seeds"], held) if h is not True]
        if bad:
            k = sum(h is True for h in held)
            problems.append(
                f"{chapter}: asserted "
                f"{'paper claim' if c['role'] == 'paper' else 'check'} "
                f"{c['id']!r} did not hold at seed(s) {_seed_list(bad)} (held at "
                f"{k}/{len(held)}): fix it, or declare it reported (asserted=False) "
                "and say why where it is declared"
            )
    return problems


# --------------------------------------------------------------------------------------
# counting
# --------------------------------------------------------------------------------------
def _sweep_claim(sweep: dict | None, claim_id: str) -> dict | None:
    if sweep is None:
        return None
    return next((c for c in sweep["claims"] if c["id"] == claim_id), None)


def seeds_cell(sweep: dict | None, claim_id: str, unusable: bool) -> str:
    """E.g. "held at 5/5", "held at 3/5 (stale sweep)", "no sweep"."""
    c = _sweep_claim(sweep, claim_id)
    if c is None:
        return "no sweep"
    held = swept_held(c)
    k, n = sum(h is True for h in held), len(held)
    return f"held at {k}/{n}" + (
        " (sweep cannot back it: stale, short or broken)" if unusable else ""
    )


def classify_paper_claim(
    result: dict, sweep_claim: dict | None, sweep_fresh: bool
) -> str:
    """One of :data:`PAPER_BINS` for a paper claim's row of the recorded run.

    reproduced: asserted, held in the run and at every seed of a fresh sweep.
    reported: declared ``asserted=False`` and held at some seed (run or sweep), not all
    asserted. not reproduced: an asserted claim that failed somewhere, or a reported one
    that never held.
    unverified: not run, or asserted without a usable sweep whose declaration of the
        claim (role, asserted, op, threshold) matches the recorded run's.
    """
    held_run = result.get("held")
    same = sweep_claim is not None and all(
        sweep_claim.get(k) == result.get(k)
        for k in ("role", "asserted", "op", "threshold")
    )
    sweep_held = swept_held(sweep_claim) if (same and sweep_fresh) else []
    if result.get("asserted", True):
        if held_run is False or any(h is False for h in sweep_held):
            return "not reproduced"
        if held_run is True and sweep_held and all(h is True for h in sweep_held):
            return "reproduced"
        return "unverified"
    every = [held_run, *sweep_held]
    if any(h is True for h in every):
        return "reported"
    if any(h is False for h in every):
        return "not reproduced"
    return "unverified"


def chapter_counts(record: dict | None, sweep: dict | None, usable: bool) -> dict:
    """Counts of one chapter: paper claims by bin (and how many of the reproduced ones
    rest on a no_control sentence rather than a control), checks passed and total.
    ``usable``: whether the sweep can back claims (:func:`sweep_usable`).
    A row without a role (a run recorded before roles existed) counts as an unverified
    paper claim; a claim in the sweep but not in the recorded run counts as
    unverified too."""
    counts = {b: 0 for b in PAPER_BINS} | {
        "checks_passed": 0,
        "checks": 0,
        "paper": 0,
        "without_control": 0,
    }
    if record is None:
        return counts
    for c in record["claims"]:
        sc = _sweep_claim(sweep, c["id"])
        role = c.get("role")
        if role == "check":
            counts["checks"] += 1
            ok = c.get("held") is True and (
                not c.get("asserted", True)
                or (
                    usable and sc is not None and all(h is True for h in swept_held(sc))
                )
            )
            counts["checks_passed"] += bool(ok)
            continue
        counts["paper"] += 1
        verdict_bin = (
            classify_paper_claim(c, sc, usable) if role == "paper" else "unverified"
        )
        counts[verdict_bin] += 1
        counts["without_control"] += verdict_bin == "reproduced" and not c.get(
            "control"
        )
    recorded = {c["id"] for c in record["claims"]}
    for sc in (sweep or {}).get("claims", []):
        if sc["id"] not in recorded:
            key = "paper" if sc.get("role") == "paper" else "checks"
            counts[key] += 1
            counts["unverified"] += key == "paper"
    return counts


def chapter_status(counts: dict) -> str:
    """A chapter's counts in a few words, for the README."""
    if counts["paper"] + counts["checks"] == 0:
        return "not run"
    parts = [
        f"{counts['reproduced']}/{counts['paper']} paper claims reproduced"
        + (
            f" ({counts['without_control']} without a control)"
            if counts["without_control"]
            else ""
        )
    ]
    parts += [
        f"{counts[b]} {b}"
        for b in ("reported", "not reproduced", "unverified")
        if counts[b]
    ]
    return (
        ", ".join(parts)
        + f"; {counts['checks_passed']}/{counts['checks']} checks passed"
    )


# --------------------------------------------------------------------------------------
# the page
# --------------------------------------------------------------------------------------
def _runtime(rec: dict | None) -> str:
    return (
        "—"
        if rec is None or rec.get("runtime_s") is None
        else f"{rec['runtime_s']:.0f} s"
    )


def _sweep_words(sweep: dict | None, unusable: bool) -> str:
    if sweep is None:
        return "none"
    return f"{len(sweep['seeds'])} ({_seed_list(sweep['seeds'])})" + (
        ", UNUSABLE" if unusable else ""
    )


def scorecard_markdown(
    chapters: Sequence[str],
    results: dict[tuple[str, str], dict],
    sweeps: dict[str, dict],
    hashes: dict[str, dict],
) -> str:
    """The scorecard in Markdown: one summary table a reviewer reads first (per chapter
    and for the book), then per chapter its paper claims and its checks, each row with
    this run's value, the control's, the threshold, the verdict and the pass rate over
    the seed sweep."""
    head = [
        "| chapter | paper claims reproduced | reported | not reproduced | unverified "
        "| "
        "checks passed | run time | seeds swept |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    total = {b: 0 for b in PAPER_BINS} | {
        "checks_passed": 0,
        "checks": 0,
        "paper": 0,
        "without_control": 0,
    }
    total_time, swept = 0.0, 0
    rows = []
    for ch in chapters:
        rec = results.get((ch, SWEEP_SCALE))
        sweep = sweeps.get(ch)
        usable = sweep_usable(sweep, hashes[ch])
        n = chapter_counts(rec, sweep, usable)
        for k in total:
            total[k] += n[k]
        total_time += (rec or {}).get("runtime_s") or 0.0
        swept += usable
        nc = (
            f" ({n['without_control']} without a control)"
            if n["without_control"]
            else ""
        )
        rows.append(
            f"| {ch} | {n['reproduced']} of {n['paper']}{nc} | {n['reported']} | "
            f"{n['not reproduced']} | {n['unverified']} | "
            f"{n['checks_passed']}/{n['checks']} | "
            f"{_runtime(rec)} | "
            f"{_sweep_words(sweep, sweep is not None and not usable)} |"
        )
    nc = (
        f" ({total['without_control']} without a control)"
        if total["without_control"]
        else ""
    )
    rows.append(
        f"| **the book** | **{total['reproduced']} of {total['paper']}{nc}** | "
        f"**{total['reported']}** | **{total['not reproduced']}** | "
        f"**{total['unverified']}** | "
        f"**{total['checks_passed']}/{total['checks']}** | **{total_time:.0f} s** | "
        f"**{swept}/{len(chapters)} chapters** |"
    )
    lines = head + rows
    for ch in chapters:
        lines += ["", f"## {ch}", ""]
        recs = [r for (c, _), r in sorted(results.items()) if c == ch]
        if not recs:
            lines.append(
                "No recorded run: every claim of this chapter counts as *not run*."
            )
            continue
        sweep = sweeps.get(ch)
        unusable = sweep is not None and not sweep_usable(sweep, hashes[ch])
        for rec in recs:

            def seeds(claim_id: str, rec=rec) -> str:  # sweeps are at SCALE="ci" only
                return (
                    seeds_cell(sweep, claim_id, unusable)  # noqa: B023 called this iteration
                    if rec["scale"] == SWEEP_SCALE
                    else "—"
                )

            line = (
                f'`SCALE="{rec["scale"]}"` · seed {rec["seed"]} · run time '
                f"{_runtime(rec)}"
            )
            if rec["scale"] == SWEEP_SCALE:
                line += f" · seed sweep: {_sweep_words(sweep, unusable)}"
            lines += [line, ""]
            paper = [c for c in rec["claims"] if c.get("role") != "check"]
            checks = [c for c in rec["claims"] if c.get("role") == "check"]
            if paper:
                lines += [
                    "Paper claims:",
                    "",
                    "| claim | paper's figure | our figure | control | threshold | "
                    "this run | "
                    "seeds | kind |",
                    "| --- | --- | --- | --- | --- | --- | --- | --- |",
                ]
                for c in paper:
                    if c.get("control"):
                        ctrl = (
                            f"{fmt(c.get('control_measured'))} ({cell(c['control'])})"
                        )
                    elif c.get("no_control"):
                        ctrl = f"none: {cell(c['no_control'])}"
                    else:
                        ctrl = "—"
                    lines.append(
                        f"| **{c['id']}** {cell(c['text'])} | "
                        f"{cell(c.get('paper', '—'))} | "
                        f"{fmt(c['measured'])} | {ctrl} | {c['op']} "
                        f"{fmt(c['threshold'])} | "
                        f"{verdict(c, c.get('asserted', True))} | "
                        f"{seeds(c['id'])} | "
                        f"{c.get('kind') or '—'} |"
                    )
                lines.append("")
            if checks:
                lines += [
                    "Checks (not counted as reproductions):",
                    "",
                    "| check | measured | threshold | this run | seeds |",
                    "| --- | --- | --- | --- | --- |",
                ]
                for c in checks:
                    lines.append(
                        f"| **{c['id']}** {cell(c['text'])} | {fmt(c['measured'])} | "
                        f"{c['op']} {fmt(c['threshold'])} | "
                        f"{verdict(c, c.get('asserted', True))} | "
                        f"{seeds(c['id'])} |"
                    )
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"
