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

Three roles, never mixed up in a count:

* ``role="paper"`` -- a *paper claim*: something the paper asserts, in its terms.
  Only these count as reproductions in the scorecard. One to three of a chapter's
  paper claims are its *headline* claims (``headline=True``, the abstract's main
  result); a variant of one (another threshold, a first design) names it
  (``variant_of="..."``).
* ``role="check"`` -- a *check*: a derivation against autograd, an identity, an
  invariant, an accounting (bits sent, bytes of state) that the chapter verifies
  about itself. A check with ``power_of="x"`` is claim x's *planted case*: the same
  measure on an input where the claimed effect is present by construction, which
  must pass x's threshold (else the experiment could not have shown x, and x is
  *untestable here*); ``null_of="x"`` is the case where the effect is absent by
  construction, which must not.
* ``role="diagnostic"`` -- a control, an ablation or an oracle that the chapter
  measures and shows beside the claims. Never asserted, never counted.

    Claim("rank1-power", "a planted rank-1 target passes rank1's measure",
          measure="median effective rank", op="<", threshold=1.2, role="check",
          power_of="rank1")

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
ROLES = ("paper", "check", "diagnostic")
# A null case must fail its claim's threshold: its op is the complement of the claim's.
COMPLEMENT = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}
ID_RE = re.compile(r"[A-Za-z0-9_-]+")
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
    role: ``"paper"`` (a claim of the paper), ``"check"`` (a derivation, identity,
        invariant or accounting the chapter verifies about itself, or a claim's
        planted or null case) or ``"diagnostic"`` (a control, ablation or oracle shown
        beside the claims; never asserted, never counted). Required.
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
    headline: for a paper claim, whether it is one of the one to three headline claims
        of the paper's abstract.
    variant_of: for a paper claim that is not a headline, the id of the headline it
        serves (another threshold, a first design, a narrower reading).
    power_of: for a check, the id of the paper claim whose *planted case* it is: the
        claim's measure, through the same code, on an input where the effect is
        present by construction at about the size the paper reports. It must use the
        claim's op and threshold; if it fails, the claim is untestable here.
    null_of: for a check, the id of the paper claim whose *null case* it is: the same
        measure where the effect is absent by construction. Its op is the complement
        of the claim's (``<`` for ``>=``, ...) at the same threshold, so it passes
        when the null case fails the claim.
    no_power: for a paper claim without a planted case, one sentence saying why none
        is built (the scorecard shows it beside "untestable here").
    why_not_asserted: for a reported paper claim (``asserted=False``) that held at
        every seed of its sweep, one sentence saying why it stays reported.
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
    headline: bool = False
    variant_of: str = ""
    power_of: str = ""
    null_of: str = ""
    no_power: str = ""
    why_not_asserted: str = ""

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
                f"{name}: role must be 'paper' (a claim of the paper), 'check' "
                "(a derivation, identity, invariant, accounting, or a claim's planted "
                "or null case) or 'diagnostic' (a control, ablation or oracle shown "
                f"beside the claims), got {self.role!r}"
            )
        if self.role == "paper" and self.kind not in KINDS:
            raise ValueError(
                f"{name}: a paper claim's kind must be one of {list(KINDS)}, "
                f"got {self.kind!r}"
            )
        if self.role != "paper" and self.kind not in (None, *KINDS):
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
            "variant_of",
            "power_of",
            "null_of",
            "no_power",
            "why_not_asserted",
        ):
            if not isinstance(getattr(self, field), str):
                raise TypeError(
                    f"{name}: {field} must be a str, got "
                    f"{type(getattr(self, field)).__name__}"
                )
        for field in ("asserted", "headline"):
            if not isinstance(getattr(self, field), bool):
                raise TypeError(
                    f"{name}: {field} must be True or False, got "
                    f"{getattr(self, field)!r}"
                )
        for field in ("variant_of", "power_of", "null_of"):
            ref = getattr(self, field)
            if ref and not ID_RE.fullmatch(ref):
                raise ValueError(f"{name}: {field} must be a claim id, got {ref!r}")
        paper_only = ("headline", "variant_of", "no_power", "why_not_asserted")
        for field in paper_only:
            if self.role != "paper" and getattr(self, field):
                raise ValueError(
                    f"{name}: {field} is for paper claims, not a {self.role}"
                )
        for field in ("power_of", "null_of"):
            if self.role != "check" and getattr(self, field):
                raise ValueError(
                    f"{name}: {field} is for checks (a claim's planted or null case), "
                    f"not a {self.role}"
                )
        if self.headline and self.variant_of:
            raise ValueError(
                f"{name}: a headline claim is no variant; give headline=True or "
                "variant_of=..., not both"
            )
        if self.power_of and self.null_of:
            raise ValueError(
                f"{name}: a check is one claim's planted case (power_of) or its null "
                "case (null_of), not both"
            )
        if (self.power_of or self.null_of) and self.control.strip():
            raise ValueError(
                f"{name}: a planted or null case is itself the comparison; it takes "
                "no control"
            )
        if self.why_not_asserted and self.asserted:
            raise ValueError(
                f"{name}: why_not_asserted explains a reported claim; this one is "
                "asserted"
            )
        if self.role == "diagnostic" and self.asserted:
            raise ValueError(
                f"{name}: a diagnostic (a control, ablation or oracle) is shown, never "
                "asserted: declare it with asserted=False"
            )
        if self.role == "diagnostic" and (self.control or self.no_control):
            raise ValueError(f"{name}: a diagnostic takes no control")
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


