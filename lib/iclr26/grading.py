"""Grading a student's function so that calling the book's own answer scores nothing.

Every exercise asks for a function the library already has (the chapter's checks
compare against it), so a submission of ``return dmf.effective_rank(W)`` would pass
every check. The classroom kit's autograder (``tools/classroom.py``) therefore runs each
check through :func:`without_library`:

* the student's functions are wrapped, so the guard knows when one of them is running;
* while one is, a profile hook records every call from non-library code (the student's
  own, or torch, NumPy or a builtin it calls) into a function of the ``iclr26`` package;
* a recorded call makes the verdict "not done yet", which scores no point.

Not recorded: the library calling itself (the checker computing its reference, a
helper's own internals), and the functions the exercise's reference solution calls too
(``allowed``: a helper the exercise hands the student, such as ``dmf.end_to_end``).

No chapter imports this module, so it is not part of any chapter's sweep hash.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable

from .core import ExerciseVerdict

# the guard's own frames (the wrappers) are not "the library"
_THIS_MODULE = __name__


def _in_library(frame) -> bool:
    module = frame.f_globals.get("__name__", "") or ""
    return (module == "iclr26" or module.startswith("iclr26.")) and (
        module != _THIS_MODULE
    )


def without_library(
    check: Callable[..., ExerciseVerdict],
    functions: Iterable[Callable],
    allowed: Iterable[str] = (),
) -> ExerciseVerdict:
    """``check(*functions)``, with each function wrapped; "not done yet" instead of the
    check's verdict if a function called into the ``iclr26`` library (any function not
    named in ``allowed``) while it ran.

    ``check`` takes the student's functions in order and returns the chapter's verdict,
    e.g. ``lambda f: dmf.check_effective_rank(f)``.
    """
    allowed = frozenset(allowed)
    running = [0]  # how many of the student's calls are on the stack
    used: list[str] = []

    def wrap(fn: Callable) -> Callable:
        if not callable(fn):
            return fn  # the check says what is wrong with it

        def student(*args, **kwargs):
            running[0] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                running[0] -= 1

        return student

    def watch(frame, event, arg):
        if event != "call" or not running[0] or not _in_library(frame):
            return
        caller = frame.f_back
        if caller is not None and _in_library(caller):
            return  # the library calling itself
        name = frame.f_code.co_name
        if name not in allowed and len(used) < 10:
            used.append(f"{frame.f_globals['__name__']}.{name}")

    wrapped = [wrap(fn) for fn in functions]
    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        verdict = check(*wrapped)
    finally:
        sys.setprofile(previous)
    if used:
        return ExerciseVerdict(
            "not done yet",
            f"your function calls the book's own `{used[0]}`, the answer this exercise "
            "asks you to write; build it from torch or NumPy operations instead",
        )
    return verdict
