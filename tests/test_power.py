"""The power machinery: planted and null cases, headline claims and their variants,
diagnostics, the three outcomes, and what a committed sweep must show (independent
seeds, verdicts that survive other CPU kernels, nothing that held left unasserted
without a reason)."""

import json

import pytest
import torch

from iclr26 import Claim, ClaimLog, scale_preset, seeded
from iclr26.claims import check_links, fingerprint
from iclr26.scorecard import (
    chapter_hashes,
    cpu_flips,
    paper_verdicts,
    sweep_problems,
    sweep_record,
)

SEEDS = [0, 100, 200, 300, 400]


def paper(cid, **kw):
    base = dict(
        measure="m",
        op=">=",
        threshold=0.5,
        role="paper",
        kind="analogue",
        control="the mechanism removed",
    )
    return Claim(cid, "a claim", **{**base, **kw})


def check(cid, **kw):
    return Claim(
        cid,
        "a check",
        **{**dict(measure="m", op=">=", threshold=0.5, role="check"), **kw},
    )


def chapter():
    return [
        paper("main", headline=True),
        paper("main-v1", variant_of="main", asserted=False),
        check("main-power", power_of="main"),
        check("main-null", null_of="main", op="<"),
        Claim(
            "ctrl",
            "a control, shown",
            measure="m",
            op=">=",
            threshold=0.5,
            role="diagnostic",
            asserted=False,
        ),
    ]


# --------------------------------------------------------------------------------------
# declaring
# --------------------------------------------------------------------------------------
def test_new_fields_are_checked_where_they_are_declared():
    with pytest.raises(ValueError, match="headline is for paper claims"):
        check("c", headline=True)
    with pytest.raises(ValueError, match="power_of is for checks"):
        paper("p", power_of="x")
    with pytest.raises(ValueError, match="not both"):
        paper("p", headline=True, variant_of="q")
    with pytest.raises(ValueError, match="not both"):
        check("c", power_of="a", null_of="b")
    with pytest.raises(ValueError, match="takes no control"):
        check("c", power_of="a", control="x")
    with pytest.raises(ValueError, match="why_not_asserted explains a reported"):
        paper("p", why_not_asserted="because")
    with pytest.raises(ValueError, match="must be a claim id"):
        check("c", power_of="not an id")
    with pytest.raises(TypeError, match="headline must be True or False"):
        paper("p", headline="yes")
    with pytest.raises(TypeError, match="no_power must be a str"):
        paper("p", no_power=1)
    with pytest.raises(ValueError, match="diagnostic .* never asserted"):
        Claim("d", "t", measure="m", op="<", threshold=1, role="diagnostic")
    with pytest.raises(ValueError, match="diagnostic takes no control"):
        Claim(
            "d",
            "t",
            measure="m",
            op="<",
            threshold=1,
            role="diagnostic",
            asserted=False,
            control="x",
        )


def test_links_between_claims_are_validated():
    check_links(chapter())
    with pytest.raises(ValueError, match="one to three .* headline"):
        check_links([paper("a"), paper("b")])
    with pytest.raises(ValueError, match="one to three"):
        check_links([paper(f"h{i}", headline=True) for i in range(4)])
    with pytest.raises(ValueError, match="variant_of='nope' must name a headline"):
        check_links([paper("h", headline=True), paper("v", variant_of="nope")])
    with pytest.raises(ValueError, match="must name a headline"):  # not a headline
        check_links([paper("h", headline=True), paper("o"), paper("v", variant_of="o")])
    with pytest.raises(ValueError, match="power_of='nope' must name a paper claim"):
        check_links([paper("h", headline=True), check("c", power_of="nope")])
    with pytest.raises(ValueError, match="declare op='>=', threshold=0.5"):
        check_links([paper("h", headline=True), check("c", power_of="h", op=">")])
    with pytest.raises(ValueError, match="declare op='>=', threshold=0.5"):
        check_links([paper("h", headline=True), check("c", power_of="h", threshold=1)])
    with pytest.raises(ValueError, match="declare op='<', threshold=0.5"):
        check_links([paper("h", headline=True), check("c", null_of="h")])
    with pytest.raises(ValueError, match="drop its no_power"):
        check_links([paper("h", headline=True, no_power="x"), check("c", power_of="h")])
    # ClaimLog refuses a chapter whose links do not hold
    with pytest.raises(ValueError, match="headline"):
        ClaimLog("01-demo", [paper("a")], scale="ci", seed=0, results_dir="/tmp/x")


