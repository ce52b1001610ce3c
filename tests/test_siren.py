"""Unit tests of iclr26.siren (seconds)."""

import numpy as np
import pytest
import torch
from nbexercise import exercise_parts

from iclr26 import siren as sr
from iclr26.siren import model as M


@pytest.fixture(scope="module")
def data():
    return sr.make_recsys(
        n_items=120, n_users=60, n_topics=6, hist_min=20, hist_max=80, seed=3
    )


def test_generator_shapes_and_ranges(data):
    assert data.item_words.shape == (120, 7) and len(data.item_text) == 120
    assert data.pref.shape == (60, 6) and (np.abs(data.pref).sum(1) == 4).all()
    assert all(20 <= len(h) <= 80 for h in data.hist_items)
    assert all(((r >= 1) & (r <= 5)).all() for r in data.hist_ratings)
    assert data.target_ratings.min() >= 1 and data.target_ratings.max() <= 5
    again = sr.make_recsys(
        n_items=120, n_users=60, n_topics=6, hist_min=20, hist_max=80, seed=3
    )
    assert np.array_equal(again.target_ratings, data.target_ratings)


@pytest.mark.parametrize(
    "kw, err",
    [
        (dict(n_items=1.5), TypeError),
        (dict(hist_min=10, hist_max=5), ValueError),
        (dict(noise=1.5), ValueError),
        (dict(noise="a"), TypeError),
        (dict(topic_words=20), ValueError),
        (dict(n_like=5, n_dislike=5), ValueError),
        (dict(leak=float("nan")), ValueError),
    ],
)
def test_generator_rejects_bad_input(kw, err):
    with pytest.raises(err):
        sr.make_recsys(**kw)


def test_tfidf_from_scratch_equals_sklearn(data):
    a, b = sr.tfidf_from_scratch(data.item_text), sr.encode_items(data.item_text)
    assert a.shape == b.shape and np.abs(a - b).max() < 1e-12


def test_encoders_reject_bad_input():
    with pytest.raises(TypeError):
        sr.encode_items("one string")
    with pytest.raises(TypeError):
        sr.tfidf_from_scratch([1, 2])
    with pytest.raises(ValueError):
        sr.discover_topics(np.full((5, 2), np.nan))
    with pytest.raises(ValueError):
        sr.discover_topics(np.eye(5), k_grid=[8])


def test_topics_recovered_without_knowing_k(data):
    tp = sr.discover_topics(sr.encode_items(data.item_text), range(3, 10), seed=0)
    assert tp["k"] == 6 and sr.topic_ari(tp["labels"], data.item_topic) > 0.95


def test_sketch_bound_and_disjoint(data):
    rng = np.random.default_rng(0)
    for n in (5, 50, 500, 5000):
        s = sr.build_sketch(rng.integers(0, 8, n), rng.integers(1, 6, n), 8, L=3)
        assert len(s.to_tokens()) <= 2 * 3 + 2
        assert not set(s.liked) & set(s.disliked)


def test_sketch_on_noise_free_user_is_the_truth():
    d = sr.make_recsys(
        n_items=200,
        n_users=20,
        n_topics=6,
        noise=0.0,
        hist_min=200,
        hist_max=200,
        sigma=0.3,
        seed=1,
    )
    for u in range(d.n_users):
        s = sr.build_sketch(d.item_topic[d.hist_items[u]], d.hist_ratings[u], 6, L=3)
        assert set(s.liked) == set(np.flatnonzero(d.pref[u] == 1))
        assert set(s.disliked) == set(np.flatnonzero(d.pref[u] == -1))


def test_sketch_rejects_bad_input():
    with pytest.raises(ValueError):
        sr.build_sketch(np.array([0, 1]), np.array([3.0]), 4)
    with pytest.raises(TypeError):
        sr.build_sketch(np.array([0.5, 1.0]), np.array([3.0, 4.0]), 4)
    with pytest.raises(ValueError):
        sr.build_sketch(np.array([0, 9]), np.array([3.0, 4.0]), 4)
    with pytest.raises(ValueError):
        sr.build_sketch(np.array([0, 1]), np.array([3.0, np.inf]), 4)


