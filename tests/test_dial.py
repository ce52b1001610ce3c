"""Unit tests of iclr26.dial: projection, SAE, attribution, candidates, metrics,
exercise."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nbexercise import exercise_parts

from iclr26 import dial as D


def _basis(d=6, r=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.linalg.qr(torch.randn(d, r, generator=g, dtype=torch.float64))[0]


def test_projector_is_symmetric_idempotent_and_q_orthonormal():
    g = torch.Generator().manual_seed(1)
    cols = torch.randn(8, 3, generator=g, dtype=torch.float64)
    Q = D.orthonormal_basis(cols)
    assert Q.shape == (8, 3)
    assert torch.allclose(Q.T @ Q, torch.eye(3, dtype=torch.float64), atol=1e-12)
    P = D.project_out(torch.eye(8, dtype=torch.float64), Q, 1.0)  # rows: (I - QQ^T)
    assert torch.allclose(P, P.T, atol=1e-12)
    assert torch.allclose(P @ P, P, atol=1e-12)
    # span(Q) equals span(cols)
    assert torch.allclose(Q @ (Q.T @ cols), cols, atol=1e-10)


def test_dependent_columns_are_dropped():
    a = torch.randn(5, 2, dtype=torch.float64)
    cols = torch.cat([a, a[:, :1] * 2.0], 1)
    assert D.orthonormal_basis(cols).shape == (5, 2)


def test_full_removal_is_orthogonal_and_partial_scales_the_component():
    Q = _basis()
    e = torch.randn(10, 6, dtype=torch.float64)
    assert (D.project_out(e, Q, 1.0) @ Q).abs().max() < 1e-12
    half = D.project_out(e, Q, 0.3)
    assert torch.allclose(half @ Q, 0.7 * (e @ Q), atol=1e-12)
    perp = lambda x: x - (x @ Q) @ Q.T
    assert torch.allclose(perp(half), perp(e), atol=1e-12)
    assert torch.allclose(D.project_out(e, Q, 0.0), e)


def test_project_out_rejects_bad_input():
    Q = _basis()
    e = torch.randn(4, 6, dtype=torch.float64)
    with pytest.raises(ValueError, match="orthonormal"):
        D.project_out(e, 2 * Q, 1.0)
    with pytest.raises(ValueError, match=r"\(d, r\)"):
        D.project_out(torch.randn(4, 5, dtype=torch.float64), Q)
    with pytest.raises(ValueError, match="lam"):
        D.project_out(e, Q, 1.5)
    with pytest.raises(TypeError, match="lam"):
        D.project_out(e, Q, "1")
    with pytest.raises(TypeError, match="torch.Tensor"):
        D.project_out(e.numpy(), Q)
    with pytest.raises(ValueError, match="finite"):
        D.project_out(torch.full((2, 6), float("nan"), dtype=torch.float64), Q)
    with pytest.raises(ValueError, match="empty"):
        D.project_out(torch.zeros(0, 6, dtype=torch.float64), Q)


def test_random_basis_is_orthonormal_and_checks_sizes():
    Q = D.random_basis(7, 3, torch.Generator().manual_seed(0))
    assert torch.allclose(Q.T @ Q, torch.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match="r must be <= d"):
        D.random_basis(3, 4)
    with pytest.raises(TypeError, match="int"):
        D.random_basis(3.0, 1)


def _sae_and_data(seed=0):
    g = torch.Generator().manual_seed(seed)
    atoms = torch.nn.functional.normalize(torch.randn(8, 16, generator=g), dim=0)
    codes = torch.rand(600, 16, generator=g) * (torch.rand(600, 16, generator=g) < 0.15)
    e = codes @ atoms.T
    return D.TopKSAE(8, 32, 3, generator=g), e, g


def test_sae_codes_are_k_sparse_and_loss_decreases():
    sae, e, g = _sae_and_data()
    z = sae.encode(e)
    assert z.shape == (600, 32) and ((z > 0).sum(1) <= 3).all() and (z >= 0).all()
    losses = D.train_sae(sae, e, 300, batch=128, generator=g)
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:5])
    assert torch.allclose(sae.W_dec.norm(dim=0), torch.ones(32), atol=1e-5)
    assert D.explained_variance(sae, e) > 0.5


def test_sae_rejects_k_above_m():
    with pytest.raises(ValueError, match="k must be <= m"):
        D.TopKSAE(4, 3, 5)


def test_attribution_flips_sign_when_p_and_n_swap():
    sae, e, _ = _sae_and_data()
    pos = e[:, 0] > e[:, 0].median()
    attr = torch.randn(8)
    s = D.attribution_scores(sae, e, pos, attr)
    assert s.shape == (32,)
    assert torch.allclose(D.attribution_scores(sae, e, ~pos, attr), -s, atol=1e-6)
    with pytest.raises(ValueError, match="two non-empty"):
        D.attribution_scores(sae, e, torch.ones(600, dtype=torch.bool), attr)
    with pytest.raises(TypeError, match="bool"):
        D.attribution_scores(sae, e, pos.float(), attr)


def test_select_by_mass_takes_the_fewest_features_reaching_alpha():
    s = torch.tensor([0.1, 5.0, -3.0, 3.0, 2.0])  # positive mass 10.1
    assert D.select_by_mass(s, 0.4).tolist() == [1]
    assert D.select_by_mass(s, 0.5).tolist() == [1, 3]
    assert D.select_by_mass(s, 1.0).tolist() == [1, 3, 4, 0]
    with pytest.raises(ValueError, match="positive"):
        D.select_by_mass(-s.abs(), 0.5)
    with pytest.raises(ValueError, match="alpha"):
        D.select_by_mass(s, 1.2)


def test_spurious_basis_cutoff_keeps_the_aligned_columns():
    attr = torch.tensor([1.0, 0, 0, 0])
    cols = torch.tensor([[1.0, 0.9, 0.0], [0, 0.1, 0], [0, 0, 1], [0, 0, 0]])
    assert D.spurious_basis(cols).shape == (4, 3)
    Q = D.spurious_basis(cols, attr, beta=10.0, pct=0.5)
    assert Q.shape[1] == 2  # the column orthogonal to attr is dropped
    assert (Q[2]).abs().max() < 1e-6


def test_candidates_recover_planted_outliers():
    g = torch.Generator().manual_seed(0)
    T = torch.eye(4)[:2]  # classes along axes 0 and 1
    n = 200
    y = torch.arange(n) % 2
    e = torch.nn.functional.one_hot(y, 4).float() + 0.05 * torch.randn(
        n, 4, generator=g
    )
    planted = torch.zeros(n, dtype=torch.bool)
    planted[:10] = True  # pulled towards axis 2: far from their class centre
    e[planted, 2] += 1.2
    e = torch.nn.functional.normalize(e, dim=1)
    cand = D.select_candidates(e, T, k_nn=5, quantile=0.9)
    assert cand[planted].all()
    assert cand.sum() <= 0.2 * n + 2
    with pytest.raises(ValueError, match="k_nn"):
        D.select_candidates(e, T, k_nn=n)


def test_zero_neurons_removes_only_the_selected_contributions():
    sae, e, _ = _sae_and_data()
    idx = torch.tensor([0, 5])
    out = D.zero_neurons(sae, e, idx, 1.0)
    z = sae.encode(e)
    manual = e - z[:, 0:1] * sae.W_dec[:, 0] - z[:, 5:6] * sae.W_dec[:, 5]
    assert torch.allclose(out, manual.detach(), atol=1e-6)


def test_flip_frequencies_counts_by_hand():
    sae, e, _ = _sae_and_data()
    T = torch.nn.functional.normalize(torch.randn(2, 8), dim=1)
    fr = D.flip_frequencies(sae, e[:50], T)
    z = sae.encode(e[:50]).detach()
    pred0 = D.zero_shot(e[:50], T)
    manual = torch.zeros(32)
    for i in range(50):
        for j in torch.nonzero(z[i]).flatten().tolist():
            ab = e[i] - z[i, j] * sae.W_dec[:, j].detach()
            manual[j] += float(int((ab @ T.T).argmax()) != int(pred0[i]))
    assert torch.allclose(fr, manual)


def test_group_metrics_match_hand_computation():
    pred = torch.tensor([0, 1, 1, 0, 1, 1])
    y = torch.tensor([0, 0, 1, 1, 1, 0])
    group = torch.tensor([0, 0, 1, 1, 2, 3])
    acc = D.group_accuracies(pred, y, group)
    assert torch.allclose(acc, torch.tensor([0.5, 0.5, 1.0, 0.0], dtype=torch.float64))
    assert D.worst_group_acc(acc) == 0.0
    assert D.balanced_class_acc(pred, y) == pytest.approx((1 / 3 + 2 / 3) / 2)
    acc5 = D.group_accuracies(pred, y, group, n_groups=5)
    assert torch.isnan(acc5[4]) and D.worst_group_acc(acc5) == 0.0
    with pytest.raises(TypeError, match="integer"):
        D.group_accuracies(pred.float(), y, group)
    with pytest.raises(ValueError, match="group ids"):
        D.group_accuracies(pred, y, group + 2)
    with pytest.raises(ValueError, match="one shape"):
        D.group_accuracies(pred[:3], y, group)


def test_gaussian_group_accuracy_matches_simulation():
    g = torch.Generator().manual_seed(0)
    d = 5
    mu = torch.randn(4, d, generator=g, dtype=torch.float64)
    L = torch.randn(d, d, generator=g, dtype=torch.float64) * 0.5
    cov = L @ L.T + 0.1 * torch.eye(d, dtype=torch.float64)
    w = torch.randn(d, generator=g, dtype=torch.float64)
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    pred = D.gaussian_group_accuracy(w, mu, cov, sign)
    x = (
        mu[:, None, :]
        + torch.randn(4, 40000, d, generator=g, dtype=torch.float64)
        @ torch.linalg.cholesky(cov).T
    )
    sim = ((sign[:, None] * (x @ w)) > 0).double().mean(1)
    assert (pred - sim).abs().max() < 0.01
    with pytest.raises(ValueError, match="expected"):
        D.gaussian_group_accuracy(w, mu, cov[:3, :3], sign)


def test_data_generator_shapes_groups_and_correlation():
    rng = np.random.default_rng(0)
    s = D.make_spurious_digits(400, 0.9, rng, size=18)
    assert s["images"].shape == (400, 3, 18, 18) and s["images"].dtype == np.float32
    assert 0 <= s["images"].min() and s["images"].max() <= 1
    assert 0.85 < (s["y"] == s["b"]).mean() < 0.95
    assert ((s["digit"] >= 5) == s["y"]).all() and (
        s["group"] == 2 * s["y"] + s["b"]
    ).all()
    bal = D.make_spurious_digits(400, None, rng, size=18)
    assert np.bincount(bal["group"]).tolist() == [100] * 4
    with pytest.raises(ValueError, match="p_corr"):
        D.make_spurious_digits(10, 1.5, rng)
    with pytest.raises(TypeError, match="Generator"):
        D.make_spurious_digits(10, 0.5, 0)
    with pytest.raises(ValueError, match="size"):
        D.make_spurious_digits(10, 0.5, rng, size=10)


def test_captions_and_prompts():
    rng = np.random.default_rng(0)
    tok = D.captions(
        np.array([0, 1]),
        np.array([1, 0]),
        np.array([3, 7]),
        rng,
        p_attr=1.0,
        p_name=1.0,
    )
    words = [[D.VOCAB[t] for t in row if t] for row in tok]
    assert words[0] == "a photo of a low digit three on water".split()
    assert words[1] == "a photo of a high digit seven on land".split()
    assert D.prompt("a photo of a low digit").shape == (1, 6)
    with pytest.raises(ValueError, match="VOCAB"):
        D.prompt("a photo of a cat")


def test_clip_model_shapes_and_loss():
    model = D.ToyCLIP(d=8, width=4, size=18)
    x = torch.rand(6, 3, 18, 18)
    t = torch.from_numpy(
        D.captions(
            np.array([0, 1, 0, 1, 0, 1]),
            np.zeros(6, int),
            np.arange(6),
            np.random.default_rng(0),
        )
    )
    ei, et = model.encode_image(x), model.encode_text(t)
    assert ei.shape == et.shape == (6, 8)
    assert torch.allclose(ei.norm(dim=1), torch.ones(6), atol=1e-5)
    same = (t[:, None] == t[None]).all(-1)
    loss = D.clip_loss(ei, et, torch.tensor(10.0), same)
    assert loss.ndim == 0 and torch.isfinite(loss)
    losses = D.train_clip(
        model, x, t, 30, batch=6, generator=torch.Generator().manual_seed(0)
    )
    assert losses[-1] < losses[0]


def test_exercise_checker():
    stub, reference, ns = exercise_parts("13-dial", "my_project_out")
    assert ns.D.check_project_out(stub).status == "not done yet"
    assert ns.D.check_project_out(reference).status == "correct"

    def column_convention(e, Q, lam):  # treats e as (d, n): acts on the wrong side
        return e - lam * Q @ (Q.T @ e.T).T.T if e.shape[0] == Q.shape[0] else e * 0

    wrong = ns.D.check_project_out(column_convention)
    assert wrong.status == "wrong"

    def squared_lam(e, Q, lam):  # shrinks by (1 - lam)^2
        return e - (2 * lam - lam**2) * (e @ Q) @ Q.T

    wrong = ns.D.check_project_out(squared_lam)
    assert wrong.status == "wrong" and "lam" in wrong


def test_selection_score_and_in_distribution_acc():
    pred = torch.tensor([0, 0, 1, 1, 1, 1])
    y = torch.tensor([0, 0, 0, 1, 1, 1])
    assert D.selection_score(pred, y) == (pytest.approx(2 / 3), pytest.approx(5 / 6))
    acc = torch.tensor([1.0, 0.0, 0.5, 1.0], dtype=torch.float64)
    assert D.in_distribution_acc(acc, 0.9) == pytest.approx(0.45 + 0.45 + 0.025)
    with pytest.raises(ValueError, match=r"\(4,\)"):
        D.in_distribution_acc(acc[:3], 0.9)
    with pytest.raises(ValueError, match="p_corr"):
        D.in_distribution_acc(acc, 2.0)


def test_remove_touches_only_masked_rows_and_dial_bases():
    Q = _basis()
    e = torch.randn(6, 6, dtype=torch.float64)
    mask = torch.tensor([True, False, True, False, False, False])
    out = D.remove(e, mask, Q, 1.0)
    assert torch.equal(out[~mask], e[~mask]) and (out[mask] @ Q).abs().max() < 1e-12
    with pytest.raises(TypeError, match="bool"):
        D.remove(e, mask.float(), Q, 1.0)
    sae, emb, _ = _sae_and_data()
    A = torch.nn.functional.normalize(torch.randn(2, 8), dim=1)
    Qd, idx, sc = D.dial_basis(sae, emb, A, 0.5)
    assert Qd.shape[0] == 8 and Qd.shape[1] <= len(idx) and sc.shape == (32,)
    with pytest.raises(ValueError, match=r"\(2, d\)"):
        D.dial_basis(sae, emb, A[:1], 0.5)
    T = torch.nn.functional.normalize(torch.randn(2, 8), dim=1)
    Qp, top, freq = D.dial_plus_basis(sae, emb[:40], T, 3)
    assert len(top) == 3 and Qp.shape[0] == 8 and freq.shape == (32,)
    with pytest.raises(TypeError, match="int"):
        D.dial_plus_basis(sae, emb[:40], T, 2.5)


def test_zero_shot_checks_dimensions():
    with pytest.raises(ValueError, match="share d"):
        D.zero_shot(torch.randn(3, 4), torch.randn(2, 5))


def test_seeded_functions_do_not_depend_on_call_order():
    """The data, the toy CLIP's weights and the SAE in both orders, with an unrelated
    global draw between: the same numbers (nothing in the package reads or sets global
    random state)."""
    pool = np.arange(100)

    def data():
        return D.make_spurious_digits(20, 0.9, np.random.default_rng(3), pool, 18)

    def clip():
        return D.ToyCLIP(d=8, width=4, size=18, seed=5)

    def sae():
        return D.TopKSAE(8, 16, 2, generator=torch.Generator().manual_seed(6))

    a = (data(), clip(), sae())
    torch.randn(9)  # an unrelated global draw
    b_sae, b_clip = sae(), clip()
    torch.rand(4)
    b = (data(), b_clip, b_sae)
    assert all(np.array_equal(a[0][k], b[0][k]) for k in a[0])
    for m_a, m_b in zip(a[1:], b[1:]):
        for p, q in zip(m_a.parameters(), m_b.parameters()):
            assert torch.equal(p, q)
