"""ChronoPlay (ICLR 2026) in miniature: a game whose facts change by patch, and a
community whose questions drift.

The paper builds game RAG benchmarks that keep up with *dual dynamics*: the game's facts
change with every patch, and the player community's questions drift between topics. This
package is the no-LLM analogue the chapter runs on:

* :func:`make_world` -- a seeded fictional game: entities of six kinds with four numeric
  attributes each (the 6 x 4 topic taxonomy), changed and renamed by patches;
  :func:`announcement` writes a patch's notes, :func:`build_kb` a version's wiki.
* :func:`topic_phases` and :func:`synthesize` -- dual-source synthesis: the answer is
  read from the versioned facts (the "official" source), the phrasing from community
  templates that shorten and misspell names (the analogue of the LLM synthesis with
  personas).
* :func:`gazetteer_ner` and :func:`stale_mask` -- knowledge-evolution updates: a
  question is stale when the patch touches what it asks about.
* :func:`weighted_jsd`, :func:`detect_drift`, :func:`drift_stream` -- interest drift.
* :class:`BM25Index` (checked against ``bm25s``), :class:`TfidfIndex` (scikit-learn, on
  words or character 3-grams), :func:`recall_at_k`, :func:`read_answers` -- retrieval
  per time segment.

Submodules: ``world`` (game, community, synthesis, stale detection), ``drift`` (weighted
JSD and the detector), ``retrieval`` (BM25, TF-IDF, evaluation per version),
``records`` (the calibration grid's records, read back as the chapter's table; the grid
is ``grids/19-chronoplay.json``, run by ``python3 tasks.py sweep 19 --grid``).
Everything
is NumPy and SciPy sparse (text retrieval has no tensor path), seeded by explicit
``numpy.random.Generator`` objects; nothing prints or plots.
"""

from .drift import (
    alarm_rates,
    calibrate_lambda,
    check_weighted_jsd,
    detect_drift,
    drift_stream,
    drift_streams,
    false_alarm_rate,
    weighted_jsd,
)
from .records import calibration_table, claim_range, load_records
from .retrieval import (
    RETRIEVERS,
    BM25Index,
    TfidfIndex,
    evaluate_versions,
    rank_flip,
    read_answers,
    recall_at_k,
)
from .world import (
    ATTRS,
    COMMUNITY,
    ENDGAME,
    KINDS,
    OFFICIAL,
    SYLLABLES,
    TOPICS,
    GameWorld,
    Questions,
    announcement,
    benchmark,
    build_kb,
    f1_score,
    gazetteer_ner,
    make_lexicon,
    make_world,
    phase_changes,
    stale_mask,
    stale_scores,
    synthesize,
    tokenize,
    topic_phases,
    truly_stale,
)

__all__ = [
    "calibration_table",
    "claim_range",
    "load_records",
    "rank_flip",
    "stale_scores",
    "alarm_rates",
    "calibrate_lambda",
    "check_weighted_jsd",
    "detect_drift",
    "drift_stream",
    "drift_streams",
    "false_alarm_rate",
    "weighted_jsd",
    "RETRIEVERS",
    "BM25Index",
    "TfidfIndex",
    "evaluate_versions",
    "read_answers",
    "recall_at_k",
    "ATTRS",
    "COMMUNITY",
    "ENDGAME",
    "KINDS",
    "OFFICIAL",
    "SYLLABLES",
    "TOPICS",
    "GameWorld",
    "Questions",
    "announcement",
    "benchmark",
    "build_kb",
    "f1_score",
    "gazetteer_ner",
    "make_lexicon",
    "make_world",
    "phase_changes",
    "stale_mask",
    "synthesize",
    "tokenize",
    "topic_phases",
    "truly_stale",
]