def test_token_counts_monotone_raw_constant_sketch(data):
    raw = sr.raw_history_tokens(data.desc_len, [10, 50, 300])
    assert (np.diff(raw) > 0).all()
    V = M.Vocab(16, 0)
    sks = [
        sr.build_sketch(
            np.zeros(n, int) % 3 + np.arange(n) % 3, np.tile([5, 1, 3], n)[:n], 3
        )
        for n in (9, 90, 900)
    ]
    p = M.sketch_prompts(sks, np.zeros(3, int), V, 3)
    assert p.shape[1] == 2 * 3 + 6 and (M.count_tokens(p) <= 2 * 3 + 6).all()


def test_prompts_reject_bad_input():
    V = M.Vocab(4, 0)
    s = sr.Sketch((0,), (1,))
    with pytest.raises(ValueError):
        M.sketch_prompts([s], np.array([9]), V, 3)
    with pytest.raises(TypeError):
        M.sketch_prompts([s], np.array([0.5]), V, 3)
    with pytest.raises(ValueError):
        M.history_prompts(
            np.zeros((2, 3), int), np.full((2, 3), 7), np.zeros(2, int), V
        )


def test_model_shapes_and_bad_input():
    m = M.TinyRecTransformer(40, d=16, layers=1, heads=2, max_len=20)
    logits, h = m(torch.randint(0, 40, (3, 7)))
    assert logits.shape == (3, 7, 40) and h.shape == (3, 7, 16)
    with pytest.raises(ValueError):
        m(torch.full((1, 3), 40))
    with pytest.raises(TypeError):
        m(torch.zeros(1, 3))
    with pytest.raises(ValueError):
        M.TinyRecTransformer(40, d=15, heads=2)


def test_model_is_causal():
    m = M.TinyRecTransformer(40, d=16, layers=2, heads=2).eval()
    x = torch.randint(0, 40, (1, 8))
    y = x.clone()
    y[0, -1] = (x[0, -1] + 1) % 40
    assert torch.allclose(m(x)[0][:, :-1], m(y)[0][:, :-1], atol=1e-6)


def test_alignment_loss_with_lambda_zero_is_cross_entropy():
    g = torch.Generator().manual_seed(0)
    r, y = torch.randn(6, 5, generator=g), torch.randint(1, 6, (6,), generator=g)
    hs, ht = torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g)
    ce = torch.nn.functional.cross_entropy(r, y - 1)
    assert torch.allclose(M.alignment_loss(r, y, hs, ht, 0.0), ce)
    want = ce + 2.0 * (hs - ht).pow(2).mean()
    assert torch.allclose(M.alignment_loss(r, y, hs, ht, 2.0), want)
    hs.requires_grad_(True)
    M.alignment_loss(r, y, hs, ht.requires_grad_(True), 1.0).backward()
    assert ht.grad is None  # stop-gradient on the teacher
    with pytest.raises(ValueError):
        M.alignment_loss(r, y, hs, None, 1.0)
    with pytest.raises(ValueError):
        M.alignment_loss(r, y, hs, ht, -1.0)


def test_decoding_costs_and_reward():
    V = M.Vocab(4, 0)
    m = M.TinyRecTransformer(V.size, d=16, layers=1, heads=2)
    p = M.sketch_prompts(
        [sr.Sketch((0,), (1,))] * 3, np.array([0, 1, 2]), V, 3, end=M.COT
    )
    cot = M.generate_cot(m, p, k=4)
    assert cot.shape == (3, 3)
    assert ((cot[:, 0] >= M.TOPIC0) & (cot[:, 0] < M.TOPIC0 + 4)).all()
    assert ((cot[:, 2] >= M.RATING0) & (cot[:, 2] < M.RATING0 + 5)).all()
    pa = M.sketch_prompts([sr.Sketch((0,), (1,))] * 3, np.array([0, 1, 2]), V, 3)
    assert M.predict_answer(m, pa).shape == (3,)
    assert M.measure_latency(m, pa[:1], "answer", 4)["generated_tokens"] == 1
    assert M.measure_latency(m, p[:1], "cot", 4)["generated_tokens"] == 3
    with pytest.raises(ValueError):
        M.measure_latency(m, pa, "fast", 4)
    table = M.sketch_stance([sr.Sketch((0,), (1,))] * 3, 4)
    y = torch.tensor([5, 1, 3])
    ideal = M.rule_chains(torch.tensor([0, 1, 2]), table, y)
    assert torch.allclose(
        M.cot_reward(ideal, y, torch.tensor([0, 1, 2]), table), torch.full((3,), 2.0)
    )
    with pytest.raises(ValueError):
        M.cot_reward(ideal[:, :2], y, torch.tensor([0, 1, 2]), table)


