"""The shape of every chapter notebook: what CHAPTER_STANDARD.md and CONTRIBUTING.md
require of it that can be checked without running it (nbval runs it)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from iclr26.claims import chapters_in_toc

ROOT = Path(__file__).resolve().parents[1]
# An ipywidgets control: interact, interact_manual or interactive.
WIDGET = re.compile(r"\binteract(_manual)?\(|\binteractive\(")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
CONFIG = (ROOT / "_config.yml").read_text()
# The one home of the project's address and the release readers install (_config.yml).
REPO_URL = (
    re.search(r"^repository:\s*\n(?:\s+.*\n)*?\s+url:\s*(\S+)", CONFIG, re.M)
    .group(1)
    .rstrip("/")
)
RELEASE = re.search(
    r"^repository:\s*\n(?:\s+.*\n)*?\s+release:\s*(\S+)", CONFIG, re.M
).group(1)
REPO_SLUG = REPO_URL.removeprefix("https://github.com/")


def test_release_is_the_package_version():
    version = re.search(
        r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M
    ).group(1)
    assert RELEASE == f"v{version}", (
        f"_config.yml's release {RELEASE} must be the tag of pyproject's version "
        f"{version}"
    )


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def test_there_are_chapters():
    assert NOTEBOOKS, "no chapter notebooks found under notebooks/"


def test_toc_lists_exactly_the_chapter_notebooks():
    listed = chapters_in_toc(ROOT / "_toc.yml")
    assert sorted(listed) == [p.stem for p in NOTEBOOKS], (
        "every notebooks/NN-slug.ipynb must be in _toc.yml, and only those"
    )
    assert len(set(listed)) == len(listed)


def module_name(path: Path) -> str:
    """The chapter's library module: its slug with "-" as "_"; a slug that is not a
    Python name ("3wm": a module name cannot start with a digit) is the module
    ``lib/iclr26/<word>_<slug>`` (world_model_3wm)."""
    slug = path.stem[3:].replace("-", "_")
    if slug.isidentifier():
        return slug
    found = sorted((ROOT / "lib" / "iclr26").glob(f"*_{slug}*"))
    return found[0].name.removesuffix(".py") if found else slug


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
class TestChapterNotebook:
    def test_has_library_module_and_tests(self, path):
        slug = module_name(path)
        assert (ROOT / "lib" / "iclr26" / f"{slug}.py").exists() or (
            ROOT / "lib" / "iclr26" / slug
        ).is_dir(), f"expected lib/iclr26/{slug}.py (or a {slug}/ subpackage)"
        assert (ROOT / "tests" / f"test_{slug}.py").exists(), (
            f"expected tests/test_{slug}.py"
        )

    def test_committed_without_outputs(self, path):
        dirty = [
            i
            for i, c in enumerate(cells(path))
            if c["cell_type"] == "code"
            and (c.get("outputs") or c.get("execution_count"))
        ]
        assert not dirty, (
            f"cells {dirty} have outputs or execution counts; "
            "clear them before committing"
        )

    def test_title_and_colab_badge(self, path):
        first = source(cells(path)[0])
        assert first.startswith("# ") and not re.match(r"# \d", first), (
            "the first cell starts with '# Method — what it is for' (the book numbers "
            "the chapters itself: a number in the title would show twice)"
        )
        link = (
            "[Open in Colab](https://colab.research.google.com/github/"
            f"{REPO_SLUG}/blob/{RELEASE}/colab/{path.name})"
        )
        assert link in first, (
            f"the first cell needs the Colab link {link} (its Colab copy at the "
            "release; `python3 tasks.py set-repo` writes it)"
        )
        every = re.findall(r"colab\.research\.google\.com/[^)\s\"]+", path.read_text())
        assert set(every) == {link.split("(https://")[1][:-1]}, (
            f"every Colab link must open the chapter's copy at {RELEASE}: {every}"
        )
        assert "ICLR 2026" in first

    def test_no_control_characters(self, path):
        """A TeX command written in a Python string without escaping its backslash
        (\\approx, \\beta, \\frac) turns into a control character (bell,
        backspace, form feed) that MathJax cannot parse: one such formula stops every
        formula of the page from rendering."""
        bad = [
            (i, repr(ch))
            for i, c in enumerate(cells(path))
            for ch in source(c)
            if ord(ch) < 32 and ch not in "\n\t"
        ]
        assert not bad, f"control characters in cells: {bad}"

    def test_no_image_from_the_internet(self, path):
        """The book works offline: a badge or figure fetched from a URL would show as a
        broken image there."""
        remote = [
            m.group(0)
            for c in cells(path)
            if c["cell_type"] == "markdown"
            for m in re.finditer(r"!\[[^\]]*\]\(https?://[^)]*\)", source(c))
        ]
        assert not remote, f"images from the internet: {remote}"

    def test_install_cell_is_guarded_and_points_at_the_repository(self, path):
        install = [
            source(c)
            for c in cells(path)
            if c["cell_type"] == "code" and "pip" in source(c)
        ]
        assert install, "a Colab install cell is required"
        assert '"google.colab" in sys.modules' in install[0]
        urls = re.findall(r"git\+https://\S+?(?=[\"'])", install[0])
        assert urls == [f"git+{REPO_URL}@{RELEASE}"], (
            f"the install cell installs {urls}; it must install the release, "
            f"git+{REPO_URL}@{RELEASE} (`python3 tasks.py set-repo` writes it)"
        )
        cell = next(
            c for c in cells(path) if c["cell_type"] == "code" and "pip" in source(c)
        )
        assert "hide-input" in cell.get("metadata", {}).get("tags", []), (
            "the install cell is folded in the book (tag hide-input)"
        )

    def test_parameters_cell(self, path):
        tagged = [
            c
            for c in cells(path)
            if "parameters" in c.get("metadata", {}).get("tags", [])
        ]
        assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
        values = {}
        for node in ast.parse(source(tagged[0])).body:
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                values[node.targets[0].id] = ast.literal_eval(node.value)
        assert (
            values.get("SCALE") == "ci"
            and isinstance(values.get("SEED"), int)
            and "DEVICE" in values
            and values["DEVICE"] is None
        )
        assert values.get("OVERRIDES") == {}, (
            "the parameters cell holds OVERRIDES = {} beside SCALE and SEED: the "
            "preset keys one run changes (python3 tasks.py sweep NN --set key=value)"
        )

    def test_sizes_follow_scale(self, path):
        code = "\n".join(source(c) for c in cells(path) if c["cell_type"] == "code")
        assert re.search(
            r"scale_preset\(\s*SCALE\s*,\s*overrides\s*=\s*OVERRIDES\b", code
        ), (
            "every size must follow from SCALE, changed for one run by OVERRIDES: "
            "scale_preset(SCALE, overrides=OVERRIDES, ci=..., full=...)"
        )
        assert len(re.findall(r"\bscale_preset\(", code)) == 1, (
            "one scale_preset call: a second preset could not be overridden"
        )
        call = re.search(r"ClaimLog\((.*?)\)\n", code, flags=re.S)
        assert call and re.search(r"overrides\s*=\s*OVERRIDES\b", call.group(1)), (
            "the run records the overrides it used: ClaimLog(..., overrides=OVERRIDES)"
        )

    def test_claims_are_declared_checked_and_timed(self, path):
        code = "\n".join(source(c) for c in cells(path) if c["cell_type"] == "code")
        # \s*: ruff format may break the call after its parenthesis
        assert re.search(rf'ClaimLog\(\s*"{path.stem}"', code), (
            f'expected ClaimLog("{path.stem}", CLAIMS, scale=SCALE, seed=SEED)'
        )
        declared = set(re.findall(r'Claim\(\s*"([A-Za-z0-9_-]+)"', code))
        checked = set(re.findall(r'\.check\(\s*"([A-Za-z0-9_-]+)"', code))
        assert declared, "no Claim(...) declared"
        assert declared == checked, (
            f"declared but not checked: {declared - checked}; "
            f"checked but not declared: {checked - declared}"
        )
        last_code = [source(c) for c in cells(path) if c["cell_type"] == "code"][-1]
        assert ".finish()" in last_code, (
            "the last code cell records the run time with log.finish()"
        )

    def test_exercises_widget_and_honesty_section(self, path):
        md = "\n".join(source(c) for c in cells(path) if c["cell_type"] == "markdown")
        code = "\n".join(source(c) for c in cells(path) if c["cell_type"] == "code")
        assert len(re.findall(r"```\{exercise\}", md)) >= 3, "at least three exercises"
        assert len(re.findall(r"```\{solution\}[^\n]*\n:class: dropdown", md)) >= 3, (
            "solutions hidden (:class: dropdown)"
        )
        assert "ipywidgets" in code, "at least one interactive control"
        assert re.search(
            r"^## .*(did not carry over|didn.t carry over)", md, flags=re.M | re.I
        ), "a '## What did not carry over' section"
        labels = re.findall(r":label: (\S+)", md)
        assert all(
            l.startswith((f"ex-{path.stem[:2]}", f"{path.stem[:2]}-")) for l in labels
        ), (
            f"labels must carry the chapter number (ex-{path.stem[:2]}-..., "
            f"{path.stem[:2]}-...): {labels}"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_kernel_metadata(path):
    """Without a kernelspec and language_info the un-executed book build cannot
    highlight code."""
    meta = json.loads(path.read_text())["metadata"]
    assert meta.get("kernelspec", {}).get("name") == "python3", (
        "metadata.kernelspec.name must be 'python3'"
    )
    assert meta.get("language_info", {}).get("name") == "python", (
        "metadata.language_info.name must be 'python'"
    )


def _is_stub(fn: ast.FunctionDef) -> bool:
    """A function whose body is an optional docstring, then
    `raise NotImplementedError`."""
    body = (
        fn.body[1:]
        if (
            fn.body
            and isinstance(fn.body[0], ast.Expr)
            and isinstance(getattr(fn.body[0], "value", None), ast.Constant)
        )
        else fn.body
    )
    if len(body) != 1 or not isinstance(body[0], ast.Raise):
        return False
    exc = body[0].exc
    name = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(name, ast.Name) and name.id == "NotImplementedError"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_coding_exercise_is_an_honest_stub(path):
    """CHAPTER_STANDARD.md, "Exercises that can be set": the exercise cell holds a stub,
    the reference solution lives only in the hidden solution, and the chapter's tests
    run the check function on the stub, a wrong answer and the reference."""
    import nbexercise

    stubs = nbexercise.exercise_cells(path.stem)
    assert stubs, "a code cell tagged 'exercise' must hold the coding exercise's stub"
    names = []
    for code in stubs:
        defs = [n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef)]
        assert defs, "the exercise cell must define the student's function"
        for fn in defs:
            assert _is_stub(fn), (
                f"{fn.name}() in the exercise cell must be a stub: a docstring, "
                "then only `raise NotImplementedError`"
            )
            names.append(fn.name)
    solutions = "\n".join(nbexercise.solution_blocks(path.stem))
    for name in names:
        assert re.search(rf"^def {name}\(", solutions, flags=re.M), (
            f"a ```python block inside a {{solution}} must define the reference "
            f"{name}()"
        )
    test_file = ROOT / "tests" / f"test_{module_name(path)}.py"
    assert re.search(rf'exercise_parts\(\s*"{path.stem}"', test_file.read_text()), (
        f"{test_file.name} must test the check function via "
        f"exercise_parts({path.stem!r}, ...)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_exercise_checker_says_not_done_on_the_stub_and_correct_on_the_reference(path):
    """The check function the exercise cell calls, run on the cell's own stub and on the
    hidden reference solution (each chapter's own test adds a wrong answer)."""
    import nbexercise

    calls = []
    for code in nbexercise.exercise_cells(path.stem):
        for node in ast.walk(ast.parse(code)):
            if (
                isinstance(node, ast.Call)
                and len(node.args) == 1
                and isinstance(node.args[0], ast.Name)
                and "check" in ast.unparse(node.func)
            ):
                calls.append((ast.unparse(node.func), node.args[0].id))
    assert calls, (
        "the exercise cell must call the chapter's check function on the student's "
        "function"
    )
    for func, name in calls:
        stub, reference, ns = nbexercise.exercise_parts(path.stem, name)
        check = eval(func, vars(ns))
        assert check(stub).status == "not done yet", f"{func}({name}) on the stub"
        verdict = check(reference)
        assert verdict.status == "correct", (
            f"{func} on the reference solution: {verdict}"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_widget_cells_are_skipped_and_hidden(path):
    """A headless executor sometimes never sees an `interact` cell finish (the kernel is
    idle, the executor waits: nbclient issue 312): nbval skips those cells
    ('nbval-skip'), and so do papermill in the seed sweep, otter and the book's build,
    which all execute through nbclient ('skip-execution'). The static book cannot run a
    widget: it shows the default figure drawn in the cell before and folds the widget's
    code away ('remove-output', 'hide-input'), so no widget placeholder is left on the
    page and no widget manager has to be fetched from the internet."""
    code = [c for c in cells(path) if c["cell_type"] == "code"]
    for i, c in enumerate(code):
        if WIDGET.search(source(c)):
            tags = set(c.get("metadata", {}).get("tags", []))
            want = {"nbval-skip", "skip-execution", "remove-output", "hide-input"}
            assert want <= tags, f"tag the widget cell {sorted(want - tags)}"
            assert i > 0 and "skip-execution" not in code[i - 1].get(
                "metadata", {}
            ).get("tags", []), "the cell before a widget draws its default figure"
