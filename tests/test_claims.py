import json

import numpy as np
import pytest
import torch

from iclr26.claims import Claim, ClaimLog, chapters_in_toc, load_results
from iclr26.core import ExerciseVerdict, grade_exercise
from iclr26.scorecard import (
    chapter_counts,
    chapter_hashes,
    chapter_status,
    classify_paper_claim,
    is_stale,
    load_sweeps,
    normalised_code,
    paper_verdicts,
    scorecard_markdown,
    sweep_path,
    sweep_problems,
    sweep_record,
)


def claims():
    return [
        Claim(
            "rank1",
            "converges to rank 1",
            measure="effective rank",
            op="<",
            threshold=1.2,
            role="paper",
            kind="analogue",
            control="depth 2 instead of 3",
            headline=True,
        ),
        Claim(
            "gap",
            "decoupled",
            measure="gap",
            op=">=",
            threshold=0.5,
            role="paper",
            kind="faithful",
            paper="0.9",
            no_control="a closed form: nothing to remove",
        ),
        Claim(
            "grad",
            "gradients match autograd",
            measure="max diff",
            op="<",
            threshold=1e-9,
            role="check",
        ),
    ]


# --------------------------------------------------------------------------------------
# declaring claims
# --------------------------------------------------------------------------------------
def test_claim_validation():
    ok = dict(
        measure="m",
        op="<",
        threshold=1,
        role="paper",
        kind="faithful",
        no_control="why",
    )
    with pytest.raises(ValueError, match="op"):
        Claim("a", "t", **{**ok, "op": "=<"})
    with pytest.raises(ValueError, match="kind"):
        Claim("a", "t", **{**ok, "kind": "exact"})
    with pytest.raises(TypeError, match="threshold"):
        Claim("a", "t", **{**ok, "threshold": float("nan")})
    with pytest.raises(ValueError, match="id"):
        Claim("a b", "t", **ok)


def test_role_is_required_and_named():
    with pytest.raises(ValueError, match="role must be 'paper'.*'check'.*'diagnostic'"):
        Claim(
            "a", "t", measure="m", op="<", threshold=1, kind="faithful", no_control="x"
        )
    with pytest.raises(ValueError, match="role"):
        Claim(
            "a",
            "t",
            measure="m",
            op="<",
            threshold=1,
            role="claim",
            kind="faithful",
            no_control="x",
        )
    with pytest.raises(ValueError, match="paper claim's kind"):
        Claim("a", "t", measure="m", op="<", threshold=1, role="paper", no_control="x")
    # a check needs no kind
    Claim("a", "t", measure="m", op="<", threshold=1, role="check")


def test_asserted_paper_claim_needs_a_control_or_a_reason():
    base = dict(measure="m", op="<", threshold=1, role="paper", kind="analogue")
    with pytest.raises(ValueError, match="needs a control"):
        Claim("a", "t", **base)
    with pytest.raises(ValueError, match="needs a control"):
        Claim("a", "t", **base, control="   ")
    with pytest.raises(ValueError, match="not both"):
        Claim("a", "t", **base, control="depth 2", no_control="none")
    with pytest.raises(TypeError, match="control must be a str"):
        Claim("a", "t", **base, control=2.0)
    with pytest.raises(ValueError, match="no_control is for paper claims"):
        Claim("a", "t", measure="m", op="<", threshold=1, role="check", no_control="x")
    with pytest.raises(TypeError, match="asserted"):
        Claim("a", "t", **base, control="c", asserted="no")
    Claim("a", "t", **base, asserted=False)  # a reported claim may have neither


