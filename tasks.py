#!/usr/bin/env python3
"""The book's commands. Needs only Python 3.10+ on a fresh clone.

    # make/refresh the environment, run the chapters that changed, render _build/html
    python3 tasks.py build
    # every test: library, each chapter once, classroom, the site in a browser, Colab
    python3 tasks.py test

With no virtual environment (or conda env) active, both make ``.venv/`` here and run
inside it. Either way they install the exact versions of ``requirements-lock.txt`` (only
when it changed) and this repository's ``iclr26`` package in editable mode.

The seed sweep: ``python3 tasks.py sweep [CHAPTER ...] [--seeds 0,1000,2000,3000,4000]``
runs each chapter at each seed and records every claim's verdict per seed in
results/sweeps/ (commit it; the tests fail on an asserted claim without a fresh sweep).
``--set KEY=VALUE`` runs a chapter at another setting (its preset with KEY changed) and
``--grid`` every setting of grids/NN-slug.json; both record under results/calibration/.

Neither command writes a tracked file: the chapters' claim records of their runs go to
_build/results/ and are compared with the committed ones. ``python3 tasks.py record
[CHAPTER ...]`` records runs into results/ on purpose. Helpers: ``python3 tasks.py
scorecard`` regenerates book/scorecard.md and the README's chapter table from
results/; ``python3 tasks.py set-repo`` rewrites every notebook's Colab link and
install cell to the repository URL in _config.yml.
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


RUN_RESULTS = ROOT / "_build" / "results"  # the records of the test and build runs


def quiet_env(threads: int | None = None, results: Path = RUN_RESULTS) -> dict:
    # A chapter's claim record goes to ``results`` whatever folder its kernel runs in
    # (the book's executor may use a temporary one): _build/results/ for the test and
    # build commands, which leave the repository as it was; results/ only when a
    # developer records a run on purpose (`tasks.py record`).
    env = dict(
        os.environ,
        ICLR26_PROGRESS="0",
        ICLR26_RESULTS_DIR=str(results),
        PYTHONWARNINGS="ignore::DeprecationWarning",
    )
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # The kernels import this tree's library, whatever the environment's editable
    # install points at (a second clone or a worktree sharing one environment).
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "lib"), os.environ.get("PYTHONPATH", "")) if p
    )
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


def generated_pages(results_dir: Path = ROOT / "results") -> dict[Path, str]:
    """Every generated file, from the committed records in ``results_dir`` and the
    chapters: book/scorecard.md, the README's chapter table, the instructors' exercise
    table and the chapters' Colab copies (colab/NN-slug.ipynb), as {path: new text}.
    ``tests/test_book.py`` checks that the committed files equal these."""
    from iclr26.claims import chapters_in_toc, load_results
    from iclr26.scorecard import (
        chapter_counts,
        chapter_hashes,
        load_paper_figures,
        load_sweeps,
        scorecard_markdown,
        scorecard_svg,
        sweep_usable,
    )

    chapters = chapters_in_toc(ROOT / "_toc.yml")
    results = load_results(results_dir)
    sweeps = load_sweeps(results_dir)
    hashes = {ch: chapter_hashes(ROOT, ch) for ch in chapters}
    pages = {}
    page = (ROOT / "book" / "scorecard.md").read_text()
    figure = (
        "```{figure} scorecard.svg\n:name: fig-scorecard\n:alt: the scorecard as a "
        "figure\n\nEach chapter's headline claims (a square each) and all its paper "
        "claims (the bar, with their number), by outcome: reproduced (green), not "
        "reproduced (vermillion), untestable here (grey), held but not asserted "
        "(orange). Hover a square for the claim.\n```\n\n"
    )
    pages[ROOT / "book" / "scorecard.md"] = replace_between(
        page,
        "scorecard",
        figure
        + scorecard_markdown(
            chapters, results, sweeps, hashes, load_paper_figures(results_dir)
        ),
    )
    pages[ROOT / "book" / "scorecard.svg"] = scorecard_svg(
        chapters, results, sweeps, hashes
    )
    rows = [
        "| chapter | headline claims | all paper claims | checks |",
        "| --- | --- | --- | --- |",
    ]
    for ch in chapters:
        counts = chapter_counts(
            results.get((ch, "ci")),
            sweeps.get(ch),
            sweep_usable(sweeps.get(ch), hashes[ch]),
        )
        rows.append(
            f"| [{chapter_title(ch)}](notebooks/{ch}.ipynb) | {readme_row(counts)}"
        )
    readme = (ROOT / "README.md").read_text()
    pages[ROOT / "README.md"] = replace_between(readme, "chapters", "\n".join(rows))
    # The instructor page's table of every chapter's exercises, read from the notebooks.
    sys.path.insert(0, str(ROOT / "tools"))
    import classroom

    page = (ROOT / "book" / "instructors.md").read_text()
    table = classroom.exercise_table(
        [ROOT / "notebooks" / f"{ch}.ipynb" for ch in chapters]
    )
    pages[ROOT / "book" / "instructors.md"] = replace_between(page, "exercises", table)
    import colab

    bib = colab.load_bibliography(ROOT / "book" / "references.bib")
    for ch in chapters:
        pages[ROOT / "colab" / f"{ch}.ipynb"] = colab.render(
            ROOT / "notebooks" / f"{ch}.ipynb", bib
        )
    return pages


def readme_row(counts: dict) -> str:
    """A chapter's cells of the README table: headline claims, all paper claims,
    checks."""
    from iclr26.scorecard import OUTCOMES, PAPER_BINS

    def words(prefix: str, total: int) -> str:
        parts = [f"{counts[prefix + b]} {b}" for b in OUTCOMES if counts[prefix + b]]
        parts += [
            f"{counts[prefix + b]} {b}" for b in PAPER_BINS[3:] if counts[prefix + b]
        ]
        return f"{total}: " + ", ".join(parts) if parts else "none"

    return (
        f"{words('headline ', counts['headline'])} | {words('', counts['paper'])} | "
        f"{counts['checks_passed']}/{counts['checks']} passed |"
    )


def scorecard() -> None:
    """Regenerate every generated file (:func:`generated_pages`): the scorecard, the
    README's chapter table and the instructors' exercise table from results/ and
    results/sweeps/, and the chapters' Colab copies from notebooks/."""
    pages = generated_pages()
    for path, text in pages.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
    stale = sorted(set((ROOT / "colab").glob("*.ipynb")) - set(pages))
    for path in stale:  # the copy of a chapter that is no longer in the book
        path.unlink()
    print(f"[tasks] generate: {len(pages)} files up to date", flush=True)


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
CELL_TIMEOUT_S = 600  # as _config.yml; chapter 14's experiment cell takes ~250 s here


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
    if params:
        # a YAML file (JSON's types, written by PyYAML so that 1e-06 stays a float)
        # keeps dicts, lists and floats as they are; -p would pass strings
        import yaml

        params_file = log_path.with_suffix(".params.yaml")
        params_file.write_text(yaml.safe_dump(json.loads(json.dumps(params))))
        cmd += ["-f", str(params_file)]
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


