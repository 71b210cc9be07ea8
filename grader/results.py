"""Results of grading a lab, and their export in Gradescope's results.json shape."""
from typing import Literal

from pydantic import BaseModel, ConfigDict

Status = Literal["passed", "failed", "not_implemented", "skipped"]


def printable(text):
    """Text from student code made safe for a terminal and a JSON file: no control characters."""
    return "".join(c if c.isprintable() or c in "\n\t" else "\N{REPLACEMENT CHARACTER}" for c in text)


class Check(BaseModel):
    """One hidden or public test, as graded."""
    name: str                       # what it checks, in words
    test: str                       # file::function of the test, for instructors
    tags: list[str]                 # the student functions it exercises; the first owns the points
    points: float
    score: float
    status: Status
    message: str = ""               # expected / saw / hint, or why it did not run
    hint: str = ""                  # the likely mistake, when the check could tell
    failure: str = ""               # how student code failed to answer: timeout, crashed, raised, ...
    output: str = ""                # what student code printed, cut
    blocked_by: str = ""            # the function whose stub or failure kept this check from running
    visibility: Literal["visible", "hidden"]

    @property
    def function(self):
        return self.tags[0]


class DoneItem(BaseModel):
    text: str
    done: bool
    graded: bool = True             # False when -k left its checks out


class LabResults(BaseModel):
    lab: str
    title: str
    submission: str
    device: str
    sandbox: Literal["bubblewrap", "process"]
    execution_time: float
    checks: list[Check]
    done_when: list[DoneItem]
    missing_files: list[str] = []   # student files the submission lacked (the stubs stood in)
    selected: list[str] = []        # -k selections, when only part of the lab was graded
    stopped: str = ""               # why grading stopped early (the time budget ran out)
    memos: dict[str, str] = {}      # trusted results it used: memo file -> digest (grader/memo.py)

    @property
    def score(self):
        return sum(c.score for c in self.checks)

    @property
    def max_score(self):
        return sum(c.points for c in self.checks)

    @property
    def all_passed(self):
        return bool(self.checks) and all(c.status == "passed" for c in self.checks)

    def by_function(self, functions):
        """{function: (score, max)} in the order given, for functions with checks."""
        totals = {}
        for c in self.checks:
            score, top = totals.get(c.function, (0.0, 0.0))
            totals[c.function] = (score + c.score, top + c.points)
        return {f: totals[f] for f in functions if f in totals}

    def gradescope(self):
        output = f"{self.title}: {self.score:g}/{self.max_score:g} points"
        if self.missing_files:
            output += f"\nNot submitted (graded as the stubs): {', '.join(self.missing_files)}"
        return GradescopeResults(
            score=self.score, execution_time=round(self.execution_time, 3), output=output,
            sandbox=self.sandbox,
            tests=[GradescopeTest(
                name=c.name, number=str(i), score=c.score, max_score=c.points,
                status="passed" if c.status == "passed" else "failed",
                output="\n".join(filter(None, [c.message, c.output and f"Your code printed:\n{c.output}"])),
                visibility=c.visibility, tags=c.tags)
                for i, c in enumerate(self.checks, 1)])


class GradescopeTest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    number: str
    score: float
    max_score: float
    status: Literal["passed", "failed"]
    output: str
    visibility: Literal["hidden", "after_due_date", "after_published", "visible"]
    tags: list[str]


class GradescopeResults(BaseModel):
    """Gradescope's autograder results.json, with the sandbox this grading ran in."""
    model_config = ConfigDict(extra="forbid")
    score: float
    execution_time: float
    output: str
    sandbox: Literal["bubblewrap", "process"]
    tests: list[GradescopeTest]


# -- batch grading: one row per student, the record kept beside results.json, the class summary ----
RowStatus = Literal["graded", "incomplete", "broken_code", "empty", "rejected", "error", "pending"]


class BatchRow(BaseModel):
    """One student's line of the gradebook.

    status: graded; incomplete (graded, some student files missing: the stubs stood in);
    broken_code (graded, a student file is not valid Python); empty (no student file found);
    rejected (an unsafe or unreadable submission, not graded); error (the grader failed: rerun);
    pending (not graded yet: the batch was interrupted).
    """
    student: str
    status: RowStatus
    detail: str = ""                        # what is wrong, in words, unless plainly graded
    score: float | None = None
    max_score: float | None = None
    passed: bool = False                    # every check passed
    functions: dict[str, float] = {}        # points per student function
    incidents: list[str] = []               # "f: timed out", "g: crashed"
    seconds: float = 0.0
    reused: bool = False                    # unchanged since graded: taken from the last run

    @property
    def percent(self):
        return 100 * self.score / self.max_score if self.score is not None and self.max_score else None


class StudentRecord(BaseModel):
    """OUT/<student>/graded.json: what was graded (a content hash) and how it went."""
    hash: str
    row: BatchRow
    results: LabResults | None = None


class ScoreBin(BaseModel):
    low: float                              # percent, inclusive
    high: float                             # percent, exclusive (the last bin includes 100)
    students: int


class CheckRate(BaseModel):
    name: str
    test: str
    function: str
    passed: int
    graded: int

    @property
    def rate(self):
        return self.passed / self.graded if self.graded else 0.0


class Mistake(BaseModel):
    hint: str
    function: str
    students: list[str]


class BatchSummary(BaseModel):
    """OUT/summary.json: where the class stands and struggles."""
    lab: str
    title: str
    students: int
    statuses: dict[str, int]                # status -> students
    graded_now: int                         # graded by this run (the rest reused or not gradable)
    max_score: float | None
    functions: dict[str, float]             # student function -> its points
    mean_percent: float | None
    median_percent: float | None
    histogram: list[ScoreBin]
    checks: list[CheckRate]                 # worst pass rate first
    mistakes: list[Mistake]                 # most common diagnosed mistakes first
    problems: list[BatchRow]                # not plainly graded, or crashed / timed out somewhere
    workers: int
    seconds: float
    interrupted: bool = False