# --------------------------------------------------------------------------------------
# checking claims
# --------------------------------------------------------------------------------------
def test_log_records_not_run_then_held_and_failed(tmp_path):
    log = ClaimLog("01-demo", claims(), scale="ci", seed=3, results_dir=tmp_path)
    rec = json.loads((tmp_path / "01-demo.ci.json").read_text())
    assert [c["held"] for c in rec["claims"]] == [None, None, None]
    assert log.check("rank1", torch.tensor(1.05), control=3.9) == pytest.approx(1.05)
    with pytest.raises(
        AssertionError, match=r"claim 'gap' did not hold: gap = 0.1, needed >= 0.5"
    ):
        log.check("gap", np.float64(0.1))
    log.check("grad", 1e-12)
    log.finish()
    rec = json.loads((tmp_path / "01-demo.ci.json").read_text())
    assert [c["held"] for c in rec["claims"]] == [True, False, True]
    assert (
        rec["claims"][0]["control_measured"] == 3.9
        and rec["claims"][0]["control_passes"] is False
    )
    assert rec["seed"] == 3 and rec["runtime_s"] > 0
    summary = log.summary()
    assert "FAILED" in summary and "| held |" in summary and "| check |" in summary
    assert "| headline claim |" in summary
    assert "Untestable here: 2 of 2 paper claims" in summary  # no planted cases
    assert "✅" not in summary and "❌" not in summary  # plain words render in any font
    table = log.table()
    assert "depth 2 instead of 3" in table and "none: a closed form" in table
    assert table.index("Headline claims") < table.index("Other claims")
    assert table.index("Other claims") < table.index("Checks")


def test_a_control_that_passes_fails_the_check(tmp_path):
    log = ClaimLog("01-demo", claims(), scale="ci", seed=0, results_dir=tmp_path)
    with pytest.raises(
        AssertionError, match=r"control \(depth 2 instead of 3\) passes too"
    ):
        log.check("rank1", 1.05, control=1.1)
    r = log.results["rank1"]
    assert r["measured_passes"] and r["control_passes"] and not r["held"]
    assert "control passes too" in log.summary()


def test_a_nan_control_backs_nothing_but_an_infinite_one_counts(tmp_path):
    log = ClaimLog("01-demo", claims(), scale="ci", seed=0, results_dir=tmp_path)
    with pytest.raises(AssertionError, match="control .* is NaN"):
        log.check("rank1", 1.0, control=float("nan"))  # a placeholder or broken control
    assert "control is NaN" in log.summary()
    assert log.check("rank1", 1.0, control=float("inf")) == 1.0  # e.g. a diverged loss


def test_control_value_must_match_the_declaration(tmp_path):
    log = ClaimLog("01-demo", claims(), scale="ci", seed=0, results_dir=tmp_path)
    with pytest.raises(TypeError, match="declares a control"):
        log.check("rank1", 1.0)
    with pytest.raises(TypeError, match="declares no control"):
        log.check("gap", 1.0, control=0.0)
    with pytest.raises(TypeError, match="control must be a real number"):
        log.check("rank1", 1.0, control="3")


def test_nan_never_holds(tmp_path):
    log = ClaimLog("01-demo", claims(), scale="ci", seed=0, results_dir=tmp_path)
    with pytest.raises(AssertionError):
        log.check("rank1", float("nan"), control=5.0)