SWEEP_USAGE = (
    "usage: python3 tasks.py sweep [CHAPTER ...] [--seeds 0,1000,2000,3000,4000] "
    "[--set KEY=VALUE ...] [--name NAME] [--grid] [--jobs 2]"
)


def parse_set(spec: str) -> tuple[str, object]:
    """ "lr=1e-2" -> ("lr", 0.01); the value is read as JSON ("[8, 16]", "true",
    "0.5"), else kept as a string ("jitter=wide")."""
    key, eq, text = spec.partition("=")
    if not eq or not re.fullmatch(r"[A-Za-z_]\w*", key):
        sys.exit(f"--set wants KEY=VALUE with KEY a preset key, got {spec!r}")
    try:
        return key, json.loads(text)
    except json.JSONDecodeError:
        return key, text


def setting_name(overrides: dict) -> str:
    """A setting's default name, from its overrides: "n=16,steps=400"."""
    name = ",".join(
        f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in overrides.items()
    )
    return re.sub(r"[^A-Za-z0-9_.=,+-]", "", name.replace(" ", "")) or "default"


def load_grid(chapter: str) -> dict:
    """The chapter's calibration grid, ``grids/<chapter>.json``: ``{"about": why,
    "seeds": [...], "settings": {name: {preset key: value}}}``."""
    path = ROOT / "grids" / f"{chapter}.json"
    if not path.is_file():
        sys.exit(f"{chapter} has no grid file {path.relative_to(ROOT)}")
    grid = json.loads(path.read_text())
    if not isinstance(grid.get("settings"), dict) or not grid["settings"]:
        sys.exit(f"{path.relative_to(ROOT)} needs a non-empty 'settings' object")
    return grid


