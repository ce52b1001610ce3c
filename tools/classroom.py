"""The classroom kit: each chapter as an otter-grader assignment.

    python3 tasks.py assign [CHAPTER ...] [--out classroom]

For every chosen chapter this writes, under ``classroom/NN-slug/``:

    master/NN-slug.ipynb                 the chapter in otter's assignment format
    student/NN-slug.ipynb                what students get: no solutions, the stubs kept
    autograder/NN-slug-autograder_*.zip  what ``otter run`` grades a submission with

The conversion below only *marks up* the chapter for otter (which cells are questions,
solutions, prompts and tests); removing the solutions, clearing outputs and building the
autograder is otter's own ``otter assign``.

How a chapter maps onto otter's format:

* every ``{exercise}`` directive becomes an otter question named by its label;
* a coding exercise (its ``{solution}`` holds a ```python block, and a code cell
  tagged ``exercise`` holds the stub) is autograded: the reference solution becomes
  the solution cell, the stub its prompt (what the student sees), and every
  ``check_...(fn)`` call of the stub cell becomes two test cases: 1 point when the
  function runs on the checker's inputs and returns, 2 more when the checker says
  "correct".
  A failing case shows the checker's hint, never the answer;
* a written exercise (no code in its solution) is a manually graded question whose
  hidden solution becomes otter's answer cell;
* the chapter's Colab install cell also installs otter-grader, and an ordinary cell
  after it starts otter's ``grader`` (otter's own init cell would run before the
  install cell);
* the widget cells (tagged ``nbval-skip``) are tagged ``otter_ignore``: grading runs
  headless, where an ``interact`` cell can hang.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

OTTER_VERSION = "7.0.0"
RUNS_POINTS, CORRECT_POINTS, WRITTEN_POINTS = 1, 2, 2
QUOTE = "'" * 3  # wraps the stub in the master; stubs use """ docstrings

# ```{exercise} Title / ````{solution} label ... closed by the same fence
DIRECTIVE_RE = re.compile(
    r"^(?P<fence>`{3,})\{(?P<kind>exercise|solution)\}(?P<arg>[^\n]*)\n"
    r"(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
    re.S | re.M,
)
LABEL_RE = re.compile(r"^:label:\s*(\S+)\s*$", re.M)
OPTION_RE = re.compile(r"^:[a-z-]+:[^\n]*\n", re.M)
PYTHON_RE = re.compile(r"^```python\n(.*?)^```[ \t]*$", re.S | re.M)