def test_a_diagnostic_is_recorded_and_never_raises(tmp_path):
    log = ClaimLog("01-demo", chapter(), scale="ci", seed=0, results_dir=tmp_path)
    line = log.check("ctrl", 0.9)
    assert "shown (meets the threshold)" in line.line
    assert "shown (misses it)" in log.check("ctrl", 0.1).line
    planted = log.check("main-power", 0.9)
    assert "planted case of main" in planted.line


def test_summary_says_which_claims_are_untestable_and_why(tmp_path):
    cs = chapter() + [paper("other", no_power="no ideal tracker exists here")]
    log = ClaimLog(
        "01-demo", cs, scale="ci", seed=0, results_dir=tmp_path, raise_failures=False
    )
    log.check("main", 0.9, control=0.1)
    log.check("main-power", 0.2)  # the planted case misses: main is untestable
    log.check("main-null", 0.1)
    out = log.summary()
    assert "Untestable here: 3 of 3 paper claims" in out
    assert "- main: its planted case main-power = 0.2 misses" in out
    assert "- main-v1: no planted case" in out
    assert "- other: no planted case: no ideal tracker exists here" in out
    assert out.index("| main |") < out.index("| main-power |") < out.index("| ctrl |")
    table = log.table()
    assert "main-power" in table.split("**Other claims")[0]  # main's planted case
    assert "none: no ideal tracker exists here" in table
    assert "**Diagnostics**" in table


# --------------------------------------------------------------------------------------
# the three outcomes, over a sweep
# --------------------------------------------------------------------------------------
def run(tmp_path, seed, main=0.9, power=0.9, null=0.1, v1=0.9, cap=""):
    log = ClaimLog(
        "01-demo",
        chapter(),
        scale="ci",
        seed=seed,
        results_dir=tmp_path / f"s{seed}{cap}",
        raise_failures=False,
    )
    log.check("main", main, control=0.1)
    log.check("main-v1", v1, control=0.1)
    log.check("main-power", power)
    log.check("main-null", null)
    log.check("ctrl", 0.7)
    log.record_data("train", torch.tensor([seed, 1]))
    log.record_data("test", torch.tensor([seed, 2]))
    log.finish()
    return json.loads(log.path.read_text())


def sweep_of(tmp_path, records, other=None, h=None):
    runs = [
        {"seed": r["seed"], "record": r, "error": None, "wall_s": 1.0} for r in records
    ]
    other = (
        other
        if other is not None
        else [{"seed": 0, "capability": "avx2", "record": records[0]}]
    )
    return sweep_record(
        "01-demo", runs, h or {"notebook": "n", "library": "l"}, 5.0, other_cpu=other
    )


H = {"notebook": "n", "library": "l"}


def test_the_three_outcomes(tmp_path):
    records = [run(tmp_path, s, v1=0.1 if s == 200 else 0.9) for s in SEEDS]
    sweep = sweep_of(tmp_path, records)
    v = paper_verdicts(records[0], sweep, usable=True)
    assert v["main"] == {"bin": "reproduced", "why": ""}
    assert v["main-v1"]["bin"] == "untestable here"  # no planted case of its own
    # the planted case misses at one seed: untestable, though the method held
    records = [run(tmp_path, s, power=0.2 if s == 300 else 0.9) for s in SEEDS]
    v = paper_verdicts(records[0], sweep_of(tmp_path, records), usable=True)
    assert v["main"]["bin"] == "untestable here"
    assert v["main"]["why"] == "its planted case main-power missed the threshold at 300"
    # the null case meets the threshold: the measure cannot tell, untestable
    records = [run(tmp_path, s, null=0.8) for s in SEEDS]
    v = paper_verdicts(records[0], sweep_of(tmp_path, records), usable=True)
    assert v["main"]["bin"] == "untestable here" and "null case" in v["main"]["why"]
    # the planted case passes and the method misses somewhere: not reproduced
    records = [run(tmp_path, s, main=0.3 if s == 100 else 0.9) for s in SEEDS]
    v = paper_verdicts(records[0], sweep_of(tmp_path, records), usable=True)
    assert v["main"] == {"bin": "not reproduced", "why": "held at 4/5 seeds"}


def test_a_fresh_sweep_must_leave_nothing_that_held_unasserted(tmp_path):
    records = [run(tmp_path, s) for s in SEEDS]  # main-v1 (reported) holds at 5/5
    problems = sweep_problems("01-demo", sweep_of(tmp_path, records), H)
    assert any(
        "reported paper claim 'main-v1' held at every seed" in p for p in problems
    )
    # with a reason it may stay reported, and shows as "held, not asserted"
    cs = [
        c
        if c.id != "main-v1"
        else Claim(**{**c.__dict__, "why_not_asserted": "a first design, kept visible"})
        for c in chapter()
    ]
    log = ClaimLog(
        "01-demo",
        cs,
        scale="ci",
        seed=0,
        results_dir=tmp_path / "w",
        raise_failures=False,
    )
    for cid, v in (("main", 0.9), ("main-v1", 0.9)):
        log.check(cid, v, control=0.1)
    log.check("main-power", 0.9)
    log.check("main-null", 0.1)
    log.check("ctrl", 0.7)
    rec = json.loads(log.path.read_text())
    decl = next(c for c in rec["claims"] if c["id"] == "main-v1")
    assert decl["why_not_asserted"] == "a first design, kept visible"


