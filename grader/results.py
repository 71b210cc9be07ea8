"""Results of grading a lab, and their export in Gradescope's results.json shape
(https://gradescope-autograders.readthedocs.io/en/latest/specs/)."""
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, model_validator

from grader.kinds import Failure, Status, Timing

NOT_GRADED = "the grader could not grade this; nothing was charged to you"
Visibility = Literal["hidden", "after_due_date", "after_published", "visible"]
NUMBER = re.compile(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?")
HIDDEN_INPUTS = ("this check used what your code made of inputs the course keeps hidden, so its details stay "
                 "hidden: the same check in your own copy of the lab shows them, on the inputs given there")


def printable(text: str) -> str:
    """Text from student code made safe for a terminal and a JSON file: no control characters."""
    return "".join(c if c.isprintable() or c in "\n\t" else "\N{REPLACEMENT CHARACTER}" for c in text)


def one_line(text: str) -> str:
    """A name from the filesystem (a student's folder, a file) made safe for any output: no
    control character at all, not even a newline that would forge a line of progress output."""
    return "".join(c if c.isprintable() else "\N{REPLACEMENT CHARACTER}" for c in text)


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
    failure: Failure | Literal[""] = ""     # how student code failed to answer; "": it did not
    output: str = ""                # what student code printed, cut
    blocked_by: str = ""            # the function whose stub or failure kept this check from running
    visibility: Visibility          # Gradescope's: hidden checks are "hidden" unless lab.yaml says
    mistake: str = ""               # an id of the mistake the hint names, so a class's are counted as one
    data: dict[str, float | list[float]] = {}   # what the check measured (record_property); "reference
    #                                             X" is the reference's X, "x" the x values of the lists
    inputs_hidden: bool = False     # it came after a call on inputs the learner may not see (a seed of the
    #                                 course's) gave it a value: its words may hold them, for instructors only

    @property
    def function(self) -> str:
        return self.tags[0]

    @property
    def mistake_key(self) -> str:
        """What makes two failures the same mistake: its id, else the function and the hint with
        its numbers left out (one hint, worded with another student's numbers, is one mistake)."""
        return self.mistake or f"{self.function}: {' '.join(NUMBER.sub('#', self.hint.lower()).split())}"

    def for_learner(self) -> "Check":
        """The check as a learner may read it: one whose words may hold hidden inputs keeps its
        name and score, and says so instead of its message, hint and output."""
        if not self.inputs_hidden:
            return self
        return self.model_copy(update={"message": HIDDEN_INPUTS, "hint": "", "output": "", "mistake": ""})

    @property
    def outcome(self) -> str:
        """passed, failed, not attempted (the function's own stub) or not run (blocked by another
        function, or the time budget): only "failed" counts against the class."""
        if self.status == Status.NOT_IMPLEMENTED and self.blocked_by in ("", self.function):
            return "not attempted"
        return {Status.PASSED: "passed", Status.FAILED: "failed"}.get(self.status, "not run")


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
    problems: list[str] = []        # what the learner should read first: a syntax error, a file missing
    selected: list[str] = []        # -k selections, when only part of the lab was graded
    stopped: str = ""               # why grading stopped early (the time budget ran out)
    memos: dict[str, str] = {}      # trusted results it used: memo file -> digest (grader/lab_api/memo.py)
    cpu_share: str = ""             # how the submission's CPU use was kept from others' (cgroup.fairness)
    attempts: int = 1               # gradings it took: a grader fault is retried once

    @property
    def faults(self) -> list[Check]:
        """Checks the grader could not grade (status not_graded): the grade is not final."""
        return [c for c in self.checks if c.status == Status.NOT_GRADED]

    @property
    def score(self) -> float:
        return sum(c.score for c in self.checks)

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.checks)

    @property
    def all_passed(self) -> bool:
        return bool(self.checks) and all(c.status == Status.PASSED for c in self.checks)

    def by_function(self, functions: Iterable[str]) -> dict[str, tuple[float, float]]:
        """{function: (score, max)} in the order given, for functions with checks."""
        totals: dict[str, tuple[float, float]] = {}
        for c in self.checks:
            score, top = totals.get(c.function, (0.0, 0.0))
            totals[c.function] = (score + c.score, top + c.points)
        return {f: totals[f] for f in functions if f in totals}

    def gradescope(self, score_visibility: Visibility | None = None) -> "GradescopeResults":
        """Gradescope's results.json. `score_visibility` (lab.yaml's): when the learner sees the
        total, hidden checks included; unset, never while a check is not visible (Gradescope's
        own rule), and the output then gives the points of the visible checks only."""
        output = f"{self.title}: {self.score:g}/{self.max_score:g} points"
        shown = [c for c in self.checks if c.visibility == "visible"]
        if score_visibility is None and len(shown) < len(self.checks):
            output = f"{self.title}: {len(self.checks) - len(shown)} checks hidden from you count too"
            if shown:
                output = f"{self.title}: {sum(c.score for c in shown):g}/{sum(c.points for c in shown):g} points " \
                    f"on the visible checks; {len(self.checks) - len(shown)} more, hidden from you, count too"
        if self.missing_files:
            output += f"\nNot submitted (graded as the stubs): {', '.join(self.missing_files)}"
        return GradescopeResults(
            score=self.score, execution_time=round(self.execution_time, 3), output=output,
            visibility=score_visibility or "visible", extra_data={"sandbox": self.sandbox, "lab": self.lab},
            tests=[GradescopeTest(
                name=c.name, number=str(i), score=c.score, max_score=c.points,
                status="passed" if c.status == Status.PASSED else "failed",
                output="\n".join(filter(None, ["" if c.hint in c.message else f"hint {c.hint}", c.message,
                                                c.output and f"Your code printed:\n{c.output}"])),
                visibility=c.visibility, tags=c.tags)
                for i, c in enumerate((c.for_learner() for c in self.checks), 1)])


