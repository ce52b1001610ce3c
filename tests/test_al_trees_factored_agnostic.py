"""Tests for chapter 04's factored disagreement radius, non-grid pools, the agnostic
learner and the input checks added after review (issue 15)."""

import math

import pytest
import torch

from iclr26 import al_trees as alt


def pools(g):
    return [
        alt.grid_points(5),
        alt.grid_points(3, 2),
        alt.antidiagonal_points(9),
        alt.jittered_grid_points(4, 0.3, g),
        alt.permutation_points(12, g),
        torch.tensor([[0.0, 1.0], [0.0, 1.0], [2.0, 0.0], [1.0, 3.0]]),
    ]  # repeated points


@pytest.mark.parametrize("distinct", [True, False])
def test_factored_radius_equals_enumerated_class(distinct):
    g = torch.Generator().manual_seed(0)
    for X in pools(g):
        P = alt.enumerate_trees(X, distinct_features=distinct)
        for i in torch.randint(P.shape[0], (4,), generator=g).tolist():
            h = P[i]
            theta, rho = alt.disagreement_coefficient(P, h)
            theta_f, rho_f = alt.tree_disagreement_coefficient(X, h, distinct)
            assert torch.equal(rho, rho_f) and theta == pytest.approx(
                theta_f, abs=1e-12
            )
        # any labelling: rho is still defined
        h = torch.rand(X.shape[0], generator=g) > 0.5
        assert torch.equal(
            alt.disagreement_radius(P, h), alt.tree_disagreement_radius(X, h, distinct)
        )


def test_feature_reuse_gives_sqrt_n_and_grid_stays_logarithmic():
    for k in (7, 8, 12):
        X, z = alt.grid_points(k), torch.zeros(k * k, dtype=torch.bool)
        assert alt.tree_disagreement_coefficient(X, z, False)[0] == pytest.approx(k)
        assert alt.tree_disagreement_coefficient(X, z)[0] < 2 * math.log(k * k)


def test_factored_refuses_target_outside_class_and_bad_input():
    X = alt.grid_points(4)
    xor = (X[:, 0] > 1.5) ^ (X[:, 1] > 1.5) ^ (X[:, 0] > 0.5)
    with pytest.raises(ValueError, match="not a tree"):
        alt.tree_disagreement_coefficient(X, xor)
    with pytest.raises(TypeError):
        alt.tree_disagreement_radius(X, xor.float())
    with pytest.raises(ValueError):
        alt.tree_disagreement_radius(
            torch.full((4, 2), math.nan), torch.zeros(4, dtype=torch.bool)
        )


def test_non_grid_pools():
    g = torch.Generator().manual_seed(1)
    J = alt.jittered_grid_points(5, 0.3, g)
    assert J.shape == (25, 2) and (J - alt.grid_points(5)).abs().max() < 0.3
    assert torch.unique(J[:, 0]).numel() == 25  # every coordinate distinct
    Q = alt.permutation_points(10, g)
    assert sorted(Q[:, 1].tolist()) == list(range(10))
    for bad in (0.0, 0.5, float("nan")):
        with pytest.raises(ValueError, match="jitter must"):
            alt.jittered_grid_points(5, bad, g)
    with pytest.raises(TypeError, match="jitter must be a real number"):
        alt.jittered_grid_points(5, True, g)
    with pytest.raises(TypeError):
        alt.permutation_points(5, 3)
    with pytest.raises(ValueError):
        alt.permutation_points(1, g)


def test_library_refuses_what_it_cannot_answer():
    X = alt.grid_points(3)
    P = alt.enumerate_trees(X, depth=1)
    xor = (X[:, 0] > 0.5) ^ (X[:, 1] > 0.5)
    with pytest.raises(ValueError, match="row of P"):  # h* outside H
        alt.disagreement_coefficient(P, xor)
    with pytest.raises(
        ValueError, match="realisable"
    ):  # no silent non-zero-error survivor
        for s in range(20):  # some order must infer a label wrongly or empty the space
            alt.cal_active_learn(
                P, xor, torch.randperm(9, generator=torch.Generator().manual_seed(s))
            )
    with pytest.raises(ValueError):  # an empty pool / class
        alt.disagreement_coefficient(
            torch.zeros(0, 4, dtype=torch.bool), torch.zeros(4, dtype=torch.bool)
        )
    with pytest.raises(ValueError):
        alt.VersionSpace(torch.zeros(3, 0, dtype=torch.bool))
    with pytest.raises(ValueError):
        alt.enumerate_trees(torch.zeros(0, 2))
    with pytest.raises(ValueError):  # NaN and inf coordinates
        alt.enumerate_trees(torch.tensor([[0.0, 1.0], [math.nan, 2.0]]))
    with pytest.raises(ValueError):
        alt.threshold_splits(torch.tensor([[math.inf]]))
    with pytest.raises(TypeError):  # not a raw matmul error
        alt.hamming_to_columns(P.t(), torch.zeros(4, dtype=torch.bool))
    with pytest.raises(TypeError):
        alt.hamming_to_columns(P.t().float(), torch.zeros(9, dtype=torch.bool))