def test_sweep_seeds_must_draw_different_data(tmp_path):
    records = [run(tmp_path, s) for s in SEEDS]
    assert sweep_problems("01-demo", sweep_of(tmp_path, records), H) == [
        p
        for p in sweep_problems("01-demo", sweep_of(tmp_path, records), H)
        if "main-v1" in p
    ]
    # seed 100 trains on seed 0's test draw (the bug a sweep must catch)
    records[1]["data"]["train"] = records[0]["data"]["test"]
    problems = sweep_problems("01-demo", sweep_of(tmp_path, records), H)
    assert any(
        "seeds 0 and 100 drew the same data ('test' at 0, 'train' at 100)" in p
        for p in problems
    )
    records[2]["data"] = {}
    problems = sweep_problems("01-demo", sweep_of(tmp_path, records), H)
    assert any("seed 200 recorded no fingerprint" in p for p in problems)


def test_fingerprints_see_values_shapes_and_dtypes():
    a = torch.arange(6.0)
    assert fingerprint(a) == fingerprint(a.clone()) == fingerprint(a.numpy())
    assert fingerprint(a) != fingerprint(a + 1e-6)
    assert fingerprint(a) != fingerprint(a.reshape(2, 3))
    assert fingerprint(a) != fingerprint(a.double())
    assert fingerprint(a, a) != fingerprint(a)
    assert fingerprint(["a", "b"]) != fingerprint(["a", "c"])  # texts, too
    with pytest.raises(TypeError):
        fingerprint([{"a": 1}])


def test_a_verdict_that_flips_under_other_cpu_kernels_is_not_asserted(tmp_path):
    records = [run(tmp_path, s) for s in SEEDS]
    flipped = run(tmp_path, 0, main=0.49, cap="avx2")  # last digits cross the bar
    sweep = sweep_of(
        tmp_path, records, other=[{"seed": 0, "capability": "avx2", "record": flipped}]
    )
    assert cpu_flips(sweep) == [("main", "avx2", 0)]
    problems = sweep_problems("01-demo", sweep, H)
    assert any(
        "asserted claim 'main' changes verdict at seed 0 under avx2" in p
        for p in problems
    )
    # a sweep with no run under other kernels cannot show it
    problems = sweep_problems("01-demo", sweep_of(tmp_path, records, other=[]), H)
    assert any("no run under other CPU kernels" in p for p in problems)


# --------------------------------------------------------------------------------------
# overrides, hashes, seeding
# --------------------------------------------------------------------------------------
def test_overrides_change_one_run_and_are_recorded(tmp_path):
    kw = dict(
        ci=dict(n=8, lr=0.1, sizes=(8, 16), name="grid"),
        full=dict(n=64, lr=0.1, sizes=(64,), name="grid"),
    )
    cfg = scale_preset("ci", overrides={"n": 16, "lr": 1, "sizes": [4]}, **kw)
    assert (cfg.n, cfg.lr, cfg.sizes, cfg.name) == (16, 1.0, (4,), "grid")
    assert cfg.overrides == {"n": 16, "lr": 1, "sizes": [4]}
    assert scale_preset("ci", **kw).overrides == {}
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['m'\].*'lr', 'n'"):
        scale_preset("ci", overrides={"m": 1}, **kw)
    with pytest.raises(TypeError, match=r"OVERRIDES\['n'\] must be like .* 8 \(int\)"):
        scale_preset("ci", overrides={"n": 1.5}, **kw)
    with pytest.raises(TypeError, match="OVERRIDES must be a dict"):
        scale_preset("ci", overrides=[("n", 1)], **kw)
    with pytest.raises(ValueError, match="name the preset itself"):
        scale_preset("ci", ci=dict(scale=1), full=dict(scale=2))
    log = ClaimLog(
        "01-demo",
        chapter(),
        scale="ci",
        seed=0,
        results_dir=tmp_path,
        overrides={"sizes": (4,)},
    )
    assert json.loads(log.path.read_text())["overrides"] == {"sizes": [4]}
    with pytest.raises(TypeError, match="overrides must be a dict"):
        ClaimLog(
            "01-demo",
            chapter(),
            scale="ci",
            seed=0,
            results_dir=tmp_path,
            overrides=[1],
        )


