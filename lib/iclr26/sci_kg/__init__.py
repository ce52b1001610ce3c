"""Z-NERD and HGNet (ICLR 2026) in miniature: scientific knowledge-graph construction.

* ``corpus`` -- a templated scientific corpus built as the paper's SPHERE benchmark was
  (a concept scaffold, then sentences, then labels), with disjoint vocabularies per
  domain: :func:`make_kg_corpus`, :func:`make_document`.
* ``ner`` -- Z-NERD: hashed character n-gram embeddings, orthogonal semantic
  decomposition (:func:`osd`), TCQK attention (:class:`TCQKAttention`), the BIO tagger
  (:class:`ZNERDTagger`), exact-match span F1 (:func:`span_f1`), a lookup of the
  training entities (:func:`lookup_tags`) and corrected tags (:func:`corrected_tags`).
* ``graph`` -- HGNet: hierarchy-aware message passing
  (:class:`HierarchyMessagePassing`), the differentiable hierarchy loss
  (:func:`acyclicity_loss`, :func:`separation_loss`), the continuum abstraction field
  (:func:`caf_loss`), graph metrics (cycles, shortcut edges, parent-edge F1) and the
  stand-ins of the chapter's planted and null cases (:func:`corrected_graphs`,
  :func:`clean_hierarchy`, :func:`count_vote`).
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
    clean_hierarchy,
    corrected_graphs,
    count_vote,
    depth_order,
    evaluate_hgnet,
    graph_metrics,
    graph_scores,
    has_cycle,
    hgnet_loss,
    pair_features,
    parent_probs,
    predicted_graphs,
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
    corrected_tags,
    head_kernels,
    lookup_tags,
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
    "clean_hierarchy",
    "corrected_graphs",
    "count_vote",
    "depth_order",
    "evaluate_hgnet",
    "graph_metrics",
    "graph_scores",
    "has_cycle",
    "hgnet_loss",
    "pair_features",
    "parent_probs",
    "predicted_graphs",
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
    "corrected_tags",
    "head_kernels",
    "lookup_tags",
    "n_params",
    "osd",
    "predict",
    "span_f1",
    "train_tagger",
]
from . import experiments
from .experiments import graph_experiment, ner_data, ner_experiment

__all__ += ["experiments", "graph_experiment", "ner_data", "ner_experiment"]
