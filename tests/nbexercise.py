"""Read a chapter's coding exercise out of its notebook, for the tests of its
check function.

The convention (CHAPTER_STANDARD.md, "Exercises that can be set"):

* the exercise's code cell is tagged ``exercise``; it defines the student's function(s)
  with a body that raises ``NotImplementedError``, then calls the chapter's check
  function on them;
* the reference solution is a fenced ```` ```python ```` block inside the exercise's
  hidden ``{solution}`` (opened with four backticks, ````` ````{solution} `````, so
  that it can hold the three-backtick code block), defining the same function names.

:func:`exercise_parts` executes the notebook's imports, then the stub's definitions and
the solution's, each in its own namespace, and returns both, so a test can call the
check function on the stub, on a wrong answer and on the reference solution.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
FENCE_RE = re.compile(r"^```python\n(.*?)^```[ \t]*$", re.S | re.M)
# A solution that holds a code block needs a longer outer fence: ````{solution} ... ````
SOLUTION_RE = re.compile(
    r"^(?P<fence>`{3,})\{solution\}[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.S | re.M
)


def _cells(chapter: str) -> list[dict]:
    return json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def exercise_cells(chapter: str) -> list[str]:
    """The sources of the chapter's code cells tagged ``exercise``."""
    return [
        _source(c)
        for c in _cells(chapter)
        if c["cell_type"] == "code"
        and "exercise" in c.get("metadata", {}).get("tags", [])
    ]


def solution_blocks(chapter: str) -> list[str]:
    """The ```python blocks that stand inside a ``{solution}`` directive of
    the chapter."""
    blocks = []
    for c in _cells(chapter):
        if c["cell_type"] != "markdown":
            continue
        for m in SOLUTION_RE.finditer(_source(c)):
            blocks += FENCE_RE.findall(m.group("body"))
    return blocks


def _imports(chapter: str) -> str:
    """Every top-level import statement of the chapter's code cells, in order."""
    lines = []
    for c in _cells(chapter):
        if c["cell_type"] != "code":
            continue
        try:
            tree = ast.parse(_source(c))
        except SyntaxError:  # IPython magics
            continue
        lines += [
            ast.get_source_segment(_source(c), n)
            for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom))
        ]
    return "\n".join(lines)


def _definitions(code: str) -> str:
    """Only the function and class definitions (and imports) of ``code``, not
    its calls."""
    tree = ast.parse(code)
    keep = (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    return "\n\n".join(
        ast.get_source_segment(code, n) for n in tree.body if isinstance(n, keep)
    )


def exercise_parts(chapter: str, name: str) -> tuple[object, object, SimpleNamespace]:
    """``(stub, reference, namespace)`` for the student's function ``name`` of
    ``chapter``.

    ``namespace`` holds the notebook's imports (e.g. the library module under its
    alias), so a test can reach the check function the notebook calls.
    """
    header = _imports(chapter)
    stubs = [
        code for code in exercise_cells(chapter) if re.search(rf"def {name}\(", code)
    ]
    refs = [
        code for code in solution_blocks(chapter) if re.search(rf"def {name}\(", code)
    ]
    assert stubs, f"{chapter}: no code cell tagged 'exercise' defines {name}()"
    assert refs, f"{chapter}: no ```python block in a {{solution}} defines {name}()"
    stub_ns: dict = {}
    exec(header + "\n\n" + _definitions(stubs[0]), stub_ns)
    ref_ns: dict = {}
    exec(header + "\n\n" + refs[0], ref_ns)
    return (
        stub_ns[name],
        ref_ns[name],
        SimpleNamespace(**{k: v for k, v in stub_ns.items() if not k.startswith("__")}),
    )
