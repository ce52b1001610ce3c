"""Claim checks: what a chapter asserts, fixed before it runs, recorded as it runs.

A chapter declares its claims *before* it runs anything: what is claimed, what number
this chapter measures, the threshold that number must pass, and -- for a claim of the
paper -- the control: the same experiment with the mechanism the claim credits removed,
which must *not* pass. Declaring all of it up front is what makes a check honest: the
threshold is fixed before the measurement exists, and it can fail in two ways (the
method misses it, or the control meets it too, in which case the threshold
tests nothing).

    CLAIMS = [
        Claim("rank1", "depth 3 converges to rank 1", measure="median effective rank",
              op="<", threshold=1.2, role="paper", kind="analogue",
              control="the same runs at depth 2"),
        Claim("grad", "closed-form gradients equal autograd's",
              measure="max abs difference", op="<", threshold=1e-9, role="check"),
    ]
    log = ClaimLog("01-deep-mf", CLAIMS, scale=SCALE, seed=SEED)
    ...  # experiments
    # raises AssertionError if it fails
    log.check("rank1", erank_depth3, control=erank_depth2)
    log.check("grad", max_diff)
    log.finish()  # records the chapter's run time

Two roles, never mixed up in a count:

* ``role="paper"`` -- a *paper claim*: something the paper asserts, in its terms.
  Only these count as reproductions in the scorecard.
* ``role="check"`` -- a *check*: a derivation against autograd, an identity, an
  invariant, an accounting (bits sent, bytes of state) that the chapter verifies
  about itself.

Each check writes ``results/<chapter>.<scale>.json`` at once, so a notebook that dies
half way leaves its remaining claims marked "not run", never "held".
:mod:`iclr26.scorecard` turns these files, and the committed seed sweeps, into the
book's scorecard.
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

OPS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
ROLES = ("paper", "check")
KINDS = ("faithful", "analogue")
NOTEBOOK_RE = re.compile(r"notebooks/(\d\d-[a-z0-9-]+)")
# The seed sweep sets this to "0" so that a run records every claim at every seed
# instead of stopping at the first failure; a reader's run and CI leave it unset, so
# failures raise.
RAISE_ENV = "ICLR26_CLAIMS_RAISE"


@dataclass(frozen=True)
class Claim:
    """One claim, as a chapter tests it.

    id: short name used by :meth:`ClaimLog.check` (letters, digits, ``-``, ``_``).
    text: the claim in one line, in the paper's terms (or, for a check, what
        is verified).
    measure: what number this chapter measures to test it.
    op, threshold: the measured value passes when ``measured <op> threshold``; fixed
        before the run.
    kind: ``"faithful"`` (same mechanism, comparable setting) or ``"analogue"`` (same
        mechanism, smaller or synthetic setting). Required for a paper claim.
    role: ``"paper"`` (a claim of the paper) or ``"check"`` (a derivation, identity,
        invariant or accounting the chapter verifies about itself). Required.
    control: for a paper claim, the control experiment in a few words -- the same
        measure with the mechanism the claim credits removed ("depth 2 instead of 3",
        "shuffled labels"). Its value is passed to :meth:`ClaimLog.check`, and the claim
        holds only when the method passes the threshold **and the control does not**.
    no_control: where no meaningful control exists (a theorem's closed form, say), one
        sentence saying why. An asserted paper claim needs exactly one of ``control``
        and ``no_control``.
    paper: the paper's own figure for this claim where the paper gives one,
        else ``"—"``.
    paper_setting, our_setting: where the paper measured it, and where this
        chapter does.
    asserted: ``True`` (the default): a failing check raises and fails the chapter.
        ``False`` declares, before the run, a claim the chapter *reports* without
        asserting -- one that does not hold reliably at this scale (seed-dependent, or
        reversed). Its result still goes to the scorecard, with its pass rate over the
        seed sweep, so a claim that did not carry over is shown rather than dropped.
    """

    id: str
    text: str
    measure: str
    op: str
    threshold: float
    kind: str | None = None
    role: str = ""
    control: str = ""
    no_control: str = ""
    paper: str = "—"
    paper_setting: str = ""
    our_setting: str = ""
    asserted: bool = True

    def __post_init__(self):
        name = f"claim {self.id!r}"
        if not isinstance(self.id, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", self.id):
            raise ValueError(
                f"claim id must be letters, digits, '-' or '_', got {self.id!r}"
            )
        if self.op not in OPS:
            raise ValueError(f"{name}: op must be one of {list(OPS)}, got {self.op!r}")
        if hasattr(self.threshold, "item") and getattr(self.threshold, "ndim", 1) == 0:
            # a NumPy scalar
            object.__setattr__(self, "threshold", self.threshold.item())
        if (
            isinstance(self.threshold, bool)
            or not isinstance(self.threshold, (int, float))
            or not math.isfinite(self.threshold)
        ):
            raise TypeError(
                f"{name}: threshold must be a finite int or float, got "
                f"{self.threshold!r} ({type(self.threshold).__name__})"
            )
        if self.role not in ROLES:
            raise ValueError(
                f"{name}: role must be 'paper' (a claim of the paper) or 'check' "
                f"(a derivation, identity, invariant or accounting), got {self.role!r}"
            )
        if self.role == "paper" and self.kind not in KINDS:
            raise ValueError(
                f"{name}: a paper claim's kind must be one of {list(KINDS)}, "
                f"got {self.kind!r}"
            )
        if self.role == "check" and self.kind not in (None, *KINDS):
            raise ValueError(
                f"{name}: kind must be None or one of {list(KINDS)}, got {self.kind!r}"
            )
        for field in (
            "control",
            "no_control",
            "text",
            "measure",
            "paper",
            "paper_setting",
            "our_setting",
        ):
            if not isinstance(getattr(self, field), str):
                raise TypeError(
                    f"{name}: {field} must be a str, got "
                    f"{type(getattr(self, field)).__name__}"
                )
        if not isinstance(self.asserted, bool):
            raise TypeError(
                f"{name}: asserted must be True or False, got {self.asserted!r}"
            )
        if self.control.strip() and self.no_control.strip():
            raise ValueError(
                f"{name}: give a control or a reason for having none "
                "(no_control), not both"
            )
        if self.role == "check" and self.no_control.strip():
            raise ValueError(
                f"{name}: no_control is for paper claims; a check needs no control"
            )
        if (
            self.role == "paper"
            and self.asserted
            and not (self.control.strip() or self.no_control.strip())
        ):
            raise ValueError(
                f"{name}: an asserted paper claim needs a control (the same measure "
                "with the "
                "mechanism removed, which must fail the threshold) or, where none is "
                "meaningful, one sentence saying why (no_control=...)"
            )

    def passes(self, value: float | None) -> bool:
        """Whether ``value`` meets this claim's threshold (NaN and None never do)."""
        return (
            value is not None
            and not math.isnan(value)
            and bool(OPS[self.op](value, self.threshold))
        )


def find_results_dir(start: str | Path | None = None) -> Path:
    """Where results go: ``$ICLR26_RESULTS_DIR`` if set, else ``results/`` at the book's
    root (the first folder at or above ``start``, default the working directory, that
    holds ``_toc.yml``), else ``./iclr26-results`` (e.g. in Colab, outside a clone)."""
    if os.environ.get("ICLR26_RESULTS_DIR"):
        return Path(os.environ["ICLR26_RESULTS_DIR"])
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file():
            return folder / "results"
    return here / "iclr26-results"


def _as_number(measured, what: str = "measured") -> float:
    if (
        hasattr(measured, "item") and getattr(measured, "ndim", 0) == 0
    ):  # 0-d tensor or array
        measured = measured.item()
    if isinstance(measured, bool) or not isinstance(measured, (int, float)):
        raise TypeError(
            f"{what} must be a real number (or a 0-d tensor/array), "
            f"got {type(measured).__name__}"
        )
    return float(measured)


def cell(text: str) -> str:
    """Text made safe for a Markdown table cell: a literal '|' (as in |x|) would split
    the cell."""
    return str(text).replace("|", "\\|")


def fmt(x: float | None) -> str:
    """A number as the tables show it: 3 significant digits, scientific outside
    [1e-3, 1e4)."""
    if x is None:
        return "—"
    if x == 0 or 1e-3 <= abs(x) < 1e4 or not math.isfinite(x):
        return f"{x:.3g}"
    return f"{x:.2e}"


def verdict(result: dict | None, asserted: bool = True) -> str:
    """A recorded result in words (plain text: it must render in any font)."""
    if result is None or result.get("held") is None:
        return "not run"
    if result["held"]:
        return "held" if asserted else "held (reported)"
    ctrl = result.get("control_measured")
    if isinstance(ctrl, float) and math.isnan(ctrl):
        why = " (control is NaN)"
    elif result.get("control_passes") and result.get("measured_passes"):
        why = " (control passes too)"
    else:
        why = ""
    return ("FAILED" if asserted else "not reproduced (reported)") + why


class Checked(float):
    """The measured value a check returns: a float that shows, in a notebook, how its
    claim fared."""

    def __new__(cls, value: float, line: str):
        obj = super().__new__(cls, value)
        obj.line = line
        return obj

    def __repr__(self) -> str:
        return self.line

    __str__ = __repr__  # print(log.check(...)) shows the verdict line too


class ClaimLog:
    """The claims of one chapter run at one scale and seed, recorded as they
    are checked.

    Creating it writes every declared claim as "not run"; :meth:`check` fills one in;
    :meth:`finish` adds the run time. The file is rewritten whole after every change.
    ``raise_failures`` (default: true unless ``$ICLR26_CLAIMS_RAISE`` is ``"0"``, as the
    seed sweep sets it) says whether a failed asserted claim raises.
    """

    def __init__(
        self,
        chapter: str,
        claims: Sequence[Claim],
        scale: str,
        seed: int,
        results_dir: str | Path | None = None,
        raise_failures: bool | None = None,
    ):
        if not isinstance(chapter, str) or not re.fullmatch(
            r"\d\d-[a-z0-9-]+", chapter
        ):
            raise ValueError(
                f"chapter must look like 'NN-slug' (e.g. '01-deep-mf'), got {chapter!r}"
            )
        if not claims or not all(isinstance(c, Claim) for c in claims):
            raise TypeError("claims must be a non-empty sequence of Claim")
        ids = [c.id for c in claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"claim ids must be unique, got {ids}")
        if not isinstance(scale, str) or not scale:
            raise ValueError(
                f"scale must be a non-empty str such as 'ci' or 'full', got {scale!r}"
            )
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.chapter, self.scale, self.seed = chapter, scale, seed
        self.claims = {c.id: c for c in claims}
        self.results: dict[str, dict] = {}
        if raise_failures is None:
            raise_failures = os.environ.get(RAISE_ENV, "1") != "0"
        self.raise_failures = bool(raise_failures)
        self.started = time.perf_counter()
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.runtime_s: float | None = None
        folder = Path(results_dir) if results_dir is not None else find_results_dir()
        self.path = folder / f"{chapter}.{scale}.json"
        self._write()

    def check(self, claim_id: str, measured, control=None) -> float:
        """Record ``measured`` (and the control's value, for a claim declared with a
        control) for claim ``claim_id``; raise ``AssertionError`` if the claim fails --
        the measured value misses the threshold, or the control meets it too -- unless
        the claim was declared ``asserted=False`` (reported only).

        Returns the measured value as a float (a :class:`Checked`, which a notebook
        shows as one line: the claim, the value, the control, the threshold and the
        verdict). The record is written before the assertion is raised, so a failed
        claim shows as failed.
        """
        if claim_id not in self.claims:
            raise KeyError(f"unknown claim {claim_id!r}; declared: {list(self.claims)}")
        claim = self.claims[claim_id]
        value = _as_number(measured)
        if claim.control.strip() and control is None:
            raise TypeError(
                f"claim {claim_id!r} declares a control ({claim.control}); pass its "
                f"measured value: log.check({claim_id!r}, value, control=...)"
            )
        if not claim.control.strip() and control is not None:
            raise TypeError(
                f"claim {claim_id!r} declares no control; declare one in its "
                "Claim(control=...) before passing a control value"
            )
        control_value = None if control is None else _as_number(control, "control")
        measured_passes = claim.passes(value)
        control_passes = claim.passes(control_value)
        # A NaN control was not measured (a placeholder, a broken run): it backs
        # nothing, so the claim cannot hold on it. (An infinite control, e.g. a diverged
        # loss, is a value.)
        control_invalid = control_value is not None and math.isnan(control_value)
        held = measured_passes and not control_passes and not control_invalid
        self.results[claim_id] = {
            "measured": value,
            "control_measured": control_value,
            "measured_passes": measured_passes,
            "control_passes": None if control_value is None else control_passes,
            "held": held,
            "checked_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        self._write()
        needed = f"needed {claim.op} {fmt(claim.threshold)}"
        if not held and claim.asserted and self.raise_failures:
            where = f"({self.chapter}, SCALE={self.scale!r}, SEED={self.seed})"
            if control_invalid:
                raise AssertionError(
                    f"claim {claim_id!r} did not hold: its control "
                    f"({claim.control}) is NaN, so nothing was compared {where}"
                )
            if not measured_passes:
                raise AssertionError(
                    f"claim {claim_id!r} did not hold: {claim.measure} = "
                    f"{fmt(value)}, {needed} {where}"
                )
            raise AssertionError(
                f"claim {claim_id!r} did not hold: the control ({claim.control}) "
                f"passes too, {fmt(control_value)} {claim.op} "
                f"{fmt(claim.threshold)}, so the threshold does not discriminate "
                f"the method from it {where}"
            )
        line = (
            f"{verdict(self.results[claim_id], claim.asserted)} · {claim_id}: "
            f"{claim.measure} = {fmt(value)}"
        )
        if control_value is not None:
            line += f"; control ({claim.control}) = {fmt(control_value)}"
        line += f" (passes if {claim.op} {fmt(claim.threshold)}"
        line += ", and the control must not)" if control_value is not None else ")"
        return Checked(value, line)

    def finish(self) -> float:
        """Record and return the seconds since this log was created (the chapter's
        run time)."""
        self.runtime_s = time.perf_counter() - self.started
        self._write()
        return self.runtime_s

    def table(self) -> str:
        """The declared claims as Markdown tables (paper claims, then checks), for the
        chapter's "claims" section."""
        paper = [c for c in self.claims.values() if c.role == "paper"]
        checks = [c for c in self.claims.values() if c.role == "check"]
        out = []
        if paper:
            out += [
                "**Claims of the paper** (each must pass its threshold, and its "
                "control must not)",
                "",
                "| claim | the paper | here | measured by | passes if | control | kind "
                "|",
                "| --- | --- | --- | --- | --- | --- | --- |",
            ]
            for c in paper:
                setting = c.paper_setting + (
                    f" (reported: {c.paper})" if c.paper != "—" else ""
                )
                passes = f"{c.op} {fmt(c.threshold)}" + (
                    "" if c.asserted else " (reported, not asserted)"
                )
                ctrl = c.control or (f"none: {c.no_control}" if c.no_control else "—")
                out.append(
                    f"| **{c.id}**: {cell(c.text)} | {cell(setting)} | "
                    f"{cell(c.our_setting)} | "
                    f"{cell(c.measure)} | {passes} | {cell(ctrl)} | {c.kind} |"
                )
        if checks:
            out += [
                "",
                "**Checks** (the chapter verifying itself: derivations, identities, "
                "accounting; not counted as reproductions)",
                "",
                "| check | measured by | passes if |",
                "| --- | --- | --- |",
            ]
            for c in checks:
                passes = f"{c.op} {fmt(c.threshold)}" + (
                    "" if c.asserted else " (reported, not asserted)"
                )
                out.append(
                    f"| **{c.id}**: {cell(c.text)} | {cell(c.measure)} | {passes} |"
                )
        return "\n".join(out).strip()

    def summary(self) -> str:
        """The claims with their measured values so far, as one Markdown table,
        labelled."""
        rows = [
            "| claim | role | measured | control | passes if | verdict |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for role in ROLES:
            for c in (c for c in self.claims.values() if c.role == role):
                r = self.results.get(c.id)
                ctrl = (
                    "—"
                    if r is None or r["control_measured"] is None
                    else fmt(r["control_measured"])
                )
                rows.append(
                    f"| {c.id} | {'paper claim' if role == 'paper' else 'check'} | "
                    f"{fmt(r and r['measured'])} | {ctrl} | {c.op} {fmt(c.threshold)} "
                    "| "
                    f"{verdict(r, c.asserted)} |"
                )
        return "\n".join(rows)

    def _write(self) -> None:
        blank = {
            "measured": None,
            "control_measured": None,
            "measured_passes": None,
            "control_passes": None,
            "held": None,
        }
        record = {
            "chapter": self.chapter,
            "scale": self.scale,
            "seed": self.seed,
            "started_at": self.started_at,
            "runtime_s": self.runtime_s,
            "claims": [
                {**asdict(c), **self.results.get(c.id, blank)}
                for c in self.claims.values()
            ],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        tmp.replace(self.path)  # atomic: a reader never sees half a file


def chapters_in_toc(toc_path: str | Path) -> list[str]:
    """The chapter notebooks (``NN-slug``) listed in a Jupyter Book ``_toc.yml``,
    in order."""
    return NOTEBOOK_RE.findall(Path(toc_path).read_text())


def load_results(results_dir: str | Path) -> dict[tuple[str, str], dict]:
    """Every results file in ``results_dir`` (not its sub-folders), keyed by
    (chapter, scale)."""
    out = {}
    for path in sorted(Path(results_dir).glob("*.json")):
        record = json.loads(path.read_text())
        out[(record["chapter"], record["scale"])] = record
    return out
