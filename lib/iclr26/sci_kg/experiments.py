"""The chapter's two experiments as functions of (seed, sizes, generator settings); a
run at another setting changes the notebook's ``OVERRIDES``
(``python3 tasks.py sweep 16 --set key=value``).

* :func:`ner_data`, then :func:`ner_experiment` -- taggers trained on domain A, tested
  on held-out sentences of A (long-entity F1) and on domain B (zero-shot F1, disjoint
  vocabulary).
* :func:`graph_experiment` -- HGNet trained on the stated relations of domain-A
  documents; DHL's weight chosen on validation documents; tested on unseen documents.

No global random state: every draw comes from a seed derived from the run's."""

from __future__ import annotations

import numpy as np

from ..core import seeded
from .corpus import make_kg_corpus
from .graph import (
    HGNet,
    batch_documents,
    evaluate_hgnet,
    graph_metrics,
    stated_labels,
    train_hgnet,
)
from .ner import Encoded, ZNERDTagger, n_params, predict, span_f1, train_tagger

N_BUCKETS = 4096
KERNELS = (1, 3, 5)
# taggers: (kernels, use_osd, init offset). "plain2" is a second plain tagger from
# another initialisation: the gap between two plain taggers is the noise floor.
TAGGERS = {
    "tcqk": (KERNELS, False, 0),
    "plain": (None, False, 0),
    "plain2": (None, False, 1),
    "tcqk+osd": (KERNELS, True, 0),
    "tcqk2": (KERNELS, False, 1),
}