def test_a_committed_sweep_with_overrides_is_refused(tmp_path):
    records = [run(tmp_path, s) for s in SEEDS]
    runs = [{"seed": r["seed"], "record": r, "error": None} for r in records]
    sweep = sweep_record("01-demo", runs, H, 1.0, overrides={"n": 4})
    assert any("ran with overrides" in p for p in sweep_problems("01-demo", sweep, H))


def test_a_module_imported_only_indirectly_is_hashed(tmp_path):
    """Chapter 17 trains through another chapter's package: a change there must make
    its sweep stale."""
    lib = tmp_path / "lib" / "iclr26"
    (lib / "siren").mkdir(parents=True)
    (lib / "revisual_r1").mkdir()
    (tmp_path / "notebooks").mkdir()
    nb = {"cells": [{"cell_type": "code", "source": ["from iclr26 import siren\n"]}]}
    (tmp_path / "notebooks" / "17-siren.ipynb").write_text(json.dumps(nb))
    (lib / "siren" / "__init__.py").write_text("from .model import train\n")
    (lib / "siren" / "model.py").write_text(
        "from ..revisual_r1.grpo import grpo_advantages\nfrom ..core import seeded\n"
    )
    (lib / "revisual_r1" / "__init__.py").write_text("")
    (lib / "revisual_r1" / "grpo.py").write_text(
        "def grpo_advantages(r):\n    return r\n"
    )
    (lib / "core.py").write_text("X = 1\n")
    (lib / "claims.py").write_text("Y = 1\n")
    (lib / "unrelated.py").write_text("Z = 1\n")
    h = chapter_hashes(tmp_path, "17-siren")
    assert h["library_files"] == [
        "lib/iclr26/core.py",
        "lib/iclr26/revisual_r1/__init__.py",
        "lib/iclr26/revisual_r1/grpo.py",
        "lib/iclr26/siren/__init__.py",
        "lib/iclr26/siren/model.py",
    ]
    (lib / "revisual_r1" / "grpo.py").write_text(
        "def grpo_advantages(r):\n    return -r\n"
    )
    assert chapter_hashes(tmp_path, "17-siren")["library"] != h["library"]
    sweep = {"hashes": h, "seeds": SEEDS, "runs": [], "claims": []}
    problems = sweep_problems("17-siren", sweep, chapter_hashes(tmp_path, "17-siren"))
    assert any("stale" in p and "library" in p for p in problems)
    (lib / "unrelated.py").write_text("Z = 2\n")
    (lib / "claims.py").write_text("Y = 2\n")
    assert chapter_hashes(tmp_path, "17-siren") == chapter_hashes(tmp_path, "17-siren")


def test_the_colab_install_cell_is_not_hashed_and_nothing_hides_in_it(tmp_path):
    """The install cell runs only in Colab: pointing it at another release leaves the
    sweep fresh; a statement added beside its guard counts like any code."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "lib" / "iclr26").mkdir(parents=True)
    (tmp_path / "lib" / "iclr26" / "core.py").write_text("X = 1\n")

    def hashes(install: str) -> str:
        cells = [install, "from iclr26 import core\nx = 1\n"]
        nb = {"cells": [{"cell_type": "code", "source": [c]} for c in cells]}
        (tmp_path / "notebooks" / "01-demo.ipynb").write_text(json.dumps(nb))
        return chapter_hashes(tmp_path, "01-demo")["notebook"]

    guard = 'import sys\n\nif "google.colab" in sys.modules:\n    pip("{}")\n'
    h = hashes(guard.format("git+https://github.com/a/b@v0.1.0"))
    assert hashes(guard.format("git+https://github.com/fork/b@v9")) == h
    assert hashes(guard.format("x") + "SEED = 1\n") != h
    assert hashes(guard.replace("in sys", "not in sys").format("x")) != h


def test_seeded_blocks_depend_on_their_seed_only():
    before = torch.get_rng_state()
    with seeded(7):
        a = torch.nn.Linear(3, 2).weight.detach().clone()
    assert torch.equal(torch.get_rng_state(), before)  # the caller's stream untouched
    torch.rand(100)  # whatever ran before
    with seeded(7):
        b = torch.nn.Linear(3, 2).weight.detach().clone()
    assert torch.equal(a, b)
    with seeded(8):
        c = torch.nn.Linear(3, 2).weight.detach().clone()
    assert not torch.equal(a, c)
    with pytest.raises(TypeError):
        with seeded(1.5):
            pass
