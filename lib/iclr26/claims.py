"""Claim checks and the scorecard.

A chapter declares its claims *before* it runs anything: what the paper says, what number this
chapter measures, and the threshold that number must pass. Declaring the threshold up front is
what makes a check honest -- it is fixed before the measurement exists, and it can fail.

    CLAIMS = [Claim("rank1", "depth 3 converges to rank 1", measure="median effective rank",
                    op="<", threshold=1.2, kind="analogue")]
    log = ClaimLog("01-deep-mf", CLAIMS, scale=SCALE, seed=SEED)
    ...                              # experiments
    log.check("rank1", measured)     # records, and raises AssertionError if the claim fails
    log.finish()                     # records the chapter's run time

Each check writes ``results/<chapter>.<scale>.json`` at once, so a notebook that dies half way
leaves its remaining claims marked "not run", never "held". :func:`scorecard_markdown` turns the
files of the latest runs into the book's scorecard.
"""
from __future__ import annotations

import json
import math
import os
import re
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
KINDS = ("faithful", "analogue")
NOTEBOOK_RE = re.compile(r"notebooks/(\d\d-[a-z0-9-]+)")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, as a chapter tests it.

    id: short name used by :meth:`ClaimLog.check` (letters, digits, ``-``, ``_``).
    text: the claim in one line, in the paper's terms.
    measure: what number this chapter measures to test it.
    op, threshold: the claim holds when ``measured <op> threshold``; fixed before the run.
    kind: ``"faithful"`` (same mechanism, comparable setting) or ``"analogue"`` (same mechanism,
        smaller or synthetic setting).
    paper: the paper's own figure for this claim where the abstract gives one, else ``"—"``.
    paper_setting, our_setting: where the paper measured it, and where this chapter does.
    asserted: ``True`` (the default): a failing check raises and fails the chapter. ``False``
        declares, before the run, a claim the chapter *reports* without asserting -- one that
        is known not to hold reliably at this scale (seed-dependent, or reversed). Its result
        still goes to the scorecard, as "not reproduced" when it fails, so a claim that did not
        carry over is shown rather than dropped.
    """

    id: str
    text: str
    measure: str
    op: str
    threshold: float
    kind: str
    paper: str = "—"
    paper_setting: str = ""
    our_setting: str = ""
    asserted: bool = True

    def __post_init__(self):
        if not isinstance(self.id, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", self.id):
            raise ValueError(f"claim id must be letters, digits, '-' or '_', got {self.id!r}")
        if self.op not in OPS:
            raise ValueError(f"claim {self.id!r}: op must be one of {list(OPS)}, got {self.op!r}")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id!r}: kind must be one of {list(KINDS)}, got {self.kind!r}")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)) or not math.isfinite(self.threshold):
            raise TypeError(f"claim {self.id!r}: threshold must be a finite number, got {self.threshold!r}")


def find_results_dir(start: str | Path | None = None) -> Path:
    """Where results go: ``$ICLR26_RESULTS_DIR`` if set, else ``results/`` at the book's root
    (the first folder at or above ``start``, default the working directory, that holds
    ``_toc.yml``), else ``./iclr26-results`` (e.g. in Colab, outside a clone)."""
    if os.environ.get("ICLR26_RESULTS_DIR"):
        return Path(os.environ["ICLR26_RESULTS_DIR"])
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file():
            return folder / "results"
    return here / "iclr26-results"


def _as_number(measured) -> float:
    if hasattr(measured, "item") and getattr(measured, "ndim", 0) == 0:  # 0-d tensor or array
        measured = measured.item()
    if isinstance(measured, bool) or not isinstance(measured, (int, float)):
        raise TypeError(f"measured must be a real number (or a 0-d tensor/array), got {type(measured).__name__}")
    return float(measured)


def _cell(text: str) -> str:
    """Text made safe for a Markdown table cell: a literal '|' (as in |x|) would split the cell."""
    return str(text).replace("|", "\\|")


def _fmt(x: float | None) -> str:
    if x is None:
        return "—"
    if x == 0 or 1e-3 <= abs(x) < 1e4:
        return f"{x:.3g}"
    return f"{x:.2e}"


class Checked(float):
    """The measured value a check returns: a float that shows, in a notebook, how its claim fared."""

    def __new__(cls, value: float, line: str):
        obj = super().__new__(cls, value)
        obj.line = line
        return obj

    def __repr__(self) -> str:
        return self.line

    __str__ = __repr__  # print(log.check(...)) shows the verdict line too


class ClaimLog:
    """The claims of one chapter run at one scale and seed, recorded as they are checked.

    Creating it writes every declared claim as "not run"; :meth:`check` fills one in;
    :meth:`finish` adds the run time. The file is rewritten whole after every change.
    """

    def __init__(self, chapter: str, claims: Sequence[Claim], scale: str, seed: int,
                 results_dir: str | Path | None = None):
        if not isinstance(chapter, str) or not re.fullmatch(r"\d\d-[a-z0-9-]+", chapter):
            raise ValueError(f"chapter must look like 'NN-slug' (e.g. '01-deep-mf'), got {chapter!r}")
        if not claims or not all(isinstance(c, Claim) for c in claims):
            raise TypeError("claims must be a non-empty sequence of Claim")
        ids = [c.id for c in claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"claim ids must be unique, got {ids}")
        if not isinstance(scale, str) or not scale:
            raise ValueError(f"scale must be a non-empty str such as 'ci' or 'full', got {scale!r}")
        self.chapter, self.scale, self.seed = chapter, scale, int(seed)
        self.claims = {c.id: c for c in claims}
        self.results: dict[str, dict] = {}
        self.started = time.perf_counter()
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.runtime_s: float | None = None
        folder = Path(results_dir) if results_dir is not None else find_results_dir()
        self.path = folder / f"{chapter}.{scale}.json"
        self._write()

    def check(self, claim_id: str, measured) -> float:
        """Record ``measured`` for claim ``claim_id``; raise ``AssertionError`` if it fails
        (unless the claim was declared ``asserted=False``, i.e. reported only).

        Returns the measured value as a float (a :class:`Checked`, which a notebook shows as one
        line: the claim, the value, the threshold and the verdict). The record (value, held or not, time) is written
        before the assertion is raised, so a failed claim shows as failed in the scorecard.
        """
        if claim_id not in self.claims:
            raise KeyError(f"unknown claim {claim_id!r}; declared: {list(self.claims)}")
        claim = self.claims[claim_id]
        value = _as_number(measured)
        held = (not math.isnan(value)) and OPS[claim.op](value, claim.threshold)
        self.results[claim_id] = {"measured": value, "held": bool(held),
                                  "checked_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        self._write()
        if not held and claim.asserted:
            raise AssertionError(
                f"claim {claim_id!r} did not hold: {claim.measure} = {_fmt(value)}, "
                f"needed {claim.op} {_fmt(claim.threshold)} ({self.chapter}, SCALE={self.scale!r}, SEED={self.seed})")
        verdict = _status(held, claim.asserted)
        return Checked(value, f"{verdict} · {claim_id}: {claim.measure} = {_fmt(value)} (passes if {claim.op} {_fmt(claim.threshold)})")

    def finish(self) -> float:
        """Record and return the seconds since this log was created (the chapter's run time)."""
        self.runtime_s = time.perf_counter() - self.started
        self._write()
        return self.runtime_s

    def table(self) -> str:
        """The declared claims as a Markdown table, for the chapter's "claims" section."""
        rows = ["| claim | the paper | here | measured by | passes if | faithful or analogue |",
                "| --- | --- | --- | --- | --- | --- |"]
        for c in self.claims.values():
            paper = c.paper_setting + (f" (reported: {c.paper})" if c.paper != "—" else "")
            passes = f"{c.op} {_fmt(c.threshold)}" + ("" if c.asserted else " (reported, not asserted)")
            rows.append(f"| **{c.id}**: {_cell(c.text)} | {_cell(paper)} | {_cell(c.our_setting)} | {_cell(c.measure)} | "
                        f"{passes} | {c.kind} |")
        return "\n".join(rows)

    def summary(self) -> str:
        """The claims with their measured values so far, as a Markdown table."""
        rows = ["| claim | measured | passes if | held |", "| --- | --- | --- | --- |"]
        for c in self.claims.values():
            r = self.results.get(c.id)
            status = "not run" if r is None else _status(r["held"], c.asserted)
            rows.append(f"| {c.id} | {_fmt(r and r['measured'])} | {c.op} {_fmt(c.threshold)} | {status} |")
        return "\n".join(rows)

    def _write(self) -> None:
        record = {
            "chapter": self.chapter, "scale": self.scale, "seed": self.seed,
            "started_at": self.started_at, "runtime_s": self.runtime_s,
            "claims": [{**asdict(c), **self.results.get(c.id, {"measured": None, "held": None})}
                       for c in self.claims.values()],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        tmp.replace(self.path)  # atomic: a reader never sees half a file


def chapters_in_toc(toc_path: str | Path) -> list[str]:
    """The chapter notebooks (``NN-slug``) listed in a Jupyter Book ``_toc.yml``, in order."""
    return NOTEBOOK_RE.findall(Path(toc_path).read_text())


def load_results(results_dir: str | Path) -> dict[tuple[str, str], dict]:
    """Every results file in ``results_dir``, keyed by (chapter, scale)."""
    out = {}
    for path in sorted(Path(results_dir).glob("*.json")):
        record = json.loads(path.read_text())
        out[(record["chapter"], record["scale"])] = record
    return out


def _status(held, asserted: bool = True) -> str:
    if held is None:
        return "not run"
    if asserted:
        return "✅ held" if held else "❌ failed"
    return "✅ held (reported)" if held else "❌ not reproduced (reported)"


def scorecard_markdown(chapters: Sequence[str], results: dict[tuple[str, str], dict]) -> str:
    """The scorecard in Markdown: a summary table (one line per chapter and recorded scale), then
    one table per chapter with one row per claim -- the claim, the paper's figure, our figure, the
    threshold, held or not, faithful or analogue -- under a line giving the run's scale, seed and
    run time. A chapter with no recorded run says so and shows no claim as held."""
    lines = ["| chapter | scale | seed | run time | claims |", "| --- | --- | --- | --- | --- |"]
    for chapter in chapters:
        records = _records(chapter, results)
        if not records:
            lines.append(f"| {chapter} | — | — | — | not run |")
        for rec in records:
            lines.append(f"| {chapter} | {rec['scale']} | {rec['seed']} | {_runtime(rec)} | {_record_summary(rec)} |")
    for chapter in chapters:
        lines += ["", f"## {chapter}", ""]
        records = _records(chapter, results)
        if not records:
            lines.append("No recorded run: every claim of this chapter counts as *not run*.")
        for rec in records:
            lines += [f"`SCALE=\"{rec['scale']}\"` · seed {rec['seed']} · run time {_runtime(rec)}", "",
                      "| claim | paper's figure | our figure | threshold | held | kind |",
                      "| --- | --- | --- | --- | --- | --- |"]
            for c in rec["claims"]:
                lines.append(f"| **{c['id']}** {_cell(c['text'])} | {_cell(c.get('paper', '—'))} | {_fmt(c['measured'])} | "
                             f"{c['op']} {_fmt(c['threshold'])} | {_status(c['held'], c.get('asserted', True))} | {c['kind']} |")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _records(chapter: str, results: dict[tuple[str, str], dict]) -> list[dict]:
    return [r for (ch, _), r in sorted(results.items()) if ch == chapter]


def _runtime(rec: dict) -> str:
    return "—" if rec.get("runtime_s") is None else f"{rec['runtime_s']:.0f} s"


def _record_summary(rec: dict) -> str:
    """E.g. "3/3 held", "2/3 held, 1 failed", "5/6 held, 1 not reproduced (reported)"."""
    claims = rec["claims"]
    held = sum(c["held"] is True for c in claims)
    failed = sum(c["held"] is False and c.get("asserted", True) for c in claims)
    unreproduced = sum(c["held"] is False and not c.get("asserted", True) for c in claims)
    missing = sum(c["held"] is None for c in claims)
    parts = ([f"{held}/{len(claims)} held"] + ([f"{failed} failed"] if failed else [])
             + ([f"{unreproduced} not reproduced (reported)"] if unreproduced else [])
             + ([f"{missing} not run"] if missing else []))
    return ", ".join(parts)


def chapter_status(chapters: Sequence[str], results: dict[tuple[str, str], dict], scale: str = "ci") -> dict[str, str]:
    """Per chapter, a short status for the README: "3/3 held", "2/3 held, 1 failed", or "not run"."""
    return {ch: _record_summary(results[(ch, scale)]) if (ch, scale) in results else "not run" for ch in chapters}
