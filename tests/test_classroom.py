"""The classroom kit end to end, per chapter: generate the otter-grader assignment, then
run and grade the student version three ways with otter itself.

* as handed out (stubs): every check prints "not done yet", no cell fails, and the
  autograded score is 0; the student version keeps every other code cell of the chapter
  as it is, in order (so the chapter itself, which the test command runs once already,
  is what the student runs);
* with the reference solutions (otter's autograder notebook): full points;
* with a wrong answer that runs (the reference's result perturbed): 1 point of 3 per
  check, and the feedback carries the check function's hint ("wrong: because ...");
* with the library's own answer (``return dmf.effective_rank(W)``, :data:`CHEATS`): 0
  points, and the feedback names the library function it called. Without the grader's
  guard (``iclr26.grading.without_library``) every one of these scores full points
  (``test_library_answers_pass_the_checks_unguarded`` shows it).

Each grading runs only the slice of the chapter the graded cells need
(:func:`exercise_slice`): the chapter's own cells that define a name the answers, their
checks or otter's cells use, and so on back. The whole chapter runs once already in the
test command's chapter step; grading its exercises does not run it again. It runs as
its own step of the test command (``-m classroom``), two chapters at a time.
"""

from __future__ import annotations

import ast
import json
import symtable
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import classroom  # noqa: E402

from iclr26.claims import chapters_in_toc  # noqa: E402

pytestmark = pytest.mark.classroom
CHAPTERS = chapters_in_toc(ROOT / "_toc.yml")

# A wrong answer that still runs: the reference's result, nudged.
# Numbers become 1.5 x + 0.1 (so neither a scale- nor a shift-invariant check can accept
# it), booleans flip.
PERTURB = """
def _kit_perturb(out):
    import numpy as _np
    import torch as _torch
    if isinstance(out, _torch.Tensor):
        return ~out if out.dtype == _torch.bool else (out * 1.5 + 0.1).to(out.dtype)
    if isinstance(out, _np.ndarray):
        return ~out if out.dtype == bool else (out * 1.5 + 0.1).astype(out.dtype)
    if isinstance(out, bool):
        return not out
    if isinstance(out, (int, float)):
        return type(out)(out * 1.5 + 1)
    if isinstance(out, (list, tuple)):
        return type(out)(_kit_perturb(o) for o in out)
    if isinstance(out, dict):
        return {k: _kit_perturb(v) for k, v in out.items()}
    return out
"""


def wrong_cell(reference: str, names: list[str]) -> str:
    wrappers = "".join(
        f"\n_kit_ref_{n} = {n}\n\n\ndef {n}(*args, **kwargs):\n"
        f"    return _kit_perturb(_kit_ref_{n}(*args, **kwargs))\n"
        for n in names
    )
    return reference.rstrip() + "\n" + PERTURB + wrappers


# A submission that calls the book's own answer, for every exercise: stub function ->
# (the library module, the body that returns its answer). Each scores "correct" on the
# chapter's check itself (test_grading.py shows it), and must score 0 points in the
# classroom kit.
CHEATS = {
    "my_effective_rank": ("deep_mf", "return lib.effective_rank(*args)"),
    "my_factor_gradients": ("deep_mf", "return lib.factor_gradients(*args)[0]"),
    "my_depth": (
        "absignsgd.schedules",
        "return lib.expected_backward_depth(lib.depth_biased_tau(*args))",
    ),
    "my_update": ("fzoo.exercises", "return lib.fzoo_update_from_losses(*args)"),
    "my_theta": ("al_trees.core", "return lib.disagreement_coefficient(*args)[0]"),
    "my_boost": ("ilnn.geometry", "return lib.boost_to_origin(*args)"),
    "my_gl_weights": ("fsnn.kernels", "return lib.gl_weights(*args)"),
    "my_cond_cov": ("behaviour_rnn.task", "return lib.conditional_cov(*args)"),
    "my_spread": ("paano.evaluate", "return lib.patch_scores_to_points(*args)"),
    "my_threshold": ("compmarkgs.exercise", "return lib.detection_threshold(*args)"),
    "my_ause": ("horseshoe_splat.metrics", "return lib.ause(*args)"),
    "my_depth_from_flow": (
        "world_model_3wm.geometry",
        "return lib.depth_from_flow(*args)",
    ),
    "my_soft_optimal": ("reward_distill.toy", "return lib.soft_optimal(*args)"),
    "my_project_out": ("dial.metrics", "return lib.project_out(*args)"),
    "my_concept_maps": ("ivpt.method", "return lib.concept_maps(*args)"),
    "my_mask": ("gneissweb.dedup", "return lib.duplicate_mask(*args)"),
    "my_acyc_grad": (
        "sci_kg.graph",
        "import torch\n"
        "    return lib.acyclicity_grad(torch.from_numpy(args[0])).numpy()",
    ),
    "my_sketch": (
        "siren.data",
        "s = lib.build_sketch(*args)\n    return s.liked, s.disliked",
    ),
    "my_advantages": ("grpo", "return lib.grpo_advantages(*args)"),
    "my_wjsd": ("chronoplay.drift", "return lib.weighted_jsd(*args)"),
}


