#!/usr/bin/env python3
"""The book's commands. Needs only Python 3.10+ on a fresh clone.

    # make/refresh the environment, execute every chapter (cached), render HTML
    python3 tasks.py build
    # library tests, every notebook under nbval, a warning-free book build
    python3 tasks.py test

With no virtual environment (or conda env) active, both make ``.venv/`` here and run
inside it. Either way they install the exact versions of ``requirements-lock.txt`` (only
when it changed) and this repository's ``iclr26`` package in editable mode.

The seed sweep: ``python3 tasks.py seeds [CHAPTER ...] [--seeds 0,1000,2000,3000,4000]``
runs each chapter at each seed and records every claim's verdict per seed in
results/sweeps/ (commit it; the tests fail on an asserted claim without a fresh sweep).

Helpers: ``python3 tasks.py scorecard`` regenerates book/scorecard.md and the README's
chapter table from results/; ``python3 tasks.py set-repo`` rewrites every notebook's
Colab badge and install cell to the repository URL in _config.yml.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
LOCK = ROOT / "requirements-lock.txt"
NODEPS = ROOT / "requirements-nodeps.txt"
VENV = ROOT / ".venv"


# --------------------------------------------------------------------------------------
# environment
# --------------------------------------------------------------------------------------
def in_some_env() -> bool:
    return sys.prefix != sys.base_prefix or bool(os.environ.get("CONDA_PREFIX"))


def ensure_env(argv: list[str]) -> None:
    """Re-run this script inside .venv unless an environment is already active; install
    the lock."""
    if not in_some_env():
        python = VENV / "bin" / "python"
        if not python.exists():
            print(f"[tasks] creating {VENV}", flush=True)
            venv.EnvBuilder(with_pip=True).create(VENV)
        os.execv(str(python), [str(python), __file__, *argv])
    stamp = Path(sys.prefix) / "iclr26-lock.sha256"
    digest = hashlib.sha256(
        b"".join(p.read_bytes() for p in (LOCK, NODEPS, ROOT / "pyproject.toml"))
    ).hexdigest()
    if stamp.exists() and stamp.read_text().strip() == digest:
        return
    print(
        f"[tasks] installing {LOCK.name} into {sys.prefix} (once; about two minutes)",
        flush=True,
    )
    pip = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]
    # --no-deps: the lock is a complete freeze, so nothing unlisted (e.g.
    # a CUDA torch) can come in.
    run(pip + ["--no-deps", "-r", str(LOCK)])
    run(pip + ["--no-deps", "-r", str(NODEPS)])
    run(pip + ["--no-deps", "--no-build-isolation", "-e", str(ROOT)])
    stamp.write_text(digest + "\n")
    # Start again so this interpreter sees what was just installed (an editable install
    # is picked up only at start-up).
    os.execv(sys.executable, [sys.executable, __file__, *argv])


def run(cmd: list[str], env: dict | None = None, check: bool = True) -> int:
    print("[tasks] $ " + " ".join(str(c) for c in cmd), flush=True)
    rc = subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env)
    if check and rc != 0:
        sys.exit(rc)
    return rc


def quiet_env(threads: int | None = None) -> dict:
    # Results go to results/ at the root whatever folder a kernel runs in (the book's
    # executor may use a temporary one).
    env = dict(
        os.environ,
        ICLR26_PROGRESS="0",
        ICLR26_RESULTS_DIR=str(ROOT / "results"),
        PYTHONWARNINGS="ignore::DeprecationWarning",
    )
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # The chapters' CPU workloads are small matrices: one thread per kernel is as fast,
    # and two multi-threaded kernels on two cores thrash. `build` keeps an
    # OMP_NUM_THREADS you set yourself; `test` always uses one thread per
    # notebook, as CI does.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads) if threads else os.environ.get(var, "1")
    return env


# --------------------------------------------------------------------------------------
# scorecard and README table
# --------------------------------------------------------------------------------------
def chapter_title(chapter: str) -> str:
    """ "06 · f-SNN — ...": the chapter's number (the book numbers chapters itself, so
    the notebook's title has none) and its title."""
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return f"{chapter[:2]} · {line[2:].strip()}"
    return chapter