def test_cal_on_every_order_of_realisable_target_ends_exact():
    P = alt.enumerate_trees(alt.grid_points(4))
    y = P[11]
    for s in range(5):
        order = torch.randperm(16, generator=torch.Generator().manual_seed(s))
        _, _, alive = alt.cal_active_learn(P, y, order)
        assert (P[alive] == y).all()


def test_noisy_labels_and_pool_errors():
    g = torch.Generator().manual_seed(0)
    y = torch.zeros(100, dtype=torch.bool)
    z = alt.noisy_labels(y, 0.07, g)
    assert int(z.sum()) == 7
    P = alt.enumerate_trees(torch.arange(10.0)[:, None], depth=1)
    e = alt.pool_errors(P, P[3])
    assert e[3] == 0 and torch.allclose(e, (P != P[3]).double().mean(1))
    with pytest.raises(ValueError):
        alt.noisy_labels(y, 0.5, g)
    with pytest.raises(TypeError):
        alt.noisy_labels(y.float(), 0.1, g)


@pytest.mark.parametrize("bound", ["relative", "additive"])
def test_robust_cal_finds_opt_and_only_queries_disagreements(bound):
    n = 400
    X = torch.arange(n, dtype=torch.float32)[:, None]
    P = alt.enumerate_trees(X, depth=1)
    vs = alt.VersionSpace(P)
    for s in range(3):
        g = torch.Generator().manual_seed(s)
        y = alt.noisy_labels(X[:, 0] > 150 + 10 * s, 0.05, g)
        order = torch.randperm(n, generator=g)
        labels, best, queried = alt.robust_cal(vs, y, order, bound=bound)
        err = alt.pool_errors(vs, y)
        assert err[best] == err.min()  # exactly OPT: the best hypothesis survived
        assert labels == int(queried.sum()) <= n
    # the realisable case: exact output, and fewer labels than points
    y = X[:, 0] > 200
    labels, best, _ = alt.robust_cal(vs, y, torch.randperm(n, generator=g), bound=bound)
    assert alt.pool_errors(vs, y)[best] == 0 and labels < n


def test_relative_bounds_ask_fewer_labels_than_additive():
    n = 2000
    X = torch.arange(n, dtype=torch.float32)[:, None]
    vs = alt.VersionSpace(alt.enumerate_trees(X, depth=1))
    g = torch.Generator().manual_seed(0)
    y = alt.noisy_labels(X[:, 0] > 900, 0.02, g)
    order = torch.randperm(n, generator=g)
    rel = alt.robust_cal(vs, y, order, bound="relative")[0]
    add = alt.robust_cal(vs, y, order, bound="additive")[0]
    assert rel < 0.8 * add < n


def test_robust_cal_and_random_erm_bad_input():
    P = alt.enumerate_trees(torch.arange(6.0)[:, None], depth=1)
    y, order = P[2], torch.arange(6)
    with pytest.raises(ValueError):
        alt.robust_cal(P, y, order, bound="maybe")
    with pytest.raises(ValueError):
        alt.robust_cal(P, y, order, delta=0.0)
    with pytest.raises(ValueError):
        alt.robust_cal(P, y, order, growth=1.0)
    with pytest.raises(ValueError, match="budget must be an int <= 6"):
        alt.random_query_erm(P, y, order, budget=7)
    with pytest.raises(TypeError, match="budget must be an int"):
        alt.random_query_erm(P, y, order, budget=3.0)
    with pytest.raises(TypeError):
        alt.random_query_erm(P, y.float(), order, budget=3)
    assert alt.random_query_erm(P, y, order, budget=6) == int(
        alt.pool_errors(P, y).argmin()
    )


def test_passive_closed_form_matches_step_by_step():
    g = torch.Generator().manual_seed(4)
    P = alt.enumerate_trees(alt.grid_points(5))
    for _ in range(3):
        y = alt.sample_target(P, g)
        order = torch.randperm(25, generator=g)
        vs, m = alt.VersionSpace(P), 0
        n_perfect = int((P == y).all(1).sum())
        for i in order.tolist():
            if vs.n_alive == n_perfect:
                break
            vs.update(i, bool(y[i]))
            m += 1
        assert alt.passive_labels_to_collapse(P, y, order) == m


def test_seeded_functions_do_not_depend_on_call_order():
    """Every draw takes its own generator: two seeded calls give the same numbers in
    either order, whatever ran before them (no global random state)."""
    P = alt.enumerate_trees(alt.grid_points(5))
    y = P[7]

    def target():
        return alt.sample_target(P, torch.Generator().manual_seed(3))

    def jittered():
        return alt.jittered_grid_points(5, 0.3, torch.Generator().manual_seed(4))

    def noisy():
        return alt.noisy_labels(y, 0.1, torch.Generator().manual_seed(5))

    a = (target(), jittered(), noisy())
    torch.rand(10)  # an unrelated global draw
    b = (noisy(), jittered(), target())[::-1]
    for u, v in zip(a, b):
        assert torch.equal(u, v)
