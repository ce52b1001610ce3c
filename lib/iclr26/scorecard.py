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

Each paper claim gets one of three outcomes (:func:`paper_verdicts`):

* **reproduced** -- asserted, held in the recorded run (its control failing) and at
  every seed of a fresh sweep of at least :data:`MIN_SWEEP_SEEDS` seeds, and its
  planted case (a check with ``power_of``) passed everywhere: the experiment could have
  shown the effect, and did;
* **not reproduced** -- its planted case passed everywhere, and the method missed the
  threshold somewhere (or is reported and did not hold everywhere);
* **untestable here** -- its planted case is missing or failed somewhere (or its null
  case met the threshold): the experiment could not have shown the effect, so its
  verdict says nothing about the paper.

Two more bins exist so that nothing is hidden: *held, not asserted* (a reported claim
that held everywhere; it must say why it stays reported) and *unverified* (not run, or
no fresh sweep backs it). Checks are counted apart and never as reproductions;
diagnostics (controls, ablations, oracles) are shown and never counted.
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

from .claims import OPS, cell, claim_anchor, fmt, verdict

MIN_SWEEP_SEEDS = 5
# Chapters average over seeds derived from SEED (SEED, SEED + 1, ...), so sweep seeds 0,
# 1, 2 would share most of their runs. Seeds at least this far apart share none.
MIN_SEED_GAP = 100
DEFAULT_SWEEP_SEEDS = (0, 1000, 2000, 3000, 4000)
SWEEP_SCALE = "ci"
# Modules that record and count, and compute nothing a chapter measures: a change to
# them does not make a sweep stale. Every other module a chapter runs, directly or
# through another module's imports (core's seeding and presets included), is hashed.
BOOKKEEPING_MODULES = {"__init__", "claims", "scorecard"}
PAPER_BINS = (
    "reproduced",
    "not reproduced",
    "untestable here",
    "held, not asserted",
    "unverified",
)
# The three outcomes a reader is told about; the other two bins must stay empty on a
# healthy main (a test says so) and are shown where they are not.
OUTCOMES = PAPER_BINS[:3]
# The second set of CPU kernels a sweep runs its first seed under
# (ATEN_CPU_CAPABILITY), so that a verdict that hinges on the last digits shows.
OTHER_CPU = {"AVX512": "avx2", "AVX2": "default", "DEFAULT": "avx2"}


# --------------------------------------------------------------------------------------
# what a sweep is a sweep of: content hashes
# --------------------------------------------------------------------------------------
def chapter_code(notebook: str | Path) -> str:
    """The code cells of a notebook, joined: what runs, without prose or outputs."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    return "\n# ---- cell ----\n".join(
        "".join(c["source"]) for c in cells if c["cell_type"] == "code"
    )


def _imported(code: str, package: str | None = None) -> set[str]:
    """The top-level ``iclr26`` modules (``deep_mf``, ``revisual_r1``, ``core``) that
    ``code`` imports: ``import iclr26.x``, ``from iclr26.x import``,
    ``from iclr26 import x``, and, inside the package ``package`` of the library,
    relative imports (``from .x import``, ``from ..y import``). Names imported from
    the top level (``from iclr26 import Claim``) count as ``core``, where they live."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(code)
    except SyntaxError:  # a cell with an IPython magic: fall back to the text
        return set(re.findall(r"\biclr26\.([A-Za-z_]\w*)", code))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "iclr26" and len(parts) > 1:
                    out.add(parts[1])
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                parts = (node.module or "").split(".")
                if parts[0] != "iclr26":
                    continue
                if len(parts) > 1:
                    out.add(parts[1])
                else:  # from iclr26 import deep_mf, Claim
                    out.update(a.name for a in node.names)
                    out.add("core")
            else:
                # a relative import inside lib/iclr26/<package>/: level 1 stays in the
                # package, level 2 reaches the top level (from ..harness import x)
                if package is None or node.level == 1:
                    if package is not None:
                        out.add(package)
                    elif node.module:  # a top-level module: from .core import x
                        out.add(node.module.split(".")[0])
                    else:
                        out.update(a.name for a in node.names)
                    continue
                if node.module:
                    out.add(node.module.split(".")[0])
                else:
                    out.update(a.name for a in node.names)
    return out


def _component_files(lib: Path, name: str) -> list[Path]:
    """The files of the library component ``name``: ``lib/iclr26/<name>.py`` or every
    file of the subpackage ``lib/iclr26/<name>/``; [] if there is none (a name such
    as ``Claim`` that is not a module)."""
    if (lib / f"{name}.py").is_file():
        return [lib / f"{name}.py"]
    if (lib / name).is_dir():
        return sorted(
            p for p in (lib / name).rglob("*.py") if "__pycache__" not in p.parts
        )
    return []