def sweep(argv: list[str]) -> None:
    """Run chapters at seeds and settings with papermill (SCALE="ci", two kernels at a
    time, one thread each, a line per run), and record every claim's value and verdict
    per seed.

    Without ``--set`` or ``--grid``: the committed seed sweep, written to
    results/sweeps/ (commit it), with the first seed also run under another set of CPU
    kernels (ATEN_CPU_CAPABILITY) so that a verdict that hinges on the last digits
    shows. With ``--set KEY=VALUE`` (repeatable; the value is read as JSON): one
    setting, the chapter's preset with those keys changed through its OVERRIDES,
    written to results/calibration/NN-slug/NAME.json (``--name``, default from the
    overrides). With ``--grid``: every setting of the chapter's grids/NN-slug.json,
    at its seeds unless ``--seeds`` is given. The default-seed results in results/ and
    the committed sweeps are never touched by a setting's runs."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    import torch

    from iclr26.scorecard import (
        DEFAULT_SWEEP_SEEDS,
        OTHER_CPU,
        calibration_path,
        chapter_hashes,
        sweep_path,
        sweep_record,
    )

    spec, names, jobs, sets, name, grid = None, [], 2, {}, None, False
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("--seeds", "--jobs", "--set", "--name") and args:
            value = args.pop(0)
            if a == "--seeds":
                spec = value
            elif a == "--set":
                key, v = parse_set(value)
                sets[key] = v
            elif a == "--name":
                name = value
            elif value.isdigit() and int(value) > 0:
                jobs = int(value)
            else:
                sys.exit(f"--jobs wants a positive integer, got {value!r}")
        elif a == "--grid":
            grid = True
        elif a.startswith("-"):
            sys.exit(SWEEP_USAGE)
        else:
            names.append(a)
    if grid and sets:
        sys.exit("give --grid or --set, not both")
    if name and not sets:
        sys.exit("--name names a --set setting")
    chapters = list(dict.fromkeys(resolve_chapters(names)))
    # the settings of each chapter: (name or None for the sweep, overrides, seeds)
    plans: dict[str, list[tuple[str | None, dict, list[int]]]] = {}
    for ch in chapters:
        if grid:
            g = load_grid(ch)
            seeds_ = parse_seeds(spec) if spec else [int(x) for x in g["seeds"]]
            plans[ch] = [(n, dict(o), seeds_) for n, o in g["settings"].items()]
        elif sets:
            seeds_ = parse_seeds(spec or ",".join(map(str, DEFAULT_SWEEP_SEEDS)))
            plans[ch] = [(name or setting_name(sets), dict(sets), seeds_)]
        else:
            seeds_ = parse_seeds(spec or ",".join(map(str, DEFAULT_SWEEP_SEEDS)))
            plans[ch] = [(None, {}, seeds_)]
    for ch, plan in plans.items():
        for setting, _, _ in plan:
            if setting is not None:
                calibration_path(ROOT / "results", ch, setting)  # a valid name
    here = torch.backends.cpu.get_cpu_capability()
    other = OTHER_CPU.get(here, "default")
    work = []  # (chapter, setting, overrides, seed, capability or None)
    for ch, plan in plans.items():
        for setting, overrides, seeds_ in plan:
            work += [(ch, setting, overrides, s, None) for s in seeds_]
            if setting is None:
                work.append((ch, None, {}, seeds_[0], other))
    hashes = {ch: chapter_hashes(ROOT, ch) for ch in chapters}
    tmp = Path(tempfile.mkdtemp(prefix="iclr26-sweep-"))
    print(
        f"[sweep] {len(chapters)} chapters, {len(work)} runs, {jobs} at a time, one "
        f"thread each (logs in {tmp}); CPU kernels {here}, the cross-CPU runs under "
        f"{other.upper()}",
        flush=True,
    )
    done: list[int] = [0]
    t0 = time.time()

    def one(job: tuple) -> dict:
        ch, setting, overrides, seed, capability = job
        tag = f"{ch}.{setting or 'sweep'}.seed{seed}" + (
            f".{capability}" if capability else ""
        )
        out = tmp / re.sub(r"[^A-Za-z0-9_.=,+-]", "_", tag)
        out.mkdir()
        env = quiet_env(threads=1)
        env.update(ICLR26_RESULTS_DIR=str(out), ICLR26_CLAIMS_RAISE="0")
        if capability:
            env["ATEN_CPU_CAPABILITY"] = capability
        rc, wall = papermill_run(
            ROOT / "notebooks" / f"{ch}.ipynb",
            out / "executed.ipynb",
            out / "log.txt",
            env,
            params={"SCALE": "ci", "SEED": seed, "OVERRIDES": overrides},
            cell_timeout=CELL_TIMEOUT_S,
        )
        path = out / f"{ch}.ci.json"
        record = json.loads(path.read_text()) if path.exists() else None
        error = warning = None
        every_claim_checked = bool(record) and all(
            c["held"] is not None for c in record["claims"]
        )
        if record is not None and record.get("overrides", {}) != overrides:
            error = (
                f"the run recorded overrides {record.get('overrides')} where "
                f"{overrides} were asked for: pass OVERRIDES to scale_preset and "
                "ClaimLog"
            )
        elif rc != 0 and every_claim_checked:
            # Seen rarely: the kernel stops answering in a widget cell after every claim
            # was checked (a comm race in the executor, not a result).
            warning = (
                f"papermill ended with {rc} after every claim was checked (a later "
                "cell hung or failed); the record is complete and kept"
            )
            print(f"[sweep] {tag}: {warning}", flush=True)
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
            f"[sweep] ({done[0]}/{len(work)}) {tag}: {what}, {wall:.0f} s"
            + (f" -- {error}" if error else ""),
            flush=True,
        )
        return {
            "seed": seed,
            "record": record,
            "error": error,
            "warning": warning,
            "wall_s": wall,
            "capability": capability,
        }

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = list(pool.map(one, work))
    wrote_sweep = False
    for ch, plan in plans.items():
        if chapter_hashes(ROOT, ch) != hashes[ch]:
            print(
                f"[sweep] {ch} changed while it ran: its records are not written",
                flush=True,
            )
            continue
        for setting, overrides, _ in plan:
            mine = [
                r
                for (c, st, _, _, cap), r in zip(work, runs)
                if c == ch and st == setting and cap is None
            ]
            others = [
                r
                for (c, st, _, _, cap), r in zip(work, runs)
                if c == ch and st == setting and cap is not None
            ]
            record = sweep_record(
                ch,
                mine,
                hashes[ch],
                wall_s=sum(r["wall_s"] for r in mine + others),
                overrides=overrides,
                other_cpu=others,
            )
            if setting is None:
                path = sweep_path(ROOT / "results", ch)
                wrote_sweep = True
            else:
                path = calibration_path(ROOT / "results", ch, setting)
                record["name"] = setting
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
            failed = [
                c["id"]
                for c in record["claims"]
                if c.get("asserted", True) and any(h is not True for h in c["held"])
            ]
            print(
                f"[sweep] {ch}: wrote {path.relative_to(ROOT)}"
                + (
                    "; asserted claims that did not hold at every seed: "
                    f"{', '.join(failed)}"
                    if failed
                    else ""
                ),
                flush=True,
            )
    if wrote_sweep:
        scorecard()
    print(f"[sweep] wall time {time.time() - t0:.0f} s", flush=True)


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
        written = classroom.written_questions(ROOT / "notebooks" / f"{ch}.ipynb")
        auto = sum(points.values())
        hand = classroom.WRITTEN_POINTS * len(written)
        print(
            f"[assign] {folder}: student/{ch}.ipynb, autograder "
            f"{classroom.autograder_zip(folder).name}; {auto + hand:g} points: "
            f"{auto:g} autograded in {len(points)} questions, {hand:g} in "
            f"{len(written)} written questions graded by hand",
            flush=True,
        )


def set_repo() -> None:
    """Point every notebook's Colab link and install cell at the repository and
    release in _config.yml (``repository: url:`` and ``release:``): the link opens the
    chapter's Colab copy (colab/NN-slug.ipynb) at that release, the install cell
    installs the library at that release, and the install cell is folded in the book
    (tagged hide-input)."""
    url, release = repo_config()
    slug = url.removeprefix("https://github.com/")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            src = "".join(cell["source"])
            new = re.sub(
                r"https://colab\.research\.google\.com/github/[^)\s]+?/"
                r"(?:notebooks|colab)/(\d\d-[a-z0-9-]+\.ipynb)",
                rf"https://colab.research.google.com/github/{slug}/blob/{release}/"
                r"colab/\1",
                src,
            )
            new = re.sub(
                r"git\+https://github\.com/[^/\"'\s]+/[^/\"'@\s]+(@[^\"'\s]+)?",
                f"git+{url}@{release}",
                new,
            )
            if new != src:
                cell["source"] = new.splitlines(keepends=True)
            if cell["cell_type"] == "code" and '"google.colab" in sys.modules' in new:
                tags = cell.setdefault("metadata", {}).setdefault("tags", [])
                if "hide-input" not in tags:
                    tags.append("hide-input")
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def repo_config() -> tuple[str, str]:
    """(repository URL, release tag) from _config.yml's ``repository:`` section."""
    text = (ROOT / "_config.yml").read_text()
    url = re.search(r"^repository:\s*\n(?:\s+.*\n)*?\s+url:\s*(\S+)", text, re.M)
    release = re.search(
        r"^repository:\s*\n(?:\s+.*\n)*?\s+release:\s*(\S+)", text, re.M
    )
    if not (url and release):
        sys.exit("_config.yml needs repository: url: and release:")
    return url.group(1).rstrip("/"), release.group(1)