class GradescopeTest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    number: str
    score: float
    max_score: float
    status: Literal["passed", "failed"]
    output: str
    output_format: Literal["text"] = "text"     # messages are plain text (no HTML, no Markdown)
    visibility: Visibility
    tags: list[str]


class GradescopeResults(BaseModel):
    """Gradescope's autograder results.json; what its specification has no key for (the sandbox
    this grading ran in) goes in `extra_data`. `visibility`: of the whole result, the score and
    the output (each test's own overrides it); `stdout_visibility`: of run_autograder's log, which
    names failed hidden checks: instructors' only."""
    model_config = ConfigDict(extra="forbid")
    score: float
    execution_time: float
    output: str
    output_format: Literal["text"] = "text"
    visibility: Visibility = "visible"
    stdout_visibility: Visibility = "hidden"
    extra_data: dict[str, str] = {}
    tests: list[GradescopeTest]

    def summary(self) -> str:
        """A readable account for run_autograder's stdout (Gradescope shows it to instructors)."""
        failed = [t for t in self.tests if t.status == "failed"]
        lines = [self.output, f"score {self.score:g}; {len(self.tests)} checks, {len(failed)} failed"]
        lines += [f"  failed: {t.name} ({t.score:g}/{t.max_score:g})" for t in failed]
        return "\n".join(lines)


# -- batch grading: one row per student, the record kept beside results.json, the class summary ----
RowStatus = Literal["graded", "incomplete", "broken_code", "empty", "rejected", "regrade", "pending"]
TimeSource = Literal["", "timestamps", "gradescope", "unknown"]  # the instructor's file, Gradescope's metadata
SCORED = ("graded", "incomplete", "broken_code")   # rows the grader scored: the class statistics


class Adjustment(BaseModel):
    """Points an instructor gave or took after grading (grade.py adjust): who, what, why, when."""
    student: str                            # as the instructor wrote it (grader.identity.shown)
    points: float                           # added to the score after the late policy
    reason: str
    at: datetime                            # when it was recorded
    source: str = ""                        # where it was given: "--student", "adjustments.csv line 3"


class BatchRow(BaseModel):
    """One student's line of the gradebook.

    status: graded; incomplete (graded, some student files missing: the stubs stood in);
    broken_code (graded, a student file is not valid Python); empty (no student file found);
    rejected (an unsafe or unreadable submission, not graded); regrade (the grader failed, not the
    submission: no score, and the next run grades it again); pending (not graded yet: the batch was
    interrupted).
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
    collision: list[str] = []               # the entries that are one student (rejected: keep one)
    # When it came in and what that costs (grader/instructor/deadlines.py): a time only from a
    # source the student cannot write, else unknown and no penalty unless the instructor chose one.
    submitted_at: datetime | None = None
    time_source: TimeSource = ""            # "": the lateness was not worked out (a row being graded)
    late_by_hours: float | None = None      # past the (extended) due time + grace; None: on time or unknown
    penalty_percent: float | None = None    # of the lab's points, under its late policy
    final_score: float | None = None        # the score after the penalty; None: no mark (time unknown)
    timing: str = ""                        # all of it in words: "1 d 10.0 h late: -20%", "time unknown: ..."
    timing_kind: Timing | None = None       # where it stands under the late policy; None: none applied
    extension: float | datetime | None = None   # the roster's: hours, or the student's own due time
    adjustments: list[Adjustment] = []      # the instructor's, in final_score (grader/instructor/record.py)

    @model_validator(mode="before")
    @classmethod
    def _untrusted_times(cls, data):
        """A row written before times were trusted (zip, files, a metadata file in the student's
        folder): its time was the student's word, so it is unknown."""
        if isinstance(data, dict) and data.get("time_source") not in (None, *get_args(TimeSource)):
            data = {**data, "time_source": "unknown", "submitted_at": None}
        return data

    @model_validator(mode="before")
    @classmethod
    def _timing_kind_of_older_rows(cls, data):
        """A row written before timing_kind existed: its kind, read from the words it was written with."""
        if isinstance(data, dict) and "timing_kind" not in data and data.get("timing"):
            words = str(data["timing"])
            assumed = words.removeprefix(f"{Timing.UNKNOWN}, ").split(":")[0]
            kind = Timing(assumed) if assumed in (Timing.ASSUMED_ON_TIME, Timing.ASSUMED_LATE) else \
                Timing.UNKNOWN if words.startswith(Timing.UNKNOWN.value) else \
                Timing.ON_TIME if words == Timing.ON_TIME.value else Timing.LATE
            data = {**data, "timing_kind": kind}
        return data

    @property
    def percent(self) -> float | None:
        return 100 * self.score / self.max_score if self.score is not None and self.max_score else None

    @property
    def adjusted(self) -> float:
        """The points the instructor's adjustments add up to (0.0 where none)."""
        return sum(a.points for a in self.adjustments) + 0.0


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
    graded: int                             # passed or failed: those who reached the check
    not_attempted: int = 0                  # the function's stub left as it was
    not_run: int = 0                        # blocked by another function, or the time budget

    @property
    def rate(self) -> float:
        return self.passed / self.graded if self.graded else 0.0


class Mistake(BaseModel):
    hint: str                               # the first wording seen
    function: str
    students: list[str]
    id: str = ""                            # Check.mistake, where the check named one


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
    counted: int = 0                        # students in the statistics: scored by the grader
    ignored: list[str] = []                 # entries of the class folder that are not submissions
    timing: dict[Timing, int] = {}          # on time, late, time unknown -> students, under a late policy