def chapter_modules(root: str | Path, chapter: str) -> list[Path]:
    """The library files a chapter's results depend on: its own module
    (``lib/iclr26/<slug>.py`` or the subpackage ``lib/iclr26/<slug>/``), every other
    ``iclr26`` module its code imports, and, following the library's own imports,
    every module those import in turn (chapter 17 trains through
    ``revisual_r1.grpo``), except the bookkeeping ones (:data:`BOOKKEEPING_MODULES`).
    A subpackage counts whole: importing one of its files runs its ``__init__``."""
    root = Path(root)
    lib = root / "lib" / "iclr26"
    code = chapter_code(root / "notebooks" / f"{chapter}.ipynb")
    todo = [chapter[3:].replace("-", "_"), *sorted(_imported(code))]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name in BOOKKEEPING_MODULES:
            continue
        files = _component_files(lib, name)
        if not files:
            continue
        seen.add(name)
        package = name if (lib / name).is_dir() else None
        for path in files:
            todo.extend(sorted(_imported(path.read_text(), package) - seen))
    files: list[Path] = []
    for name in sorted(seen):
        files += _component_files(lib, name)
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


def colab_only(src: str) -> bool:
    """True for the chapter's install cell: nothing but imports and one ``if
    "google.colab" in sys.modules:`` block. Outside Colab it does nothing, so it cannot
    change a recorded number, and the sweep hashes leave it out (pointing it at another
    release or fork does not make a sweep stale). Any other statement in the cell, and
    it counts like every other cell."""
    try:
        body = ast.parse(src).body
    except SyntaxError:
        return False
    guards = [
        n
        for n in body
        if isinstance(n, ast.If)
        and ast.unparse(n.test) == "'google.colab' in sys.modules"
        and not n.orelse
    ]
    rest = [n for n in body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    return len(guards) == 1 and rest == guards


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
        if c["cell_type"] == "code" and not colab_only("".join(c["source"])):
            nb.update(normalised_code("".join(c["source"])).encode() + b"\0")
    return {
        "notebook": nb.hexdigest(),
        "library": lib.hexdigest(),
        "library_files": [p.relative_to(root).as_posix() for p in files],
    }


# --------------------------------------------------------------------------------------
# sweep records
# --------------------------------------------------------------------------------------
DECLARATION = (
    "id",
    "role",
    "asserted",
    "op",
    "threshold",
    "control",
    "no_control",
    "headline",
    "variant_of",
    "power_of",
    "null_of",
    "no_power",
    "why_not_asserted",
)


def sweep_record(
    chapter: str,
    runs: Sequence[dict],
    hashes: dict,
    wall_s: float,
    scale: str = SWEEP_SCALE,
    overrides: dict | None = None,
    other_cpu: Sequence[dict] = (),
) -> dict:
    """The sweep of ``chapter`` from its runs, one per seed, each
    ``{"seed": int, "record": <ClaimLog record or None>, "error": str or None,
    "wall_s": float}``.

    Per claim it keeps the declaration (role, asserted, op, threshold, links) and, in
    seed order, the measured value, the control's value and the verdict (``None``: not
    reached at that seed). Per run it keeps where it ran (floats differ across CPUs)
    and the fingerprints of the data it drew. ``overrides``: the preset keys changed
    for every run (a calibration setting; ``{}`` for the committed sweep).
    ``other_cpu``: runs of the same code at the first seed under another set of CPU
    kernels, each ``{"seed", "capability", "record", "error"}``.
    """
    if not runs:
        raise ValueError("a sweep needs at least one run")
    runs = sorted(runs, key=lambda r: r["seed"])
    seeds = [r["seed"] for r in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"each seed once, got {seeds}")
    for r in [*runs, *other_cpu]:
        if r["record"] is not None and r["record"].get("seed") != r["seed"]:
            raise ValueError(
                f"the record of the run at seed {r['seed']} says seed "
                f"{r['record'].get('seed')}"
            )
    declared: dict[str, dict] = {}
    for r in runs:
        for c in (r["record"] or {}).get("claims", []):
            declared.setdefault(c["id"], {k: c.get(k) for k in DECLARATION})
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
        "overrides": dict(overrides or {}),
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
                # where it ran (iclr26.claims.machine): floats differ across CPUs
                "machine": (r["record"] or {}).get("machine"),
                # fingerprints of the data it drew (ClaimLog.record_data)
                "data": (r["record"] or {}).get("data", {}),
            }
            for r in runs
        ],
        "claims": claims,
        "other_cpu": [
            {
                "seed": r["seed"],
                "capability": r.get("capability"),
                "error": r.get("error"),
                "machine": (r["record"] or {}).get("machine"),
                "claims": [
                    {k: c.get(k) for k in ("id", "measured", "control_measured")}
                    for c in (r["record"] or {}).get("claims", [])
                ],
            }
            for r in other_cpu
        ],
    }


