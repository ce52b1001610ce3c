"""Unit tests of iclr26.gneissweb: dedup exactness, sharding algebra, annotators, the
ensemble rule."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nbexercise import exercise_parts

from iclr26 import gneissweb as gw


@pytest.fixture(scope="module")
def world():
    facts = gw.make_fact_table(8, 0)
    blocks = gw.make_boilerplate_blocks(10, 0)
    return facts, blocks


# -------------------------------------------------------------------------------- dedup
@pytest.mark.parametrize("seed", range(5))
def test_suffix_array_is_sorted_suffixes(seed):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 3, size=60)
    brute = sorted(range(len(s)), key=lambda i: tuple(s[i:]))
    assert gw.suffix_array(s).tolist() == brute
    assert gw.suffix_array_doubling(s).tolist() == brute
    text = bytes(rng.integers(97, 100, size=50).astype(np.uint8))
    assert gw.suffix_array(text).tolist() == sorted(
        range(len(text)), key=lambda i: text[i:]
    )


def test_lcp_matches_python_kasai_and_definition():
    s = b"mississippi banana bandana"
    sa = gw.suffix_array(s)
    lcp = gw.lcp_array(s, sa)
    assert np.array_equal(lcp, gw.lcp_kasai_python(s, sa))
    for r in range(len(s) - 1):
        a, b = s[sa[r] :], s[sa[r + 1] :]
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        assert lcp[r] == k
    assert lcp.shape == (len(s),)


@pytest.mark.parametrize("seed", range(8))
def test_duplicate_mask_equals_naive(seed):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 4, size=200)
    for L in (1, 3, 6, 12):
        assert np.array_equal(gw.duplicate_mask(s, L), gw.duplicate_mask_naive(s, L))


def test_duplicate_mask_on_documents_and_separators(world):
    facts, blocks = world
    docs = gw.make_web_corpus(10, 3, facts, blocks, footer_prob=1.0)
    sym, starts = gw.concat_with_separators([d.text for d in docs])
    assert starts.shape == (len(docs) + 1,) and sym.size == starts[-1]
    assert (sym[starts[1:] - 1] >= gw.dedup.SEP_BASE).all()
    mask = gw.duplicate_mask(sym, 40)
    assert np.array_equal(mask, gw.duplicate_mask_naive(sym, 40))
    assert not mask[starts[1:] - 1].any(), "separators are unique and never removed"


def test_keep_first_copy():
    text = "alpha beta gamma delta. " * 3
    out, frac = gw.dedup_docs([text, "x " + text], L=10)
    # " alpha..." was seen in doc 0 too
    assert out[0] == "alpha beta gamma delta. " and out[1] == "x"
    assert 0 < frac < 1


def test_sharding_keeps_one_copy_per_shard():
    block = "unique boilerplate block that is long enough to be found as a repeat"
    docs = [f"doc {i} " + block for i in range(8)]
    one, _ = gw.remove_repeats(docs, 30, shards=1)
    four, _ = gw.remove_repeats(docs, 30, shards=4)
    assert sum(block.strip() in t for t in one) == 1
    assert sum(block.strip() in t for t in four) == 4
    assert [t.startswith(f"doc {i}") for i, t in enumerate(four)] == [True] * 8


def test_expected_surviving_copies_matches_simulation_and_limits():
    assert gw.expected_surviving_copies(100, 7, 1) == pytest.approx(1.0)
    assert gw.expected_surviving_copies(100, 1, 4) == pytest.approx(1.0)
    s, k = 4, 5
    assert gw.expected_surviving_copies(100_000, k, s) == pytest.approx(
        s * (1 - (1 - 1 / s) ** k), rel=1e-3
    )
    rng = np.random.default_rng(0)
    sim = np.mean(
        [len(np.unique(rng.choice(40, 6, replace=False) // 10)) for _ in range(4000)]
    )
    assert sim == pytest.approx(gw.expected_surviving_copies(40, 6, 4), abs=0.05)


def test_check_duplicate_mask_grades_library_and_wrong_answers():
    assert gw.check_duplicate_mask(gw.duplicate_mask, trials=15).status == "correct"
    nothing = gw.check_duplicate_mask(lambda s, L: np.zeros(len(s), bool), trials=15)
    assert nothing.status == "wrong" and "survive" in nothing
    everything = gw.check_duplicate_mask(lambda s, L: np.ones(len(s), bool), trials=15)
    assert everything.status == "wrong" and "first copy" in everything
    short = gw.check_duplicate_mask(lambda s, L: np.zeros(len(s) + 1, bool), trials=15)
    assert short.status == "wrong" and "shape" in short
    with pytest.raises(TypeError):
        gw.check_duplicate_mask("my_mask")


def test_exercise_check_answers_not_done_wrong_and_correct():
    stub, reference, ns = exercise_parts("15-gneissweb", "my_mask")
    assert ns.gw.check_duplicate_mask(stub).status == "not done yet"
    starts_only = _window_starts  # where a later copy starts, not its whole window
    assert ns.gw.check_duplicate_mask(starts_only).status == "wrong"
    assert ns.gw.check_duplicate_mask(reference).status == "correct"


def _window_starts(s, L):
    """Positions p whose window s[p:p+L] occurred earlier (a wrong, too-small mask)."""
    seen, out = set(), np.zeros(len(s), bool)
    for p in range(len(s) - L + 1):
        w = tuple(s[p : p + L])
        out[p] = w in seen
        seen.add(w)
    return out


def test_dedup_errors():
    with pytest.raises(ValueError):
        gw.duplicate_mask(b"abc", 0)
    with pytest.raises(TypeError):
        gw.suffix_array(np.zeros((2, 2), dtype=int))
    with pytest.raises(TypeError):
        gw.concat_with_separators("one string")
    with pytest.raises(ValueError):
        gw.remove_repeats(["a"], 5, shards=0)
    with pytest.raises(ValueError):
        gw.lcp_array(b"abc", np.arange(2))


# ------------------------------------------------------------------------------- corpus
def test_corpus_is_seeded_and_labelled(world):
    facts, blocks = world
    a = gw.make_web_corpus(50, 1, facts, blocks)
    b = gw.make_web_corpus(50, 1, facts, blocks)
    assert [d.text for d in a] == [d.text for d in b]
    assert all(d.good == (d.kind in gw.GOOD_KINDS) for d in a)
    assert all((d.category in gw.CATEGORIES) == (d.kind == "technical") for d in a)
    clean = gw.make_textbook_stream(30, 2, facts)
    assert all(d.good and not d.blocks for d in clean)
    with pytest.raises(ValueError):
        gw.make_web_corpus(10, 0, facts, blocks, junk_frac=1.5)


def test_cloze_items(world):
    facts, _ = world
    items = gw.cloze_items(facts, 4, seed=0)
    assert len(items) == len(gw.corpus.CLOZE_TEMPLATES) * len(facts) == 4 * len(facts)
    for _, options, answer in items:
        assert len(options) == 4 and len(set(options)) == 4 and 0 <= answer < 4
    assert items[0][1][items[0][2]] == facts[0]["C"] + "."


# --------------------------------------------------------------------------- annotators
@pytest.mark.parametrize(
    "text",
    [
        "The cat sat on the mat. It was a sunny day in the old town of Bree.",
        "A short one. Another sentence follows here, with a comma. "
        "And a third, rather longer sentence ends it!",
        "no sentence breaks at all in this long run of words that goes on and on and "
        "on without end",
    ],
)
def test_eflaw_matches_textstat(text):
    textstat = pytest.importorskip("textstat")
    assert gw.mcalpine_eflaw(text) == pytest.approx(
        textstat.mcalpine_eflaw(text), abs=0.01
    )


def test_eflaw_edge_cases():
    assert gw.mcalpine_eflaw("") == 0.0
    with pytest.raises(TypeError):
        gw.mcalpine_eflaw(3)


def test_tokens_per_char_and_bpe():
    tok = gw.train_bpe(
        ["the cat sat on the mat"] * 50 + ["qzx vbn"] * 2, vocab_size=300
    )
    tpc = gw.tokens_per_char(["the cat sat on the mat", "qzxj vbnw kkpq", ""], tok)
    assert tpc.shape == (3,) and tpc[2] == 0.0 and tpc[0] < tpc[1]
    with pytest.raises(TypeError):
        gw.tokens_per_char("one string", tok)


def test_hashed_fasttext_separates_toy_distributions():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    a_words, b_words = (
        ["river", "city", "capital", "north"],
        ["cheap", "deal", "click", "free"],
    )
    mix = lambda main, n: [
        " ".join(rng.choice(main + a_words[:1] + b_words[:1], size=12))
        for _ in range(n)
    ]
    x = mix(a_words, 100) + mix(b_words, 100)
    y = [1] * 100 + [0] * 100
    clf = gw.HashedFastText(2, dim=8, buckets=2**12).fit(x, y, epochs=4, seed=0)
    xt = mix(a_words, 50) + mix(b_words, 50)
    p = clf.predict_proba(xt)
    assert p.shape == (100, 2) and np.allclose(p.sum(1), 1.0)
    assert roc_auc_score([1] * 50 + [0] * 50, p[:, 1]) > 0.95
    ids, offs = clf.featurize(["a b c", "d"])
    # 3 unigrams + 2 bigrams, then 1 unigram
    assert offs.tolist() == [0, 5] and ids.numel() == 6
    with pytest.raises(ValueError):
        clf.fit(["a", "b"], [0, 5])


def test_ensemble_truth_table():
    rule = gw.EnsembleRule(
        q=0.5, eflaw_cat=70, eflaw_other=30, tpc_cat=(0.1, 0.5), tpc_other=(0.22, 0.28)
    )
    # columns: quality, is_cat, eflaw, tpc -> expected keep
    table = [
        (0.9, False, 20, 0.25, True),  # readable and normal
        (0.1, False, 20, 0.25, False),  # fastText says no
        (0.9, False, 50, 0.25, True),  # hard to read but normal tokens: R or E
        (0.9, False, 20, 0.60, True),  # readable, odd tokens
        (0.9, False, 50, 0.40, False),  # fails both (non-category)
        (0.9, True, 50, 0.40, True),  # same numbers, but a category: both pass
        (0.9, True, 90, 0.70, False),  # category, fails both
        (0.9, True, 90, 0.30, True),  # category, tokens fine
    ]
    q, c, r, t, want = map(np.array, zip(*table))
    assert gw.ensemble_keep(q, c, r, t, rule).tolist() == want.tolist()
    glob = gw.ensemble_keep(q, c, r, t, gw.EnsembleRule(category_aware=False, q=0.5))
    assert glob[5] == False and glob[7] == False  # noqa: E712  -- category docs now judged like the rest
    with pytest.raises(ValueError):
        gw.ensemble_keep(q, c[:-1], r, t, rule)


def test_single_filter_scores_keep_top_precision():
    q = np.array([0.9, 0.1, 0.5, 0.7])
    scores = gw.single_filter_scores(
        q, np.zeros(4, bool), np.array([10, 100, 20, 40.0]), np.full(4, 0.25)
    )
    assert set(scores) == {"fastText", "readability", "extreme-tok"}
    top2 = gw.keep_top(scores["fastText"], 2)
    assert top2.tolist() == [True, False, False, True]
    assert gw.precision(top2, np.array([1, 0, 0, 0], bool)) == 0.5
    with pytest.raises(ValueError):
        gw.keep_top(q, 5)


def test_stream_pipeline_yields_every_document(world):
    facts, blocks = world
    book = gw.make_textbook_stream(40, 5, facts)
    raw = gw.make_web_corpus(40, 6, facts, blocks)
    ann = gw.Annotators(
        gw.HashedFastText(2, buckets=2**10).fit(
            [d.text for d in book + raw], [1] * 40 + [0] * 40, epochs=1
        ),
        gw.HashedFastText(5, buckets=2**10).fit(
            [d.text for d in book], [0] * 40, epochs=1
        ),
        gw.train_bpe([d.text for d in raw], 300),
    )
    docs = gw.make_web_corpus(25, 7, facts, blocks)
    out = list(gw.stream_pipeline(iter(docs), ann, L=50, shard_docs=10))
    assert [o[0] for o in out] == docs
    assert set(out[0][2]) == {
        "quality",
        "category",
        "is_cat",
        "eflaw",
        "tpc",
        "n_bytes",
    }
    with pytest.raises(ValueError):
        list(gw.stream_pipeline(iter(docs), ann, L=50, shard_docs=0))


# ----------------------------------------------------------------------------------- LM
def test_char_lm_learns_and_scores():
    text = "the capital of abc is xyz. " * 200
    model = gw.train_char_lm(text, steps=150, batch=64, hidden=32, context=8, seed=0)
    assert gw.bits_per_char(model, ["the capital of abc is xyz. "]) < 2.0
    lp = gw.continuation_logprob(model, "the capital of abc is ", ["xyz.", "qqq."])
    assert lp.shape == (2,) and lp[0] > lp[1]
    assert (
        gw.cloze_accuracy(model, [("the capital of abc is ", ["qqq.", "xyz."], 1)])
        == 1.0
    )
    x = torch.zeros(3, 8, dtype=torch.int64)
    assert model(x).shape == (3, 128)
    with pytest.raises(ValueError):
        model(torch.zeros(3, 5, dtype=torch.int64))
    with pytest.raises(ValueError):
        gw.train_char_lm("short", steps=1, context=8)


def test_lm_objective_gradcheck():
    # the LM's loss is differentiable in float64 (gradcheck the MLP head on
    # a tiny input)
    model = gw.CharMLP(context=3, emb=2, hidden=4).double()
    x = torch.tensor([[1, 2, 3]])
    emb = model.embed(x).flatten(1).detach().requires_grad_(True)
    f = lambda e: model.head(torch.tanh(model.hidden(e)))
    assert torch.autograd.gradcheck(f, (emb,))


def test_corrected_keep_swaps_junk_for_good_at_the_same_size():
    good = np.array([True] * 60 + [False] * 40)
    kept = np.zeros(100, bool)
    kept[30:80] = True  # 30 good, 20 junk: precision 0.6
    out = gw.corrected_keep(kept, good, 0.1)
    assert out.sum() == kept.sum()
    assert gw.precision(out, good) == pytest.approx(0.7)
    assert gw.precision(gw.corrected_keep(kept, good, 1.0), good) == 1.0
    assert np.array_equal(gw.corrected_keep(kept, good, 0.0), kept)
    with pytest.raises(ValueError):
        gw.corrected_keep(np.zeros(100, bool), good, 0.1)


def test_seeded_models_do_not_depend_on_the_order_of_calls():
    # no global random state: the same numbers in either order, with an unrelated
    # global draw between
    text = "the cat sat on the mat. " * 40

    def lm():
        m = gw.train_char_lm(text, steps=3, batch=16, hidden=8, context=4, seed=2)
        return m.head.weight.detach().clone()

    def ft():
        return gw.HashedFastText(2, dim=4, buckets=64, seed=5).embed.weight.detach()

    a1 = lm()
    torch.rand(4)
    b1 = ft().clone()
    b2 = ft().clone()
    torch.randn(3)
    a2 = lm()
    assert torch.equal(a1, a2) and torch.equal(b1, b2)
    assert not torch.equal(
        b1, gw.HashedFastText(2, dim=4, buckets=64, seed=6).embed.weight
    )