def repo_url() -> str:
    return repo_config()[0]


# --------------------------------------------------------------------------------------
# the two commands
# --------------------------------------------------------------------------------------
def compare_records(chapters: list[str]) -> list[str]:
    """Print, per chapter, the claims whose verdict in this run (_build/results/)
    differs from the committed record (results/): verdicts, not digits, which differ
    from CPU to CPU. A failing asserted claim has already failed its chapter; a
    reported claim that changed is news, not a failure. Returns the lines printed."""
    lines = []
    for ch in chapters:
        new, old = RUN_RESULTS / f"{ch}.ci.json", ROOT / "results" / f"{ch}.ci.json"
        if not (new.is_file() and old.is_file()):
            continue
        was = {c["id"]: c.get("held") for c in json.loads(old.read_text())["claims"]}
        now = {c["id"]: c.get("held") for c in json.loads(new.read_text())["claims"]}
        for cid in sorted(set(was) | set(now)):
            if was.get(cid) != now.get(cid):
                lines.append(
                    f"[compare] {ch} {cid}: held {now.get(cid)} in this run, "
                    f"{was.get(cid)} in the committed record"
                )
    for line in lines or ["[compare] every verdict agrees with the committed records"]:
        print(line, flush=True)
    return lines


def record(argv: list[str]) -> None:
    """Run chapters (all by default) at their defaults and record their claims in
    results/ (the recorded runs the scorecard reads), then regenerate the scorecard:
    what a developer does, on purpose, after changing a chapter. The test and build
    commands never write there."""
    names = [a for a in argv if not a.startswith("-")]
    if len(names) != len(argv):
        sys.exit("usage: python3 tasks.py record [CHAPTER ...]")
    chapters = list(dict.fromkeys(resolve_chapters(names)))
    failed = execute_chapters(chapters, results=ROOT / "results")
    scorecard()
    sys.exit(1 if failed else 0)


