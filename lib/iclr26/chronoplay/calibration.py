"""The chapter's calibration grid, in code: every claim's value (and its control) for
one world seed and one setting, so that each threshold in the chapter can be re-derived.

``claim_values(seed, **overrides)`` re-runs the notebook's measurements with the
library's functions at the ``ci`` setting ``CI`` changed by ``overrides`` (the drift
rows through ``drift_values``); ``GRID`` and ``DRIFT_GRID`` list the cells the chapter
reports (one factor at a time around ``ci``) and
``CAL_SEEDS`` the eight world seeds per cell (10 000 to 80 000: disjoint from the sweep
seeds 0, 1000, ..., 4000, and their streams disjoint from each other's). The streams'
development seeds are ``seed + 500_000`` (quiet) and ``seed + 750_000`` (drifting), as
in the notebook.

    from iclr26.chronoplay.calibration import GRID, CAL_SEEDS, claim_values
    rows = [claim_values(s, **GRID["slang 0.3"]) for s in CAL_SEEDS]
"""

from __future__ import annotations

import numpy as np

from .drift import alarm_rates, calibrate_lambda, detect_drift, drift_stream
from .retrieval import RETRIEVERS, evaluate_versions, recall_at_k
from .world import (
    GameWorld,
    Questions,
    benchmark,
    build_kb,
    f1_score,
    make_world,
    stale_mask,
    topic_phases,
    truly_stale,
)

CI = dict(
    n_entities=72,
    n_versions=6,
    n_questions=400,
    change_rate=0.15,
    renames=1,
    slang=0.6,
    drift=1.0,
    windows=6,
    per_window=300,
    burst_rate=0.3,
    burst_size=8.0,
    n_streams=100,
    max_syllables=3,
    claim_drift=1.5,
)
# claim_drift: the evaluation streams' drift for drift-hit and drift-gain (the world's
# questions drift by ``drift``)
GRID = {
    "ci": {},
    "36 entities": dict(n_entities=36, n_questions=200),
    "144 entities": dict(n_entities=144, n_questions=800),
    "10 versions": dict(n_versions=10),
    "slang 0.3": dict(slang=0.3),
    "slang 0.9": dict(slang=0.9),
    "renames 3": dict(renames=3),
    "drift 0.75": dict(drift=0.75),
    "drift 1.5": dict(drift=1.5),
}
# the drift rows' cells (drift_values): the claim's drift 1.5 varied, then one stream
# setting at a time at drift 1.5 (weaker bursts at drift 1.0)
DRIFT_GRID = {
    "ci": {},
    "drift 0.75": dict(claim_drift=0.75),
    "drift 1.0": dict(claim_drift=1.0),
    "drift 1.25": dict(claim_drift=1.25),
    "drift 2.0": dict(claim_drift=2.0),
    "bursts 0.1 x (1+4), drift 1.0": dict(
        burst_rate=0.1, burst_size=4.0, claim_drift=1.0
    ),
    "bursts 0.3 x (1+16)": dict(burst_size=16.0),
    "150 per window": dict(per_window=150),
    "600 per window": dict(per_window=600),
    "4 windows per phase": dict(windows=4),
    "8 windows per phase": dict(windows=8),
    "10 versions": dict(n_versions=10),
}
# world seeds 10_000 apart: stream s of world seed w uses seeds w + s and w + 7919 + s,
# so closer seeds (the first grid used 1..8) would share all but one of their streams
CAL_SEEDS = tuple(10_000 * i for i in range(1, 9))
GAMMAS = (0.5, 1.0, 2.0)
FA_BUDGET = 0.05  # false alarms per window allowed on quiet development streams
DEV_DRIFT = 1.0  # the drift of the development streams that choose gamma


def rank_flip(world: GameWorld, bench: list[Questions], k: int = 1) -> float:
    """min(Recall@k BM25 - char 3-grams at version 0, char 3-grams - BM25 at the last
    version), each with the fresh index: > 0 when the ordering flips."""
    r = {}
    for name in ("BM25", "char 3-grams"):
        r[name] = [
            recall_at_k(
                RETRIEVERS[name](build_kb(world, t)).scores(bench[t].text),
                bench[t].entity,
                k,
            ).mean()
            for t in (0, len(bench) - 1)
        ]
    return float(
        min(r["BM25"][0] - r["char 3-grams"][0], r["char 3-grams"][1] - r["BM25"][1])
    )


def stale_scores(world: GameWorld, bench: list[Questions], **kw) -> dict:
    """Per patch t = 1..T-1, stale_mask(bench[t-1], world, t, **kw) against the truth:
    worst-patch F1, mean precision, mean recall."""
    prf = np.array(
        [
            f1_score(
                stale_mask(bench[t - 1], world, t, **kw),
                truly_stale(bench[t - 1], world, t),
            )
            for t in range(1, world.n_versions)
        ]
    )
    return dict(
        f1_min=float(prf[:, 2].min()),
        prec=float(prf[:, 0].mean()),
        rec=float(prf[:, 1].mean()),
    )


def _streams(c: dict, drift: float, burst_rate: float, seed0: int) -> np.ndarray:
    return np.stack(
        [
            drift_stream(
                topic_phases(c["n_versions"], drift, seed=seed0 + s),
                c["windows"],
                c["per_window"],
                burst_rate,
                c["burst_size"],
                seed=seed0 + 7919 + s,
            )
            for s in range(c["n_streams"])
        ]
    )


