"""SIREN's data side: a seeded catalogue with item descriptions, users with long, noisy
histories, TF-IDF + k-means topics, and the token-bounded interest sketch.

Everything here is NumPy / scikit-learn; the model side is in :mod:`.model`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.cluster import KMeans
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import adjusted_rand_score, silhouette_score

from ..validate import as_float, as_int

RATINGS = (1, 2, 3, 4, 5)


# ------------------------------------------------------------------------ the generator
def _pseudo_words(n: int, rng_seed: int) -> list[str]:
    """n distinct pronounceable pseudo-words (consonant-vowel syllables),
    reproducibly."""
    rng = np.random.default_rng(rng_seed)
    cons, vows = list("bdfgklmnprstvz"), list("aeiou")
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        w = "".join(
            rng.choice(cons) + rng.choice(vows) for _ in range(rng.integers(2, 4))
        )
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


@dataclass
class RecSys:
    """A synthetic catalogue and its users.

    item_words: (n_items, desc_len) int word ids; item_text: the
        descriptions as strings;
    item_topic: (n_items,) planted topics (used only to *score* topic recovery, never by
    the method); pref: (n_users, n_topics) in {-1, 0, +1} (disliked, neutral, liked);
    hist_items / hist_ratings: per user, arrays in time order (oldest first), noisy;
    hist_noise: per user, which interactions were random; target_items / target_ratings:
    (n_users, n_targets) held-out items and their ratings (no random interactions).
    """

    words: list[str]
    item_words: np.ndarray
    item_text: list[str]
    item_topic: np.ndarray
    pref: np.ndarray
    hist_items: list[np.ndarray]
    hist_ratings: list[np.ndarray]
    hist_noise: list[np.ndarray]
    target_items: np.ndarray
    target_ratings: np.ndarray
    n_topics: int

    @property
    def n_users(self) -> int:
        return len(self.hist_items)

    @property
    def desc_len(self) -> int:
        return self.item_words.shape[1]


def clean_rating(
    pref: np.ndarray, rng: np.random.Generator, sigma: float
) -> np.ndarray:
    """Rating of an item whose topic the user likes (+1), dislikes (-1) or neither (0):
    round(3 + 1.5 * pref + N(0, sigma^2)), clipped to 1..5."""
    r = np.rint(3 + 1.5 * pref + sigma * rng.standard_normal(pref.shape))
    return np.clip(r, 1, 5).astype(np.int64)


def make_recsys(
    n_items: int = 400,
    n_users: int = 800,
    n_topics: int = 8,
    hist_min: int = 50,
    hist_max: int = 300,
    noise: float = 0.3,
    topic_words: int = 4,
    filler_words: int = 3,
    words_per_topic: int = 10,
    n_filler: int = 40,
    leak: float = 0.0,
    n_like: int = 2,
    n_dislike: int = 2,
    sigma: float = 0.5,
    n_targets: int = 8,
    seed: int = 0,
) -> RecSys:
    """A seeded catalogue and users (the chapter's stand-in for Amazon/MovieLens data).

    Item i has a planted topic z_i and a description of ``topic_words`` words of its
    topic's vocabulary (each swapped, with probability ``leak``, for a word of another
    topic) and ``filler_words`` shared filler words, shuffled. User u likes ``n_like``
    topics and dislikes ``n_dislike``; a history of U[hist_min, hist_max] items, each
    rated ``clean_rating`` except that with probability ``noise`` the rating is uniform
    on 1..5 (an interaction that says nothing about taste). Targets: ``n_targets``
    further items per user with clean ratings.
    """
    n_items, n_users, n_topics = (
        as_int(n_items, "n_items", lo=2),
        as_int(n_users, "n_users", lo=1),
        as_int(n_topics, "n_topics", lo=2),
    )
    hist_min, hist_max = (
        as_int(hist_min, "hist_min", lo=1),
        as_int(hist_max, "hist_max", lo=1),
    )
    if hist_max < hist_min:
        raise ValueError(f"hist_max must be >= hist_min, got {hist_max} < {hist_min}")
    topic_words, filler_words = (
        as_int(topic_words, "topic_words", lo=1),
        as_int(filler_words, "filler_words", lo=0),
    )
    words_per_topic, n_filler = (
        as_int(words_per_topic, "words_per_topic", lo=1),
        as_int(n_filler, "n_filler", lo=0),
    )
    if topic_words > words_per_topic:
        raise ValueError(
            f"topic_words ({topic_words}) must be <= words_per_topic "
            f"({words_per_topic})"
        )
    if filler_words > n_filler:
        raise ValueError(
            f"filler_words ({filler_words}) must be <= n_filler ({n_filler})"
        )
    n_like, n_dislike = (
        as_int(n_like, "n_like", lo=0),
        as_int(n_dislike, "n_dislike", lo=0),
    )
    if n_like + n_dislike > n_topics:
        raise ValueError(f"n_like + n_dislike must be <= n_topics ({n_topics})")
    noise, leak = (
        as_float(noise, "noise", lo=0.0, hi=1.0),
        as_float(leak, "leak", lo=0.0, hi=1.0),
    )
    sigma = as_float(sigma, "sigma", lo=0.0, hi=10.0)
    n_targets, seed = as_int(n_targets, "n_targets", lo=1), as_int(seed, "seed", lo=0)
    rng = np.random.default_rng(seed)

    words = _pseudo_words(n_topics * words_per_topic + n_filler, 12345)
    topic_vocab = np.arange(n_topics * words_per_topic).reshape(
        n_topics, words_per_topic
    )
    filler = np.arange(n_topics * words_per_topic, len(words))

    item_topic = rng.integers(0, n_topics, n_items)
    own = np.argsort(rng.random((n_items, words_per_topic)), axis=1)[:, :topic_words]
    tw = topic_vocab[item_topic[:, None], own]
    other = (
        item_topic[:, None] + rng.integers(1, n_topics, (n_items, topic_words))
    ) % n_topics
    leaked = topic_vocab[
        other, rng.integers(0, words_per_topic, (n_items, topic_words))
    ]
    tw = np.where(rng.random((n_items, topic_words)) < leak, leaked, tw)
    fw = filler[np.argsort(rng.random((n_items, n_filler)), axis=1)[:, :filler_words]]
    item_words = np.concatenate([tw, fw], axis=1)
    item_words = np.take_along_axis(
        item_words, np.argsort(rng.random(item_words.shape), 1), 1
    )
    item_text = [" ".join(words[w] for w in row) for row in item_words]

    order = np.argsort(rng.random((n_users, n_topics)), axis=1)
    pref = np.zeros((n_users, n_topics), dtype=np.int64)
    rows = np.arange(n_users)[:, None]
    pref[rows, order[:, :n_like]] = 1
    pref[rows, order[:, n_like : n_like + n_dislike]] = -1

    hist_items, hist_ratings, hist_noise = [], [], []
    for u in range(n_users):
        n = int(rng.integers(hist_min, hist_max + 1))
        items = rng.integers(0, n_items, n)
        r = clean_rating(pref[u, item_topic[items]], rng, sigma)
        is_noise = rng.random(n) < noise
        r = np.where(is_noise, rng.integers(1, 6, n), r)
        hist_items.append(items)
        hist_ratings.append(r)
        hist_noise.append(is_noise)
    target_items = rng.integers(0, n_items, (n_users, n_targets))
    target_ratings = clean_rating(pref[rows, item_topic[target_items]], rng, sigma)
    return RecSys(
        words,
        item_words,
        item_text,
        item_topic,
        pref,
        hist_items,
        hist_ratings,
        hist_noise,
        target_items,
        target_ratings,
        n_topics,
    )


def split_users(
    n_users: int, frac_val: float = 0.15, frac_test: float = 0.25, seed: int = 0
) -> dict[str, np.ndarray]:
    """Disjoint train / val / test user ids (a seeded permutation)."""
    n_users = as_int(n_users, "n_users", lo=3)
    frac_val, frac_test = (
        as_float(frac_val, "frac_val", lo=0.0, hi=1.0),
        as_float(frac_test, "frac_test", lo=0.0, hi=1.0),
    )
    if frac_val + frac_test >= 1:
        raise ValueError("frac_val + frac_test must be < 1")
    perm = np.random.default_rng(seed).permutation(n_users)
    n_val, n_test = max(1, int(frac_val * n_users)), max(1, int(frac_test * n_users))
    return {
        "test": perm[:n_test],
        "val": perm[n_test : n_test + n_val],
        "train": perm[n_test + n_val :],
    }


# --------------------------------------------------------------------- encode + cluster
def tfidf_from_scratch(docs: list[str]) -> np.ndarray:
    """TF-IDF as scikit-learn's default defines it, from first principles.

    tf(t, d) = count of t in d; idf(t) = ln((1 + n) / (1 + df(t))) + 1 (smoothed); rows
    L2-normalised. Columns in sorted-vocabulary order. Returns
    (n_docs, n_terms) float64.
    """
    if (
        isinstance(docs, str)
        or not all(isinstance(d, str) for d in docs)
        or not len(docs)
    ):
        raise TypeError("docs must be a non-empty list of str")
    toks = [d.split() for d in docs]
    vocab = sorted({w for t in toks for w in t})
    index = {w: j for j, w in enumerate(vocab)}
    tf = np.zeros((len(docs), len(vocab)))
    for i, t in enumerate(toks):
        for w in t:
            tf[i, index[w]] += 1
    df = (tf > 0).sum(0)
    idf = np.log((1 + len(docs)) / (1 + df)) + 1
    x = tf * idf
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def encode_items(texts: list[str]) -> np.ndarray:
    """scikit-learn's TfidfVectorizer (defaults, whitespace tokens):
    (n_items, n_terms)."""
    if (
        isinstance(texts, str)
        or not len(texts)
        or not all(isinstance(t, str) for t in texts)
    ):
        raise TypeError("texts must be a non-empty list of str")
    vec = TfidfVectorizer(token_pattern=r"\S+", lowercase=False)
    return vec.fit_transform(texts).toarray()


def discover_topics(
    x: np.ndarray, k_grid=range(4, 17), seed: int = 0, n_init: int = 4
) -> dict:
    """k-means on the item encodings, with k chosen by the silhouette score (no labels).

    x: (n_items, n_features). Returns {"k", "labels" (n_items,), "silhouette" {k:
    score}, "model" (the fitted KMeans)}.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or not np.isfinite(x).all():
        raise ValueError(
            f"x must be a finite 2-d array (n_items, n_features), got shape {x.shape}"
        )
    ks = [as_int(k, "k", lo=2) for k in k_grid]
    if not ks or max(ks) >= len(x):
        raise ValueError(f"k_grid must be non-empty with every k < n_items ({len(x)})")
    fits, scores = {}, {}
    for k in ks:
        km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(x)
        fits[k], scores[k] = km, float(silhouette_score(x, km.labels_))
    best = max(scores, key=scores.get)
    return {
        "k": best,
        "labels": fits[best].labels_.copy(),
        "silhouette": scores,
        "model": fits[best],
    }


