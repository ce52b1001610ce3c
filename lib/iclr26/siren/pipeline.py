"""The chapter's experiments end to end, so that the notebook, the calibration and the
tests run the same code: build prompts from a catalogue, train each arm with its
learning rate chosen on the validation users, score it on the test users."""

from __future__ import annotations

import numpy as np
import torch

from ..core import seeded
from ..validate import as_int
from . import model as M
from .data import RecSys, Sketch, build_sketch


def user_examples(
    data: RecSys, users: np.ndarray
) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
    """(user, item, rating) of every target pair of ``users``, flattened."""
    users = np.asarray(users)
    if users.ndim != 1 or not len(users):
        raise ValueError("users must be a non-empty 1-d array of user ids")
    if not np.issubdtype(users.dtype, np.integer):
        raise TypeError(f"users must be integer ids, got dtype {users.dtype}")
    if users.min() < 0 or users.max() >= data.n_users:
        raise ValueError(f"user ids must lie in [0, {data.n_users})")
    uu = np.repeat(users, data.target_items.shape[1])
    return (
        uu,
        data.target_items[users].ravel(),
        torch.as_tensor(data.target_ratings[users].ravel()),
    )


def sketches_for(
    data: RecSys,
    labels: np.ndarray,
    k: int,
    L: int = 3,
    min_count: int = 3,
    delta: float = 0.3,
) -> list[Sketch]:
    """Every user's sketch under the item topics ``labels`` (n_items,)."""
    return [
        build_sketch(
            labels[data.hist_items[u]], data.hist_ratings[u], k, L, min_count, delta
        )
        for u in range(data.n_users)
    ]


def recent_sketches(
    data: RecSys,
    labels: np.ndarray,
    k: int,
    L: int = 3,
    K: int = 16,
    min_count: int = 1,
    delta: float = 0.3,
) -> list[Sketch]:
    """The sketch-mae control: the same sketch (format, bound 2L + 2, topics) built from
    each user's LAST K history items only, so that the long-term aggregation is removed
    and nothing else. min_count 1 by default: with 16 items a topic is seen
    about twice."""
    K = as_int(K, "K", lo=1)
    if K > min(len(h) for h in data.hist_items):
        raise ValueError(f"K={K} exceeds the shortest history")
    return [
        build_sketch(
            labels[data.hist_items[u][-K:]],
            data.hist_ratings[u][-K:],
            k,
            L,
            min_count,
            delta,
        )
        for u in range(data.n_users)
    ]


def truncated_inputs(
    data: RecSys,
    labels: np.ndarray,
    uu: np.ndarray,
    items: np.ndarray,
    K: int,
    vocab: M.Vocab,
) -> torch.Tensor:
    """Recent-K truncation: the K most recent history items of each user, as prompts."""
    K = as_int(K, "K", lo=1)
    if K > min(len(h) for h in data.hist_items):
        raise ValueError(f"K={K} exceeds the shortest history")
    ht = np.stack([labels[data.hist_items[u][-K:]] for u in uu])
    hr = np.stack([data.hist_ratings[u][-K:] for u in uu])
    return M.history_prompts(ht, hr, labels[items], vocab)


