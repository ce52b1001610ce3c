"""Unit tests for iclr26.al_trees (chapter 04): exact tree classes, disagreement
coefficient, CAL.

Everything here is discrete (labels, counts), so there is no gradient to check; the
tests compare each vectorised function with a naive loop written from the
definition instead.
"""

import math

import pytest
import torch
from nbexercise import exercise_parts

from iclr26.al_trees import (
    VersionSpace,
    antidiagonal_points,
    cal_active_learn,
    check_disagreement_coefficient,
    disagreement_coefficient,
    disagreement_radius,
    enumerate_trees,
    greedy_tree_pool_error,
    grid_points,
    hamming_to,
    passive_labels_to_collapse,
    sample_target,
    theta_from_radius,
    threshold_splits,
    tree_count_formula,
)
from iclr26.numerics import loglog_slope


def naive_tree(X, f, t, left, right):
    """A depth-2 tree by hand: root x_f > t; each child is a label (0/1) or
    (g, s, label_if_right)."""
    out = []
    for x in X.tolist():
        child = right if x[f] > t else left
        if isinstance(child, int):
            out.append(bool(child))
        else:
            g, s, lab = child
            out.append(bool(lab) if x[g] > s else not bool(lab))
    return torch.tensor(out)


def test_points_shapes_and_values():
    G = grid_points(4)
    assert G.shape == (16, 2) and G.dtype == torch.float32
    assert set(map(tuple, G.tolist())) == {(i, j) for i in range(4) for j in range(4)}
    assert grid_points(3, dim=3).shape == (27, 3)
    A = antidiagonal_points(5)
    assert A.tolist() == [[0, 4], [1, 3], [2, 2], [3, 1], [4, 0]]


@pytest.mark.parametrize("k", [3, 4, 6])
def test_enumeration_count_matches_formula_and_dedup_is_exact(k):
    X = grid_points(k)
    raw = enumerate_trees(X, depth=2, unique=False)
    assert raw.shape == (tree_count_formula(k), k * k) and raw.dtype == torch.bool
    uniq = enumerate_trees(X, depth=2)
    # hash de-duplication agrees with a full sort
    assert uniq.shape == torch.unique(raw, dim=0).shape
    assert torch.unique(uniq, dim=0).shape == uniq.shape  # no duplicates left
    assert set(map(tuple, uniq.tolist())) == set(map(tuple, raw.tolist()))


def test_enumerated_trees_contain_hand_coded_trees():
    X = grid_points(5)
    P = enumerate_trees(X, depth=2)
    rows = set(map(tuple, P.tolist()))
    for f, t, left, right in [
        (0, 1.5, 0, (1, 2.5, 1)),
        (1, 0.5, (0, 3.5, 0), (0, 1.5, 1)),
        (0, 3.5, 1, 0),
    ]:
        assert tuple(naive_tree(X, f, t, left, right).tolist()) in rows
    # a path that reuses the root's feature is NOT in the distinct-feature class, but is
    # in the relaxed one
    strip = naive_tree(X, 0, 1.5, 0, (0, 2.5, 0))  # 1 exactly on the strip x_0 = 2
    assert tuple(strip.tolist()) not in rows
    assert tuple(strip.tolist()) in set(
        map(tuple, enumerate_trees(X, 2, distinct_features=False).tolist())
    )


def test_depths_nest_and_splits():
    X = grid_points(4)
    sizes = [enumerate_trees(X, depth=d).shape[0] for d in (0, 1, 2)]
    assert sizes[0] == 2 and sizes[0] < sizes[1] < sizes[2]
    splits = threshold_splits(X)
    assert [s.shape for s in splits] == [(3, 16), (3, 16)]


def test_hamming_matches_naive():
    P = enumerate_trees(grid_points(4))
    h = P[7]
    naive = torch.tensor([int((p != h).sum()) for p in P])
    assert torch.equal(hamming_to(P, h), naive)


def naive_rho(P, h):
    n = P.shape[1]
    d = (P != h).sum(1)
    return torch.tensor(
        [
            min(
                [int(d[j]) for j in range(P.shape[0]) if P[j, x] != h[x]],
                default=math.inf,
            )
            / n
            for x in range(n)
        ],
        dtype=torch.float64,
    )


def naive_theta(rho, r0):
    n = rho.numel()
    radii = (
        [r / 1000 for r in range(1, 1001) if r / 1000 >= r0]
        + [r0]
        + [float(r) for r in rho if r >= r0 and math.isfinite(r)]
    )
    return max(float((rho <= r + 1e-12).sum()) / n / r for r in radii)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_disagreement_radius_and_theta_match_definition(seed):
    g = torch.Generator().manual_seed(seed)
    P = enumerate_trees(grid_points(4))
    h = P[torch.randint(P.shape[0], (1,), generator=g).item()]
    # a small chunk exercises the early-exit loop
    rho = disagreement_radius(P, h, chunk=37)
    assert torch.allclose(rho, naive_rho(P, h))
    theta, _ = disagreement_coefficient(P, h)
    assert theta == pytest.approx(naive_theta(rho, 1 / 16))
    assert 1.0 - 1e-9 <= theta <= 16 + 1e-9  # always between 1 and 1/r0


def test_theta_of_thresholds_on_a_line_is_two():
    line = torch.arange(40, dtype=torch.float32)[:, None]
    P = enumerate_trees(line, depth=1)
    target = line[:, 0] > 19.5
    theta, rho = disagreement_coefficient(P, target)
    assert theta == pytest.approx(2.0)
    assert rho.min() == pytest.approx(1 / 40)


