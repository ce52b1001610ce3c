"""Exact-substring deduplication with a suffix array and an LCP array, sharded.

The idea of Lee et al.'s ``deduplicate-text-datasets`` (which GneissWeb adapts, run per
parquet file): concatenate the documents, sort all suffixes, and any substring of length
>= L that occurs twice shows up as two *adjacent* suffixes whose longest common prefix
(LCP) is >= L.

Our rule, "keep the first copy": a window ``s[p:p+L]`` is a duplicate when the same L
symbols start at some earlier position q < p. Every duplicate window is removed; the
union of the removed windows is what goes. The suffix array is built by ``pydivsufsort``
(a well-kept C library, O(n log n)); the LCP by its Kasai implementation; the keep-first
logic, the document separators and the sharding are ours, in vectorised NumPy.
``suffix_array_doubling`` and ``duplicate_mask_naive`` are the from-scratch references
the tests compare against.
"""

from __future__ import annotations

from math import comb
from typing import Sequence

import numpy as np

from ..core import ExerciseVerdict, grade_exercise

SEP_BASE = 256  # symbols >= 256 are document separators (one unique id per document)


def _as_symbols(seq) -> np.ndarray:
    if isinstance(seq, (bytes, bytearray)):
        return np.frombuffer(bytes(seq), dtype=np.uint8).astype(np.int32)
    if isinstance(seq, str):
        return np.frombuffer(seq.encode("utf-8"), dtype=np.uint8).astype(np.int32)
    arr = np.asarray(seq)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(
            f"expected bytes, str or a 1-d integer array, got {type(seq).__name__} "
            f"{getattr(arr, 'shape', '')}"
        )
    if arr.size and arr.min() < 0:
        raise ValueError("symbols must be non-negative integers")
    return arr.astype(np.int32)


def suffix_array(seq) -> np.ndarray:
    """Suffix array of ``seq`` (bytes, str or 1-d int array of n symbols) -> (n,) int64
    positions, the start of each suffix in lexicographic order.
    Built with pydivsufsort."""
    from pydivsufsort import divsufsort

    s = _as_symbols(seq)
    if s.size == 0:
        return np.zeros(0, dtype=np.int64)
    if s.max() < 256:
        return divsufsort(s.astype(np.uint8)).astype(np.int64)
    return divsufsort(s).astype(np.int64)


def suffix_array_doubling(seq) -> np.ndarray:
    """The same suffix array by prefix doubling in NumPy, O(n log^2 n): a
    from-scratch reference.

    Round k sorts suffixes by their first 2^k symbols, using the rank pair
    (rank[i], rank[i+2^(k-1)]).
    """
    s = _as_symbols(seq).astype(np.int64)
    n = s.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    rank = s.copy()
    k = 1
    while True:
        second = np.full(n, -1, dtype=np.int64)
        # rank of the suffix 2^(k-1) further on, -1 past the end
        second[: n - k] = rank[k:]
        order = np.lexsort((second, rank))  # sort by (rank, second)
        key_r, key_s = rank[order], second[order]
        new = np.empty(n, dtype=np.int64)
        new[order] = np.concatenate(
            [[0], np.cumsum((key_r[1:] != key_r[:-1]) | (key_s[1:] != key_s[:-1]))]
        )
        rank = new
        if rank.max() == n - 1:  # all ranks distinct: sorted
            return order.astype(np.int64)
        k *= 2


def lcp_array(seq, sa: np.ndarray) -> np.ndarray:
    """LCP array: ``lcp[i]`` = length of the longest common prefix of suffixes ``sa[i]``
    and ``sa[i+1]`` (``lcp[n-1] = 0``). Kasai's O(n) algorithm, via pydivsufsort."""
    from pydivsufsort import kasai

    s = _as_symbols(seq)
    sa = np.asarray(sa)
    if sa.shape != s.shape:
        raise ValueError(
            f"sa must have shape {s.shape} (one entry per symbol), got {sa.shape}"
        )
    if s.size == 0:
        return np.zeros(0, dtype=np.int64)
    s_in = s.astype(np.uint8) if s.max() < 256 else s
    return kasai(s_in, sa.astype(np.int64)).astype(np.int64)


def lcp_kasai_python(seq, sa: np.ndarray) -> np.ndarray:
    """Kasai's algorithm written out in Python (reference for the tests and
    the chapter).

    Walk suffixes in text order; the LCP with the next suffix in SA order drops by at
    most one from one text position to the next, so h never resets: O(n) in total.
    """
    s = _as_symbols(seq)
    n = s.size
    rank = np.empty(n, dtype=np.int64)
    rank[sa] = np.arange(n)
    lcp = np.zeros(n, dtype=np.int64)
    h = 0
    for i in range(n):
        r = rank[i]
        if r == n - 1:
            h = 0
            continue
        j = sa[r + 1]
        while i + h < n and j + h < n and s[i + h] == s[j + h]:
            h += 1
        lcp[r] = h
        h = max(h - 1, 0)
    return lcp


