"""Rules for the library as a whole: no global random state, no module that reads a
notebook or counts its way to the repository root, one home for input checks and
small numerics, and calibration grids the runner can read."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "iclr26"
FILES = sorted(p for p in LIB.rglob("*.py") if "__pycache__" not in p.parts)
# Each of these lives in one place only (validate.py, numerics.py); a chapter's module
# imports it instead of writing its own copy.
SHARED_HELPERS = {
    "_int",
    "_tensor",
    "_check_n",
    "_check_int",
    "_check_positive",
    "_check_tensor",
    "_check_finite",
    "_finite",
    "_prob",
    "_frac",
    "n_params",
    "loglog_slope",
}
HOMES = {"validate.py", "numerics.py"}


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def calls(path: Path) -> list[str]:
    """Every dotted name called in a file (``torch.manual_seed``, ...)."""
    out = []
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Call):
            parts, f = [], node.func
            while isinstance(f, ast.Attribute):
                parts.append(f.attr)
                f = f.value
            if isinstance(f, ast.Name):
                parts.append(f.id)
            out.append(".".join(reversed(parts)))
    return out


GLOBAL_SEEDING = {
    "torch.manual_seed",
    "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all",
    "np.random.seed",
    "numpy.random.seed",
    "random.seed",
    "torch.seed",
    "torch.set_rng_state",
}


@pytest.mark.parametrize("path", FILES, ids=rel)
def test_no_library_function_sets_global_random_state(path):
    """Only core.py's seed_everything (the notebook's own first move) and seeded (which
    restores the global generators when its block ends) touch them."""
    if path.name == "core.py" and path.parent == LIB:
        return
    bad = sorted(set(calls(path)) & GLOBAL_SEEDING)
    assert not bad, (
        f"{rel(path)} calls {bad}: take a seed or a torch.Generator, and draw module "
        "weights inside `with iclr26.seeded(seed):`"
    )


@pytest.mark.parametrize("path", FILES, ids=rel)
def test_no_module_reads_a_notebook_or_counts_parents(path):
    text = path.read_text()
    if path.name in ("scorecard.py",):  # the scorecard hashes notebooks: its job
        return
    assert ".ipynb" not in text, f"{rel(path)} reads a notebook"
    assert not re.search(r"\.parents\[\d+\]", text), (
        f"{rel(path)} finds the repository root by counting parents"
    )
    imports = [
        n for n in ast.walk(tree(path)) if isinstance(n, (ast.Import, ast.ImportFrom))
    ]
    for n in imports:
        names = [a.name for a in n.names]
        module = getattr(n, "module", None) or ""
        assert "scorecard" not in module and "scorecard" not in names, (
            f"{rel(path)} imports the scorecard"
        )


@pytest.mark.parametrize("path", FILES, ids=rel)
def test_no_star_imports_and_no_private_names_across_packages(path):
    for n in ast.walk(tree(path)):
        if not isinstance(n, ast.ImportFrom):
            continue
        assert all(a.name != "*" for a in n.names), f"{rel(path)}: import *"
        crosses = n.level >= 2 or (n.module or "").startswith("iclr26.")
        if crosses:
            private = [a.name for a in n.names if a.name.startswith("_")]
            assert not private, (
                f"{rel(path)} imports another package's private names {private} "
                f"from {'.' * n.level}{n.module}: make them public where they live"
            )


@pytest.mark.parametrize("path", FILES, ids=rel)
def test_shared_helpers_live_in_one_place(path):
    if path.name in HOMES and path.parent == LIB:
        return
    defined = {
        n.name
        for n in ast.walk(tree(path))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    dup = sorted(defined & SHARED_HELPERS)
    assert not dup, (
        f"{rel(path)} defines {dup}: use iclr26.validate (as_int, as_float, "
        "check_positive, as_tensor) or iclr26.numerics (n_params, loglog_slope)"
    )


GRIDS = sorted((ROOT / "grids").glob("*.json"))


@pytest.mark.parametrize("path", GRIDS, ids=lambda p: p.stem)
def test_calibration_grids_are_well_formed(path):
    from iclr26.claims import chapters_in_toc
    from iclr26.scorecard import calibration_path, load_calibrations

    assert path.stem in chapters_in_toc(ROOT / "_toc.yml"), f"{path.name}: no chapter"
    grid = json.loads(path.read_text())
    assert isinstance(grid.get("about"), str) and grid["about"].strip()
    assert grid.get("seeds") and all(isinstance(s, int) for s in grid["seeds"])
    assert isinstance(grid.get("settings"), dict) and grid["settings"]
    for name, overrides in grid["settings"].items():
        calibration_path(ROOT / "results", path.stem, name)  # a valid name
        assert isinstance(overrides, dict)
    # a recorded setting of the grid ran with the grid's overrides
    for name, record in load_calibrations(ROOT / "results", path.stem).items():
        if name in grid["settings"]:
            assert record["overrides"] == grid["settings"][name], (
                f"results/calibration/{path.stem}/{name}.json ran with "
                f"{record['overrides']}, the grid says {grid['settings'][name]}"
            )
