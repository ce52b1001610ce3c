"""The committed seed sweeps back every asserted claim of the book.

CI does not run the sweep (it takes a quarter of an hour); it checks the committed
records in results/sweeps/: one per chapter of _toc.yml, fresh (the chapter's notebook
code and library unchanged since it ran), at least five seeds at least 100 apart, and
every asserted claim held at every seed. Run `python3 tasks.py seeds CHAPTER` and commit
results/sweeps/ when this fails.
"""

import json
import re
from pathlib import Path

import pytest

from iclr26.claims import chapters_in_toc
from iclr26.scorecard import chapter_hashes, load_sweeps, sweep_problems

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = chapters_in_toc(ROOT / "_toc.yml")
SWEEPS = load_sweeps(ROOT / "results")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_committed_sweep_backs_every_asserted_claim(chapter):
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    code = "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
    )
    declared = re.findall(r'Claim\(\s*"([A-Za-z0-9_-]+)"', code)
    problems = sweep_problems(
        chapter,
        SWEEPS.get(chapter),
        chapter_hashes(ROOT, chapter),
        declared_ids=declared,
    )
    assert not problems, "\n".join(problems)


def test_no_sweep_of_a_chapter_outside_the_book():
    assert set(SWEEPS) <= set(CHAPTERS), (
        f"sweeps of unknown chapters: {set(SWEEPS) - set(CHAPTERS)}"
    )
