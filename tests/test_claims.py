import json

import numpy as np
import pytest
import torch

from iclr26.claims import Claim, ClaimLog, chapter_status, chapters_in_toc, load_results, scorecard_markdown


def claims():
    return [Claim("rank1", "converges to rank 1", measure="effective rank", op="<", threshold=1.2, kind="analogue"),
            Claim("gap", "decoupled", measure="gap", op=">=", threshold=0.5, kind="faithful", paper="0.9")]


def test_claim_validation():
    with pytest.raises(ValueError, match="op"):
        Claim("a", "t", measure="m", op="=<", threshold=1, kind="faithful")
    with pytest.raises(ValueError, match="kind"):
        Claim("a", "t", measure="m", op="<", threshold=1, kind="exact")
    with pytest.raises(TypeError, match="threshold"):
        Claim("a", "t", measure="m", op="<", threshold=float("nan"), kind="faithful")
    with pytest.raises(ValueError, match="id"):
        Claim("a b", "t", measure="m", op="<", threshold=1, kind="faithful")


def test_log_records_not_run_then_held_and_failed(tmp_path):
    log = ClaimLog("01-demo", claims(), scale="ci", seed=3, results_dir=tmp_path)
    rec = json.loads((tmp_path / "01-demo.ci.json").read_text())
    assert [c["held"] for c in rec["claims"]] == [None, None]
    assert log.check("rank1", torch.tensor(1.05)) == pytest.approx(1.05)
    with pytest.raises(AssertionError, match=r"claim 'gap' did not hold: gap = 0.1, needed >= 0.5"):
        log.check("gap", np.float64(0.1))
    log.finish()
    rec = json.loads((tmp_path / "01-demo.ci.json").read_text())
    assert [c["held"] for c in rec["claims"]] == [True, False]
    assert rec["seed"] == 3 and rec["runtime_s"] > 0
    assert "❌ failed" in log.summary() and "✅ held" in log.summary()
    assert "effective rank" in log.table()


def test_nan_never_holds(tmp_path):
    log = ClaimLog("01-demo", claims(), scale="ci", seed=0, results_dir=tmp_path)
    with pytest.raises(AssertionError):
        log.check("rank1", float("nan"))


def test_log_errors(tmp_path):
    with pytest.raises(ValueError, match="NN-slug"):
        ClaimLog("demo", claims(), scale="ci", seed=0, results_dir=tmp_path)
    with pytest.raises(ValueError, match="unique"):
        ClaimLog("01-demo", claims() + claims()[:1], scale="ci", seed=0, results_dir=tmp_path)
    log = ClaimLog("01-demo", claims(), scale="ci", seed=0, results_dir=tmp_path)
    with pytest.raises(KeyError, match="declared"):
        log.check("nope", 1.0)
    with pytest.raises(TypeError, match="real number"):
        log.check("rank1", "1.0")
    with pytest.raises(TypeError, match="real number"):
        log.check("rank1", torch.ones(2))


def test_results_dir_found_from_book_root(tmp_path, monkeypatch):
    monkeypatch.delenv("ICLR26_RESULTS_DIR", raising=False)
    (tmp_path / "_toc.yml").write_text("format: jb-book\n")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    log = ClaimLog("01-demo", claims(), scale="ci", seed=0)
    assert log.path == tmp_path / "results" / "01-demo.ci.json"


def test_scorecard_shows_unrun_chapters_as_not_run(tmp_path):
    (tmp_path / "_toc.yml").write_text("- file: notebooks/01-demo\n- file: notebooks/02-other\n")
    chapters = chapters_in_toc(tmp_path / "_toc.yml")
    assert chapters == ["01-demo", "02-other"]
    log = ClaimLog("01-demo", claims(), scale="ci", seed=0, results_dir=tmp_path / "results")
    log.check("rank1", 1.0)
    results = load_results(tmp_path / "results")
    md = scorecard_markdown(chapters, results)
    assert "| 02-other | — | — | — | not run |" in md
    assert "No recorded run" in md.split("## 02-other")[1]
    assert "✅ held" in md.split("## 01-demo")[1] and "| not run |" in md.split("## 01-demo")[1]  # 'gap' never checked
    assert chapter_status(chapters, results) == {"01-demo": "1/2 held, 1 not run", "02-other": "not run"}


def test_reported_claims_record_without_raising(tmp_path):
    reported = Claim("noise", "more robust to noise", measure="accuracy gap", op=">", threshold=0.0,
                     kind="analogue", asserted=False)
    log = ClaimLog("01-demo", claims() + [reported], scale="ci", seed=0, results_dir=tmp_path)
    assert log.check("noise", -1.5) == -1.5  # does not raise
    assert "reported, not asserted" in log.table()
    assert "❌ not reproduced (reported)" in log.summary()
    results = load_results(tmp_path)
    assert "❌ not reproduced (reported)" in scorecard_markdown(["01-demo"], results)
    assert chapter_status(["01-demo"], results) == {"01-demo": "0/3 held, 1 not reproduced (reported), 2 not run"}


def test_pipes_in_claim_text_do_not_break_tables(tmp_path):
    c = Claim("abs", "|x − y| is small", measure="max |x − y|", op="<", threshold=1.0, kind="faithful")
    log = ClaimLog("01-demo", [c], scale="ci", seed=0, results_dir=tmp_path)
    log.check("abs", 0.5)
    row = log.table().splitlines()[2]
    assert row.count("|") - row.count("\\|") == 7  # 6 columns, only the escaped pipes are literal
    md = scorecard_markdown(["01-demo"], load_results(tmp_path))
    assert "\\|x − y\\| is small" in md
