"""Unit tests of iclr26.sci_kg: the corpus, Z-NERD's pieces, HGNet's losses, metrics."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from nbexercise import exercise_parts

from iclr26 import sci_kg as kg


@pytest.fixture(scope="module")
def domain():
    return kg.make_kg_corpus(5, 3)


# --------------------------------------------------------------------------- corpus
def test_corpus_labels_match_spans_and_vocabularies_are_disjoint(domain):
    words, docs = domain
    other, _ = kg.make_kg_corpus(6, 1, exclude=set(words))
    assert not set(words) & set(other)
    for d in docs:
        assert d.n == len(d.parent) == len(d.depth) and (d.parent[1:] >= 0).all()
        for toks, tags, spans in zip(d.tokens, d.tags, d.spans):
            assert len(toks) == len(tags)
            got = kg.bio_spans(np.array([tags]))
            assert got == {(0, s, e) for s, e, _ in spans}
            for s, e, c in spans:
                assert tuple(toks[s:e]) == d.names[c]


def test_corpus_is_a_function_of_its_seed():
    a = kg.make_kg_corpus(9, 2)[1]
    b = kg.make_kg_corpus(9, 2)[1]
    assert [x.tokens for x in a] == [x.tokens for x in b]
    assert all((x.stated == y.stated).all() for x, y in zip(a, b))


def test_corpus_rejects_bad_settings():
    with pytest.raises(ValueError):
        kg.make_kg_corpus(1, 0)
    with pytest.raises(ValueError):
        kg.make_kg_corpus(1, 1, p_rev=1.5)
    with pytest.raises(ValueError):
        kg.make_vocabulary(1, 3)


def test_stated_text_holds_shortcuts_and_reversals():
    _, docs = kg.make_kg_corpus(3, 4, p_trans=1.0, p_rev=1.0)
    for d in docs:
        gm = kg.graph_metrics(kg.stated_labels(d) == 0, d.adjacency())
        assert gm["cycle"] and gm["shortcuts"] > 0 and gm["recall"] == 1.0
    _, clean = kg.make_kg_corpus(3, 4, p_trans=0.0, p_rev=0.0)
    for d in clean:
        assert (np.asarray(kg.stated_labels(d) == 0) == (d.adjacency() > 0)).all()


# --------------------------------------------------------------------------- OSD, TCQK
def test_osd_is_a_gram_schmidt_step():
    E = torch.randn(3, 7, 5, dtype=torch.float64)
    v_sus, v_div = kg.osd(E)
    prev = torch.nn.functional.pad(E, (0, 0, 1, 0))[:, :-1]
    assert torch.allclose(v_sus + v_div, E - prev)
    assert (v_div[:, 1:] * prev[:, 1:]).sum(-1).abs().max() < 1e-10
    cross = torch.linalg.cross(v_sus[:, 1:, :3], prev[:, 1:, :3])  # v_sus is parallel
    assert cross.abs().max() < 1e-8 or v_sus.shape[-1] > 3
    assert torch.allclose(kg.OrthogonalSemanticDecomposition()(E), v_div)
    with pytest.raises(ValueError):
        kg.osd(torch.randn(3, 4))
    with pytest.raises(ValueError):
        kg.osd(torch.full((1, 2, 3), float("nan")))


def test_tcqk_with_identity_kernels_equals_torch_multihead_attention():
    torch.manual_seed(0)
    d, H = 12, 3
    att = kg.TCQKAttention(d, H, kernels=(1,)).double()
    with torch.no_grad():  # kernel-1 convolutions set to exactly the identity
        for conv in att.groups.values():
            conv.weight.zero_()
            conv.weight[:, :, 0] = torch.eye(d // H).repeat(H, 1)
    mha = torch.nn.MultiheadAttention(d, H, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(att.qkv.weight)
        mha.in_proj_bias.copy_(att.qkv.bias)
        mha.out_proj.weight.copy_(att.out.weight)
        mha.out_proj.bias.copy_(att.out.bias)
    x = torch.randn(2, 6, d, dtype=torch.float64)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[1, 4:] = True
    want = mha(x, x, x, key_padding_mask=pad, need_weights=False)[0]
    real = ~pad  # TCQK zeroes padding's queries; only real tokens' outputs are compared
    assert torch.allclose(att(x, pad)[real], want[real], atol=1e-12)
    plain = kg.TCQKAttention(d, H, kernels=None).double()
    plain.load_state_dict(
        {k: v for k, v in att.state_dict().items() if k.startswith(("qkv", "out"))}
    )
    assert torch.allclose(plain(x, pad), want, atol=1e-12)  # nothing zeroed here


def test_tcqk_sees_ngrams_and_not_padding():
    torch.manual_seed(1)
    att = kg.TCQKAttention(12, 3, kernels=(1, 3, 5)).double()
    assert kg.head_kernels((1, 3, 5), 6) == (1, 1, 3, 3, 5, 5)
    x = torch.randn(1, 8, 12, dtype=torch.float64)
    pad = torch.zeros(1, 8, dtype=torch.bool)
    pad[0, 6:] = True
    y = att(x, pad)
    x2 = x.clone()
    x2[0, 6:] = 100.0  # padding content must not matter
    assert torch.allclose(att(x2, pad)[0, :6], y[0, :6])
    with pytest.raises(ValueError):
        kg.TCQKAttention(12, 3, kernels=(2,))
    with pytest.raises(ValueError):
        kg.TCQKAttention(12, 5)


def test_plain_tagger_matches_tcqk_parameter_count():
    t = kg.ZNERDTagger(n_buckets=256, d=48, heads=6, kernels=(1, 3, 5))
    p = kg.ZNERDTagger(
        n_buckets=256, d=48, heads=6, kernels=None, match_params=(1, 3, 5)
    )
    assert abs(kg.n_params(p) - kg.n_params(t)) / kg.n_params(t) < 0.002


def test_tagger_shapes_and_training_step(domain):
    _, docs = domain
    toks = [t for d in docs for t in d.tokens][:40]
    tags = [t for d in docs for t in d.tags][:40]
    data = kg.Encoded(toks, tags, 256)
    m = kg.ZNERDTagger(n_buckets=256, d=24, heads=3, kernels=(1, 3, 5), use_osd=True)
    lg = m(data.grams, data.pad)
    assert lg.shape == (*data.tags.shape, 3)
    m, curve = kg.train_tagger(m, data, data, steps=4, eval_every=2)
    assert len(curve) == 2
    pred = kg.predict(m, data)
    assert pred.shape == data.tags.shape and ((pred < 0) == data.pad.numpy()).all()


# --------------------------------------------------------------------------- span F1
def test_span_f1_exact_match_and_length_filter():
    gold = np.array([[1, 2, 2, 0, 1, 0, -1]])
    assert kg.span_f1(gold, gold)["f1"] == 1.0
    pred = np.array([[1, 2, 0, 0, 1, 0, -1]])  # long span cut short
    r = kg.span_f1(pred, gold)
    assert r["precision"] == 0.5 and r["recall"] == 0.5
    assert kg.span_f1(pred, gold, min_len=3)["recall"] == 0.0
    assert kg.bio_spans(np.array([[0, 2, 2, 0]])) == {(0, 1, 3)}  # I after O starts one


def test_span_f1_agrees_with_seqeval_when_installed():
    seqeval = pytest.importorskip("seqeval.metrics")
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 3, size=(20, 9))
    pred = rng.integers(0, 3, size=(20, 9))
    names = np.array(["O", "B-E", "I-E"])
    want = seqeval.f1_score(
        [list(names[g]) for g in gold], [list(names[p]) for p in pred]
    )
    assert abs(kg.span_f1(pred, gold)["f1"] - want) < 1e-12


# --------------------------------------------------------------------------- DHL
def _random_graph(rng, n, p, dag):
    A = (rng.random((n, n)) < p) * rng.random((n, n))
    np.fill_diagonal(A, 0)
    return np.triu(A, 1) if dag else A


def test_acyclicity_loss_is_zero_exactly_on_dags():
    rng = np.random.default_rng(0)
    for trial in range(30):
        A = _random_graph(rng, int(rng.integers(2, 9)), 0.4, dag=trial % 2 == 0)
        perm = rng.permutation(len(A))
        A = A[perm][:, perm]
        h = float(kg.acyclicity_loss(torch.tensor(A)))
        is_dag = nx.is_directed_acyclic_graph(
            nx.from_numpy_array(A, create_using=nx.DiGraph)
        )
        assert (h < 1e-12) == is_dag and h > -1e-12
        assert kg.has_cycle(A) == (not is_dag)
    cyc3 = torch.tensor([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=torch.float64)
    assert float(kg.acyclicity_loss(cyc3)) > 0


def test_acyclicity_loss_equals_its_walk_series_and_gradient():
    rng = np.random.default_rng(1)
    A = torch.tensor(_random_graph(rng, 6, 0.5, dag=False))
    W = (A * A).numpy()
    series, P, fact = 0.0, np.eye(6), 1.0
    for k in range(1, 40):
        P, fact = P @ W, fact * k
        series += np.trace(P) / fact
    assert abs(float(kg.acyclicity_loss(A)) - series) < 1e-10
    A.requires_grad_(True)
    assert torch.autograd.gradcheck(kg.acyclicity_loss, (A,))
    kg.acyclicity_loss(A).backward()
    assert torch.allclose(A.grad, kg.acyclicity_grad(A.detach()))
    batch = torch.stack([A.detach(), A.detach().T])
    assert kg.acyclicity_loss(batch).shape == (2,)


def test_separation_loss_counts_triangles():
    rng = np.random.default_rng(2)
    for _ in range(20):
        A = (rng.random((6, 6)) < 0.35).astype(float)
        np.fill_diagonal(A, 0)
        n = sum(
            A[u, v] * A[v, w] * A[u, w]
            for u in range(6)
            for v in range(6)
            for w in range(6)
        )
        assert float(kg.separation_loss(torch.tensor(A))) == n
    chain = torch.tensor([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=torch.float64)
    assert float(kg.separation_loss(chain)) == 0
    chain[0, 2] = 1
    assert float(kg.separation_loss(chain)) == 1


def test_losses_reject_bad_input():
    for bad in (
        np.zeros((3, 3)),
        torch.zeros(3, 4),
        torch.zeros(0, 0),
        torch.full((2, 2), float("inf")),
    ):
        with pytest.raises((TypeError, ValueError)):
            kg.acyclicity_loss(bad)
        with pytest.raises((TypeError, ValueError)):
            kg.separation_loss(bad)


def test_shortcut_edges_match_networkx_transitive_reduction():
    rng = np.random.default_rng(3)
    for _ in range(20):
        A = (np.triu(rng.random((8, 8)), 1) < 0.4) & (np.triu(np.ones((8, 8)), 1) > 0)
        G = nx.from_numpy_array(A.astype(int), create_using=nx.DiGraph)
        kept = nx.transitive_reduction(G)
        want = {e for e in G.edges if not kept.has_edge(*e)}
        got = {tuple(map(int, e)) for e in zip(*np.nonzero(kg.shortcut_edges(A)))}
        assert got == want


# --------------------------------------------------------------------------- CAF, HGNet
def test_caf_ranking_is_zero_when_parents_sit_delta_above():
    y = torch.tensor([1.0, 0.5, 0.5, 0.0])
    par, ch = torch.tensor([0, 0, 1]), torch.tensor([1, 2, 3])
    loss = kg.caf_loss(
        y, par, ch, torch.tensor([0]), torch.tensor([2, 3]), None, delta=0.5, gamma1=0.0
    )
    assert float(loss) == 0.0
    assert (
        float(
            kg.caf_loss(
                y.flip(0),
                par,
                ch,
                torch.tensor([0]),
                torch.tensor([3]),
                None,
                delta=0.5,
                gamma1=0.0,
            )
        )
        > 0
    )


def test_hgnet_shapes_losses_and_masks(domain):
    _, docs = domain
    b = kg.batch_documents(docs, 256)
    m = kg.HGNet(n_buckets=256, d=16)
    lg0, lg, h = m(b)
    B, N = b["mask"].shape
    assert lg.shape == (B, N, N, 3) and h.shape == (B, N, 16)
    A = kg.parent_probs(lg, b["mask"])
    assert (A.diagonal(dim1=-2, dim2=-1) == 0).all()
    assert (A[~b["mask"]] == 0).all()
    loss, parts = kg.hgnet_loss(m, b)
    loss.backward()
    assert set(parts) == {"ce", "acyc", "sep", "caf"}
    hist = kg.train_hgnet(m, [b], steps=2)
    assert len(hist) == 2
    ev = kg.evaluate_hgnet(m, [b])
    assert 0 <= ev["cyclic"] <= 1 and -1 <= ev["spearman"] <= 1


def test_exercise_checker():
    stub, reference, ns = exercise_parts("16-sci-kg", "my_acyc_grad")
    assert ns.kg.check_acyclicity_grad(stub).status == "not done yet"
    assert ns.kg.check_acyclicity_grad(reference).status == "correct"

    def transposed(A):
        return kg.acyclicity_grad(torch.tensor(A)).numpy().T

    def no_chain_factor(A):
        return kg.acyclicity_grad(torch.tensor(A)).numpy() / 2

    for wrong in (transposed, no_chain_factor):
        v = ns.kg.check_acyclicity_grad(wrong)
        assert v.status == "wrong" and "because" in v


# ------------------------------------------------------------ planted and null cases
def test_lookup_tags_finds_exactly_the_training_entities():
    tr = kg.Encoded([["a", "b", "c", "x"], ["d"]], [[1, 2, 2, 0], [1]], 64)
    words = [["x", "a", "b", "c"], ["a", "b"], ["d", "e"]]
    te = kg.Encoded(words, [[0] * len(w) for w in words], 64)
    got = kg.lookup_tags(tr, te)
    assert got[0].tolist() == [0, 1, 2, 2]
    assert got[1, :2].tolist() == [0, 0]  # "a b" alone was never an entity
    assert got[2, :2].tolist() == [1, 0] and got[1, 2] == -1  # padding stays -1


def test_corrected_tags_raise_f1_by_the_gain():
    gold = np.array([[1, 2, 2, 0, 1, 2, 2, 0]] * 10)
    pred = np.zeros_like(gold)
    pred[:5] = gold[:5]  # half the long chunks found
    f0 = kg.span_f1(pred, gold, 3)["f1"]
    out = kg.corrected_tags(pred, gold, 0.1, min_len=3)
    assert kg.span_f1(out, gold, 3)["f1"] >= f0 + 0.1
    assert kg.span_f1(kg.corrected_tags(pred, gold, 1.0, 3), gold, 3)["f1"] == 1.0
    assert np.array_equal(kg.corrected_tags(pred, gold, 0.0), pred)
    with pytest.raises(ValueError):
        kg.corrected_tags(pred, gold[:, :3], 0.1)


def test_graph_scores_count_vote_clean_and_corrected_graphs(domain):
    _, docs = domain
    S = [d.adjacency() for d in docs]
    ref = kg.graph_scores(S, S)
    assert ref["f1"] == 1.0 and ref["cyclic"] == 0.0 and ref["shortcuts"] == 0.0
    assert kg.graph_scores([s.T for s in S], S)["f1"] == 0.0
    # the count vote reads the generator's cue: true edges are stated twice
    assert kg.graph_scores([kg.count_vote(d) for d in docs], S)["f1"] == 1.0
    stated = [(kg.stated_labels(d) == 0).astype(float) for d in docs]
    assert kg.graph_scores([s > 0.5 for s in stated], S)["cyclic"] > 0  # 2-cycles
    clean = [kg.clean_hierarchy(s) for s in stated]
    sc = kg.graph_scores(clean, S)
    assert sc["cyclic"] == 0.0 and sc["shortcuts"] == 0.0
    f0 = kg.graph_scores([s > 0.5 for s in stated], S)["f1"]
    fixed = kg.corrected_graphs([s > 0.5 for s in stated], S, 0.05)
    assert kg.graph_scores(fixed, S)["f1"] >= f0 + 0.05
    ys = [-d.depth.astype(float) for d in docs]
    assert kg.depth_order(ys, [d.depth for d in docs]) == pytest.approx(1.0)


def test_seeded_experiments_do_not_depend_on_the_order_of_calls():
    # no global random state: the same numbers in either order, with an unrelated
    # global draw between
    data = kg.ner_data(3, 2, {})

    def a():
        out = kg.ner_experiment(
            data, 3, steps=2, d=12, heads=6, layers=1, which=("tcqk",)
        )
        return out["tcqk"]["pred"]

    def b():
        gr = kg.graph_experiment(
            4, n_train=4, n_val=2, n_test=2, steps=2, d=8, batch=2, lams=(1.0,)
        )
        return gr["test"]["full"]["f1"], gr["test"]["no_caf"]["spearman"]

    a1 = a()
    torch.rand(3)
    b1 = b()
    b2 = b()
    torch.randn(2)
    a2 = a()
    assert np.array_equal(a1, a2) and b1 == b2