def test_antidiagonal_isolates_every_point():
    for n in (8, 13):
        P = enumerate_trees(antidiagonal_points(n))
        theta, rho = disagreement_coefficient(P, torch.zeros(n, dtype=torch.bool))
        assert theta == pytest.approx(n) and torch.allclose(
            rho, torch.full((n,), 1 / n, dtype=torch.float64)
        )


def test_theta_from_radius_errors():
    with pytest.raises(ValueError):
        theta_from_radius(torch.rand(5), r0=0.0)
    with pytest.raises(TypeError):
        theta_from_radius(torch.rand(2, 2), r0=0.1)


@pytest.mark.parametrize("seed", [0, 1])
def test_cal_reaches_target_and_only_queries_inside_dis(seed):
    g = torch.Generator().manual_seed(seed)
    P = enumerate_trees(grid_points(6))
    y = sample_target(P, g)
    order = torch.randperm(36, generator=g)
    labels, queried, alive = cal_active_learn(P, y, order)
    assert labels == int(queried.sum()) and alive.shape == (P.shape[0],)
    assert (P[alive] == y).all()  # zero error: every surviving hypothesis is the target
    # replay: every query was in DIS(V) at its time, every skip was not
    vs = VersionSpace(P)
    for i in order.tolist():
        assert vs.disagrees(i) == bool(queried[i])
        if queried[i]:
            vs.update(i, bool(y[i]))
        else:
            assert vs.predict(i) == bool(y[i])
    assert vs.collapsed()


def test_passive_matches_naive_first_disagreement():
    g = torch.Generator().manual_seed(3)
    P = enumerate_trees(grid_points(5))
    y = sample_target(P, g)
    order = torch.randperm(25, generator=g)
    pos = torch.empty(25, dtype=torch.long)
    pos[order] = torch.arange(25)
    wrong = P[(P != y).any(1)]
    naive = max(int(pos[(w != y)].min()) + 1 for w in wrong)
    vs = VersionSpace(P)
    assert passive_labels_to_collapse(vs, y, order) == naive
    # a VersionSpace is reset and reusable
    assert passive_labels_to_collapse(vs, y, order) == naive


def test_bad_input_errors():
    P = enumerate_trees(grid_points(3))
    with pytest.raises(ValueError, match="k .points per axis. must be an int >= 2"):
        grid_points(1)
    with pytest.raises(TypeError, match="must be an int"):
        grid_points(4.0)  # a float where an int is meant
    with pytest.raises(TypeError, match="must be an int"):
        antidiagonal_points(True)
    with pytest.raises(ValueError):
        enumerate_trees(grid_points(3), depth=3)
    with pytest.raises(TypeError):
        enumerate_trees(torch.zeros(4, 2, dtype=torch.long))
    with pytest.raises(ValueError):
        enumerate_trees(torch.zeros(4))
    with pytest.raises(TypeError):
        disagreement_coefficient(P.float(), P[0])
    with pytest.raises(TypeError):
        disagreement_coefficient(P, P[0, :4])
    with pytest.raises(ValueError):
        cal_active_learn(P, P[0], torch.zeros(9, dtype=torch.long))  # not a permutation
    with pytest.raises(ValueError):  # not realisable: an XOR pattern on the 3x3 grid
        X = grid_points(3)
        passive_labels_to_collapse(
            enumerate_trees(X, depth=1),
            (X[:, 0] > 0.5) ^ (X[:, 1] > 0.5),
            torch.arange(9),
        )
    with pytest.raises(ValueError):
        loglog_slope([1, 2], [1, -1])


def test_helpers():
    assert loglog_slope([10, 100, 1000], [10, 100, 1000]) == pytest.approx(1.0)
    assert loglog_slope([10, 100, 1000], [3, 3, 3]) == pytest.approx(0.0)
    X = grid_points(6)
    assert greedy_tree_pool_error(X, X[:, 0] > 2.5) == 0.0  # a stump: greedy finds it
    P = enumerate_trees(X)
    y = sample_target(P, torch.Generator().manual_seed(0), min_minority=0.3)
    assert 0.3 <= y.float().mean() <= 0.7


def test_exercise_checker():
    def library(P, h):
        return disagreement_coefficient(P, h)[0]

    ok = check_disagreement_coefficient(library, trials=2)
    assert ok.status == "correct" and ok
    for wrong in (lambda P, h: 1.0, lambda P, h: "2", lambda P, h: math.inf):
        assert check_disagreement_coefficient(wrong, trials=2).status == "wrong"


def test_exercise_check_answers_not_done_wrong_and_correct():
    stub, reference, ns = exercise_parts("04-al-trees", "my_theta")
    assert ns.alt.check_disagreement_coefficient(stub).status == "not done yet"

    def off_by_n(P, hstar):  # a plausible slip: counts over n * r, not over r
        return reference(P, hstar) / P.shape[1]

    wrong = ns.alt.check_disagreement_coefficient(off_by_n)
    assert wrong.status == "wrong" and "outside [1, n]" in wrong

    def no_sup(P, hstar):  # another: the ratio at r = 1/n only, not the sup over radii
        flips = P ^ hstar
        dist = flips.sum(1)
        return float((flips[dist == 1].any(0)).sum().clamp(min=1))

    assert ns.alt.check_disagreement_coefficient(no_sup).status == "wrong"
    assert ns.alt.check_disagreement_coefficient(reference).status == "correct"
