"""The Colab copies (colab/NN-slug.ipynb, generated from the chapters by tools/colab.py)
are what a reader opens from a chapter's "Open in Colab" link: plain Markdown that Colab
renders, no MyST directive or role left as text, and no solution. (tests/test_book.py
checks that they are up to date; tests/test_colab.py runs two of them in what Colab
ships.)"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import classroom  # noqa: E402

import colab  # noqa: E402
from iclr26.claims import chapters_in_toc  # noqa: E402

CHAPTERS = chapters_in_toc(ROOT / "_toc.yml")
# What would show as raw text in Colab: directive fences, roles, options, targets.
RAW = [
    re.compile(r"`{3,}\{[a-z:-]+\}"),
    re.compile(r"\{[a-z]+(:[a-z]+)?\}`"),
    re.compile(r"^:(label|class|nonumber):", re.M),
    re.compile(r"^\([A-Za-z0-9_-]+\)=", re.M),
]


def markdown(nb: dict) -> str:
    return "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"
    )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_colab_copy_has_no_markup_and_no_solutions(chapter):
    copy = json.loads((ROOT / "colab" / f"{chapter}.ipynb").read_text())
    text = markdown(copy)
    raw = [p.pattern for p in RAW if p.search(text)]
    assert not raw, f"colab/{chapter}.ipynb shows raw MyST markup: {raw}"
    source = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    import nbformat

    exercises = classroom._exercises(nbformat.reads(json.dumps(source), 4), chapter)
    n = len(exercises)
    assert all(f"**Exercise {int(chapter[:2])}.{k}**" in text for k in range(1, n + 1))
    for label, e in exercises.items():
        answer = [
            ln.strip()
            for ln in e["answer"].splitlines()
            if len(ln.strip()) > 30
            and ln.strip() not in markdown(source).replace(e["answer"], "")
        ]
        leaked = [ln for ln in answer if ln in text]
        assert not leaked, f"{label}: solution text in the Colab copy: {leaked[:2]}"
    # the code is the chapter's, cell for cell
    code = [c["source"] for c in source["cells"] if c["cell_type"] == "code"]
    assert code == [c["source"] for c in copy["cells"] if c["cell_type"] == "code"]
    assert not any(c.get("outputs") for c in copy["cells"] if c["cell_type"] == "code")


def test_citations_and_references_become_text():
    bib = {"smith2020": ("Smith and Jones", "2020"), "lee2021": ("Lee et al.", "2021")}
    assert colab.cite("smith2020", bib, textual=False) == "(Smith and Jones, 2020)"
    assert colab.cite("smith2020,lee2021", bib, textual=True) == (
        "Smith and Jones (2020); Lee et al. (2021)"
    )
    with pytest.raises(KeyError, match="not in book/references.bib"):
        colab.cite("nobody", bib, textual=False)