def claim_values(seed: int, drift_part: bool = True, **overrides) -> dict:
    """Every measured value of the chapter for world seed ``seed`` at ``CI`` updated by
    ``overrides``; ``drift_part=False`` skips the streams."""
    unknown = set(overrides) - set(CI)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; known: {sorted(CI)}")
    c = dict(CI, **overrides)
    T = c["n_versions"]
    world = make_world(
        c["n_entities"],
        T,
        c["change_rate"],
        c["renames"],
        seed=seed,
        max_syllables=c["max_syllables"],
    )
    phases = topic_phases(T, c["drift"], seed=seed)
    flat = topic_phases(T, 0.0, seed=seed)
    mk = lambda ph, ramp, noise="seen": benchmark(
        world,
        ph,
        c["n_questions"],
        c["slang"],
        seed=seed + 100,
        style_drift=ramp,
        noise=noise,
    )
    bench, topics_only = mk(phases, True), mk(phases, False)
    out: dict = dict(seed=seed, **overrides)
    # retrieval: slang ramp and topic drift together (rank-flip-mixed), and the paper's
    # topic-drift row (rank-flip-topics, the control of rank-flip-mixed)
    for k in (1, 3):
        out[f"flip@{k}"] = rank_flip(world, bench, k)
        out[f"flip_topics@{k}"] = rank_flip(world, topics_only, k)
    # the asserted row: the slang ramp alone (topics flat); its control has no
    # drift at all
    out["flip_slang_only@1"] = rank_flip(world, mk(flat, True), 1)
    out["flip_none@1"] = rank_flip(world, mk(flat, False), 1)
    # stale index: gaps on changed / unchanged questions
    ev = evaluate_versions(world, bench)
    ch = np.concatenate([truly_stale(Q, world, t) for t, Q in enumerate(bench)][1:])
    gc, gu = [], []
    for r in ev.values():
        f, b = np.concatenate(r["fresh"][1:]), np.concatenate(r["behind"][1:])
        gc.append(f[ch].mean() - b[ch].mean())
        gu.append(abs(f[~ch].mean() - b[~ch].mean()))
    out["stale_gap"], out["unchanged_gap"] = float(min(gc)), float(max(gu))
    # stale questions: the paper's entity rule and our (entity, attribute) rule
    ent = stale_scores(world, bench, level="entity")
    out.update(entity_prec=ent["prec"], entity_rec=ent["rec"], entity_f1=ent["f1_min"])
    out["fact_f1_seen"] = stale_scores(world, bench)["f1_min"]
    unseen = mk(phases, True, "unseen")
    for label, kw in (
        ("", {}),
        ("_noalias", dict(aliases=False)),
        ("_nofuzzy", dict(fuzzy=False)),
        ("_neither", dict(aliases=False, fuzzy=False)),
    ):
        s = stale_scores(world, unseen, **kw)
        out[f"fact_f1_unseen{label}"] = s["f1_min"]
        out[f"fact_rec_unseen{label}"] = s["rec"]
    ent_u = stale_scores(world, unseen, level="entity")
    out.update(entity_prec_unseen=ent_u["prec"], entity_rec_unseen=ent_u["rec"])
    ctrl = [
        f1_score(
            stale_mask(unseen[t - 1], world, t, shuffle_from=t + 1 if t + 1 < T else 1),
            truly_stale(unseen[t - 1], world, t),
        )[2]
        for t in range(1, T)
    ]
    out["fact_f1_unseen_ctrl"] = float(max(ctrl))
    if drift_part:
        out.update(drift_values(seed, **overrides))
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}


def drift_values(seed: int, **overrides) -> dict:
    """The drift rows (drift-hit, drift-gain and their controls) for world seed ``seed``
    at ``CI`` updated by ``overrides``: the notebook's Reproduce 3."""
    unknown = set(overrides) - set(CI)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; known: {sorted(CI)}")
    c = dict(CI, **overrides)
    out: dict = {}
    # lambda: the false-alarm budget on quiet development streams (no drift, the same
    # rare-topic bursts); gamma: the best development hit rate at DEV_DRIFT, whatever
    # the evaluated drift is
    quiet = _streams(c, 0.0, c["burst_rate"], seed + 500_000)
    calm = _streams(c, 0.0, 0.0, seed + 500_000)
    dev = _streams(c, DEV_DRIFT, c["burst_rate"], seed + 750_000)
    lam = {g: calibrate_lambda(quiet, g, FA_BUDGET) for g in (0.0, *GAMMAS)}
    lam_calm = {g: calibrate_lambda(calm, g, FA_BUDGET) for g in (0.0, *GAMMAS)}
    dev_hit = {
        g: alarm_rates(detect_drift(dev, g, lam[g])[1], c["windows"])[0] for g in GAMMAS
    }
    gamma = max(GAMMAS, key=lambda g: (dev_hit[g], -g))
    out["gamma"] = gamma
    ev_s = _streams(c, c["claim_drift"], c["burst_rate"], seed)
    nod = _streams(c, 0.0, c["burst_rate"], seed)
    ev_calm = _streams(c, c["claim_drift"], 0.0, seed)
    for tag, g in (("w", gamma), ("u", 0.0)):
        h, f = alarm_rates(detect_drift(ev_s, g, lam[g])[1], c["windows"])
        hn, _ = alarm_rates(detect_drift(nod, g, lam[g])[1], c["windows"])
        hc, _ = alarm_rates(detect_drift(ev_calm, g, lam_calm[g])[1], c["windows"])
        out[f"hit_{tag}"], out[f"fa_{tag}"] = float(h), float(f)
        out[f"nodrift_hit_{tag}"], out[f"calm_hit_{tag}"] = float(hn), float(hc)
    out["drift_hit"] = min(out["hit_w"], out["hit_u"])
    out["drift_hit_ctrl"] = max(out["nodrift_hit_w"], out["nodrift_hit_u"])
    out["drift_gain"] = out["hit_w"] - out["hit_u"]
    out["drift_gain_ctrl"] = out["calm_hit_w"] - out["calm_hit_u"]
    return out