def topic_ari(labels: np.ndarray, planted: np.ndarray) -> float:
    """Adjusted Rand index (scikit-learn) of discovered against planted topics."""
    return float(adjusted_rand_score(planted, labels))


# ------------------------------------------------------------------------ the sketch
@dataclass(frozen=True)
class Sketch:
    """A user's interest sketch: up to L liked and L disliked topic ids
    (strongest first)."""

    liked: tuple[int, ...]
    disliked: tuple[int, ...]

    def to_tokens(self) -> list[str]:
        return (
            ["<like>"]
            + [f"<t{t}>" for t in self.liked]
            + ["<dislike>"]
            + [f"<t{t}>" for t in self.disliked]
        )


def build_sketch(
    topics: np.ndarray,
    ratings: np.ndarray,
    n_topics: int,
    L: int = 3,
    min_count: int = 3,
    delta: float = 0.3,
) -> Sketch:
    """Compress one history into its interest sketch.

    topics, ratings: (n,) the discovered topic and the rating of each history item.
    For each topic t with n_t >= min_count items: the deviation d_t = mean rating on t
    minus the user's mean rating, and its signal-to-noise score z_t = d_t * sqrt(n_t).
    Liked: the (at most L) topics with d_t > delta, largest z_t first; disliked: d_t <
    -delta, smallest z_t first (ties: lower topic id first). At most 2L + 2 tokens,
    whatever the history's length.
    """
    topics, ratings = np.asarray(topics), np.asarray(ratings, dtype=float)
    if topics.ndim != 1 or topics.shape != ratings.shape or not len(topics):
        raise ValueError(
            f"topics and ratings must be non-empty 1-d arrays of one length, "
            f"got {topics.shape} and {ratings.shape}"
        )
    if not np.issubdtype(topics.dtype, np.integer):
        raise TypeError(f"topics must be integer topic ids, got dtype {topics.dtype}")
    n_topics, L, min_count = (
        as_int(n_topics, "n_topics", lo=1),
        as_int(L, "L", lo=0),
        as_int(min_count, "min_count", lo=1),
    )
    if topics.min() < 0 or topics.max() >= n_topics:
        raise ValueError(f"topic ids must lie in [0, {n_topics})")
    if not np.isfinite(ratings).all() or ratings.min() < 1 or ratings.max() > 5:
        raise ValueError(
            f"ratings must be finite and on the 1..5 scale, got range "
            f"[{ratings.min():g}, {ratings.max():g}]"
        )
    delta = as_float(delta, "delta", lo=0.0, hi=4.0)
    count = np.bincount(topics, minlength=n_topics)
    total = np.bincount(topics, weights=ratings, minlength=n_topics)
    d = np.where(count > 0, total / np.maximum(count, 1), 0.0) - ratings.mean()
    z = d * np.sqrt(count)
    ok = count >= min_count
    # stable sorts: ties in z go to the lower topic id (the checker accepts
    # any tie order)
    liked = [int(t) for t in np.argsort(-z, kind="stable") if ok[t] and d[t] > delta][
        :L
    ]
    disliked = [
        int(t) for t in np.argsort(z, kind="stable") if ok[t] and d[t] < -delta
    ][:L]
    return Sketch(tuple(liked), tuple(disliked))


