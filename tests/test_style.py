"""The code fits the rendered page and passes the linter: `ruff format --check` and
`ruff check` over the repository (lib/, tests/, tools/, tasks.py, the notebooks' code
cells and CONTRIBUTING.md's code blocks), with the config in pyproject.toml.

Fix a failure with `ruff format . && ruff check --fix .`; wrap long comments and
docstrings by hand (ruff does not).
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["format", "--check"], ["check"]])
def test_ruff(command):
    out = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, f"ruff {' '.join(command)}:\n{out.stdout}{out.stderr}"


def test_code_in_the_prose_is_formatted_too():
    """Python code blocks in the notebooks' Markdown (solutions, examples) render in the
    same column as code cells: each must be what `ruff format` makes of it."""
    fence = re.compile(r"```python\n(.*?)```", re.S)
    bad = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            for block in fence.findall("".join(cell["source"])):
                out = subprocess.run(
                    [sys.executable, "-m", "ruff", "format", "--no-cache"]
                    + ["--stdin-filename", "block.py", "-"],
                    cwd=ROOT,
                    input=block,
                    capture_output=True,
                    text=True,
                )
                if out.returncode != 0 or out.stdout != block:
                    bad.append(f"{path.name}: {block.splitlines()[0]}")
    assert not bad, "format these Markdown code blocks with ruff:\n" + "\n".join(bad)
