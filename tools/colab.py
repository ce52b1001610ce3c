"""The Colab copies: each chapter as a notebook a reader can read in Colab.

    python3 tasks.py generate      # writes colab/NN-slug.ipynb for every chapter

The chapters are written for the book: their theorems, exercises and solutions are MyST
directives, their citations and cross-references are roles, and all of it shows as raw
markup in Colab, which renders plain Markdown (with ``$...$`` math) only. This module
turns a chapter into that plain Markdown, cell by cell, and leaves its code as it is:

* ``{prf:theorem} Title`` (and definition, lemma, proposition, remark) becomes a quoted
  block that starts "**Theorem** (Title).", ``{prf:proof}`` a quoted "*Proof.*" ending
  in ∎, and ``{exercise} Title`` "**Exercise N.k** (Title)", numbered in order as the
  book numbers them;
* every ``{solution}`` is left out: the Colab copy is what a student works in (the
  book folds the solutions; an instructor hands out the classroom kit, see
  book/instructors.md);
* ``{cite:p}`key``` becomes "(Author et al., year)" and ``{cite:t}`key``` "Author et
  al. (year)", from book/references.bib; ``{prf:ref}`label``` becomes the referenced
  block's name ("Theorem (Title)"); ``{ref}`text <label>``` its text; ``(label)=``
  targets go;
* the "Open in Colab" link of the title goes (the reader is in Colab already).

The book's notebooks stay the single source; ``tests/test_colab_copies.py`` checks that
the committed copies are up to date and that no directive, role or solution text is
left in them.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

# ```{name} argument / options / body, closed by the same fence (3 or more backticks)
DIRECTIVE_RE = re.compile(
    r"^(?P<fence>`{3,})\{(?P<name>[a-z:-]+)\}(?P<arg>[^\n]*)\n"
    r"(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
    re.S | re.M,
)
OPTION_RE = re.compile(r"^:(?P<key>[a-z-]+):[ \t]*(?P<value>[^\n]*)\n", re.M)
TARGET_RE = re.compile(r"^\([A-Za-z0-9_-]+\)=[ \t]*\n", re.M)
ROLE_RE = re.compile(r"\{(?P<role>[a-z:]+)\}`(?P<text>[^`]*)`")
COLAB_LINK_RE = re.compile(r"^\[Open in Colab\]\([^)]*\)[ \t]*\n?", re.M)
PRF_NAMES = {
    "theorem": "Theorem",
    "definition": "Definition",
    "lemma": "Lemma",
    "proposition": "Proposition",
    "corollary": "Corollary",
    "remark": "Remark",
    "example": "Example",
    "algorithm": "Algorithm",
}


# --------------------------------------------------------------------------------------
# citations
# --------------------------------------------------------------------------------------
def load_bibliography(path: Path) -> dict[str, tuple[str, str]]:
    """{key: (authors as cited, year)} of a BibTeX file: "Shin and Yun", "Arora et
    al."."""
    from pybtex.database import parse_file

    out = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author", [])
        last = [" ".join(p.last_names) for p in people] or [
            entry.fields.get("title", key)
        ]
        if len(last) == 1:
            who = last[0]
        elif len(last) == 2:
            who = f"{last[0]} and {last[1]}"
        else:
            who = f"{last[0]} et al."
        out[key] = (who.replace("{", "").replace("}", ""), entry.fields.get("year", ""))
    return out


def cite(keys: str, bib: dict, textual: bool) -> str:
    """{cite:p}`a,b` -> "(A, 2019; B et al., 2024)"; {cite:t}`a` -> "A (2019)"."""
    parts = []
    for key in (k.strip() for k in keys.split(",")):
        if key not in bib:
            raise KeyError(f"citation {key!r} is not in book/references.bib")
        who, year = bib[key]
        parts.append(f"{who} ({year})" if textual else f"{who}, {year}")
    return "; ".join(parts) if textual else "(" + "; ".join(parts) + ")"