def sweep_path(results_dir: str | Path, chapter: str, scale: str = SWEEP_SCALE) -> Path:
    return Path(results_dir) / "sweeps" / f"{chapter}.{scale}.json"


def calibration_path(results_dir: str | Path, chapter: str, name: str) -> Path:
    """Where a run of ``chapter`` at another setting (``tasks.py sweep --set``) is
    recorded: ``results/calibration/<chapter>/<name>.json``."""
    if not re.fullmatch(r"[A-Za-z0-9_.=,+-]+", name):
        raise ValueError(
            f"a setting's name is letters, digits and _ . = , + -, got {name!r}"
        )
    return Path(results_dir) / "calibration" / chapter / f"{name}.json"


def load_sweeps(results_dir: str | Path) -> dict[str, dict]:
    """Every committed sweep under ``results_dir/sweeps``, keyed by chapter."""
    out = {}
    for path in sorted((Path(results_dir) / "sweeps").glob(f"*.{SWEEP_SCALE}.json")):
        record = json.loads(path.read_text())
        out[record["chapter"]] = record
    return out


def load_paper_figures(results_dir: str | Path) -> dict[str, dict]:
    """What each paper reports for the chapter's paper claims whose declaration gives
    no ``paper=`` figure: ``results/paper-figures/<chapter>.json``, keyed by chapter,
    then by claim id. An entry is ``{"figure": str, "where": str, "checked": bool}``
    (``checked``: read in the paper's own text or abstract, not only in the project's
    notes) or ``{"figure": None, "why_none": str}`` (a theorem, a trend, a number the
    paper does not give). These are sources, not measurements: they live beside the
    records so that correcting one does not make a chapter's sweep stale."""
    out = {}
    for path in sorted((Path(results_dir) / "paper-figures").glob("*.json")):
        record = json.loads(path.read_text())
        out[record["chapter"]] = record["claims"]
    return out


def paper_figure_words(claim: dict, entry: dict | None) -> str:
    """What the scorecard says the paper reports for ``claim``: the declaration's own
    ``paper`` figure, else the chapter's paper-figures entry, else "—"."""
    if claim.get("paper", "—") != "—":
        return claim["paper"]
    if not entry:
        return "—"
    if entry.get("figure"):
        checked = "" if entry.get("checked") else ", unverified"
        return f"{entry['figure']} ({entry['where']}{checked})"
    return f"no number: {entry['why_none']}"


def load_calibrations(results_dir: str | Path, chapter: str) -> dict[str, dict]:
    """Every recorded setting of ``chapter`` under ``results_dir/calibration``, keyed
    by the setting's name."""
    folder = Path(results_dir) / "calibration" / chapter
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


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


def held_value(claim: dict, value: float | None, ctrl: float | None) -> bool | None:
    """Whether one measured value (and its control's) holds under a claim's declared
    op and threshold: the value passes, and the control, where one is declared, is a
    number that does not. ``None`` where the value was not measured."""
    if value is None:
        return None
    op, thr = OPS[claim["op"]], claim["threshold"]
    ok = not math.isnan(value) and op(value, thr)
    if claim.get("control"):
        ok = ok and ctrl is not None and not math.isnan(ctrl) and not op(ctrl, thr)
    return bool(ok)


def swept_held(claim: dict) -> list[bool | None]:
    """A swept claim's verdict at each seed, recomputed from the stored values and
    threshold (so a sweep cannot carry a verdict that its own numbers contradict): the
    value passes, the control (if any) is a number and does not pass.
    ``None`` where the claim was not reached."""
    controls = claim.get("control_measured") or [None] * len(claim["measured"])
    return [held_value(claim, v, c) for v, c in zip(claim["measured"], controls)]


