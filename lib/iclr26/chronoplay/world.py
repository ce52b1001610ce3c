"""The fictional game and its community: facts over versions, patch notes, the wiki, the
topic phases, template synthesis, and stale-question detection from the patch notes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..validate import as_float, as_int

KINDS = ("weapon", "armor", "recipe", "enemy", "zone", "boss")
ATTRS = {
    "weapon": ("damage", "range", "price", "weight"),
    "armor": ("defense", "durability", "price", "weight"),
    "recipe": ("cost", "brewtime", "yield", "tier"),
    "enemy": ("health", "speed", "xp", "level"),
    "zone": ("danger", "size", "spawns", "level"),
    "boss": ("health", "phases", "loot", "level"),
}
# How "endgame" a kind is: the community drifts from novice topics (recipes, weapons) to
# endgame ones (zones, bosses), and endgame players write in community slang.
ENDGAME = {
    "weapon": 0.2,
    "armor": 0.3,
    "recipe": 0.0,
    "enemy": 0.5,
    "zone": 0.8,
    "boss": 1.0,
}
TOPICS = tuple((k, a) for k in KINDS for a in ATTRS[k])  # 24 (category, subcategory)
# Few syllables, so that near-names abound (kelvor, kalvorash, varkel), as in a game.
SYLLABLES = ("kel", "kal", "vor", "var", "ash", "esh")
LORE = (
    "ancient",
    "forged",
    "northern",
    "crystal",
    "shadow",
    "ember",
    "frost",
    "storm",
    "whispering",
    "hollow",
    "golden",
    "rusted",
    "sacred",
    "cursed",
    "verdant",
    "molten",
    "sunken",
    "iron",
    "pale",
    "wild",
    "moon",
    "dust",
    "tide",
    "thorn",
    "ridge",
    "vale",
)
OFFICIAL = (
    "what is the {a} of {n}",
    "{n} {a} in the current patch",
    "how much {a} does {n} have",
    "current {a} value for {n}",
)
COMMUNITY = (
    "anyone know {n} {a} rn",
    "whats the {a} on {n} now lol",
    "{n} {a} after the patch??",
    "is {n} {a} still the same or nerfed",
)
TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits), shared by every retriever."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return TOKEN.findall(text.lower())


def _texts(x, name: str) -> list[str]:
    if (
        isinstance(x, str)
        or not isinstance(x, (list, tuple))
        or not x
        or not all(isinstance(d, str) for d in x)
    ):
        raise TypeError(
            f"{name} must be a non-empty list of str, got {type(x).__name__}"
        )
    return list(x)


# ---------------------------------------------------------------------- the game world
@dataclass
class GameWorld:
    """Facts of a game over versions 0..T-1.

    kind: (E,) kind index of each entity; values: (T, E, 4) int attribute values
    per version; names: (T, E) the entity's name at each version; alias: (E,) the
    community's short name.
    changed: (T, E, 4) bool, True where patch t changed the value (False at t = 0);
    renamed: (T, E) bool, True where patch t renamed the entity.
    """

    kind: np.ndarray
    values: np.ndarray
    names: np.ndarray
    alias: np.ndarray
    lore: list[str]
    changed: np.ndarray = field(repr=False)
    renamed: np.ndarray = field(repr=False)

    @property
    def n_versions(self) -> int:
        return self.values.shape[0]

    @property
    def n_entities(self) -> int:
        return self.values.shape[1]


def _fresh_names(
    rng: np.random.Generator, n: int, taken: set[str], max_syllables: int
) -> list[str]:
    room = sum(len(SYLLABLES) ** k for k in range(2, max_syllables + 1)) - len(taken)
    if n > room:
        raise ValueError(
            f"{n} more names asked for, but only {room} names of 2 to "
            f"{max_syllables} syllables are left; raise max_syllables"
        )
    out = []
    while len(out) < n:
        k = int(rng.integers(2, max_syllables + 1))
        name = "".join(rng.choice(SYLLABLES, size=k))
        if len(name) >= 5 and name not in taken:
            taken.add(name)
            out.append(name)
    return out


def make_world(
    n_entities: int,
    n_versions: int,
    change_rate: float = 0.15,
    renames: int = 1,
    seed: int = 0,
    max_syllables: int = 3,
) -> GameWorld:
    """A seeded game: ``n_entities`` entities (kinds in turn), ``n_versions`` versions;
    each patch changes each attribute value with probability ``change_rate`` (a changed
    value always differs) and renames ``renames`` entities. Names share syllables on
    purpose, so that near-names exist (``kelvor``, ``kelvorash``), as in a real game;
    names have 2 to ``max_syllables`` syllables (3 allows 252 names in all)."""
    E, T = (
        as_int(n_entities, "n_entities", lo=6),
        as_int(n_versions, "n_versions", lo=1),
    )
    q, R = (
        as_float(change_rate, "change_rate", lo=0.0, hi=1.0),
        as_int(renames, "renames", lo=0),
    )
    S = as_int(max_syllables, "max_syllables", lo=2)
    rng = np.random.default_rng(as_int(seed, "seed", lo=0))
    taken: set[str] = set()
    kind = np.arange(E) % len(KINDS)
    names = np.empty((T, E), dtype=object)
    names[0] = _fresh_names(rng, E, taken, S)
    alias = np.array([n[:4] for n in names[0]], dtype=object)
    values = np.zeros((T, E, 4), dtype=np.int64)
    values[0] = rng.integers(5, 1000, size=(E, 4))
    changed = np.zeros((T, E, 4), bool)
    renamed = np.zeros((T, E), bool)
    for t in range(1, T):
        changed[t] = rng.random((E, 4)) < q
        bump = np.maximum(1, np.round(values[t - 1] * rng.uniform(0.1, 0.5, (E, 4))))
        sign = np.where(rng.random((E, 4)) < 0.5, -1, 1)
        new = values[t - 1] + sign * bump
        new = np.where(new < 1, values[t - 1] + bump, new).astype(np.int64)  # >= 1
        values[t] = np.where(changed[t], new, values[t - 1])
        names[t] = names[t - 1]
        who = rng.choice(E, size=min(R, E), replace=False) if R else np.array([], int)
        for e, new_name in zip(who, _fresh_names(rng, len(who), taken, S)):
            names[t, e], renamed[t, e] = new_name, True
    lore = [" ".join(rng.choice(LORE, size=int(rng.integers(3, 16)))) for _ in range(E)]
    return GameWorld(kind, values, names, alias, lore, changed, renamed)


def announcement(world: GameWorld, t: int) -> str:
    """Patch notes of version ``t`` (t >= 1): a line per changed value or new name."""
    t = as_int(t, "t", lo=1)
    if t >= world.n_versions:
        raise ValueError(f"t must be < n_versions = {world.n_versions}, got {t}")
    lines = [
        f"{world.names[t - 1, e]} is renamed {world.names[t, e]}"
        for e in np.flatnonzero(world.renamed[t])
    ]
    for e, j in zip(*np.nonzero(world.changed[t])):
        a = ATTRS[KINDS[world.kind[e]]][j]
        lines.append(
            f"{world.names[t, e]} {a} {world.values[t - 1, e, j]} -> "
            f"{world.values[t, e, j]}"
        )
    return "\n".join(lines)


def build_kb(world: GameWorld, t: int) -> list[str]:
    """The official wiki at version ``t``: one snippet per entity (index = entity)."""
    t = as_int(t, "t", lo=0)
    if t >= world.n_versions:
        raise ValueError(f"t must be < n_versions = {world.n_versions}, got {t}")
    kb = []
    for e in range(world.n_entities):
        k = KINDS[world.kind[e]]
        facts = ". ".join(f"{a}: {v}" for a, v in zip(ATTRS[k], world.values[t, e]))
        kb.append(
            f"{world.names[t, e]} is a {k}, {world.lore[e]}. {facts}. as of patch {t}"
        )
    return kb


# ----------------------------------------------------------- community and synthesis
def topic_phases(n_phases: int, drift: float, seed: int = 0) -> np.ndarray:
    """(n_phases, 24) topic distributions of a community that moves from novice to
    endgame play: base popularity (some topics rare, some popular), plus ``drift``
    logits on the four topics of the phase's "hot" kind and minus ``2 drift`` on kinds
    not reached yet; hot kinds in order recipe, weapon, armor, enemy, zone, boss (spread
    over the phases). ``drift = 0`` keeps every phase the same."""
    P = as_int(n_phases, "n_phases", lo=1)
    if isinstance(drift, bool) or not np.isfinite(drift) or drift < 0:
        raise ValueError(f"drift must be a finite number >= 0, got {drift}")
    rng = np.random.default_rng(as_int(seed, "seed", lo=0))
    base = rng.normal(0.0, 1.0, len(TOPICS))
    order = sorted(KINDS, key=ENDGAME.get)
    hot = _hot_kinds(P)
    # +drift on the hot kind, -drift on content the community has not reached yet
    rank = {k: i for i, k in enumerate(order)}
    bump = np.array(
        [[(k == h) - 2.0 * (rank[k] > rank[h]) for k, _ in TOPICS] for h in hot]
    )
    logits = base[None] + drift * bump
    p = np.exp(logits - logits.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def _hot_kinds(n_phases: int) -> list[str]:
    order = sorted(KINDS, key=ENDGAME.get)
    return [order[int(i)] for i in np.linspace(0, len(order) - 1, n_phases).round()]


def phase_changes(n_phases: int) -> np.ndarray:
    """(n_phases - 1,) bool: True where phase i + 1 of :func:`topic_phases` differs from
    phase i. With more than six phases some neighbours share a hot kind (20 phases hold
    5 changes), and a boundary where nothing changes is no change point."""
    hot = _hot_kinds(as_int(n_phases, "n_phases", lo=1))
    return np.array([a != b for a, b in zip(hot[:-1], hot[1:])], bool)


def _typo(name: str, rng: np.random.Generator) -> str:
    i = int(rng.integers(1, len(name) - 1))
    if rng.random() < 0.5:  # swap two neighbours
        return name[:i] + name[i + 1] + name[i] + name[i + 2 :]
    return name[:i] + name[i + 1 :]  # drop one letter


NOISE = ("seen", "unseen")


def _unseen_nick(name: str) -> str:
    """A nickname the gazetteer was not built from: the name without its vowels after
    the first letter (``kelvorash`` -> ``klvrsh``), as chat shortens words."""
    return name[0] + "".join(c for c in name[1:] if c not in "aeiou")


def _unseen_typo(name: str, rng: np.random.Generator) -> str:
    """Two letters wrong: two independent one-letter edits (swap, drop, or a
    neighbouring key), which a one-edit fuzzy matcher is not built to invert."""
    keys = {
        "a": "s",
        "e": "r",
        "o": "p",
        "k": "l",
        "l": "k",
        "v": "b",
        "r": "t",
        "s": "a",
        "h": "j",
    }
    for _ in range(2):
        i = int(rng.integers(1, len(name) - 1))
        u = rng.random()
        if u < 1 / 3:
            name = name[:i] + name[i + 1] + name[i] + name[i + 2 :]
        elif u < 2 / 3 and len(name) > 4:
            name = name[:i] + name[i + 1 :]
        else:
            name = name[:i] + keys.get(name[i], "x") + name[i + 1 :]
    return name


@dataclass
class Questions:
    """A benchmark slice: text (n,), entity (n,), attr (n,) index 0..3, topic (n,) index
    into TOPICS, version (n,), community (n,) bool, answer (n,) int (the fact at that
    version)."""

    text: list[str]
    entity: np.ndarray
    attr: np.ndarray
    topic: np.ndarray
    version: np.ndarray
    community: np.ndarray
    answer: np.ndarray


def synthesize(
    world: GameWorld,
    t: int,
    topic_dist,
    n: int,
    slang: float,
    seed: int = 0,
    noise: str = "seen",
) -> Questions:
    """``n`` questions at version ``t``: topic ~ ``topic_dist`` (24,), entity uniform
    among the topic's kind; a question is community-phrased with probability ``slang *
    (0.5 + 0.5 endgame(topic))`` -- then its name is, with equal odds, a nickname or a
    typo -- else official. ``noise="seen"``: the nickname is ``world.alias`` and the
    typo one edit (what the gazetteer is built from); ``"unseen"``: a vowel-dropped
    nickname and a two-edit typo (a held-out test of the gazetteer). The answer is read
    from the versioned facts, never from the text."""
    t, n, s = (
        as_int(t, "t", lo=0),
        as_int(n, "n", lo=1),
        as_float(slang, "slang", lo=0.0, hi=1.0),
    )
    if noise not in NOISE:
        raise ValueError(f"noise must be one of {NOISE}, got {noise!r}")
    if t >= world.n_versions:
        raise ValueError(f"t must be < n_versions = {world.n_versions}, got {t}")
    p = np.asarray(topic_dist, dtype=float)
    if (
        p.shape != (len(TOPICS),)
        or not np.all(np.isfinite(p))
        or (p < 0).any()
        or p.sum() <= 0
    ):
        raise ValueError(f"topic_dist must be ({len(TOPICS)},) non-negative and finite")
    rng = np.random.default_rng(as_int(seed, "seed", lo=0))
    topic = rng.choice(len(TOPICS), size=n, p=p / p.sum())
    kind_of = np.array([KINDS.index(k) for k, _ in TOPICS])
    attr = np.array([ATTRS[k].index(a) for k, a in TOPICS])[topic]
    pools = [np.flatnonzero(world.kind == k) for k in range(len(KINDS))]
    entity = np.array([rng.choice(pools[kind_of[i]]) for i in topic])
    rate = s * (0.5 + 0.5 * np.array([ENDGAME[k] for k, _ in TOPICS]))[topic]
    community = rng.random(n) < rate
    text = []
    for e, _, c, i in zip(entity, attr, community, topic):
        a, name = TOPICS[i][1], world.names[t, e]
        if c and noise == "unseen":
            name = _unseen_nick(name) if rng.random() < 0.5 else _unseen_typo(name, rng)
        elif c:
            name = world.alias[e] if rng.random() < 0.5 else _typo(name, rng)
        if c:
            tpl = COMMUNITY[int(rng.integers(len(COMMUNITY)))]
            text.append(tpl.format(n=name, a=a))
        else:
            text.append(OFFICIAL[int(rng.integers(len(OFFICIAL)))].format(n=name, a=a))
    return Questions(
        text,
        entity,
        attr,
        topic,
        np.full(n, t),
        community,
        world.values[t, entity, attr],
    )


# ------------------------------------------------------- knowledge-evolution updates
def _deletes(w: str) -> set[str]:
    return {w} | {w[:i] + w[i + 1 :] for i in range(len(w))}


def gazetteer_ner(
    text: str, lexicon: dict[str, set[int]], fuzzy: bool = True
) -> set[int]:
    """Entity ids mentioned in ``text``: tokens found in ``lexicon`` (name or alias ->
    ids); with ``fuzzy``, also tokens one deletion, insertion or swap away from a name
    (matched by their one-deletion variants, as SymSpell does) -- the "noisy
    gazetteer"."""
    if not isinstance(lexicon, dict):
        raise TypeError(
            f"lexicon must be a dict name -> set of ids, got {type(lexicon).__name__}"
        )
    out: set[int] = set()
    fuzzy_index = lexicon.get("__deletes__", {}) if fuzzy else {}
    for tok in tokenize(text):
        if tok in lexicon:
            out |= lexicon[tok]
        elif fuzzy and len(tok) >= 5:
            for d in _deletes(tok):
                out |= fuzzy_index.get(d, set())
    return out