def test_training_lowers_loss():
    V = M.Vocab(4, 0)
    sk = [sr.Sketch((0,), (1,))] * 64
    cand = torch.arange(64) % 3
    y = torch.tensor([5 if c == 0 else 1 if c == 1 else 3 for c in cand.tolist()])
    p = M.sketch_prompts(sk, cand.numpy(), V, 3)
    m = M.TinyRecTransformer(V.size, d=16, layers=1, heads=2)
    curve = M.train_answer(m, p, y, 60, 1e-2, batch=32)
    assert np.mean(curve[-10:]) < np.mean(curve[:10])
    with pytest.raises(ValueError):
        M.train_answer(m, p, y, 5, 2.0)


def test_topic_mean_predict_reads_the_history(data):
    lab = data.item_topic
    uu, items, y = sr.user_examples(data, np.arange(10))
    full = sr.topic_mean_predict(data, lab, uu, items, None)
    assert full.shape == y.shape and full.min() >= 1 and full.max() <= 5
    with pytest.raises(ValueError):
        sr.topic_mean_predict(data, lab, uu, items, 5, prior=-1.0)


def test_exercise_checker():
    stub, reference, ns = exercise_parts("17-siren", "my_sketch")
    assert ns.sr.check_sketch(stub).status == "not done yet"
    assert ns.sr.check_sketch(reference).status == "correct"

    def by_mean(topics, ratings, n_topics, L, min_count, delta):
        s = sr.build_sketch(topics, ratings, n_topics, L, min_count, delta)
        return tuple(reversed(s.liked)), s.disliked  # right topics, wrong order

    assert ns.sr.check_sketch(by_mean).status == "wrong"
    assert ns.sr.check_sketch(lambda *a: ((), ())).status == "wrong"


# --------------------------------------------------------------- added after the review
def test_mae_rejects_broadcasting_empty_and_nan():
    with pytest.raises(ValueError):
        M.mae(torch.ones(4), torch.ones(4, 1) * 2)  # would broadcast to 16 pairs
    with pytest.raises(ValueError):
        M.mae(torch.ones(0), torch.ones(0))
    with pytest.raises(ValueError):
        M.mae(torch.tensor([float("nan"), 1.0]), torch.ones(2))
    with pytest.raises(TypeError):
        M.mae(np.ones(2), torch.ones(2))
    assert M.mae(torch.tensor([1, 5]), torch.tensor([2, 5])) == 0.5


def _tiny():
    V = M.Vocab(6, 0)
    m = M.TinyRecTransformer(V.size, d=16, layers=1, heads=2)
    sk = [sr.Sketch((0,), (1,))] * 3
    return (
        V,
        m,
        M.sketch_prompts(sk, np.array([0, 1, 2]), V, 3),
        M.sketch_prompts(sk, np.array([0, 1, 2]), V, 3, end=M.COT),
    )


@pytest.mark.parametrize("bad", [[6, 1, 3], [0, 1, 3]])
def test_ratings_out_of_range_rejected(bad):
    _, m, pa, _ = _tiny()
    with pytest.raises(ValueError, match="1..5"):
        M.train_answer(m, pa, torch.tensor(bad), 1, 1e-3)
    with pytest.raises(ValueError, match="1..5"):
        M.alignment_loss(
            torch.zeros(3, 5), torch.tensor(bad), torch.zeros(3, 2), None, 0.0
        )


@pytest.mark.parametrize(
    "k, err", [(0, ValueError), (99, ValueError), (2.5, TypeError)]
)
def test_generate_cot_k_range(k, err):
    _, m, _, pc = _tiny()
    with pytest.raises(err):
        M.generate_cot(m, pc, k=k)


