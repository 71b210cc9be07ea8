"""What one check's run comes to, decided from what it raised alone: its status and its words for
the learner, and what it means for the checks after it (a function blocked, the run stopped),
as a value. The grading plugin (grader/core/plugin.py) applies those effects, in one place.
"""
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from _pytest.outcomes import Skipped  # pytest.skip.Exception, by a name a type checker can follow

from grader.base.kinds import Failure, Status, Why
from grader.core.results import NOT_GRADED
from grader.judge.channel import CallFailed

# Why a function's remaining checks do not run: as the check's own function, as a dependency.
BLOCKED: dict[Why, tuple[str | None, str]] = {
    Why.NOT_IMPLEMENTED: ("not implemented yet", "is not implemented yet"),
    Why.TIMEOUT: ("skipped: it timed out in an earlier check", "timed out in an earlier check"),
    Why.FAILING: (None, "does not pass its own checks yet")}
# What a call's failure stops of its function's checks: a stub, or a function that timed out once.
BLOCKS = {Failure.NOT_IMPLEMENTED: Why.NOT_IMPLEMENTED, Failure.TIMEOUT: Why.TIMEOUT}


class LabWords(Protocol):
    """What an outcome needs of the lab (a grader.readers.manifest.Lab): its functions, and its hints for exceptions."""
    functions: Mapping[str, str]

    def exception_hint(self, raised: str) -> str: ...


class Blocked(Skipped):
    """A check not run because `function` cannot be used: `why` is a key of BLOCKED, Why.BUDGET,
    or Why.JUDGE (the judge's own work ran past its budget: not graded, the grader's fault)."""

    def __init__(self, function: str, why: Why | str, message: str | None) -> None:
        super().__init__(msg=message)
        self.function, self.why = function, Why(why)


def blocked(function: str, why: Why, own: str) -> Blocked:
    """The Blocked of a check of function `own` that needs `function`, which cannot be used."""
    yours, dependency = BLOCKED[why]
    return Blocked(function, why, yours if function == own else f"not graded because {function} {dependency}")


@dataclass(frozen=True)
class Outcome:
    """A check's result, and its effects on the rest of the grading."""
    status: Status = Status.PASSED
    message: str = ""
    hint: str = ""
    failure: Failure | Literal[""] = ""     # how student code failed to answer; "": it did not
    blocked_by: str = ""            # the function whose stub or failure kept this check from running
    mistake: str = ""               # the id of the mistake its hint names
    blocks: tuple[str, Why] | None = None   # (function, why): its remaining checks do not run
    stops: str = ""                 # why no more checks run at all (the time budget ran out)


def outcome(error: BaseException | None, result: str, function: str, lab: LabWords) -> Outcome:
    """The Outcome of a check of `function` that ended with `error` (None if none), as pytest
    reported it (`result`: "passed", "skipped" or "failed")."""
    if result == "passed":
        return Outcome()
    if result == "skipped":
        return skipped(error)
    hint, mistake = getattr(error, "hint", None) or "", getattr(error, "mistake", None) or ""
    if not isinstance(error, CallFailed):
        return Outcome(Status.FAILED, explain(error), hint, mistake=mistake)
    return call_failed(error, function, lab)


def skipped(error: BaseException | None) -> Outcome:
    message = str(error.msg if isinstance(error, Skipped) else error)
    if not isinstance(error, Blocked):
        return Outcome(Status.SKIPPED, message)
    status = {Why.NOT_IMPLEMENTED: Status.NOT_IMPLEMENTED, Why.JUDGE: Status.NOT_GRADED}.get(error.why, Status.SKIPPED)
    return Outcome(status, message, blocked_by="" if error.why == Why.JUDGE else error.function)


def explain(error: BaseException | None) -> str:
    """A check's own failure in words: its text, or what it could not use."""
    if isinstance(error, AssertionError):       # CheckFailed too
        return str(error)
    return f"the check could not use what your code returned ({type(error).__name__}: {str(error)[:300]})"


def call_failed(error: CallFailed, function: str, lab: LabWords) -> Outcome:
    """The Outcome of a call of student code that did not answer, in a check of `function`."""
    kind, name, text = error.kind, error.function, error.message
    if kind == Failure.NOT_IMPLEMENTED:
        missing = text if text in lab.functions else name      # the function whose stub raised
        return Outcome(Status.NOT_IMPLEMENTED, str(blocked(missing, BLOCKS[kind], function).msg), failure=kind,
                       blocked_by=missing, blocks=(missing, BLOCKS[kind]))
    if kind == Failure.BUDGET:
        return Outcome(Status.FAILED, text, failure=kind, stops=text)
    if kind == Failure.GRADER_FAULT:
        return Outcome(Status.NOT_GRADED, f"not graded: {text} ({NOT_GRADED})", failure=kind)
    if kind == Failure.TIMEOUT:
        return Outcome(Status.FAILED, f"{name}: {text}", failure=kind, blocks=(name, BLOCKS[kind]))
    if kind == Failure.FORBIDDEN:
        return Outcome(Status.FAILED, f"this lab asks you to write {name} yourself: it called {text}", failure=kind)
    if kind == Failure.RAISED:
        return Outcome(Status.FAILED, raised(error), lab.exception_hint(text), failure=kind)
    return Outcome(Status.FAILED, f"{name}: {text}", failure=kind)


def raised(error: CallFailed) -> str:
    """What student code raised, where in the learner's files, and where in the lab's given files."""
    where = "".join(f"\n  at {w}" for w in error.where)
    if error.given:
        where += (f"\n    hint it surfaced in {error.given}, given with the lab: look at what your code "
                  "passed to it (shapes, dtypes, devices)")
    return f"{error.function} raised {error.message}{where}"