def raw_history_tokens(desc_len: int, n_items) -> np.ndarray:
    """Tokens a raw-history prompt spends on n items: each item's description plus its
    rating token, n * (desc_len + 1). n_items: non-negative integer counts."""
    n = np.asarray(n_items)
    if n.dtype == bool or not np.issubdtype(n.dtype, np.integer):
        raise TypeError(f"n_items must hold integer counts, got dtype {n.dtype}")
    if n.size and n.min() < 0:
        raise ValueError(f"n_items must be >= 0, got min {n.min()}")
    return n * (as_int(desc_len, "desc_len", lo=1) + 1)


# ------------------------------------------------------------------------ the exercise
def check_sketch(fn) -> "ExerciseVerdict":  # noqa: F821 string annotation only
    """Grade a student's ``fn(topics, ratings, n_topics, L, min_count, delta)`` that
    returns ``(liked, disliked)``: two tuples of topic ids, strongest first, as
    :func:`build_sketch` defines them."""
    from ..core import grade_exercise

    return grade_exercise(fn, _trial_sketch)


def _trial_sketch(fn) -> str:
    rng = np.random.default_rng(7)
    for case in range(40):
        k = int(rng.integers(3, 9))
        n = int(rng.integers(5, 120))
        topics = rng.integers(0, k, n)
        ratings = rng.integers(1, 6, n)
        L, mc, delta = (
            int(rng.integers(1, 4)),
            int(rng.integers(1, 5)),
            float(rng.choice([0.0, 0.3, 0.6])),
        )
        got = fn(topics, ratings, k, L, mc, delta)
        if not (isinstance(got, tuple) and len(got) == 2):
            raise AssertionError(
                "return a pair (liked, disliked) of tuples of topic ids"
            )
        liked, disliked = (tuple(int(t) for t in got[0]), tuple(int(t) for t in got[1]))
        if len(liked) > L or len(disliked) > L:
            raise AssertionError(
                f"case {case}: a side holds more than L={L} topics; the "
                "sketch is token-bounded"
            )
        z, up, down = _scores(topics, ratings, k, mc, delta)
        # equal z_t may come in any order, also at the cut-off L: compare up to ties
        if not (
            _top_up_to_ties(z, up, liked, L) and _top_up_to_ties(-z, down, disliked, L)
        ):
            raise AssertionError(
                f"case {case}: wrong topics on a side. Hints: "
                "deviations are measured from "
                "the user's own mean rating; topics seen fewer than min_count times "
                "are "
                "left out; a liked topic must clear +delta, a disliked one -delta"
            )
        if not (_ordered(z[list(liked)]) and _ordered(-z[list(disliked)])):
            raise AssertionError(
                f"case {case}: right topics, wrong order; rank by the "
                "signal-to-noise score d_t * sqrt(n_t), not by d_t"
            )
    return "correct: your sketch matches build_sketch on 40 random histories"


def _scores(topics, ratings, k, min_count, delta):
    """z_t and the topics eligible as liked / disliked, as build_sketch defines them."""
    ratings = np.asarray(ratings, dtype=float)
    count = np.bincount(topics, minlength=k)
    total = np.bincount(topics, weights=ratings, minlength=k)
    d = np.where(count > 0, total / np.maximum(count, 1), 0.0) - ratings.mean()
    ok = count >= min_count
    return d * np.sqrt(count), ok & (d > delta), ok & (d < -delta)


def _top_up_to_ties(score, eligible, got, L, tol=1e-9) -> bool:
    """Is ``got`` a set of min(L, #eligible) distinct eligible topics whose scores are
    the largest, ties at the cut-off broken either way?"""
    got = list(got)
    n = min(L, int(eligible.sum()))
    if len(got) != n or len(set(got)) != n or not all(0 <= t < len(score) for t in got):
        return False
    if not all(eligible[t] for t in got):
        return False
    rest = [score[t] for t in np.flatnonzero(eligible) if t not in got]
    return not rest or not got or min(score[got]) >= max(rest) - tol


def _ordered(v, tol=1e-9) -> bool:
    return bool((np.diff(v) <= tol).all())
