"""The grader's guard (iclr26.grading): a student's function that calls the book's own
answer scores nothing, one written from torch operations is graded as before.

The classroom kit's end-to-end test (tests/test_classroom.py, ``-m classroom``) grades
such a submission with otter for every chapter; these tests are the fast half: every
exercise's library answer passes the chapter's check when nothing guards it, and is
caught when the guard runs."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

from iclr26.grading import without_library

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "_classroom_tests", ROOT / "tests" / "test_classroom.py"
)
_classroom_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_classroom_tests)
CHEATS, cheat_cell = _classroom_tests.CHEATS, _classroom_tests.cheat_cell

# each exercise's check, by the stub function it grades
CHECKS = {
    "my_effective_rank": "deep_mf.check_effective_rank",
    "my_factor_gradients": "deep_mf.check_factor_gradients",
    "my_depth": "absignsgd.schedules.check_expected_depth",
    "my_update": "fzoo.exercises.check_fzoo_update",
    "my_theta": "al_trees.core.check_disagreement_coefficient",
    "my_boost": "ilnn.exercise.check_boost_to_origin",
    "my_gl_weights": "fsnn.kernels.check_gl_weights",
    "my_cond_cov": "behaviour_rnn.exercise.check_cond_cov",
    "my_spread": "paano.evaluate.check_patch_scores_to_points",
    "my_threshold": "compmarkgs.exercise.check_detection_threshold",
    "my_ause": "horseshoe_splat.metrics.check_ause",
    "my_depth_from_flow": "world_model_3wm.identities.check_depth_from_flow",
    "my_soft_optimal": "reward_distill.toy.check_soft_optimal",
    "my_project_out": "dial.method.check_project_out",
    "my_concept_maps": "ivpt.metrics.check_concept_maps",
    "my_mask": "gneissweb.dedup.check_duplicate_mask",
    "my_acyc_grad": "sci_kg.graph.check_acyclicity_grad",
    "my_sketch": "siren.data.check_sketch",
    "my_advantages": "revisual_r1.grpo.check_advantages",
    "my_wjsd": "chronoplay.drift.check_weighted_jsd",
}


def _stub_names() -> set[str]:
    names = set()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code" and "exercise" in cell["metadata"].get(
                "tags", []
            ):
                tree = ast.parse("".join(cell["source"]))
                names |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return names


def _check(name: str):
    module, fn = CHECKS[name].rsplit(".", 1)
    return getattr(importlib.import_module(f"iclr26.{module}"), fn)


def _cheat(name: str):
    namespace: dict = {}
    exec(cheat_cell([name]), namespace)
    return namespace[name]


def test_every_exercise_has_a_library_answer_to_catch():
    assert _stub_names() == set(CHEATS) == set(CHECKS)


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_library_answers_pass_the_checks_unguarded(name):
    # what the guard is for: the check alone cannot tell the library's answer from
    # the student's work
    assert _check(name)(_cheat(name)).status == "correct"


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_the_guard_catches_the_library_answer(name):
    verdict = without_library(lambda f: _check(name)(f), [_cheat(name)])
    assert verdict.status == "not done yet", verdict
    assert "calls the book's own `iclr26." in verdict


def test_the_guard_grades_own_work_and_allowed_helpers_as_before():
    from iclr26 import deep_mf as dmf

    def my_effective_rank(W):  # written from torch operations
        s = torch.linalg.svdvals(W)
        p = s / s.sum(-1, keepdim=True)
        return torch.exp(-(p * torch.log(p.clamp_min(1e-30))).sum(-1))

    assert without_library(dmf.check_effective_rank, [my_effective_rank]) == (
        dmf.check_effective_rank(my_effective_rank)
    )
    assert without_library(dmf.check_effective_rank, [my_effective_rank]).status == (
        "correct"
    )
    # a helper the reference solution uses is open to the student too
    cheat = _cheat("my_effective_rank")
    allowed = without_library(dmf.check_effective_rank, [cheat], ["effective_rank"])
    assert allowed.status == "correct"

    # the stub is still "not done yet", for its own reason
    def stub(W):
        raise NotImplementedError

    verdict = without_library(dmf.check_effective_rank, [stub])
    assert verdict.status == "not done yet" and "calls the book" not in verdict


def test_the_guard_leaves_the_profiler_as_it_found_it():
    from iclr26 import deep_mf as dmf

    before = sys.getprofile()
    without_library(dmf.check_effective_rank, [_cheat("my_effective_rank")])
    assert sys.getprofile() is before
    with pytest.raises(ZeroDivisionError):  # an error in the check itself propagates
        without_library(lambda f: 1 / 0, [_cheat("my_effective_rank")])
    assert sys.getprofile() is before
