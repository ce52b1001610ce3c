"""Unit tests for iclr26.paano (chapter 08). Fast: the whole file runs in seconds."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nbexercise import exercise_parts

from iclr26.numerics import n_params
from iclr26.paano import (
    ANOMALY_KINDS,
    PaAno,
    PaAnoConfig,
    PatchEncoder,
    PretextHead,
    acf_period,
    auc_pr,
    build_memory_bank,
    check_patch_scores_to_points,
    knn_cosine_score,
    load_tsb_ad_csv,
    load_tsb_ad_folder,
    make_synthetic_series,
    patch_scores_to_points,
    pretext_loss,
    pretext_weight,
    revin,
    sklearn_patch_detector,
    sliding_patches,
    triplet_hardest_negative,
    vus_pr,
)

TINY = PaAnoConfig(
    patch_len=16,
    channels=(4, 8),
    kernels=(5, 3),
    proj_dim=8,
    batch_size=32,
    iters=4,
    lr=1e-3,
    bank_min=20,
    k=3,
)


# --------------------------------------------------------------------------------- data


def test_synthetic_series_shapes_labels_and_determinism():
    s = make_synthetic_series(3, n_train=600, n_test=1200, period=20, length=(10, 30))
    assert (
        s.x_train.shape == (600, 1)
        and s.x_test.shape == (1200, 1)
        and s.y_test.shape == (1200,)
    )
    assert sorted(k for _, _, k in s.segments) == sorted(ANOMALY_KINDS)
    y = np.zeros(1200, dtype=int)
    for a, b, _ in s.segments:
        y[a:b] = 1
    assert (y == s.y_test).all()
    starts = [a for a, _, _ in s.segments]
    ends = [b for _, b, _ in s.segments]
    assert all(e <= a2 for e, a2 in zip(ends[:-1], starts[1:])), (
        "anomalies must not overlap"
    )
    again = make_synthetic_series(
        3, n_train=600, n_test=1200, period=20, length=(10, 30)
    )
    assert np.array_equal(s.x_test, again.x_test)
    other = make_synthetic_series(
        4, n_train=600, n_test=1200, period=20, length=(10, 30)
    )
    assert not np.array_equal(s.x_test, other.x_test)


def test_synthetic_multivariate_and_errors():
    s = make_synthetic_series(
        0, n_train=400, n_test=1000, period=20, n_channels=3, length=(10, 20)
    )
    assert s.x_train.shape == (400, 3) and s.x_test.shape == (1000, 3)
    with pytest.raises(ValueError, match="anomaly kind"):
        make_synthetic_series(0, kinds=("spike", "meteor"))
    with pytest.raises(ValueError, match="too short"):
        make_synthetic_series(0, n_test=300, period=20, length=(80, 90))
    with pytest.raises(TypeError):
        make_synthetic_series(1.5)


def test_acf_period_finds_the_period():
    t = np.arange(2000)
    assert acf_period(np.sin(2 * np.pi * t / 37)) in (36, 37, 38)
    # the 3.7x harmonic shifts the peak a little
    assert acf_period(make_synthetic_series(0, period=40).x_train) in range(36, 45)
    assert acf_period(np.ones(50), default=7) == 7
    with pytest.raises(ValueError):
        acf_period(np.ones(4))


def _write(path, header, rows):
    path.write_text(
        "\n".join([",".join(header)] + [",".join(map(str, r)) for r in rows]) + "\n"
    )
    return path


def test_tsb_ad_csv_reader_and_its_errors(tmp_path):
    rows = [[i * 0.1, i * 0.2, int(i in (7, 8))] for i in range(12)]
    good = _write(
        tmp_path / "001_Toy_id_1_Demo_tr_5_1st_7.csv", ["a", "b", "Label"], rows
    )
    s = load_tsb_ad_csv(good)
    assert (
        s.x_train.shape == (5, 2) and s.x_test.shape == (12, 2) and s.y_test.sum() == 2
    )
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    no_label = _write(
        bad_dir / "002_Toy_id_2_Demo_tr_5_1st_7.csv", ["a", "b", "y"], rows
    )
    with pytest.raises(ValueError, match="002_Toy.*Label"):
        load_tsb_ad_csv(no_label)
    text = [[*r[:2], r[2]] for r in rows]
    text[3][1] = "oops"
    with pytest.raises(ValueError, match="003_Toy.*non-numeric.*oops"):
        load_tsb_ad_csv(
            _write(
                bad_dir / "003_Toy_id_3_Demo_tr_5_1st_7.csv", ["a", "b", "Label"], text
            )
        )
    clean = [[r[0], r[1], 0] for r in rows]
    with pytest.raises(ValueError, match="004_Toy.*no anomaly label"):
        load_tsb_ad_csv(
            _write(
                bad_dir / "004_Toy_id_4_Demo_tr_5_1st_7.csv", ["a", "b", "Label"], clean
            )
        )
    with pytest.raises(ValueError, match="training length"):
        load_tsb_ad_csv(_write(bad_dir / "nameless.csv", ["a", "b", "Label"], rows))
    # a folder with one bad file raises for it: nothing is skipped silently
    with pytest.raises(ValueError, match="002_Toy"):
        load_tsb_ad_folder(bad_dir)
    assert len(load_tsb_ad_folder(tmp_path, "001_*.csv")) == 1
    with pytest.raises(ValueError, match="no files"):
        load_tsb_ad_folder(tmp_path, "*.parquet")


# ------------------------------------------------------------------------------ patches


def test_sliding_patches_content_and_errors():
    x = torch.arange(20.0).reshape(10, 2)
    p = sliding_patches(x, 4)
    assert p.shape == (7, 2, 4)
    assert torch.equal(p[3, 1], x[3:7, 1])
    assert sliding_patches(torch.arange(5.0), 5).shape == (1, 1, 5)
    with pytest.raises(ValueError):
        sliding_patches(x, 11)
    with pytest.raises(TypeError):
        sliding_patches(np.zeros((10, 1)), 3)
    with pytest.raises(ValueError):
        sliding_patches(torch.zeros(2, 3, 4), 2)


def test_revin_zero_mean_unit_variance():
    p = torch.randn(5, 3, 16, dtype=torch.float64) * 4 + 7
    z = revin(p)
    assert torch.allclose(
        z.mean(-1), torch.zeros(5, 3, dtype=torch.float64), atol=1e-10
    )
    assert torch.allclose(
        z.var(-1, unbiased=False), torch.ones(5, 3, dtype=torch.float64), atol=1e-5
    )


def test_embedding_is_invariant_to_affine_changes_of_the_patch():
    torch.manual_seed(0)
    enc = PatchEncoder(1, (4, 8), (5, 3), 8).double().eval()
    p = torch.randn(6, 1, 32, dtype=torch.float64)
    assert torch.allclose(enc.embed(3.5 * p - 2.0), enc.embed(p), atol=1e-6)
    with pytest.raises(ValueError):
        enc.embed(torch.randn(6, 2, 32, dtype=torch.float64))


def naive_points(s, n, w):
    out = torch.zeros(n, dtype=s.dtype)
    for t in range(n):
        cover = [s[i] for i in range(len(s)) if i <= t <= i + w - 1]
        out[t] = sum(cover) / len(cover)
    return out


@pytest.mark.parametrize("n,w", [(12, 1), (12, 5), (12, 12), (31, 8)])
def test_patch_scores_to_points_matches_naive(n, w):
    s = torch.rand(n - w + 1, dtype=torch.float64)
    assert torch.allclose(
        patch_scores_to_points(s, n, w), naive_points(s, n, w), atol=1e-12
    )


def test_patch_scores_to_points_coverage_and_errors():
    n, w = 10, 4
    # a score equal to 1/count(t) summed over covering patches: coverage counts via the
    # indicator trick
    cover = patch_scores_to_points(torch.ones(n - w + 1), n, w)
    assert torch.allclose(cover, torch.ones(n))
    one_hot = torch.zeros(n - w + 1)
    one_hot[0] = (
        1.0  # patch 0 covers steps 0..3, which are covered by 1, 2, 3, 4 patches
    )
    assert torch.allclose(
        patch_scores_to_points(one_hot, n, w)[:4],
        torch.tensor([1, 1 / 2, 1 / 3, 1 / 4]),
    )
    with pytest.raises(ValueError):
        patch_scores_to_points(torch.ones(5), n, w)
    with pytest.raises(ValueError):
        patch_scores_to_points(torch.ones(7, 1), n, w)


def test_check_function_grades_library_and_wrong_answers():
    assert check_patch_scores_to_points(patch_scores_to_points).status == "correct"
    start_only = lambda s, n, w: torch.nn.functional.pad(s, (0, w - 1))  # at its start
    verdict = check_patch_scores_to_points(start_only)
    assert verdict.status == "wrong" and "far from both ends" in verdict
    k = lambda w: torch.ones(1, 1, w, dtype=torch.float64)
    pad = lambda s, w: torch.nn.functional.pad(s, (w - 1, w - 1))[None, None]
    sum_over_w = lambda s, n, w: (  # divides by w at the ends too
        torch.nn.functional.conv1d(pad(s, w), k(w))[0, 0] / w
    )
    verdict = check_patch_scores_to_points(sum_over_w)
    assert verdict.status == "wrong" and "fewer than w patches" in verdict
    wrong_shape = lambda s, n, w: s
    assert check_patch_scores_to_points(wrong_shape).status == "wrong"
    with pytest.raises(TypeError):
        check_patch_scores_to_points("my_spread")


def test_exercise_check_answers_not_done_wrong_and_correct():
    stub, reference, ns = exercise_parts("08-paano", "my_spread")
    assert ns.pa.check_patch_scores_to_points(stub).status == "not done yet"
    wrong = lambda s, n, w: torch.nn.functional.pad(s, (0, w - 1))
    assert ns.pa.check_patch_scores_to_points(wrong).status == "wrong"
    assert ns.pa.check_patch_scores_to_points(reference).status == "correct"


# ------------------------------------------------------------------------------- losses


def test_hardest_negative_never_takes_the_diagonal():
    z = torch.randn(6, 4, dtype=torch.float64)
    # positives identical to anchors: the diagonal has distance 0, the smallest possible
    loss = triplet_hardest_negative(z, z, margin=0.5)
    dist = (
        1
        - torch.nn.functional.normalize(z, dim=1)
        @ torch.nn.functional.normalize(z, dim=1).T
    )
    off = dist + torch.diag(torch.full((6,), float("inf"), dtype=torch.float64))
    expect = torch.relu(0 - off.min(1).values + 0.5).mean()
    assert torch.allclose(loss, expect)
    # with the diagonal as 'negative' it would be relu(0 - 0 + 0.5) = 0.5 exactly
    assert loss < 0.5


def test_triplet_zero_when_negatives_beyond_margin_and_farthest_variant():
    # orthogonal: every negative at cosine distance 1
    z = torch.eye(4, dtype=torch.float64)
    assert triplet_hardest_negative(z, z.clone(), margin=0.5).item() == 0.0
    assert triplet_hardest_negative(z, z.clone(), margin=1.5).item() == pytest.approx(
        0.5
    )
    za = torch.randn(5, 3, dtype=torch.float64)
    zp = torch.randn(5, 3, dtype=torch.float64)
    assert triplet_hardest_negative(
        za, zp, 0.5, "farthest"
    ) <= triplet_hardest_negative(za, zp, 0.5, "hardest")
    with pytest.raises(ValueError):
        triplet_hardest_negative(za, zp[:4])
    with pytest.raises(ValueError):
        triplet_hardest_negative(za, zp, negative="random")


def test_triplet_gradcheck():
    za = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    zp = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda a, p: triplet_hardest_negative(a, p, 1.5), (za, zp)
    )


def test_pretext_loss_matches_formula_and_gradcheck():
    torch.manual_seed(0)
    head = PretextHead(3).double()
    h, hp, hr = (
        torch.randn(4, 3, dtype=torch.float64),
        torch.randn(4, 3, dtype=torch.float64),
        torch.randn(4, 2, 3, dtype=torch.float64),
    )
    f = lambda a, b: head.lin(torch.cat([a, b], -1)).squeeze(-1)
    expect = (
        -torch.log(torch.sigmoid(f(h, hp))).mean()
        - torch.log(1 - torch.sigmoid(f(h[:, None].expand_as(hr), hr))).mean()
    )
    assert torch.allclose(pretext_loss(head, h, hp, hr), expect)
    h.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a: pretext_loss(head, a, hp, hr), (h,))
    with pytest.raises(ValueError):
        pretext_loss(head, h, hp, hr[:3])


def test_pretext_weight_schedule():
    assert pretext_weight(0, 200) == 1.0
    assert pretext_weight(10, 200) == pytest.approx(0.5)
    assert all(pretext_weight(it, 200) == 0.0 for it in (20, 21, 199))
    with pytest.raises(ValueError):
        pretext_weight(0, 0)


# ------------------------------------------------------------------------------ scoring


def test_memory_bank_size_and_subset():
    h = torch.randn(300, 5)
    idx = build_memory_bank(h, frac=0.1, min_size=40, seed=0)
    # M = max(40, 30), duplicates merged
    assert 30 <= len(idx) <= 40 and len(set(idx.tolist())) == len(idx)
    # the bank is a subset of the training embeddings
    assert idx.min() >= 0 and idx.max() < 300
    # small N: keep everything
    assert len(build_memory_bank(h, frac=0.1, min_size=500)) == 300
    with pytest.raises(ValueError):
        build_memory_bank(h, frac=0.0)


def test_knn_cosine_score_matches_naive_and_is_zero_on_training_patches():
    q, bank = (
        torch.randn(7, 4, dtype=torch.float64),
        torch.randn(9, 4, dtype=torch.float64),
    )
    naive = torch.stack(
        [
            torch.sort(
                torch.stack([1 - torch.cosine_similarity(qi, b, dim=0) for b in bank])
            )
            .values[:3]
            .mean()
            for qi in q
        ]
    )
    assert torch.allclose(knn_cosine_score(q, bank, 3, chunk=2), naive, atol=1e-12)
    assert torch.allclose(
        knn_cosine_score(bank, bank, 1), torch.zeros(9, dtype=torch.float64), atol=1e-7
    )
    with pytest.raises(ValueError):
        knn_cosine_score(q, bank, 10)
    with pytest.raises(ValueError):
        knn_cosine_score(q, bank[:, :3])


# ----------------------------------------------------------------------------- detector


def test_paano_fit_score_shapes_and_training_patch_scores_zero():
    s = make_synthetic_series(0, n_train=300, n_test=600, period=10, length=(5, 10))
    # the whole bank, k = 1
    cfg = PaAnoConfig(**{**TINY.__dict__, "bank_min": 10_000, "k": 1})
    model = PaAno(cfg).fit(s.x_train, seed=0)
    assert len(model.history) == cfg.iters and np.isfinite(model.history).all()
    sc = model.score(s.x_test)
    assert sc.shape == (600,) and torch.isfinite(sc).all() and (sc >= 0).all()
    # every training patch is in the bank
    assert model.patch_scores(s.x_train).abs().max() < 1e-5
    assert model.n_parameters() == n_params(model.encoder, True) + n_params(
        model.head, True
    )
    with pytest.raises(ValueError):
        model.score(np.zeros((600, 2), dtype=np.float32))


def test_paano_multivariate_and_untrained():
    s = make_synthetic_series(
        1, n_train=300, n_test=600, period=10, n_channels=2, length=(5, 10)
    )
    model = PaAno(TINY, in_ch=2).fit(s.x_train, seed=1, train=False)
    assert model.history == [] and model.score(s.x_test).shape == (600,)
    with pytest.raises(RuntimeError):
        PaAno(TINY).score(s.x_test[:, :1])


def test_sklearn_baselines_shapes_and_errors():
    s = make_synthetic_series(0, n_train=300, n_test=600, period=10, length=(5, 10))
    for name in ("iforest", "lof", "knn"):
        sc, size = sklearn_patch_detector(name, s.x_train, s.x_test, 16)
        assert sc.shape == (600,) and np.isfinite(sc).all() and size > 0
    with pytest.raises(ValueError):
        sklearn_patch_detector("svm", s.x_train, s.x_test, 16)


# ------------------------------------------------------------------------------ metrics


def test_metrics_perfect_score_and_errors():
    y = np.zeros(400, dtype=int)
    y[100:120] = 1
    y[300:305] = 1
    assert vus_pr(y.astype(float), y, window=10) == pytest.approx(1.0, abs=1e-6)
    assert auc_pr(torch.as_tensor(y, dtype=torch.float32), y) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    assert vus_pr(rng.random(400), y, window=10) < 0.3
    with pytest.raises(ValueError):
        vus_pr(np.zeros(399), y, 10)
    with pytest.raises(ValueError):
        auc_pr(np.zeros(400), np.zeros(400))


def test_correct_errors_corrects_a_share_of_the_anomalies():
    # the planted stand-in: B with its errors corrected on a share of the anomalies
    from iclr26.paano import correct_errors

    y = np.zeros(100, dtype=int)
    ranges = [(10, 15), (40, 43), (70, 80)]
    for a, b in ranges:
        y[a:b] = 1
    s = np.random.default_rng(0).random(100)
    out = correct_errors(s, y, 1 / 3, seed=1)
    hit = [(a, b) for a, b in ranges if (out[a:b] == s.max()).all()]
    assert len(hit) == 1  # one range of three, every step of it at the top score
    changed = set(np.flatnonzero(out != s).tolist())
    assert changed <= set(range(*hit[0]))
    assert auc_pr(out, y) > auc_pr(s, y)
    assert (correct_errors(s, y, 1.0)[y == 1] == s.max()).all()
    assert np.array_equal(
        correct_errors(s, y, 0.5, seed=3), correct_errors(s, y, 0.5, 3)
    )
    with pytest.raises(ValueError, match="share"):
        correct_errors(s, y, 0.0)
    with pytest.raises(TypeError, match="seed"):
        correct_errors(s, y, 0.5, seed=1.5)
    with pytest.raises(ValueError, match="at least one anomaly"):
        correct_errors(s, np.zeros(100, dtype=int), 0.5)


def test_seeded_functions_do_not_depend_on_call_order_or_global_state():
    # a fit depends on its seed only, a series on its seed only: the same numbers in
    # either order, with unrelated global draws between
    s = make_synthetic_series(4, n_train=600, n_test=1200, period=20, length=(10, 30))

    def fit():
        return PaAno(TINY).fit(s.x_train, seed=3).score(s.x_test)

    def draw():
        return make_synthetic_series(
            5, n_train=600, n_test=1200, period=20, length=(10, 30)
        ).x_test

    torch.manual_seed(1)
    a1 = fit()
    torch.rand(3)
    np.random.rand(2)
    b1 = draw()
    state = torch.get_rng_state()
    torch.manual_seed(2)
    b2 = draw()
    torch.randn(5)
    a2 = fit()
    assert torch.equal(a1, a2) and np.array_equal(b1, b2)
    # and neither fitting nor counting parameters moves the caller's global stream
    torch.set_rng_state(state)
    before = torch.rand(3)
    torch.set_rng_state(state)
    PaAno(TINY).fit(s.x_train, seed=3, train=False)
    PaAno(TINY).n_parameters()
    assert torch.equal(torch.rand(3), before)
