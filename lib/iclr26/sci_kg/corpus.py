"""A templated scientific corpus, built as SPHERE was: scaffold -> sentences -> labels.

Each *document* is a random concept taxonomy (a tree, ``depth`` levels, 2..``branching``
children per node). Concept names are multi-word n-grams over the domain's vocabulary; a
child's name is, with probability ``p_comp``, a new modifier word in front of its
parent's name ("graph network" -> "deep graph network"), as scientific terms often are,
else a fresh name. Sentences come from relation templates (is-a, peer, depends-on,
descriptive) whose slots are filled with concept names (entities, BIO-labelled) or
*descriptor* phrases: random word sequences of the same vocabulary that are not concepts
(label O). Some templates use one slot for either, so in-domain the tagger must know
which n-grams are concepts; across domains only the templates carry over.

The text also states what the scaffold does not: transitive facts ("c is a kind of g"
for a grandparent g, with probability ``p_trans``) and, as annotation noise, reversed
ones (``p_rev``). The relation labels are what the sentences state, so a model trained
on them learns shortcut edges and 2-cycles unless something pushes back.

Domains share function words and templates; their vocabularies are disjoint."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

SYLLABLES = (
    "ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu "
    "na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu "
    "va ve vi vo vu za ze zi zo zu"
).split()
FUNCTION = set(
    "the a an is of kind subclass type that uses in and are two common approaches we "
    "apply to data variant improves unlike relies on includes depends recent work "
    "reports strong results studied , . which for with under as generalises "
    "specialises compared shows".split()
)
# Relation templates. Slots: {C} child, {P} parent, {Q} peer, {D} descriptor (not an
# entity), {Y} either an entity (a peer, "depends on") or a descriptor.
ISA = (
    "{C} is a kind of {P} .",
    "{C} is a subclass of {P} that uses {D} .",
    "{C} , a variant of {P} , improves {D} .",
    "{P} includes {C} .",
    "{C} specialises {P} for {D} data .",
    "{P} generalises {C} .",
)
PEER = (
    "in {P} , {C} and {Q} are two common approaches .",
    "unlike {Q} , {C} uses {D} .",
    "{C} is compared with {Q} .",
)
DEPENDS = (
    "{C} relies on {Y} .",
    "{C} depends on {Y} for {D} .",
)
DESCRIBE = (
    "we apply {C} to {D} data .",
    "recent work on {C} reports strong {D} results .",
    "the {D} of {C} is studied .",
    "{C} shows {D} under {D} .",
)
TEMPLATES = {"isa": ISA, "peer": PEER, "depends": DEPENDS, "describe": DESCRIBE}
BIO = ("O", "B", "I")


def make_vocabulary(domain_seed: int, n_words: int, exclude: set[str] = frozenset()):
    """``n_words`` distinct 2-3 syllable words for one domain, none in ``exclude`` or in
    the function words (two domains built with ``exclude`` share no word)."""
    if not isinstance(n_words, int) or n_words < 8:
        raise ValueError(f"n_words must be an int >= 8, got {n_words!r}")
    rng = np.random.default_rng(domain_seed)
    words: list[str] = []
    seen = set(exclude) | FUNCTION
    while len(words) < n_words:
        w = "".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 4))))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


@dataclass
class Document:
    """One scaffold and its sentences.

    names: N concept names (tuples of words); parent: (N,) parent index (-1 at the
    root); depth: (N,) level (0 = root); tokens / tags: the sentences (lists of words,
    lists of BIO tags 0/1/2); stated: (S, 3) rows (u, v, rel) of what the sentences
    state, rel 0 = "u is parent of v", 1 = peer, 2 = "u depends on v"; spans: per
    sentence, (start, end_exclusive, concept) of each entity mention.
    """

    names: list[tuple[str, ...]]
    parent: np.ndarray
    depth: np.ndarray
    tokens: list[list[str]] = field(default_factory=list)
    tags: list[list[int]] = field(default_factory=list)
    spans: list[list[tuple[int, int, int]]] = field(default_factory=list)
    stated: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), int))

    @property
    def n(self) -> int:
        return len(self.names)

    def adjacency(self) -> np.ndarray:
        """(N, N) 0/1 scaffold: A[u, v] = 1 iff u is v's parent."""
        A = np.zeros((self.n, self.n))
        c = np.flatnonzero(self.parent >= 0)
        A[self.parent[c], c] = 1
        return A


def _taxonomy(rng, words, depth, branching, p_comp, max_words):
    names, parent, level = [(str(rng.choice(words)),)], [-1], [0]
    used = {names[0]}
    frontier = [0]
    for d in range(1, depth):
        nxt = []
        for p in frontier:
            for _ in range(int(rng.integers(2, branching + 1))):
                for _try in range(50):
                    if rng.random() < p_comp and len(names[p]) < max_words:
                        name = (str(rng.choice(words)),) + names[p]
                    else:
                        k = int(rng.integers(1, 3))
                        name = tuple(str(w) for w in rng.choice(words, size=k))
                    if name not in used:
                        break
                used.add(name)
                names.append(name)
                parent.append(p)
                level.append(d)
                nxt.append(len(names) - 1)
        frontier = nxt
    return names, np.array(parent), np.array(level)


def _descriptor(rng, words, names_set, max_words):
    for _ in range(100):
        k = int(rng.integers(1, max_words))
        phrase = tuple(str(w) for w in rng.choice(words, size=k))
        # a descriptor never contains a concept name as a contiguous piece
        if not any(
            phrase[i:j] in names_set for i in range(k) for j in range(i + 1, k + 1)
        ):
            return phrase
    return (str(rng.choice(words)),)  # pragma: no cover (vocabularies are large)


