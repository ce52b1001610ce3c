"""SIREN (ICLR 2026): long-term interest sketching and internalised reasoning for LLM
rating prediction, at toy scale (a synthetic catalogue, a tiny transformer
as the "LLM").

``data``: generator, TF-IDF + k-means topics, the sketch. ``model``: prompts, the
transformer, GRPO on explicit reasoning (the advantage and surrogate of
:mod:`iclr26.grpo`, shared with chapter 18), hidden alignment, cost accounting.
``pipeline``: the chapter's arms end to end.
"""

from . import model
from .data import (
    RATINGS,
    RecSys,
    Sketch,
    build_sketch,
    check_sketch,
    clean_rating,
    discover_topics,
    encode_items,
    make_recsys,
    raw_history_tokens,
    split_users,
    tfidf_from_scratch,
    topic_ari,
)
from .model import (
    TinyRecTransformer,
    Vocab,
    alignment_loss,
    cot_ratings,
    cot_reward,
    count_tokens,
    generate_cot,
    generate_tokens,
    history_prompts,
    mae,
    measure_latency,
    predict_answer,
    rule_chains,
    sketch_prompts,
    sketch_stance,
    teacher_states,
    train_answer,
    train_cot_grpo,
    train_cot_sft,
)
from .pipeline import (
    fit_answer,
    oracle_sketches,
    recent_sketches,
    sketches_for,
    topic_mean_predict,
    truncated_inputs,
    user_examples,
)

__all__ = [
    "RATINGS",
    "RecSys",
    "Sketch",
    "TinyRecTransformer",
    "Vocab",
    "alignment_loss",
    "build_sketch",
    "check_sketch",
    "clean_rating",
    "cot_ratings",
    "cot_reward",
    "count_tokens",
    "discover_topics",
    "encode_items",
    "fit_answer",
    "generate_cot",
    "generate_tokens",
    "history_prompts",
    "mae",
    "make_recsys",
    "measure_latency",
    "model",
    "oracle_sketches",
    "predict_answer",
    "raw_history_tokens",
    "recent_sketches",
    "rule_chains",
    "sketch_prompts",
    "sketch_stance",
    "sketches_for",
    "split_users",
    "teacher_states",
    "tfidf_from_scratch",
    "topic_ari",
    "topic_mean_predict",
    "train_answer",
    "train_cot_grpo",
    "train_cot_sft",
    "truncated_inputs",
    "user_examples",
]