def replace_between(text: str, marker: str, body: str) -> str:
    """Replace what lies between <!-- marker:start --> and <!-- marker:end -->
    with body."""
    pattern = rf"(<!-- {marker}:start -->).*?(<!-- {marker}:end -->)"
    if not re.search(pattern, text, flags=re.S):
        sys.exit(f"marker <!-- {marker}:start/end --> not found")
    return re.sub(
        pattern, lambda m: f"{m.group(1)}\n{body}\n{m.group(2)}", text, flags=re.S
    )


def scorecard() -> None:
    from iclr26.claims import chapters_in_toc, load_results
    from iclr26.scorecard import (
        chapter_counts,
        chapter_hashes,
        chapter_status,
        load_sweeps,
        scorecard_markdown,
        sweep_usable,
    )

    chapters = chapters_in_toc(ROOT / "_toc.yml")
    results = load_results(ROOT / "results")
    sweeps = load_sweeps(ROOT / "results")
    hashes = {ch: chapter_hashes(ROOT, ch) for ch in chapters}
    page = (ROOT / "book" / "scorecard.md").read_text()
    page = replace_between(
        page, "scorecard", scorecard_markdown(chapters, results, sweeps, hashes)
    )
    (ROOT / "book" / "scorecard.md").write_text(page)

    rows = [
        '| chapter | at `SCALE="ci"`: recorded run and committed seed sweep |',
        "| --- | --- |",
    ]
    for ch in chapters:
        counts = chapter_counts(
            results.get((ch, "ci")),
            sweeps.get(ch),
            sweep_usable(sweeps.get(ch), hashes[ch]),
        )
        rows.append(
            f"| [{chapter_title(ch)}](notebooks/{ch}.ipynb) | {chapter_status(counts)} "
            "|"
        )
    readme = (ROOT / "README.md").read_text()
    readme = replace_between(readme, "chapters", "\n".join(rows))
    (ROOT / "README.md").write_text(readme)

    # The instructor page's table of every chapter's exercises, read from the notebooks.
    sys.path.insert(0, str(ROOT / "tools"))
    import classroom

    page = (ROOT / "book" / "instructors.md").read_text()
    table = classroom.exercise_table(
        [ROOT / "notebooks" / f"{ch}.ipynb" for ch in chapters]
    )
    (ROOT / "book" / "instructors.md").write_text(
        replace_between(page, "exercises", table)
    )
    print(
        f"[tasks] scorecard: {len(chapters)} chapters, {len(results)} recorded runs, "
        f"{len(sweeps)} seed sweeps",
        flush=True,
    )


# --------------------------------------------------------------------------------------
# the seed sweep
# --------------------------------------------------------------------------------------
def parse_seeds(spec: str) -> list[int]:
    """ "0-4" -> [0, 1, 2, 3, 4]; "0,3,7" and "0-2,9" work too."""
    seeds: list[int] = []
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            sys.exit(f"--seeds wants e.g. 0-4 or 0,2,5, got {spec!r}")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        seeds += [s for s in range(lo, hi + 1) if s not in seeds]
    return seeds


def resolve_chapters(names: list[str]) -> list[str]:
    """Chapter names as the user typed them ("01", "deep-mf", "01-deep-mf") ->
    "01-deep-mf"."""
    from iclr26.claims import chapters_in_toc

    known = chapters_in_toc(ROOT / "_toc.yml")
    if not names:
        return known
    out = []
    for name in names:
        match = [ch for ch in known if name in (ch, ch[:2], ch[3:])]
        if len(match) != 1:
            sys.exit(f"unknown chapter {name!r}; the book has: {', '.join(known)}")
        out.append(match[0])
    return out


