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


def declared_claims(chapter: str) -> list[str]:
    """The claim ids the chapter's code declares, in order."""
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    code = "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
    )
    return re.findall(r'Claim\(\s*"([A-Za-z0-9_-]+)"', code)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_committed_sweep_backs_every_asserted_claim(chapter):
    declared = declared_claims(chapter)
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


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_paper_claim_has_an_outcome(chapter):
    """On main every paper claim is reproduced, not reproduced or untestable here: none
    is left unverified (no recorded run, or a sweep that does not match it), and a
    reported claim that held everywhere says why it stays reported."""
    from iclr26.claims import load_results
    from iclr26.scorecard import paper_verdicts, sweep_usable

    record = load_results(ROOT / "results").get((chapter, "ci"))
    assert record is not None, f"{chapter}: no recorded run in results/"
    sweep = SWEEPS.get(chapter)
    usable = sweep_usable(sweep, chapter_hashes(ROOT, chapter))
    verdicts = paper_verdicts(record, sweep, usable)
    unverified = {k: v["why"] for k, v in verdicts.items() if v["bin"] == "unverified"}
    assert not unverified, f"{chapter}: unverified paper claims {unverified}"
    unexplained = [
        k
        for k, v in verdicts.items()
        if v["bin"] == "held, not asserted" and v["why"] == "no reason given"
    ]
    assert not unexplained, (
        f"{chapter}: held everywhere, reported, no reason: {unexplained}"
    )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_recorded_run_declares_the_chapters_claims(chapter):
    """The recorded run the scorecard reads (results/NN-slug.ci.json) measured the
    claims the chapter declares now: a record of an older version of the chapter would
    put that version's verdicts on the scorecard (`python3 tasks.py record NN`)."""
    declared = declared_claims(chapter)
    record = json.loads((ROOT / "results" / f"{chapter}.ci.json").read_text())
    recorded = [c["id"] for c in record["claims"]]
    assert sorted(recorded) == sorted(declared), (
        f"{chapter}: the record has {sorted(set(recorded) - set(declared))} that the "
        f"chapter no longer declares and lacks {sorted(set(declared) - set(recorded))}"
    )