def build() -> None:
    """Execute every chapter whose code changed since its last run (two at a time; the
    rest are reused from _build/executed/), refresh the scorecard, and render the site
    from the executed chapters into _build/html."""
    from iclr26.claims import chapters_in_toc

    t0 = time.time()
    chapters = chapters_in_toc(ROOT / "_toc.yml")
    failed = execute_chapters(chapters, reuse=True)
    compare_records(chapters)
    rc = build_site(chapters, warnings_as_errors=False)
    print(
        f"[tasks] book built in {time.time() - t0:.0f} s"
        + (f" ({failed} chapters FAILED: see above)" if failed else "")
        + f". Open {SITE_HTML / 'index.html'}"
    )
    sys.exit(1 if failed or rc else 0)


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
SITE_HTML = ROOT / "_build" / "html"  # the site built from them


def chapter_stamp(ch: str) -> str:
    """What a chapter's executed copy depends on: its code cells and library modules
    (as the seed sweep hashes them) and the locked environment."""
    from iclr26.scorecard import chapter_hashes

    h = chapter_hashes(ROOT, ch)
    lock = LOCK.read_bytes() + NODEPS.read_bytes()
    return hashlib.sha256(json.dumps(h, sort_keys=True).encode() + lock).hexdigest()


def recorded_runtime(chapter: str) -> float:
    """The run time of ``chapter``'s committed record (results/NN-slug.ci.json), 0.0
    when it has none."""
    path = ROOT / "results" / f"{chapter}.ci.json"
    if not path.is_file():
        return 0.0
    return json.loads(path.read_text()).get("runtime_s") or 0.0