def verdict(result: dict | None, asserted: bool = True, role: str | None = None) -> str:
    """A recorded result in words (plain text: it must render in any font)."""
    if result is None or result.get("held") is None:
        return "not run"
    role = role or result.get("role") or "paper"
    if role == "diagnostic":  # shown, not judged: a control may well meet the bar
        met = result.get("measured_passes")
        return "shown (meets the threshold)" if met else "shown (misses it)"
    if result["held"]:
        return "held" if asserted else "held (reported)"
    ctrl = result.get("control_measured")
    if isinstance(ctrl, float) and math.isnan(ctrl):
        why = " (control is NaN)"
    elif result.get("control_passes") and result.get("measured_passes"):
        why = " (control passes too)"
    else:
        why = ""
    if asserted:
        return "FAILED" + why
    return (
        "not reproduced (reported)" if role == "paper" else "failed (reported)"
    ) + why


def role_words(claim: dict) -> str:
    """A claim's role in a few words, for tables: "headline", "paper (of x)",
    "planted case of x", "check", "diagnostic"."""
    role = claim.get("role") or "paper"
    if role == "paper":
        if claim.get("headline"):
            return "headline claim"
        return "paper claim" + (
            f" (of {claim['variant_of']})" if claim.get("variant_of") else ""
        )
    if claim.get("power_of"):
        return f"planted case of {claim['power_of']}"
    if claim.get("null_of"):
        return f"null case of {claim['null_of']}"
    return role