RUN_TIMEOUT_S = 900  # one chapter at one seed; the budget is 150 s
CELL_TIMEOUT_S = 240  # a cell that hangs (seen in widget cells) fails fast


def papermill_run(
    notebook: Path,
    out: Path,
    log_path: Path,
    env: dict,
    params: dict | None = None,
    cell_timeout: int = CELL_TIMEOUT_S,
) -> tuple[int | str, float]:
    """Execute ``notebook`` top to bottom in its own kernel (papermill, working folder
    notebooks/), writing the executed copy to ``out`` and papermill's log to
    ``log_path``. Returns (exit code or "timeout", wall seconds)."""
    cmd = [sys.executable, "-m", "papermill", "--no-progress-bar", "-k", "python3"]
    cmd += ["--execution-timeout", str(cell_timeout), "--cwd", str(ROOT / "notebooks")]
    cmd += [str(notebook), str(out)]
    for name, value in (params or {}).items():
        cmd += ["-p", name, str(value)]
    start = time.time()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=RUN_TIMEOUT_S)
        except (
            subprocess.TimeoutExpired
        ):  # a kernel that hangs (seen once, at shutdown)
            os.killpg(proc.pid, 9)
            proc.wait()
            rc = "timeout"
    return rc, time.time() - start


def seeds(argv: list[str]) -> None:
    """Run each chapter at each seed (papermill, SCALE="ci", two kernels at a time, one
    thread each) and record every claim's value and verdict per seed in results/sweeps/.
    The default-seed results in results/ are left as they are."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    from iclr26.scorecard import (
        DEFAULT_SWEEP_SEEDS,
        chapter_hashes,
        sweep_path,
        sweep_record,
    )

    spec, names, jobs = ",".join(map(str, DEFAULT_SWEEP_SEEDS)), [], 2
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("--seeds", "--jobs") and args:
            value = args.pop(0)
            if a == "--seeds":
                spec = value
            elif value.isdigit() and int(value) > 0:
                jobs = int(value)
            else:
                sys.exit(f"--jobs wants a positive integer, got {value!r}")
        elif a.startswith("-"):
            sys.exit(
                "usage: python3 tasks.py seeds [CHAPTER ...] [--seeds "
                "0,1000,2000,3000,4000] "
                "[--jobs 2]"
            )
        else:
            names.append(a)
    chapters, seed_list = (
        list(dict.fromkeys(resolve_chapters(names))),
        parse_seeds(spec),
    )
    hashes = {ch: chapter_hashes(ROOT, ch) for ch in chapters}
    work = [(ch, s) for ch in chapters for s in seed_list]
    tmp = Path(tempfile.mkdtemp(prefix="iclr26-seeds-"))
    print(
        f"[seeds] {len(chapters)} chapters x {len(seed_list)} seeds = {len(work)} "
        "runs, "
        f"{jobs} at a time, one thread each (logs in {tmp})",
        flush=True,
    )
    done: list[int] = [0]
    t0 = time.time()

    def one(job: tuple[str, int]) -> dict:
        ch, seed = job
        out = tmp / f"{ch}.seed{seed}"
        out.mkdir()
        env = quiet_env(threads=1)
        env.update(ICLR26_RESULTS_DIR=str(out), ICLR26_CLAIMS_RAISE="0")
        rc, wall = papermill_run(
            ROOT / "notebooks" / f"{ch}.ipynb",
            out / "executed.ipynb",
            out / "log.txt",
            env,
            params={"SCALE": "ci", "SEED": seed},
            cell_timeout=CELL_TIMEOUT_S,
        )
        path = out / f"{ch}.ci.json"
        record = json.loads(path.read_text()) if path.exists() else None
        error = warning = None
        every_claim_checked = bool(record) and all(
            c["held"] is not None for c in record["claims"]
        )
        if rc != 0 and every_claim_checked:
            # Seen rarely: the kernel stops answering in a widget cell after every claim
            # was checked (a comm race in the executor, not a result).
            # The record is complete.
            warning = (
                f"papermill ended with {rc} after every claim was checked (a later "
                "cell "
                "hung or failed); the record is complete and kept"
            )
            print(f"[seeds] {ch} seed {seed}: {warning}", flush=True)
        elif rc != 0:
            tail = (out / "log.txt").read_text().strip().splitlines()[-3:]
            error = (
                f"papermill exited {rc}: " + " / ".join(t.strip() for t in tail)[-400:]
            )
        done[0] += 1
        if record:
            held = sum(c["held"] is True for c in record["claims"])
            what = f"{held}/{len(record['claims'])} held"
        else:
            what = "no record"
        print(
            f"[seeds] ({done[0]}/{len(work)}) {ch} seed {seed}: {what}, {wall:.0f} s"
            + (f" -- {error}" if error else ""),
            flush=True,
        )
        return {
            "seed": seed,
            "record": record,
            "error": error,
            "warning": warning,
            "wall_s": wall,
        }

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = list(pool.map(one, work))
    for ch in chapters:
        mine = [r for (c, _), r in zip(work, runs) if c == ch]
        if chapter_hashes(ROOT, ch) != hashes[ch]:
            print(
                f"[seeds] {ch} changed while it was being swept: "
                "its sweep is not written"
            )
            continue
        record = sweep_record(
            ch, mine, hashes[ch], wall_s=sum(r["wall_s"] for r in mine)
        )
        path = sweep_path(ROOT / "results", ch)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        failed = [
            c["id"]
            for c in record["claims"]
            if c.get("asserted", True) and any(h is not True for h in c["held"])
        ]
        print(
            f"[seeds] {ch}: wrote {path.relative_to(ROOT)}"
            + (
                "; asserted claims that did not hold at every seed: "
                f"{', '.join(failed)}"
                if failed
                else ""
            )
        )
    scorecard()
    print(f"[seeds] sweep wall time {time.time() - t0:.0f} s", flush=True)


def assign(argv: list[str]) -> None:
    """The classroom kit: write each chosen chapter (all by default) as an otter-grader
    assignment under classroom/NN-slug/ (master, student version, autograder zip).
    Grade a submission with
    ``otter run -a classroom/NN-slug/autograder/*.zip SUBMISSION``."""
    sys.path.insert(0, str(ROOT / "tools"))
    import classroom

    out, names, args = ROOT / "classroom", [], list(argv)
    while args:
        a = args.pop(0)
        if a == "--out" and args:
            out = Path(args.pop(0)).resolve()
        elif a.startswith("-"):
            sys.exit("usage: python3 tasks.py assign [CHAPTER ...] [--out DIR]")
        else:
            names.append(a)
    for ch in dict.fromkeys(resolve_chapters(names)):
        folder = classroom.assign(ROOT / "notebooks" / f"{ch}.ipynb", out)
        points = classroom.question_points(folder)
        print(
            f"[assign] {folder}: student/{ch}.ipynb, autograder "
            f"{classroom.autograder_zip(folder).name}; "
            f"{sum(points.values()):g} autograded points in {len(points)} questions",
            flush=True,
        )


def set_repo() -> None:
    """Point every notebook's Colab badge and install cell at the repository in
    _config.yml."""
    url = repo_url()
    slug = url.removeprefix("https://github.com/")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        text = path.read_text()
        text = re.sub(
            r"colab\.research\.google\.com/github/[^/]+/[^/]+/blob/[^/]+/notebooks/",
            f"colab.research.google.com/github/{slug}/blob/main/notebooks/",
            text,
        )
        # The URL ends at a quote, an @ (a pinned ref) or a backslash (the JSON escape
        # of the quote after it in the .ipynb text).
        text = re.sub(
            r"git\+https://github\.com/[^/\"'\\]+/[^/\"'@\\]+", f"git+{url}", text
        )
        path.write_text(text)


def repo_url() -> str:
    m = re.search(
        r"^repository:\s*\n\s+url:\s*(\S+)",
        (ROOT / "_config.yml").read_text(),
        flags=re.M,
    )
    if not m:
        sys.exit("_config.yml has no repository: url:")
    return m.group(1).rstrip("/")


# --------------------------------------------------------------------------------------
# the two commands
# --------------------------------------------------------------------------------------
def jupyter_book(extra: list[str], env: dict, check: bool = True) -> int:
    return run(
        [Path(sys.executable).parent / "jupyter-book", "build", *extra, "."],
        env=env,
        check=check,
    )


def build() -> None:
    env = quiet_env()
    t0 = time.time()
    # First pass executes every chapter whose code changed (the rest come from the
    # cache) and so writes results/; the second renders the scorecard from those results
    # (cache hits, fast).
    jupyter_book(["--keep-going"], env)
    scorecard()
    jupyter_book([], env)
    print(
        f"[tasks] book built in {time.time() - t0:.0f} s. "
        f"Open {ROOT / '_build' / 'html' / 'index.html'}"
    )


def noexec_config() -> Path:
    """_config.yml with execution switched off, for a build that checks the book without
    re-running it."""
    cfg = (ROOT / "_config.yml").read_text()
    cfg, n = re.subn(r"execute_notebooks:\s*\S+", 'execute_notebooks: "off"', cfg)
    assert n == 1, "_config.yml must set execute_notebooks exactly once"
    out = ROOT / "_build" / "config-noexec.yml"
    out.parent.mkdir(exist_ok=True)
    out.write_text(cfg)
    return out


EXECUTED = ROOT / "_build" / "executed"  # each chapter as the test command ran it
SITE_SRC = ROOT / "_build" / "site-src"  # the book's source with the executed chapters
SITE = ROOT / "_build" / "site"  # the site built from them: SITE/_build/html


def execute_chapters(chapters: list[str], jobs: int = 2) -> int:
    """Run each chapter once, top to bottom, at its defaults (SCALE="ci", SEED=0), two
    kernels at a time with one torch thread each (two default-threaded torch processes
    on two cores thrash). A claim that does not hold raises in its check cell and fails
    the chapter. The executed copies go to _build/executed/ (the site is built from
    them, so no chapter runs twice), the claim records to results/. Returns the number
    of chapters that failed."""
    from concurrent.futures import ThreadPoolExecutor

    shutil.rmtree(EXECUTED, ignore_errors=True)
    EXECUTED.mkdir(parents=True)

    def one(ch: str) -> tuple[str, int | str, float]:
        rc, wall = papermill_run(
            ROOT / "notebooks" / f"{ch}.ipynb",
            EXECUTED / f"{ch}.ipynb",
            EXECUTED / f"{ch}.log",
            quiet_env(threads=1),
            cell_timeout=600,
        )
        verdict = "ok" if rc == 0 else f"FAILED ({rc}), log: {EXECUTED / ch}.log"
        print(f"[execute] {ch}: {verdict}, {wall:.0f} s", flush=True)
        if rc != 0:
            tail = (EXECUTED / f"{ch}.log").read_text().strip().splitlines()[-25:]
            print("\n".join(f"[execute]   {line}" for line in tail), flush=True)
        return ch, rc, wall

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = list(pool.map(one, chapters))
    return sum(rc != 0 for _, rc, _ in runs)


def site_source(chapters: list[str]) -> Path:
    """A copy of the book's source in which each chapter is its executed notebook from
    _build/executed/, with execution switched off: building it renders the outputs the
    test run produced instead of running every chapter again."""
    shutil.rmtree(SITE_SRC, ignore_errors=True)
    SITE_SRC.mkdir(parents=True)
    for name in ("book", "_vendor", "_theme"):
        shutil.copytree(ROOT / name, SITE_SRC / name)
    shutil.copy(ROOT / "_toc.yml", SITE_SRC / "_toc.yml")
    shutil.copy(noexec_config(), SITE_SRC / "_config.yml")
    (SITE_SRC / "notebooks").mkdir()
    for ch in chapters:
        executed = EXECUTED / f"{ch}.ipynb"
        # A chapter that failed before writing its copy is built without outputs (the
        # step that ran it has failed already).
        source = executed if executed.is_file() else ROOT / "notebooks" / f"{ch}.ipynb"
        shutil.copy(source, SITE_SRC / "notebooks" / f"{ch}.ipynb")
    return SITE_SRC


def test() -> None:
    """Everything CI checks, in order; a step runs even when an earlier one failed."""
    from iclr26.claims import chapters_in_toc

    chapters = chapters_in_toc(ROOT / "_toc.yml")
    steps, secs = {}, {}

    def step(name: str, action) -> None:
        print(f"\n[tasks] === {name}", flush=True)
        t = time.time()
        steps[name] = action()
        secs[name] = time.time() - t

    def pytest(*args: str, env: dict | None = None) -> int:
        cmd = [sys.executable, "-m", "pytest", "tests", "-q", *args]
        return run(cmd, env=env or quiet_env(threads=1), check=False)

    def site() -> int:
        src = site_source(chapters)
        cmd = [Path(sys.executable).parent / "jupyter-book", "build", "--all", "-W"]
        cmd += ["-n", "--keep-going", "--path-output", SITE, src]
        return run(cmd, env=quiet_env(), check=False)

    site_env = dict(quiet_env(threads=1), ICLR26_SITE=str(SITE / "_build" / "html"))
    t0 = time.time()
    step(
        "library, notebook-shape and style tests",
        lambda: pytest("-n", "2", "-m", "not classroom and not site and not colab"),
    )
    step("every chapter, executed once", lambda: execute_chapters(chapters))
    # The classroom kit: every chapter's student version is generated, then run and
    # graded by otter-grader three times (stubs: the whole chapter; reference solutions
    # and a wrong answer: only the cells the answers need, see tests/test_classroom.py).
    step(
        "classroom kit: assign and grade every chapter",
        lambda: pytest("-n", "2", "-m", "classroom"),
    )
    scorecard()
    step("the site, from the executed chapters, warnings as errors", site)
    step(
        "the site in headless Chromium, offline, and its internal links",
        lambda: pytest("-m", "site", env=site_env),
    )
    step(
        "chapters outside the clone, in what Colab ships",
        lambda: pytest("-m", "colab"),
    )
    print("\n[tasks] test summary")
    for name, rc in steps.items():
        print(
            f"[tasks]   {'ok    ' if rc == 0 else 'FAILED'} {name} ({secs[name]:.0f} s)"
        )
    print(f"[tasks]   total {time.time() - t0:.0f} s")
    print(f"[tasks]   the site: {SITE / '_build' / 'html' / 'index.html'}")
    print(f"[tasks]   screenshots of every page: {ROOT / '_build' / 'screenshots'}")
    sys.exit(0 if all(rc == 0 for rc in steps.values()) else 1)


COMMANDS = {
    "build": build,
    "test": test,
    "scorecard": scorecard,
    "set-repo": set_repo,
    "env": lambda: None,
    "seeds": seeds,
    "assign": assign,
}

if __name__ == "__main__":
    if (
        len(sys.argv) < 2
        or sys.argv[1] not in COMMANDS
        or (sys.argv[1] not in ("seeds", "assign") and len(sys.argv) != 2)
    ):
        sys.exit(
            f"usage: python3 tasks.py {{{'|'.join(COMMANDS)}}}  "
            "(seeds takes [CHAPTER ...] [--seeds 0,1000,2000,3000,4000] [--jobs 2]; "
            "assign takes [CHAPTER ...] [--out DIR])"
        )
    if sys.argv[1] != "set-repo":
        ensure_env(sys.argv[1:])
    if sys.argv[1] in ("seeds", "assign"):
        COMMANDS[sys.argv[1]](sys.argv[2:])
    else:
        COMMANDS[sys.argv[1]]()