def execute_chapters(
    chapters: list[str],
    jobs: int = 2,
    reuse: bool = False,
    results: Path = RUN_RESULTS,
) -> int:
    """Run each chapter once, top to bottom, at its defaults (SCALE="ci", SEED=0), two
    kernels at a time with one torch thread each (two default-threaded torch processes
    on two cores thrash). A claim that does not hold raises in its check cell and fails
    the chapter. The executed copies go to _build/executed/ (the site is built from
    them, so no chapter runs twice), the claim records to ``results`` (_build/results/
    unless a developer records on purpose). With ``reuse``
    (the build command), a chapter whose executed copy is stamped with its current
    code is not run again. Returns the number of chapters that failed."""
    from concurrent.futures import ThreadPoolExecutor

    if not reuse:
        shutil.rmtree(EXECUTED, ignore_errors=True)
    EXECUTED.mkdir(parents=True, exist_ok=True)

    def fresh(ch: str) -> bool:
        stamp = EXECUTED / f"{ch}.stamp"
        return stamp.is_file() and stamp.read_text() == chapter_stamp(ch)

    # Longest first (by the committed record's run time): the last chapter to finish
    # is then a short one, so neither core idles long at the end of the step.
    todo = sorted(
        (ch for ch in chapters if not (reuse and fresh(ch))),
        key=lambda ch: -recorded_runtime(ch),
    )
    if reuse:
        print(
            f"[execute] {len(chapters) - len(todo)} chapters unchanged since their "
            f"last run, {len(todo)} to run",
            flush=True,
        )

    def one(ch: str) -> tuple[str, int | str, float]:
        (EXECUTED / f"{ch}.stamp").unlink(missing_ok=True)
        rc, wall = papermill_run(
            ROOT / "notebooks" / f"{ch}.ipynb",
            EXECUTED / f"{ch}.ipynb",
            EXECUTED / f"{ch}.log",
            quiet_env(threads=1, results=results),
            cell_timeout=600,
        )
        verdict = "ok" if rc == 0 else f"FAILED ({rc}), log: {EXECUTED / ch}.log"
        print(f"[execute] {ch}: {verdict}, {wall:.0f} s", flush=True)
        if rc == 0:
            (EXECUTED / f"{ch}.stamp").write_text(chapter_stamp(ch))
        else:
            tail = (EXECUTED / f"{ch}.log").read_text().strip().splitlines()[-25:]
            print("\n".join(f"[execute]   {line}" for line in tail), flush=True)
        return ch, rc, wall

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = list(pool.map(one, todo))
    return sum(rc != 0 for _, rc, _ in runs)