def test_empty_prompts_rejected():
    _, m, pa, pc = _tiny()
    with pytest.raises(ValueError):
        M.measure_latency(m, pa[:0], "answer", 4)
    with pytest.raises(ValueError):
        M.predict_answer(m, pa[:0])
    with pytest.raises(ValueError):
        M.generate_cot(m, pc[:0], 4)


def test_latency_counts_tokens_and_forward_calls():
    _, m, pa, pc = _tiny()
    a, c = (
        M.measure_latency(m, pa[:2], "answer", 4),
        M.measure_latency(m, pc[:2], "cot", 4),
    )
    assert a["generated_tokens"] == 1 and a["forward_passes"] == 1
    assert c["generated_tokens"] == 3 and c["forward_passes"] == 3


@pytest.mark.parametrize(
    "prior, err",
    [
        (float("inf"), ValueError),
        (float("nan"), ValueError),
        ("a", TypeError),
        (-1.0, ValueError),
    ],
)
def test_topic_mean_prior_must_be_finite(data, prior, err):
    uu, items, _ = sr.user_examples(data, np.arange(3))
    with pytest.raises(err):
        sr.topic_mean_predict(data, data.item_topic, uu, items, 5, prior)


def test_raw_history_tokens_rejects_negative_and_float_counts():
    with pytest.raises(ValueError):
        sr.raw_history_tokens(7, [-5])
    with pytest.raises(TypeError):
        sr.raw_history_tokens(7, [2.5])
    assert sr.raw_history_tokens(7, [0, 2]).tolist() == [0, 16]


def test_sketch_stance_topic_range():
    with pytest.raises(ValueError):
        M.sketch_stance([sr.Sketch((5,), ())], 3)
    with pytest.raises(ValueError):
        M.sketch_stance([sr.Sketch((), (-1,))], 3)


def test_user_examples_ids_checked(data):
    with pytest.raises(ValueError):
        sr.user_examples(data, np.array([data.n_users]))
    with pytest.raises(TypeError):
        sr.user_examples(data, np.array([0.5]))


def test_recent_sketches_read_only_the_window(data):
    lab = data.item_topic
    rec = sr.recent_sketches(data, lab, data.n_topics, 3, K=16)
    for u in range(5):
        want = sr.build_sketch(
            lab[data.hist_items[u][-16:]],
            data.hist_ratings[u][-16:],
            data.n_topics,
            3,
            1,
            0.3,
        )
        assert rec[u] == want and len(rec[u].to_tokens()) <= 8
    with pytest.raises(ValueError):
        sr.recent_sketches(data, lab, data.n_topics, 3, K=10_000)


def test_checker_accepts_any_tie_order():
    def other_ties(topics, ratings, n_topics, L, min_count, delta):
        r = np.asarray(ratings, float)
        c = np.bincount(topics, minlength=n_topics)
        tot = np.bincount(topics, weights=r, minlength=n_topics)
        d = np.where(c > 0, tot / np.maximum(c, 1), 0.0) - r.mean()
        z, ok = d * np.sqrt(c), c >= min_count
        liked = tuple(
            int(t) for t in np.argsort(z, kind="stable")[::-1] if ok[t] and d[t] > delta
        )[:L]
        dis = tuple(
            int(t)
            for t in np.argsort(-z, kind="stable")[::-1]
            if ok[t] and d[t] < -delta
        )[:L]
        return liked, dis

    assert sr.check_sketch(other_ties).status == "correct"


# ------------------------------------------------------------------------------------
# seeds without global state, the planted sketches, long chains, bad inputs
def _toy_prompts(seed=0, n=40):
    g = torch.Generator().manual_seed(seed)
    V = M.Vocab(n_topic_slots=4, n_words=0)
    P = {
        s: M.TOPIC0 + torch.randint(0, 4, (n, 6), generator=g)
        for s in ("train", "val", "test")
    }
    y = {s: torch.randint(1, 6, (n,), generator=g) for s in P}
    return P, y, V


def _fit(seed):
    P, y, V = _toy_prompts()
    out = sr.fit_answer(P, y, V, [3e-3], 4, 8, 1, seed, batch=8)
    return [p.detach().clone() for p in out["model"].parameters()]