def test_sweep_mode_records_failures_without_raising(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CLAIMS_RAISE", "0")
    log = ClaimLog("01-demo", claims(), scale="ci", seed=0, results_dir=tmp_path)
    log.check("gap", 0.1)
    assert log.results["gap"]["held"] is False


def test_log_errors(tmp_path):
    with pytest.raises(ValueError, match="NN-slug"):
        ClaimLog("demo", claims(), scale="ci", seed=0, results_dir=tmp_path)
    with pytest.raises(ValueError, match="unique"):
        ClaimLog(
            "01-demo", claims() + claims()[:1], scale="ci", seed=0, results_dir=tmp_path
        )
    with pytest.raises(TypeError, match="seed"):
        ClaimLog("01-demo", claims(), scale="ci", seed=1.5, results_dir=tmp_path)
    log = ClaimLog("01-demo", claims(), scale="ci", seed=0, results_dir=tmp_path)
    with pytest.raises(KeyError, match="declared"):
        log.check("nope", 1.0)
    with pytest.raises(TypeError, match="real number"):
        log.check("gap", "1.0")
    with pytest.raises(TypeError, match="real number"):
        log.check("gap", torch.ones(2))


def test_results_dir_found_from_book_root(tmp_path, monkeypatch):
    monkeypatch.delenv("ICLR26_RESULTS_DIR", raising=False)
    (tmp_path / "_toc.yml").write_text("format: jb-book\n")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    log = ClaimLog("01-demo", claims(), scale="ci", seed=0)
    assert log.path == tmp_path / "results" / "01-demo.ci.json"


def test_reported_claims_record_without_raising(tmp_path):
    reported = Claim(
        "noise",
        "more robust to noise",
        measure="accuracy gap",
        op=">",
        threshold=0.0,
        role="paper",
        kind="analogue",
        asserted=False,
    )
    log = ClaimLog(
        "01-demo", claims() + [reported], scale="ci", seed=0, results_dir=tmp_path
    )
    assert log.check("noise", -1.5) == -1.5  # does not raise
    assert "reported, not asserted" in log.table()
    assert "not reproduced (reported)" in log.summary()


def test_pipes_in_claim_text_do_not_break_tables(tmp_path):
    c = Claim(
        "abs",
        "|x − y| is small",
        measure="max |x − y|",
        op="<",
        threshold=1.0,
        role="check",
    )
    log = ClaimLog("01-demo", [c], scale="ci", seed=0, results_dir=tmp_path)
    log.check("abs", 0.5)
    row = [r for r in log.table().splitlines() if r.startswith("| **abs**")][0]
    # 3 columns, only the escaped pipes are literal
    assert row.count("|") - row.count("\\|") == 4


# --------------------------------------------------------------------------------------
# sweeps and the scorecard, on hand-made records
# --------------------------------------------------------------------------------------
def make_book(tmp_path, code="x = 1"):
    """A tiny book: one chapter notebook with a library module, for hashing."""
    (tmp_path / "_toc.yml").write_text(
        "- file: notebooks/01-demo\n- file: notebooks/02-other\n"
    )
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    (tmp_path / "lib" / "iclr26").mkdir(parents=True, exist_ok=True)
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["# 01 · Demo"]},
            {"cell_type": "code", "source": ["import iclr26.harness\n", code]},
        ]
    }
    for ch in ("01-demo", "02-other"):
        (tmp_path / "notebooks" / f"{ch}.ipynb").write_text(json.dumps(nb))
    (tmp_path / "lib" / "iclr26" / "demo.py").write_text("A = 1\n")
    (tmp_path / "lib" / "iclr26" / "harness.py").write_text("B = 1\n")
    (tmp_path / "lib" / "iclr26" / "core.py").write_text("C = 1\n")
    return tmp_path


SEEDS = [0, 100, 200, 300, 400]


def run_record(tmp_path, seed, rank1=1.0, control=4.0, gap=0.9, grad=0.0):
    log = ClaimLog(
        "01-demo",
        claims(),
        scale="ci",
        seed=seed,
        results_dir=tmp_path / f"s{seed}",
        raise_failures=False,
    )
    log.check("rank1", rank1, control=control)
    log.check("gap", gap)
    log.check("grad", grad)
    log.record_data("train", torch.arange(3) + seed)
    log.finish()
    return json.loads(log.path.read_text())


def other_cpu(tmp_path, seed=0, **values):
    """The run at ``seed`` under other CPU kernels, as the sweep command records it."""
    return [
        {
            "seed": seed,
            "capability": "avx2",
            "record": run_record(tmp_path, seed, **values),
        }
    ]


def test_hashes_follow_code_and_imported_modules_not_prose(tmp_path):
    book = make_book(tmp_path)
    h = chapter_hashes(book, "01-demo")
    assert h["library_files"] == [
        "lib/iclr26/demo.py",
        "lib/iclr26/harness.py",
    ]
    nb = json.loads((book / "notebooks" / "01-demo.ipynb").read_text())
    nb["cells"][0]["source"] = ["# 01 · Demo, now with better prose"]
    (book / "notebooks" / "01-demo.ipynb").write_text(json.dumps(nb))
    assert chapter_hashes(book, "01-demo") == h
    (book / "lib" / "iclr26" / "claims.py").write_text("D = 2\n")  # bookkeeping
    assert chapter_hashes(book, "01-demo") == h
    (book / "lib" / "iclr26" / "harness.py").write_text("B = 2\n")
    assert chapter_hashes(book, "01-demo")["library"] != h["library"]
    make_book(tmp_path, code="x = 2")
    assert chapter_hashes(book, "01-demo")["notebook"] != h["notebook"]