def with_outputs(notebook: Path, executed: Path) -> dict:
    """The notebook as it is now (prose, tags, figure captions) with the outputs of its
    executed copy, cell by cell; the code must be the code that ran."""
    nb, ran = json.loads(notebook.read_text()), json.loads(executed.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    done = [c for c in ran["cells"] if c["cell_type"] == "code"]
    # papermill may add an injected-parameters cell; there is none without -p
    if ["".join(c["source"]) for c in code] != ["".join(c["source"]) for c in done]:
        raise ValueError(f"{executed} did not run the code of {notebook}")
    for c, r in zip(code, done):
        c["outputs"], c["execution_count"] = (
            r.get("outputs", []),
            r.get("execution_count"),
        )
    return nb


def site_source(chapters: list[str]) -> Path:
    """A copy of the book's source in which each chapter carries the outputs of its
    executed copy in _build/executed/, with execution switched off: building it renders
    what the run produced instead of running every chapter again."""
    shutil.rmtree(SITE_SRC, ignore_errors=True)
    SITE_SRC.mkdir(parents=True)
    for name in ("book", "_vendor", "_theme"):
        shutil.copytree(ROOT / name, SITE_SRC / name)
    shutil.copy(ROOT / "_toc.yml", SITE_SRC / "_toc.yml")
    shutil.copy(noexec_config(), SITE_SRC / "_config.yml")
    (SITE_SRC / "notebooks").mkdir()
    for ch in chapters:
        notebook, executed = (
            ROOT / "notebooks" / f"{ch}.ipynb",
            EXECUTED / f"{ch}.ipynb",
        )
        out = SITE_SRC / "notebooks" / f"{ch}.ipynb"
        if (EXECUTED / f"{ch}.stamp").is_file():
            out.write_text(
                json.dumps(with_outputs(notebook, executed), indent=1) + "\n"
            )
        else:  # it failed: built without outputs (the step that ran it has failed)
            shutil.copy(notebook, out)
    return SITE_SRC


def build_site(chapters: list[str], warnings_as_errors: bool = True) -> int:
    """Render the site from the executed chapters into _build/html."""
    src = site_source(chapters)
    cmd = [Path(sys.executable).parent / "jupyter-book", "build", "--all", "-n"]
    cmd += ["-W", "--keep-going"] if warnings_as_errors else []
    cmd += ["--path-output", ROOT, src]  # Jupyter Book writes ROOT/_build/html
    return run(cmd, env=quiet_env(), check=False)


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

    site_env = dict(quiet_env(threads=1), ICLR26_SITE=str(SITE_HTML))
    t0 = time.time()
    step(
        "library, notebook-shape and style tests",
        lambda: pytest("-n", "2", "-m", "not classroom and not site and not colab"),
    )
    step("every chapter, executed once", lambda: execute_chapters(chapters))
    compare_records(chapters)
    # The classroom kit: every chapter's student version is generated, then run and
    # graded by otter-grader three times (stubs: the whole chapter; reference solutions
    # and a wrong answer: only the cells the answers need, see tests/test_classroom.py).
    step(
        "classroom kit: assign and grade every chapter",
        lambda: pytest("-n", "2", "-m", "classroom"),
    )
    # The Colab check (a fresh environment, then two chapters, one kernel at a time)
    # and the site's build and browser test each keep about one core busy: they run
    # side by side, the Colab check's output printed when it ends.
    colab_name = "chapters outside the clone, in what Colab ships (beside the site)"
    colab_log = ROOT / "_build" / "colab-test.log"
    colab_cmd = [sys.executable, "-m", "pytest", "tests", "-q", "-m", "colab"]
    print(f"\n[tasks] === {colab_name}: started, output in {colab_log}", flush=True)
    t_colab = time.time()
    with colab_log.open("w") as log:
        colab = subprocess.Popen(
            colab_cmd,
            cwd=ROOT,
            env=quiet_env(threads=1),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    step(
        "the site, from the executed chapters, warnings as errors",
        lambda: build_site(chapters),
    )
    step(
        "the site in headless Chromium, offline, and its internal links",
        lambda: pytest("-m", "site", env=site_env),
    )
    print(f"\n[tasks] === {colab_name}: waiting for it", flush=True)
    steps[colab_name] = colab.wait()
    secs[colab_name] = time.time() - t_colab
    print(colab_log.read_text(), flush=True)
    print("\n[tasks] test summary")
    for name, rc in steps.items():
        print(
            f"[tasks]   {'ok    ' if rc == 0 else 'FAILED'} {name} ({secs[name]:.0f} s)"
        )
    print(f"[tasks]   total {time.time() - t0:.0f} s")
    print(f"[tasks]   the site: {SITE_HTML / 'index.html'}")
    print(f"[tasks]   screenshots of every page: {ROOT / '_build' / 'screenshots'}")
    sys.exit(0 if all(rc == 0 for rc in steps.values()) else 1)


COMMANDS = {
    "build": build,
    "test": test,
    "generate": scorecard,
    "scorecard": scorecard,  # the command's earlier name
    "set-repo": set_repo,
    "env": lambda: None,
    "sweep": sweep,
    "seeds": sweep,  # the command's earlier name
    "record": record,
    "assign": assign,
}

if __name__ == "__main__":
    if (
        len(sys.argv) < 2
        or sys.argv[1] not in COMMANDS
        or (
            sys.argv[1] not in ("sweep", "seeds", "assign", "record")
            and len(sys.argv) != 2
        )
    ):
        sys.exit(
            f"usage: python3 tasks.py {{{'|'.join(COMMANDS)}}}  "
            "(sweep takes [CHAPTER ...] [--seeds 0,1000,2000,3000,4000] "
            "[--set KEY=VALUE ...] [--name NAME] [--grid] [--jobs 2]; "
            "assign and record take [CHAPTER ...]; assign also [--out DIR])"
        )
    if sys.argv[1] != "set-repo":
        ensure_env(sys.argv[1:])
    if sys.argv[1] in ("sweep", "seeds", "assign", "record"):
        COMMANDS[sys.argv[1]](sys.argv[2:])
    else:
        COMMANDS[sys.argv[1]]()