def test_fit_answer_depends_on_its_seed_only_not_on_call_order():
    a0 = _fit(0)
    torch.rand(5)  # an unrelated draw from the global generator
    a1 = _fit(1)
    b1 = _fit(1)
    torch.randn(2)
    b0 = _fit(0)
    assert all(torch.equal(p, q) for p, q in zip(a0, b0))
    assert all(torch.equal(p, q) for p, q in zip(a1, b1))
    assert not all(torch.equal(p, q) for p, q in zip(a0, a1))


def _grpo(seed):
    P, y, V = _toy_prompts()
    prompts = torch.cat([P["train"], torch.full((40, 1), M.COT)], 1)
    torch.manual_seed(123)  # the same initial model for every call
    model = M.TinyRecTransformer(V.size, d=8, layers=1, heads=2)
    ct = torch.randint(0, 4, (40,), generator=torch.Generator().manual_seed(1))
    stance = torch.randint(0, 3, (40, 4), generator=torch.Generator().manual_seed(2))
    r = M.train_cot_grpo(
        model, prompts, y["train"], ct, stance, 4, 3, 1e-3, batch=4, group=4, seed=seed
    )
    return r, [p.detach().clone() for p in model.parameters()]


def test_train_cot_grpo_depends_on_its_seed_only_not_on_call_order():
    a0 = _grpo(0)
    torch.rand(3)
    a1 = _grpo(1)
    b1 = _grpo(1)
    b0 = _grpo(0)
    for x, z in ((a0, b0), (a1, b1)):
        assert x[0] == z[0] and all(torch.equal(p, q) for p, q in zip(x[1], z[1]))


def test_train_cot_grpo_and_build_sketch_refuse_bad_ratings_and_tables():
    P, y, V = _toy_prompts()
    prompts = torch.cat([P["train"], torch.full((40, 1), M.COT)], 1)
    model = M.TinyRecTransformer(V.size, d=8, layers=1, heads=2)
    ct = torch.zeros(40, dtype=torch.long)
    stance = torch.zeros(40, 4, dtype=torch.long)
    bad_y = y["train"].clone()
    bad_y[0] = 9
    with pytest.raises(ValueError, match="1..5"):
        M.train_cot_grpo(model, prompts, bad_y, ct, stance, 4, 1, 1e-3, batch=2)
    with pytest.raises(ValueError, match="stance_table"):
        M.train_cot_grpo(model, prompts, y["train"], ct, stance[:, :3], 4, 1, 1e-3)
    with pytest.raises(ValueError, match="1..5"):
        sr.build_sketch(np.array([0, 1, 1]), np.array([3, 99, 4]), 2)


def test_oracle_sketches_hold_the_planted_preferences():
    data = sr.make_recsys(n_items=120, n_users=20, n_topics=6, seed=4)
    labels = (data.item_topic + 2) % 6  # a relabelling of the planted topics
    sks = sr.oracle_sketches(data, labels, 6)
    for u, s in enumerate(sks):
        assert {(c - 2) % 6 for c in s.liked} == set(np.flatnonzero(data.pref[u] > 0))
        assert {(c - 2) % 6 for c in s.disliked} == set(
            np.flatnonzero(data.pref[u] < 0)
        )
    with pytest.raises(ValueError):
        sr.oracle_sketches(data, labels, 3)


def test_long_chains_are_counted_and_bounded():
    P, _, V = _toy_prompts()
    model = M.TinyRecTransformer(V.size, d=8, layers=1, heads=2, max_len=32)
    out = M.generate_tokens(model, P["test"][:3], 5)
    assert out.shape == (3, 5)
    r = M.measure_latency(model, P["test"][:2], "long", 4, n_tokens=5)
    assert r["generated_tokens"] == 5 and r["forward_passes"] == 5
    with pytest.raises(ValueError, match="max_len|<= 32"):
        M.generate_tokens(model, P["test"][:1], 30)
    with pytest.raises(ValueError, match="n_tokens"):
        M.measure_latency(model, P["test"][:2], "answer", 4, n_tokens=5)