def cheat_cell(names: list[str]) -> str:
    out = []
    for name in names:
        module, body = CHEATS[name]
        out.append(
            f"def {name}(*args):\n    import iclr26.{module} as lib  # the book's own\n"
            f"    {body}\n"
        )
    return "\n\n".join(out)


def _names(source: str) -> tuple[set[str], set[str]] | None:
    """(names a cell binds at top level, global names it reads in any scope), or None
    when it does not parse as Python. A function's parameters and locals are
    not reads."""
    code = "\n".join(
        ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))
    )
    try:
        top = symtable.symtable(code, "<cell>", "exec")
    except SyntaxError:
        return None
    bound = {
        s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()
    }
    read, tables = set(), [top]
    while tables:
        table = tables.pop()
        tables += table.get_children()
        read |= {
            s.get_name()
            for s in table.get_symbols()
            if s.is_referenced() and (table is top or s.is_global())
        }
    return bound, read


def exercise_slice(nb) -> int:
    """Keep, in place, only the code cells the graded cells need; return how many
    were dropped.

    The graded cells are the answer cells, the cell after each (its checks), otter's
    ``grader.check`` cells and the install and grader cells at the top.
    Walking back from the end, a cell stays if it binds a name a kept cell reads, and
    its own reads join the set (over-approximated: order within a cell is ignored).
    A cell that does not parse stays. Markdown and raw cells stay (they cost
    nothing to run)."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    answer = [
        i
        for i, c in enumerate(code)
        if {"otter_answer_cell", "otter_assign_solution_cell"}
        & set(c.metadata.get("tags", []))
    ]
    keep = {id(code[i]) for i in answer} | {
        id(code[i + 1]) for i in answer if i + 1 < len(code)
    }
    keep |= {
        id(c)
        for c in code
        if "google.colab" in c.source
        or "otter.Notebook" in c.source
        or "grader.check(" in c.source
    }
    needed: set[str] = set()
    for cell in reversed(code):
        names = _names(cell.source)
        if names is None:
            keep.add(id(cell))
        elif id(cell) in keep or names[0] & needed:
            keep.add(id(cell))
            needed |= names[1]
    dropped = len(code) - len(keep)
    nb.cells = [c for c in nb.cells if c.cell_type != "code" or id(c) in keep]
    return dropped


def stub_names(source: str) -> list[str]:
    return [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]


SECONDS: dict[str, float] = {}  # grading time per submission, for the report


def grade(submission: Path, folder: Path):
    import time

    from otter.api import grade_submission

    t0 = time.perf_counter()
    # debug=True: a cell that raises fails the grading (otter otherwise ignores errors)
    result = grade_submission(
        str(submission), str(classroom.autograder_zip(folder)), quiet=True, debug=True
    )
    SECONDS[submission.parent.name] = round(time.perf_counter() - t0, 1)
    return result


def messages(result) -> str:
    return "\n".join(
        getattr(tc, "message", "") or ""
        for r in result.results.values()
        for tc in getattr(r, "test_case_results", [])
    )


def outputs(nb) -> list[str]:
    texts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts.append(
                out.get("text", "")
                or "".join(out.get("data", {}).get("text/plain", ""))
            )
    return texts


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_assignment_grades_stubs_reference_and_wrong_answers(
    chapter, tmp_path, monkeypatch
):
    monkeypatch.setenv("ICLR26_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("ICLR26_PROGRESS", "0")
    source = ROOT / "notebooks" / f"{chapter}.ipynb"
    folder = classroom.assign(source, tmp_path / "kit")
    points = classroom.question_points(folder)
    student_path = folder / "student" / f"{chapter}.ipynb"
    student = nbformat.read(student_path, as_version=4)
    exercises = classroom._exercises(nbformat.read(source, as_version=4), chapter)
    coding = {label: e for label, e in exercises.items() if e["code"]}
    assert set(points) == set(coding), (
        "every coding exercise is one autograded question"
    )

    # The student version hides every solution: no solution directive, and no line of a
    # reference solution that the chapter does not also show outside its solutions (a
    # line such as tau's formula may be shown in the chapter's own derivation).
    text = "\n".join(c.source for c in student.cells)
    assert "{solution}" not in text
    chapter_nb = nbformat.read(source, as_version=4)
    shown = "\n".join(
        classroom.DIRECTIVE_RE.sub("", c.source)
        if c.cell_type == "markdown"
        else c.source
        for c in chapter_nb.cells
        if "exercise" not in c.metadata.get("tags", [])
    )
    for label, e in coding.items():
        hidden = [
            ln
            for ln in e["code"].splitlines()
            if len(ln.strip()) > 12
            and not ln.lstrip().startswith(("def ", "#", "return"))
            and ln not in shown
        ]
        leaked = [ln for ln in hidden if ln in text]
        assert not leaked, (
            f"{label}: reference solution lines in the student version: {leaked}"
        )
    assert text.count("raise NotImplementedError") >= len(coding)

    # The student version is the chapter: every code cell but the exercise stubs (and
    # the install cell, which also installs otter) is there, unchanged and in order.
    ours = [
        c.source
        for c in chapter_nb.cells
        if c.cell_type == "code"
        and "exercise" not in c.metadata.get("tags", [])
        and "google.colab" not in c.source
    ]
    theirs = iter(c.source for c in student.cells if c.cell_type == "code")
    missing = [src for src in ours if not any(src == t for t in theirs)]
    assert not missing, (
        f"cells changed or dropped in the student version: {missing[:1]}"
    )

    # 1. As handed out: nothing crashes, every check is "not done yet", 0 points.
    stub_nb = nbformat.read(student_path, as_version=4)
    exercise_slice(stub_nb)
    stub_path = tmp_path / "stub" / f"{chapter}.ipynb"
    stub_path.parent.mkdir()
    nbformat.write(stub_nb, stub_path)
    stub = grade(stub_path, folder)
    assert stub.total == 0 and stub.possible == sum(points.values())
    executed = outputs(stub.notebook)
    n_checks = sum(
        len(classroom.split_stub(c.source)[1])
        for c in nbformat.read(source, as_version=4).cells
        if c.cell_type == "code" and "exercise" in c.metadata.get("tags", [])
    )
    assert sum("not done yet" in o for o in executed) >= n_checks

    # 2. The reference solutions (otter's autograder notebook), on the slice the answers
    # need: full points.
    reference_nb = nbformat.read(
        folder / "autograder" / f"{chapter}.ipynb", as_version=4
    )
    exercise_slice(reference_nb)
    reference_path = tmp_path / "reference" / f"{chapter}.ipynb"
    reference_path.parent.mkdir()
    nbformat.write(reference_nb, reference_path)
    reference = grade(reference_path, folder)
    assert reference.total == reference.possible == sum(points.values()), messages(
        reference
    )

    # 3. A wrong answer that runs: the "runs" cases pass, the "correct" ones fail
    #    with a hint.
    wrong_nb = nbformat.read(student_path, as_version=4)
    stubs = [
        c
        for c in wrong_nb.cells
        if c.cell_type == "code"
        and "raise NotImplementedError" in c.source
        and "def " in c.source
    ]
    assert len(stubs) == len(coding)
    for cell, e in zip(stubs, coding.values()):
        cell.source = wrong_cell(e["code"], stub_names(cell.source))
    exercise_slice(wrong_nb)
    wrong_path = tmp_path / "wrong" / f"{chapter}.ipynb"
    wrong_path.parent.mkdir()
    nbformat.write(wrong_nb, wrong_path)
    wrong = grade(wrong_path, folder)
    expected = classroom.RUNS_POINTS * n_checks
    assert wrong.total == expected, messages(wrong)
    assert 0 < wrong.total < wrong.possible
    assert "wrong: because" in messages(wrong)

    # 4. The library's own answer: 0 points, and the feedback says why.
    cheat_nb = nbformat.read(student_path, as_version=4)
    stubs = [
        c
        for c in cheat_nb.cells
        if c.cell_type == "code"
        and "raise NotImplementedError" in c.source
        and "def " in c.source
    ]
    for cell in stubs:
        cell.source = cheat_cell(stub_names(cell.source))
    exercise_slice(cheat_nb)
    cheat_path = tmp_path / "library" / f"{chapter}.ipynb"
    cheat_path.parent.mkdir()
    nbformat.write(cheat_nb, cheat_path)
    cheat = grade(cheat_path, folder)
    assert cheat.total == 0, messages(cheat)
    assert "calls the book's own" in messages(cheat)
    # The points, for a person to read (the closing note of a change quotes them).
    report = ROOT / "_build" / "classroom"
    report.mkdir(parents=True, exist_ok=True)
    (report / f"{chapter}.json").write_text(
        json.dumps(
            {
                "stub": stub.total,
                "reference": reference.total,
                "wrong": wrong.total,
                "library": cheat.total,
                "possible": stub.possible,
                "grading_seconds": dict(SECONDS),
            }
        )
        + "\n"
    )
