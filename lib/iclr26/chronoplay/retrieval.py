"""Retrieval per time segment: BM25 (checked against bm25s), scikit-learn TF-IDF on
words or character 3-grams, Recall@k, the extractive reader, and the per-version
evaluation."""

from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp

from ..validate import as_float, as_int
from .world import TOPICS, GameWorld, Questions, _texts, build_kb, tokenize


# --------------------------------------------------------------------------- retrieval
class BM25Index:
    """Okapi BM25 with Lucene's idf, as ``bm25s`` (method "lucene") scores it:
    score(q, d) = sum_{t in q} idf(t) tf(t,d) / (tf(t,d) + k1 (1 - b + b |d| / avgdl)),
    idf(t) = log(1 + (N - df(t) + 0.5) / (df(t) + 0.5)). (The classic form multiplies by
    k1 + 1, a constant that leaves every ranking unchanged.)"""

    def __init__(self, docs: list[str], k1: float = 1.5, b: float = 0.75):
        docs = _texts(docs, "docs")
        k1 = as_float(k1, "k1", lo=0.0, open_lo=True)
        b = as_float(b, "b", lo=0.0, hi=1.0)
        toks = [tokenize(d) for d in docs]
        if not any(toks):
            raise ValueError("docs hold no word at all: there is nothing to index")
        self.vocab = {w: i for i, w in enumerate(sorted({w for t in toks for w in t}))}
        rows = [i for i, t in enumerate(toks) for _ in t]
        cols = [self.vocab[w] for t in toks for w in t]
        tf = sp.csr_matrix(
            (np.ones(len(rows)), (rows, cols)), shape=(len(docs), len(self.vocab))
        )  # duplicates are summed
        dl = np.asarray(tf.sum(1)).ravel()
        df = np.asarray((tf > 0).sum(0)).ravel()
        self.idf = np.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        tf = tf.tocoo()
        norm = k1 * (1 - b + b * dl / dl.mean())
        w = tf.data / (tf.data + norm[tf.row]) * self.idf[tf.col]
        self.weights = sp.csr_matrix((w, (tf.row, tf.col)), shape=tf.shape)

    def scores(self, queries: list[str]) -> np.ndarray:
        """(n_queries, n_docs) scores; a query term counts once per occurrence, as in
        bm25s."""
        queries = _texts(queries, "queries")
        rows, cols = [], []
        for i, q in enumerate(queries):
            for w in tokenize(q):
                if w in self.vocab:
                    rows.append(i)
                    cols.append(self.vocab[w])
        Q = sp.csr_matrix(
            (np.ones(len(rows)), (rows, cols)), shape=(len(queries), len(self.vocab))
        )
        return np.asarray((Q @ self.weights.T).todense())


class TfidfIndex:
    """Cosine similarity of scikit-learn TF-IDF vectors: ``analyzer="word"`` or
    ``"char"`` (character 3-grams within word boundaries, robust to short names and
    typos)."""

    def __init__(self, docs: list[str], analyzer: str = "char"):
        from sklearn.feature_extraction.text import TfidfVectorizer

        docs = _texts(docs, "docs")
        if analyzer == "word":
            self.vec = TfidfVectorizer(
                tokenizer=tokenize, lowercase=False, token_pattern=None
            )
        elif analyzer == "char":
            self.vec = TfidfVectorizer(
                analyzer="char_wb", ngram_range=(3, 3), sublinear_tf=True
            )
        else:
            raise ValueError(f"analyzer must be 'word' or 'char', got {analyzer!r}")
        self.D = self.vec.fit_transform(docs)

    def scores(self, queries: list[str]) -> np.ndarray:
        """(n_queries, n_docs) cosine similarities (the TF-IDF rows are unit-norm)."""
        queries = _texts(queries, "queries")
        return np.asarray((self.vec.transform(queries) @ self.D.T).todense())


def recall_at_k(scores: np.ndarray, gold: np.ndarray, k: int = 3) -> np.ndarray:
    """(n,) bool: gold doc among the top ``k`` (ties broken by doc index)."""
    scores, gold = np.asarray(scores), np.asarray(gold)
    if scores.ndim != 2 or gold.shape != (scores.shape[0],):
        raise ValueError(
            f"scores (n, n_docs) and gold (n,), got {scores.shape}, {gold.shape}"
        )
    k = as_int(k, "k", lo=1, hi=scores.shape[1])
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN; a ranking needs comparable scores")
    if not np.issubdtype(gold.dtype, np.integer):
        raise TypeError(f"gold must hold integer document indices, got {gold.dtype}")
    if gold.size and (gold.min() < 0 or gold.max() >= scores.shape[1]):
        raise ValueError(
            f"gold indices must lie in 0..{scores.shape[1] - 1} (n_docs), "
            f"got {gold.min()}..{gold.max()}"
        )
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return (top == gold[:, None]).any(1)


def read_answers(scores: np.ndarray, kb: list[str], questions: Questions) -> np.ndarray:
    """(n,) int: the extractive reader -- the value after "<attr>: " in the top-1
    snippet (-1 if that snippet has no such attribute)."""
    scores = np.asarray(scores)
    if scores.ndim != 2 or scores.shape != (len(questions.text), len(kb)):
        raise ValueError(
            f"scores must be (n questions, n snippets) = ({len(questions.text)}, "
            f"{len(kb)}), got {scores.shape}"
        )
    top = np.argsort(-scores, axis=1, kind="stable")[:, 0]
    out = np.full(len(top), -1, dtype=np.int64)
    for i, d in enumerate(top):
        a = TOPICS[questions.topic[i]][1]
        m = re.search(rf"\b{a}: (\d+)", kb[d])
        if m:
            out[i] = int(m.group(1))
    return out


RETRIEVERS = {
    "BM25": BM25Index,
    "TF-IDF words": lambda d: TfidfIndex(d, "word"),
    "char 3-grams": lambda d: TfidfIndex(d, "char"),
}


def evaluate_versions(world: GameWorld, bench: list[Questions], k: int = 1) -> dict:
    """Per retriever and version t: answers with the fresh index K_t, with the index one
    patch behind K_{t-1} and with the never-refreshed K_0, and Recall@k with K_t.

    Returns {name: {"fresh", "behind", "never": list of (n,) bool correct, "recall":
    list of (n,) bool}}; at t = 0 every index is K_0."""
    kbs = [build_kb(world, t) for t in range(world.n_versions)]
    out = {}
    for name, make in RETRIEVERS.items():
        idx = [make(kb) for kb in kbs]
        r = {"fresh": [], "behind": [], "never": [], "recall": []}
        for t, Q in enumerate(bench):
            for key, s in (("fresh", t), ("behind", max(t - 1, 0)), ("never", 0)):
                S = idx[s].scores(Q.text)
                r[key].append(read_answers(S, kbs[s], Q) == Q.answer)
                if key == "fresh":
                    r["recall"].append(recall_at_k(S, Q.entity, k))
        out[name] = r
    return out


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