LIB = '''"""A module."""
def f(x, scale=2.0):
    """Scale x."""
    return [x * scale for _ in range(3)]
'''
SAME = [  # the same code: reformatted, commented, its docstrings rewrapped
    '''"""A module."""


def f(
    x,
    scale=2.0,
):
    """Scale x."""
    return [
        x * scale  # a new comment
        for _ in range(3)
    ]
''',
    LIB.replace('"""Scale x."""', '"""Scale\n    x: any number, rewrapped."""'),
    LIB.replace('"""A module."""', "# a module"),
]
CHANGED = [
    LIB.replace("2.0", "3.0"),
    LIB.replace("scale", "s"),
    LIB.replace("3", "4"),
    LIB.replace("x * scale", "scale * x"),
]


def write_demo(book, src):
    """The demo chapter with ``src`` as its one code cell and as its library module."""
    nb = {"cells": [{"cell_type": "code", "source": src.splitlines(keepends=True)}]}
    (book / "notebooks" / "01-demo.ipynb").write_text(json.dumps(nb))
    (book / "lib" / "iclr26" / "demo.py").write_text(src)


@pytest.mark.parametrize("src", SAME)
def test_hash_ignores_layout_comments_and_docstrings(tmp_path, src):
    assert normalised_code(src) == normalised_code(LIB)
    book = make_book(tmp_path)
    write_demo(book, LIB)
    h = chapter_hashes(book, "01-demo")
    write_demo(book, src)
    assert chapter_hashes(book, "01-demo") == h


@pytest.mark.parametrize("src", CHANGED)
def test_hash_follows_names_numbers_and_statements(tmp_path, src):
    assert normalised_code(src) != normalised_code(LIB)
    book = make_book(tmp_path)
    write_demo(book, LIB)
    h = chapter_hashes(book, "01-demo")
    write_demo(book, src)
    new = chapter_hashes(book, "01-demo")
    assert new["notebook"] != h["notebook"] and new["library"] != h["library"]


def test_hash_of_code_that_does_not_parse_is_its_text():
    magic = "%matplotlib inline\nx = 1\n"
    assert normalised_code(magic) == magic
    assert normalised_code(magic + " ") != normalised_code(magic)


def test_stale_sweep_is_detected(tmp_path):
    book = make_book(tmp_path)
    h = chapter_hashes(book, "01-demo")
    runs = [
        {"seed": s, "record": run_record(tmp_path, s), "error": None, "wall_s": 1.0}
        for s in SEEDS
    ]
    sweep = sweep_record("01-demo", runs, h, wall_s=5.0, other_cpu=other_cpu(tmp_path))
    assert not is_stale(sweep, h) and sweep_problems("01-demo", sweep, h) == []
    (book / "lib" / "iclr26" / "demo.py").write_text("A = 2\n")
    h2 = chapter_hashes(book, "01-demo")
    assert is_stale(sweep, h2)
    assert any(
        "stale" in p and "library" in p for p in sweep_problems("01-demo", sweep, h2)
    )


