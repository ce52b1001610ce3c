#!/usr/bin/env python3
"""The book's commands. Needs only Python 3.10+ on a fresh clone.

    python3 tasks.py build    # make/refresh the environment, execute every chapter (cached), render HTML
    python3 tasks.py test     # library tests, every notebook under nbval, a warning-free book build

With no virtual environment (or conda env) active, both make ``.venv/`` here and run inside it.
Either way they install the exact versions of ``requirements-lock.txt`` (only when it changed)
and this repository's ``iclr26`` package in editable mode.

Helpers: ``python3 tasks.py scorecard`` regenerates book/scorecard.md and the README's chapter
table from results/; ``python3 tasks.py set-repo`` rewrites every notebook's Colab badge and
install cell to the repository URL in _config.yml.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
LOCK = ROOT / "requirements-lock.txt"
NODEPS = ROOT / "requirements-nodeps.txt"
VENV = ROOT / ".venv"


# ---------------------------------------------------------------------------------------------
# environment
# ---------------------------------------------------------------------------------------------
def in_some_env() -> bool:
    return sys.prefix != sys.base_prefix or bool(os.environ.get("CONDA_PREFIX"))


def ensure_env(argv: list[str]) -> None:
    """Re-run this script inside .venv unless an environment is already active; install the lock."""
    if not in_some_env():
        python = VENV / "bin" / "python"
        if not python.exists():
            print(f"[tasks] creating {VENV}", flush=True)
            venv.EnvBuilder(with_pip=True).create(VENV)
        os.execv(str(python), [str(python), __file__, *argv])
    stamp = Path(sys.prefix) / "iclr26-lock.sha256"
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in (LOCK, NODEPS, ROOT / "pyproject.toml"))).hexdigest()
    if stamp.exists() and stamp.read_text().strip() == digest:
        return
    print(f"[tasks] installing {LOCK.name} into {sys.prefix} (once; about two minutes)", flush=True)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    # --no-deps: the lock is a complete freeze, so nothing unlisted (e.g. a CUDA torch) can come in.
    run(pip + ["--no-deps", "-r", str(LOCK)])
    run(pip + ["--no-deps", "-r", str(NODEPS)])
    run(pip + ["--no-deps", "--no-build-isolation", "-e", str(ROOT)])
    stamp.write_text(digest + "\n")
    # Start again so this interpreter sees what was just installed (an editable install is
    # picked up only at start-up).
    os.execv(sys.executable, [sys.executable, __file__, *argv])


def run(cmd: list[str], env: dict | None = None, check: bool = True) -> int:
    print("[tasks] $ " + " ".join(str(c) for c in cmd), flush=True)
    rc = subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env)
    if check and rc != 0:
        sys.exit(rc)
    return rc


def quiet_env(threads: int | None = None) -> dict:
    # Results go to results/ at the root whatever folder a kernel runs in (the book's executor may
    # use a temporary one).
    env = dict(os.environ, ICLR26_PROGRESS="0", ICLR26_RESULTS_DIR=str(ROOT / "results"),
               PYTHONWARNINGS="ignore::DeprecationWarning")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # The chapters' CPU workloads are small matrices: one thread per kernel is as fast, and two
    # multi-threaded kernels on two cores thrash. `build` keeps an OMP_NUM_THREADS you set
    # yourself; `test` always uses one thread per notebook, as CI does.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads) if threads else os.environ.get(var, "1")
    return env


# ---------------------------------------------------------------------------------------------
# scorecard and README table
# ---------------------------------------------------------------------------------------------
def chapter_title(chapter: str) -> str:
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return chapter


def replace_between(text: str, marker: str, body: str) -> str:
    """Replace what lies between <!-- marker:start --> and <!-- marker:end --> with body."""
    pattern = rf"(<!-- {marker}:start -->).*?(<!-- {marker}:end -->)"
    if not re.search(pattern, text, flags=re.S):
        sys.exit(f"marker <!-- {marker}:start/end --> not found")
    return re.sub(pattern, lambda m: f"{m.group(1)}\n{body}\n{m.group(2)}", text, flags=re.S)


def scorecard() -> None:
    from iclr26.claims import chapter_status, chapters_in_toc, load_results, scorecard_markdown

    chapters = chapters_in_toc(ROOT / "_toc.yml")
    results = load_results(ROOT / "results")
    page = (ROOT / "book" / "scorecard.md").read_text()
    table = scorecard_markdown(chapters, results)
    page = replace_between(page, "scorecard", table)
    (ROOT / "book" / "scorecard.md").write_text(page)

    status = chapter_status(chapters, results, scale="ci")
    rows = ["| chapter | claims at `SCALE=\"ci\"` (latest recorded run) |", "| --- | --- |"]
    for ch in chapters:
        rows.append(f"| [{chapter_title(ch)}](notebooks/{ch}.ipynb) | {status[ch]} |")
    readme = (ROOT / "README.md").read_text()
    readme = replace_between(readme, "chapters", "\n".join(rows))
    (ROOT / "README.md").write_text(readme)
    print(f"[tasks] scorecard: {len(chapters)} chapters, {len(results)} recorded runs", flush=True)


def set_repo() -> None:
    """Point every notebook's Colab badge and install cell at the repository in _config.yml."""
    url = repo_url()
    slug = url.removeprefix("https://github.com/")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        text = path.read_text()
        text = re.sub(r"colab\.research\.google\.com/github/[^/]+/[^/]+/blob/[^/]+/notebooks/",
                      f"colab.research.google.com/github/{slug}/blob/main/notebooks/", text)
        text = re.sub(r"git\+https://github\.com/[^/\"']+/[^/\"'@]+", f"git+{url}", text)
        path.write_text(text)