# --------------------------------------------------------------------------------------
# one chapter
# --------------------------------------------------------------------------------------
def _quote(text: str) -> str:
    """Text as a Markdown block quote (every line prefixed with "> ")."""
    return "\n".join(("> " + ln) if ln.strip() else ">" for ln in text.splitlines())


def _blocks(nb) -> dict[str, str]:
    """{label: what a reference to it reads as} for the chapter's prf directives."""
    names = {}
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for m in DIRECTIVE_RE.finditer(cell.source):
            kind = m.group("name").removeprefix("prf:")
            if not m.group("name").startswith("prf:") or kind == "proof":
                continue
            label = dict(
                (o.group("key"), o.group("value"))
                for o in OPTION_RE.finditer(m["body"])
            ).get("label")
            if label:
                title = m.group("arg").strip()
                word = PRF_NAMES.get(kind, kind.capitalize())
                names[label] = f"{word} ({title})" if title else word.lower()
    return names


def colab_notebook(chapter_path: Path, bib: dict) -> nbformat.NotebookNode:
    """The chapter at ``chapter_path`` as its Colab copy (see the module docstring)."""
    nb = nbformat.read(chapter_path, as_version=4)
    chapter = int(chapter_path.stem[:2])
    refs = _blocks(nb)
    exercise_no = [0]

    def directive(m: re.Match) -> str:
        name, title = m.group("name"), m.group("arg").strip()
        body = m.group("body").lstrip("\n")
        while OPTION_RE.match(body):  # options (:label:, :class:) open a body only
            body = OPTION_RE.sub("", body, count=1)
        body = body.strip()
        if name == "solution":
            return ""
        if name == "exercise":
            exercise_no[0] += 1
            head = f"**Exercise {chapter}.{exercise_no[0]}**" + (
                f" ({title})" if title else ""
            )
            return f"{head}\n\n{body}\n"
        if name == "prf:proof":
            return _quote(f"*Proof.* {body} ∎") + "\n"
        if name.startswith("prf:"):
            word = PRF_NAMES.get(name[4:], name[4:].capitalize())
            head = f"**{word}**" + (f" ({title})" if title else "") + "."
            return _quote(f"{head} {body}") + "\n"
        if name == "math":
            return f"$$\n{body}\n$$\n"
        # an admonition ({note}, {warning}, ...): a quoted block with its name
        return _quote(f"**{name.capitalize()}.** {body}") + "\n"

    def role(m: re.Match) -> str:
        kind, text = m.group("role"), m.group("text")
        if kind in ("cite:p", "cite"):
            return cite(text, bib, textual=False)
        if kind == "cite:t":
            return cite(text, bib, textual=True)
        if kind == "prf:ref":
            if text not in refs:
                raise KeyError(f"{chapter_path.name}: no block labelled {text!r}")
            return refs[text]
        if kind in ("ref", "numref", "doc"):
            shown = re.match(r"(.*?)\s*<[^>]*>$", text)
            return shown.group(1) if shown else text
        if kind == "math":
            return f"${text}$"
        return text

    cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cells.append(cell)
            continue
        text = cell.source
        if i == 0:
            text = COLAB_LINK_RE.sub("", text)
        text = TARGET_RE.sub("", text)
        # a directive may hold another (a fence of more backticks around it)
        while DIRECTIVE_RE.search(text):
            text = DIRECTIVE_RE.sub(directive, text)
        text = ROLE_RE.sub(role, text)
        text = re.sub(r"\n{3,}", "\n\n", text).strip()
        if text:
            cell.source = text
            cells.append(cell)
    nb.cells = cells
    nb.metadata["colab"] = {"provenance": [], "toc_visible": True}
    return nb


def render(chapter_path: Path, bib: dict) -> str:
    """The Colab copy of a chapter as the text of its .ipynb file."""
    return nbformat.writes(colab_notebook(chapter_path, bib)) + "\n"