def make_lexicon(world: GameWorld, t: int, aliases: bool = True) -> dict:
    """The gazetteer known at version ``t``: every name used so far and (``aliases``)
    every community nickname in ``world.alias``, plus the one-deletion index of names
    (for fuzzy matching)."""
    lex: dict = {}
    for tt in range(as_int(t, "t", lo=0) + 1):
        for e, name in enumerate(world.names[tt]):
            lex.setdefault(name, set()).add(e)
    for e, a in enumerate(world.alias if aliases else ()):
        lex.setdefault(a, set()).add(e)
    dels: dict[str, set[int]] = {}
    for name, ids in list(lex.items()):
        if len(name) >= 5:
            for d in _deletes(name):
                dels.setdefault(d, set()).update(ids)
    lex["__deletes__"] = dels
    return lex


def stale_mask(
    questions: Questions,
    world: GameWorld,
    t_new: int,
    fuzzy: bool = True,
    level: str = "fact",
    shuffle_from: int | None = None,
    aliases: bool = True,
) -> np.ndarray:
    """(n,) bool: which questions the patch notes of ``t_new`` make stale, found from
    text only.

    sigma_update = the (entity, attribute) pairs named in the notes (``level="fact"``),
    or just the entities (``level="entity"``, the paper's rule); a question is flagged
    when its gazetteer entities and attribute words meet sigma_update, or one of its
    entities was renamed. ``shuffle_from`` reads the notes of that other version instead
    (a control); ``aliases=False`` drops the nickname table from the gazetteer (an
    ablation)."""
    if level not in ("fact", "entity"):
        raise ValueError(f"level must be 'fact' or 'entity', got {level!r}")
    src = t_new if shuffle_from is None else as_int(shuffle_from, "shuffle_from", lo=1)
    notes = announcement(world, src)
    # names known once those notes are out
    lex = make_lexicon(world, max(t_new, src), aliases=aliases)
    upd, ren = set(), set()
    all_attrs = {a for k in KINDS for a in ATTRS[k]}
    for line in notes.splitlines():
        ids = gazetteer_ner(line, lex, fuzzy=False)
        if " is renamed " in line:
            ren |= ids
        else:
            a = next(w for w in tokenize(line) if w in all_attrs)
            upd |= {(e, a) for e in ids}
    ent_upd = {e for e, _ in upd}
    out = np.zeros(len(questions.text), bool)
    for i, q in enumerate(questions.text):
        ids = gazetteer_ner(q, lex, fuzzy=fuzzy)
        words = set(tokenize(q)) & all_attrs
        hit = bool(ids & ren) or (
            bool(ids & ent_upd)
            if level == "entity"
            else any((e, a) in upd for e in ids for a in words)
        )
        out[i] = hit
    return out


