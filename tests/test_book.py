"""The book's structure: chapter numbers that match the plan, and a contents page that
agrees with the table of contents."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def numbered_entries() -> list[str]:
    """The files of the numbered parts of _toc.yml, in order (chapter 1 first)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [
        ch["file"]
        for part in toc["parts"]
        if part.get("numbered")
        for ch in part["chapters"]
    ]


def test_chapter_numbers_match_the_plan():
    """Sphinx numbers the chapters 1, 2, ... in toc order; the files are NN-slug, so the
    k-th numbered entry must be chapter k (a written notebook or its placeholder)."""
    entries = numbered_entries()
    assert len(entries) == 19, "every chapter of the plan has a line, written or not"
    for k, entry in enumerate(entries, start=1):
        name = Path(entry).name
        assert name.startswith(f"{k:02d}-"), (
            f"entry {k} of the numbered parts is {entry}"
        )
        assert entry.startswith(("notebooks/", "book/planned/")), entry
        assert (ROOT / entry).with_suffix(".ipynb").is_file() or (
            ROOT / entry
        ).with_suffix(".md").is_file(), f"{entry}: no such notebook or page"
        assert not (
            entry.startswith("book/planned/")
            and (ROOT / "notebooks" / f"{name}.ipynb").is_file()
        ), f"chapter {name} is written: list notebooks/{name}, not its placeholder"


def test_contents_page_agrees_with_the_toc():
    text = (ROOT / "book" / "contents.md").read_text()
    links = dict(re.findall(r"\*\*\[(\d+) · [^\]]+\]\(([^)]+)\)\*\*", text))
    for k, entry in enumerate(numbered_entries(), start=1):
        name = Path(entry).name
        if entry.startswith("notebooks/"):
            want = f"../notebooks/{name}.ipynb"
        else:
            want = f"planned/{name}.md"
        assert links.get(str(k)) == want, f"contents.md: chapter {k} should link {want}"
        written = "*(not written yet)*" not in text.split(f"[{k} · ")[1].split("\n")[0]
        assert written == entry.startswith("notebooks/"), (
            f"contents.md: chapter {k}'s 'not written yet' mark disagrees with _toc.yml"
        )


def test_generated_pages_are_up_to_date():
    """The scorecard, the README's chapter table, the instructors' exercise table and
    the Colab copies are generated from the committed records and notebooks: after a
    sweep, a recorded run or an edit of a chapter, `python3 tasks.py generate`
    regenerates them (the test command never writes them, so it leaves the repository
    as it was)."""
    import sys

    sys.path.insert(0, str(ROOT))
    import tasks

    stale = [
        path.relative_to(ROOT).as_posix()
        for path, text in tasks.generated_pages().items()
        if not path.is_file() or path.read_text() != text
    ]
    assert not stale, f"{stale} are out of date: run `python3 tasks.py generate`"


def test_every_paper_claim_says_what_the_paper_reports():
    """Each paper claim of each recorded run either declares the paper's figure
    (``paper=``) or has an entry in results/paper-figures/<chapter>.json: a figure
    with where it is in the paper and whether it was read in the paper's own text, or
    the reason the paper gives none. No entry names a claim the run does not have."""
    import json

    from iclr26.scorecard import load_paper_figures

    figures = load_paper_figures(ROOT / "results")
    problems = []
    for path in sorted((ROOT / "results").glob("*.ci.json")):
        record = json.loads(path.read_text())
        chapter = record["chapter"]
        entries = figures.get(chapter, {})
        paper = [c for c in record["claims"] if (c.get("role") or "paper") == "paper"]
        ids = {c["id"] for c in paper}
        for c in paper:
            entry = entries.get(c["id"])
            if c.get("paper", "—") != "—":
                if entry:
                    problems.append(f"{chapter} {c['id']}: declared and in the file")
            elif entry is None:
                problems.append(f"{chapter} {c['id']}: the paper's figure is unsaid")
            elif entry.get("figure"):
                if not entry.get("where") or not isinstance(entry.get("checked"), bool):
                    problems.append(
                        f"{chapter} {c['id']}: a figure needs where and checked"
                    )
            elif not entry.get("why_none"):
                problems.append(f"{chapter} {c['id']}: no figure and no reason")
        problems += [f"{chapter} {k}: no such paper claim" for k in set(entries) - ids]
    assert not problems, "\n".join(problems)