def fit_answer(
    prompts: dict,
    y: dict,
    vocab: M.Vocab,
    lrs,
    steps: int,
    d: int,
    layers: int,
    seed: int,
    batch: int = 64,
    device=None,
    init: M.TinyRecTransformer | None = None,
    h_teacher=None,
    lam: float = 0.0,
) -> dict:
    """Train the answer-only model once per learning rate in ``lrs`` on
    prompts["train"], keep the one with the lowest validation MAE, and score it on
    the test users.

    prompts, y: {"train", "val", "test"} -> (N, T) prompts and (N,) ratings. ``init``:
    start from a copy of this model (stage (ii) starts from the reasoning model).
    Returns {"lr", "val", "test", "model", "val_by_lr"}.
    """
    if not len(lrs):
        raise ValueError("lrs must hold at least one learning rate")
    best = None
    by_lr = {}
    for lr in lrs:
        with seeded(seed):  # the same initial weights for every lr and arm
            model = M.TinyRecTransformer(vocab.size, d=d, layers=layers, heads=2)
        if init is not None:
            model.load_state_dict(init.state_dict())
        model.to(device or "cpu")
        M.train_answer(
            model,
            prompts["train"],
            y["train"],
            steps,
            lr,
            batch=batch,
            seed=seed,
            h_teacher=h_teacher,
            lam=lam,
        )
        val = M.mae(
            M.predict_answer(model, prompts["val"].to(model.tok.weight.device)),
            y["val"],
        )
        by_lr[lr] = val
        if best is None or val < best["val"]:
            best = {"lr": lr, "val": val, "model": model}
    test_p = prompts["test"].to(best["model"].tok.weight.device)
    best["test"] = M.mae(M.predict_answer(best["model"], test_p), y["test"])
    best["val_by_lr"] = by_lr
    return best


def topic_mean_predict(
    data: RecSys,
    labels: np.ndarray,
    uu: np.ndarray,
    items: np.ndarray,
    K: int | None,
    prior: float = 1.0,
) -> torch.Tensor:
    """A closed-form reader of a (truncated) history, no training: the mean rating of
    the user's last K history items on the candidate's topic, shrunk to 3 with ``prior``
    pseudo-ratings, rounded: round((sum + 3 prior) / (n + prior)).
    K=None: whole history."""
    if K is not None:
        K = as_int(K, "K", lo=1)
    if isinstance(prior, bool) or not isinstance(prior, (int, float, np.floating)):
        raise TypeError(f"prior must be a float, got {type(prior).__name__}")
    if not (np.isfinite(prior) and prior >= 0):
        raise ValueError(f"prior must be a finite float >= 0, got {prior}")
    out = np.empty(len(uu))
    for j, (u, i) in enumerate(zip(uu, items)):
        h = slice(None) if K is None else slice(-K, None)
        on = labels[data.hist_items[u][h]] == labels[i]
        r = data.hist_ratings[u][h][on]
        out[j] = (r.sum() + 3 * prior) / (len(r) + prior) if len(r) + prior > 0 else 3.0
    return torch.as_tensor(np.clip(np.rint(out), 1, 5)).long()


def oracle_sketches(
    data: RecSys, labels: np.ndarray, k: int, L: int = 3
) -> list[Sketch]:
    """Every user's sketch as the generator planted it (an oracle, for the chapter's
    planted case): liked, the clusters whose items' planted topic (their majority) the
    user likes; disliked, those whose planted topic the user dislikes; at most L a side,
    lowest cluster id first. labels: (n_items,) the discovered clusters, 0..k-1."""
    labels = np.asarray(labels)
    k, L = as_int(k, "k", lo=1), as_int(L, "L", lo=0)
    if labels.shape != data.item_topic.shape or not np.issubdtype(
        labels.dtype, np.integer
    ):
        raise ValueError(
            f"labels must be (n_items,) = {data.item_topic.shape} integer cluster ids"
        )
    if labels.min() < 0 or labels.max() >= k:
        raise ValueError(f"cluster ids must lie in [0, {k})")
    topic = np.array(
        [
            np.bincount(data.item_topic[labels == c], minlength=data.n_topics).argmax()
            if (labels == c).any()
            else -1
            for c in range(k)
        ]
    )
    out = []
    for u in range(data.n_users):
        stance = np.where(topic >= 0, data.pref[u, np.maximum(topic, 0)], 0)
        liked = tuple(int(c) for c in np.flatnonzero(stance > 0)[:L])
        disliked = tuple(int(c) for c in np.flatnonzero(stance < 0)[:L])
        out.append(Sketch(liked, disliked))
    return out