def truly_stale(
    questions: Questions, world: GameWorld, t_new: int, level: str = "fact"
) -> np.ndarray:
    """(n,) bool ground truth: the asked value changed at ``t_new``, or the entity was
    renamed. ``level="entity"``: staleness as the paper's rule defines it, every
    question about an entity the patch touched (any attribute changed, or renamed)."""
    if level not in ("fact", "entity"):
        raise ValueError(f"level must be 'fact' or 'entity', got {level!r}")
    e, j = questions.entity, questions.attr
    changed = (
        world.changed[t_new, e].any(1)
        if level == "entity"
        else world.changed[t_new, e, j]
    )
    return changed | world.renamed[t_new, e]


def stale_scores(
    world: GameWorld, bench: list[Questions], truth: str = "fact", **kw
) -> dict:
    """Per patch t = 1..T-1, stale_mask(bench[t-1], world, t, **kw) against the truth
    (:func:`truly_stale` at ``truth`` level): worst-patch F1, mean precision, mean
    recall."""
    prf = np.array(
        [
            f1_score(
                stale_mask(bench[t - 1], world, t, **kw),
                truly_stale(bench[t - 1], world, t, level=truth),
            )
            for t in range(1, world.n_versions)
        ]
    )
    return dict(
        f1_min=float(prf[:, 2].min()),
        prec=float(prf[:, 0].mean()),
        rec=float(prf[:, 1].mean()),
    )


