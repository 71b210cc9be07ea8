"""The words of the grader's protocols, one type each: how a call of student code failed, a
check's status, why a check was not run, a grading worker's answer, and a batch row's timing.

Each is a `str` enum: a member equals the string it stands for, and reads, prints and goes into
JSON as that string, so results written before these types existed load unchanged.
"""
from enum import Enum


class Word(str, Enum):
    """A str enum that shows and hashes as its value on every Python the project supports (3.10's
    Enum would print `Failure.TIMEOUT` and hash its name, 3.11's format() would print the name too)."""

    def __hash__(self) -> int:
        return str.__hash__(self)

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Failure(Word):
    """How a call of student code failed to return a value (grader.judge.channel.CallFailed.kind)."""
    RAISED = "raised"                       # it raised an exception
    NOT_IMPLEMENTED = "not_implemented"     # a stub's NotImplementedError: the function not written yet
    TIMEOUT = "timeout"                     # no answer within the call's time limit
    BUDGET = "budget"                       # the submission's time budget ran out
    CRASHED = "crashed"                     # the process running it ended
    BAD_ANSWER = "bad_answer"               # it answered with what is not plain data
    FORBIDDEN = "forbidden"                 # it called what the lab forbids
    GRADER_FAULT = "grader_fault"           # the grader could not run or read the call: not graded, regraded


class Status(Word):
    """A check's status, in a learner's results.json."""
    PASSED = "passed"
    FAILED = "failed"
    NOT_IMPLEMENTED = "not_implemented"     # its function's stub, or one it needs, was left as given
    SKIPPED = "skipped"                     # not run: blocked by another function, or the time budget
    NOT_GRADED = "not_graded"               # the grader's fault: nothing charged, graded again


class Why(Word):
    """Why a check was not run (grader.core.outcome.Blocked.why)."""
    NOT_IMPLEMENTED = "not_implemented"     # the function it needs is a stub
    TIMEOUT = "timeout"                     # the function it needs timed out in an earlier check
    FAILING = "failing"                     # the function it needs fails its own checks
    BUDGET = "budget"                       # the submission's time budget ran out
    JUDGE = "judge"                         # the judge's own work ran past its budget: not graded


class Answer(Word):
    """A grading worker's answer about one submission (grader/instructor/workers.py, cluster.py),
    sent with its data: the results, or why not."""
    GRADED = "graded"                       # data: the LabResults, dumped as JSON
    REGRADE = "regrade"                     # data: why the grader, not the submission, failed
    FAILED = "failed"                       # data: why the worker could not start (the batch stops)
    DIED = "died"                           # data: the worker process ended while grading


class Timing(Word):
    """Where a batch row stands under the lab's late policy (grader/instructor/deadlines.py)."""
    ON_TIME = "on time"
    LATE = "late"
    UNKNOWN = "time unknown"                # no trusted time: no mark
    ASSUMED_ON_TIME = "assumed on time"     # no trusted time, and the instructor assumed one
    ASSUMED_LATE = "assumed late"


UNKNOWN_TIMES = (Timing.UNKNOWN, Timing.ASSUMED_ON_TIME, Timing.ASSUMED_LATE)     # no trusted time
