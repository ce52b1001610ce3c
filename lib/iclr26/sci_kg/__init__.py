"""Z-NERD and HGNet (ICLR 2026) in miniature: scientific knowledge-graph construction.

* ``corpus`` -- a templated scientific corpus built as the paper's SPHERE benchmark was
  (a concept scaffold, then sentences, then labels), with disjoint vocabularies per
  domain: :func:`make_kg_corpus`, :func:`make_document`.
* ``ner`` -- Z-NERD: hashed character n-gram embeddings, orthogonal semantic
  decomposition (:func:`osd`), TCQK attention (:class:`TCQKAttention`), the BIO tagger
  (:class:`ZNERDTagger`) and exact-match span F1 (:func:`span_f1`).
* ``graph`` -- HGNet: hierarchy-aware message passing
  (:class:`HierarchyMessagePassing`), the differentiable hierarchy loss
  (:func:`acyclicity_loss`, :func:`separation_loss`), the continuum abstraction field
  (:func:`caf_loss`) and graph metrics (cycles, shortcut edges, parent-edge F1).
* ``experiments`` -- the chapter's two experiments as functions of seed and settings.

Plain PyTorch and NumPy; nothing prints or plots.
"""

from .corpus import (
    BIO,
    FUNCTION,
    TEMPLATES,
    Document,
    make_document,
    make_kg_corpus,
    make_vocabulary,
    ngram_buckets,
)
from .graph import (
    HGNet,
    HierarchyMessagePassing,
    acyclicity_grad,
    acyclicity_loss,
    batch_documents,
    caf_loss,
    check_acyclicity_grad,
    evaluate_hgnet,
    graph_metrics,
    has_cycle,
    hgnet_loss,
    pair_features,
    parent_probs,
    reachability,
    separation_loss,
    shortcut_edges,
    stated_labels,
    train_hgnet,
)
from .ner import (
    Encoded,
    OrthogonalSemanticDecomposition,
    TCQKAttention,
    ZNERDTagger,
    bio_spans,
    head_kernels,
    n_params,
    osd,
    predict,
    span_f1,
    train_tagger,
)

__all__ = [
    "BIO",
    "FUNCTION",
    "TEMPLATES",
    "Document",
    "make_document",
    "make_kg_corpus",
    "make_vocabulary",
    "ngram_buckets",
    "HGNet",
    "HierarchyMessagePassing",
    "acyclicity_grad",
    "acyclicity_loss",
    "batch_documents",
    "caf_loss",
    "check_acyclicity_grad",
    "evaluate_hgnet",
    "graph_metrics",
    "has_cycle",
    "hgnet_loss",
    "pair_features",
    "parent_probs",
    "reachability",
    "separation_loss",
    "shortcut_edges",
    "stated_labels",
    "train_hgnet",
    "Encoded",
    "OrthogonalSemanticDecomposition",
    "TCQKAttention",
    "ZNERDTagger",
    "bio_spans",
    "head_kernels",
    "n_params",
    "osd",
    "predict",
    "span_f1",
    "train_tagger",
]
from . import experiments
from .experiments import graph_experiment, ner_experiment

__all__ += ["experiments", "graph_experiment", "ner_experiment"]