def repo_url() -> str:
    m = re.search(r"^repository:\s*\n\s+url:\s*(\S+)", (ROOT / "_config.yml").read_text(), flags=re.M)
    if not m:
        sys.exit("_config.yml has no repository: url:")
    return m.group(1).rstrip("/")


# ---------------------------------------------------------------------------------------------
# the two commands
# ---------------------------------------------------------------------------------------------
def jupyter_book(extra: list[str], env: dict, check: bool = True) -> int:
    return run([Path(sys.executable).parent / "jupyter-book", "build", *extra, "."], env=env, check=check)


def build() -> None:
    env = quiet_env()
    t0 = time.time()
    # First pass executes every chapter whose code changed (the rest come from the cache) and so
    # writes results/; the second renders the scorecard from those results (cache hits, fast).
    jupyter_book(["--keep-going"], env)
    scorecard()
    jupyter_book([], env)
    print(f"[tasks] book built in {time.time() - t0:.0f} s. Open {ROOT / '_build' / 'html' / 'index.html'}")


def noexec_config() -> Path:
    """_config.yml with execution switched off, for a build that checks the book without re-running it."""
    cfg = (ROOT / "_config.yml").read_text()
    cfg, n = re.subn(r"execute_notebooks:\s*\S+", "execute_notebooks: \"off\"", cfg)
    assert n == 1, "_config.yml must set execute_notebooks exactly once"
    out = ROOT / "_build" / "config-noexec.yml"
    out.parent.mkdir(exist_ok=True)
    out.write_text(cfg)
    return out


def test() -> None:
    steps = {}
    t0 = time.time()
    steps["library and notebook-shape tests"] = run(
        [sys.executable, "-m", "pytest", "tests", "-q", "-n", "2"], env=quiet_env(threads=1), check=False)
    t1 = time.time()
    # Each notebook in its own kernel, two at a time, one torch thread each (two default-threaded
    # torch processes on two cores thrash). The claim checks inside fail a notebook's cell.
    steps["every notebook under nbval"] = run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-cell-timeout", "600", "-q", "-n", "2", "--dist", "loadfile",
         "notebooks"],
        env=quiet_env(threads=1), check=False)
    t2 = time.time()
    scorecard()
    steps["book build, warnings as errors, no re-execution"] = jupyter_book(
        ["--all", "-W", "-n", "--keep-going", "--config", noexec_config(), "--path-output", ROOT / "_build" / "check"],
        env=quiet_env(), check=False)
    t3 = time.time()
    print("\n[tasks] test summary")
    for (name, rc), secs in zip(steps.items(), (t1 - t0, t2 - t1, t3 - t2)):
        print(f"[tasks]   {'ok    ' if rc == 0 else 'FAILED'} {name} ({secs:.0f} s)")
    print(f"[tasks]   total {t3 - t0:.0f} s")
    sys.exit(0 if all(rc == 0 for rc in steps.values()) else 1)


COMMANDS = {"build": build, "test": test, "scorecard": scorecard, "set-repo": set_repo, "env": lambda: None}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in COMMANDS:
        sys.exit(f"usage: python3 tasks.py {{{'|'.join(COMMANDS)}}}")
    if sys.argv[1] != "set-repo":
        ensure_env(sys.argv[1:])
    COMMANDS[sys.argv[1]]()