def benchmark(
    world: GameWorld,
    phases: np.ndarray,
    n_questions: int,
    slang: float,
    seed: int = 0,
    style_drift: bool = True,
    noise: str = "seen",
) -> list[Questions]:
    """The benchmark over time: at version t, ``n_questions`` questions from phase t's
    topics. The community coins its slang as the game ages: the slang level at version t
    is ``slang * t / (T - 1)`` (``style_drift=False``: ``slang / 2`` at every
    version). ``noise`` is passed to :func:`synthesize`."""
    T = world.n_versions
    if len(phases) != T:
        raise ValueError(f"need one phase per version ({T}), got {len(phases)}")
    level = [slang * t / max(T - 1, 1) if style_drift else slang / 2 for t in range(T)]
    return [
        synthesize(
            world, t, phases[t], n_questions, level[t], seed=seed + t, noise=noise
        )
        for t in range(T)
    ]


def f1_score(pred: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    """(precision, recall, F1) of boolean flags (no flags at all: precision 1)."""
    pred, truth = np.asarray(pred), np.asarray(truth)
    if pred.dtype != bool or truth.dtype != bool or pred.shape != truth.shape:
        raise TypeError(
            f"pred and truth must be boolean arrays of one shape, got "
            f"{pred.dtype} {pred.shape} and {truth.dtype} {truth.shape}"
        )
    tp = float((pred & truth).sum())
    prec = tp / pred.sum() if pred.any() else 1.0
    rec = tp / truth.sum() if truth.any() else 1.0
    return prec, rec, (2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0)
