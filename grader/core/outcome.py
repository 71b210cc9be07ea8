"""What one check's run comes to, decided from what it raised alone: its status and its words for
the learner, and what it means for the checks after it (a function blocked, the run stopped),
as a value. The grading plugin (grader/core/plugin.py) applies those effects, in one place.
"""
from dataclasses import dataclass

import pytest

from grader.judge.channel import CallFailed
from grader.results import NOT_GRADED

# Why a function's remaining checks do not run: as the check's own function, as a dependency.
BLOCKED = {"not_implemented": ("not implemented yet", "is not implemented yet"),
           "timeout": ("skipped: it timed out in an earlier check", "timed out in an earlier check"),
           "failing": (None, "does not pass its own checks yet")}


class Blocked(pytest.skip.Exception):
    """A check not run because `function` cannot be used: `why` is a key of BLOCKED, "budget", or
    "judge" (the judge's own work ran past its budget: not graded, the grader's fault)."""

    def __init__(self, function, why, message):
        super().__init__(msg=message)
        self.function, self.why = function, why


def blocked(function, why, own):
    """The Blocked of a check of function `own` that needs `function`, which cannot be used."""
    yours, dependency = BLOCKED[why]
    return Blocked(function, why, yours if function == own else f"not graded because {function} {dependency}")


@dataclass(frozen=True)
class Outcome:
    """A check's result, and its effects on the rest of the grading."""
    status: str = "passed"
    message: str = ""
    hint: str = ""
    failure: str = ""               # how student code failed to answer: timeout, crashed, raised, ...
    blocked_by: str = ""            # the function whose stub or failure kept this check from running
    mistake: str = ""               # the id of the mistake its hint names
    blocks: tuple[str, str] | None = None   # (function, why): its remaining checks do not run
    stops: str = ""                 # why no more checks run at all (the time budget ran out)


def outcome(error, result, function, lab):
    """The Outcome of a check of `function` that ended with `error` (None if none), as pytest
    reported it (`result`: "passed", "skipped" or "failed")."""
    if result == "passed":
        return Outcome()
    if result == "skipped":
        return skipped(error)
    hint, mistake = getattr(error, "hint", None) or "", getattr(error, "mistake", None) or ""
    if not isinstance(error, CallFailed):
        return Outcome("failed", explain(error), hint, mistake=mistake)
    return call_failed(error, function, lab)


def skipped(error):
    message = str(error.msg if hasattr(error, "msg") else error)
    if not isinstance(error, Blocked):
        return Outcome("skipped", message)
    status = {"not_implemented": "not_implemented", "judge": "not_graded"}.get(error.why, "skipped")
    return Outcome(status, message, blocked_by="" if error.why == "judge" else error.function)


def explain(error):
    """A check's own failure in words: its text, or what it could not use."""
    if isinstance(error, AssertionError):       # CheckFailed too
        return str(error)
    return f"the check could not use what your code returned ({type(error).__name__}: {str(error)[:300]})"


def call_failed(error, function, lab):
    """The Outcome of a call of student code that did not answer, in a check of `function`."""
    kind, name, text = error.kind, error.function, error.message
    if kind == "not_implemented":
        missing = text if text in lab.functions else name      # the function whose stub raised
        return Outcome("not_implemented", str(blocked(missing, kind, function).msg), failure=kind,
                       blocked_by=missing, blocks=(missing, kind))
    if kind == "budget":
        return Outcome("failed", text, failure=kind, stops=text)
    if kind == "grader_fault":
        return Outcome("not_graded", f"not graded: {text} ({NOT_GRADED})", failure=kind)
    if kind == "timeout":
        return Outcome("failed", f"{name}: {text}", failure=kind, blocks=(name, kind))
    if kind == "forbidden":
        return Outcome("failed", f"this lab asks you to write {name} yourself: it called {text}", failure=kind)
    if kind == "raised":
        return Outcome("failed", raised(error), lab.exception_hint(text), failure=kind)
    return Outcome("failed", f"{name}: {text}", failure=kind)


def raised(error):
    """What student code raised, where in the learner's files, and where in the lab's given files."""
    where = "".join(f"\n  at {w}" for w in error.where)
    if error.given:
        where += (f"\n    hint it surfaced in {error.given}, given with the lab: look at what your code "
                  "passed to it (shapes, dtypes, devices)")
    return f"{error.function} raised {error.message}{where}"
