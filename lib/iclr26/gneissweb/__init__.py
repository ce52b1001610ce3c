"""GneissWeb (ICLR 2026): sharded exact-substring dedup and an ensemble of
quality filters.

Submodules: ``corpus`` (the synthetic web with hidden labels), ``dedup`` (suffix array +
LCP, keep-first, sharding), ``filters`` (fastText-style classifier, EFLAW, tokens/char,
the ensemble rule, the streaming pipeline), ``lm`` (a tiny char-level LM to
judge a corpus).
"""

from .corpus import (
    CATEGORIES,
    GOOD_KINDS,
    JUNK_KINDS,
    Doc,
    cloze_items,
    iter_web_corpus,
    make_boilerplate_blocks,
    make_fact_table,
    make_textbook_stream,
    make_web_corpus,
)
from .dedup import (
    check_duplicate_mask,
    concat_with_separators,
    dedup_docs,
    duplicate_mask,
    duplicate_mask_naive,
    expected_surviving_copies,
    lcp_array,
    lcp_kasai_python,
    remove_repeats,
    suffix_array,
    suffix_array_doubling,
)
from .filters import (
    Annotators,
    EnsembleRule,
    HashedFastText,
    ensemble_keep,
    keep_top,
    mcalpine_eflaw,
    precision,
    single_filter_scores,
    stream_pipeline,
    tokens_per_char,
    train_bpe,
)
from .lm import (
    CharMLP,
    bits_per_char,
    cloze_accuracy,
    cloze_scores,
    continuation_logprob,
    paired_lower_bound,
    train_char_lm,
)

__all__ = [
    "CATEGORIES",
    "GOOD_KINDS",
    "JUNK_KINDS",
    "Doc",
    "cloze_items",
    "iter_web_corpus",
    "make_boilerplate_blocks",
    "make_fact_table",
    "make_textbook_stream",
    "make_web_corpus",
    "check_duplicate_mask",
    "concat_with_separators",
    "dedup_docs",
    "duplicate_mask",
    "duplicate_mask_naive",
    "expected_surviving_copies",
    "lcp_array",
    "lcp_kasai_python",
    "remove_repeats",
    "suffix_array",
    "suffix_array_doubling",
    "Annotators",
    "EnsembleRule",
    "HashedFastText",
    "ensemble_keep",
    "keep_top",
    "mcalpine_eflaw",
    "precision",
    "single_filter_scores",
    "stream_pipeline",
    "tokens_per_char",
    "train_bpe",
    "CharMLP",
    "bits_per_char",
    "cloze_accuracy",
    "continuation_logprob",
    "train_char_lm",
    "cloze_scores",
    "paired_lower_bound",
]