def test_missing_short_broken_and_failing_sweeps_are_problems(tmp_path):
    book = make_book(tmp_path)
    h = chapter_hashes(book, "01-demo")
    assert "no seed sweep" in sweep_problems("01-demo", None, h)[0]
    runs = [
        {"seed": s, "record": run_record(tmp_path, s), "error": None, "wall_s": 1.0}
        for s in SEEDS[:3]
    ]
    assert any(
        "at least 5" in p
        for p in sweep_problems("01-demo", sweep_record("01-demo", runs, h, 3), h)
    )
    runs = [
        {"seed": s, "record": run_record(tmp_path, s), "error": None, "wall_s": 1.0}
        for s in range(5)
    ]
    assert any(
        "closer than 100" in p
        for p in sweep_problems("01-demo", sweep_record("01-demo", runs, h, 3), h)
    )
    runs = [
        {
            "seed": s,
            "record": run_record(tmp_path, s, rank1=1.5 if s == 300 else 1.0),
            "error": None,
            "wall_s": 1.0,
        }
        for s in SEEDS
    ]
    runs[4] = {
        "seed": 400,
        "record": None,
        "error": "papermill exited 1: boom",
        "wall_s": 1.0,
    }
    sweep = sweep_record("01-demo", runs, h, 5)
    problems = sweep_problems("01-demo", sweep, h)
    assert any("seed 400 broke" in p for p in problems)
    assert any(
        "'rank1' did not hold at seed(s) 300, 400 (held at 3/5)" in p for p in problems
    )
    assert any(
        "not the ones the notebook declares" in p
        for p in sweep_problems("01-demo", sweep, h, declared_ids=["rank1", "gap"])
    )
    empty = sweep_record(
        "01-demo", [{"seed": s, "record": None, "error": None} for s in SEEDS], h, 1
    )
    assert any("no claim" in p for p in sweep_problems("01-demo", empty, h))


def test_a_sweep_verdict_is_recomputed_from_its_numbers(tmp_path):
    book = make_book(tmp_path)
    h = chapter_hashes(book, "01-demo")
    runs = [
        {"seed": s, "record": run_record(tmp_path, s), "error": None, "wall_s": 1.0}
        for s in SEEDS
    ]
    sweep = sweep_record("01-demo", runs, h, wall_s=5.0)
    rank1 = next(c for c in sweep["claims"] if c["id"] == "rank1")
    rank1["control_measured"][2] = (
        1.1  # a control that passes, with a stored verdict of "held"
    )
    assert rank1["held"][2] is True
    assert any(
        "'rank1' did not hold at seed(s) 200" in p
        for p in sweep_problems("01-demo", sweep, h)
    )


def test_a_record_of_another_seed_is_refused(tmp_path):
    with pytest.raises(ValueError, match="says seed 0"):
        sweep_record(
            "01-demo", [{"seed": 5, "record": run_record(tmp_path, 0)}], {}, 0.0
        )


def test_a_missing_sweep_fails_the_test_command(tmp_path, monkeypatch):
    """tests/test_sweeps.py is what the README's test command runs: it must fail on a
    book whose chapter has no sweep."""
    import test_sweeps

    book = make_book(tmp_path)
    (book / "results").mkdir()
    monkeypatch.setattr(test_sweeps, "ROOT", book)
    monkeypatch.setattr(test_sweeps, "SWEEPS", load_sweeps(book / "results"))
    with pytest.raises(AssertionError, match="no seed sweep"):
        test_sweeps.test_committed_sweep_backs_every_asserted_claim("01-demo")