def check_links(claims: Sequence[Claim]) -> None:
    """Raise ``ValueError`` unless the claims' links hold together: every
    ``variant_of`` names a headline paper claim, every ``power_of`` and ``null_of`` a
    paper claim, a planted case uses its claim's op and threshold and a null case the
    complement at the same threshold, a claim with a planted case gives no
    ``no_power`` reason, and a chapter with paper claims marks one to three
    headlines."""
    by_id = {c.id: c for c in claims}
    paper = [c for c in claims if c.role == "paper"]
    headlines = [c.id for c in paper if c.headline]
    if paper and not 1 <= len(headlines) <= 3:
        raise ValueError(
            "mark one to three of the chapter's paper claims as its headline claims "
            f"(headline=True), the abstract's main results; marked: {headlines}"
        )
    for c in claims:
        if c.variant_of:
            target = by_id.get(c.variant_of)
            if target is None or target.role != "paper" or not target.headline:
                raise ValueError(
                    f"claim {c.id!r}: variant_of={c.variant_of!r} must name a headline "
                    f"paper claim of this chapter; the headlines are {headlines}"
                )
        for field in ("power_of", "null_of"):
            ref = getattr(c, field)
            if not ref:
                continue
            target = by_id.get(ref)
            if target is None or target.role != "paper":
                raise ValueError(
                    f"claim {c.id!r}: {field}={ref!r} must name a paper claim of this "
                    f"chapter; they are {[p.id for p in paper]}"
                )
            op = target.op if field == "power_of" else COMPLEMENT[target.op]
            if c.op != op or c.threshold != target.threshold:
                what = "planted case" if field == "power_of" else "null case"
                raise ValueError(
                    f"claim {c.id!r}: as {ref!r}'s {what} it must pass when "
                    f"{ref!r}'s measure {'meets' if field == 'power_of' else 'misses'} "
                    f"its threshold: declare op={op!r}, threshold={target.threshold!r}"
                    f" (got op={c.op!r}, threshold={c.threshold!r})"
                )
    powered = {c.power_of for c in claims if c.power_of}
    for c in paper:
        if c.no_power and c.id in powered:
            raise ValueError(
                f"claim {c.id!r} has a planted case; drop its no_power reason"
            )