def cpu_flips(sweep: dict) -> list[tuple[str, str, int]]:
    """The claims whose verdict differs between a seed's run and the same seed's run
    under other CPU kernels (``sweep["other_cpu"]``), as (claim id, capability,
    seed)."""
    out = []
    for other in sweep.get("other_cpu", []):
        if other.get("error") or other["seed"] not in sweep["seeds"]:
            continue
        k = sweep["seeds"].index(other["seed"])
        theirs = {c["id"]: c for c in other["claims"]}
        for c in sweep["claims"]:
            if c.get("role") == "diagnostic" or c["id"] not in theirs:
                continue
            mine = swept_held(c)[k]
            t = theirs[c["id"]]
            if held_value(c, t["measured"], t["control_measured"]) != mine:
                out.append((c["id"], other.get("capability") or "?", other["seed"]))
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
    """What stops ``chapter``'s committed sweep from backing its claims ([] if
    nothing).

    A missing or stale sweep, fewer than ``min_seeds`` seeds or seeds closer than
    :data:`MIN_SEED_GAP`, a seed whose run broke, claims other than the notebook
    declares (``declared_ids``), an asserted claim (paper claim or check) that failed
    or was not reached at some seed, or whose verdict changes under other CPU kernels
    (or no run under them), a reported paper claim that held at every seed without a
    reason for staying reported (``why_not_asserted``), a run that recorded no
    fingerprint of the data it drew, and two seeds that drew the same data.
    """
    again = f"run `python3 tasks.py sweep {chapter}` and commit results/sweeps/"
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
    if sweep.get("overrides"):
        problems.append(
            f"{chapter}: the committed sweep ran with overrides {sweep['overrides']}; "
            "the sweep is of the chapter as it stands (settings go to "
            "results/calibration/)"
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
        held = swept_held(c)
        k = sum(h is True for h in held)
        if c.get("asserted", True):
            bad = [s for s, h in zip(sweep["seeds"], held) if h is not True]
            if bad:
                problems.append(
                    f"{chapter}: asserted "
                    f"{'paper claim' if c['role'] == 'paper' else 'check'} "
                    f"{c['id']!r} did not hold at seed(s) {_seed_list(bad)} (held at "
                    f"{k}/{len(held)}): fix it, or declare it reported "
                    "(asserted=False) and say why where it is declared"
                )
        elif (
            c.get("role") == "paper"
            and held
            and k == len(held)
            and not c.get("why_not_asserted")
        ):
            problems.append(
                f"{chapter}: reported paper claim {c['id']!r} held at every seed "
                f"({k}/{len(held)}): assert it (saying where it is declared that the "
                "sweep before the promotion showed it), or give one sentence why it "
                "stays reported (why_not_asserted=...)"
            )
    if not sweep.get("other_cpu"):
        problems.append(
            f"{chapter}: the sweep has no run under other CPU kernels, so a verdict "
            f"that hinges on the last digits cannot show; {again}"
        )
    for other in sweep.get("other_cpu", []):
        if other.get("error"):
            problems.append(
                f"{chapter}: the run at seed {other['seed']} under "
                f"{other.get('capability')} kernels broke: {other['error']}"
            )
    asserted = {c["id"] for c in sweep["claims"] if c.get("asserted", True)}
    for cid, cap, seed in cpu_flips(sweep):
        if cid in asserted:
            problems.append(
                f"{chapter}: asserted claim {cid!r} changes verdict at seed {seed} "
                f"under {cap} CPU kernels: a claim that hinges on the last digits is "
                "not asserted"
            )
    seen: dict[str, tuple[int, str]] = {}
    for run in sweep["runs"]:
        if run.get("error"):
            continue
        if not run.get("data"):
            problems.append(
                f"{chapter}: the run at seed {run['seed']} recorded no fingerprint of "
                "the data it drew (log.record_data), so the independence of the "
                "sweep's seeds cannot be checked"
            )
        for name, fp in (run.get("data") or {}).items():
            if fp in seen and seen[fp][0] != run["seed"]:
                s0, n0 = seen[fp]
                problems.append(
                    f"{chapter}: seeds {s0} and {run['seed']} drew the same data "
                    f"({n0!r} at {s0}, {name!r} at {run['seed']}): sweep seeds must "
                    "not share a training or test draw"
                )
            seen.setdefault(fp, (run["seed"], name))
    return problems


# --------------------------------------------------------------------------------------
# the three outcomes
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


def _everywhere(result: dict, sweep_claim: dict | None) -> list[bool | None]:
    """A claim's verdict in the recorded run, then at each sweep seed."""
    return [result.get("held"), *(swept_held(sweep_claim) if sweep_claim else [])]


def _where(seeds: Sequence[int], held: Sequence[bool | None]) -> str:
    """The recorded run and the sweep seeds at which ``held`` (run first) is not
    True."""
    bad = ["the recorded run"] if held[0] is not True else []
    bad += [str(s) for s, h in zip(seeds, held[1:]) if h is not True]
    return ", ".join(bad)


def paper_verdicts(record: dict | None, sweep: dict | None, usable: bool) -> dict:
    """For each paper claim of the recorded run ``record``: ``{"bin": one of
    PAPER_BINS, "why": a few words}``, decided over the run and the seed sweep
    (``usable``: whether the sweep can back claims, :func:`sweep_usable`).

    unverified: not run, no usable sweep, or a sweep whose declaration of the claim
    (or of its planted case) differs from the run's. untestable here: no planted case
    (a check with ``power_of``), or one that did not hold in the run or at some seed,
    or a null case (``null_of``) that met the claim's threshold somewhere.
    reproduced: asserted and held in the run and at every seed. held, not asserted:
    reported and held everywhere. not reproduced: the rest.
    """
    if record is None:
        return {}
    seeds = (sweep or {}).get("seeds", [])
    out = {}
    for c in record["claims"]:
        if c.get("role", "paper") != "paper":
            continue
        sc = _sweep_claim(sweep, c["id"])

        def same(a: dict, b: dict | None) -> bool:
            return b is not None and all(
                b.get(k) == a.get(k) for k in ("role", "asserted", "op", "threshold")
            )

        if c.get("role") is None:
            out[c["id"]] = {"bin": "unverified", "why": "recorded before roles"}
            continue
        if c.get("held") is None:
            out[c["id"]] = {"bin": "unverified", "why": "not run"}
            continue
        if not (usable and same(c, sc)):
            out[c["id"]] = {"bin": "unverified", "why": "no fresh sweep backs it"}
            continue
        cases = [
            k
            for k in record["claims"]
            if k.get("role") == "check"
            and c["id"] in (k.get("power_of"), k.get("null_of"))
        ]
        planted = [k for k in cases if k.get("power_of")]
        verdict_ = None
        if not planted:
            why = "no planted case" + (
                f": {c['no_power']}" if c.get("no_power") else ""
            )
            verdict_ = {"bin": "untestable here", "why": why}
        for k in cases:
            ks = _sweep_claim(sweep, k["id"])
            if not same(k, ks):
                verdict_ = {
                    "bin": "unverified",
                    "why": f"no fresh sweep backs its case {k['id']}",
                }
                break
            held = _everywhere(k, ks)
            if not all(h is True for h in held):
                word = "planted case" if k.get("power_of") else "null case"
                did = (
                    "missed the threshold" if k.get("power_of") else "met the threshold"
                )
                verdict_ = {
                    "bin": "untestable here",
                    "why": f"its {word} {k['id']} {did} at {_where(seeds, held)}",
                }
                break
        if verdict_ is None:
            held = _everywhere(c, sc)
            if all(h is True for h in held):
                if c.get("asserted", True):
                    verdict_ = {"bin": "reproduced", "why": ""}
                else:
                    verdict_ = {
                        "bin": "held, not asserted",
                        "why": c.get("why_not_asserted") or "no reason given",
                    }
            else:
                k = sum(h is True for h in held[1:])
                verdict_ = {
                    "bin": "not reproduced",
                    "why": f"held at {k}/{len(held) - 1} seeds"
                    + ("" if held[0] else ", not in the recorded run"),
                }
        out[c["id"]] = verdict_
    return out


def classify_paper_claim(
    result: dict,
    sweep_claim: dict | None,
    sweep_fresh: bool,
    record: dict | None = None,
) -> str:
    """The bin (:data:`PAPER_BINS`) of one paper claim's row ``result`` of a recorded
    run; ``record`` is the whole run (its planted cases live there); without it the
    claim is judged as if it had none."""
    record = record or {"claims": [result]}
    sweep = None
    if sweep_claim is not None:
        n = len(sweep_claim["measured"])
        sweep = {"seeds": list(range(n)), "claims": [sweep_claim]}
        for k in record["claims"]:
            if result["id"] in (k.get("power_of"), k.get("null_of")):
                sweep["claims"].append({**k, "measured": [k.get("measured")] * n})
    return paper_verdicts(record, sweep, sweep_fresh)[result["id"]]["bin"]


def _empty_counts() -> dict:
    return (
        {b: 0 for b in PAPER_BINS}
        | {f"headline {b}": 0 for b in PAPER_BINS}
        | {
            "checks_passed": 0,
            "checks": 0,
            "paper": 0,
            "headline": 0,
            "diagnostics": 0,
            "without_control": 0,
        }
    )


def chapter_counts(record: dict | None, sweep: dict | None, usable: bool) -> dict:
    """Counts of one chapter: paper claims by bin, headline claims by bin (keys
    ``"headline <bin>"``), how many reproduced ones rest on a no_control sentence
    rather than a control, checks passed and total, diagnostics shown.
    ``usable``: whether the sweep can back claims (:func:`sweep_usable`).
    A row without a role (a run recorded before roles existed) counts as an unverified
    paper claim; a claim in the sweep but not in the recorded run counts as
    unverified too."""
    counts = _empty_counts()
    if record is None:
        return counts
    verdicts = paper_verdicts(record, sweep, usable)
    for c in record["claims"]:
        role = c.get("role") or "paper"
        if role == "diagnostic":
            counts["diagnostics"] += 1
            continue
        if role == "check":
            sc = _sweep_claim(sweep, c["id"])
            counts["checks"] += 1
            ok = c.get("held") is True and (
                not c.get("asserted", True)
                or (
                    usable and sc is not None and all(h is True for h in swept_held(sc))
                )
            )
            counts["checks_passed"] += bool(ok)
            continue
        b = verdicts[c["id"]]["bin"]
        counts["paper"] += 1
        counts[b] += 1
        if c.get("headline"):
            counts["headline"] += 1
            counts[f"headline {b}"] += 1
        counts["without_control"] += b == "reproduced" and not c.get("control")
    recorded = {c["id"] for c in record["claims"]}
    for sc in (sweep or {}).get("claims", []):
        if sc["id"] not in recorded:
            role = sc.get("role") or "paper"
            if role == "paper":
                counts["paper"] += 1
                counts["unverified"] += 1
            elif role == "check":
                counts["checks"] += 1
    return counts


def _bins_words(counts: dict, prefix: str = "") -> str:
    """ "1 reproduced, 2 not reproduced, 3 untestable here" (zeros of the three
    outcomes shown, the two exceptional bins only when non-zero)."""
    parts = [f"{counts[prefix + b]} {b}" for b in OUTCOMES]
    parts += [f"{counts[prefix + b]} {b}" for b in PAPER_BINS[3:] if counts[prefix + b]]
    return ", ".join(parts)


def chapter_status(counts: dict) -> str:
    """A chapter's counts in a few words, for the README."""
    if counts["paper"] + counts["checks"] == 0:
        return "not run"
    nc = (
        f" ({counts['without_control']} reproduced without a control)"
        if counts["without_control"]
        else ""
    )
    return (
        f"headline claims: {_bins_words(counts, 'headline ')} (of "
        f"{counts['headline']}); all {counts['paper']} paper claims: "
        f"{_bins_words(counts)}{nc}; {counts['checks_passed']}/{counts['checks']} "
        "checks passed"
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


def cpu_words(sweep: dict | None) -> str:
    """Where a sweep ran, and whether its verdicts survive other CPU kernels: "AMD
    EPYC, AVX512; same verdicts under AVX2" or "...; under AVX2: x flips"."""
    if sweep is None:
        return "—"
    cpus = sorted(
        {
            f"{m.get('cpu_model', '?')}, {m.get('cpu_capability', '?')}"
            for m in (r.get("machine") for r in sweep["runs"])
            if m
        }
    )
    words = "; ".join(cpus) or "not recorded"
    others = [o for o in sweep.get("other_cpu", []) if not o.get("error")]
    if not others:
        return words + "; no run under other kernels"
    flips = cpu_flips(sweep)
    caps = ", ".join(sorted({str(o.get("capability")).upper() for o in others}))
    if not flips:
        return words + f"; same verdicts under {caps}"
    return (
        words
        + f"; under {caps}, verdicts change: "
        + ", ".join(sorted({cid for cid, _, _ in flips}))
    )


def chapter_link(chapter: str) -> str:
    """A Markdown link from book/scorecard.md to the chapter's page."""
    return f"[{chapter}](../notebooks/{chapter}.ipynb)"


def claim_link(chapter: str, claim_id: str) -> str:
    """A link from book/scorecard.md to the claim's row in the chapter's claims table
    (raw HTML: the row's anchor is in a cell output, where Sphinx cannot see it; the
    site test checks that every such anchor exists)."""
    href = f"../notebooks/{chapter}.html#{claim_anchor(claim_id)}"
    return f'<a href="{href}">{claim_id}</a>'


def scorecard_markdown(
    chapters: Sequence[str],
    results: dict[tuple[str, str], dict],
    sweeps: dict[str, dict],
    hashes: dict[str, dict],
    figures: dict[str, dict] | None = None,
) -> str:
    """The scorecard in Markdown: a summary a reviewer reads first (per chapter and
    for the book: headline claims, all paper claims, checks), every headline claim
    with its variants, then per chapter its paper claims, checks and diagnostics, each
    row with this run's value, the control's, the threshold, the verdict and the pass
    rate over the seed sweep. ``figures`` (:func:`load_paper_figures`) says what the
    paper reports where a claim's declaration does not."""
    figures = figures or {}
    head = [
        "| chapter | headline claims | all paper claims | checks passed | run time "
        "| seeds swept |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    total = _empty_counts()
    total_time, swept = 0.0, 0
    rows = []
    heads = [
        "| chapter | headline claim | outcome | why | variants |",
        "| --- | --- | --- | --- | --- |",
    ]

    def short(n: dict, prefix: str) -> str:
        """ "1 · 2 · 3 of 6" with the order of OUTCOMES, plus exceptional bins."""
        line = " · ".join(str(n[prefix + b]) for b in OUTCOMES)
        extra = [f"{n[prefix + b]} {b}" for b in PAPER_BINS[3:] if n[prefix + b]]
        total_n = n["headline"] if prefix else n["paper"]
        return f"{line} of {total_n}" + (f" ({', '.join(extra)})" if extra else "")

    for ch in chapters:
        rec = results.get((ch, SWEEP_SCALE))
        sweep = sweeps.get(ch)
        usable = sweep_usable(sweep, hashes[ch])
        n = chapter_counts(rec, sweep, usable)
        for k in total:
            total[k] += n[k]
        total_time += (rec or {}).get("runtime_s") or 0.0
        swept += usable
        rows.append(
            f"| {chapter_link(ch)} | {short(n, 'headline ')} | {short(n, '')} | "
            f"{n['checks_passed']}/{n['checks']} | {_runtime(rec)} | "
            f"{_sweep_words(sweep, sweep is not None and not usable)} |"
        )
        verdicts = paper_verdicts(rec, sweep, usable)
        for c in (rec or {}).get("claims", []):
            if c.get("role") == "paper" and c.get("headline"):
                v = verdicts[c["id"]]
                variants = [
                    f"{k['id']}: {verdicts[k['id']]['bin']}"
                    for k in rec["claims"]
                    if k.get("variant_of") == c["id"] and k["id"] in verdicts
                ]
                heads.append(
                    f"| {chapter_link(ch)} | **{c['id']}** {cell(c['text'])} | "
                    f"{v['bin']} | "
                    f"{cell(v['why']) or '—'} | {cell('; '.join(variants)) or '—'} |"
                )
    rows.append(
        f"| **the book** | **{short(total, 'headline ')}** | **{short(total, '')}** | "
        f"**{total['checks_passed']}/{total['checks']}** | **{total_time:.0f} s** | "
        f"**{swept}/{len(chapters)} chapters** |"
    )
    nc = (
        f" ({total['without_control']} of the reproduced rest on a stated reason for "
        "having no control)"
        if total["without_control"]
        else ""
    )
    lines = [
        "## Summary",
        "",
        f"Counts are *reproduced · not reproduced · untestable here* of the total{nc}.",
        "",
        *head,
        *rows,
        "",
        "## Headline claims, and the variants that serve them",
        "",
        *heads,
    ]
    for ch in chapters:
        lines += ["", f"## {ch}", "", f"The chapter: {chapter_link(ch)}.", ""]
        recs = [r for (c, _), r in sorted(results.items()) if c == ch]
        if not recs:
            lines.append(
                "No recorded run: every claim of this chapter counts as *not run*."
            )
            continue
        sweep = sweeps.get(ch)
        usable = sweep_usable(sweep, hashes[ch])
        unusable = sweep is not None and not usable
        for rec in recs:
            at_ci = rec["scale"] == SWEEP_SCALE

            def seeds(claim_id: str, at_ci=at_ci, sweep=sweep, bad=unusable) -> str:
                # sweeps are at "ci" only
                return seeds_cell(sweep, claim_id, bad) if at_ci else "—"

            line = (
                f'`SCALE="{rec["scale"]}"` · seed {rec["seed"]} · run time '
                f"{_runtime(rec)}"
            )
            if at_ci:
                line += f" · seed sweep: {_sweep_words(sweep, unusable)}"
                line += f" · CPU: {cpu_words(sweep)}"
            lines += [line, ""]
            verdicts = paper_verdicts(rec, sweep if at_ci else None, usable and at_ci)
            paper = [c for c in rec["claims"] if (c.get("role") or "paper") == "paper"]
            order = [c for c in paper if c.get("headline")]
            order = [
                x
                for h in order
                for x in [h, *[v for v in paper if v.get("variant_of") == h["id"]]]
            ]
            order += [c for c in paper if c not in order]
            if paper:
                lines += [
                    "Paper claims (headline claims in bold, each followed by its "
                    "variants):",
                    "",
                    "| claim | this run | control | threshold | seeds | outcome |",
                    "| --- | --- | --- | --- | --- | --- |",
                ]
                for c in order:
                    if c.get("control"):
                        ctrl = (
                            f"{fmt(c.get('control_measured'))} ({cell(c['control'])})"
                        )
                    elif c.get("no_control"):
                        ctrl = f"none: {cell(c['no_control'])}"
                    else:
                        ctrl = "—"
                    v = verdicts[c["id"]]
                    link = claim_link(ch, c["id"])
                    name = (
                        f"**{link}** (headline)"
                        if c.get("headline")
                        else (f"↳ {link}" if c.get("variant_of") else link)
                    )
                    paper_fig = paper_figure_words(c, figures.get(ch, {}).get(c["id"]))
                    text = cell(c["text"]) + (
                        f" (paper: {cell(paper_fig)})" if paper_fig != "—" else ""
                    )
                    outcome = v["bin"] + (f": {cell(v['why'])}" if v["why"] else "")
                    lines.append(
                        f"| {name} {text} | {fmt(c['measured'])} "
                        f"({verdict(c, c.get('asserted', True))}) | {ctrl} | "
                        f"{c['op']} {fmt(c['threshold'])} | {seeds(c['id'])} | "
                        f"{outcome} |"
                    )
                lines.append("")
            checks = [c for c in rec["claims"] if c.get("role") == "check"]
            if checks:
                lines += [
                    "Checks, planted and null cases among them (not counted as "
                    "reproductions):",
                    "",
                    "| check | measured | threshold | this run | seeds |",
                    "| --- | --- | --- | --- | --- |",
                ]
                for c in checks:
                    tag = (
                        f" (planted case of {c['power_of']})"
                        if c.get("power_of")
                        else (
                            f" (null case of {c['null_of']})"
                            if c.get("null_of")
                            else ""
                        )
                    )
                    lines.append(
                        f"| **{c['id']}**{tag} {cell(c['text'])} | "
                        f"{fmt(c['measured'])} | {c['op']} {fmt(c['threshold'])} | "
                        f"{verdict(c, c.get('asserted', True))} | {seeds(c['id'])} |"
                    )
                lines.append("")
            diags = [c for c in rec["claims"] if c.get("role") == "diagnostic"]
            if diags:
                lines += [
                    "Diagnostics (controls, ablations, oracles; shown, never counted):",
                    "",
                    "| diagnostic | measured | shown against | seeds meeting it |",
                    "| --- | --- | --- | --- |",
                ]
                for c in diags:
                    lines.append(
                        f"| **{c['id']}** {cell(c['text'])} | {fmt(c['measured'])} | "
                        f"{c['op']} {fmt(c['threshold'])} | "
                        f"{seeds(c['id']).replace('held', 'met')} |"
                    )
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------------------
# the figure
# --------------------------------------------------------------------------------------
OUTCOME_COLOURS = {
    "reproduced": "#009E73",
    "not reproduced": "#D55E00",
    "untestable here": "#BBBBBB",
    "held, not asserted": "#E69F00",
    "unverified": "#FFFFFF",
}


def scorecard_svg(
    chapters: Sequence[str],
    results: dict[tuple[str, str], dict],
    sweeps: dict[str, dict],
    hashes: dict[str, dict],
) -> str:
    """The scorecard as a figure, in SVG written by hand (so that it is the same text
    on every machine): per chapter, one square per headline claim coloured by its
    outcome, then a bar of all its paper claims split by outcome."""
    row_h, left, square, gap = 22, 190, 14, 4
    bar_x, bar_w = left + 3 * (square + gap) + 24, 330
    width = bar_x + bar_w + 20
    height = 56 + row_h * len(chapters) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="DejaVu Sans, Arial, sans-serif" font-size="12">',
        "<title>Headline claims and all paper claims of every chapter, by "
        "outcome</title>",
        f'<text x="{left}" y="24" font-weight="bold">headline claims</text>',
        f'<text x="{bar_x}" y="24" font-weight="bold">all paper claims</text>',
    ]
    most = max(
        [
            chapter_counts(
                results.get((ch, SWEEP_SCALE)),
                sweeps.get(ch),
                sweep_usable(sweeps.get(ch), hashes[ch]),
            )["paper"]
            for ch in chapters
        ]
        + [1]
    )
    for i, ch in enumerate(chapters):
        y = 40 + i * row_h
        rec, sweep = results.get((ch, SWEEP_SCALE)), sweeps.get(ch)
        usable = sweep_usable(sweep, hashes[ch])
        verdicts = paper_verdicts(rec, sweep, usable)
        counts = chapter_counts(rec, sweep, usable)
        out.append(f'<text x="8" y="{y + 11}">{ch}</text>')
        heads = [c["id"] for c in (rec or {}).get("claims", []) if c.get("headline")]
        for k, cid in enumerate(heads):
            b = verdicts[cid]["bin"]
            x = left + k * (square + gap)
            out.append(
                f'<rect x="{x}" y="{y}" width="{square}" height="{square}" '
                f'fill="{OUTCOME_COLOURS[b]}" stroke="#333" stroke-width="0.5">'
                f"<title>{ch} {cid}: {b}</title></rect>"
            )
        x = bar_x
        for b in PAPER_BINS:
            n = counts[b]
            if not n:
                continue
            w = bar_w * n / most
            out.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{square}" '
                f'fill="{OUTCOME_COLOURS[b]}" stroke="#333" stroke-width="0.5">'
                f"<title>{ch}: {n} {b}</title></rect>"
            )
            x += w
        out.append(f'<text x="{x + 4:.1f}" y="{y + 11}">{counts["paper"]}</text>')
    y = 48 + row_h * len(chapters)
    x = 8
    for b in PAPER_BINS[:4]:
        out.append(
            f'<rect x="{x}" y="{y}" width="{square}" height="{square}" '
            f'fill="{OUTCOME_COLOURS[b]}" stroke="#333" stroke-width="0.5"/>'
        )
        out.append(f'<text x="{x + square + 4}" y="{y + 11}">{b}</text>')
        x += square + 12 + 7 * len(b)
    out.append("</svg>")
    return "\n".join(out) + "\n"