def concat_with_separators(docs: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of all docs joined by unique separator symbols (256 + doc index).

    Returns (symbols (n,) int32, starts (n_docs + 1,) int64) where doc d occupies
    ``symbols[starts[d] : starts[d+1] - 1]`` and ``symbols[starts[d+1] - 1]`` is its
    separator. A unique separator per document means no common prefix can run across a
    document boundary.
    """
    if isinstance(docs, (str, bytes)):
        raise TypeError("docs must be a sequence of str, not a single str")
    parts, starts, pos = [], [0], 0
    for d, text in enumerate(docs):
        if not isinstance(text, str):
            raise TypeError(f"docs[{d}] must be a str, got {type(text).__name__}")
        b = np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int32)
        parts.append(b)
        parts.append(np.array([SEP_BASE + d], dtype=np.int32))
        pos += b.size + 1
        starts.append(pos)
    symbols = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    return symbols, np.asarray(starts, dtype=np.int64)


def duplicate_mask(
    seq, L: int, sa: np.ndarray | None = None, lcp: np.ndarray | None = None
) -> np.ndarray:
    """Boolean (n,) mask of the symbols to remove: the union of windows ``[p, p+L)``
    whose content already started at an earlier position (keep the first copy).
    Vectorised, O(n) after the SA.

    Suffixes that share their first L symbols form one contiguous run of the suffix
    array (adjacent LCP >= L). In each run the smallest position is the first copy;
    every other position p starts a duplicate window.
    """
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or L < 1:
        raise ValueError(f"L must be a positive int, got {L!r}")
    s = _as_symbols(seq)
    n = s.size
    if n < 2:
        return np.zeros(n, dtype=bool)
    sa = suffix_array(s) if sa is None else np.asarray(sa, dtype=np.int64)
    lcp = lcp_array(s, sa) if lcp is None else np.asarray(lcp, dtype=np.int64)
    if sa.shape != (n,) or lcp.shape != (n,):
        raise ValueError(
            f"sa and lcp must have shape ({n},), got {sa.shape} and {lcp.shape}"
        )
    linked = lcp[:-1] >= L  # sa[i] and sa[i+1] share >= L symbols
    run_id = np.concatenate([[0], np.cumsum(~linked)])  # (n,) run index of each SA slot
    run_min = np.full(run_id[-1] + 1, n, dtype=np.int64)
    np.minimum.at(run_min, run_id, sa)  # first copy of each run
    run_size = np.bincount(run_id)
    # positions p with an earlier copy
    dup_start = sa[(run_size[run_id] > 1) & (sa != run_min[run_id])]
    cover = np.zeros(n + 1, dtype=np.int64)  # difference array: +1 at p, -1 at p+L
    np.add.at(cover, dup_start, 1)
    np.add.at(cover, np.minimum(dup_start + L, n), -1)
    return np.cumsum(cover[:-1]) > 0


def duplicate_mask_naive(seq, L: int) -> np.ndarray:
    """The definition, literally: slide a window of L symbols, remember every window
    seen, and mark a window that was seen before. O(n L) time and memory -- for small
    inputs and tests only."""
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or L < 1:
        raise ValueError(f"L must be a positive int, got {L!r}")
    s = _as_symbols(seq).tolist()
    n = len(s)
    mask = np.zeros(n, dtype=bool)
    seen: set[tuple] = set()
    for p in range(n - L + 1):
        w = tuple(s[p : p + L])
        if w in seen:
            mask[p : p + L] = True
        else:
            seen.add(w)
    return mask


def dedup_docs(docs: Sequence[str], L: int) -> tuple[list[str], float]:
    """Remove repeated substrings of >= L bytes across ``docs`` (one shard), keeping
    first copies.

    Returns (deduplicated docs, fraction of bytes removed). Separators are never removed
    (they are unique), so every document keeps its slot, possibly as an empty string.
    """
    if isinstance(docs, (str, bytes)):
        raise TypeError(
            "docs must be a sequence of str (one per document), not a single "
            f"{type(docs).__name__}; wrap one document as [text]"
        )
    symbols, starts = concat_with_separators(docs)
    mask = duplicate_mask(symbols, L)
    out = []
    for d in range(len(docs)):
        a, b = starts[d], starts[d + 1] - 1
        kept = symbols[a:b][~mask[a:b]]
        out.append(kept.astype(np.uint8).tobytes().decode("utf-8", errors="ignore"))
    n_bytes = max(int(starts[-1]) - len(docs), 1)
    return out, float(mask.sum()) / n_bytes


def remove_repeats(
    docs: Sequence[str], L: int, shards: int = 1
) -> tuple[list[str], float]:
    """Sharded exact-substring dedup: split ``docs`` into ``shards`` contiguous,
    near-equal shards (GneissWeb: one parquet file each), deduplicate each shard alone,
    and return the docs in their original order with the overall fraction of bytes
    removed. Memory: one shard's suffix array."""
    if isinstance(docs, (str, bytes)):
        # a str is itself a sequence (of characters): refuse it rather than treat each
        # character as a document
        raise TypeError(
            "docs must be a sequence of str (one per document), not a single "
            f"{type(docs).__name__}; wrap one document as [text]"
        )
    if not isinstance(shards, int) or isinstance(shards, bool) or shards < 1:
        raise ValueError(f"shards must be a positive int, got {shards!r}")
    if not isinstance(L, (int, np.integer)) or isinstance(L, bool) or L < 1:
        raise ValueError(f"L must be a positive int, got {L!r}")
    bounds = np.linspace(0, len(docs), shards + 1).round().astype(int)
    out, removed, total = [], 0.0, 0
    for a, b in zip(bounds[:-1], bounds[1:]):
        part = list(docs[a:b])
        if not part:
            continue
        kept, frac = dedup_docs(part, L)
        size = sum(len(t.encode("utf-8")) for t in part)
        out.extend(kept)
        removed += frac * size
        total += size
    return out, removed / max(total, 1)


def expected_surviving_copies(n_docs: int, copies: int, shards: int) -> float:
    """Expected number of copies of one repeated block that survive sharded
    keep-first dedup.

    The ``copies`` documents holding the block are a uniformly random subset of
    ``n_docs``; shards are ``shards`` contiguous blocks of ``n_docs / shards``
    documents. One copy survives per shard that holds at least one, so by linearity of
    expectation E[survivors] = sum_j (1 - C(n - n_j, k) / C(n, k)), with n_j the size of
    shard j. For large n this is s (1 - (1 - 1/s)^k); with s = 1 it is exactly 1.
    """
    if copies < 1 or copies > n_docs or shards < 1:
        raise ValueError(
            f"need 1 <= copies <= n_docs and shards >= 1, got {copies}, {n_docs}, "
            f"{shards}"
        )
    bounds = np.linspace(0, n_docs, shards + 1).round().astype(int)
    total = comb(n_docs, copies)
    return float(
        sum(
            1 - comb(n_docs - (b - a), copies) / total
            for a, b in zip(bounds[:-1], bounds[1:])
        )
    )


def check_duplicate_mask(fn, trials: int = 30, seed: int = 0) -> ExerciseVerdict:
    """Grade a student's ``fn(symbols: np.ndarray, L: int) -> bool mask`` against the
    keep-first definition on random small inputs with planted repeats.

    Returns an :class:`~iclr26.core.ExerciseVerdict`: "not done yet" on the stub,
    "wrong: because ..." naming the first failing input with a hint (never the expected
    mask), or "correct: ...".
    """
    return grade_exercise(fn, lambda f: _trial_duplicate_mask(f, trials, seed))


def _trial_duplicate_mask(fn, trials: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    for t in range(trials):
        alphabet = int(rng.integers(2, 6))
        s = rng.integers(0, alphabet, size=int(rng.integers(5, 80)))
        if rng.random() < 0.7 and s.size > 12:  # plant a copy of a random span
            a = int(rng.integers(0, s.size - 6))
            ln = int(rng.integers(3, 7))
            b = int(rng.integers(0, s.size - ln))
            s[b : b + ln] = s[a : a + ln].copy()
        L = int(rng.integers(1, 6))
        want = duplicate_mask_naive(s, L)
        got = np.asarray(fn(s.copy(), L))
        case = f"case {t} (symbols={s.tolist()}, L={L})"
        assert got.shape == want.shape, (
            f"{case}: return one flag per symbol, shape {want.shape}, not {got.shape}"
        )
        got = got.astype(bool)
        extra, missed = got & ~want, want & ~got
        assert not extra.any(), (
            f"{case}: you remove {int(extra.sum())} position(s) that lie in no later "
            "copy of a repeated L-window; the first copy must stay"
        )
        assert not missed.any(), (
            f"{case}: {int(missed.sum())} position(s) inside a later copy of a "
            "repeated "
            "L-window survive; reread the keep-first definition in Derive"
        )
    return f"all {trials} cases match the keep-first definition"