def fingerprint(*arrays) -> str:
    """A short hash of the values, shapes and dtypes of tensors or arrays (or lists of
    numbers or strings): two draws of data with the same fingerprint are the same
    draw."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        if hasattr(a, "detach"):  # a torch tensor
            a = a.detach().cpu().contiguous().numpy()
        a = np.ascontiguousarray(np.asarray(a))
        if a.dtype == object:
            raise TypeError(
                "fingerprint takes tensors, arrays, or lists of numbers or strings"
            )
        h.update(f"{a.dtype}{a.shape}".encode() + a.tobytes())
    return h.hexdigest()[:16]


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
        overrides: dict | None = None,
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
        if overrides is None:
            overrides = {}
        if not isinstance(overrides, dict) or not all(
            isinstance(k, str) for k in overrides
        ):
            raise TypeError(
                "overrides must be a dict of preset keys (OVERRIDES), got "
                f"{overrides!r}"
            )
        check_links(claims)
        self.chapter, self.scale, self.seed = chapter, scale, seed
        # what this run changed of the chapter's preset (scale_preset's overrides)
        self.overrides = json.loads(json.dumps(overrides, default=list))
        # fingerprints of the data this run drew (record_data)
        self.data: dict[str, str] = {}
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
        self._machine = machine()
        self._commit = source_commit()
        self._write()

    def check(self, claim_id: str, measured, control=None) -> float:
        """Record ``measured`` (and the control's value, for a claim declared with a
        control) for claim ``claim_id``; raise ``AssertionError`` if the claim fails --
        the measured value misses the threshold, or the control meets it too -- unless
        the claim was declared ``asserted=False`` (reported only).

        Returns the measured value as a float (a :class:`Checked`, which a notebook
        shows as one line: the claim, the value, the control, the threshold and the
        verdict). The record is written before the assertion is raised, so a failed
        claim shows as failed. A diagnostic is recorded and never raises.
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
        what = claim_id
        if claim.power_of:
            what += f" (planted case of {claim.power_of})"
        elif claim.null_of:
            what += f" (null case of {claim.null_of})"
        line = (
            f"{verdict(self.results[claim_id], claim.asserted, claim.role)} · {what}: "
            f"{claim.measure} = {fmt(value)}"
        )
        if control_value is not None:
            line += f"; control ({claim.control}) = {fmt(control_value)}"
        line += f" (passes if {claim.op} {fmt(claim.threshold)}"
        line += ", and the control must not)" if control_value is not None else ")"
        return Checked(value, line)

    def record_data(self, name: str, *arrays) -> str:
        """Record a fingerprint (:func:`fingerprint`) of data this run drew, under
        ``name`` ("train", "test", ...), and return it. The seed sweep keeps them, and
        a test checks that no two sweep seeds drew the same data."""
        if not isinstance(name, str) or not ID_RE.fullmatch(name):
            raise ValueError(
                f"name must be letters, digits, '-' or '_' (e.g. 'train'), got {name!r}"
            )
        if not arrays:
            raise ValueError("give the tensors or arrays the run drew")
        self.data[name] = fingerprint(*arrays)
        self._write()
        return self.data[name]

    def finish(self) -> float:
        """Record and return the seconds since this log was created (the chapter's
        run time)."""
        self.runtime_s = time.perf_counter() - self.started
        self._write()
        return self.runtime_s

    def table(self) -> str:
        """The declared claims as Markdown tables -- headline claims, the other paper
        claims, checks (planted and null cases among them), diagnostics -- for the
        chapter's "claims" section."""
        cs = list(self.claims.values())
        planted = {c.power_of: c.id for c in cs if c.power_of}
        out = []

        def paper_rows(rows):
            out.extend(
                [
                    "| claim | the paper, and here | measured by, passes if | "
                    "control (must fail) | planted case (must pass) |",
                    "| --- | --- | --- | --- | --- |",
                ]
            )
            for c in rows:
                setting = c.paper_setting + (
                    f" (reported: {c.paper})" if c.paper != "—" else ""
                )
                where = f"{c.kind}: {setting} → {c.our_setting}".strip()
                passes = f"{c.measure} {c.op} {fmt(c.threshold)}" + (
                    "" if c.asserted else " (reported, not asserted)"
                )
                ctrl = c.control or (f"none: {c.no_control}" if c.no_control else "—")
                power = planted.get(c.id) or (
                    f"none: {c.no_power}" if c.no_power else "none yet"
                )
                name = f"**{c.id}**" + (f" (of {c.variant_of})" if c.variant_of else "")
                out.append(
                    f"| {name}: {cell(c.text)} | {cell(where)} | {cell(passes)} | "
                    f"{cell(ctrl)} | {cell(power)} |"
                )

        heads = [c for c in cs if c.role == "paper" and c.headline]
        others = [c for c in cs if c.role == "paper" and not c.headline]
        if heads:
            out += ["**Headline claims of the paper**", ""]
            paper_rows(heads)
        if others:
            out += [
                "",
                "**Other claims of the paper** (variants name their headline)",
                "",
            ]
            paper_rows(others)
        checks = [c for c in cs if c.role == "check"]
        if checks:
            out += [
                "",
                "**Checks** (the chapter verifying itself, and the planted and null "
                "cases that show a claim's measure can see its effect; not "
                "reproductions)",
                "",
                "| check | measured by | passes if |",
                "| --- | --- | --- |",
            ]
            for c in checks:
                tag = (
                    f" (planted case of {c.power_of})"
                    if c.power_of
                    else (f" (null case of {c.null_of})" if c.null_of else "")
                )
                passes = f"{c.op} {fmt(c.threshold)}" + (
                    "" if c.asserted else " (reported, not asserted)"
                )
                out.append(
                    f"| **{c.id}**{tag}: {cell(c.text)} | {cell(c.measure)} | "
                    f"{passes} |"
                )
        diags = [c for c in cs if c.role == "diagnostic"]
        if diags:
            out += [
                "",
                "**Diagnostics** (controls, ablations and oracles, shown beside the "
                "claims; never counted)",
                "",
                "| diagnostic | measured by | shown against |",
                "| --- | --- | --- |",
            ]
            for c in diags:
                out.append(
                    f"| **{c.id}**: {cell(c.text)} | {cell(c.measure)} | "
                    f"{c.op} {fmt(c.threshold)} |"
                )
        return "\n".join(out).strip()

    def stamp(self) -> str:
        """Where and when this run happened, in one line: the code's commit, the date,
        the CPU, the scale, the seed and any overrides."""
        m = self._machine
        over = f", overrides {self.overrides}" if self.overrides else ""
        return (
            f"*Run of {self.started_at[:16].replace('T', ' ')} UTC, code "
            f"{self._commit}, on {m['cpu_model']} ({m['cpu_capability']}, torch "
            f"{m['torch']}), `SCALE={self.scale!r}`, `SEED={self.seed}`{over}.*"
        )

    def untestable(self) -> dict[str, str]:
        """The paper claims this run could not test, each with the reason in a few
        words: no planted case, a planted case that failed, or a null case that passed
        the claim's threshold. (The scorecard decides over the whole seed sweep.)"""
        out = {}
        for c in self.claims.values():
            if c.role != "paper":
                continue
            cases = [k for k in self.claims.values() if c.id in (k.power_of, k.null_of)]
            planted = [k for k in cases if k.power_of]
            if not planted:
                out[c.id] = "no planted case" + (
                    f": {c.no_power}" if c.no_power else ""
                )
                continue
            for k in cases:
                r = self.results.get(k.id)
                if r is not None and not r["held"]:
                    word = "planted case" if k.power_of else "null case"
                    out[c.id] = (
                        f"its {word} {k.id} = {fmt(r['measured'])} "
                        f"{'misses' if k.power_of else 'meets'} the claim's threshold"
                    )
                    break
        return out

    def summary(self) -> str:
        """The claims with their measured values so far, as one Markdown table
        (headline claims first), then the paper claims this run could not test, one
        line each."""
        rows = [
            "| claim | role | measured | control | passes if | verdict |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        cs = list(self.claims.values())
        order = (
            [c for c in cs if c.role == "paper" and c.headline]
            + [c for c in cs if c.role == "paper" and not c.headline]
            + [c for c in cs if c.role == "check"]
            + [c for c in cs if c.role == "diagnostic"]
        )
        for c in order:
            r = self.results.get(c.id)
            ctrl = (
                "—"
                if r is None or r["control_measured"] is None
                else fmt(r["control_measured"])
            )
            rows.append(
                f"| {c.id} | {role_words(asdict(c))} | {fmt(r and r['measured'])} | "
                f"{ctrl} | {c.op} {fmt(c.threshold)} | "
                f"{verdict(r, c.asserted, c.role)} |"
            )
        out = self.stamp() + "\n\n" + "\n".join(rows)
        untestable = self.untestable()
        n_paper = sum(c.role == "paper" for c in cs)
        if untestable:
            out += (
                f"\n\n**Untestable here: {len(untestable)} of {n_paper} paper "
                "claims** (an experiment that could not have shown the effect tests "
                "nothing):\n\n"
                + "\n".join(f"- {cid}: {why}" for cid, why in untestable.items())
            )
        return out

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
            "machine": self._machine,
            "commit": self._commit,
            "overrides": self.overrides,
            "data": self.data,
            "claims": [
                {**asdict(c), **self.results.get(c.id, blank)}
                for c in self.claims.values()
            ],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        tmp.replace(self.path)  # atomic: a reader never sees half a file


def machine() -> dict:
    """What a recorded number depends on beyond the code and the seed. The same chapter
    at the same seed gives slightly different floats on processors whose PyTorch uses
    other vector kernels (AVX2 against AVX-512, say), and an RL or training run can
    amplify that into a different result: a record says where it was measured."""
    import platform

    import torch

    return {
        "processor": platform.machine(),
        "cpu_model": _cpu_model(),
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
    }


def source_commit() -> str:
    """The commit of the book's code this run used ("abc1234", with "+ changes" when
    the checkout differs from it), or "not a git checkout" (Colab, an installed
    package)."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
        )
        if head.returncode != 0:
            return "not a git checkout"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "not a git checkout"
    return head.stdout.strip() + (" + changes" if dirty else "")


def _cpu_model() -> str:
    try:  # Linux
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown"


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
