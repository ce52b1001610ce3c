"""SIREN (ICLR 2026): long-term interest sketching and internalised reasoning for LLM
rating prediction, at toy scale (a synthetic catalogue, a tiny transformer
as the "LLM").

``data``: generator, TF-IDF + k-means topics, the sketch. ``model``: prompts, the
transformer, GRPO on explicit reasoning, hidden alignment, cost accounting.
"""

# ruff: noqa: F401 -- the package re-exports its modules' names
from .data import *  # noqa: F403
from .data import (
    RecSys,
    Sketch,
    build_sketch,
    discover_topics,
    encode_items,
    make_recsys,
    raw_history_tokens,
    split_users,
    tfidf_from_scratch,
    topic_ari,
)
from .model import *  # noqa: F403
from .model import (
    TinyRecTransformer,
    Vocab,
    alignment_loss,
    cot_ratings,
    cot_reward,
    count_tokens,
    generate_cot,
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
    recent_sketches,
    sketches_for,
    topic_mean_predict,
    truncated_inputs,
    user_examples,
)