def test_counts_and_summary_on_hand_made_records(tmp_path):
    book = make_book(tmp_path)
    h = chapter_hashes(book, "01-demo")
    extra = [
        Claim(
            "noise",
            "robust",
            measure="gap",
            op=">",
            threshold=0.0,
            role="paper",
            kind="analogue",
            asserted=False,
            variant_of="rank1",
        ),
        Claim(
            "rank1-power",
            "a planted rank-1 target",
            measure="effective rank",
            op="<",
            threshold=1.2,
            role="check",
            power_of="rank1",
        ),
        Claim(
            "noise-power",
            "a planted gap",
            measure="gap",
            op=">",
            threshold=0.0,
            role="check",
            power_of="noise",
            asserted=False,
        ),
        Claim(
            "oracle",
            "an oracle",
            measure="gap",
            op=">",
            threshold=0.0,
            role="diagnostic",
            asserted=False,
        ),
    ]
    records = []
    for s in SEEDS:
        log = ClaimLog(
            "01-demo",
            claims() + extra,
            scale="ci",
            seed=s,
            results_dir=tmp_path / f"r{s}",
            raise_failures=False,
        )
        log.check("rank1", 1.0, control=4.0)
        log.check("gap", 0.9)
        log.check("grad", 0.0)
        log.check("noise", 1.0 if s in (100, 200) else -1.0)
        log.check("rank1-power", 1.0)
        log.check("noise-power", 1.0)
        log.check("oracle", 1.0)
        log.record_data("train", torch.tensor([s]))
        log.finish()
        records.append(json.loads(log.path.read_text()))
    sweep = sweep_record(
        "01-demo",
        [
            {"seed": s, "record": r, "error": None, "wall_s": 2.0}
            for s, r in zip(SEEDS, records)
        ],
        h,
        wall_s=10.0,
    )
    counts = chapter_counts(records[0], sweep, usable=True)
    assert {k: v for k, v in counts.items() if v} == {
        # rank1: planted case passes, held everywhere, control failing
        "reproduced": 1,
        "headline reproduced": 1,
        # noise: planted case passes, held at 2 of 5
        "not reproduced": 1,
        # gap: no planted case
        "untestable here": 1,
        "checks_passed": 3,
        "checks": 3,
        "paper": 3,
        "headline": 1,
        "diagnostics": 1,
    }
    assert chapter_status(counts) == (
        "headline claims: 1 reproduced, 0 not reproduced, 0 untestable here (of 1); "
        "all 3 paper claims: 1 reproduced, 1 not reproduced, 1 untestable here; "
        "3/3 checks passed"
    )
    verdicts = paper_verdicts(records[0], sweep, usable=True)
    assert verdicts["gap"] == {"bin": "untestable here", "why": "no planted case"}
    assert verdicts["noise"]["why"] == "held at 2/5 seeds, not in the recorded run"
    # an unusable (stale, short, broken) sweep backs nothing
    assert chapter_counts(records[0], sweep, usable=False)["unverified"] == 3
    # a planted case that fails at one seed makes its claim untestable, whatever the
    # claim measured
    broken = json.loads(json.dumps(sweep))
    power = next(c for c in broken["claims"] if c["id"] == "rank1-power")
    power["measured"][3] = 5.0
    v = paper_verdicts(records[0], broken, usable=True)["rank1"]
    assert v["bin"] == "untestable here" and "rank1-power missed" in v["why"]
    assert "300" in v["why"]
    # a recorded run from before roles, or with another threshold, is not backed
    # by the sweep
    old = {
        **records[0],
        "claims": [
            {k: v for k, v in c.items() if k != "role"} for c in records[0]["claims"]
        ],
    }
    assert chapter_counts(old, sweep, usable=True)["reproduced"] == 0
    moved = {
        **records[0],
        "claims": [
            dict(c, threshold=9.0) if c["id"] == "rank1" else c
            for c in records[0]["claims"]
        ],
    }
    assert chapter_counts(moved, sweep, usable=True)["unverified"] == 1
    # a claim in the sweep that the recorded run lacks is counted, as unverified
    fewer = {**records[0], "claims": records[0]["claims"][1:]}
    assert chapter_counts(fewer, sweep, usable=True)["unverified"] == 1
    # the one-claim form: a reported claim that never held is not reproduced when its
    # planted case passes, untestable when it has none
    never = dict(records[0]["claims"][3], held=False)
    swept = {**never, "measured": [-1.0] * 5, "held": [False] * 5}
    assert classify_paper_claim(never, swept, True, records[0]) == "not reproduced"
    assert classify_paper_claim(never, swept, True) == "untestable here"
    path = sweep_path(tmp_path / "results", "01-demo")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(sweep))
    md = scorecard_markdown(
        ["01-demo", "02-other"],
        {("01-demo", "ci"): records[0]},
        load_sweeps(tmp_path / "results"),
        {"01-demo": h, "02-other": chapter_hashes(book, "02-other")},
    )
    summary = md.split("\n## ")[0]
    assert "| 01-demo | 1 · 0 · 0 of 1 | 1 · 1 · 1 of 3 | 3/3 |" in summary
    assert (
        "| **the book** | **1 · 0 · 0 of 1** | **1 · 1 · 1 of 3** |" in summary
        and "**1/2 chapters**" in summary
    )
    assert (
        "| 01-demo | **rank1** converges to rank 1 | reproduced | — | noise: not "
        "reproduced |" in summary
    )
    chapter = md.split("## 01-demo")[1]
    assert "held at 2/5" in chapter and "held at 5/5" in chapter
    assert "planted case of rank1" in chapter and "Diagnostics" in chapter
    assert chapter.index("**rank1** (headline)") < chapter.index("↳ noise")
    assert chapter.index("↳ noise") < chapter.index("| gap ")
    assert "4 (depth 2 instead of 3)" in chapter and "none: a closed form" in chapter
    assert "No recorded run" in md.split("## 02-other")[1]
    assert "✅" not in md and "❌" not in md


