"""A seeded synthetic web corpus with a hidden quality label per document.

No web crawl can be downloaded here, so this module *writes* one.
Every document is drawn from one of seven kinds, and the kind is the hidden ground truth
the filters never see:

good (label 1) ``general`` short encyclopedic sentences built from a fact table (entity
    -> capital, river, ...); ``technical`` long, clause-heavy sentences with long domain
    words, in one of four categories
                  (medical, science, technology, education) -- good text that *looks*
                  hard to read.
junk (label 0) ``spam`` short, punctuated advertising sentences (readable, normally
    tokenised); ``boilerplate`` navigation menus and banners, the same blocks repeated
    across many documents; ``gibberish`` random-letter "words" and digit tables, no
    sentence breaks; ``tagsoup`` fact words glued into hashtags and handles, no sentence
    breaks; ``runon`` good facts, lower-cased, with every sentence break removed.

Good documents also carry a repeated footer block now and then, so that exact-substring
deduplication has planted duplicate spans to find inside otherwise good text.
The generator records which boilerplate blocks went into which document
(``Doc.blocks``), which is what the dedup checks count.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

CATEGORIES = ("medical", "science", "technology", "education")
GOOD_KINDS = ("general", "technical")
JUNK_KINDS = ("spam", "boilerplate", "gibberish", "tagsoup", "runon")
DEFAULT_JUNK_MIX = {
    "spam": 0.25,
    "boilerplate": 0.25,
    "gibberish": 0.15,
    "tagsoup": 0.2,
    "runon": 0.15,
}

_ONSETS = [
    "b",
    "d",
    "f",
    "g",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "z",
    "br",
    "dr",
    "kr",
    "st",
    "tr",
    "th",
]
_NUCLEI = ["a", "e", "i", "o", "u", "ae", "ei", "ou"]
_CODAS = ["", "", "n", "r", "s", "l", "k", "th"]
_EXPORTS = [
    "wool",
    "copper",
    "salt",
    "timber",
    "tea",
    "silver",
    "glass",
    "rice",
    "cotton",
    "amber",
    "olive oil",
    "paper",
]
_LANGS = [
    "Orvish",
    "Tellan",
    "Mirric",
    "Sundic",
    "Hollish",
    "Varran",
    "Kettic",
    "Lumese",
]

_GENERAL = [
    "The capital of {E} is {C}.",
    "{E} lies on the river {R}, which is {n} miles long.",
    "The main export of {E} is {X}, worth {n} million a year.",
    "{E} was founded in {Y}, {n} years after the flood.",
    "Most of the {n} thousand people in {E} speak {L}.",
    "{C} is the largest city in {E}, with {n} markets.",
    "The river {R} flows through {C} and {n} smaller towns.",
    "About {n} thousand visitors come to {C} each summer.",
    "The people of {E} are proud of their {X}, {n} kinds of it.",
    "Old maps from {y} show {E} near the sea.",
    "In {y} the council of {C} met {k} times.",
    "A road of {n} miles joins {C} to the coast.",
]
_TECH = {
    "medical": (
        [
            "the administration of anticoagulant medication",
            "chronic cardiovascular inflammation",
            "postoperative immunosuppressive therapy",
            "the pharmacokinetic profile of antibiotics",
            "haematological abnormalities in elderly patients",
            "randomised controlled clinical trials",
        ],
        [
            "substantially reduces",
            "is strongly associated with",
            "significantly alters",
            "reliably predicts",
        ],
    ),
    "science": (
        [
            "the spectroscopic characterisation of crystalline materials",
            "thermodynamic equilibrium conditions",
            "the electromagnetic interaction between charged particles",
            "photosynthetic carbon fixation",
            "the gravitational perturbation of planetary orbits",
            "molecular hydrogen concentrations",
        ],
        [
            "fundamentally determines",
            "is quantitatively consistent with",
            "systematically constrains",
            "explains",
        ],
    ),
    "technology": (
        [
            "distributed database replication protocols",
            "the asynchronous microprocessor architecture",
            "cryptographic authentication infrastructure",
            "high-throughput network virtualisation",
            "the compiler optimisation pipeline",
            "energy-efficient semiconductor fabrication",
        ],
        [
            "considerably accelerates",
            "is architecturally incompatible with",
            "dramatically simplifies",
            "depends on",
        ],
    ),
    "education": (
        [
            "curriculum-based formative assessment",
            "the pedagogical effectiveness of collaborative learning",
            "standardised examination performance",
            "multilingual classroom instruction",
            "the professional development of secondary teachers",
            "early childhood literacy interventions",
        ],
        [
            "measurably improves",
            "is closely correlated with",
            "substantially reshapes",
            "supports",
        ],
    ),
}
_CODES = {
    "medical": [
        "IL-6",
        "CD4+",
        "HbA1c",
        "mg/kg",
        "ICD-10",
        "TNF-alpha",
        "SARS-CoV-2",
        "BRCA1/2",
    ],
    "science": [
        "H2SO4",
        "C6H12O6",
        "Fe3O4",
        "kJ/mol",
        "CO2/O2",
        "NaHCO3",
        "mRNA/tRNA",
        "K2Cr2O7",
    ],
    "technology": [
        "x86_64",
        "TCP/IP",
        "AES-256",
        "IPv6",
        "UTF-8",
        "SHA-3",
        "DDR5/PCIe",
        "ARMv8-A",
    ],
    "education": [
        "ISCED-3",
        "PISA-2018",
        "K-12",
        "STEM/STEAM",
        "GPA/SAT",
        "CEFR-B2",
        "TIMSS-19",
        "ECTS/ECVET",
    ],
}
_OPENERS = [
    "In a longitudinal investigation of {n} participants across the provinces of {E},",
    "According to {k} researchers at the national institute in {C},",
    "Throughout the {k} decades of systematic observation since {y},",
    "In comparison with the {n} earlier international assessments,",
]
_CONNECTORS = [
    ", which consequently suggests that",
    ", although subsequent evaluations indicate that",
    ", whereas independent replications demonstrate that",
    ", and comprehensive reviews confirm that",
]
_CLOSERS = [
    " under carefully controlled experimental conditions",
    " in the majority of participating institutions",
    " across heterogeneous populations and settings",
    "",
]
_SPAM = [
    "Click here to win a free {p}.",
    "Best price on cheap {p}.",
    "Buy {p} now and save {n} dollars.",
    "Limited offer on {p} ends today.",
    "Call now for a free {p}.",
    "Hot deals on {p} every day.",
    "Sign up for {n} free spins.",
    "Cheap {p} with fast shipping.",
    "Win {n} dollars now.",
    "Top rated {p} bonus.",
    "Get {n} percent off all {p}.",
]
_PRODUCTS = [
    "watches",
    "phones",
    "pills",
    "shoes",
    "loans",
    "bags",
    "tickets",
    "games",
    "cars",
    "coins",
]
_NAV_WORDS = [
    "Home",
    "About us",
    "Contact",
    "Privacy policy",
    "Terms of use",
    "Sitemap",
    "Login",
    "Register",
    "Cart",
    "Careers",
    "Press",
    "Help",
    "FAQ",
    "Blog",
    "Shop",
    "Newsletter",
    "Cookie settings",
    "Accessibility",
]


@dataclass
class Doc:
    """One document: its text and the ground truth the filters never see.

    kind: one of GOOD_KINDS + JUNK_KINDS; good: the hidden quality label; category: one
    of CATEGORIES or ``"none"``; entity: the fact-table row a good/runon document talks
    about (-1 if none); blocks: ids of the boilerplate blocks planted in it (in order).
    """

    text: str
    kind: str
    good: bool
    category: str = "none"
    entity: int = -1
    blocks: list[int] = field(default_factory=list)


def _name(rng: np.random.Generator, syllables: int) -> str:
    parts = [
        rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS)
        for _ in range(syllables)
    ]
    return "".join(parts).capitalize()


def make_fact_table(n_entities: int, seed: int) -> list[dict]:
    """A table of invented countries: name, capital, river, export, founding
    year, language.

    Names are unique within the table (a capital is never reused), so a cloze question
    "The capital of E is ___" has exactly one right answer.
    """
    if not isinstance(n_entities, int) or n_entities < 4:
        raise ValueError(
            "n_entities must be an int >= 4 (cloze needs 4 options), got "
            f"{n_entities!r}"
        )
    rng = np.random.default_rng(seed)
    used: set[str] = set()

    def fresh(k: int) -> str:
        while True:
            n = _name(rng, k)
            if n not in used:
                used.add(n)
                return n

    return [
        dict(
            E=fresh(3),
            C=fresh(2),
            R=fresh(2),
            X=str(rng.choice(_EXPORTS)),
            Y=str(int(rng.integers(800, 1900))),
            L=str(rng.choice(_LANGS)),
        )
        for _ in range(n_entities)
    ]


def make_boilerplate_blocks(n_blocks: int, seed: int) -> list[str]:
    """``n_blocks`` distinct boilerplate blocks (nav menus + a site id), each
    ~300-400 characters.

    Each block ends with a random site code, so no two blocks share a long substring
    by accident.
    """
    rng = np.random.default_rng(seed + 7919)
    blocks = []
    for b in range(n_blocks):
        items = rng.choice(_NAV_WORDS, size=int(rng.integers(12, 17)), replace=False)
        site = "".join(rng.choice(list(string.ascii_lowercase), size=10))
        blocks.append(
            " | ".join(items)
            + f" | (c) {site} all rights reserved | we use cookies on {site} to "
            "improve "
            f"your experience | subscribe to the {site} newsletter | ref "
            f"{b:04d}-{site[:5]}"
        )
    return blocks


def _numbers(rng) -> dict:
    """Document-specific numbers: they keep good documents from sharing long exact
    substrings."""
    return dict(
        n=int(rng.integers(2, 999)),
        k=int(rng.integers(2, 9)),
        y=int(rng.integers(1000, 2000)),
    )


def _general_doc(rng, facts, e) -> str:
    f = facts[e]
    idx = rng.choice(len(_GENERAL), size=int(rng.integers(5, 9)), replace=False)
    if (
        0 not in idx and rng.random() < 0.7
    ):  # the capital fact shows up in most documents about E
        idx[0] = 0
    return " ".join(_GENERAL[i].format(**f, **_numbers(rng)) for i in idx)


def _technical_doc(rng, facts, e, cat) -> str:
    nouns, verbs = _TECH[cat]
    f, out = facts[e], []
    for _ in range(int(rng.integers(3, 6))):
        n1, n2, n3, n4 = rng.choice(nouns, size=4, replace=False)
        num = _numbers(rng)
        s = (
            f"{rng.choice(_OPENERS).format(**f, **num)} {n1} {rng.choice(verbs)} {n2} "
            f"in {num['n'] % 97 + 2} "
            "percent of cases "
            f"({', '.join(rng.choice(_CODES[cat], size=3, replace=False))}, n = "
            f"{num['y'] - 900})"
            f"{rng.choice(_CONNECTORS)} {n3} {rng.choice(verbs)} {n4}"
            f"{rng.choice(_CLOSERS)}."
        )
        out.append(s[0].upper() + s[1:])
    return " ".join(out)


def _gibberish_doc(rng) -> str:
    if rng.random() < 0.3:  # a digit table
        return " ".join(
            str(int(v))
            for v in rng.integers(0, 100000, size=int(rng.integers(60, 160)))
        )
    letters = np.array(list("bcdfghjklmnpqrstvwxzaeiouy"))
    words = [
        "".join(rng.choice(letters, size=int(rng.integers(2, 10))))
        for _ in range(int(rng.integers(60, 160)))
    ]
    return " ".join(words)


def _tagsoup_doc(rng, facts, e) -> str:
    f, out = facts[e], []
    for _ in range(int(rng.integers(25, 60))):
        r = rng.random()
        if r < 0.4:
            out.append(
                "#"
                + "".join(
                    w.capitalize()
                    for w in rng.choice(
                        [f["E"], f["C"], f["R"], f["X"], "travel", "best", "capital"],
                        size=3,
                    )
                )
                + str(int(rng.integers(0, 2030)))
            )
        elif r < 0.7:
            out.append(
                "@"
                + f["C"].lower()
                + "_"
                + "".join(rng.choice(list("0123456789xyzq"), size=4))
            )
        else:
            out.append(
                str(
                    rng.choice(
                        [f["E"], f["C"], "capital", "river", "visit", "the", "of"]
                    )
                ).lower()
            )
    return " ".join(out)


def _runon_doc(rng, facts, e) -> str:
    text = _general_doc(rng, facts, e)
    return text.replace(".", "").lower()


def make_web_corpus(
    n_docs: int,
    seed: int,
    facts: list[dict],
    blocks: list[str],
    junk_frac: float = 0.45,
    technical_frac: float = 0.3,
    footer_prob: float = 0.3,
    junk_mix: dict[str, float] | None = None,
) -> list[Doc]:
    """``n_docs`` documents of the synthetic web, in a seeded random order.

    junk_frac: fraction of junk documents; technical_frac: fraction of the *good*
    documents that are technical; footer_prob: chance that a good document ends with a
    boilerplate block (a planted duplicate span); junk_mix: relative weights of the junk
    kinds (default DEFAULT_JUNK_MIX). Boilerplate blocks are drawn with Zipf-like
    popularity, so some repeat twice and some fifty times.
    """
    if not isinstance(n_docs, int) or n_docs < 1:
        raise ValueError(f"n_docs must be a positive int, got {n_docs!r}")
    for name, v in (
        ("junk_frac", junk_frac),
        ("technical_frac", technical_frac),
        ("footer_prob", footer_prob),
    ):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {v}")
    if not facts or not blocks:
        raise ValueError(
            "facts and blocks must be non-empty (see make_fact_table, "
            "make_boilerplate_blocks)"
        )
    mix = dict(DEFAULT_JUNK_MIX if junk_mix is None else junk_mix)
    if (
        set(mix) - set(JUNK_KINDS)
        or any(v < 0 for v in mix.values())
        or sum(mix.values()) <= 0
    ):
        raise ValueError(
            f"junk_mix must map a subset of {JUNK_KINDS} to non-negative weights, got "
            f"{mix}"
        )
    rng = np.random.default_rng(seed)
    junk_kinds = list(mix)
    junk_p = np.array([mix[k] for k in junk_kinds], dtype=float)
    junk_p /= junk_p.sum()
    popularity = 1.0 / np.arange(1, len(blocks) + 1) ** 0.8
    popularity /= popularity.sum()
    docs = []
    for _ in range(n_docs):
        e = int(rng.integers(len(facts)))
        if rng.random() >= junk_frac:
            if rng.random() < technical_frac:
                cat = str(rng.choice(CATEGORIES))
                doc = Doc(_technical_doc(rng, facts, e, cat), "technical", True, cat, e)
            else:
                doc = Doc(_general_doc(rng, facts, e), "general", True, "none", e)
            if rng.random() < footer_prob:
                b = int(rng.choice(len(blocks), p=popularity))
                doc.text += "\n" + blocks[b]
                doc.blocks.append(b)
        else:
            kind = str(rng.choice(junk_kinds, p=junk_p))
            if kind == "spam":
                doc = Doc(
                    " ".join(
                        str(t).format(
                            p=rng.choice(_PRODUCTS), n=int(rng.integers(2, 999))
                        )
                        for t in rng.choice(_SPAM, size=int(rng.integers(5, 12)))
                    ),
                    kind,
                    False,
                )
            elif kind == "boilerplate":
                chosen = rng.choice(
                    len(blocks),
                    size=int(rng.integers(2, 4)),
                    replace=False,
                    p=popularity,
                )
                doc = Doc(
                    "\n".join(blocks[int(b)] for b in chosen),
                    kind,
                    False,
                    blocks=[int(b) for b in chosen],
                )
            elif kind == "gibberish":
                doc = Doc(_gibberish_doc(rng), kind, False)
            elif kind == "tagsoup":
                doc = Doc(_tagsoup_doc(rng, facts, e), kind, False, entity=e)
            else:
                doc = Doc(_runon_doc(rng, facts, e), kind, False, entity=e)
        docs.append(doc)
    return docs


def make_textbook_stream(
    n_docs: int, seed: int, facts: list[dict], technical_frac: float = 0.3
) -> list[Doc]:
    """Clean documents only (general + technical, no footers): the "synthetic textbook"
    positives for the quality classifier, the labelled data for the category classifier,
    and held-out clean text for the language-model evaluation (use a seed the web corpus
    does not use)."""
    return make_web_corpus(
        n_docs,
        seed,
        facts,
        blocks=["unused"],
        junk_frac=0.0,
        technical_frac=technical_frac,
        footer_prob=0.0,
    )


def iter_web_corpus(
    n_docs: int,
    seed: int,
    facts: list[dict],
    blocks: list[str],
    chunk: int = 500,
    **kwargs,
) -> Iterator[Doc]:
    """Stream the web corpus ``chunk`` documents at a time (memory independent of
    ``n_docs``)."""
    for start in range(0, n_docs, chunk):
        yield from make_web_corpus(
            min(chunk, n_docs - start), seed * 100_003 + start, facts, blocks, **kwargs
        )


CLOZE_TEMPLATES = (
    ("C", "The capital of {E} is ", "."),
    ("R", "{E} lies on the river ", ","),
    ("E", "{C} is the largest city in ", ","),
    ("C", "The river {R} flows through ", " "),
)


def cloze_items(
    facts: list[dict], n_options: int = 4, seed: int = 0, templates=CLOZE_TEMPLATES
) -> list[tuple[str, list[str], int]]:
    """Cloze questions over the fact table, one per entity and template, e.g. ("The
    capital of E is ", [4 candidate capitals + "."], index of the right one).
    The default templates ask for the capital, the river, the country of a capital and
    the city on a river: four facts the general prose states, each with a unique answer
    per entity. Distractors are other entities' values of the same field, so only the
    fact itself tells them apart."""
    if not isinstance(n_options, int) or n_options < 2 or n_options > len(facts):
        raise ValueError(
            f"n_options must be an int in [2, {len(facts)}], got {n_options!r}"
        )
    if not templates:
        raise ValueError("templates must be non-empty (key, prompt, ending) triples")
    rng = np.random.default_rng(seed)
    items = []
    for key, prompt, end in templates:
        for i, f in enumerate(facts):
            others = rng.choice(
                [j for j in range(len(facts)) if j != i],
                size=n_options - 1,
                replace=False,
            )
            options = [f[key]] + [facts[int(j)][key] for j in others]
            order = rng.permutation(n_options)
            items.append(
                (
                    prompt.format(**f),
                    [options[k] + end for k in order],
                    int(np.argmax(order == 0)),
                )
            )
    return items