def _raw(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_raw_cell(text)


def _code(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(text)


def _markdown(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text)


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def split_stub(source: str) -> tuple[str, list[str]]:
    """The stub cell's definitions, and the expressions of its trailing
    ``print(check(fn))`` lines (``check(fn)`` itself), which become the
    question's tests."""
    tree = ast.parse(source)
    checks, body = [], list(tree.body)
    while body and isinstance(body[-1], ast.Expr):
        call = body.pop().value
        if (
            isinstance(call, ast.Call)
            and getattr(call.func, "id", "") == "print"
            and call.args
        ):
            call = call.args[0]
        checks.insert(0, ast.get_source_segment(source, call))
    if not checks or not body:
        raise ValueError(
            "an exercise cell must define the student's function(s), then call "
            "the chapter's check function on them"
        )
    end = body[-1].end_lineno
    return "\n".join(source.splitlines()[:end]).rstrip() + "\n", checks


def _test_cells(
    name: str, check: str, functions: list[str], allowed: list[str]
) -> list[nbformat.NotebookNode]:
    """Two otter test cases for one ``check_...(fn)`` call: it runs; it is correct.

    Both run the check through :func:`iclr26.grading.without_library`, so a function
    that calls the library's own answer scores neither (``functions``: the student's
    function names the check takes; ``allowed``: the names the reference solution uses,
    whose library functions the student may call too)."""
    params = ", ".join(functions)
    guarded = (
        "from iclr26.grading import without_library as _kit_guard\n"
        f"_verdict = _kit_guard(lambda {params}: {check}, [{params}], "
        f"allowed={sorted(allowed)!r})\n"
    )
    runs = (
        f'""" # BEGIN TEST CONFIG\npoints: {RUNS_POINTS}\n'
        f'success_message: "{name}: your function runs on the checker\'s inputs"\n'
        f'""" # END TEST CONFIG\n'
        + guarded
        + "assert _verdict.status != 'not done yet', str(_verdict)\n"
        "assert not _verdict.crashed, str(_verdict)"
    )
    correct = (
        f'""" # BEGIN TEST CONFIG\npoints: {CORRECT_POINTS}\n'
        f'success_message: "{name}: correct"\n'
        f'""" # END TEST CONFIG\n'
        + guarded
        + "assert _verdict.status == 'correct', str(_verdict)"
    )
    return [_code(runs), _code(correct)]


def stub_functions(definitions: str) -> list[str]:
    """The names of the functions a stub cell defines at its top level."""
    return [
        node.name
        for node in ast.parse(definitions).body
        if isinstance(node, ast.FunctionDef)
    ]


def reference_names(code: str) -> list[str]:
    """Every name and attribute the reference solution mentions: the library helpers it
    calls (``dmf.end_to_end``) are open to the student too."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return sorted(names)


def _question(label: str, points: int | None, manual: bool) -> nbformat.NotebookNode:
    """Otter's question header; an autograded question takes its points from
    its tests."""
    head = f"# BEGIN QUESTION\nname: {label}\nmanual: {'true' if manual else 'false'}"
    return _raw(head + (f"\npoints: {points}" if points is not None else ""))


def _exercises(nb, name: str) -> dict[str, dict]:
    """label -> {"exercise": directive text, "answer": solution body, "code":
    reference or ""}."""
    found: dict[str, dict] = {}
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for m in DIRECTIVE_RE.finditer(cell.source):
            if m.group("kind") == "exercise":
                label = LABEL_RE.search(m.group("body"))
                if not label:
                    raise ValueError(f"{name}: an exercise without a :label:")
                found[label.group(1)] = {
                    "exercise": m.group(0).strip(),
                    "answer": "",
                    "code": "",
                }
            else:
                label = m.group("arg").strip()
                if label not in found:
                    raise ValueError(
                        f"{name}: solution {label!r} comes before its exercise"
                    )
                found[label]["answer"] = OPTION_RE.sub("", m.group("body")).strip()
                found[label]["code"] = "\n".join(PYTHON_RE.findall(m.group("body")))
    return found


def master_notebook(chapter_path: Path) -> nbformat.NotebookNode:
    """The chapter marked up in otter's assignment format (see the module docstring)."""
    nb = nbformat.read(chapter_path, as_version=4)
    name = chapter_path.stem
    exercises = _exercises(nb, name)
    stubs = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and "exercise" in _tags(c)
    ]
    coding = [label for label, e in exercises.items() if e["code"]]
    if len(coding) != len(stubs):
        raise ValueError(
            f"{name}: {len(coding)} coding exercises but {len(stubs)} exercise cells"
        )
    stub_of = dict(zip(coding, stubs))
    cells = [
        _raw(
            "# ASSIGNMENT CONFIG\n"
            f"name: {name}\n"
            "init_cell: false\n"  # ours follows the install cell, see below
            "check_all_cell: false\n"
            "export_cell: false\n"
            "run_tests: false\n"  # the book's tests run every chapter already
            "solutions_pdf: false\n"
            "template_pdf: false\n"
            "show_question_points: true\n"
            "tests:\n  files: true\n"
        )
    ]
    installed = False
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if "nbval-skip" in _tags(cell):
                # the live widget cells: a headless executor can wait forever on an
                # `interact` cell (see CONTRIBUTING), so otter's grading leaves them out
                cell.metadata.setdefault("tags", []).append("otter_ignore")
            if index in stubs:
                continue  # moved into its question, below
            if not installed and "google.colab" in cell.source:
                cell.source = cell.source.rstrip() + (
                    '\n    subprocess.run([sys.executable, "-m", "pip", "install", '
                    '"-q",'
                    f' "otter-grader=={OTTER_VERSION}"], check=True)  # the classroom '
                    "kit"
                )
                cells += [
                    cell,
                    _code(
                        f'import otter  # the grader: grader.check("ex-...") '
                        f"runs one question's tests\n"
                        f'grader = otter.Notebook("{name}.ipynb")'
                    ),
                ]
                installed = True
                continue
        if cell.cell_type != "markdown" or not DIRECTIVE_RE.search(cell.source):
            cells.append(cell)
            continue
        # A markdown cell holding exercises or solutions: split it at each directive.
        text, pos = cell.source, 0
        for m in DIRECTIVE_RE.finditer(text):
            before = text[pos : m.start()].strip()
            if before:
                cells.append(_markdown(before))
            pos = m.end()
            if m.group("kind") == "solution":
                continue  # each solution goes into its question, hidden from students
            label = LABEL_RE.search(m.group("body")).group(1)
            e = exercises[label]
            if not e["code"]:  # written: graded by hand
                cells += [
                    _question(label, WRITTEN_POINTS, manual=True),
                    _markdown(e["exercise"]),
                    _raw("# BEGIN SOLUTION"),
                    _markdown(e["answer"] or "(no solution given)"),
                    _raw("# END SOLUTION"),
                    _raw("# END QUESTION"),
                ]
                continue
            stub = stub_of[label]
            if stub < index or any(
                c.cell_type == "code" for c in nb.cells[index + 1 : stub]
            ):
                raise ValueError(
                    f"{name}: the exercise cell of {label} must follow its exercise "
                    "with no other code cell between"
                )
            definitions, checks = split_stub(nb.cells[stub].source)
            if QUOTE in definitions:
                raise ValueError(
                    f"{name}: the stub of {label} must not contain {QUOTE}"
                )
            cells += [
                _question(label, None, manual=False),
                _markdown(e["exercise"]),
                _raw("# BEGIN SOLUTION"),
                # the reference, shown only in the master; the stub, shown to students
                # (in the master, a string that does nothing)
                _code(
                    "# BEGIN SOLUTION NO PROMPT\n"
                    + e["code"].rstrip()
                    + "\n# END SOLUTION\n"
                    + QUOTE
                    + " # BEGIN PROMPT\n"
                    + definitions
                    + QUOTE
                    + " # END PROMPT"
                ),
                _raw("# END SOLUTION"),
                _code("\n".join(f"print({c})" for c in checks)),
                _raw("# BEGIN TESTS"),
            ]
            functions = stub_functions(definitions)
            allowed = reference_names(e["code"])
            for check in checks:
                cells += _test_cells(label, check, functions, allowed)
            cells += [_raw("# END TESTS"), _raw("# END QUESTION")]
        rest = text[pos:].strip()
        if rest:
            cells.append(_markdown(rest))
    if not installed:
        raise ValueError(f"{name}: no Colab install cell found")
    nb.cells = cells
    return nb


def assign(chapter_path: Path, out: Path, python: str = sys.executable) -> Path:
    """Write ``out/NN-slug/{master.ipynb, student/, autograder/}`` with
    ``otter assign``; return the chapter's folder."""
    folder = (out / chapter_path.stem).resolve()
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "master").mkdir()
    master = folder / "master" / chapter_path.name
    nbformat.write(master_notebook(chapter_path), master)
    subprocess.run(
        [
            python,
            "-m",
            "otter",
            "assign",
            "--no-pdfs",
            "--no-run-tests",
            str(master),
            str(folder),
        ],
        check=True,
        cwd=folder,
        stdout=subprocess.DEVNULL,
    )
    return folder