def test_sweep_record_errors():
    with pytest.raises(ValueError, match="at least one run"):
        sweep_record("01-demo", [], {}, 0.0)
    with pytest.raises(ValueError, match="each seed once"):
        sweep_record(
            "01-demo",
            [{"seed": 1, "record": None}, {"seed": 1, "record": None}],
            {},
            0.0,
        )


def test_chapters_in_toc_and_load_results_ignore_sweeps(tmp_path):
    book = make_book(tmp_path)
    assert chapters_in_toc(book / "_toc.yml") == ["01-demo", "02-other"]
    run_record(tmp_path, 0)
    (tmp_path / "s0" / "sweeps").mkdir()
    (tmp_path / "s0" / "sweeps" / "01-demo.ci.json").write_text("{}")
    assert list(load_results(tmp_path / "s0")) == [("01-demo", "ci")]


# --------------------------------------------------------------------------------------
# exercise verdicts
# --------------------------------------------------------------------------------------
def square_trial(fn):
    for x in (0.0, 2.0, -3.0):
        if fn(x) != x * x:
            raise AssertionError(
                f"for x = {x} your function gave {fn(x)}; is the sign handled?"
            )
    return "squares match on 0, 2 and -3"


def test_grade_exercise_says_not_done_wrong_and_correct():
    def stub(x):
        raise NotImplementedError

    v = grade_exercise(stub, square_trial)
    assert isinstance(v, ExerciseVerdict) and v.status == "not done yet" and not v
    assert v.startswith("not done yet")
    v = grade_exercise(lambda x: x * abs(x), square_trial)
    assert v.status == "wrong" and "because for x = -3.0" in v and not v
    v = grade_exercise(lambda x: 1 / 0, square_trial)
    assert v.status == "wrong" and "ZeroDivisionError" in v
    v = grade_exercise(lambda x: x * x, square_trial)
    assert v.status == "correct" and v and v == "correct: squares match on 0, 2 and -3"
    with pytest.raises(TypeError, match="function itself"):
        grade_exercise(4, square_trial)
    with pytest.raises(ValueError, match="status"):
        ExerciseVerdict("maybe", "x")


def test_grade_exercise_gives_nothing_for_the_library_answer():
    import iclr26.numerics as nm

    def trial(fn):
        if fn([1.0, 2.0, 4.0], [1.0, 4.0, 16.0]) != pytest.approx(2.0):
            raise AssertionError("the slope of x^2 is 2")
        return "slopes match"

    def honest(x, y):
        lx, ly = np.log(x), np.log(y)
        return float(np.polyfit(lx, ly, 1)[0])

    alias = nm.loglog_slope

    def cheat(x, y):
        return alias(x, y)  # however it is reached

    def cheat_import(x, y):
        from iclr26.numerics import loglog_slope

        return loglog_slope(x, y)

    forbidden = [nm.loglog_slope]
    assert grade_exercise(honest, trial, forbidden).status == "correct"
    for fn in (cheat, cheat_import, nm.loglog_slope):
        v = grade_exercise(fn, trial, forbidden)
        assert v.status == "not done yet" and v.used_library and not v
        assert "numerics.loglog_slope" in v

    # the trial may use the answer itself; only calls while fn runs count
    def trial_using_it(fn):
        want = nm.loglog_slope([1.0, 2.0], [1.0, 2.0])
        assert fn([1.0, 2.0], [1.0, 2.0]) == pytest.approx(want), "off"
        return "ok"

    assert grade_exercise(honest, trial_using_it, forbidden).status == "correct"
    with pytest.raises(TypeError, match="Python functions"):
        grade_exercise(honest, trial, [np.log])