def ner_data(seed: int, n_docs: int, gen: dict, device=None) -> list[Encoded]:
    """Domain A's sentences split 70/10/20 (train/validation/test) and domain B's
    sentences (zero-shot test), as :class:`Encoded` tensors. The split is by sentence,
    so a test entity may also occur in training sentences (see :func:`lookup_tags`)."""
    words_a, docs_a = make_kg_corpus(seed * 7 + 1, n_docs, **gen)
    _, docs_b = make_kg_corpus(
        seed * 7 + 2, max(n_docs // 2, 2), exclude=set(words_a), **gen
    )
    toks = [t for d in docs_a for t in d.tokens]
    tags = [t for d in docs_a for t in d.tags]
    perm = np.random.default_rng(seed).permutation(len(toks))
    cut = [int(0.7 * len(perm)), int(0.8 * len(perm))]
    parts = np.split(perm, cut)
    enc = [
        Encoded([toks[i] for i in p], [tags[i] for i in p], N_BUCKETS) for p in parts
    ]
    zb = Encoded(
        [t for d in docs_b for t in d.tokens],
        [t for d in docs_b for t in d.tags],
        N_BUCKETS,
    )
    return [e.to(device) for e in (*enc, zb)]


def ner_experiment(
    data: list[Encoded],
    seed: int,
    steps: int = 300,
    d: int = 48,
    heads: int = 6,
    layers: int = 2,
    which: tuple[str, ...] = ("tcqk", "plain", "plain2", "tcqk+osd"),
    device=None,
    progress=lambda x: x,
) -> dict:
    """Train each tagger of ``which`` (see :data:`TAGGERS`) on ``data`` (the splits of
    :func:`ner_data`) with the same steps, learning rate and early stopping on
    validation; return per tagger: F1 on >= 3-word entities (``long``), on 1-2-word
    ones (``short``), on all (``all``), zero-shot F1 on domain B (``zs``,
    ``zs_long``), the parameter count, the validation curve, the tagger itself and its
    predicted tags on the test sentences (``pred``) and on domain B (``pred_zs``)."""
    tr, va, te, zb = data
    out = {}
    for name in progress(which):
        kernels, use_osd, off = TAGGERS[name]
        with seeded(seed * 31 + off):  # the tagger's initial weights
            m = ZNERDTagger(
                N_BUCKETS, d, heads, layers, kernels, use_osd, match_params=KERNELS
            ).to(device)
            m, curve = train_tagger(m, tr, va, steps, seed=seed)
        pt, pz = predict(m, te), predict(m, zb)
        gt, gz = te.tags.cpu().numpy(), zb.tags.cpu().numpy()
        out[name] = dict(
            long=span_f1(pt, gt, 3)["f1"],
            short=span_f1(pt, gt, 1, 2)["f1"],
            all=span_f1(pt, gt)["f1"],
            zs=span_f1(pz, gz)["f1"],
            zs_long=span_f1(pz, gz, 3)["f1"],
            params=n_params(m),
            curve=curve,
            model=m,
            pred=pt,
            pred_zs=pz,
        )
    return out


def graph_experiment(
    seed: int,
    n_train: int = 64,
    n_val: int = 16,
    n_test: int = 32,
    steps: int = 200,
    d: int = 32,
    batch: int = 8,
    lams: tuple[float, ...] = (1.0, 3.0, 10.0),
    gamma: float = 1.0,
    gen: dict | None = None,
    device=None,
    progress=lambda x: x,
) -> dict:
    """HGNet on domain-A documents.

    DHL's weight lam (lam_acyc = lam_sep = lam) is chosen among ``lams`` by parent-edge
    F1 on the validation documents; then, with that lam, the ablations: ``no_dhl`` (lam
    = 0) and ``no_caf`` (gamma = 0), each trained from the same initialisation for the
    same steps. ``stated`` scores the text's own is-a statements as a graph. Returns
    test metrics per model (see :func:`evaluate_hgnet`), the chosen lam, the validation
    F1 per lam, the trained models, the test batches and the documents (``docs``: the
    test documents; ``train_docs``, ``val_docs``)."""
    gen = gen or {}
    _, docs = make_kg_corpus(seed * 7 + 3, n_train + n_val + n_test, **gen)

    def batches(lo, hi):
        return [
            {
                k: v.to(device)
                for k, v in batch_documents(
                    docs[i : min(i + batch, hi)], N_BUCKETS
                ).items()
            }
            for i in range(lo, hi, batch)
        ]

    tr = batches(0, n_train)
    va = batches(n_train, n_train + n_val)
    te = batches(n_train + n_val, n_train + n_val + n_test)

    def fit(lam, g):
        with seeded(seed * 31):  # every HGNet starts from the same draw
            m = HGNet(N_BUCKETS, d).to(device)
            train_hgnet(m, tr, steps, seed=seed, lam_acyc=lam, lam_sep=lam, gamma=g)
        return m

    runs = [("lam", lam, gamma) for lam in lams] + [("no_dhl", 0.0, gamma)]
    models, val_f1 = {}, {}
    for kind, lam, g in progress(runs):
        m = fit(lam, g)
        key = f"lam={lam:g}" if kind == "lam" else kind
        models[key] = m
        val_f1[key] = evaluate_hgnet(m, va)["f1"]
    lam = max(lams, key=lambda x: val_f1[f"lam={x:g}"])
    models["full"] = models[f"lam={lam:g}"]
    models["no_caf"] = fit(lam, 0.0)
    out = {k: evaluate_hgnet(m, te) for k, m in models.items()}
    test_docs = docs[n_train + n_val :]
    st = [graph_metrics(stated_labels(x) == 0, x.adjacency()) for x in test_docs]
    out["stated"] = dict(
        cyclic=float(np.mean([s["cycle"] for s in st])),
        shortcuts=sum(s["shortcuts"] for s in st) / sum(x.n - 1 for x in test_docs),
        f1=float(np.mean([s["f1"] for s in st])),
    )
    return dict(
        test=out,
        lam=lam,
        val_f1=val_f1,
        models=models,
        batches=te,
        docs=test_docs,
        train_docs=docs[:n_train],
        val_docs=docs[n_train : n_train + n_val],
    )
