"""Chapters run as a Colab reader runs them: outside the clone, in a clean environment.

The notebook run is the chapter's Colab copy (colab/NN-slug.ipynb, what its "Open in
Colab" link opens). A virtual environment gets only what Colab ships (torch, numpy,
scipy, matplotlib, scikit-learn, pandas, tqdm, ipywidgets, ipykernel, and what those
need), at the lock's versions. The copy is placed in a folder outside the clone and
executed there in a kernel of that environment, with a stand-in ``google.colab`` module
so that its install cell runs: the cell installs ``iclr26[chapters]`` from this working
tree instead of from GitHub (the only edit), exactly as it would from the release.
The test then checks that the chapter ran top to bottom and imported ``iclr26`` from the
clean environment, not from the clone.

Two differences from Colab, both to keep the run reproducible: pip is given the lock as
constraints (nothing it resolves can pull a CUDA torch or move a pinned version), and
torch gets one thread (CI runs two jobs on two cores).

Run as its own step of ``python3 tasks.py test`` (marker ``colab``); about two minutes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.colab

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements-lock.txt"
# What a Colab runtime has installed, of what the chapters use (Colab ships far more).
COLAB_SHIPS = [
    "torch",
    "numpy",
    "scipy",
    "matplotlib",
    "scikit-learn",
    "pandas",
    "tqdm",
    "ipywidgets",
    "ipykernel",
]
# Chapter 19 needs bm25s, which only the [chapters] extra brings; chapter 01 needs
# nothing beyond what Colab ships. Both are among the quickest chapters.
CHAPTERS = ["01-deep-mf", "19-chronoplay"]
GIT_URL = re.compile(r"git\+https://github\.com/[^\"'\s]+")


def lock_pins() -> dict[str, str]:
    """{canonical name: version} of requirements-lock.txt."""
    pins = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def closure(names: list[str]) -> list[str]:
    """The packages ``names`` need, transitively, read from this environment's metadata
    (the test environment is installed from the same lock), extras left out."""
    env = default_environment()
    seen: set[str] = set()
    todo = [canonicalize_name(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for spec in metadata.requires(name) or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate(dict(env, extra="")):
                todo.append(canonicalize_name(req.name))
    return sorted(seen)


@pytest.fixture(scope="module")
def colab_env(tmp_path_factory) -> Path:
    """A fresh virtual environment with what Colab ships; returns its python."""
    where = tmp_path_factory.mktemp("colab") / "venv"
    venv.EnvBuilder(with_pip=True).create(where)
    python = where / "bin" / "python"
    pins = lock_pins()
    wanted = closure(COLAB_SHIPS)
    missing = [n for n in wanted if n not in pins]
    assert not missing, f"not in requirements-lock.txt: {missing}"
    cmd = [str(python), "-m", "pip", "install", "-q", "--no-deps"]
    pip = subprocess.run(
        cmd + [f"{n}=={pins[n]}" for n in wanted], capture_output=True, text=True
    )
    assert pip.returncode == 0, (
        f"installing what Colab ships failed:\n{pip.stderr[-3000:]}"
    )
    # The kernel the executor starts: this environment's python.
    spec = where / "share" / "jupyter" / "kernels" / "colab-clean"
    spec.mkdir(parents=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "colab-clean", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    return python


def colab_copy(chapter: str, folder: Path) -> Path:
    """The chapter's Colab copy (colab/NN-slug.ipynb: what its "Open in Colab" link
    opens), with its install cell pointed at this working tree instead of the
    release, a stand-in google.colab module before it, and a last cell that says where
    iclr26 came from."""
    nb = json.loads((ROOT / "colab" / f"{chapter}.ipynb").read_text())
    cells = nb["cells"]
    install = next(
        i
        for i, c in enumerate(cells)
        if c["cell_type"] == "code" and "google.colab" in "".join(c["source"])
    )
    source = "".join(cells[install]["source"])
    assert GIT_URL.search(source), f"{chapter}: the install cell names no git URL"
    cells[install]["source"] = GIT_URL.sub(ROOT.as_uri(), source)

    def code(text: str) -> dict:
        return {"cell_type": "code", "metadata": {}, "source": text, "outputs": []}

    fake = "import sys, types\nsys.modules['google.colab'] = types.ModuleType('colab')"
    cells.insert(install, code(fake))
    cells.append(code("import iclr26\nprint('ICLR26_FROM', iclr26.__file__)"))
    path = folder / f"{chapter}.ipynb"
    path.write_text(json.dumps(nb))
    return path


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_outside_the_clone(chapter, colab_env, tmp_path):
    run_dir = tmp_path / "content"  # Colab's working folder: no clone above it
    run_dir.mkdir()
    notebook = colab_copy(chapter, run_dir)
    env = dict(
        os.environ,
        JUPYTER_PATH=str(colab_env.parents[1] / "share" / "jupyter"),
        PIP_CONSTRAINT=str(LOCK),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        ICLR26_PROGRESS="0",
    )
    for var in ("ICLR26_RESULTS_DIR", "PYTHONPATH", "VIRTUAL_ENV"):
        env.pop(var, None)
    out = run_dir / "executed.ipynb"
    cmd = [sys.executable, "-m", "papermill", "--no-progress-bar", "-k", "colab-clean"]
    cmd += ["--cwd", str(run_dir), str(notebook), str(out)]
    proc = subprocess.run(cmd, env=env, cwd=run_dir, capture_output=True, text=True)
    assert proc.returncode == 0, (
        f"{chapter} failed outside the clone:\n{proc.stderr[-3000:]}"
    )
    printed = "".join(
        "".join(o.get("text", ""))  # a string, or a list of lines
        for c in json.loads(out.read_text())["cells"]
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
    )
    found = re.search(r"ICLR26_FROM (\S+)", printed)
    assert found, f"{chapter}: the last cell did not run"
    where = Path(found.group(1))
    assert colab_env.parents[1] in where.parents, (
        f"{chapter} imported iclr26 from {where}, not from the clean environment"
    )
    assert ROOT not in where.parents
    # Its claims were recorded beside the notebook, as in Colab (no clone, no results/).
    assert (run_dir / "iclr26-results" / f"{chapter}.ci.json").is_file()