def autograder_zip(folder: Path) -> Path:
    zips = sorted((folder / "autograder").glob("*-autograder_*.zip"))
    if not zips:
        raise FileNotFoundError(f"no autograder zip under {folder / 'autograder'}")
    return zips[-1]


def question_points(folder: Path) -> dict[str, float]:
    """Autograded points available per question, from the autograder's test files."""
    points: dict[str, float] = {}
    for test in sorted((folder / "autograder" / "tests").glob("*.py")):
        text = test.read_text()
        points[test.stem] = sum(
            float(p) for p in re.findall(r"'points': ([0-9.]+)", text)
        )
    return points


def written_questions(chapter_path: Path) -> list[str]:
    """The labels of a chapter's written exercises (no code in their solution): the
    questions a teacher grades by hand, WRITTEN_POINTS each."""
    nb = nbformat.read(chapter_path, as_version=4)
    return [
        label for label, e in _exercises(nb, chapter_path.stem).items() if not e["code"]
    ]


DERIVATION_WORDS = ("show", "derive", "prove", "compute", "calculate")
EXPERIMENT_WORDS = ("train ", "plot ", "measure ", "rerun", "re-run")
MINUTES = {"coding": 30, "experiment": 30, "derivation": 20, "conceptual": 10}  # rough


def exercise_kind(exercise: dict) -> str:
    """coding (its solution holds code, autograded), experiment (it asks to train, plot
    or measure: open-ended code, graded by hand), derivation (it asks to show, derive,
    prove or compute) or conceptual (it asks to explain)."""
    if exercise["code"]:
        return "coding"
    statement = DIRECTIVE_RE.match(exercise["exercise"] + "\n").group("body").lower()
    if any(w in statement for w in EXPERIMENT_WORDS):
        return "experiment"
    return (
        "derivation" if any(w in statement for w in DERIVATION_WORDS) else "conceptual"
    )


def exercise_table(chapter_paths: list[Path]) -> str:
    """The instructor page's table: every exercise of every chapter, its kind and
    rough time."""
    rows = ["| chapter | exercise | label | kind | about |", "|---|---|---|---|---|"]
    for path in chapter_paths:
        nb = nbformat.read(path, as_version=4)
        for label, e in _exercises(nb, path.stem).items():
            title = DIRECTIVE_RE.match(e["exercise"] + "\n").group("arg").strip()
            kind = exercise_kind(e)
            rows.append(
                f"| {path.stem[:2]} | {title} | `{label}` | {kind} | {MINUTES[kind]} "
                "min |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    print(json.dumps({"usage": "python3 tasks.py assign [CHAPTER ...] [--out DIR]"}))
