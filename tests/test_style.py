"""The code fits the rendered page and passes the linter: `ruff format --check` and
`ruff check` over the repository (lib/, tests/, tools/, tasks.py, the notebooks' code
cells and CONTRIBUTING.md's code blocks), with the config in pyproject.toml.

Fix a failure with `ruff format . && ruff check --fix .`; wrap long comments and
docstrings by hand (ruff does not).
"""

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
