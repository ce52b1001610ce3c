"""The book's small core: device choice, seeding, scale presets, progress
bars, plot style.

Every chapter starts with the same four moves -- pick a device, seed everything, read
its sizes from ``SCALE``, set the plot style -- and this module is where they live,
once. Nothing here keeps state of its own: each function takes what it needs and returns
what it made.
"""

from __future__ import annotations

import os
import random
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any, Iterable, Iterator, Mapping

import numpy as np
import torch

SCALES = ("ci", "full")

# One palette for the whole book (colour-blind safe, Okabe & Ito).
# Chapters index it by role: the method first, then baselines, then references.
PALETTE = [
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#F0E442",
    "#000000",
]


def get_device(device: str | torch.device | None = None) -> torch.device:
    """The device to run on: the one named, else CUDA, then Apple's MPS, then the CPU.

    ``device`` may be ``None`` (choose the best available), a string such as
    ``"cuda:0"`` or ``"cpu"``, or a ``torch.device``. Asking for a device this machine
    lacks is a ``ValueError`` rather than a crash deep inside the first
    tensor operation.
    """
    if device is None:
        if torch.cuda.is_available():
            return torch.device("cuda")
        if (
            getattr(torch.backends, "mps", None) is not None
            and torch.backends.mps.is_available()
        ):
            return torch.device("mps")
        return torch.device("cpu")
    if not isinstance(device, (str, torch.device)):
        raise TypeError(
            f"device must be None, a str or a torch.device, got {type(device).__name__}"
        )
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ValueError(
            f"unknown device {device!r}: expected e.g. 'cpu', 'cuda', 'cuda:0' or 'mps'"
        ) from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device {device!r} was asked for but CUDA is not available here"
        )
    if dev.type == "mps" and not (
        getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()
    ):
        raise ValueError(
            f"device {device!r} was asked for but MPS is not available here"
        )
    return dev


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python's ``random``, NumPy's global generator and torch (CPU and all GPUs)
    in one call: the notebook's own first move (its setup cell), and the one place in
    the library that sets global random state. Library functions never do; they take a
    ``seed`` or a ``torch.Generator`` (see :func:`seeded`).

    Returns a fresh CPU ``torch.Generator`` seeded with ``seed``, for code that prefers
    to pass its randomness explicitly (the library does).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= int(seed) < 2**32:
        raise ValueError(f"seed must lie in [0, 2**32), got {seed}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    return torch.Generator().manual_seed(seed)


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """A block whose torch draws that take no generator (a module's initial weights,
    dropout, ``torch.randn`` without ``generator=``) come from a generator seeded with
    ``seed``; when the block ends, torch's global generators (CPU and every GPU) are
    exactly as they were.

        with seeded(seed):
            model = nn.Linear(4, 2)  # the same weights for the same seed, always

    This is how the library draws from a seed without global state: what a function
    computes depends on its ``seed`` only, never on what ran before it, and it leaves
    the caller's random stream untouched (``torch.random.fork_rng`` underneath).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= int(seed) < 2**63:
        raise ValueError(f"seed must lie in [0, 2**63), got {seed}")
    devices = (
        list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    )
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        yield


def scale_preset(
    scale: str, overrides: Mapping[str, Any] | None = None, **presets: Mapping[str, Any]
) -> SimpleNamespace:
    """A chapter's sizes for the chosen ``scale``, declared in one place, with
    ``overrides`` (a chapter's ``OVERRIDES``) changing some of them for one run.

    >>> cfg = scale_preset(
    ...     "ci", ci=dict(n=8, steps=2_000), full=dict(n=100, steps=50_000)
    ... )
    >>> cfg.n, cfg.steps
    (8, 2000)
    >>> scale_preset("ci", {"n": 16}, ci=dict(n=8), full=dict(n=100)).n
    16

    Every preset must give the same keys, so that a size cannot silently exist at one
    scale only. An unknown ``scale`` is a ``ValueError`` that names the valid ones, and
    so is an override of a key no preset has. An override keeps the preset value's
    type: an int where a float is declared becomes a float, a list where a tuple is
    declared becomes a tuple (papermill and JSON give lists), anything else must be of
    the declared type. ``cfg.overrides`` holds what was changed, for the run's record.
    """
    if not isinstance(scale, str):
        raise TypeError(
            f"SCALE must be a str, one of {sorted(presets) or list(SCALES)}, got "
            f"{type(scale).__name__}"
        )
    if not presets:
        raise ValueError("give at least one preset, e.g. ci=dict(...), full=dict(...)")
    for name, values in presets.items():
        if not isinstance(values, Mapping):
            raise TypeError(
                f"preset {name!r} must be a dict of sizes, got {type(values).__name__}"
            )
    keys = {name: set(values) for name, values in presets.items()}
    first = next(iter(keys.values()))
    reserved = sorted(first & {"scale", "overrides"})
    if reserved:
        raise ValueError(f"{reserved} name the preset itself; call the size otherwise")
    for name, ks in keys.items():
        if ks != first:
            raise ValueError(
                f"every preset must have the same keys; {name!r} differs by "
                f"{sorted(ks ^ first)}"
            )
    if scale not in presets:
        raise ValueError(
            f"unknown SCALE {scale!r}: valid values are "
            f"{', '.join(repr(s) for s in presets)}"
        )
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, Mapping):
        raise TypeError(
            "OVERRIDES must be a dict of preset keys to values, got "
            f"{type(overrides).__name__}"
        )
    values = dict(presets[scale])
    unknown = sorted(set(overrides) - set(values))
    if unknown:
        raise ValueError(
            f"OVERRIDES has unknown key(s) {unknown}; the preset's keys are "
            f"{sorted(values)}"
        )
    for key, new in overrides.items():
        values[key] = _as_declared(key, values[key], new)
    return SimpleNamespace(scale=scale, overrides=dict(overrides), **values)


def _as_declared(key: str, declared: Any, new: Any) -> Any:
    """``new`` as an override of a preset value ``declared``, in ``declared``'s type
    (see :func:`scale_preset`)."""
    if isinstance(declared, bool) or declared is None:
        ok = isinstance(new, bool) if declared is not None else True
    elif isinstance(declared, float):
        ok = isinstance(new, (int, float)) and not isinstance(new, bool)
        new = float(new) if ok else new
    elif isinstance(declared, int):
        ok = isinstance(new, int) and not isinstance(new, bool)
    elif isinstance(declared, tuple):
        ok = isinstance(new, (list, tuple))
        new = tuple(new) if ok else new
    else:
        ok = isinstance(new, type(declared))
    if not ok:
        raise TypeError(
            f"OVERRIDES[{key!r}] must be like the preset's {declared!r} "
            f"({type(declared).__name__}), got {new!r} ({type(new).__name__})"
        )
    return new


def progress_enabled() -> bool:
    """Progress bars show unless ``ICLR26_PROGRESS=0`` (the book build and the
    tests set it)."""
    return os.environ.get("ICLR26_PROGRESS", "1") not in ("0", "false", "False", "")


def progress(
    iterable: Iterable, desc: str | None = None, total: int | None = None, **kwargs
):
    """``tqdm.auto`` over ``iterable``: a widget in Jupyter, text in a terminal,
    nothing when quiet.

    Quiet (``ICLR26_PROGRESS=0``) keeps executed notebooks free of half-drawn bars in
    the rendered book.
    """
    from tqdm.auto import tqdm

    return tqdm(
        iterable,
        desc=desc,
        total=total,
        disable=not progress_enabled(),
        leave=False,
        **kwargs,
    )


def use_book_style() -> None:
    """Set matplotlib's defaults to the book's style: one palette, readable sizes,
    light grid."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(
        {
            "figure.figsize": (6.4, 3.8),
            "figure.dpi": 110,
            "savefig.dpi": 150,
            "figure.constrained_layout.use": True,
            "axes.prop_cycle": cycler(color=PALETTE),
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.titlesize": 11,
            "axes.labelsize": 10,
            "legend.fontsize": 9,
            "legend.frameon": False,
            "lines.linewidth": 1.8,
            "image.cmap": "viridis",
        }
    )


EXERCISE_STATUSES = ("not done yet", "wrong", "correct")


class ExerciseVerdict(str):
    """What an exercise's check function answers: a line of text for the student, with
    its ``status`` ("not done yet", "wrong" or "correct") for a grader or a test,
    ``crashed`` (the student's function raised an error instead of returning) and
    ``used_library`` (it called the library's own answer: :func:`grade_exercise`)."""

    def __new__(
        cls, status: str, message: str, crashed: bool = False, used_library=False
    ):
        if status not in EXERCISE_STATUSES:
            raise ValueError(
                f"status must be one of {EXERCISE_STATUSES}, got {status!r}"
            )
        obj = super().__new__(cls, f"{status}: {message}")
        obj.status = status
        obj.crashed = crashed
        obj.used_library = used_library
        return obj

    def __bool__(self) -> bool:  # `assert check(fn)` passes only on a correct answer
        return self.status == "correct"


def grade_exercise(fn, trial, forbidden: Iterable = ()) -> ExerciseVerdict:
    """Run ``trial(fn)`` and say how the student's ``fn`` fared.

    ``trial`` calls ``fn`` on its test cases and returns a one-line success message, or
    raises ``AssertionError("...")`` whose message says what is wrong and hints at why
    -- never the answer. A ``fn`` that still raises ``NotImplementedError`` (the stub)
    is "not done yet"; one that raises anything else is "wrong", with the error named.

    ``forbidden``: the library functions that compute the answer (the chapter's own
    implementation of what the exercise asks for). While ``fn`` runs, a profiler hook
    watches for a call to any of them, however the student reached it (an alias, an
    import inside the function); a ``fn`` that calls one is "not done yet", whatever it
    returned, so that returning the library's answer earns nothing. The trial itself may
    call them freely (to compute the expected answer): only calls made while ``fn`` runs
    count.
    """
    import inspect
    import sys

    if not callable(fn):
        raise TypeError(f"pass your function itself, not {type(fn).__name__}")
    watched = {}
    for f in forbidden:
        f = inspect.unwrap(f)
        code = getattr(f, "__code__", None)
        if code is None:
            raise TypeError(
                f"forbidden must hold Python functions, got {type(f).__name__}"
            )
        watched[code] = f"{f.__module__.removeprefix('iclr26.')}.{f.__qualname__}"
    used: list[str] = []

    def hook(frame, event, arg):
        if event == "call" and frame.f_code in watched:
            used.append(watched[frame.f_code])

    own = getattr(inspect.unwrap(fn), "__code__", None)

    def guarded(*args, **kwargs):
        if own in watched:  # the library's function itself, handed in as the answer
            used.append(watched[own])
        previous = sys.getprofile()
        sys.setprofile(hook)
        try:
            return fn(*args, **kwargs)
        finally:
            sys.setprofile(previous)

    def library_used() -> ExerciseVerdict:
        return ExerciseVerdict(
            "not done yet",
            f"your function calls the library's own answer (`{used[0]}`); the "
            "exercise is to write it yourself, from the chapter's derivation",
            used_library=True,
        )

    try:
        message = trial(guarded if watched else fn)
    except NotImplementedError:
        if used:
            return library_used()
        return ExerciseVerdict(
            "not done yet",
            "replace the `raise NotImplementedError` in the "
            "exercise cell with your code, then run this cell again",
        )
    except AssertionError as err:
        if used:
            return library_used()
        return ExerciseVerdict("wrong", f"because {err}")
    except (
        Exception
    ) as err:  # the student's code crashed: name the error, do not hide it
        if used:
            return library_used()
        return ExerciseVerdict(
            "wrong",
            f"because your function raised {type(err).__name__}: {err}",
            crashed=True,
        )
    if used:
        return library_used()
    return ExerciseVerdict("correct", message)