def _near_miss(rng, words, name, names_set):
    """A concept name with one word swapped: the same words, not a concept (label O)."""
    for _ in range(100):
        phrase = list(name)
        phrase[int(rng.integers(len(phrase)))] = str(rng.choice(words))
        phrase = tuple(phrase)
        if not any(
            phrase[i:j] in names_set
            for i in range(len(phrase))
            for j in range(i + 1, len(phrase) + 1)
        ):
            return phrase
    return None


def _fill(template, slots, rng, words, names, names_set, max_words):
    toks, tags, spans = [], [], []
    fillers = {k: list(v) for k, v in slots.items()}
    for piece in template.split():
        if piece.startswith("{") and piece.endswith("}"):
            key = piece[1:-1]
            concept = fillers[key].pop(0) if fillers.get(key) else None
            if concept is None or isinstance(concept, tuple):
                phrase = concept or _descriptor(rng, words, names_set, max_words)
                toks += phrase
                tags += [0] * len(phrase)
            else:
                phrase = names[concept]
                spans.append((len(toks), len(toks) + len(phrase), concept))
                toks += phrase
                tags += [1] + [2] * (len(phrase) - 1)
        else:
            toks.append(piece)
            tags.append(0)
    return toks, tags, spans


def make_document(
    seed: int,
    words: list[str],
    depth: int = 4,
    branching: int = 3,
    p_comp: float = 0.7,
    max_words: int = 5,
    n_isa: int = 2,
    p_trans: float = 0.5,
    p_rev: float = 0.15,
    p_peer: float = 0.5,
    n_describe: int = 1,
    p_near: float = 0.3,
) -> Document:
    """One document: a scaffold of ``depth`` levels and the sentences about it.

    n_isa: is-a statements per scaffold edge; p_trans: probability that a (node,
    grandparent) pair is stated as is-a too; p_rev: probability that an edge is also
    stated reversed (noise); p_peer: probability per sibling pair of a peer sentence;
    n_describe: descriptive sentences per concept; p_near: probability, per concept of
    two or more words, of a descriptive sentence about a *near miss* (its name with one
    word swapped, not a concept, label O) in the concept's place, so only the whole
    n-gram tells an entity from a non-entity.
    """
    for name, v in (
        ("p_comp", p_comp),
        ("p_trans", p_trans),
        ("p_rev", p_rev),
        ("p_peer", p_peer),
        ("p_near", p_near),
    ):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {v}")
    if depth < 2 or branching < 2 or max_words < 2:
        raise ValueError("need depth >= 2, branching >= 2 and max_words >= 2")
    rng = np.random.default_rng(seed)
    names, parent, level = _taxonomy(rng, words, depth, branching, p_comp, max_words)
    doc = Document(names, parent, level)
    names_set = set(names)
    stated = []

    def say(kind, slots):
        t = TEMPLATES[kind][int(rng.integers(len(TEMPLATES[kind])))]
        toks, tags, spans = _fill(t, slots, rng, words, names, names_set, max_words)
        doc.tokens.append(toks)
        doc.tags.append(tags)
        doc.spans.append(spans)

    n = len(names)
    children = [np.flatnonzero(parent == p) for p in range(n)]
    for c in range(1, n):
        p = parent[c]
        for _ in range(n_isa):
            say("isa", {"C": [c], "P": [p]})
            stated.append((p, c, 0))
        if rng.random() < p_rev:  # annotation noise: the edge stated backwards
            say("isa", {"C": [p], "P": [c]})
            stated.append((c, p, 0))
        g = parent[p]
        if g >= 0 and rng.random() < p_trans:  # a true but transitive statement
            say("isa", {"C": [c], "P": [g]})
            stated.append((g, c, 0))
    for p in range(n):
        ch = children[p]
        for i in range(len(ch)):
            for j in range(i + 1, len(ch)):
                if rng.random() < p_peer:
                    say("peer", {"C": [ch[i]], "Q": [ch[j]], "P": [p]})
                    stated += [(ch[i], ch[j], 1), (ch[j], ch[i], 1)]
    for c in range(n):
        for _ in range(n_describe):
            say("describe", {"C": [c]})
        if len(names[c]) > 1 and rng.random() < p_near:
            miss = _near_miss(rng, words, names[c], names_set)
            if miss is not None:
                say("describe", {"C": [miss]})
        if rng.random() < 0.5:  # "depends on": a peer concept, or a descriptor phrase
            q = int(rng.integers(n))
            if q != c and rng.random() < 0.5:
                say("depends", {"C": [c], "Y": [q]})
                stated.append((c, q, 2))
            else:
                say("depends", {"C": [c]})
    doc.stated = np.array(stated, dtype=int).reshape(-1, 3)
    return doc


def make_kg_corpus(
    domain_seed: int,
    n_docs: int,
    n_words: int = 120,
    exclude: set[str] = frozenset(),
    **doc_kwargs,
) -> tuple[list[str], list[Document]]:
    """A domain: its vocabulary and ``n_docs`` documents (see :func:`make_document`)."""
    if not isinstance(n_docs, int) or n_docs < 1:
        raise ValueError(f"n_docs must be a positive int, got {n_docs!r}")
    words = make_vocabulary(domain_seed, n_words, exclude)
    docs = [
        make_document(domain_seed * 100_003 + i, words, **doc_kwargs)
        for i in range(n_docs)
    ]
    return words, docs


def ngram_buckets(word: str, n_buckets: int, n: int = 3) -> list[int]:
    """fastText-style hashed character n-grams of ``<word>`` plus the whole word, as
    bucket ids in [0, n_buckets) (crc32, so the same on every machine and run)."""
    w = f"<{word}>"
    grams = [w[i : i + n] for i in range(len(w) - n + 1)] + [w]
    return [zlib.crc32(g.encode()) % n_buckets for g in grams]
